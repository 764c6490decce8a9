"""One episode: a scenario's world with its subjects on one brain, run headless as fast as
the machine allows, into a save folder of its own (replayable, viewable), then scored.

The subjects enter as ``spawn`` inputs (their goods as ``give`` inputs), so the episode's
event log replays it exactly. After each tick the episode waits until every decision asked
for has come back, so a brain's answers land at the same ticks however fast the machine
is: the same seed and a deterministic brain give the same result on any machine.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agent_world.agents.registry import load_brains
from agent_world.app import Session
from agent_world.config import Config
from agent_world.core import components as c
from agent_world.core.world import World
from agent_world.eval.scenario import Scenario
from agent_world.persistence import open_world

__all__ = ["Episode", "run_episode"]

THINK_WAIT_S = 30.0  # the longest one tick waits for its decisions


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _wealth(world: World, eid: int) -> float:
    if not world.alive(eid):
        return 0.0
    inv = world.store.get(eid, c.Inventory)
    return inv.gold + sum(qty * world.prices.get(kind, 0.0) for kind, qty in inv.items.items())


def run_episode(scenario: Scenario, brain: str, seed: int, out: Path,
                base: Config | None = None, brains_path: str | None = None) -> Episode:
    """Run one episode into ``out/<scenario>-<brain>-<seed>``."""
    began = time.perf_counter()
    name = f"{scenario.name}-{brain}-{seed}"
    config = scenario.config(base or Config()).replace(
        world={"name": name, "seed": seed},
        paths={"saves": str(out / "saves"), "logs": str(out / "logs" / name)},
        log={"echo": False}, web={"enabled": False})
    classes = load_brains(config.brains, path=brains_path, llm=config.llm.enabled) \
        if brain not in ("builtin", "llm") else {}
    if (out / "saves" / name).exists():
        raise FileExistsError(f"{out / 'saves' / name} exists already: an episode starts a "
                              "new world; give another --out or remove it")
    opened = open_world(config, seed_given=True)
    session = Session(config, opened.world, folder=opened.folder, resumed=opened.resumed,
                      brains=classes)
    world = session.world
    names = [f"Subject{i + 1}" for i in range(scenario.subjects.count)]
    for subject in names:
        data: dict[str, Any] = {"kind": "agent", "name": subject, "brain": brain}
        if scenario.subjects.personality:
            data["personality"] = scenario.subjects.personality
        world.inbox.submit("spawn", data, source="eval")
    try:
        subjects, start = asyncio.run(_play(session, scenario, names))
        ended = world.tick
        figures = [world.metrics.of(eid) for eid in subjects]
        for eid, row in zip(subjects, figures, strict=True):
            kept = world.metrics.rows.get(eid, {})
            row["ticks_alive"] = float(kept.get("died_at", ended) - kept.get("born", 0))
            row["wealth_gained"] = _wealth(world, eid) - start.get(eid, 0.0)
        scores = [sum(w * row[m] for m, w in scenario.score.items()) for row in figures]
        means = {m: sum(row[m] for row in figures) / len(figures) for m in figures[0]} \
            if figures else {}
        alive = sum(1 for eid in subjects if world.alive(eid))
    finally:
        session.close()
    return Episode(scenario=scenario.name, brain=brain, seed=seed, ticks=ended,
                   score=sum(scores) / len(scores) if scores else 0.0, metrics=means,
                   subjects=len(subjects), alive=alive, folder=str(out / "saves" / name),
                   seconds=round(time.perf_counter() - began, 2))


async def _play(session: Session, scenario: Scenario, names: list[str]
                ) -> tuple[list[int], dict[int, float]]:
    """Run the episode; the subjects' ids and their wealth once their goods were given."""
    world = session.world
    loop = session.loop
    await loop.run(max_ticks=1, paced=False)  # the subjects are spawned
    subjects = [eid for eid in (world.find_agent(n) for n in names) if eid is not None]
    for eid in subjects:
        for kind, qty in scenario.subjects.goods.items():
            world.inbox.submit("give", {"target": eid, "item": kind, "qty": qty},
                               source="eval")
    await loop.run(max_ticks=1, paced=False)
    start = {eid: _wealth(world, eid) for eid in subjects}
    while world.tick < scenario.ticks:
        await loop.run(max_ticks=1, paced=False)
        waited = time.perf_counter()
        # Brains think on threads: wait until what was asked has been answered.
        while (any(part.thinking() for part in session.thinking_parts())  # noqa: ASYNC110
               and time.perf_counter() - waited < THINK_WAIT_S):
            await asyncio.sleep(0.0005)
        if scenario.subjects_dead and not any(world.alive(eid) for eid in subjects):
            break
    return subjects, start
