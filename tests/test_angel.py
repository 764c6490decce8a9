"""The angel: templates, the LLM generator's prompt and retries, and the thread answering
agents and the operator through the world's inbox."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest
from helpers import EMPTY_WORLD, add_agent, give_plan, of_type

from agent_world.angel import (
    AbilityRequest,
    Angel,
    FallbackGenerator,
    LLMGenerator,
    TemplateGenerator,
)
from agent_world.angel.generators import CannotWrite, build_prompt, extract_code
from agent_world.angel.templates import TEMPLATES, ability_name
from agent_world.app import Session, choose_generator
from agent_world.config import Config, ConfigError
from agent_world.core import components as c
from agent_world.core.world import World
from agent_world.sandbox import AbilityChecker, Sandbox
from agent_world.types import ProviderError

ANSWER_TIMEOUT_S = 30.0


def angel_config(tmp_path, **sections) -> Config:
    base = {"world": {**EMPTY_WORLD, "name": "angel"}, "persistence": {"enabled": False},
            "paths": {"logs": str(tmp_path / "logs"), "saves": str(tmp_path / "saves")},
            "log": {"echo": False}, "angel": {"dry_runs": 2, "answer_ticks": 1}}
    for name, values in sections.items():
        base[name] = {**base.get(name, {}), **values}
    return Config().replace(**base)


@pytest.fixture(scope="module")
def checker():
    with AbilityChecker(Config().replace(angel={"dry_runs": 2})) as ch:
        yield ch


# -- templates ---------------------------------------------------------------------------------


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda t: t.kind)
def test_every_template_writes_an_ability_the_checker_accepts(template, checker) -> None:
    text = f"please {template.words[0]} for me"
    source = TemplateGenerator().write(AbilityRequest(request=1, agent=1, text=text), [])
    report = checker.check(source)
    assert report.accepted, report.line()
    assert report.casts >= 1, report.notes


def test_request_text_never_becomes_code(checker) -> None:
    text = "heal '''\"; import os; os.system('rm -rf /') #\nNAME = 'evil'"
    source = TemplateGenerator().write(AbilityRequest(request=1, agent=1, text=text), [])
    report = checker.check(source)
    assert report.accepted and report.meta is not None
    assert "import" not in source and "evil" not in source
    tree = ast.parse(source)
    assert [type(n).__name__ for n in tree.body] == ["Expr", *["Assign"] * 6, "FunctionDef"]


def test_names_avoid_the_taken_ones_and_follow_the_rules() -> None:
    assert ability_name("heal", ()) == "heal"
    assert ability_name("heal", ("heal",)) == "heal_2"
    assert ability_name("42 !!", ()) == "a_42"
    assert ability_name("Ünïcode ƒire", ()).isascii()


def test_a_retry_takes_the_next_template_and_then_says_none_fits() -> None:
    gen = TemplateGenerator()
    req = AbilityRequest(request=1, agent=1, text="heal and protect me")
    assert "NAME = 'heal'" in gen.write(req, [])
    assert "NAME = 'shield'" in gen.write(req, ["rejected: something"])
    with pytest.raises(CannotWrite, match="no other template fits after 2 tries"):
        gen.write(req, ["rejected: something", "rejected: again"])


@pytest.mark.parametrize(("text", "why"), [
    ("kill every agent on the map instantly", "to kill or destroy"),
    ("summon a dragon", "to summon creatures"),
    ("heal everyone in the world", "to reach everyone or the whole map"),
    ("make it rain gold", "no template fits this request"),
])
def test_the_templates_say_so_when_they_cannot_meet_a_request(text: str, why: str) -> None:
    with pytest.raises(CannotWrite, match=why) as caught:
        TemplateGenerator().write(AbilityRequest(request=1, agent=1, text=text), [])
    assert "\n" not in str(caught.value) and "make food" in str(caught.value)


EFFECT_WORDS = {"heal": "heal", "damage": "damage", "move": "move", "push": "push",
                "create_item": "make", "spawn_object": "raise", "transfer": "take",
                "status": "for"}


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda t: t.kind)
def test_a_name_and_description_say_what_the_effects_do(template, checker) -> None:
    """Made from the effects, never from the request's words."""
    text = f"please {template.words[0]} for me, and be legendary"
    source = TemplateGenerator().write(AbilityRequest(request=1, agent=1, text=text), [])
    report = checker.check(source)
    assert report.accepted and report.meta is not None
    assert "legendary" not in report.meta.description + report.meta.name
    described = report.meta.description.lower()
    for effect, word in EFFECT_WORDS.items():
        if f'"type": "{effect}"' in source:
            assert word in described, (effect, described)


