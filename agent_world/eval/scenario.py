"""Scenarios: YAML files that say what world an episode runs in, which agents the brain under
test plays, when the episode ends and how it is scored.

    name: market
    description: ...
    objective: grow your wealth by trading
    world: {starting_agents: 24}        # overrides of the world section
    game: {market_fee: 0.0}             # overrides of the game section
    subjects: {count: 6, personality: trader, goods: {berries: 6}}
    end: {ticks: 3000, subjects_dead: true}
    complete: {wealth_gained: 50}       # optional: the task, for completed/ticks_to_complete
    score: {wealth_gained: 1.0}         # weights of per-agent metrics

or, instead of ``subjects``, teams (or roles), each with its own brain: ``subject`` is the
brain under test, any other name a brain that plays alongside it (builtin, llm, registered)::

    teams:
      red: {count: 4, brain: subject, personality: aggressive}
      blue: {count: 4, brain: builtin}
    end: {ticks: 3000, team_eliminated: true, score_at_least: 5000}

A subject's score is the weighted sum of its metrics (``METRICS`` and ``DERIVED``); an
episode's score is the mean over its subjects. A metric that undoing and redoing raises
(``UNSCORABLE``: tiles walked, trades, messages ...) may not have a positive weight, and an
episode counts by the current metrics rules (``game.metrics_version``), whatever the
configuration says, so that no score can be farmed. An episode ends at ``end.ticks``, or sooner
when every subject is dead (``subjects_dead``), a team has no one left (``team_eliminated``)
or the score reaches ``score_at_least`` (the objective met; checked every
``OBJECTIVE_EVERY`` ticks). Built-in scenarios ship in the package
(``agent_world/eval/scenarios``); any other is a path on the command line. Over the web
(``scenario_by_name``) only names are taken: the built-in ones and the files of
``paths.scenarios``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from agent_world.config import PERSONALITIES, Config, ConfigError
from agent_world.core.items import ITEMS
from agent_world.core.metrics import METRICS, UNSCORABLE
from agent_world.core.recipes import parse_recipes
from agent_world.core.teams import TEAM_NAME
from agent_world.eval.course import COURSE_FIGURES

__all__ = ["BUILT_IN", "DERIVED", "NOT_SCORED", "Scenario", "ScenarioError", "built_in_names",
           "load_scenario", "scenario_by_name"]

DERIVED = {
    "ticks_alive": "ticks from its birth to its death or the episode's end",
    "wealth_gained": "gold and goods at the end (0 if dead), less what it started with, "
                     "goods valued at the market prices the episode began with (prices "
                     "that agents move do not count)",
    "team_held": "capture point-ticks its team held by the episode's end (teams only)",
    **COURSE_FIGURES,
}
"""Figures an episode adds to the world's metrics, for scores."""
NOT_SCORED: dict[str, str] = {
    **UNSCORABLE,
    "ticks_to_complete": "a subject that takes longer gets more of it; weigh it negatively, "
                         "or score completed",
    "recipe_efficiency": "a ratio: one good craft and nothing more maximises it; score "
                         "crafted_value",
    "materials_wasted": "it counts materials left unused; weigh it negatively, as a cost, "
                        "if at all",
    "coordination": "it measures how a team moves together, not what that achieves; score "
                    "team_held or won",
}
"""Metrics a score may not weigh positively (``UNSCORABLE`` and the episode's own), with why
and what to score instead."""
KEYS = ("name", "description", "objective", "world", "game", "subjects", "teams", "end",
        "complete", "score")
END_KEYS = ("ticks", "subjects_dead", "team_eliminated", "score_at_least")
SUBJECT = "subject"  # a team's brain that stands for the brain under test
BUILT_IN = "agent_world.eval"
OBJECTIVE_EVERY = 10
METRICS_VERSION = Config().game.metrics_version  # the current counting, farm-proof


class ScenarioError(ConfigError):
    """A scenario that cannot be run; the message names the file, the key and the fix."""


