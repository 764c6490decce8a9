"""Verifying a published result: every episode of a results file replayed from its save
folder, with no model and no brain code (their decisions are inputs in the log), and every
figure it records checked against what the replay gives (``python main.py verify``).

For each episode, in order: its folder is found (``saves/NAME`` beside the results file,
else where the results file says it was written); the digest of its event log is compared
with the recorded one (a changed byte anywhere in the log is caught here, before anything
runs); the world is replayed from its first snapshot with every logged state hash verified;
its cast is found as the episode found it (``Play.of_cast``, after the tick that spawned
it; its wealth valued and its course followed from the tick that gave it its goods); at
the log's end the final state hash, the ticks, the subjects and those alive, the score,
every metric and every team figure must equal the recorded ones exactly (the same code
computes them from the same ticks). The first difference stops the check.

A fork-eval's results (``"kind": "fork-eval"``) are checked the same way, branch by branch:
each branch's folder begins at the fork tick, where its state must be the one the fork was
planned from; at its end the chosen agents' metrics, each agent's, and the world's figures
(``forks.branch_figures``, counted from the fork tick) must equal the recorded ones.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from agent_world.config import Config
from agent_world.core.world import World
from agent_world.eval.episode import summarise
from agent_world.eval.forkplan import ForkPlan
from agent_world.eval.forkresults import KIND as FORK_KIND
from agent_world.eval.forks import AtFork, branch_figures
from agent_world.eval.scenario import Scenario, ScenarioError
from agent_world.eval.stage import Play, Scoring, cast_of
from agent_world.persistence import DivergenceError, SaveError, SaveFolder
from agent_world.persistence.replay import LogStepper
from agent_world.persistence.snapshots import load_first_snapshot
from agent_world.sandbox import Sandbox
from agent_world.types import TickReport

__all__ = ["BranchReading", "EpisodeReading", "Mismatch", "Reading", "ResultsError", "Verdict",
           "verify_results"]

CAST_SPAWNED, CAST_EQUIPPED = 1, 2  # the ticks after which a stage has its cast, and goods


class ResultsError(Exception):
    """The results file or an episode's folder cannot be checked at all (not a mismatch)."""


@dataclass(frozen=True, slots=True)
class Mismatch:
    """The first figure of an episode that its replay does not give."""

    episode: str
    what: str
    recorded: Any
    replayed: Any

    def line(self) -> str:
        return (f"MISMATCH: {self.episode}: {self.what}: recorded {self.recorded!r}, "
                f"replayed {self.replayed!r}")


@dataclass(frozen=True, slots=True)
class Verdict:
    episodes: int  # checked, up to and including the first mismatch
    mismatch: Mismatch | None
    noun: str = "episode"  # what was checked: episodes, or a fork's branches


class Reading:
    """What a kind of result reads from its replayed world: ``begin`` on the world at its
    first snapshot, ``after`` each tick, then ``figures`` at the log's end, compared with
    the recorded ones by ``differences``."""

    noun = "episode"

    def label(self, record: Mapping[str, Any]) -> str:
        return f"episode {record.get('brain', '?')} seed {record.get('seed', '?')}"

    def begin(self, world: World, record: Mapping[str, Any]) -> Mismatch | None:
        return None

    def after(self, world: World, report: TickReport) -> None:
        return None

    def figures(self, world: World) -> dict[str, Any]:
        raise NotImplementedError

    def differences(self, recorded: Mapping[str, Any], replayed: Mapping[str, Any]
                    ) -> Iterator[tuple[str, Any, Any]]:
        raise NotImplementedError