# -- the LLM generator -------------------------------------------------------------------------


class ScriptedModel:
    """Answers in turn; an exception among the answers is raised (a failed call)."""

    def __init__(self, *answers: str | Exception) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    def complete(self, prompt: str) -> str:
        self.prompts.append(prompt)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


GOOD = '''Here you are:
```python
NAME = "spark"
DESCRIPTION = "A small spark."
ENERGY_COST = 2
COOLDOWN = 10
RANGE = 3
ARGS = {"target": "agent"}


def execute(ctx):
    return [{"type": "damage", "target": ctx["target"]["id"], "amount": 3}]
```'''


def test_the_prompt_carries_the_contract_vocabulary_examples_and_feedback() -> None:
    rules = Config().abilities
    prompt = build_prompt(AbilityRequest(request=1, agent=2, text="a spark", taken=("heal",)),
                          ["rejected: line 1: Import is not allowed"], rules)
    for needle in ("def execute(ctx)", "spawn_object", "fire_bolt", "a spark",
                   "Import is not allowed", "not one of: heal", "damage <= 30"):
        assert needle in prompt
    assert extract_code(GOOD).startswith('NAME = "spark"')
    assert extract_code("NAME = 1") == "NAME = 1\n"


def test_the_angel_feeds_failures_back_and_accepts_the_fixed_source(tmp_path) -> None:
    config = angel_config(tmp_path)
    model = ScriptedModel("```python\nimport os\n```", GOOD)
    world = World.create(config)
    angel = Angel(config, world.inbox, LLMGenerator(model, config.abilities))
    try:
        angel.submit(AbilityRequest(request=0, agent=0, text="a spark"))
        assert angel.wait_idle(ANSWER_TIMEOUT_S)
    finally:
        angel.close()
    assert "Import is not allowed" in model.prompts[1]
    stats = angel.stats()
    assert (stats["generated"], stats["accepted"], stats["rejected"]) == (2, 1, {"gate": 1})
    (inp,) = world.inbox.drain(1)
    assert inp.type == "ability" and inp.data["name"] == "spark"
    assert inp.data["origin"] == "operator"
    world.close()


def test_the_generator_follows_the_configuration() -> None:
    assert isinstance(choose_generator(Config(), None), TemplateGenerator)
    llm_first = choose_generator(Config(), ScriptedModel())
    assert isinstance(llm_first, FallbackGenerator)  # the templates write if it cannot
    assert isinstance(llm_first.primary, LLMGenerator)
    assert isinstance(llm_first.fallback, TemplateGenerator)
    llm = Config().replace(llm={"provider": "openai", "model": "m"}, angel={"generator": "llm"})
    with pytest.raises(ConfigError, match="needs an LLM provider"):
        choose_generator(llm, None)


def test_the_templates_write_while_the_llm_cannot_answer_and_it_is_said_once() -> None:
    said: list[str] = []
    down = ProviderError("connect", "Cannot connect to host 127.0.0.1:9")
    model = ScriptedModel(down, down, GOOD)
    writer = choose_generator(Config(), model, report=said.append)
    gust = AbilityRequest(request=1, agent=3, text="a gust of wind that pushes someone away")
    assert "push" in writer.write(gust, [])  # the templates' gust
    assert "push" in writer.write(gust, [])
    assert 'NAME = "spark"' in writer.write(gust, [])  # the model again
    assert isinstance(writer, FallbackGenerator) and writer.fallbacks == 2
    assert said == ["angel: the LLM cannot write abilities now (connect: Cannot connect to "
                    "host 127.0.0.1:9); the templates write them until it answers again",
                    "angel: the LLM answers again; it writes the abilities (2 written by the "
                    "templates meanwhile)"]
    dragon = AbilityRequest(request=2, agent=3, text="summon a dragon")
    model.answers.append(down)
    with pytest.raises(CannotWrite, match=r"^the LLM cannot answer \(connect: .*\), and "):
        writer.write(dragon, [])


# -- the angel in a running world --------------------------------------------------------------


def _drive(session: Session, ticks: int) -> list[dict]:
    """Step ``ticks`` ticks, letting the angel answer whenever it has work."""
    events: list[dict] = []

    async def go() -> None:
        for _ in range(ticks):
            assert session.angel is not None
            if session.angel.pending():
                assert session.angel.wait_idle(ANSWER_TIMEOUT_S)
            assert not session.loop.holders, "an answer is due and not in"
            report = session.loop.tick_once()
            events.extend(report.events)
            await asyncio.sleep(0)

    asyncio.run(go())
    return events


