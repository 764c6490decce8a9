"""Make a golden world: a small save folder recorded by the current release, kept in
``tests/golden/`` for ever, with the figures every later release must reproduce from it.

    python -m tests.golden.make NAME      # one of WORLDS below; refuses to overwrite

A golden world is never remade: its worth is that it was saved by an earlier release. When
the rules change, make a new one beside the old ones (a new NAME) and leave the old ones be;
``tests/test_golden_worlds.py`` replays and resumes every world listed in ``golden.json``.

Each world is run live (real threads, a real local LLM server, the real sandbox), closed,
then checked two ways before it is kept, and the hash the checks reach is written down:

- replayed from its first snapshot with every logged state hash verified, then run on
  ``continue_ticks`` more ticks with no inputs;
- resumed from its last snapshot (as ``python main.py`` would), then the same ticks.

Both must reach one hash; that hash is the world's ``continued_hash``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

import orjson

from agent_world.app import Session
from agent_world.config import Config
from agent_world.persistence import open_world
from agent_world.sandbox import Sandbox
from agent_world.userbrains.registry import load_brains
from tests.golden.check import GOLDEN, INDEX, continued_by_replay, continued_by_resume
from tests.llm_server import FakeLLMServer

CONTINUE_TICKS = 200
KEY_ENV = "AW_GOLDEN_LLM_KEY"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "agents"

# An ability as the angel writes it (the local LLM server answers the angel with it).
GUST = '''NAME = "gust"
DESCRIPTION = "A gust of wind that pushes an agent up to 4 tiles away."
ENERGY_COST = 6
COOLDOWN = 30
RANGE = 4
ARGS = {"target": "agent"}


def execute(ctx):
    return [{"type": "push", "target": ctx["target"]["id"], "tiles": 2}]
'''

# What the LLM agents decide: built-in abilities, a gather, a word, and wandering.
LLM_PLAN = {"thought": "keep fed and see who is about",
            "plan": [{"action": "use_ability", "args": {"ability": "forage"}},
                     {"action": "say", "args": {"text": "anyone trading bread?"}},
                     {"action": "wander", "args": {"ticks": 15}},
                     {"action": "use_ability", "args": {"ability": "heal"}}]}


def _base(root: Path, name: str) -> Config:
    return Config().replace(
        world={"name": name, "size": [24, 24], "starting_agents": 8, "seed": 20261127},
        paths={"saves": str(root / "saves"), "logs": str(root / "logs")},
        persistence={"snapshot_interval_ticks": 100, "hash_interval_ticks": 10,
                     "events_chunk_ticks": 200},
        log={"echo": False},
    )


def _drive(session: Session, ticks: int, each: Callable[[int], None],
           wall_s: float = 120.0) -> None:
    began = time.monotonic()

    async def drive() -> None:
        while session.world.tick < ticks:
            each(session.world.tick)
            await session.loop.run(max_ticks=1, paced=False)
            await asyncio.sleep(0.002)  # room for worker threads to answer between ticks
            if time.monotonic() - began > wall_s:
                raise SystemExit(f"the live run took longer than {wall_s:.0f} s")

    asyncio.run(drive())


@contextmanager
def _llm_server() -> Iterator[FakeLLMServer]:
    server = FakeLLMServer().start()
    os.environ[KEY_ENV] = "sk-golden-not-a-secret"
    try:
        yield server
    finally:
        server.stop()


def make_llm_abilities(root: Path, name: str) -> tuple[Config, int]:
    """LLM agents deciding through a real local server, an ability the angel writes with
    that server, built-in abilities cast, and an operator's cast of the new ability."""
    ticks = 400
    with _llm_server() as server:
        server.answer = LLM_PLAN
        server.ability_text = "Here it is:\n```python\n" + GUST + "```\n"
        config = _base(root, name).replace(
            llm={"provider": "openai", "base_url": server.base_url, "model": "test-model",
                 "api_key_env": KEY_ENV, "agents": 3, "max_concurrent": 2,
                 "request_timeout_s": 5.0},
            decisions={"llm": {"workers": 2, "min_gap_ticks": 5, "think_interval_ticks": 40}},
            angel={"generator": "auto"})
        sandbox = Sandbox(config, wait=True)
        opened = open_world(config, setup=sandbox.install)
        session = Session(config, opened.world, folder=opened.folder, sandbox=sandbox)
        world = session.world

        def each(tick: int) -> None:
            if tick == 5:
                assert session.angel_link is not None, "the angel did not start"
                session.angel_link.request("a gust of wind that pushes someone away")
            if tick == 250 and world.abilities.get("gust") is not None:
                caster, target = (eid for eid, _row in world.agents()[-2:])
                world.inbox.submit("plan", {"agent": caster, "actions": [
                    {"name": "use_ability", "args": {"ability": "gust", "target": target}}]},
                    source="console")

        try:
            _drive(session, ticks, each)
            assert world.abilities.get("gust") is not None, "the angel's ability never came"
            assert session.llm is not None and session.llm.metrics.applied >= 3
        finally:
            session.close()
    return config, ticks


