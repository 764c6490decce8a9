"""Prompts, from the text files in ``prompts/``.

Every request starts with the same long block: the world's rules, the actions, advice,
example answers and the abilities, byte-identical for every agent, then one line for the
agent's personality. Providers cache identical prefixes (OpenAI from 1,024 tokens on, by
itself; Anthropic at the ``cache_control`` mark; vLLM and llama.cpp with prefix caching),
so this block is paid in full once and at the cached price after. What changes with every
decision comes after it and is kept short: the agent's name, its memory, the last error to
correct and the observation."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from typing import Any

import orjson

from agent_world.contract.answer import decision_schema
from agent_world.core.actions import ACTIONS, Arg
from agent_world.core.items import ITEMS
from agent_world.core.world import World
from agent_world.types import LLMRequest

__all__ = ["PROMPT_VERSION", "PromptBuilder", "WorldFacts", "action_lines", "load_prompt"]

PROMPT_VERSION = "3"
"""Part of every cache key: bump when a template changes."""


@dataclass(frozen=True, slots=True)
class WorldFacts:
    """The numbers the rules state, from the world's settings (never written in a template)."""

    tick_rate: float  # ticks per second
    vision: int  # tiles
    hearing: int  # tiles
    # The scenario mechanics this world has, as rules to state, and the actions that go
    # with them (none in the default world).
    scene: tuple[str, ...] = ()
    scene_actions: frozenset[str] = frozenset()

    @classmethod
    def of(cls, world: World) -> WorldFacts:
        game = world.config.game
        rules, actions = scene_rules(world)
        return cls(tick_rate=world.config.world.tick_rate, vision=game.vision_radius,
                   hearing=game.hearing_radius, scene=rules, scene_actions=actions)


SCENE_ACTIONS = frozenset({"craft", "team_say"})
"""Actions listed only in worlds that have their mechanics (``scene_rules``)."""


def scene_rules(world: World) -> tuple[tuple[str, ...], frozenset[str]]:
    """One line per scenario mechanic the world has (hazards, recipes, teams), and the
    actions of ``SCENE_ACTIONS`` that it has them for."""
    game = world.config.game
    lines = []
    actions: set[str] = set()
    if world.ground.hazard_tiles:
        lines.append(f"- Hazard tiles (objects of kind hazard, listed under scenario.hazards) "
                     f"cost {game.hazard_damage:g} health every tick you stand on one: walk "
                     "round them.")
    if world.recipes:
        made = "; ".join(f"{out} from {' + '.join(f'{kind}*{n}' for kind, n in ins.items())}"
                         for out, ins in world.recipes.items())
        lines.append(f"- craft makes one item from carried goods in {game.craft_ticks} ticks: "
                     f"{made}. Crafted goods are worth more than their parts.")
        actions.add("craft")
    if world.ground.capture_points or world.population.teams:
        lines.append(f"- Teams: a team takes a capture point by being the only team within "
                     f"{game.capture_radius} tiles (straight line) of it for "
                     f"{game.capture_ticks} ticks, and "
                     "scores every tick it holds it (scenario.capture_points). team_say "
                     "reaches every teammate anywhere; do not attack your teammates.")
        actions.add("team_say")
    return tuple(lines), frozenset(actions)


@functools.cache
def load_prompt(name: str) -> str:
    """A template file under ``agent_world/llm/prompts/``."""
    return (resources.files("agent_world.llm") / "prompts" / name).read_text(encoding="utf-8")


def _arg(key: str, arg: Arg) -> str:
    kind = {"entity": "id", "item": "item", "text": "text", "goods": "{item: qty}"}.get(
        arg.kind, "id" if arg.high >= 2**31 else f"{arg.low}..{arg.high}")
    return f"{key}{'' if arg.required else '?'}={kind}"


def action_lines(scene_actions: frozenset[str] = frozenset()) -> str:
    """One line per action: ``attack: target=id — attack an agent ...``; of the scenario
    mechanics' actions (``SCENE_ACTIONS``) only those in ``scene_actions``."""
    lines = []
    for spec in ACTIONS.values():
        if spec.name in SCENE_ACTIONS and spec.name not in scene_actions:
            continue
        args = ", ".join(_arg(k, a) for k, a in spec.args.items())
        forms = (" (give " + " or ".join("+".join(g) for g in spec.one_of) + ")"
                 if spec.one_of else "")
        lines.append(f"- {spec.name}: {args or 'no arguments'}{forms} — {spec.doc}")
    lines.append(f"Items: {', '.join(ITEMS)}.")
    return "\n".join(lines)


def _ability_line(ability: dict[str, Any]) -> str:
    """``- heal: target=agent? — Restore ... (energy 8, cooldown 40 ticks, range 3)``."""
    args = ", ".join(f"{k}={v}" for k, v in ability["args"].items()) or "no arguments"
    return (f"- {ability['name']}: {args} — {ability['description']} (energy "
            f"{ability['energy_cost']:g}, cooldown {ability['cooldown']} ticks, range "
            f"{ability['range']})")


class PromptBuilder:
    """Builds the request for one decision from plain data (any thread)."""

    def __init__(self, *, facts: WorldFacts, max_actions: int, temperature: float,
                 max_tokens: int, seed: int | None, structured: str) -> None:
        self.max_actions = max_actions
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.schema = decision_schema(max_actions) if structured == "schema" else None
        self._rules = load_prompt("system.txt").format(
            actions=action_lines(facts.scene_actions), max_actions=max_actions,
            tick_ms=f"{1000 / facts.tick_rate:g}", vision=facts.vision,
            hearing=facts.hearing).strip()
        if facts.scene:
            self._rules += "\n\nThis world's own rules:\n" + "\n".join(facts.scene)
        self.system = self._rules  # the shared block: rules, then abilities

    def set_abilities(self, catalog: list[dict[str, Any]]) -> None:
        """List the abilities agents may use after the rules (the same for every agent, so
        the prompt prefix stays shared). Called on the main thread when the list changes;
        workers read ``system`` whole, old or new."""
        if not catalog:
            self.system = self._rules
            return
        lines = "\n".join(_ability_line(a) for a in catalog)
        self.system = (f"{self._rules}\n\nAbilities (use_ability with ability=NAME and the "
                       f"arguments listed; \"?\" marks optional ones):\n{lines}")

    def system_for(self, personality: str) -> str:
        """The leading block of an agent's requests: the shared block, then its personality
        (one of four, so four prefixes share all but their last line)."""
        flavour = load_prompt(f"personalities/{personality}.txt").strip()
        return f"{self.system}\n\n{flavour}"

    def user(self, *, name: str, observation: dict[str, Any], memory: dict[str, Any],
             correction: str = "") -> str:
        mem = f"Memory: {orjson.dumps(memory).decode()}\n" if memory else ""
        fix = (f"Your previous answer was rejected: {correction} Answer correctly this "
               "time.\n") if correction else ""
        return load_prompt("decision.txt").format(
            name=name, memory=mem, correction=fix,
            observation=orjson.dumps(observation).decode()).strip()

    def request(self, prompt: str, *, system: str | None = None,
                temperature: float | None = None) -> LLMRequest:
        return LLMRequest(system=self.system if system is None else system, prompt=prompt,
                          schema=self.schema,
                          temperature=self.temperature if temperature is None else temperature,
                          max_tokens=self.max_tokens, seed=self.seed)