@dataclass(frozen=True, slots=True)
class Subjects:
    """A group of agents: the subjects, or one team (``brain``: ``subject`` or another)."""

    count: int
    personality: str | None = None
    goods: dict[str, int] = field(default_factory=dict)
    brain: str = SUBJECT


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
    teams: dict[str, Subjects] = field(default_factory=dict)
    team_eliminated: bool = False
    score_at_least: float | None = None
    complete: dict[str, float] = field(default_factory=dict)  # a subject's task, as targets

    def groups(self) -> dict[str, Subjects]:
        """The agents an episode spawns, by team ("" for subjects without a team)."""
        return dict(self.teams) if self.teams else {"": self.subjects}

    def other_brains(self) -> list[str]:
        """The brains of teams that play beside the brain under test."""
        return sorted({g.brain for g in self.teams.values() if g.brain != SUBJECT})

    def config(self, base: Config) -> Config:
        """``base`` with the scenario's world and game settings, counting metrics by the
        current rules (a configuration saying otherwise would let scores be farmed)."""
        return base.replace(world=dict(self.world),
                            game={**self.game, "metrics_version": METRICS_VERSION})

    def describe_score(self) -> str:
        return " + ".join(f"{w:g} x {m}" for m, w in self.score.items())

    def to_record(self) -> dict[str, Any]:
        """The whole scenario as plain data: a results file keeps it, so that its episodes
        can be verified without the scenario's file (``from_record``)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Scenario:
        """The scenario ``to_record`` gave; ScenarioError if ``record`` is not one."""
        try:
            fields = dict(record)
            fields["subjects"] = Subjects(**fields["subjects"])
            fields["teams"] = {str(k): Subjects(**v) for k, v in fields["teams"].items()}
            return cls(**fields)
        except (TypeError, KeyError, AttributeError, ValueError) as exc:
            raise ScenarioError(f"not a recorded scenario ({type(exc).__name__}: "
                                f"{exc})") from None


def built_in_names() -> list[str]:
    folder = resources.files(BUILT_IN) / "scenarios"
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir()
                  if p.name.endswith(".yaml"))


SCENARIO_NAME = re.compile(r"[a-z][a-z0-9_-]{0,63}")
"""A scenario's name where only names are taken (the web): never a path."""
MAX_SCENARIO_BYTES = 256 * 1024


def scenario_by_name(name: str, folder: str = "") -> Scenario:
    """A scenario by name only (``POST /api/train``): a built-in one, or ``NAME.yaml`` in
    ``folder`` (``paths.scenarios``; '' for none). Never a path, never a file of the working
    folder; ScenarioError in one line that never quotes what a file holds."""
    if not isinstance(name, str) or not SCENARIO_NAME.fullmatch(name):
        raise ScenarioError(f"'scenario' must be a scenario's name: 1-64 of a-z, 0-9, _ and -, "
                            f"starting with a letter (built in: {', '.join(built_in_names())})")
    if name in built_in_names():
        return _built_in(name)
    extra = _folder_names(folder)
    if name not in extra:
        known = ", ".join([*built_in_names(), *sorted(extra)])
        raise ScenarioError(f"unknown scenario {name!r}; the scenarios are {known}")
    path = extra[name]
    source = f"{name} (paths.scenarios)"
    try:
        raw = path.read_bytes()[:MAX_SCENARIO_BYTES + 1]
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        raise ScenarioError(f"scenario {source}: cannot read it as UTF-8 text") from None
    if len(raw) > MAX_SCENARIO_BYTES:
        raise ScenarioError(f"scenario {source}: larger than {MAX_SCENARIO_BYTES:,} bytes")
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = "" if mark is None else f" at line {mark.line + 1}, column {mark.column + 1}"
        raise ScenarioError(f"scenario {source}: not valid YAML{where}") from None
    try:
        return _parse(doc, source)
    except ScenarioError:
        # The reason may quote the file; the operator reads it from the command line.
        raise ScenarioError(f"scenario {source} is not a valid scenario; 'python main.py "
                            f"eval {path} --seeds 1 --ticks 1' says why") from None


