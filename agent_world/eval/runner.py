"""Many episodes: every brain on every seed, in local worker processes, with a progress line
and ETA on a terminal; then each brain's mean and 95% confidence interval over seeds,
written as JSON, CSV and a markdown table.

A failed episode is reported and tried once more; if it fails again the others' results
stand and the failure is listed (and the exit status says so). Episodes never share a
process's state: each worker process runs one episode at a time in a fresh world.
"""

from __future__ import annotations

import concurrent.futures
import csv
import math
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import orjson

from agent_world.config import Config
from agent_world.eval.course import COURSE_FIGURES
from agent_world.eval.episode import Episode
from agent_world.eval.jobs import EpisodeJob, Job, run_job
from agent_world.eval.raypool import RayPool
from agent_world.eval.scenario import Scenario
from agent_world.lifeline import die_with_parent, stop_group

__all__ = ["Evaluation", "LocalPool", "Ran", "Stopper", "Summary", "confidence", "evaluate",
           "plural", "plus_minus", "run_jobs", "summarise", "write_results"]

# Two-sided 95% t values by degrees of freedom (from 31 on the normal's 1.96 is close).
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
CANCEL_POLL_S = 0.5  # how often a running evaluation looks whether it was cancelled
STOP_GRACE_S = 3.0  # how long a stopped worker has after SIGTERM before SIGKILL
KEY_METRICS = ("ticks_alive", "food_gathered", "eaten", "kills", "deaths", "trades_done",
               "wealth_gained", "decisions", "decision_faults", "latency_p95", "tokens",
               "cost")


def confidence(values: Sequence[float]) -> tuple[float, float]:
    """The mean and the half-width of its 95% confidence interval (Student's t; 0 for
    fewer than two values)."""
    n = len(values)
    if not n:
        return 0.0, 0.0
    mean = sum(values) / n
    if n < 2:
        return mean, 0.0
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    t = _T95[n - 2] if n - 2 < len(_T95) else 1.96
    return mean, t * sd / math.sqrt(n)


@dataclass(frozen=True, slots=True)
class Summary:
    brain: str
    episodes: int
    score: tuple[float, float]  # mean, 95% half-width
    metrics: dict[str, tuple[float, float]]


@dataclass
class Evaluation:
    scenario: Scenario
    brains: list[str]
    seeds: list[int]
    episodes: list[Episode] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    cancelled: bool = False


def key_metrics(scenario: Scenario) -> tuple[str, ...]:
    """The metrics a results table shows: the score's, the course's the scenario has (an
    episode's metrics hold only those), then ``KEY_METRICS``."""
    return tuple(dict.fromkeys([*scenario.score, *COURSE_FIGURES, *KEY_METRICS]))


def summarise(result: Evaluation) -> list[Summary]:
    out = []
    shown = key_metrics(result.scenario)
    for brain in result.brains:
        mine = sorted((e for e in result.episodes if e.brain == brain), key=lambda e: e.seed)
        names = [m for m in shown if mine and m in mine[0].metrics]
        out.append(Summary(brain=brain, episodes=len(mine),
                           score=confidence([e.score for e in mine]),
                           metrics={m: confidence([e.metrics[m] for e in mine])
                                    for m in names}))
    return out


