"""Same seed + same inputs -> the same state hash at every tick, in and across processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson

from agent_world.config import Config
from agent_world.core.world import World

ROOT = Path(__file__).resolve().parent.parent


def _hashes(world: World, ticks: int) -> list[str]:
    out = []
    for _ in range(ticks):
        world.step()
        out.append(world.state_hash())
    return out


def test_two_worlds_of_200_agents_agree_on_every_tick_hash() -> None:
    cfg = Config().replace(world={"size": [200, 200], "starting_agents": 200})
    a, b = World.create(cfg), World.create(cfg)
    try:
        ha, hb = _hashes(a, 500), _hashes(b, 500)
    finally:
        a.close()
        b.close()
    first_difference = next(
        (i + 1 for i, (x, y) in enumerate(zip(ha, hb, strict=True)) if x != y), None)
    assert first_difference is None, f"worlds diverged at tick {first_difference}"
    assert len(set(ha)) == 500, "the state should change every tick"


def test_same_inputs_give_same_hashes(make_world) -> None:
    worlds = [make_world(seed=4), make_world(seed=4)]
    for w in worlds:
        for _ in range(50):
            w.step()
        victim = next(iter(w.population.names.values()))
        w.inbox.submit("spawn", {"kind": "agent", "name": "Visitor", "personality": "trader"})
        w.inbox.submit("give", {"target": victim, "item": "sword", "qty": 1})
        w.inbox.submit("spawn", {"kind": "apple", "qty": 3})
        for _ in range(100):
            w.step()
    assert worlds[0].state_hash() == worlds[1].state_hash()


def test_different_seeds_differ(make_world) -> None:
    a, b = make_world(seed=1), make_world(seed=2)
    assert a.state_hash() != b.state_hash()


def test_an_input_changes_the_future(make_world) -> None:
    a, b = make_world(seed=5), make_world(seed=5)
    b.inbox.submit("spawn", {"kind": "meat", "qty": 1})
    for w in (a, b):
        for _ in range(20):
            w.step()
    assert a.state_hash() != b.state_hash()


def _hash_in_subprocess(hash_seed: str, seed: int, ticks: int) -> str:
    code = (
        "from agent_world.config import Config\n"
        "from agent_world.core.world import World\n"
        "import sys\n"
        "w = World.create(Config().replace(world={'size': [48, 48], 'starting_agents': 30}),"
        f" seed={seed})\n"
        f"for _ in range({ticks}): w.step()\n"
        "sys.stdout.write(w.state_hash())\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True,
                          capture_output=True, text=True, timeout=120)
    return done.stdout.strip()


def test_hash_is_stable_across_processes_and_hash_seeds() -> None:
    """No reliance on str hashing, set order or id(): other hash seeds, same hash."""
    here = World.create(Config().replace(world={"size": [48, 48], "starting_agents": 30}),
                        seed=11)
    try:
        for _ in range(300):
            here.step()
        expected = here.state_hash()
    finally:
        here.close()
    assert _hash_in_subprocess("0", 11, 300) == expected
    assert _hash_in_subprocess("12345", 11, 300) == expected
    assert _hash_in_subprocess("random", 11, 300) == expected


def test_snapshot_is_plain_json_and_reloads_byte_identically(make_world) -> None:
    w = make_world(seed=8)
    for _ in range(150):
        w.step()
    data = w.state_bytes()
    again = World.from_state(orjson.loads(data))
    try:
        assert again.state_bytes() == data
    finally:
        again.close()


def test_reloaded_world_continues_exactly_like_the_original(make_world) -> None:
    reference = make_world(seed=12, starting_agents=20)
    expected = _hashes(reference, 600)
    live = make_world(seed=12, starting_agents=20)
    for cut in (50, 199, 350, 512):
        while live.tick < cut:
            live.step()
        reloaded = World.from_state(orjson.loads(live.state_bytes()))
        live.close()
        live = reloaded
        assert live.state_hash() == expected[cut - 1]
    while live.tick < 600:
        live.step()
        assert live.state_hash() == expected[live.tick - 1], f"diverged at tick {live.tick}"
    live.close()