def _folder_names(folder: str) -> dict[str, Path]:
    """The scenario files of ``folder`` by name (regular files named NAME.yaml, in it)."""
    if not folder:
        return {}
    root = Path(folder)
    try:
        entries = list(root.iterdir())
    except OSError:
        return {}
    found = {}
    for entry in entries:
        stem = entry.name.removesuffix(".yaml")
        if (entry.name.endswith(".yaml") and SCENARIO_NAME.fullmatch(stem)
                and entry.is_file() and not entry.is_symlink()):
            found[stem] = entry
    return found


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
        return _built_in(name_or_path)
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(f"scenario {source}: not valid YAML ({exc})") from None
    return _parse(doc, source)


def _built_in(name: str) -> Scenario:
    text = (resources.files(BUILT_IN) / "scenarios" / f"{name}.yaml").read_text(
        encoding="utf-8")
    return _parse(yaml.safe_load(text), f"built-in {name}")


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
        config = Config().replace(world=dict(world), game=dict(game))
        parse_recipes(config.game.recipes)
    except (ConfigError, ValueError) as exc:
        raise ScenarioError(f"{where}: {exc}") from None
    if game.get("metrics_version", METRICS_VERSION) != METRICS_VERSION:
        raise ScenarioError(f"{where}: game.metrics_version {game['metrics_version']!r}: an "
                            f"episode counts metrics by the current rules, version "
                            f"{METRICS_VERSION} (older ones let scores be farmed); leave it out")
    if "subjects" in doc and "teams" in doc:
        raise ScenarioError(f"{where}: give 'subjects' or 'teams', not both (a team whose "
                            f"brain is {SUBJECT!r} holds the subjects)")
    teams = _teams(doc.get("teams"), where) if "teams" in doc else {}
    subjects = _subjects(doc.get("subjects") or {}, where, "subjects")
    end = doc.get("end") or {}
    if not isinstance(end, dict) or set(end) - set(END_KEYS):
        raise ScenarioError(f"{where}: 'end' takes {', '.join(END_KEYS)}")
    ticks = end.get("ticks", 3000)
    if isinstance(ticks, bool) or not isinstance(ticks, int) or not 1 <= ticks <= 10**7:
        raise ScenarioError(f"{where}: end.ticks must be a whole number of ticks >= 1")
    if end.get("team_eliminated") and len(teams) < 2:
        raise ScenarioError(f"{where}: end.team_eliminated needs two or more teams")
    target = end.get("score_at_least")
    if target is not None and (isinstance(target, bool)
                               or not isinstance(target, (int, float))):
        raise ScenarioError(f"{where}: end.score_at_least must be a number (the score that "
                            "meets the objective)")
    score = doc.get("score") or {}
    if not isinstance(score, dict) or not score:
        raise ScenarioError(f"{where}: 'score' must map metrics to weights, e.g. "
                            "{food_gathered: 1.0}")
    _check_score(score, where)
    if "team_held" in score and not teams:
        raise ScenarioError(f"{where}: score.team_held needs teams")
    complete = _complete(doc.get("complete"), where)
    needs = {"completed": (bool(complete), "a 'complete' target"),
             "ticks_to_complete": (bool(complete), "a 'complete' target"),
             "recipe_efficiency": (bool(config.game.recipes), "game.recipes"),
             "materials_wasted": (bool(config.game.recipes), "game.recipes"),
             "coordination": (len(teams) > 1 and config.world.capture_points > 0,
                              "two teams and world.capture_points"),
             "won": (len(teams) > 1, "two teams or more")}
    for metric, (present, what) in needs.items():
        if metric in score and not present:
            raise ScenarioError(f"{where}: score.{metric} needs {what}")
    if teams:
        subjects = next(g for g in teams.values() if g.brain == SUBJECT)
    return Scenario(name=name.strip(), description=str(doc.get("description", "")).strip(),
                    objective=str(doc.get("objective", "")).strip(), world=dict(world),
                    game=dict(game), subjects=subjects, ticks=ticks,
                    subjects_dead=bool(end.get("subjects_dead", False)),
                    score={m: float(w) for m, w in score.items()}, source=source,
                    teams=teams, team_eliminated=bool(end.get("team_eliminated", False)),
                    score_at_least=None if target is None else float(target),
                    complete=complete)


