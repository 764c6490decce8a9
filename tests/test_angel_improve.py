"""The angel learns from the world: each ability's usage figures (casts, effects, failures by
reason), and ``/ability improve NAME``, which asks for a better version with them: the
templates tune what the failures point at, an LLM gets the source and the figures."""

from __future__ import annotations

import asyncio

import pytest
from helpers import EMPTY_WORLD, add_agent

from agent_world.angel import AbilityRequest, TemplateGenerator
from agent_world.angel.generators import CannotWrite, Improvement, build_prompt
from agent_world.angel.usage import AbilityUsage
from agent_world.app import Session
from agent_world.commands import Console
from agent_world.config import Config
from agent_world.core.world import World
from agent_world.sandbox import Sandbox
from agent_world.sandbox.check import AbilityChecker
from agent_world.types import FakeClock, TickReport


def report_of(*events: dict[str, object]) -> TickReport:
    return TickReport(tick=1, events=list(events), inputs=[])


def test_usage_counts_casts_effects_and_failures_by_reason() -> None:
    usage = AbilityUsage()
    usage.on_tick(report_of(
        {"type": "ability", "ability": "blink", "effects": ["move to (3, 4)"]},
        {"type": "ability", "ability": "blink", "effects": ["move to (5, 1)"]},
        {"type": "action_failed", "action": "use_ability(ability=blink, x=30, y=4)",
         "reason": "(30, 4) is out of range for blink (range 4)"},
        {"type": "action_failed", "action": "use_ability(ability=blink, x=31, y=9)",
         "reason": "(31, 9) is out of range for blink (range 4)"},
        {"type": "action_failed", "action": "eat(item=apple)", "reason": "no apple"},
    ))
    figures = usage.of("blink")
    assert figures.casts == 2 and figures.effects == {"move": 2}
    assert figures.failures == {"(N, N) is out of range for blink (range N)": 2}
    assert figures.lines() == ["4 attempted casts: 2 took effect, 2 failed",
                               "effects applied: move x2",
                               "failed 2x: (N, N) is out of range for blink (range N)"]
    assert usage.of("nothing").casts == 0


def _template(text: str) -> str:
    return TemplateGenerator().write(AbilityRequest(request=1, agent=1, text=text), [])


def test_the_templates_tune_what_the_failures_point_at() -> None:
    source = _template("a way to leap away from danger")  # blink, range 3-6
    old_range = int(source.split("RANGE = ")[1].split("\n")[0])
    better = TemplateGenerator().write(AbilityRequest(
        request=0, agent=0, text="a better blink", taken=("blink",),
        improve=Improvement("blink", source, (
            "9 attempted casts: 3 took effect, 6 failed",
            "failed 4x: (N, N) is out of range for blink",
            "failed 2x: too tired for blink (energy N, it costs N)"))), [])
    assert "NAME = 'blink_2'" in better
    assert f"RANGE = {old_range + 2}\n" in better
    assert f"within {old_range + 2} tiles" in better  # the description says the new reach
    old_cost = int(source.split("ENERGY_COST = ")[1].split("\n")[0])
    assert f"ENERGY_COST = {max(1, round(old_cost * 0.6))}\n" in better
    with AbilityChecker(Config().replace(angel={"dry_runs": 1})) as checker:
        report = checker.check(better, taken={"blink"})
    assert report.accepted, report.line()


def test_the_templates_say_when_they_cannot_improve() -> None:
    source = _template("a way to leap away from danger")
    with pytest.raises(CannotWrite, match="nothing the templates can tune"):
        TemplateGenerator().write(AbilityRequest(
            request=0, agent=0, text="a better blink", improve=Improvement(
                "blink", source, ("5 attempted casts: 5 took effect, 0 failed",))), [])
    with pytest.raises(CannotWrite, match="improve only abilities they wrote"):
        TemplateGenerator().write(AbilityRequest(
            request=0, agent=0, text="a better spark", improve=Improvement(
                "spark", "NAME = 'spark'\n", ("failed 3x: out of range",))), [])


def test_an_llm_is_given_the_source_and_the_figures() -> None:
    request = AbilityRequest(request=0, agent=0, text="a better spark", improve=Improvement(
        "spark", "NAME = 'spark'\nRANGE = 2\n", ("failed 7x: (N, N) is out of range",)))
    prompt = build_prompt(request, [], Config().abilities)
    assert "better version of the ability spark" in prompt
    assert "RANGE = 2" in prompt and "failed 7x: (N, N) is out of range" in prompt


def test_ability_improve_from_the_console(tmp_path) -> None:
    config = Config().replace(
        world={**EMPTY_WORLD, "name": "imp"}, persistence={"enabled": False},
        paths={"logs": str(tmp_path / "logs"), "saves": str(tmp_path / "saves")},
        log={"echo": False}, angel={"dry_runs": 1, "wait": "world"})
    session = Session(config, World.create(config), clock=FakeClock(),
                      sandbox=Sandbox(config))
    console = Console(session)

    def run(line: str) -> list[str]:
        return asyncio.run(console.execute(line))

    try:
        assert "nothing yet to learn from" in run("/ability improve heal")[0]
        assert "no ability named 'nosuch'" in run("/ability improve nosuch")[0]
        run('/ability "a way to leap away from danger"')
        assert session.angel is not None and session.angel.wait_idle(30)
        session.loop.tick_once()
        assert session.world.abilities.get("blink") is not None
        zed = add_agent(session.world, "Zed", 5, 5, energy=100.0)
        del zed
        for x in (17, 18, 19):  # on the map, far out of reach: each cast fails out of range
            run(f"/cast Zed blink {x} 5")
            session.loop.tick_once()
            session.loop.tick_once()
        figures = session.ability_usage.of("blink")
        assert sum(figures.failures.values()) >= 1, figures
        (reply,) = run("/ability improve blink")
        assert reply.startswith("asked the angel for a better blink ("), reply
        assert session.angel.wait_idle(30)
        report = session.loop.tick_once()
        accepted = [e for e in report.events if e["type"] == "ability_accepted"]
        assert [e["ability"] for e in accepted] == ["blink_2"]
        old = session.world.abilities.get("blink")
        new = session.world.abilities.get("blink_2")
        assert old is not None and new is not None
        assert new.meta.range == min(8, old.meta.range + 2)
    finally:
        console.close()
        session.close()
