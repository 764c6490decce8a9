"""One episode: a scenario's world with its subjects on one brain, run headless as fast as
the machine allows, into a save folder of its own (replayable, viewable), then scored.

The subjects enter as ``spawn`` inputs (their goods as ``give`` inputs), so the episode's
event log replays it exactly. After each tick the episode waits until every decision asked
for has come back, so a brain's answers land at the same ticks however fast the machine
is: the same seed and a deterministic brain give the same result on any machine. For the
same reason brains have at least ``THINK_WAIT_S`` for each decision (``brains.deadline_ms``;
a policy's sandbox call is stopped at 80% of it): a deadline there only stops a brain that
hangs, never a correct one on a loaded machine.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agent_world.agents.registry import load_brains
from agent_world.app import Session
from agent_world.config import Config
from agent_world.core import components as c
from agent_world.core.world import World
from agent_world.eval.diagnostics import Diagnostics
from agent_world.eval.scenario import OBJECTIVE_EVERY, SUBJECT, Scenario, Subjects
from agent_world.persistence import open_world

__all__ = ["Episode", "run_episode"]

THINK_WAIT_S = 30  # the longest one tick waits for its decisions (s), and brains' deadline
TEAM_METRICS = ("captures", "kills", "deaths", "damage_dealt", "damage_taken",
                "team_messages", "food_gathered", "crafted_value")


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _wealth(world: World, eid: int, prices: dict[str, float]) -> float:
    """Gold and goods carried, the goods at ``prices`` (0 once dead)."""
    if not world.alive(eid):
        return 0.0
    inv = world.store.get(eid, c.Inventory)
    return inv.gold + sum(qty * prices.get(kind, 0.0) for kind, qty in inv.items.items())


def run_episode(scenario: Scenario, brain: str, seed: int, out: Path,
                base: Config | None = None, brains_path: str | None = None) -> Episode:
    """Run one episode into ``out/<scenario>-<brain>-<seed>``."""
    began = time.perf_counter()
    name = f"{scenario.name}-{brain.replace(':', '-')}-{seed}"
    config = scenario.config(base or Config())
    config = config.replace(
        world={"name": name, "seed": seed},
        paths={"saves": str(out / "saves"), "logs": str(out / "logs" / name)},
        log={"echo": False}, web={"enabled": False},
        # The episode waits for every decision, so a deadline is only a backstop for a
        # brain that hangs: a loaded machine must not turn slow answers into faults.
        brains={"deadline_ms": max(config.brains.deadline_ms, THINK_WAIT_S * 1000)})
    needed = {brain, *scenario.other_brains()} - {"builtin", "llm"}
    classes = load_brains(config.brains, path=brains_path, llm=config.llm.enabled) \
        if needed else {}
    if (out / "saves" / name).exists():
        raise FileExistsError(f"{out / 'saves' / name} exists already: an episode starts a "
                              "new world; give another --out or remove it")
    opened = open_world(config, seed_given=True)
    session = Session(config, opened.world, folder=opened.folder, resumed=opened.resumed,
                      brains=classes)
    world = session.world
    diagnostics = Diagnostics(world)
    session.loop.observers.append(diagnostics)
    cast = _cast(scenario, brain)
    for agent, (team, group) in cast.items():
        data: dict[str, Any] = {"kind": "agent", "name": agent,
                                "brain": brain if group.brain == SUBJECT else group.brain}
        if group.personality:
            data["personality"] = group.personality
        if team:
            data["team"] = team
        world.inbox.submit("spawn", data, source="eval")
    try:
        play = asyncio.run(_play(session, scenario, cast, diagnostics))
        ended = world.tick
        scores, means = _scores(world, scenario, play)
        alive = sum(1 for eid in play.subjects if world.alive(eid))
        teams = _teams(world, play) if scenario.teams else {}
    finally:
        session.close()
    return Episode(scenario=scenario.name, brain=brain, seed=seed, ticks=ended,
                   score=sum(scores) / len(scores) if scores else 0.0, metrics=means,
                   subjects=len(play.subjects), alive=alive, folder=str(out / "saves" / name),
                   seconds=round(time.perf_counter() - began, 2), teams=teams,
                   notes=diagnostics.summary())


def _cast(scenario: Scenario, brain: str) -> dict[str, tuple[str, Subjects]]:
    """Every agent an episode spawns, by name: its team ("" for none) and its group."""
    cast = {}
    for team, group in scenario.groups().items():
        stem = team.capitalize() if team else "Subject"
        for i in range(group.count):
            cast[f"{stem}{i + 1}"] = (team, group)
    return cast


@dataclass(slots=True)
class _Play:
    """Who played: the subjects' ids, every cast agent's team, the wealth they started
    with and the market prices it was valued at."""

    subjects: list[int]
    teams: dict[int, str]
    start: dict[int, float]
    # Wealth is valued at the prices the episode began with, at its end too: prices follow
    # open offers and hoards, which agents can move, so the end's prices could be rigged.
    prices: dict[str, float] = field(default_factory=dict)


def _figures(world: World, play: _Play, eid: int) -> dict[str, float]:
    """Every metric of a cast agent at the end, with the derived ones."""
    row = world.metrics.of(eid)
    kept = world.metrics.rows.get(eid, {})
    row["ticks_alive"] = float(kept.get("died_at", world.tick) - kept.get("born", 0))
    row["wealth_gained"] = _wealth(world, eid, play.prices) - play.start.get(eid, 0.0)
    row["team_held"] = float(world.teams.held.get(play.teams.get(eid, ""), 0))
    return row


def _scores(world: World, scenario: Scenario, play: _Play
            ) -> tuple[list[float], dict[str, float]]:
    """The subjects' scores and their mean metrics."""
    figures = [_figures(world, play, eid) for eid in play.subjects]
    scores = [sum(w * row[m] for m, w in scenario.score.items()) for row in figures]
    means = {m: sum(row[m] for row in figures) / len(figures) for m in figures[0]} \
        if figures else {}
    return scores, means