class Progress:
    """``[#####-----] 12/40 episodes, 1m20s left`` on a terminal; nothing elsewhere."""

    def __init__(self, total: int, stream: TextIO, noun: str = "episodes") -> None:
        self.total, self.stream, self.noun = total, stream, noun
        self.done = 0
        self.began = time.monotonic()
        self.live = stream.isatty()

    def step(self) -> None:
        self.done += 1
        if not self.live:
            return
        spent = time.monotonic() - self.began
        left = spent / self.done * (self.total - self.done)
        bar = "#" * (20 * self.done // self.total)
        self.stream.write(f"\r[{bar:<20}] {self.done}/{self.total} {self.noun}, "
                          f"{int(left) // 60}m{int(left) % 60:02d}s left ")
        self.stream.flush()

    def end(self) -> None:
        if self.live:
            self.stream.write("\n")
            self.stream.flush()


def _start_worker(parent: int) -> None:
    """In each worker process, first: a process group of its own (stopping the run stops
    the group), and an end with the process that started it (``lifeline``)."""
    os.setpgid(0, 0)
    die_with_parent(parent)


class LocalPool:
    """Episodes in local worker processes (spawned, never forked from a threaded one). Each
    worker leads a process group of its own and dies with this process; ``terminate``
    stops them all (SIGTERM, then SIGKILL)."""

    def __init__(self, workers: int) -> None:
        self.pool = concurrent.futures.ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker, initargs=(os.getpid(),))
        self.terminated = False

    def submit(self, job: Job) -> Any:
        if self.terminated:
            raise concurrent.futures.CancelledError("the run's processes were stopped")
        return self.pool.submit(run_job, job)

    def pids(self) -> list[int]:
        """The worker processes' ids (each one its group's id too, once started)."""
        # ProcessPoolExecutor keeps them in ``_processes`` (pid -> Process), on every
        # Python this package supports; dict() copies it at once, whichever thread adds.
        return list(dict(self.pool._processes or {}))

    def terminate(self, grace_s: float = STOP_GRACE_S) -> None:
        """Stop every worker now, whatever it is doing: SIGTERM to its process group, then
        SIGKILL after ``grace_s``. Safe from another thread."""
        self.terminated = True
        stop_group(self.pids(), grace_s)

    def wait(self, handles: Collection[Any], timeout: float | None = None
             ) -> list[tuple[Any, dict[str, Any]]]:
        done, _rest = concurrent.futures.wait(
            handles, timeout=timeout, return_when=concurrent.futures.FIRST_COMPLETED)
        out = []
        for future in done:
            try:
                out.append((future, future.result()))
            except Exception as exc:  # the worker process itself died
                out.append((future, {"ok": False, "error": f"the worker died "
                                                           f"({type(exc).__name__}: {exc})"}))
        return out

    def cancel(self, handles: Collection[Any]) -> None:
        """Drop the episodes not started yet; those under way run to their end."""
        for future in handles:
            future.cancel()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class Stopper:
    """The local pools of a run, so that another thread can end its processes at once (the
    world that started the run is stopping). A pool attached after ``stop`` is ended as it
    comes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pools: list[LocalPool] = []
        self.stopped = False

    def attach(self, pool: LocalPool) -> None:
        with self._lock:
            self._pools.append(pool)
            stopped = self.stopped
        if stopped:
            pool.terminate()

    def detach(self, pool: LocalPool) -> None:
        with self._lock:
            if pool in self._pools:
                self._pools.remove(pool)

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM every worker's process group, SIGKILL what is left after ``grace_s``."""
        with self._lock:
            self.stopped = True
            pools = list(self._pools)
        for pool in pools:
            pool.terminate(grace_s)


@dataclass
class Ran:
    """What ``run_jobs`` gives back: each job's result (plain data, in the order they
    ended), the jobs that failed twice, and whether the run was cancelled."""

    results: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    cancelled: bool = False


def run_jobs(jobs: Sequence[Job], *, workers: int, ray_address: str | None = None,
             progress: TextIO = sys.stderr, noun: str = "episodes",
             log: Callable[[str], None] = lambda _t: None,
             on_result: Callable[[dict[str, Any]], None] = lambda _r: None,
             cancelled: Callable[[], bool] = lambda: False,
             stopper: Stopper | None = None) -> Ran:
    """Every job (an episode, a fork's branch): ``workers`` at a time in local processes,
    or as Ray tasks on the cluster at ``ray_address`` (``auto``: the one this machine
    belongs to). ``on_result`` hears of each result as its job ends; a job that fails is
    tried once more, then listed. Once ``cancelled()`` says so, jobs not started are dropped
    (``Ran.cancelled``). ``stopper`` can end the local processes from another thread; an
    exception here (Ctrl-C) ends them too, never waiting for their jobs."""
    ran = Ran()
    bar = Progress(len(jobs), progress, noun)
    pool: LocalPool | RayPool = (RayPool(ray_address) if ray_address is not None
                                 else LocalPool(workers))
    if stopper is not None and isinstance(pool, LocalPool):
        stopper.attach(pool)
    try:
        pending = {pool.submit(job): (job, 1) for job in jobs}
        while pending:
            if cancelled() or (stopper is not None and stopper.stopped):
                pool.cancel(list(pending))
                ran.cancelled = True
                break
            for handle, answer in pool.wait(list(pending), timeout=CANCEL_POLL_S):
                job, attempt = pending.pop(handle)
                if answer["ok"]:
                    ran.results.append(answer["result"])
                    on_result(answer["result"])
                    bar.step()
                elif attempt == 1 and not cancelled() and not (stopper and stopper.stopped):
                    log(f"{job.label()} failed ({answer['error']}); trying it once more")
                    retry = job.retried()
                    pending[pool.submit(retry)] = (retry, 2)
                else:
                    log(f"{job.label()} failed again: {answer['error']}")
                    ran.failed.append({**job.identity(),
                                       **{k: v for k, v in answer.items() if k != "ok"}})
                    bar.step()
    except BaseException:
        if isinstance(pool, LocalPool):
            pool.terminate()  # interrupted or broken: its jobs go now, unwaited for
        raise
    finally:
        if stopper is not None and isinstance(pool, LocalPool):
            stopper.detach(pool)
        pool.close()
    bar.end()
    return ran