class EpisodeReading(Reading):
    """An eval's episode: its cast found as the stage found it, scored by its scenario."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.scoring: Scoring | None = None

    def begin(self, world: World, record: Mapping[str, Any]) -> Mismatch | None:
        self.scoring = None
        return None

    def after(self, world: World, report: TickReport) -> None:
        if world.tick == CAST_SPAWNED:
            self.scoring = Scoring(self.scenario, world,
                                   Play.of_cast(world, cast_of(self.scenario)))
        elif world.tick == CAST_EQUIPPED and self.scoring is not None:
            self.scoring.start_course()
        elif self.scoring is not None:
            self.scoring.after_tick(report)

    def figures(self, world: World) -> dict[str, Any]:
        if self.scoring is None:
            raise SaveError("its log ends before the cast was spawned")
        return summarise(self.scoring)

    def differences(self, recorded: Mapping[str, Any], replayed: Mapping[str, Any]
                    ) -> Iterator[tuple[str, Any, Any]]:
        return _differences(recorded, replayed)


class BranchReading(Reading):
    """A fork's branch: counted from the fork tick, where its folder begins."""

    noun = "branch"

    def __init__(self, plan: ForkPlan) -> None:
        self.plan = plan
        self.start: AtFork | None = None

    def label(self, record: Mapping[str, Any]) -> str:
        return f"branch {record.get('brain', '?')} #{record.get('branch', '?')}"

    def begin(self, world: World, record: Mapping[str, Any]) -> Mismatch | None:
        origin = world.state_hash()
        for recorded in (self.plan.state_hash, record.get("origin_hash")):
            if world.tick != self.plan.tick or origin != recorded:
                return Mismatch(self.label(record), f"state at the fork (tick {world.tick})",
                                recorded, origin)
        self.start = AtFork.of(world, self.plan.agents)
        return None

    def figures(self, world: World) -> dict[str, Any]:
        assert self.start is not None
        return branch_figures(world, self.start)

    def differences(self, recorded: Mapping[str, Any], replayed: Mapping[str, Any]
                    ) -> Iterator[tuple[str, Any, Any]]:
        for key in ("ticks", "alive"):
            yield key, recorded.get(key), replayed[key]
        yield from _named("metric", recorded.get("metrics"), replayed["metrics"])
        rec_agents = recorded.get("agents") or {}
        for name in sorted(set(rec_agents) | set(replayed["agents"])):
            yield from _named(f"agent {name} metric", rec_agents.get(name),
                              replayed["agents"].get(name))
        yield from _named("world", recorded.get("world"), replayed["world"])


def _named(what: str, recorded: Mapping[str, Any] | None, replayed: Mapping[str, Any] | None
           ) -> Iterator[tuple[str, Any, Any]]:
    ours, theirs = recorded or {}, replayed or {}
    for name in sorted(set(ours) | set(theirs)):
        yield f"{what} {name}", ours.get(name), theirs.get(name)


def _load(path: Path) -> tuple[Reading, list[dict[str, Any]]]:
    try:
        doc = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise ResultsError(f"{path} does not exist; give the results.json an eval, a "
                           "fork-eval or a training run wrote") from None
    except OSError as exc:
        raise ResultsError(f"{path} cannot be read ({exc.strerror or exc})") from None
    except orjson.JSONDecodeError as exc:
        raise ResultsError(f"{path} is not JSON ({exc}); give a results.json") from None
    if isinstance(doc, dict) and doc.get("kind") == FORK_KIND:
        reading, records = _fork_reading(path, doc)
    else:
        reading, records = _episode_reading(path, doc)
    for i, record in enumerate(records):
        if not isinstance(record, dict) or not all(
                isinstance(record.get(k), str) and record.get(k)
                for k in ("folder", "state_hash", "log_digest")):
            raise ResultsError(f"{path}: {reading.noun} {i + 1} records no folder, state hash "
                               "and log digest (written before results could be verified); "
                               "run it again")
    if not records:
        raise ResultsError(f"{path} holds no {reading.noun}es to verify"
                           if reading.noun == "branch" else
                           f"{path} holds no episodes to verify")
    return reading, records


def _episode_reading(path: Path, doc: Any) -> tuple[Reading, list[Any]]:
    if not isinstance(doc, dict) or not isinstance(doc.get("episodes"), list):
        raise ResultsError(f"{path} is not a results file (no list of episodes)")
    definition = (doc.get("scenario") or {}).get("definition")
    if definition is None:
        raise ResultsError(f"{path} does not record its scenario's definition (written "
                           "before results could be verified); run the evaluation again")
    try:
        scenario = Scenario.from_record(definition)
    except ScenarioError as exc:
        raise ResultsError(f"{path}: its scenario is {exc}") from None
    return EpisodeReading(scenario), doc["episodes"]


