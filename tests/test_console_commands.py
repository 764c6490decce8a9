"""The console's commands, driven in-process through the dispatcher on a fake clock.

Each test types command lines into a ``Console``, steps the world and checks the effect on
the world, so parsing, validation and the input path are covered together without a
terminal and without sleeping.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_world.app import Session
from agent_world.commands import COMMANDS, Console
from agent_world.commands.control import SAVE_OFF
from agent_world.commands.recent import RecentEvents
from agent_world.config import Config
from agent_world.console.status import status_text
from agent_world.core import components as c
from agent_world.core.world import World
from agent_world.persistence import open_world
from agent_world.types import FakeClock, Input, TickReport


class Harness:
    """A session on a fake clock with a console attached; ``run`` types one line."""

    def __init__(self, tmp_path: Path, **world: Any) -> None:
        settings = {"size": [32, 32], "starting_agents": 6, "seed": 3, **world}
        self.config = Config().replace(world=settings, paths={
            "logs": str(tmp_path / "logs"), "saves": str(tmp_path / "saves")})
        self.session = Session(self.config, World.create(self.config), clock=FakeClock())
        self.notices: list[str] = []
        self.console = Console(self.session, notify=self.notices.append)
        self.inputs: list[Input] = []
        self.session.loop.observers.append(self)

    def on_tick(self, report: TickReport) -> None:
        self.inputs.extend(report.inputs)

    @property
    def world(self) -> World:
        return self.session.world

    def run(self, line: str) -> list[str]:
        return asyncio.run(self.console.execute(line))

    def one(self, line: str) -> str:
        reply = self.run(line)
        assert len(reply) == 1, reply
        return reply[0]

    def paused(self) -> Harness:
        self.session.loop.pause()
        return self

    def step(self, n: int = 1) -> None:
        assert self.one(f"/step {n}").startswith("stepped")

    def free_tile(self) -> tuple[int, int]:
        """A grass tile with nothing on it and no agent, scanning in a fixed order."""
        w = self.world
        for y in range(2, w.terrain.height - 2):
            for x in range(2, w.terrain.width - 2):
                if (not w.terrain.is_blocked(x, y) and not w.ground.items.at(x, y)
                        and not w.agents_grid.at(x, y) and not w.ground.objects.at(x, y)):
                    return x, y
        raise AssertionError("no free tile")

    def blocked_tile(self, terrain_kind: str) -> tuple[int, int]:
        t = self.world.terrain
        for y in range(t.height):
            for x in range(t.width):
                if t.is_blocked(x, y) and self.world.describe_tile(x, y) == terrain_kind:
                    return x, y
        raise AssertionError(f"no {terrain_kind} tile on this map")

    def close(self) -> None:
        self.console.close()
        self.session.close()
        self.world.close()


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    harness = Harness(tmp_path)
    yield harness
    harness.close()


def usage(name: str) -> str:
    return COMMANDS[name].usage


# -- clock -----------------------------------------------------------------------------------


def test_step_advances_exactly_n_ticks_while_paused(h: Harness) -> None:
    h.paused()
    start = h.world.tick
    assert h.one("/step") == f"stepped 1 tick: tick {start} -> {start + 1} (paused)"
    assert h.one("/step 5") == f"stepped 5 ticks: tick {start + 1} -> {start + 6} (paused)"
    assert h.world.tick == start + 6
    assert h.session.loop.paused


def test_a_long_step_ends_early_when_the_world_stops(h: Harness) -> None:
    class StopAt:
        def on_tick(self, report: TickReport) -> None:
            if report.tick == 150:
                h.session.loop.stop()  # as SIGINT does, in the middle of the step

    h.paused().session.loop.observers.append(StopAt())
    assert h.one("/step 100000") == ("stopped after 150 of 100000 ticks: tick 0 -> 150: the "
                                     "world is stopping")


def test_step_is_refused_while_running(h: Harness) -> None:
    reply = h.one("/step 3")
    assert reply.startswith("error: /step works only while paused; /pause first")
    assert usage("step") in reply
    assert h.world.tick == 0


def test_pause_holds_the_running_loop_and_resume_releases_it(h: Harness) -> None:
    async def scenario() -> tuple[int, int, int, int]:
        run = asyncio.create_task(h.session.run())
        for _ in range(5):
            await asyncio.sleep(0)
        assert (await h.console.execute("/pause"))[0].startswith("paused at tick")
        held = h.world.tick
        for _ in range(50):
            await asyncio.sleep(0)
        after_wait = h.world.tick
        await h.console.execute("/step 4")
        stepped = h.world.tick
        assert (await h.console.execute("/resume"))[0].startswith("running from tick")
        for _ in range(20):
            await asyncio.sleep(0)
        resumed = h.world.tick
        assert (await h.console.execute("/quit"))[0].startswith("stopping at tick")
        await asyncio.wait_for(run, timeout=10)
        return held, after_wait, stepped, resumed

    held, after_wait, stepped, resumed = asyncio.run(scenario())
    assert held > 0
    assert after_wait == held, "a paused world must not tick"
    assert stepped == held + 4
    assert resumed > stepped, "a resumed world ticks again"
    assert h.console.quit_requested and h.session.loop.stopped


def test_pause_and_resume_twice_say_so(h: Harness) -> None:
    assert h.one("/resume") == "already running (tick 0)"
    h.one("/pause")
    assert h.one("/pause") == "already paused at tick 0"


def test_speed_sets_the_tick_rate(h: Harness) -> None:
    assert h.one("/speed 20") == "speed 20 Hz (was 10 Hz)"
    assert h.session.loop.tick_rate == 20.0
    assert h.one("/speed 0.5hz").startswith("speed 0.5 Hz")


@pytest.mark.parametrize("line", ["/speed", "/speed 0", "/speed -3", "/speed fast",
                                  "/speed nan", "/speed inf", "/speed 5000", "/speed 1 2"])
def test_speed_refuses_bad_rates(h: Harness, line: str) -> None:
    reply = h.one(line)
    assert reply.startswith("error: ") and reply.endswith(f"(usage: {usage('speed')})")
    assert h.session.loop.tick_rate == 10.0


# -- world-changing commands are inputs ------------------------------------------------------


def test_spawn_agent_with_name_personality_and_gold_at_a_tile(h: Harness) -> None:
    h.paused()
    x, y = h.free_tile()
    reply = h.one(f"/spawn agent Zed {x} {y} personality=trader brain=builtin gold=10")
    assert reply.startswith(f"spawning agent 'Zed' at ({x}, {y})")
    assert h.world.population.find("zed") is None, "nothing changes before the next tick"
    h.step()
    eid = h.world.population.find("Zed")
    assert eid is not None
    agent = h.world.store.get(eid, c.Agent)
    assert (agent.name, agent.personality, agent.brain) == ("Zed", "trader", "builtin")
    assert h.world.store.get(eid, c.Inventory).gold == 10
    spawn = [e for _t, e in h.console.recent.events if e["type"] == "spawn"][-1]
    assert (spawn["agent"], spawn["x"], spawn["y"]) == (eid, x, y)
    [inp] = h.inputs
    assert (inp.type, inp.source) == ("spawn", "console")
    assert dict(inp.data) == {"kind": "agent", "name": "Zed", "x": x, "y": y,
                              "personality": "trader", "brain": "builtin", "gold": 10}


def test_spawn_agent_without_name_or_tile(h: Harness) -> None:
    h.paused()
    before = len(h.world.agents())
    assert h.one("/spawn agent").startswith("spawning agent a newcomer on a random free tile")
    h.step()
    assert len(h.world.agents()) == before + 1


def test_spawn_item_and_object(h: Harness) -> None:
    h.paused()
    x, y = h.free_tile()
    h.one(f"/spawn apple {x} {y} qty=3")
    h.step()
    [stack] = h.world.ground.items.at(x, y)
    item = h.world.store.get(stack, c.Item)
    assert (item.kind, item.qty) == ("apple", 3)
    x2, y2 = x + 1, y
    assert not h.world.terrain.is_blocked(x2, y2)
    h.one(f"/spawn rock {x2} {y2}")
    h.step()
    assert h.world.terrain.is_blocked(x2, y2)
    assert h.world.describe_tile(x2, y2) == "rock"


def test_spawning_a_taken_name_is_refused_now_and_while_pending(h: Harness) -> None:
    h.paused()
    existing = h.world.agents()[0][1][0].name
    reply = h.one(f"/spawn agent {existing.upper()}")
    assert f"an agent named {existing.upper()!r} already lives" in reply
    h.one("/spawn agent Zed")
    assert "is already being spawned" in h.one("/spawn agent zed")
    h.step()
    assert "already lives" in h.one("/spawn agent Zed")


def test_kill_by_name_and_by_id(h: Harness) -> None:
    h.paused()
    eid, row = h.world.agents()[0]
    name = row[0].name
    assert h.one(f"/kill {name}") == f"{name}#{eid} dies and drops what it carries at tick " \
                                      f"{h.world.tick + 1} (paused: /step applies it)"
    h.step()
    assert h.world.population.find(name) is None and eid not in h.world.store
    death = [e for _t, e in h.console.recent.events if e["type"] == "death"][-1]
    assert death["cause"] == "struck down by the operator"
    item = h.world.store.query(c.Item)[0][0]
    assert "(item) is removed" in h.one(f"/kill #{item}")
    h.step()
    assert item not in h.world.store


def test_give_adds_to_inventory(h: Harness) -> None:
    h.paused()
    eid, row = h.world.agents()[0]
    inv = row[3]
    swords, gold = inv.count("sword"), inv.gold
    assert h.one(f"/give {row[0].name} sword 2").startswith(f"{row[0].name}#{eid} receives 2 "
                                                            "sword")
    h.one(f"/give {eid} gold")
    h.step()
    inv = h.world.store.get(eid, c.Inventory)
    assert inv.count("sword") == swords + 2
    assert inv.gold >= gold + 1  # an agent may also pick up gold in the same tick
    assert [(i.type, i.source) for i in h.inputs] == [("give", "console")] * 2


def test_an_input_rejected_when_applied_is_reported(h: Harness) -> None:
    h.paused()
    eid, _row = h.world.agents()[0]
    h.one(f"/kill {eid}")
    h.one(f"/kill {eid}")  # still alive now; gone by the time this one is applied
    h.step()
    assert len(h.notices) == 1
    assert "your kill (input #2) was rejected" in h.notices[0]


# -- every error is one line with the usage --------------------------------------------------

BAD_LINES = {
    "step": ["/step 0", "/step -1", "/step x", "/step 1.5", "/step 1 2", "/step 999999999"],
    "spawn": ["/spawn", "/spawn dragon", "/spawn agnet", "/spawn agent Zed 5",
              "/spawn agent 5 5 5 5", "/spawn apple Zed", "/spawn apple 1",
              "/spawn agent 1abc", "/spawn agent Zed personality=robot",
              "/spawn agent Zed brain=gpt", "/spawn agent Zed brain=llm",
              "/spawn agent Zed gold=-1", "/spawn agent Zed gold=lots",
              "/spawn agent Zed gold=1 gold=2", "/spawn agent Zed qty=3",
              "/spawn tree qty=3", "/spawn apple qty=0", "/spawn agent Zed personality=",
              "/spawn agent Zed 99 99", "/spawn agent Zed -1 0", "/spawn agent Zed x y"],
    "kill": ["/kill", "/kill 99999", "/kill Nobody", "/kill a b", "/kill @!"],
    "give": ["/give", "/give 99999 apple", "/give Nobody apple", "/give {agent} dragon",
             "/give {agent} apple 0", "/give {agent} apple many", "/give {item} apple",
             "/give {agent} apple 1 2"],
    "debug": ["/debug", "/debug 99999", "/debug Nobody", "/debug a b"],
    "list": ["/list dragons", "/list agents items"],
    "help": ["/help dance", "/help a b"],
    "pause": ["/pause now"],
    "resume": ["/resume 1"],
    "stats": ["/stats all"],
    "save": ["/save as"],
    "quit": ["/quit now"],
}


@pytest.mark.parametrize(("command", "line"),
                         [(cmd, line) for cmd, lines in BAD_LINES.items() for line in lines])
def test_bad_input_gets_one_line_naming_the_usage(h: Harness, command: str, line: str) -> None:
    h.paused()
    agent = h.world.agents()[0][0]
    item = h.world.store.query(c.Item)[0][0]
    line = line.format(agent=agent, item=item)
    tick = h.world.tick
    reply = h.run(line)
    assert len(reply) == 1, reply
    assert reply[0].startswith("error: ")
    assert reply[0].endswith(f"(usage: {usage(command)})"), reply[0]
    assert "\n" not in reply[0] and "Traceback" not in reply[0]
    assert h.world.inbox.pending() == 0, "a refused command submits nothing"
    assert h.world.tick == tick and not h.console.quit_requested


def test_spawning_into_water_or_rock_names_the_tile(h: Harness) -> None:
    for kind in ("water", "rock"):
        x, y = h.blocked_tile(kind)
        reply = h.one(f"/spawn agent Zed {x} {y}")
        assert f"({x}, {y}) is {kind}, not a free tile" in reply
        assert reply.endswith(f"(usage: {usage('spawn')})")


def test_spawning_off_the_map_gives_the_range(h: Harness) -> None:
    reply = h.one("/spawn apple 32 0")
    assert "(32, 0) is off the map; X must be 0..31 and Y 0..31" in reply


def test_unknown_commands_suggest_the_closest(h: Harness) -> None:
    assert h.one("/paus") == ("error: unknown command '/paus'; did you mean /pause? "
                              "(usage: /pause; /help lists every command)")
    assert h.one("/xyzzy") == ("error: unknown command '/xyzzy' (usage: /help [COMMAND] "
                               "lists the commands)")
    assert h.one("pause").startswith("paused"), "the slash may be left out"
    assert h.one("'open").startswith("error: cannot split the line into words")
    assert h.run("") == [] and h.run("# a comment") == []


def test_a_console_bug_answers_one_line_and_is_counted(h: Harness,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(console: Console, args: object) -> list[str]:
        raise ZeroDivisionError("oops")

    monkeypatch.setitem(COMMANDS, "stats", dataclasses.replace(COMMANDS["stats"], run=broken))
    reply = h.one("/stats")
    assert reply.startswith("error: /stats failed inside the console (ZeroDivisionError: oops)")
    assert h.console.internal_errors == 1


# -- views -----------------------------------------------------------------------------------


def test_list_agents_and_filters(h: Harness) -> None:
    names = [row[0].name for _eid, row in h.world.agents()]
    lines = h.run("/list agents")
    assert lines[0] == f"{len(names)} agents at tick 0:"
    assert lines[1].split()[:3] == ["ID", "NAME", "PERSONALITY"]
    assert all(any(n in line for line in lines) for n in names)
    assert h.run("/list") == lines
    personality = h.world.agents()[0][1][0].personality
    assert all(personality in line for line in h.run(f"/list {personality}")[2:])
    trees = h.run("/list tree")
    assert trees[0].endswith("objects (tree) at tick 0:")
    assert h.run("/list item")[0].endswith("items at tick 0:")
    present = {item.kind for _eid, (item,) in h.world.store.query(c.Item)}
    absent = next(k for k in ("sword", "spear", "iron", "meat", "herb") if k not in present)
    assert h.one(f"/list {absent}") == f"0 items ({absent}) at tick 0"


def test_debug_shows_everything_about_an_agent(h: Harness) -> None:
    h.paused()
    (eid, row), (other, other_row) = h.world.agents()[:2]
    row[7].relationships[other] = 0.5  # set up directly: a test may arrange the world
    h.step(3)
    lines = h.run(f"/debug {row[0].name.lower()}")
    text = "\n".join(lines)
    assert lines[0].startswith(f"{row[0].name}#{eid}: agent, {row[0].personality}")
    for part in ("needs:", "thinking:", "action:", "plan:", "inventory:", "relationships:",
                 "memory", "recent events", "components:"):
        assert part in text, part
    for component in ("Agent", "Position", "Needs", "Inventory", "Intent", "Combat",
                      "Perception", "Social", "Memory"):
        assert f"  {component}: " in text, component
    assert f"{other_row[0].name}#{other}" in text and "+0.5" in text
    assert h.run(f"/debug #{eid}") == lines


def test_debug_shows_recent_events_and_plans(h: Harness) -> None:
    h.paused()
    eid, row = h.world.agents()[0]
    h.world.inbox.submit("plan", {"agent": eid, "actions": [{"name": "idle", "args": {}},
                                                            {"name": "rest", "args": {}}]})
    h.one(f"/give {eid} herb 2")
    h.step()
    text = "\n".join(h.run(f"/debug {eid}"))
    assert "following a plan from console" in text
    assert f"GIVEN    the operator gives 2 herb to {row[0].name}#{eid}" in text


def test_debug_an_item_and_an_object(h: Harness) -> None:
    item = h.world.store.query(c.Item)[0][0]
    obj = h.world.store.query(c.StaticObject)[0][0]
    assert ": item, " in h.run(f"/debug {item}")[0]
    lines = h.run(f"/debug {obj}")
    assert ": object at (" in lines[0] and "  StaticObject: kind=" in "\n".join(lines)


def test_stats_sections(h: Harness) -> None:
    h.paused()
    h.step(20)
    lines = h.run("/stats")
    text = "\n".join(lines)
    for part in ("ticks:", "p50", "p99", "max", "overruns", "agents:", "items:", "objects:",
                 "events:", "by type", "world log:", "lines written", "console:"):
        assert part in text, part
    assert "persistence" not in text and "llm" not in text
    # Readable: short lines, no internal names, no figures that say nothing.
    assert all(len(line) <= 98 for line in lines), max(lines, key=len)
    assert " None" not in text and "lines_written" not in text


class FakePart:
    """Stands in for the persistence, LLM and angel parts other layers attach."""

    def __init__(self) -> None:
        self.snapshots = 0
        self.in_flight = 2

    def request_snapshot(self) -> None:
        self.snapshots += 1

    def stats(self) -> dict[str, object]:
        return {"snapshots_requested": self.snapshots}

    def close(self) -> None:  # the session closes the parts attached to it
        pass


def test_save_without_persistence_says_so(h: Harness) -> None:
    assert h.run("/save") == [SAVE_OFF]


def test_save_writes_a_snapshot_now_and_confirms_it(tmp_path: Path) -> None:
    cfg = Config().replace(
        world={"name": "saved", "size": [32, 32], "starting_agents": 6, "seed": 3},
        paths={"logs": str(tmp_path / "logs"), "saves": str(tmp_path / "saves")},
        persistence={"snapshot_interval_ticks": 10_000})
    opened = open_world(cfg)
    session = Session(cfg, opened.world, folder=opened.folder, clock=FakeClock())
    console = Console(session, notify=lambda _line: None)
    session.loop.pause()
    assert asyncio.run(console.execute("/step 3")) == ["stepped 3 ticks: tick 0 -> 3 (paused)"]
    (reply,) = asyncio.run(console.execute("/save"))  # paused: no tick needed
    state = tmp_path / "saves" / "saved" / "world_state.json"
    assert reply.startswith(f"saved tick 3 to {state} (")
    assert (tmp_path / "saves" / "saved" / "snapshots" / "0000000003.json.gz").exists()
    assert json.loads(state.read_bytes())["tick"] == 3  # on disk when it says so
    assert any(line.startswith("persistence:") for line in asyncio.run(
        console.execute("/stats")))
    session.close()


def test_llm_figures_appear_only_with_an_llm(h: Harness) -> None:
    assert "LLM" not in status_text(h.session)
    h.session.llm = FakePart()  # type: ignore[attr-defined]
    assert status_text(h.session).endswith(" | LLM 2 in flight")
    assert any(line.startswith("llm:") for line in h.run("/stats"))


def test_status_line(h: Harness) -> None:
    assert status_text(h.session).startswith(
        f"tick 0 | running | 10 Hz | {len(h.world.agents())} agents | p99 ")
    h.paused()
    assert "| PAUSED |" in status_text(h.session)


def test_help(h: Harness) -> None:
    lines = h.run("/help")
    assert len(lines) == len(COMMANDS) + 1
    assert all(any(cmd.usage in line for line in lines) for cmd in COMMANDS.values())
    spawn = h.run("/help /spawn")
    assert spawn[0].startswith(usage("spawn")) and len(spawn) > 3


def test_quit_stops_the_loop(h: Harness) -> None:
    assert h.one("/quit") == "stopping at tick 0"
    assert h.session.loop.stopped and h.console.quit_requested


def test_recent_events_are_bounded_and_the_console_detaches(h: Harness) -> None:
    recent = RecentEvents(size=3)
    recent.on_tick(TickReport(tick=1, inputs=[], events=[{"type": "x", "agent": i}
                                                         for i in range(5)]))
    assert [e["agent"] for _t, e in recent.events] == [2, 3, 4]
    assert recent.involving(4, 10) == [(1, {"type": "x", "agent": 4})]
    assert h.console.recent in h.session.loop.observers
    h.console.close()
    assert h.console.recent not in h.session.loop.observers


def test_the_console_changes_the_world_only_through_its_inbox() -> None:
    """No module of the command surface or the console calls the world's mutators; changes
    go in as inputs."""
    import ast

    import agent_world.commands
    import agent_world.console

    mutators = {"spawn_agent", "spawn_item", "spawn_object", "spawn_random_item",
                "remove_entity", "die", "create", "delete", "add", "remove", "step", "emit",
                "apply_input", "add_offer", "remove_offer", "remember"}
    offenders = []
    packages = (agent_world.commands, agent_world.console)
    for path in sorted(p for package in packages
                       for p in Path(package.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in mutators):
                receiver = ast.unparse(node.func.value)
                if "world" in receiver or "store" in receiver:
                    offenders.append(f"{path.name}:{node.lineno} {ast.unparse(node.func)}")
    assert offenders == [], offenders