def _complete(raw: Any, where: str) -> dict[str, float]:
    """A subject's task as thresholds of metrics the world counts (``{food_gathered: 10}``):
    it has completed once its figures reach every one."""
    if raw is None:
        return {}
    counted = {**METRICS, **{k: v for k, v in DERIVED.items() if k not in COURSE_FIGURES}}
    if not isinstance(raw, dict) or not raw:
        raise ScenarioError(f"{where}: 'complete' must map metrics to the figures that "
                            "complete the task, e.g. {food_gathered: 10}")
    for metric, target in raw.items():
        if metric not in counted:
            raise ScenarioError(f"{where}: complete: unknown metric {metric!r}; the metrics "
                                f"are {', '.join(counted)}")
        if isinstance(target, bool) or not isinstance(target, (int, float)) or target <= 0:
            raise ScenarioError(f"{where}: complete.{metric} must be a number above 0 (the "
                                "figure that completes the task)")
    return {str(m): float(t) for m, t in raw.items()}


def _check_score(score: dict[Any, Any], where: str) -> None:
    """Every weight is a number of a known metric, and none rewards a farmable one."""
    known = {**METRICS, **DERIVED}
    for metric, weight in score.items():
        if metric not in known:
            raise ScenarioError(f"{where}: score: unknown metric {metric!r}; the metrics are "
                                f"{', '.join(known)}")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            raise ScenarioError(f"{where}: score.{metric} must be a number (a weight)")
        if metric in NOT_SCORED and weight > 0:
            raise ScenarioError(f"{where}: score.{metric} may not have a positive weight: "
                                f"{NOT_SCORED[metric]}")


def _teams(raw: Any, where: str) -> dict[str, Subjects]:
    if not isinstance(raw, dict) or not raw:
        raise ScenarioError(f"{where}: 'teams' must map team names to {{count, brain, "
                            "personality, goods}}")
    teams = {}
    for name, spec in raw.items():
        if not isinstance(name, str) or not TEAM_NAME.fullmatch(name):
            raise ScenarioError(f"{where}: team name {name!r} must be 1-16 of a-z, 0-9 and _, "
                                "starting with a letter")
        teams[name] = _subjects(spec or {}, where, f"teams.{name}", team=True)
    if not any(g.brain == SUBJECT for g in teams.values()):
        raise ScenarioError(f"{where}: no team plays the brain under test; give one team "
                            f"brain: {SUBJECT}")
    return teams


def _subjects(raw: Any, where: str, key: str, *, team: bool = False) -> Subjects:
    keys = {"count", "personality", "goods", *(("brain",) if team else ())}
    if not isinstance(raw, dict) or set(raw) - keys:
        raise ScenarioError(f"{where}: {key!r} takes {', '.join(sorted(keys))}")
    count = raw.get("count", 5)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 10_000:
        raise ScenarioError(f"{where}: {key}.count must be a whole number >= 1")
    personality = raw.get("personality")
    if personality is not None and personality not in PERSONALITIES:
        raise ScenarioError(f"{where}: {key}.personality {personality!r} is not one of "
                            f"{', '.join(PERSONALITIES)}")
    goods = raw.get("goods") or {}
    if not isinstance(goods, dict):
        raise ScenarioError(f"{where}: {key}.goods must map items to counts")
    for item, qty in goods.items():
        if item not in ITEMS or isinstance(qty, bool) or not isinstance(qty, int) or qty < 1:
            raise ScenarioError(f"{where}: {key}.goods.{item}: expected an item "
                                f"({', '.join(ITEMS)}) and a count >= 1")
    brain = raw.get("brain", SUBJECT)
    if not isinstance(brain, str) or not brain.strip():
        raise ScenarioError(f"{where}: {key}.brain must be {SUBJECT!r}, builtin, llm or a "
                            "registered brain's name")
    return Subjects(count=count, personality=personality, goods=dict(goods),
                    brain=brain.strip())


def with_ticks(scenario: Scenario, ticks: int | None) -> Scenario:
    return scenario if ticks is None else dataclasses.replace(scenario, ticks=ticks)
