"""What a hostile tester threw at the console: floods, over-long lines, odd digits, and the
operator gaps a new user hit (/cast, /ability load, a long /step, replies as data).

In-process tests run the real console against a session on a fake clock, reading from real
files and pipes; the last tests run the real program.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_world.app import Session
from agent_world.commands import Console
from agent_world.config import Config
from agent_world.console.pipe import MAX_LINE_BYTES, run_pipe
from agent_world.core import components as c
from agent_world.core.world import World
from agent_world.sandbox import Sandbox
from agent_world.types import FakeClock
from tests.helpers import PROPERTY

REPO = Path(__file__).resolve().parents[1]
MAIN = REPO / "main.py"


def _config(tmp_path: Path, **sections: dict[str, Any]) -> Config:
    world = {"size": [32, 32], "starting_agents": 6, "seed": 3, **sections.pop("world", {})}
    return Config().replace(world=world, paths={"logs": str(tmp_path / "logs"),
                                                "saves": str(tmp_path / "saves")}, **sections)


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    s = Session(_config(tmp_path), World.create(_config(tmp_path)), clock=FakeClock())
    yield s
    s.close()


def _pipe_file(tmp_path: Path, data: bytes) -> int:
    """A file as the console's stdin (a pipe could not hold this much unread)."""
    path = tmp_path / "stdin"
    path.write_bytes(data)
    return os.open(path, os.O_RDONLY)


def _run_pipe(session: Session, fd: int, *, json_replies: bool = False,
              tick_along: bool = False) -> tuple[Console, list[str]]:
    """Feed the console from ``fd`` until it ends or quits; with ``tick_along`` the world
    ticks (flat out on the fake clock) while the console works."""
    import io

    out = io.StringIO()
    console = Console(session)

    async def main() -> None:
        reading = asyncio.create_task(run_pipe(console, exit_on_eof=True, fd=fd, out=out,
                                               json=json_replies))
        if tick_along:
            await asyncio.gather(session.loop.run(), reading)
        else:
            await reading

    try:
        asyncio.run(asyncio.wait_for(main(), timeout=120))
    finally:
        os.close(fd)
        console.close()
    return console, out.getvalue().splitlines()


# -- a long line cannot smuggle a command ------------------------------------------------------


@pytest.mark.parametrize("length", [MAX_LINE_BYTES + 1, 131_072, 1_000_000])
def test_an_overlong_line_is_discarded_whole_with_one_error(
        tmp_path: Path, session: Session, length: int) -> None:
    data = b"X" * length + b"/spawn agent Injected 5 5\n/pause\n"
    console, lines = _run_pipe(session, _pipe_file(tmp_path, data))
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"error: a line of {length + 25:,} bytes was discarded whole")
    assert lines[1].startswith("paused at tick")
    assert session.world.inbox.pending() == 0  # nothing was submitted
    assert session.world.population.find("Injected") is None
    assert console.errors == 1


def test_an_overlong_last_line_without_newline_is_discarded(tmp_path: Path,
                                                            session: Session) -> None:
    data = b"/pause\n" + b"/spawn agent Injected 5 5 " * 5000
    _console, lines = _run_pipe(session, _pipe_file(tmp_path, data))
    assert lines[0].startswith("paused at tick")
    assert lines[1].startswith("error: a line of ")
    assert len(lines) == 2


def test_a_line_at_the_limit_is_still_read(tmp_path: Path, session: Session) -> None:
    line = b"# " + b"x" * (MAX_LINE_BYTES - 2)  # a comment: read and ignored, no reply
    _console, lines = _run_pipe(session, _pipe_file(tmp_path, line + b"\n/pause\n"))
    assert lines == [lines[0]] and lines[0].startswith("paused at tick")


def test_an_overlong_line_split_across_reads_of_a_real_pipe(session: Session) -> None:
    r, w = os.pipe()

    def write() -> None:
        with os.fdopen(w, "wb") as f:
            for _ in range(40):  # 40 writes of 4 KiB: one line of 160 KiB
                f.write(b"Y" * 4096)
                f.flush()
            f.write(b"/spawn agent Injected 5 5\n/pause\n")

    import threading

    writer = threading.Thread(target=write)
    writer.start()
    _console, lines = _run_pipe(session, r)
    writer.join()
    assert [line.split(" ")[0] for line in lines] == ["error:", "paused"]
    assert session.world.population.find("Injected") is None


# -- floods are bounded -------------------------------------------------------------------------


