"""The training loop: generate -> check -> evaluate -> accept or keep the best.

Each iteration a generator writes a new version from the best so far and its training
bundle. The version is checked in the sandbox (``PolicyChecker``, under the scenario's
world) and evaluated over the same seeds as the best with the evaluation harness
(``eval.runner.evaluate``: one replayable save folder per episode). It is accepted only
when it is better with confidence: the 95% interval of its gain over the best, paired seed
by seed (Student's t over the per-seed differences), lies wholly above the margin
(``margin`` of the best's magnitude, at least ``MIN_GAIN``), with no more decision faults
than the best and none that ran out of its budget. A mean gain whose interval reaches down
to the margin is not accepted and the reason says the evidence is too thin; otherwise the
best stays and the reason goes back to the generator.

Version N is named ``STEM_vN`` and says ``VERSION = N`` (the starting policy is version 1).
Every version is kept in ``OUT/versions/vNNN-STEM_vN/`` (``policy.py``, ``bundle.json``,
``result.json`` with its score, status and parent); the best is ``OUT/best.py``, the lineage
``OUT/lineage.md`` and ``lineage.json``. A run reports what it does through ``on_message``
(``step``, ``episode_summary``, ``critique``, ``done``) and stops between episodes once
``stop`` is set; ``abort`` ends the episodes under way too. The run holds its folder's lock
(``runs.RunFolder``: ``run.json`` says what runs there) while it works.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agent_world.config import Config
from agent_world.eval.episode import Episode
from agent_world.eval.runner import STOP_GRACE_S, Stopper, confidence, evaluate, write_results
from agent_world.eval.scenario import Scenario
from agent_world.policies import PolicyChecker
from agent_world.runs import RunFolder, RunInUse
from agent_world.training.bundle import STEP_FAULTS, make_bundle
from agent_world.training.generators import GeneratorError, GeneratorUnavailable, PolicyGenerator
from agent_world.training.source import stamp

__all__ = ["MIN_GAIN", "THIN", "Gain", "TrainError", "Trainer", "Version", "least_gain",
           "lineage_table", "paired_gain", "refusal_of"]

MIN_GAIN = 0.01
THIN = "the evidence is too thin"  # in the reason of a version kept for want of confidence
Message = dict[str, Any]


class TrainError(Exception):
    """A run that cannot go on (its starting policy does not pass)."""


@dataclass(slots=True)
class Version:
    number: int
    name: str
    parent: str | None
    status: str  # start | accepted | kept (not better) | rejected (check) | failed, and
    # evaluated while it waits to be judged
    summary: str  # what the generator changed
    source: str = ""
    score: float | None = None
    ci95: float | None = None
    faults: int = 0
    budget_faults: int = 0
    steps_max: int = 0
    steps_budget: int = 0
    reason: str = ""
    seconds: float = 0.0
    folder: str = ""
    bundle: dict[str, Any] = field(default_factory=dict)

    @property
    def version(self) -> int:
        """Its ``VERSION``, and the N of its name (``STEM_vN``): the starting policy is 1."""
        return self.number + 1

    def per_seed(self) -> dict[str, float]:
        """Its score on each seed it was evaluated on."""
        scores: dict[str, float] = self.bundle.get("score", {}).get("per_seed", {})
        return scores

    def row(self) -> dict[str, Any]:
        row = {k: v for k, v in asdict(self).items() if k not in ("source", "bundle")}
        return {"version": self.version, **row}


@dataclass(frozen=True, slots=True)
class Gain:
    """A version's gain over the best, seed by seed: the mean difference, the half-width of
    its 95% interval (Student's t; 0 for a single seed) and the seeds compared."""

    mean: float
    half: float
    seeds: int

    @property
    def low(self) -> float:
        return self.mean - self.half

    def describe(self) -> str:
        return (f"gain {self.mean:+,.2f} ± {self.half:,.2f} per seed (95%, paired over "
                f"{self.seeds} seed{'s' if self.seeds != 1 else ''})")


def paired_gain(version: Version, best: Version) -> Gain:
    """How much better ``version`` did than ``best`` on the seeds both were evaluated on:
    the seeds make the same worlds, so each seed's difference is one sample of the gain."""
    mine, theirs = version.per_seed(), best.per_seed()
    diffs = [mine[seed] - theirs[seed] for seed in sorted(mine, key=int) if seed in theirs]
    mean, half = confidence(diffs)
    return Gain(mean=mean, half=half, seeds=len(diffs))


def least_gain(best: Version, margin: float) -> float:
    """The least gain worth a new version: ``margin`` of the best's score (``MIN_GAIN`` at
    the least)."""
    assert best.score is not None
    return max(MIN_GAIN, margin * abs(best.score))


def refusal_of(version: Version, best: Version, margin: float) -> str:
    """Why ``version`` does not replace ``best`` ("" if it does): a fault, no gain, or a
    gain whose 95% interval is not wholly above the margin (the evidence is too thin)."""
    assert version.score is not None and best.score is not None
    if version.budget_faults:
        return (f"{version.budget_faults} decisions ran out of their budget (steps, memory "
                f"or time)")
    if version.faults > best.faults:
        return f"{version.faults} decision faults, the best has {best.faults}"
    gain, need = paired_gain(version, best), least_gain(best, margin)
    if gain.mean <= need:
        return (f"not better: score {version.score:,.2f} does not beat the best's "
                f"{best.score:,.2f} by the margin {need:,.2f}: {gain.describe()}")
    if gain.seeds < 2:
        return (f"not accepted: {THIN}: {gain.describe()}, and one seed gives no interval; "
                f"evaluate over more episodes (--episodes 3 or more)")
    if gain.low <= need:
        return (f"not accepted: {THIN}: {gain.describe()} may be as little as "
                f"{gain.low:+,.2f}, not clear of the margin {need:,.2f}; more episodes "
                f"(--episodes) narrow the interval")
    return ""


def lineage_table(versions: Sequence[Version], best: Version | None) -> list[str]:
    lines = ["| version | name | parent | status | score | faults | steps (max of budget) "
             "| why |", "|---:|---|---|---|---:|---:|---:|---|"]
    for v in versions:
        score = "-" if v.score is None else f"{v.score:,.2f} ± {v.ci95 or 0:,.2f}"
        mark = " (best)" if best is not None and v is best else ""
        steps = f"{v.steps_max:,} of {v.steps_budget:,}" if v.steps_budget else "-"
        why = v.reason.replace("|", "/")[:220]
        lines.append(f"| {v.version} | {v.name}{mark} | {v.parent or '-'} | {v.status} | "
                     f"{score} | {v.faults} | {steps} | {why} |")
    return lines


class Trainer:
    def __init__(self, scenario: Scenario, *, start: str, stem: str, iterations: int,
                 episodes: int, generator: PolicyGenerator, out: Path, base: Config,
                 contract: str, workers: int = 1, margin: float = 0.02, first_seed: int = 1,
                 on_message: Callable[[Message], None] = lambda _m: None,
                 stop: threading.Event | None = None) -> None:
        self.scenario = scenario
        self.start = start
        self.stem = stem
        self.iterations = iterations
        self.seeds = list(range(first_seed, first_seed + episodes))
        self.generator = generator
        self.out = out
        self.base = base
        self.contract = contract
        self.workers = workers
        self.margin = margin
        self.on_message = on_message
        self.stop = stop or threading.Event()
        self.halted = ""  # why the run stopped early on its own (the LLM may not be asked)
        self.stopper = Stopper()  # its episodes' processes, for ``abort``
        self.versions: list[Version] = []
        self.best: Version | None = None
        self.feedback: list[str] = []

    # -- the loop ------------------------------------------------------------------------

    def run(self) -> Version | None:
        """Train; the best version (also ``OUT/best.py``), None when stopped before the
        starting policy was evaluated."""
        try:
            folder = RunFolder.start(self.out, kind="train", scenario=self.scenario.name,
                                     episodes=(self.iterations + 1) * len(self.seeds),
                                     ticks=self.scenario.ticks)
        except RunInUse as exc:
            raise TrainError(str(exc)) from None
        except OSError as exc:
            raise TrainError(f"cannot write the run in {self.out} ({exc.strerror or exc}); "
                             "give an --out (or paths.runs) you can write") from None
        try:
            return self._run()
        finally:
            folder.finish()

    def abort(self, grace_s: float = STOP_GRACE_S) -> None:
        """Stop now, from any thread: no new episode starts, and those under way are ended
        (SIGTERM to their process groups, SIGKILL after ``grace_s``)."""
        self.stop.set()
        self.stopper.stop(grace_s)

    def _run(self) -> Version | None:
        (self.out / "contract.md").write_text(self.contract, encoding="utf-8")
        checker = PolicyChecker(self.scenario.config(self.base))
        try:
            first = self._attempt(checker, 0, self.start, parent=None,
                                  summary="the starting policy")
            if first.status == "evaluated":
                first.status = "start"
                self.best = first
                self._write_result(first)
                (self.out / "best.py").write_text(first.source, encoding="utf-8")
            self._write_lineage()
            if self.best is None and self.stop.is_set():
                self._send("done", best=None, score=None, versions=1, stopped=True,
                           out=str(self.out))
                return None
            if self.best is None:
                raise TrainError(f"the starting policy does not pass: {first.reason}")
            for number in range(1, self.iterations + 1):
                if self.stop.is_set() or self.halted:
                    break
                self._iterate(checker, number)
                self._write_lineage()
        finally:
            checker.close()
            self.generator.close()
        best = self.best
        assert best is not None
        self._send("done", best=best.name, score=best.score, versions=len(self.versions),
                   stopped=self.stop.is_set() or bool(self.halted), out=str(self.out),
                   **({"halted": self.halted} if self.halted else {}))
        return best

    def _iterate(self, checker: PolicyChecker, number: int) -> None:
        best = self.best
        assert best is not None
        self._send("step", iteration=number, stage="generate", generator=self.generator.name,
                   best=best.name)
        began = time.perf_counter()
        try:
            proposal = self.generator.propose(best.source, best.bundle, self.feedback)
        except GeneratorUnavailable as exc:
            self.halted = f"{exc}; the run stops here (the versions so far are kept)"
            self._send("step", iteration=number, stage="halted", reason=self.halted)
            return
        except GeneratorError as exc:
            version = Version(number=number, name="", parent=f"{best.name}@{best.version}",
                              status="failed", summary="", reason=f"generator: {exc}",
                              seconds=round(time.perf_counter() - began, 1))
            version.name = f"{self.stem}_v{version.version}"
            self.versions.append(version)
            self._critique(version)
            return
        version = self._attempt(checker, number, proposal.source,
                                parent=f"{best.name}@{best.version}", summary=proposal.summary)
        if version.status == "evaluated":
            self._judge(version, best)
        self._critique(version)

    def _attempt(self, checker: PolicyChecker, number: int, source: str, *,
                 parent: str | None, summary: str) -> Version:
        """Stamp, check and evaluate one version (``evaluated`` unless that failed)."""
        began = time.perf_counter()
        version = Version(number=number, name="", parent=parent, status="evaluated",
                          summary=summary, source=source)
        # One number everywhere: the folder, the name and the VERSION written in the file.
        name = version.name = f"{self.stem}_v{version.version}"
        folder = self.out / "versions" / f"v{version.version:03d}-{name}"
        folder.mkdir(parents=True, exist_ok=True)
        version.folder = str(folder)
        try:
            version.source = stamp(source, name=name, version=version.version, parent=parent)
        except SyntaxError as exc:
            (folder / "policy.py").write_text(source, encoding="utf-8")
            version.status = "rejected"
            version.reason = f"not Python: {exc.msg} (line {exc.lineno})"
            return self._keep(version, began)
        source = version.source
        (folder / "policy.py").write_text(source, encoding="utf-8")
        self._send("step", iteration=number, stage="check", version=name)
        report = checker.check(source, origin=str(folder / "policy.py"))
        version.steps_budget = report.step_budget
        if not report.accepted:
            version.status = "rejected"
            version.reason = "; ".join(report.problems)[:600]
            return self._keep(version, began)
        self._send("step", iteration=number, stage="evaluate", version=name,
                   episodes=len(self.seeds))
        evaluation = evaluate(
            self.scenario, [f"policy:{name}"], self.seeds, folder / "episodes",
            workers=self.workers, base=self.base.replace(brains={"policies": str(folder)}),
            progress=io.StringIO(), on_episode=lambda e: self._episode(name, e),
            cancelled=self.stop.is_set, stopper=self.stopper)
        if evaluation.episodes:  # beside its episodes, for python main.py verify
            write_results(evaluation, folder / "episodes")
        if not evaluation.episodes:
            version.status = "failed"
            version.reason = ("stopped" if evaluation.cancelled else
                              "every episode failed: " + "; ".join(
                                  f["error"] for f in evaluation.failed)[:400])
            return self._keep(version, began)
        bundle = make_bundle(contract=self.contract, scenario=self._scenario_facts(),
                             check=report, evaluation=evaluation)
        version.bundle = bundle
        version.score = bundle["score"]["mean"]
        version.ci95 = bundle["score"]["ci95"]
        version.faults = sum(bundle["errors"].values())
        version.budget_faults = sum(n for kind, n in bundle["errors"].items()
                                    if kind in STEP_FAULTS)
        version.steps_max = max(bundle["steps"]["check_max"], bundle["steps"]["episodes_max"])
        if evaluation.cancelled:
            version.status = "failed"
            version.reason = (f"stopped after {len(evaluation.episodes)} of "
                              f"{len(self.seeds)} episodes")
        elif evaluation.failed:
            version.status = "failed"
            version.reason = f"{len(evaluation.failed)} episodes failed: " + \
                evaluation.failed[0]["error"][:300]
        return self._keep(version, began)

    def _judge(self, version: Version, best: Version) -> None:
        refusal = refusal_of(version, best, self.margin)
        if refusal:
            version.status = "kept"
            version.reason = refusal
        else:
            gain = paired_gain(version, best)
            version.status = "accepted"
            version.reason = (f"better with confidence: {gain.describe()}, all of it above "
                              f"the margin {least_gain(best, self.margin):,.2f}")
            self.best = version
            self.generator.accepted()
            (self.out / "best.py").write_text(version.source, encoding="utf-8")
        self._write_result(version)

    # -- records and messages ------------------------------------------------------------

    def _keep(self, version: Version, began: float) -> Version:
        version.seconds = round(time.perf_counter() - began, 1)
        self.versions.append(version)
        if version.folder:
            if version.bundle:
                (Path(version.folder) / "bundle.json").write_bytes(
                    orjson.dumps(version.bundle, option=orjson.OPT_INDENT_2))
            self._write_result(version)
        return version

    def _write_result(self, version: Version) -> None:
        if version.folder:
            (Path(version.folder) / "result.json").write_bytes(
                orjson.dumps(version.row(), option=orjson.OPT_INDENT_2))

    def _write_lineage(self) -> None:
        rows = [v.row() for v in self.versions]
        (self.out / "lineage.json").write_bytes(orjson.dumps(
            {"scenario": self.scenario.name, "seeds": self.seeds,
             "generator": self.generator.name, "margin": self.margin,
             "best": self.best.name if self.best else None, "versions": rows},
            option=orjson.OPT_INDENT_2))
        (self.out / "lineage.md").write_text(
            "\n".join([f"# Training on {self.scenario.name}: {len(self.versions)} versions",
                       "", *lineage_table(self.versions, self.best)]) + "\n",
            encoding="utf-8")

    def _critique(self, version: Version) -> None:
        best = self.best
        line = f"v{version.version} {version.name} ({version.summary or 'no change'}): " \
               f"{version.status}: {version.reason}"
        self.feedback.append(line)
        self._send("critique", version=version.name, status=version.status,
                   score=version.score, reason=version.reason, summary=version.summary,
                   best=best.name if best else None, best_score=best.score if best else None)

    def _episode(self, name: str, episode: Episode) -> None:
        self._send("episode_summary", version=name, seed=episode.seed, score=episode.score,
                   ticks=episode.ticks, alive=episode.alive, subjects=episode.subjects,
                   faults=sum(episode.notes.get("faults", {}).values()),
                   seconds=episode.seconds)

    def _scenario_facts(self) -> dict[str, Any]:
        s = self.scenario
        return {"name": s.name, "objective": s.objective, "description": s.description,
                "score": s.describe_score(), "ticks": s.ticks}

    def _send(self, kind: str, **fields: Any) -> None:
        self.on_message({"type": kind, **fields})
