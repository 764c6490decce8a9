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
from agent_world.eval.episode import summarise
from agent_world.eval.scenario import Scenario, ScenarioError
from agent_world.eval.stage import Play, Scoring, cast_of
from agent_world.persistence import DivergenceError, SaveError, SaveFolder
from agent_world.persistence.replay import LogStepper
from agent_world.persistence.snapshots import load_first_snapshot
from agent_world.sandbox import Sandbox

__all__ = ["Mismatch", "ResultsError", "Verdict", "verify_results"]

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
        return (f"MISMATCH: episode {self.episode}: {self.what}: recorded {self.recorded!r}, "
                f"replayed {self.replayed!r}")


@dataclass(frozen=True, slots=True)
class Verdict:
    episodes: int  # checked, up to and including the first mismatch
    mismatch: Mismatch | None


def _load(path: Path) -> tuple[Scenario, list[dict[str, Any]]]:
    try:
        doc = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise ResultsError(f"{path} does not exist; give the results.json an eval or a "
                           "training run wrote") from None
    except OSError as exc:
        raise ResultsError(f"{path} cannot be read ({exc.strerror or exc})") from None
    except orjson.JSONDecodeError as exc:
        raise ResultsError(f"{path} is not JSON ({exc}); give a results.json") from None
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
    episodes = doc["episodes"]
    for i, episode in enumerate(episodes):
        if not isinstance(episode, dict) or not all(
                isinstance(episode.get(k), str) and episode.get(k)
                for k in ("folder", "state_hash", "log_digest")):
            raise ResultsError(f"{path}: episode {i + 1} records no folder, state hash and "
                               "log digest (written before results could be verified); run "
                               "the evaluation again")
    if not episodes:
        raise ResultsError(f"{path} holds no episodes to verify")
    return scenario, episodes


def _folder(results: Path, recorded: str, label: str) -> SaveFolder:
    """The episode's save folder: ``saves/NAME`` beside the results file (a run as it was
    written, or as it was copied to someone), else where the results say it was written."""
    candidates = [results.parent / "saves" / Path(recorded).name, Path(recorded)]
    for root in candidates:
        if (root / "meta.json").exists():
            try:
                return SaveFolder.open(root)
            except SaveError as exc:
                raise ResultsError(f"episode {label}: {exc}") from None
    raise ResultsError(f"episode {label}: its save folder is missing: not at {candidates[0]} "
                       f"nor at {candidates[1]}; keep the saves/ folder of the run beside "
                       "its results.json")


def _label(episode: Mapping[str, Any]) -> str:
    return f"{episode.get('brain', '?')} seed {episode.get('seed', '?')}"


def _replay(folder: SaveFolder, scenario: Scenario, sandbox: Sandbox
            ) -> tuple[dict[str, Any], str]:
    """The episode's figures (``summarise``) and final state hash, from its log."""
    config = Config().replace(world={"name": folder.root.name},
                              paths={"saves": str(folder.root.parent)}, log={"echo": False})
    world = load_first_snapshot(folder, config).world
    try:
        sandbox.install(world)
        stepper = LogStepper(world, folder, verify=True)
        scoring: Scoring | None = None
        while stepper.more():
            report = stepper.step()
            if world.tick == CAST_SPAWNED:
                scoring = Scoring(scenario, world, Play.of_cast(world, cast_of(scenario)))
            elif world.tick == CAST_EQUIPPED and scoring is not None:
                scoring.start_course()
            elif scoring is not None:
                scoring.after_tick(report)
        reader = stepper.reader
        damage = reader.problems or reader.torn or reader.stopped_at or stepper.gap
        if damage:
            raise SaveError(f"its event log is damaged ({damage})")
        if scoring is None:
            raise SaveError("its log ends before the cast was spawned")
        return summarise(scoring), world.state_hash()
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
    """Check every episode of the results file at ``path``; ResultsError for what cannot
    be checked at all (a missing file or folder)."""
    scenario, episodes = _load(path)
    with Sandbox(Config()) as sandbox:
        for n, episode in enumerate(episodes, 1):
            label = _label(episode)
            folder = _folder(path, episode["folder"], label)
            mismatch = _check(folder, scenario, episode, label, sandbox)
            if mismatch is not None:
                return Verdict(n, mismatch)
            progress(f"  ok: episode {label} ({episode.get('ticks')} ticks)")
    return Verdict(len(episodes), None)


def _check(folder: SaveFolder, scenario: Scenario, episode: Mapping[str, Any], label: str,
           sandbox: Sandbox) -> Mismatch | None:
    try:
        digest = folder.log_digest()
    except (OSError, EOFError, ValueError, zlib.error) as exc:  # a damaged gzip member
        return Mismatch(label, "event log", episode["log_digest"],
                        f"unreadable ({type(exc).__name__}: {exc})")
    if digest != episode["log_digest"]:
        return Mismatch(label, "event log digest", episode["log_digest"], digest)
    try:
        figures, state_hash = _replay(folder, scenario, sandbox)
    except DivergenceError as exc:
        return Mismatch(label, f"state hash at tick {exc.tick}", exc.expected, exc.actual)
    except SaveError as exc:
        return Mismatch(label, "replay", "the whole log", str(exc))
    if state_hash != episode["state_hash"]:
        return Mismatch(label, "final state hash", episode["state_hash"], state_hash)
    for what, recorded, replayed in _differences(episode, figures):
        if not _same(recorded, replayed):
            return Mismatch(label, what, recorded, replayed)
    return None
