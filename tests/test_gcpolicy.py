"""The garbage-collection policy: no automatic collections, one between ticks every N."""

from __future__ import annotations

import asyncio
import gc
import sys
import weakref
from pathlib import Path
from typing import Any

import pytest
from web_helpers import served

from agent_world.gcpolicy import (
    GARBAGE_BOUND,
    MAX_SWEEP_SHARE,
    MIN_SWEEP_GAP_S,
    SHORT_SWEEP_S,
    GcPolicy,
    sweep_wait,
)


class Cycle:
    def __init__(self) -> None:
        self.me = self


def test_collects_only_between_ticks_and_restores_the_collector() -> None:
    assert gc.isenabled()
    policy = GcPolicy(every_ticks=3)
    try:
        assert not gc.isenabled()
        garbage = Cycle()  # only the cycle collector can free it
        ref = weakref.ref(garbage)
        del garbage
        for _ in range(2):
            policy.between_ticks()
        assert ref() is not None and policy.collections == 0
        policy.between_ticks()
        assert ref() is None and policy.collections == 1
        assert policy.stats()["every_ticks"] == 3
    finally:
        policy.close()
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_a_collection_due_in_a_busy_gap_moves_half_an_interval_on() -> None:
    policy = GcPolicy(every_ticks=10)
    try:
        for _ in range(9):
            policy.between_ticks()
        policy.between_ticks(busy=True)  # due now, but the gap holds a fork
        assert policy.collections == 0
        for _ in range(4):
            policy.between_ticks()
        assert policy.collections == 0
        policy.between_ticks()  # five ticks later
        assert policy.collections == 1
        for _ in range(9):
            policy.between_ticks()
        assert policy.collections == 1
        policy.between_ticks()  # and every ten from there: off the busy phase
        assert policy.collections == 2
    finally:
        policy.close()


class Conn:
    """A connection as the web server holds one: in a reference cycle with its partner."""

    def __init__(self) -> None:
        self.partner = Partner(self)


class Partner:
    def __init__(self, conn: Conn) -> None:
        self.conn = conn


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_cycle_frozen_while_open_is_freed_by_a_sweep_once_enough_have_closed() -> None:
    clock = Clock()
    policy = GcPolicy(sweep_after=2, sweep_every_s=0, clock=clock)
    open_now: list[Conn] = []
    policy.watch(lambda: open_now)
    try:
        conns = [Conn(), Conn()]
        refs = [weakref.ref(c) for c in conns]
        open_now.extend(conns)
        policy.between_ticks()  # frozen while open: the collector never looks at them again
        open_now.clear()
        del conns
        policy.between_ticks()  # they closed, and only their own cycles hold them
        assert all(r() is not None for r in refs)
        assert policy.stranded == 2 and policy.sweeps == 0  # too soon after the start
        clock.now += MIN_SWEEP_GAP_S
        policy.between_ticks()  # two stranded: a sweep frees them
        assert all(r() is None for r in refs)
        assert policy.sweeps == 1 and policy.swept_objects >= 4 and policy.stranded == 0
        assert policy.stats()["sweep_max_ms"] >= 0
    finally:
        policy.close()
    assert gc.get_freeze_count() == 0


def test_sweeps_are_spaced_by_the_gap_and_their_share_of_the_time() -> None:
    clock = Clock()
    policy = GcPolicy(sweep_after=1, sweep_every_s=0, clock=clock)
    open_now: list[Conn] = []
    policy.watch(lambda: open_now)
    try:
        clock.now += MIN_SWEEP_GAP_S
        for _round in range(2):
            open_now.append(Conn())
            policy.between_ticks()
            open_now.clear()
            policy.between_ticks()
            policy.between_ticks()
        assert policy.sweeps == 1  # the second stranded one waits for the gap
        assert policy.stranded == 1
        wait = sweep_wait(policy.sweep_last_ms / 1000)
        clock.now += wait - 0.01
        policy.between_ticks()
        assert policy.sweeps == 1
        clock.now += 0.02
        policy.between_ticks()
        assert policy.sweeps == 2 and policy.stranded == 0
    finally:
        policy.close()


def test_a_periodic_sweep_frees_frozen_cycles_of_any_origin() -> None:
    clock = Clock()
    policy = GcPolicy(sweep_after=0, sweep_every_s=3600.0, clock=clock)
    try:
        held = [Cycle()]
        ref = weakref.ref(held[0])
        policy.between_ticks()  # frozen while something held it
        held.clear()
        clock.now += 3599.0
        policy.between_ticks()
        assert ref() is not None and policy.sweeps == 0
        clock.now += 1.0
        policy.between_ticks()
        assert ref() is None and policy.sweeps == 1
    finally:
        policy.close()