def evaluate(scenario: Scenario, brains: Sequence[str], seeds: Sequence[int], out: Path, *,
             workers: int, base: Config, brains_path: str | None = None,
             ray_address: str | None = None, progress: TextIO = sys.stderr,
             log: Callable[[str], None] = lambda _t: None,
             on_episode: Callable[[Episode], None] = lambda _e: None,
             cancelled: Callable[[], bool] = lambda: False,
             stopper: Stopper | None = None) -> Evaluation:
    """Every (brain, seed) episode of ``scenario`` (``run_jobs`` says how and where).
    ``on_episode`` hears of each episode as it ends; once ``cancelled()`` says so, episodes
    not started are dropped and the result has those that ended (``result.cancelled``)."""
    began = time.perf_counter()
    out = out.resolve()  # the same path for every process and every node
    jobs = [EpisodeJob(scenario, brain, seed, str(out), base.to_dict(),
                       str(Path(brains_path).resolve()) if brains_path else None)
            for brain in brains for seed in seeds]
    result = Evaluation(scenario=scenario, brains=list(brains), seeds=list(seeds))

    def ended(record: dict[str, Any]) -> None:
        episode = Episode(**record)
        result.episodes.append(episode)
        on_episode(episode)

    ran = run_jobs(jobs, workers=workers, ray_address=ray_address, progress=progress,
                   log=log, on_result=ended, cancelled=cancelled, stopper=stopper)
    result.failed, result.cancelled = ran.failed, ran.cancelled
    result.episodes.sort(key=lambda e: (brains.index(e.brain), e.seed))
    result.seconds = round(time.perf_counter() - began, 1)
    return result


def plural(n: int, noun: str, nouns: str = "") -> str:
    """``1 brain``, ``2 brains`` (``nouns``: the plural, where it is not ``noun`` + s)."""
    return f"{n} {noun if n == 1 else nouns or noun + 's'}"


def plus_minus(pair: tuple[float, float]) -> str:
    mean, half = pair
    return f"{mean:,.2f} ± {half:,.2f}"


def write_results(result: Evaluation, out: Path) -> list[str]:
    """results.json, results.csv and results.md in ``out``; the markdown table's lines."""
    out.mkdir(parents=True, exist_ok=True)
    summaries = summarise(result)
    scenario = result.scenario
    doc = {"scenario": {"name": scenario.name, "source": scenario.source,
                        "score": scenario.score, "ticks": scenario.ticks,
                        "definition": scenario.to_record()},
           "brains": result.brains, "seeds": result.seeds, "seconds": result.seconds,
           "summary": [{"brain": s.brain, "episodes": s.episodes,
                        "score": {"mean": s.score[0], "ci95": s.score[1]},
                        "metrics": {m: {"mean": v[0], "ci95": v[1]}
                                    for m, v in s.metrics.items()}} for s in summaries],
           "episodes": [e.to_dict() for e in result.episodes], "failed": result.failed}
    (out / "results.json").write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    metric_names = sorted({m for e in result.episodes for m in e.metrics})
    with (out / "results.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["scenario", "brain", "seed", "ticks", "score", "subjects", "alive",
                         "seconds", "folder", *metric_names])
        for e in result.episodes:
            writer.writerow([e.scenario, e.brain, e.seed, e.ticks, round(e.score, 4),
                             e.subjects, e.alive, e.seconds, e.folder,
                             *(round(e.metrics.get(m, 0.0), 4) for m in metric_names)])
    shown = [m for m in key_metrics(scenario) if any(m in s.metrics for s in summaries)]
    lines = [f"# {scenario.name}: {plural(len(result.brains), 'brain')} x "
             f"{plural(len(result.seeds), 'seed')}",
             "", f"Score: {scenario.describe_score()} (mean over the subjects of each "
             "episode); mean ± 95% confidence interval over seeds.", "",
             "| brain | episodes | score | " + " | ".join(shown) + " |",
             "|---|---:|---:|" + "---:|" * len(shown)]
    for s in summaries:
        lines.append(f"| {s.brain} | {s.episodes} | {plus_minus(s.score)} | "
                     + " | ".join(plus_minus(s.metrics[m]) if m in s.metrics else "-"
                                  for m in shown) + " |")
    if result.failed:
        lines += ["", f"Failed episodes ({len(result.failed)}): " + "; ".join(
            f"{f['brain']} seed {f['seed']}: {f['error']}" for f in result.failed)]
    (out / "results.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return lines