def _fork_reading(path: Path, doc: dict[str, Any]) -> tuple[Reading, list[Any]]:
    if not isinstance(doc.get("branches"), list) or not isinstance(doc.get("fork"), dict):
        raise ResultsError(f"{path} is not a fork-eval's results file (no fork and list of "
                           "branches)")
    try:
        plan = ForkPlan.from_record(doc["fork"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ResultsError(f"{path}: its fork record is incomplete ({type(exc).__name__}: "
                           f"{exc}); run the fork-eval again") from None
    return BranchReading(plan), doc["branches"]


def _folder(results: Path, recorded: str, label: str) -> SaveFolder:
    """The episode's save folder: ``saves/NAME`` beside the results file (a run as it was
    written, or as it was copied to someone), else where the results say it was written."""
    candidates = [results.parent / "saves" / Path(recorded).name, Path(recorded)]
    for root in candidates:
        if (root / "meta.json").exists():
            try:
                return SaveFolder.open(root)
            except SaveError as exc:
                raise ResultsError(f"{label}: {exc}") from None
    raise ResultsError(f"{label}: its save folder is missing: not at {candidates[0]} "
                       f"nor at {candidates[1]}; keep the saves/ folder of the run beside "
                       "its results.json")


def _replay(folder: SaveFolder, reading: Reading, record: Mapping[str, Any],
            sandbox: Sandbox) -> tuple[dict[str, Any], str] | Mismatch:
    """The figures ``reading`` gives and the final state hash, from the folder's log (or
    the mismatch ``reading`` found where the log begins)."""
    config = Config().replace(world={"name": folder.root.name},
                              paths={"saves": str(folder.root.parent)}, log={"echo": False})
    world = load_first_snapshot(folder, config).world
    try:
        sandbox.install(world)
        found = reading.begin(world, record)
        if found is not None:
            return found
        stepper = LogStepper(world, folder, verify=True)
        while stepper.more():
            reading.after(world, stepper.step())
        reader = stepper.reader
        damage = reader.problems or reader.torn or reader.stopped_at or stepper.gap
        if damage:
            raise SaveError(f"its event log is damaged ({damage})")
        return reading.figures(world), world.state_hash()
    finally:
        world.close()


def _differences(recorded: Mapping[str, Any], replayed: Mapping[str, Any]
                 ) -> Iterator[tuple[str, Any, Any]]:
    for key in ("ticks", "subjects", "alive", "score"):
        yield key, recorded.get(key), replayed[key]
    rec_metrics = recorded.get("metrics") or {}
    for name in sorted(set(rec_metrics) | set(replayed["metrics"])):
        yield f"metric {name}", rec_metrics.get(name), replayed["metrics"].get(name)
    rec_teams = recorded.get("teams") or {}
    for team in sorted(set(rec_teams) | set(replayed["teams"])):
        ours, theirs = rec_teams.get(team) or {}, replayed["teams"].get(team) or {}
        for name in sorted(set(ours) | set(theirs)):
            yield f"team {team} {name}", ours.get(name), theirs.get(name)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return (isinstance(a, (int, float)) and isinstance(b, (int, float))
                and (a == b or (math.isnan(a) and math.isnan(b))))
    return bool(a == b)


def verify_results(path: Path, *, progress: Callable[[str], None] = lambda _l: None
                   ) -> Verdict:
    """Check every episode (or branch) of the results file at ``path``; ResultsError for
    what cannot be checked at all (a missing file or folder)."""
    reading, records = _load(path)
    with Sandbox(Config()) as sandbox:
        for n, record in enumerate(records, 1):
            label = reading.label(record)
            folder = _folder(path, record["folder"], label)
            mismatch = _check(folder, reading, record, label, sandbox)
            if mismatch is not None:
                return Verdict(n, mismatch, reading.noun)
            progress(f"  ok: {label} ({record.get('ticks')} ticks)")
    return Verdict(len(records), None, reading.noun)


def _check(folder: SaveFolder, reading: Reading, record: Mapping[str, Any], label: str,
           sandbox: Sandbox) -> Mismatch | None:
    try:
        digest = folder.log_digest()
    except (OSError, EOFError, ValueError, zlib.error) as exc:  # a damaged gzip member
        return Mismatch(label, "event log", record["log_digest"],
                        f"unreadable ({type(exc).__name__}: {exc})")
    if digest != record["log_digest"]:
        return Mismatch(label, "event log digest", record["log_digest"], digest)
    try:
        replayed = _replay(folder, reading, record, sandbox)
    except DivergenceError as exc:
        return Mismatch(label, f"state hash at tick {exc.tick}", exc.expected, exc.actual)
    except SaveError as exc:
        return Mismatch(label, "replay", "the whole log", str(exc))
    if isinstance(replayed, Mismatch):
        return replayed
    figures, state_hash = replayed
    if state_hash != record["state_hash"]:
        return Mismatch(label, "final state hash", record["state_hash"], state_hash)
    for what, recorded, value in reading.differences(record, figures):
        if not _same(recorded, value):
            return Mismatch(label, what, recorded, value)
    return None