def test_periodic_sweeps_come_at_the_pace_the_garbage_comes() -> None:
    """A periodic sweep is a pause of the whole heap (half a second at 10,000 agents): the
    next one comes when about GARBAGE_BOUND objects should be waiting again, and when it
    finds next to nothing, twice as late, up to a day."""
    clock = Clock()
    policy = GcPolicy(sweep_after=0, sweep_every_s=3600.0, clock=clock)
    try:
        held = [Cycle() for _ in range(2 * GARBAGE_BOUND)]
        policy.between_ticks()  # frozen while held
        held.clear()
        clock.now += 3600.0
        policy.between_ticks()
        assert policy.sweeps == 1 and policy.swept_objects >= 2 * GARBAGE_BOUND
        # 100,000 objects an hour: the next sweep when 50,000 more should be waiting.
        assert policy.sweep_every_now_s == pytest.approx(
            3600.0 * GARBAGE_BOUND / policy.swept_objects)
        assert policy.stats()["sweep_every_s"] == policy.sweep_every_now_s
        waits = []
        for _ in range(8):
            clock.now += policy.sweep_every_now_s
            policy.between_ticks()
            waits.append(round(policy.sweep_every_now_s / 3600, 1))
        assert policy.sweeps == 9
        assert waits == [1.0, 2.0, 4.0, 8.0, 16.0, 24.0, 24.0, 24.0]
    finally:
        policy.close()


def test_bad_sweep_settings_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="sweep_after must be >= 0"):
        GcPolicy(sweep_after=-1)
    with pytest.raises(ValueError, match="sweep_every_s must be >= 0"):
        GcPolicy(sweep_every_s=-1.0)
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_a_long_sweep_is_rationed_to_its_share_of_the_time_and_a_short_one_is_not() -> None:
    assert sweep_wait(0.0) == MIN_SWEEP_GAP_S
    assert sweep_wait(SHORT_SWEEP_S) == MIN_SWEEP_GAP_S  # at most one tick period late
    assert sweep_wait(0.5) == pytest.approx(0.5 / MAX_SWEEP_SHARE)  # 10,000 agents: 50 s


# -- closed connections leave no cycles ---------------------------------------------------------

CHURN_CLIENT = """
import asyncio, sys, aiohttp, orjson
url, token, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
async def main():
    async with aiohttp.ClientSession() as http:
        agents = orjson.loads(await (await http.get(url + "/api/agents")).read())["agents"]
        for _ in range(rounds):
            async with http.ws_connect(url + "/ws") as ws:
                await ws.receive(timeout=10)
                await ws.send_str(orjson.dumps({"op": "subscribe"}).decode())
                await ws.receive(timeout=10)
            async with http.ws_connect(url + "/agents",
                                       headers={"Authorization": f"Bearer {token}"}) as ws:
                await ws.receive(timeout=10)
                await ws.send_str(orjson.dumps({"type": "claim",
                                                "agent": agents[0]["id"]}).decode())
                await ws.receive(timeout=10)
            async with http.get(url + "/api/stats") as resp:
                await resp.read()
asyncio.run(main())
"""


def _cyclic_garbage() -> list[str]:
    """The types of what a full collection finds only the cycle collector could free (kept
    by ``gc.DEBUG_SAVEALL`` to be named, then dropped); the collector is enabled again."""
    try:
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        return [f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.garbage]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def test_a_closed_connection_is_freed_without_the_cycle_collector(tmp_path: Path) -> None:
    """The web server's connections (WebSocket and plain HTTP, from a client in another
    process) leave nothing that only the cycle collector could free once closed: a frozen
    cycle would wait for a sweep of the whole heap (half a second at 10,000 agents)."""
    token = "churn-token-0123456789abcdef0123"

    async def scenario() -> list[str]:
        async with served(tmp_path, token=token) as s:
            gc.collect()
            gc.disable()
            try:
                client = await asyncio.create_subprocess_exec(
                    sys.executable, "-c", CHURN_CLIENT, s.url, token, "20")
                assert await client.wait() == 0
                for _ in range(1000):  # the last close reaches the server
                    if not s.server.guard.conns:
                        break
                    await asyncio.sleep(0.01)
                assert not s.server.guard.conns
            finally:
                left = _cyclic_garbage()
            return left

    left = asyncio.run(scenario())
    assert left == []


def test_a_forgotten_training_run_is_freed_without_the_cycle_collector(tmp_path: Path) -> None:
    """A finished training run that the web server forgets (past ``MAX_RUNS``) is freed by
    reference counting alone: its trainer's ``on_message`` reached the run through a cycle,
    which the world's collector policy froze, so each run stayed until a sweep of the whole
    heap (found in a soak: about 2 MB an hour with a run every half minute)."""
    from web_helpers import web_config

    async def train(s: Any) -> Any:
        started = await s.http.post(s.url + "/api/train", json={
            "scenario": "foraging", "iterations": 1, "episodes": 1, "ticks": 100})
        assert started.status == 202, await started.text()
        run_id = (await started.json())["run_id"]
        async with s.http.ws_connect(s.url + f"/ws/train/{run_id}") as ws:
            async for _msg in ws:  # to the run's end
                pass
        run = s.server.training.runs[run_id]
        assert run.state == "done" and run.thread is not None
        run.thread.join(30)  # retention, after the last message
        return run

    async def scenario() -> tuple[bool, list[str]]:
        config = web_config(tmp_path).replace(paths={"runs": str(tmp_path / "runs")})
        async with served(tmp_path, config=config) as s:
            first = weakref.ref(await train(s))
            await train(s)  # the first is no longer the latest anything
            gc.collect()
            gc.disable()
            try:
                s.server.training.runs.clear()  # as the server forgets runs past MAX_RUNS
                freed = first() is None
            finally:
                left = _cyclic_garbage()
            return freed, left

    freed, left = asyncio.run(scenario())
    assert freed and left == [], left
