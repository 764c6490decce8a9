"""The console's edges, in-process: Tab completion from the live world, how stdin is
classified, and the headless reader fed through a real pipe."""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from agent_world.app import Session
from agent_world.commands import COMMANDS, Console
from agent_world.config import Config
from agent_world.console.completion import WorldCompleter
from agent_world.console.pipe import ReplyWriter, run_pipe, stdin_kind
from agent_world.core.world import World
from agent_world.types import FakeClock


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    config = Config().replace(world={"size": [32, 32], "starting_agents": 6, "seed": 3},
                              paths={"logs": str(tmp_path / "logs"),
                                     "saves": str(tmp_path / "saves")})
    s = Session(config, World.create(config), clock=FakeClock())
    yield s
    s.close()
    s.world.close()


def complete(session: Session, text: str) -> list[str]:
    completer = WorldCompleter(session, COMMANDS)
    return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]


# -- completion ------------------------------------------------------------------------------


def test_completes_command_names_with_or_without_the_slash(session: Session) -> None:
    assert complete(session, "/pa") == ["/pause"]
    assert complete(session, "st") == ["/step", "/stats"]
    assert len(complete(session, "")) == len(COMMANDS)


def test_completes_agent_names_and_entity_ids_from_the_live_world(session: Session) -> None:
    eid, row = session.world.agents()[0]
    name = row[0].name
    assert name in complete(session, f"/debug {name[:2].lower()}")
    assert name in complete(session, f"/give {name[:2]}")
    ids = complete(session, f"/kill {str(eid)[0]}")
    assert str(eid) in ids and all(i.startswith(str(eid)[0]) for i in ids)
    assert f"#{eid}" in complete(session, f"/debug #{eid}")


def test_completes_kinds_items_and_spawn_options(session: Session) -> None:
    assert complete(session, "/spawn a") == ["agent", "apple"]
    assert "tree" in complete(session, "/spawn t")
    assert complete(session, "/spawn agent Zed ") == ["personality=", "brain=", "gold="]
    assert complete(session, "/spawn agent Zed personality=tr") == ["personality=trader"]
    assert complete(session, "/spawn apple 3 3 ") == ["qty="]
    assert complete(session, "/spawn tree 3 3 ") == []
    name = session.world.agents()[0][1][0].name
    assert complete(session, f"/give {name} sw") == ["sword"]
    assert complete(session, "/list obj") == ["objects"]
    assert complete(session, "/help sp") == ["speed", "spawn"]


# -- classifying stdin -----------------------------------------------------------------------


def test_stdin_kind(tmp_path: Path) -> None:
    assert stdin_kind(None, None) == "none"
    with open(os.devnull, encoding="utf-8") as devnull:
        assert stdin_kind(devnull, None) == "none"
    script = tmp_path / "commands.txt"
    script.write_text("/stats\n", encoding="utf-8")
    with script.open(encoding="utf-8") as f:
        assert stdin_kind(f, None) == "pipe"
    closed = script.open(encoding="utf-8")
    closed.close()
    assert stdin_kind(closed, None) == "none"
    r, w = os.pipe()
    with os.fdopen(r, encoding="utf-8") as reader, os.fdopen(w, "w", encoding="utf-8"):
        assert stdin_kind(reader, None) == "pipe"
    assert stdin_kind(io.StringIO("no descriptor"), None) == "none"


# -- the headless reader ---------------------------------------------------------------------


def feed(session: Session, text: bytes, *, exit_on_eof: bool) -> tuple[Console, list[str]]:
    """Run the headless reader on a real pipe holding ``text`` (then end of input)."""
    r, w = os.pipe()
    os.write(w, text)
    os.close(w)
    out = io.StringIO()
    console = Console(session)
    try:
        asyncio.run(asyncio.wait_for(run_pipe(console, exit_on_eof=exit_on_eof, fd=r, out=out),
                                     timeout=30))
    finally:
        os.close(r)
        console.close()
    return console, out.getvalue().splitlines()


def test_piped_commands_run_in_order_and_quit_stops_the_world(session: Session) -> None:
    console, lines = feed(session, b"/pause\r\n/step 3\n\n/bogus\n/quit\n/pause\n",
                          exit_on_eof=False)
    assert lines == ["paused at tick 0; /step [N] advances, /resume runs on",
                     "stepped 3 ticks: tick 0 -> 3 (paused)",
                     "error: unknown command '/bogus' (usage: /help [COMMAND] lists the "
                     "commands)",
                     "stopping at tick 3"]
    assert console.quit_requested and session.loop.stopped


def test_end_of_input_leaves_the_world_running_unless_asked(
        session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    _console, lines = feed(session, b"/pause\n/step", exit_on_eof=False)
    assert lines[-1] == "stepped 1 tick: tick 0 -> 1 (paused)", "a last line without newline"
    assert not session.loop.stopped
    assert "end of stdin; the world runs on" in capsys.readouterr().err
    feed(session, b"", exit_on_eof=True)
    assert session.loop.stopped
    assert "stopping (--exit-on-eof)" in capsys.readouterr().err


def test_replies_stop_quietly_when_the_reader_goes_away(
        capsys: pytest.CaptureFixture[str]) -> None:
    stream = io.StringIO()
    write = ReplyWriter(stream)
    write("one")
    stream.close()
    write("two")
    write("three")
    assert write.broken
    assert capsys.readouterr().err.count("cannot write replies") == 1
