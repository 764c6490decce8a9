"""The console's /ability and /abilities, and the ability figures in /stats."""

from __future__ import annotations

import asyncio

import pytest
from helpers import EMPTY_WORLD

from agent_world.app import Session
from agent_world.commands import Console
from agent_world.config import Config
from agent_world.console.status import status_text
from agent_world.core.world import World
from agent_world.sandbox import Sandbox
from agent_world.types import FakeClock


def _session(tmp_path, *, sandbox: bool, **angel) -> Session:
    config = Config().replace(
        world={**EMPTY_WORLD, "name": "con"}, persistence={"enabled": False},
        paths={"logs": str(tmp_path / "logs"), "saves": str(tmp_path / "saves")},
        log={"echo": False}, angel={"dry_runs": 1, **angel})
    return Session(config, World.create(config), clock=FakeClock(),
                   sandbox=Sandbox(config) if sandbox else None)


def _run(console: Console, line: str) -> list[str]:
    return asyncio.run(console.execute(line))


@pytest.fixture
def with_angel(tmp_path):
    session = _session(tmp_path, sandbox=True, wait="world")
    console = Console(session)
    yield session, console
    console.close()
    session.close()


def test_ability_asks_the_angel_and_the_answer_is_an_input(with_angel) -> None:
    session, console = with_angel
    (reply,) = _run(console, '/ability "a gust of wind that pushes an agent away"')
    assert reply.startswith("asked the angel for: 'a gust of wind")
    assert "the world waits" in reply and "WAITING for the angel" in status_text(session)
    assert session.angel is not None and session.angel.wait_idle(30)
    report = session.loop.tick_once()
    (accepted,) = [e for e in report.events if e["type"] == "ability_accepted"]
    assert accepted["origin"] == "operator"
    listing = _run(console, "/abilities")
    assert any(accepted["ability"] in line and "generated" in line for line in listing)


def test_abilities_disable_and_enable_go_in_as_inputs(with_angel) -> None:
    session, console = with_angel
    assert _run(console, "/abilities disable heal too strong") == [
        "heal will be disabled at tick 1"]
    session.loop.tick_once()
    assert session.world.abilities.disabled == {"heal": "too strong"}
    assert any("DISABLED: too strong" in line for line in _run(console, "/abilities"))
    _run(console, "/abilities enable heal")
    session.loop.tick_once()
    assert session.world.abilities.disabled == {}


@pytest.mark.parametrize(("line", "message"), [
    ("/ability", "describe the ability"),
    ("/ability " + "x" * 201, "keep it to 200"),
    ("/abilities drop heal", "expected nothing, 'disable NAME"),
    ("/abilities disable", "needs the ability's NAME"),
    ("/abilities enable heal now", "enable takes only the NAME"),
    ("/abilities disable hael", "no ability named 'hael'"),
])
def test_bad_ability_commands_say_what_is_wrong(with_angel, line, message) -> None:
    _, console = with_angel
    (reply,) = _run(console, line)
    assert reply.startswith("error:") and message in reply


def test_stats_shows_abilities_the_angel_and_the_sandbox(with_angel) -> None:
    _, console = with_angel
    text = "\n".join(_run(console, "/stats"))
    for part in ("abilities:", "known 11", "angel:", "generator templates", "sandbox:",
                 "ms per tick", "round trips per tick"):
        assert part in text, part


def test_without_a_sandbox_the_console_says_so(tmp_path) -> None:
    session = _session(tmp_path, sandbox=False)
    console = Console(session)
    try:
        (reply,) = _run(console, "/ability a spark")
        assert "this session has no angel" in reply
        assert _run(console, "/abilities") == [
            "no abilities (this session runs without a sandbox)"]
    finally:
        console.close()
        session.close()
