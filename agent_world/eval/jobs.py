"""One episode as a job for a worker process or a Ray task: plain data in, plain data out
(the episode, or the error and its traceback), so that nothing but picklable values crosses
between processes or machines."""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

from agent_world.config import config_from_dict
from agent_world.eval.episode import run_episode
from agent_world.eval.scenario import Scenario

__all__ = ["Job", "run_job"]

Job = tuple[Scenario, str, int, str, dict[str, Any], str | None]
"""(scenario, brain, seed, output folder, configuration as a dict, brains path)."""


def run_job(job: Job) -> dict[str, Any]:
    scenario, brain, seed, out, base, brains_path = job
    try:
        episode = run_episode(scenario, brain, seed, Path(out),
                              config_from_dict(base, source="eval"), brains_path)
        return {"ok": True, "episode": episode.to_dict()}
    except Exception as exc:  # reported with the episode, never lost with the others
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                "trace": traceback.format_exc()[-2000:]}