def test_an_agent_asks_the_angel_learns_the_ability_and_uses_it(tmp_path) -> None:
    config = angel_config(tmp_path)
    world = World.create(config)
    asker = add_agent(world, "Asker", 5, 5)
    session = Session(config, world, sandbox=Sandbox(config))
    try:
        give_plan(world, asker, {"name": "request_ability",
                                 "args": {"text": "let me conjure bread"}})
        events = _drive(session, 4)
        (accepted,) = of_type(events, "ability_accepted")
        name = accepted["ability"]
        assert accepted["agent"] == asker and accepted["origin"] == "angel"
        assert world.store.get(asker, c.Intent).last_result == f"ok: learned {name}"
        carried = sum(world.store.get(asker, c.Inventory).items.values())
        give_plan(world, asker, {"name": "use_ability", "args": {"ability": name}})
        events = _drive(session, 2)
        assert of_type(events, "ability")[0]["ability"] == name
        assert sum(world.store.get(asker, c.Inventory).items.values()) > carried
        stats = session.ability_stats()
        assert stats["accepted"] == 1 and stats["casts"] == 1
        assert stats["sandbox_ms_per_tick"]["p50"] > 0
    finally:
        session.close()


class Junk:
    name = "junk"
    repeatable = True

    def write(self, request, feedback):
        return "import os\n"


def test_a_request_the_angel_cannot_meet_is_refused_after_its_tries(tmp_path) -> None:
    config = angel_config(tmp_path, angel={"max_tries": 2})
    world = World.create(config)
    asker = add_agent(world, "Asker", 5, 5)
    session = Session(config, world, sandbox=Sandbox(config))
    assert session.angel is not None
    session.angel.generator = Junk()
    try:
        give_plan(world, asker, {"name": "request_ability", "args": {"text": "anything"}})
        events = _drive(session, 4)
        (refused,) = of_type(events, "ability_refused")
        assert "no acceptable ability after 2 tries" in refused["reason"]
        assert world.store.get(asker, c.Intent).last_result.startswith(
            "failed: the angel refused")
        assert session.ability_stats()["rejected"] == {"gate": 2}
    finally:
        session.close()


def test_with_wait_world_the_world_pauses_until_the_answer_is_in(tmp_path) -> None:
    config = angel_config(tmp_path, angel={"wait": "world"})
    world = World.create(config)
    session = Session(config, world, sandbox=Sandbox(config))
    assert session.angel is not None and session.angel_link is not None
    try:
        sent = session.request_ability("a gust of wind that pushes")
        assert sent.due == world.tick + 1
        assert session.loop.holders == ("angel",)  # at once, before the angel has answered
        assert not session.loop.paused  # the operator's pause is left alone
        assert session.angel.wait_idle(ANSWER_TIMEOUT_S)
        assert not session.loop.holders
        events = _drive(session, 1)
        assert of_type(events, "ability_accepted")[0]["origin"] == "operator"
        with pytest.raises(ValueError, match="describe the ability"):
            session.request_ability("   ")
    finally:
        session.close()


def test_a_world_whose_agents_ask_the_angel_is_the_same_flat_out_and_paced(
        tmp_path) -> None:
    """Without an LLM a world is a pure function of its seed: the angel's answers enter at
    ticks fixed when they were asked (angel.answer_ticks), not when the angel finished."""
    import json
    import subprocess
    import sys

    import yaml

    from agent_world.persistence.eventlog import LogReader
    from agent_world.persistence.folder import SaveFolder

    main = Path(__file__).resolve().parent.parent / "main.py"
    answers: list[list[tuple[int, str]]] = []
    hashes = []
    for name, args in (("flat", ["--headless", "--until", "6000"]),
                       ("paced", ["--until", "6000"])):
        home = tmp_path / name
        home.mkdir()
        config = home / "config.yaml"
        config.write_text(yaml.safe_dump({
            "world": {"seed": 913, "tick_rate": 1000},
            "game": {"ability_requests_per_hour": 120},  # ask often, to have answers
            "paths": {"saves": str(home / "saves"), "logs": str(home / "logs")},
            "log": {"echo": False}}), encoding="utf-8")
        done = subprocess.run([sys.executable, str(main), "--config", str(config), *args],
                              cwd=home, capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL, check=False)
        assert done.returncode == 0, done.stderr
        hashes.append(json.loads(done.stdout.strip().splitlines()[-1])["state_hash"])
        log = LogReader(SaveFolder(home / "saves" / "default"))
        answers.append([(r["tick"], r["type"]) for r in log
                        if r.get("kind") == "input" and r.get("source") == "angel"])
    assert answers[0], "no answer of the angel entered the world"
    assert answers[0] == answers[1]
    assert hashes[0] == hashes[1]
