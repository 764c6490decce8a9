"""``replay --serve``: a recorded world in the viewer, with a timeline. A real recording, a
real server on loopback, the background indexer as a real child process."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from agent_world.app import Session
from agent_world.commands.recent import RecentEvents
from agent_world.config import Config
from agent_world.persistence import SaveFolder, open_world, replay
from agent_world.persistence.snapshots import load_first_snapshot
from agent_world.persistence.worlds import fork_world
from agent_world.sandbox import Sandbox
from agent_world.web.playback import Served, serve_recording
from tests.web_helpers import web_config

TICKS = 420


def record(config: Config) -> SaveFolder:
    """A recorded world with an operator's input in it, as ``python main.py`` makes one."""
    sandbox = Sandbox(config)
    opened = open_world(config, setup=sandbox.install)
    session = Session(config, opened.world, folder=opened.folder, sandbox=sandbox)

    async def run() -> None:
        await session.run(max_ticks=100, paced=False)
        session.world.inbox.submit("spawn", {"kind": "agent", "name": "Zed"},
                                   source="console")
        await session.run(max_ticks=TICKS - 100, paced=False)

    asyncio.run(run())
    session.close()
    assert opened.folder is not None
    return SaveFolder.open(opened.folder.root)


def hash_at(folder: SaveFolder, config: Config, tick: int) -> str:
    """The recorded world's state hash at ``tick``, replayed apart (as replay --to does)."""
    sandbox = Sandbox(config)
    world = load_first_snapshot(folder, config).world
    sandbox.install(world)
    replay(world, folder, until=tick)
    digest = world.state_hash()
    world.close()
    sandbox.close()
    return digest


class Viewer:
    def __init__(self, url: str, http: aiohttp.ClientSession, session: Session) -> None:
        self.url, self.http, self.session = url.rstrip("/"), http, session

    async def state(self) -> dict[str, Any]:
        async with self.http.get(self.url + "/api/state") as resp:
            body: dict[str, Any] = await resp.json()
            return body

    async def command(self, line: str) -> dict[str, Any]:
        async with self.http.post(self.url + "/api/commands", json={"command": line}) as resp:
            body: dict[str, Any] = await resp.json()
            return body


@contextlib.asynccontextmanager
async def serving(folder: SaveFolder, config: Config
                  ) -> AsyncIterator[tuple[Viewer, asyncio.Task[Served]]]:
    sandbox = Sandbox(config, wait=False)
    ready: asyncio.Future[Session] = asyncio.get_running_loop().create_future()

    async def start_console(session: Session) -> Callable[[], Awaitable[None]]:
        ready.set_result(session)

        async def stop() -> None:
            return None
        return stop

    out = io.StringIO()
    task = asyncio.create_task(serve_recording(folder, config, sandbox.install, token=None,
                                               to=None, start_console=start_console,
                                               out=out))
    session = await asyncio.wait_for(ready, 60)
    said = out.getvalue()
    url = said.split("viewer: ")[1].split()[0]
    # Not a terminal: the banner says where the token is, never the token itself.
    token = session.web.token
    assert token not in said and "readable only by you" in said
    http = aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"})
    try:
        yield Viewer(url, http, session), task
    finally:
        await http.close()
        if not task.done():
            session.loop.stop()
        await task
        sandbox.close()


def timeline_name(state: dict[str, Any]) -> str:
    return str(state["replay"]["world"])