def test_a_flood_of_spawns_is_capped_and_the_world_keeps_ticking(tmp_path: Path) -> None:
    config = _config(tmp_path, world={"max_agents": 60},
                     console={"max_queued_inputs": 25})
    session = Session(config, World.create(config), clock=FakeClock())
    try:
        flood = b"/spawn agent\n" * 5_000 + b"/quit\n"
        console, lines = _run_pipe(session, _pipe_file(tmp_path, flood), tick_along=True)
        assert len(lines) == 5_001  # one reply per command, /quit answered at its turn
        assert lines[-1].startswith("stopping at tick")
        assert len(session.world.agents()) <= 60
        refused = [line for line in lines if line.startswith("error:")]
        assert refused and all(("world.max_agents" in line or "max_queued_inputs" in line)
                               for line in refused)
        assert session.world.tick > 10  # ticks went on between the commands
        assert console.internal_errors == 0
    finally:
        session.close()


def test_the_world_refuses_spawns_past_its_cap_at_apply_time_too(tmp_path: Path) -> None:
    config = _config(tmp_path, world={"max_agents": 7})
    world = World.create(config)
    for name in ("Ann", "Bob", "Cid"):
        world.inbox.submit("spawn", {"kind": "agent", "name": name})
    report = world.step()
    assert len(world.agents()) == 7
    rejected = [e for e in report.events if e["type"] == "input_rejected"]
    assert len(rejected) == 2 and "world.max_agents" in rejected[0]["reason"]


class HeldGenerator:
    """A generator that writes nothing until released: the angel stays busy."""

    name = "held"

    def __init__(self) -> None:
        import threading

        self.release = threading.Event()

    def write(self, request: Any, feedback: Any) -> str:
        self.release.wait(60)
        raise RuntimeError("released")

    def close(self) -> None:
        self.release.set()


def test_the_angels_queue_is_bounded(tmp_path: Path) -> None:
    config = _config(tmp_path, console={"max_angel_requests": 2})
    with Sandbox(config) as sandbox:
        world = World.create(config)
        sandbox.install(world)
        session = Session(config, world, clock=FakeClock(), sandbox=sandbox)
        held = HeldGenerator()
        assert session.angel is not None
        session.angel.generator = held
        try:
            console = Console(session)
            replies = [asyncio.run(console.execute(f'/ability "a spark number {i}"'))[0]
                       for i in range(5)]
            assert [r.startswith("asked the angel") for r in replies] == [True, True, False,
                                                                          False, False]
            assert all("console.max_angel_requests" in r for r in replies[2:])
            assert session.angel.pending() == 2
        finally:
            held.release.set()
            session.close()


# -- odd digits and every other odd word get one line, never a console bug ----------------------


@pytest.mark.parametrize("line", ["/kill ²", "/debug ¹²", "/give ١٢ apple", "/step ²",
                                  "/give #٣ apple", "/kill Zed#²", "/step 1_0", "/step ５",
                                  "/kill " + "9" * 5000, "/spawn apple ² 3"])
def test_unicode_digits_are_refused_in_one_line(session: Session, line: str) -> None:
    console = Console(session)
    reply = asyncio.run(console.execute(line))
    assert len(reply) == 1 and reply[0].startswith("error:"), reply
    assert console.internal_errors == 0


WORDS = st.sampled_from(["/kill", "/debug", "/give", "/spawn", "/step", "/speed", "/cast",
                         "/list", "/ability", "/abilities", "/echo", "/help", "/pause",
                         "/resume", "/save", "/stats", "/bogus", "agent", "apple", "tree",
                         "heal", "fire_bolt", "#1", "Zed#1", "1", "0", "-1", "99999999999999999999",
                         "²", "١", "x=1", "qty=", "item=apple", "text='hi there'", "'",
                         "\"", "load", "/tmp", "on", "off", "1e-300", "nan", "inf"])
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@pytest.fixture(scope="module")
def fuzz_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    config = _config(tmp_path_factory.mktemp("fuzz"))
    s = Session(config, World.create(config), clock=FakeClock())
    s.loop.pause()  # a /step or /resume must not run the world away
    yield s
    s.close()


@PROPERTY
@given(words=st.lists(st.one_of(WORDS, TEXT), min_size=1, max_size=6))
def test_any_command_line_gets_an_answer_and_never_a_console_bug(
        words: list[str], fuzz_session: Session) -> None:
    console = Console(fuzz_session)
    try:
        line = " ".join(words)
        if line.lstrip().lower().startswith(("/quit", "/resume")):
            return
        reply = asyncio.run(console.execute(line))
        assert console.internal_errors == 0, reply
        if reply and reply[0].startswith("error:"):
            assert len(reply) == 1 and "\n" not in reply[0]
    finally:
        console.close()


