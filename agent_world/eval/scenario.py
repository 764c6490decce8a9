"""Scenarios: YAML files that say what world an episode runs in, which agents the brain under
test plays, when the episode ends and how it is scored.

    name: market
    description: ...
    objective: grow your wealth by trading
    world: {starting_agents: 24}        # overrides of the world section
    game: {market_fee: 0.0}             # overrides of the game section
    subjects: {count: 6, personality: trader, goods: {berries: 6}}
    end: {ticks: 3000, subjects_dead: true}
    score: {wealth_gained: 1.0}         # weights of per-agent metrics

A subject's score is the weighted sum of its metrics (``METRICS`` and ``DERIVED``); an
episode's score is the mean over its subjects. Built-in scenarios ship in the package
(``agent_world/eval/scenarios``); any other is a path.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from agent_world.config import PERSONALITIES, Config, ConfigError
from agent_world.core.items import ITEMS
from agent_world.core.metrics import METRICS

__all__ = ["BUILT_IN", "DERIVED", "Scenario", "ScenarioError", "built_in_names",
           "load_scenario"]

DERIVED = {
    "ticks_alive": "ticks from its birth to its death or the episode's end",
    "wealth_gained": "gold and goods at market prices at the end (0 if dead), less what it "
                     "started with",
}
"""Figures an episode adds to the world's metrics, for scores."""
KEYS = ("name", "description", "objective", "world", "game", "subjects", "end", "score")
BUILT_IN = "agent_world.eval"


class ScenarioError(ConfigError):
    """A scenario that cannot be run; the message names the file, the key and the fix."""


@dataclass(frozen=True, slots=True)
class Subjects:
    count: int
    personality: str | None = None
    goods: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    description: str
    objective: str
    world: dict[str, Any]
    game: dict[str, Any]
    subjects: Subjects
    ticks: int
    subjects_dead: bool
    score: dict[str, float]
    source: str  # where it was read from

    def config(self, base: Config) -> Config:
        """``base`` with the scenario's world and game settings."""
        return base.replace(world=dict(self.world), game=dict(self.game))

    def describe_score(self) -> str:
        return " + ".join(f"{w:g} x {m}" for m, w in self.score.items())


def built_in_names() -> list[str]:
    folder = resources.files(BUILT_IN) / "scenarios"
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir()
                  if p.name.endswith(".yaml"))


def load_scenario(name_or_path: str) -> Scenario:
    """A built-in scenario by name, or a YAML file by path; ScenarioError saying what is
    wrong (an unknown scenario, key, metric, personality or item; a bad value)."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ScenarioError(f"scenario {name_or_path}: cannot read it "
                                f"({exc.strerror or exc})") from None
        source = str(path)
    else:
        if name_or_path not in built_in_names():
            raise ScenarioError(f"unknown scenario {name_or_path!r}: built in are "
                                f"{', '.join(built_in_names())}, or give a .yaml file's path")
        text = (resources.files(BUILT_IN) / "scenarios" / f"{name_or_path}.yaml").read_text(
            encoding="utf-8")
        source = f"built-in {name_or_path}"
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(f"scenario {source}: not valid YAML ({exc})") from None
    return _parse(doc, source)


def _parse(doc: Any, source: str) -> Scenario:
    where = f"scenario {source}"
    if not isinstance(doc, dict):
        raise ScenarioError(f"{where}: expected a mapping of {', '.join(KEYS)}")
    unknown = sorted(set(doc) - set(KEYS))
    if unknown:
        raise ScenarioError(f"{where}: unknown key {unknown[0]!r}; the keys are "
                            f"{', '.join(KEYS)}")
    name = doc.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ScenarioError(f"{where}: 'name' must be a non-empty string")
    world, game = doc.get("world") or {}, doc.get("game") or {}
    for key, section in (("world", world), ("game", game)):
        if not isinstance(section, dict):
            raise ScenarioError(f"{where}: {key!r} must be a mapping of {key} settings")
    try:  # the same checks as a configuration file, naming the setting
        Config().replace(world=dict(world), game=dict(game))
    except ConfigError as exc:
        raise ScenarioError(f"{where}: {exc}") from None
    subjects = _subjects(doc.get("subjects") or {}, where)
    end = doc.get("end") or {}
    if not isinstance(end, dict) or set(end) - {"ticks", "subjects_dead"}:
        raise ScenarioError(f"{where}: 'end' takes ticks and subjects_dead")
    ticks = end.get("ticks", 3000)
    if isinstance(ticks, bool) or not isinstance(ticks, int) or not 1 <= ticks <= 10**7:
        raise ScenarioError(f"{where}: end.ticks must be a whole number of ticks >= 1")
    score = doc.get("score") or {}
    if not isinstance(score, dict) or not score:
        raise ScenarioError(f"{where}: 'score' must map metrics to weights, e.g. "
                            "{food_gathered: 1.0}")
    known = {**METRICS, **DERIVED}
    for metric, weight in score.items():
        if metric not in known:
            raise ScenarioError(f"{where}: score: unknown metric {metric!r}; the metrics are "
                                f"{', '.join(known)}")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            raise ScenarioError(f"{where}: score.{metric} must be a number (a weight)")
    return Scenario(name=name.strip(), description=str(doc.get("description", "")).strip(),
                    objective=str(doc.get("objective", "")).strip(), world=dict(world),
                    game=dict(game), subjects=subjects, ticks=ticks,
                    subjects_dead=bool(end.get("subjects_dead", False)),
                    score={m: float(w) for m, w in score.items()}, source=source)


def _subjects(raw: Any, where: str) -> Subjects:
    if not isinstance(raw, dict) or set(raw) - {"count", "personality", "goods"}:
        raise ScenarioError(f"{where}: 'subjects' takes count, personality and goods")
    count = raw.get("count", 5)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 10_000:
        raise ScenarioError(f"{where}: subjects.count must be a whole number >= 1")
    personality = raw.get("personality")
    if personality is not None and personality not in PERSONALITIES:
        raise ScenarioError(f"{where}: subjects.personality {personality!r} is not one of "
                            f"{', '.join(PERSONALITIES)}")
    goods = raw.get("goods") or {}
    if not isinstance(goods, dict):
        raise ScenarioError(f"{where}: subjects.goods must map items to counts")
    for item, qty in goods.items():
        if item not in ITEMS or isinstance(qty, bool) or not isinstance(qty, int) or qty < 1:
            raise ScenarioError(f"{where}: subjects.goods.{item}: expected an item "
                                f"({', '.join(ITEMS)}) and a count >= 1")
    return Subjects(count=count, personality=personality, goods=dict(goods))


def with_ticks(scenario: Scenario, ticks: int | None) -> Scenario:
    return scenario if ticks is None else dataclasses.replace(scenario, ticks=ticks)
