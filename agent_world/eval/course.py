"""The figures an episode learns from its course, not only from its end: when a subject
completed its task, what its crafts used and what materials it let go to waste, how much of
the time its team acted together, and which team won.

A ``Course`` is told of every tick once the cast has its goods (``after_tick``), by the
stage that plays the episode and, the same way, by the replay that verifies it
(``eval.verify``), so both give the same figures from the same ticks. Each figure is kept
only where its scenario has what it measures (a ``complete`` target, recipes, teams), so a
scenario's results table holds no column of zeros that mean "not applicable".

- ``completed`` and ``ticks_to_complete``: whether the subject reached every threshold of
  the scenario's ``complete`` (``{food_gathered: 10}``), and how many ticks after the start
  it did; a subject that never did counts the ticks the episode ran (a lower bound).
- ``recipe_efficiency``: the base value of what its crafts made over the base value of what
  they used (a club of 10 from wood worth 3 each is 1.67); 0 with no craft.
- ``materials_wasted``: the base value of raw materials (recipe inputs no recipe makes) it
  still held at the end, or when it died: what it had to craft with and did not.
- ``coordination``: the share of its living ticks it stood within ``capture_radius`` of a
  capture point together with a living teammate.
- ``won``: 1 if its team won, 0.5 a draw, 0 a loss. A team with someone alive beats a team
  wiped out; between the rest, the most point-ticks held wins.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from agent_world.core import components as c
from agent_world.core import events as ev
from agent_world.core.items import ITEMS
from agent_world.core.world import World
from agent_world.types import TickReport

__all__ = ["COURSE_FIGURES", "Course", "team_results"]

COURSE_FIGURES = {
    "completed": "1 if it reached every threshold of the scenario's `complete` (scenarios "
                 "with one), else 0",
    "ticks_to_complete": "ticks from the start until it completed (the episode's length if "
                         "it never did; scenarios with `complete`)",
    "recipe_efficiency": "base value its crafts made over the base value they used (0 with "
                         "no craft; worlds with recipes)",
    "materials_wasted": "base value of raw recipe materials it held at the end or at its "
                        "death, never crafted with (worlds with recipes)",
    "coordination": "share of its living ticks spent at a capture point with a living "
                    "teammate (teams and capture points)",
    "won": "1 if its team won (someone alive, then the most point-ticks held), 0.5 a draw, "
           "0 a loss (two teams or more)",
}
"""The figures a course adds to an episode's metrics, for results and scores."""


@dataclass(slots=True)
class _Crafts:
    made: float = 0.0
    used: float = 0.0


class Course:
    """Follows one episode's cast from the tick it has its goods (``start``)."""

    def __init__(self, world: World, cast: Mapping[int, str], *,
                 complete: Mapping[str, float], recipes: bool,
                 figures: Mapping[int, Mapping[str, float]] | None = None) -> None:
        """``cast`` maps every cast agent to its team ("" for none); ``complete`` is the
        scenario's target (empty: none); ``recipes`` whether the world crafts."""
        self.world = world
        self.cast = dict(cast)
        self.start = world.tick
        self.complete = dict(complete)
        self.completed_at: dict[int, int] = {}
        self.recipes = recipes
        self.raw = sorted({kind for inputs in world.recipes.values() for kind in inputs}
                          - set(world.recipes))
        self.crafts = {eid: _Crafts() for eid in self.cast}
        self.raw_held = dict.fromkeys(self.cast, 0.0)
        self.teams = sorted({team for team in self.cast.values() if team})
        self.points = sorted(world.ground.capture_points) if len(self.teams) > 1 else []
        self.alive_ticks = dict.fromkeys(self.cast, 0)
        self.together_ticks = dict.fromkeys(self.cast, 0)
        self._check(figures or {})
        self._hold()

    def after_tick(self, report: TickReport,
                   figures: Mapping[int, Mapping[str, float]] | None = None) -> None:
        """What the tick changed; ``figures`` are the cast's metrics now, where a
        ``complete`` target needs them."""
        if self.recipes:
            for event in report.events:
                if event.get("type") == ev.CRAFT and event.get("agent") in self.crafts:
                    crafts = self.crafts[event["agent"]]
                    crafts.made += float(event.get("value", 0.0))
                    crafts.used += sum(ITEMS[kind].value * n
                                       for kind, n in event.get("inputs", {}).items())
        self._check(figures or {})
        self._hold()
        if self.points:
            self._gather()

    def _check(self, figures: Mapping[int, Mapping[str, float]]) -> None:
        tick = self.world.tick
        for eid, row in figures.items():
            if eid not in self.completed_at and all(
                    row.get(metric, 0.0) >= target for metric, target in self.complete.items()):
                self.completed_at[eid] = tick

    def _hold(self) -> None:
        """The raw materials each living cast agent holds now (what the dead held stays)."""
        if not self.raw:
            return
        world = self.world
        for eid in self.cast:
            if world.alive(eid):
                items = world.store.get(eid, c.Inventory).items
                self.raw_held[eid] = float(sum(ITEMS[kind].value * items.get(kind, 0)
                                               for kind in self.raw))

    def _gather(self) -> None:
        """Who stood at a capture point with a teammate this tick."""
        world = self.world
        radius = world.rules.capture_radius
        where: dict[int, c.Position] = {}
        for eid in self.cast:
            if world.alive(eid):
                self.alive_ticks[eid] += 1
                where[eid] = world.store.get(eid, c.Position)
        for point in self.points:
            ppos = world.store.get(point, c.Position)
            near = [eid for eid, pos in where.items()
                    if max(abs(pos.x - ppos.x), abs(pos.y - ppos.y)) <= radius]
            for eid in near:
                team = self.cast[eid]
                if team and any(other != eid and self.cast[other] == team for other in near):
                    self.together_ticks[eid] += 1
                    del where[eid]  # counted once a tick, at whichever point

    def figures(self, eid: int, won: float | None) -> dict[str, float]:
        """The course's figures of cast agent ``eid`` now (``won``: its team's result, where
        there are teams)."""
        out: dict[str, float] = {}
        if self.complete:
            done = self.completed_at.get(eid)
            out["completed"] = float(done is not None)
            out["ticks_to_complete"] = float((self.world.tick if done is None else done)
                                             - self.start)
        if self.recipes:
            crafts = self.crafts.get(eid, _Crafts())
            out["recipe_efficiency"] = crafts.made / crafts.used if crafts.used else 0.0
            out["materials_wasted"] = self.raw_held.get(eid, 0.0)
        if self.points:
            alive = self.alive_ticks.get(eid, 0)
            out["coordination"] = self.together_ticks.get(eid, 0) / alive if alive else 0.0
        if won is not None:
            out["won"] = won
        return out


def team_results(alive: Mapping[str, bool], held: Mapping[str, int],
                 teams: Iterable[str]) -> dict[str, float]:
    """Each team's result: 1 won, 0.5 a draw, 0 lost (someone alive first, then held)."""
    ranks = {team: (alive.get(team, False), held.get(team, 0)) for team in teams}
    if len(ranks) < 2:
        return {}
    best = max(ranks.values())
    winners = [team for team, rank in ranks.items() if rank == best]
    share = 1.0 if len(winners) == 1 else 0.5
    return {team: share if team in winners else 0.0 for team in ranks}