# -- /cast ----------------------------------------------------------------------------------


@pytest.fixture
def ability_session(tmp_path: Path) -> Iterator[Session]:
    config = _config(tmp_path)
    with Sandbox(config) as sandbox:
        world = World.create(config)
        sandbox.install(world)
        s = Session(config, world, clock=FakeClock(), sandbox=sandbox)
        yield s
        s.close()


def _two_agents(world: World) -> tuple[str, str]:
    (_, row_a), (_, row_b) = world.agents()[:2]
    return row_a[0].name, row_b[0].name


def test_cast_orders_an_agent_to_use_an_ability(ability_session: Session) -> None:
    world = ability_session.world
    console = Console(ability_session)
    caster, target = _two_agents(world)
    world.store.get(world.population.find(caster), c.Needs).energy = 100.0  # type: ignore[arg-type]
    reply = asyncio.run(console.execute(f"/cast {caster} heal {target}"))
    assert reply[0].startswith(f"{caster}#") and "casts heal on" in reply[0], reply
    ability_session.loop.pause()
    reports = asyncio.run(ability_session.loop.step(60))
    inputs = [i for r in reports for i in r.inputs if i.type == "plan"]
    assert inputs and inputs[0].data["actions"][0] == {
        "name": "use_ability",
        "args": {"ability": "heal", "target": world.population.find(target)}}
    events = [e for r in reports for e in r.events
              if e["type"] in ("ability", "action_failed")
              and e.get("agent") == world.population.find(caster)]
    assert events, "the cast was carried out or refused with a reason"


@pytest.mark.parametrize(("line", "message"), [
    ("/cast {a} nosuch {b}", "no ability named 'nosuch'"),
    ("/cast {a} fire_bolt", "fire_bolt needs target"),
    ("/cast {a} heal 3 4", "heal takes no x"),
    ("/cast {a} fire_bolt {tree}", "acts on an agent"),
    ("/cast {a} heal {b} item=apple", "heal takes no item"),
    ("/cast Nobody heal", "no living agent named 'Nobody'"),
    ("/cast {a} heal {b} mode=fast", "takes no option 'mode'"),
    ("/cast {a}", "name the agent and the ability"),
])
def test_bad_casts_get_one_line(ability_session: Session, line: str, message: str) -> None:
    world = ability_session.world
    a, b = _two_agents(world)
    tree = next(eid for eid, (obj,) in world.store.query(c.StaticObject))
    console = Console(ability_session)
    reply = asyncio.run(console.execute(line.format(a=a, b=b, tree=tree)))
    assert len(reply) == 1 and message in reply[0], reply
    assert world.inbox.pending() == 0


def test_cast_of_a_disabled_ability_says_why(ability_session: Session) -> None:
    ability_session.world.abilities.disable("heal", "broken on purpose")
    a, b = _two_agents(ability_session.world)
    reply = asyncio.run(Console(ability_session).execute(f"/cast {a} heal {b}"))
    assert "heal is disabled: broken on purpose" in reply[0]


# -- /ability load ----------------------------------------------------------------------------


GLOW = (REPO / "agent_world" / "abilities" / "heal.py").read_text(encoding="utf-8").replace(
    'NAME = "heal"', 'NAME = "glow"')


def test_ability_load_checks_the_file_and_logs_it_with_its_source(
        ability_session: Session, tmp_path: Path) -> None:
    path = tmp_path / "glow.py"
    path.write_text(GLOW, encoding="utf-8")
    console = Console(ability_session)
    reply = asyncio.run(console.execute(f"/ability load {path}"))
    assert reply[0].startswith(f"loaded glow from {path}"), reply
    enters = int(reply[0].split("enters the world at tick ")[1].split(":")[0])
    inputs = []
    while ability_session.world.tick < enters:  # it enters at the tick the reply names
        inputs = [i for i in ability_session.loop.tick_once().inputs if i.type == "ability"]
        assert not inputs or ability_session.world.tick == enters
    assert inputs and inputs[0].data["source"] == GLOW
    assert inputs[0].data["origin"] == "file"
    assert "glow" in ability_session.world.abilities.generated


