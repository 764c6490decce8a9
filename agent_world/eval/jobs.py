"""What a pool runs: one episode (or one branch of a fork) as a job for a worker process or
a Ray task. A job is plain, picklable data, and it answers with plain data (its result as a
dict, or the error and its traceback), so that nothing else crosses between processes or
machines. ``runner.run_jobs`` runs any job of this shape, however it makes its world."""

from __future__ import annotations

import dataclasses
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agent_world.config import config_from_dict
from agent_world.eval.episode import run_episode
from agent_world.eval.scenario import Scenario

__all__ = ["EpisodeJob", "Job", "run_job"]


class Job(Protocol):
    """A unit of work for a pool: who it is (``label``, ``identity``), how to run it once
    more elsewhere (``retried``) and how to run it (``run``: its result as plain data)."""

    def label(self) -> str:
        """``episode BRAIN seed N``: what the run's lines call it."""
        ...

    def identity(self) -> dict[str, Any]:
        """Its keys in the list of failures (``{"brain", "seed"}`` ...)."""
        ...

    def retried(self) -> Job:
        """The same job, writing into ``retry/`` beside the first try's folders."""
        ...

    def run(self) -> dict[str, Any]:
        ...


@dataclass(frozen=True, slots=True)
class EpisodeJob:
    """A scenario's episode for one brain and seed (``episode.run_episode``)."""

    scenario: Scenario
    brain: str
    seed: int
    out: str
    base: dict[str, Any]  # the configuration, as a dict
    brains_path: str | None = None

    def label(self) -> str:
        return f"episode {self.brain} seed {self.seed}"

    def identity(self) -> dict[str, Any]:
        return {"brain": self.brain, "seed": self.seed}

    def retried(self) -> EpisodeJob:
        return dataclasses.replace(self, out=str(Path(self.out) / "retry"))

    def run(self) -> dict[str, Any]:
        return run_episode(self.scenario, self.brain, self.seed, Path(self.out),
                           config_from_dict(self.base, source="eval"),
                           self.brains_path).to_dict()


def run_job(job: Job) -> dict[str, Any]:
    try:
        return {"ok": True, "result": job.run()}
    except Exception as exc:  # reported with the job, never lost with the others
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                "trace": traceback.format_exc()[-2000:]}