def _teams(world: World, play: _Play) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for eid, team in sorted(play.teams.items()):
        group = out.setdefault(team, {"agents": 0.0, "alive": 0.0,
                                      "held": float(world.teams.held.get(team, 0))})
        group["agents"] += 1
        group["alive"] += world.alive(eid)
        figures = world.metrics.of(eid)
        for metric in TEAM_METRICS:
            group[metric] = group.get(metric, 0.0) + figures[metric]
    return out


async def _play(session: Session, scenario: Scenario,
                cast: dict[str, tuple[str, Subjects]], diagnostics: Diagnostics) -> _Play:
    """Run the episode; who played, and the wealth they had once their goods were given."""
    world = session.world
    await _tick(session)  # the cast is spawned
    ids = {name: world.find_agent(name) for name in cast}
    play = _Play(subjects=[], teams={}, start={})
    for name, eid in ids.items():
        if eid is None:
            continue
        team, group = cast[name]
        if group.brain == SUBJECT:
            play.subjects.append(eid)
        if team:
            play.teams[eid] = team
        for kind, qty in group.goods.items():
            world.inbox.submit("give", {"target": eid, "item": kind, "qty": qty},
                               source="eval")
    diagnostics.subjects = set(play.subjects)
    await _tick(session)
    play.prices = dict(world.prices)
    play.start = {eid: _wealth(world, eid, play.prices) for eid in ids.values()
                  if eid is not None}
    subjects = play.subjects
    while world.tick < scenario.ticks:
        await _tick(session)
        if scenario.subjects_dead and not any(world.alive(eid) for eid in subjects):
            break
        if scenario.team_eliminated and any(
                not any(world.alive(eid) for eid in members)
                for members in _members(play).values()):
            break
        if (scenario.score_at_least is not None and world.tick % OBJECTIVE_EVERY == 0
                and _objective_met(world, scenario, play, scenario.score_at_least)):
            break
    return play


async def _tick(session: Session) -> None:
    """One tick, then a wait until every decision asked in it has been answered (brains
    think on threads), so that each lands at the same tick however fast the machine is."""
    await session.loop.run(max_ticks=1, paced=False)
    waited = time.perf_counter()
    while (any(part.thinking() for part in session.thinking_parts())  # noqa: ASYNC110
           and time.perf_counter() - waited < THINK_WAIT_S):
        await asyncio.sleep(0.0005)


def _members(play: _Play) -> dict[str, list[int]]:
    teams: dict[str, list[int]] = {}
    for eid, team in play.teams.items():
        teams.setdefault(team, []).append(eid)
    return teams


def _objective_met(world: World, scenario: Scenario, play: _Play, target: float) -> bool:
    scores, _means = _scores(world, scenario, play)
    return bool(scores) and sum(scores) / len(scores) >= target