@pytest.mark.parametrize(("content", "message"), [
    (b"import os\n" + GLOW.encode(), "rejected: line 1: Import is not allowed"),
    (b"\xff\xfe not text", "is not UTF-8 text"),
    (GLOW.replace('NAME = "glow"', 'NAME = "heal"').encode(), "already exists"),
    (b"x" * 70_000, "more than 16000 characters"),
])
def test_ability_load_refuses_bad_files_in_one_line(ability_session: Session, tmp_path: Path,
                                                    content: bytes, message: str) -> None:
    path = tmp_path / "bad.py"
    path.write_bytes(content)
    reply = asyncio.run(Console(ability_session).execute(f"/ability load {path}"))
    assert len(reply) == 1 and reply[0].startswith("error:") and message in reply[0], reply
    assert ability_session.world.inbox.pending() == 0


def test_ability_load_of_a_missing_file(ability_session: Session, tmp_path: Path) -> None:
    reply = asyncio.run(Console(ability_session).execute(
        f"/ability load {tmp_path / 'nope.py'}"))
    assert "cannot read" in reply[0] and "No such file" in reply[0]


# -- a long /step: progress, and Ctrl-C cancels the step, not the world -------------------------


def test_ctrl_c_cancels_a_long_step_and_the_world_stays(session: Session) -> None:
    console = Console(session)
    console.interactive = True
    told: list[str] = []
    console.notify = told.append
    session.loop.pause()

    async def main() -> list[str]:
        step = asyncio.create_task(console.execute("/step 100000"))
        while session.world.tick < 300:  # noqa: ASYNC110 - the step offers no event
            await asyncio.sleep(0)
        session.interrupt()  # what SIGINT does
        return await step

    reply = asyncio.run(main())
    assert reply[0].startswith("step cancelled after "), reply
    assert not session.loop.stopped and session.loop.paused
    assert session.world.tick < 100_000
    session.interrupt()  # nothing running now: Ctrl-C stops the world
    assert session.loop.stopped


# -- replies as data ---------------------------------------------------------------------------


def test_json_replies_are_one_line_per_command(tmp_path: Path, session: Session) -> None:
    name = session.world.agents()[0][1][0].name
    data = f"/pause\n/stats\n/list\n/debug {name}\n/bogus\n/help\n".encode()
    _console, lines = _run_pipe(session, _pipe_file(tmp_path, data), json_replies=True)
    replies = [json.loads(line) for line in lines]
    assert [r["command"] for r in replies] == ["/pause", "/stats", "/list", f"/debug {name}",
                                               "/bogus", "/help"]
    assert [r["ok"] for r in replies] == [True, True, True, True, False, True]
    assert len(replies[1]["reply"]) > 3 and replies[1]["reply"][0].startswith("ticks:")


def test_plain_replies_indent_their_continuation_lines(tmp_path: Path,
                                                      session: Session) -> None:
    _console, lines = _run_pipe(session, _pipe_file(tmp_path, b"/pause\n/list\n/pause\n"))
    assert lines[0].startswith("paused at tick")
    assert lines[1].startswith("6 agents at tick")
    table = lines[2:-1]
    assert table and all(line.startswith("  ") for line in table)
    assert lines[-1].startswith("already paused")


def test_echo_can_be_muted_and_restored(session: Session) -> None:
    import io

    stream = io.StringIO()
    session.world_log.echo = stream
    console = Console(session)
    assert asyncio.run(console.execute("/echo off"))[0].startswith("world-log echo off")
    assert session.world_log.echo is None
    assert asyncio.run(console.execute("/echo"))[0].startswith("world-log echo is off")
    assert asyncio.run(console.execute("/echo on")) == ["world-log echo on"]
    assert session.world_log.echo is stream
    assert asyncio.run(console.execute("/echo loud"))[0].startswith("error: expected on or off")


# -- the real program --------------------------------------------------------------------------


def test_the_program_survives_a_flood_and_quits_at_its_turn(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        f"world: {{size: [32, 32], starting_agents: 6, max_agents: 200}}\n"
        f"paths: {{logs: '{tmp_path / 'logs'}', saves: '{tmp_path / 'saves'}'}}\n",
        encoding="utf-8")
    flood = "/spawn agent\n" * 100_000 + "/quit\n"
    done = subprocess.run([sys.executable, str(MAIN), "--config", str(config), "--headless"],
                          input=flood, capture_output=True, text=True, cwd=tmp_path,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 100_001
    assert lines[-1].startswith("stopping at tick")
    assert "Traceback" not in done.stderr
    summary = [line for line in done.stderr.splitlines() if line.startswith("stopped at tick")]
    assert summary