def test_a_served_replay_plays_seeks_steps_and_refuses_changes(tmp_path: Path) -> None:
    # A seek point on every 100th tick, whatever the ticks cost (the seeks below name them).
    config = web_config(tmp_path).replace(
        persistence={"seek_interval_ticks": 100, "seek_target_ms": 0})
    # Recorded as "recorded", served under a config whose world is "default".
    folder = record(config.replace(world={"name": "recorded"}))
    assert folder.name == "recorded" and config.world.name == "default"
    want = {t: hash_at(folder, config, t) for t in (150, 355)}

    async def go() -> None:
        async with serving(folder, config) as (viewer, task):
            state = await viewer.state()
            # The recording's name, not the operator's config's world (issue 35).
            assert state["world"] == folder.name == timeline_name(state)
            timeline = state["replay"]
            assert timeline["first_tick"] == 0 and timeline["last_tick"] == TICKS
            assert timeline["tick"] == 0 and not timeline["playing"]

            ws = await viewer.http.ws_connect(viewer.url + "/ws")
            hello = orjson.loads((await ws.receive()).data)
            assert hello["t"] == "hello" and hello["world"] == folder.name
            await ws.send_str('{"op": "subscribe", "rate": 10}')
            key = orjson.loads((await ws.receive()).data)
            assert key["t"] == "key" and key["tick"] == 0

            reply = await viewer.command("/seek 150")
            assert reply["ok"] and reply["tick"] == 150, reply
            assert viewer.session.world.state_hash() == want[150]  # the recorded state
            frame = orjson.loads((await asyncio.wait_for(ws.receive(), 10)).data)
            assert frame["t"] == "key" and frame["tick"] == 150  # the page starts over

            reply = await viewer.command("/step 5")
            assert reply["ok"] and reply["tick"] == 155, reply
            for refused in ("/spawn agent Eve", "/kill 3", "/give 3 apple", "/save"):
                reply = await viewer.command(refused)
                assert not reply["ok"] and "recorded world" in reply["reply"][0], reply
            reply = await viewer.command("/speed 500")
            assert not reply["ok"] and "0.25 to 100" in reply["reply"][0], reply
            reply = await viewer.command(f"/seek {TICKS + 1}")
            assert not reply["ok"] and f"0 to {TICKS}" in reply["reply"][0], reply

            assert (await viewer.command("/speed 50"))["ok"]
            assert (await viewer.command("/play"))["ok"]
            for _ in range(200):
                if (await viewer.state())["tick"] >= 200:
                    break
                await asyncio.sleep(0.05)
            assert (await viewer.command("/pause"))["ok"]
            assert (await viewer.state())["tick"] >= 200

            # The running world left a seek point every 100 ticks: a seek starts from the
            # nearest before the target at once, and lands on the recorded state.
            reply = await viewer.command("/seek 355")
            assert reply["ok"] and "the seek point of tick 300" in reply["reply"][0], reply
            assert viewer.session.world.state_hash() == want[355]

            # Back again: from a saved state, never from a later world.
            reply = await viewer.command("/seek 150")
            assert reply["ok"] and "the seek point of tick 100" in reply["reply"][0], reply
            assert viewer.session.world.state_hash() == want[150]
            # The consoles' recent events (what /debug shows) are of no later tick.
            recent = [o for o in viewer.session.loop.observers if isinstance(o, RecentEvents)]
            assert recent and all(t <= 150 for o in recent for t, _e in o.events)

            assert (await viewer.command("/seek 420"))["ok"]
            reply = await viewer.command("/play")
            assert not reply["ok"] and "ends at tick 420" in reply["reply"][0], reply
            await ws.close()
        assert task.result().status == 0 and task.result().fork is None

    asyncio.run(go())


def test_without_seek_points_the_indexer_checkpoints_the_recording(tmp_path: Path) -> None:
    """A folder without seek points (written with none, or before they existed): the
    indexer replays it once in its own process, leaving checkpoints a seek starts from."""
    config = web_config(tmp_path).replace(persistence={"seek_interval_ticks": 0})
    folder = record(config)
    assert not folder.seek_points()
    want = hash_at(folder, config, 355)

    async def go() -> None:
        async with serving(folder, config) as (viewer, _task):
            for _ in range(600):
                if ((await viewer.state())["replay"]["indexed_to"] or 0) >= 300:
                    break
                await asyncio.sleep(0.05)
            reply = await viewer.command("/seek 355")
            assert reply["ok"] and "the indexer's checkpoint of tick 300" in \
                reply["reply"][0], reply
            assert viewer.session.world.state_hash() == want

    asyncio.run(go())


def test_fork_here_continues_the_recording_as_a_new_world(tmp_path: Path) -> None:
    config = web_config(tmp_path)
    folder = record(config)
    want = hash_at(folder, config, 210)

    async def go() -> Served:
        async with serving(folder, config) as (viewer, task):
            assert (await viewer.command("/seek 210"))["ok"]
            reply = await viewer.command(f"/fork {folder.name}")
            assert not reply["ok"] and "already exists" in reply["reply"][0], reply
            reply = await viewer.command("/fork branch")
            assert reply["ok"], reply
            return await asyncio.wait_for(asyncio.shield(task), 30)

    served = asyncio.run(go())
    assert served.fork is not None and served.fork.tick == 210
    sandbox = Sandbox(config, wait=False)
    opened = fork_world(folder, 210, "branch", config, setup=sandbox.install,
                        world=served.fork.world)
    try:
        assert opened.world.state_hash() == want
        assert opened.folder is not None
        first = load_first_snapshot(SaveFolder.open(opened.folder.root), config)
        assert first.tick == 210 and first.hash == want
        first.world.close()
    finally:
        opened.close()
        sandbox.close()