def make_teams_crafting_brains(root: Path, name: str) -> tuple[Config, int]:
    """Two teams around capture points, a crafting chain, and a user's Python brain
    (examples/agents/forager.py) deciding for some agents off the tick."""
    ticks = 400
    config = _base(root, name).replace(
        world={"capture_points": 2, "objects_per_1000_tiles": 40},
        game={"recipes": {"club": "wood*2", "spear": "club + stone"}, "craft_ticks": 10,
              "capture_radius": 2, "capture_ticks": 20},
        brains={"path": str(EXAMPLES), "registered": {"forager": "forager:Forager"}},
        decisions={"brains": {"min_gap_ticks": 2, "think_interval_ticks": 10,
                              "deadline_ms": 500}})
    opened = open_world(config)
    session = Session(config, opened.world, folder=opened.folder,
                      brains=load_brains(config.brains))
    world = session.world
    spawns = [("Red1", "red", "builtin"), ("Red2", "red", "forager"), ("Red3", "red", "builtin"),
              ("Blue1", "blue", "builtin"), ("Blue2", "blue", "forager"),
              ("Blue3", "blue", "builtin")]

    def each(tick: int) -> None:
        if tick == 0:
            for agent, team, brain in spawns:
                world.inbox.submit("spawn", {"kind": "agent", "name": agent, "brain": brain,
                                             "team": team, "personality": "aggressive"},
                                   source="console")
        if tick == 3:
            for agent in ("Red1", "Blue1"):
                eid = world.population.find(agent)
                assert eid is not None
                world.inbox.submit("give", {"agent": eid, "item": "wood", "qty": 4},
                                   source="console")
                world.inbox.submit("give", {"agent": eid, "item": "stone", "qty": 1},
                                   source="console")
                world.inbox.submit("plan", {"agent": eid, "actions": [
                    {"name": "craft", "args": {"item": "club"}},
                    {"name": "craft", "args": {"item": "club"}},
                    {"name": "craft", "args": {"item": "spear"}},
                    {"name": "team_say", "args": {"text": "armed; heading for the point"}}]},
                    source="console")

    try:
        _drive(session, ticks, each)
        assert session.brains is not None and session.brains.metrics.applied >= 3
        assert world.counters.get("crafts", 0) >= 1, world.counters
    finally:
        session.close()
    return config, ticks


def make_first_brains(root: Path, name: str) -> tuple[Config, int]:
    """The first built-in brains (``game.brain_version: 1``), which old worlds run on, with
    the default economy: trades, fights and deaths by the built-in brains alone."""
    ticks = 500
    config = _base(root, name).replace(
        world={"starting_agents": 14}, game={"brain_version": 1})
    opened = open_world(config)
    session = Session(config, opened.world, folder=opened.folder)
    try:
        _drive(session, ticks, lambda _tick: None)
    finally:
        session.close()
    return config, ticks


WORLDS: dict[str, Callable[[Path, str], tuple[Config, int]]] = {
    "llm_abilities": make_llm_abilities,
    "teams_crafting_brains": make_teams_crafting_brains,
    "first_brains": make_first_brains,
}


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=False, cwd=GOLDEN)
    return done.stdout.strip() or "unknown"


def make(name: str) -> dict[str, Any]:
    target = GOLDEN / name
    index = orjson.loads(INDEX.read_bytes()) if INDEX.exists() else {}
    if target.exists() or name in index:
        raise SystemExit(f"golden world {name!r} exists already; golden worlds are never "
                         "remade (make a new one under a new name)")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _config, ticks = WORLDS[name](root, name)
        saved = root / "saves" / name
        shutil.copytree(saved, target, ignore=shutil.ignore_patterns(".lock"))
        try:
            by_replay = continued_by_replay(saved, CONTINUE_TICKS)
            by_resume = continued_by_resume(saved, CONTINUE_TICKS)  # writes into ``saved``
            if by_replay != by_resume:
                raise SystemExit(f"{name}: replay and resume disagree ({by_replay} vs "
                                 f"{by_resume}); not kept")
        except BaseException:
            shutil.rmtree(target)
            raise
    entry = {"made_by": f"agent-world {version('agent-world')} ({_commit()})",
             "ticks": ticks, "final_hash": by_replay[0],
             "continue_ticks": CONTINUE_TICKS, "continued_hash": by_replay[1],
             "about": " ".join((WORLDS[name].__doc__ or "").split())}
    index[name] = entry
    INDEX.write_bytes(orjson.dumps(index, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
                      + b"\n")
    return entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="+", choices=sorted(WORLDS))
    args = parser.parse_args(argv)
    for name in args.names:
        entry = make(name)
        print(f"{name}: {entry['ticks']} ticks, final {entry['final_hash'][:12]}, "
              f"+{entry['continue_ticks']} -> {entry['continued_hash'][:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
