"""One episode: a scenario's world with its subjects on one brain, run headless as fast as
the machine allows, into a save folder of its own (replayable, viewable), then scored.

The world is played on a ``stage.Stage``: the subjects enter as ``spawn`` inputs (their
goods as ``give`` inputs), so the episode's event log replays it exactly, and after each
tick the episode waits until every decision asked for has come back, so the same seed and
a deterministic brain give the same result on any machine (``stage`` says why brains have
at least ``stage.THINK_WAIT_S`` for each decision).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agent_world.config import Config
from agent_world.eval.scenario import Scenario
from agent_world.eval.stage import Scoring, Stage
from agent_world.persistence import SaveFolder

__all__ = ["Episode", "episode_name", "run_episode", "summarise"]


@dataclass(frozen=True, slots=True)
class Episode:
    """An episode's result: its score (the subjects' mean) and their mean metrics."""

    scenario: str
    brain: str
    seed: int
    ticks: int
    score: float
    metrics: dict[str, float]
    subjects: int
    alive: int
    folder: str
    seconds: float
    # Per team (scenarios with teams): agents, alive, held point-ticks and metric sums.
    teams: dict[str, dict[str, float]] = field(default_factory=dict)
    # What went wrong for the subjects (``eval.diagnostics``): faults, top mistakes, traces.
    notes: dict[str, Any] = field(default_factory=dict)
    # The world's state hash at the end and the digest of its event log: ``python main.py
    # verify`` replays the folder and checks the figures above against both.
    state_hash: str = ""
    log_digest: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def episode_name(scenario: Scenario, brain: str, seed: int) -> str:
    """The save folder's name of an episode: ``SCENARIO-BRAIN-SEED``."""
    return f"{scenario.name}-{brain.replace(':', '-')}-{seed}"


def run_episode(scenario: Scenario, brain: str, seed: int, out: Path,
                base: Config | None = None, brains_path: str | None = None) -> Episode:
    """Run one episode into ``out/<scenario>-<brain>-<seed>``."""
    began = time.perf_counter()
    stage = Stage(scenario, seed, out, name=episode_name(scenario, brain, seed), brain=brain,
                  base=base, brains_path=brains_path)
    try:
        stage.begin()
        stage.run()
        figures = summarise(stage)
        state_hash = stage.world.state_hash()
    finally:
        stage.close()  # the log complete on disk
    return Episode(scenario=scenario.name, brain=brain, seed=seed,
                   seconds=round(time.perf_counter() - began, 2),
                   notes=stage.diagnostics.summary(), folder=str(stage.folder),
                   state_hash=state_hash,
                   log_digest=SaveFolder(stage.folder).log_digest(), **figures)


def summarise(scoring: Scoring) -> dict[str, Any]:
    """An episode's figures now: the fields of ``Episode`` its world gives (its tick,
    score, metrics, subjects, alive and teams)."""
    world, play = scoring.world, scoring.play
    scores, means = scoring.scores()
    return {"ticks": world.tick, "score": sum(scores) / len(scores) if scores else 0.0,
            "metrics": means, "subjects": len(play.subjects),
            "alive": sum(1 for eid in play.subjects if world.alive(eid)),
            "teams": scoring.teams() if scoring.scenario.teams else {}}
