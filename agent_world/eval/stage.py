"""A scenario's world on stage: opened headless into a save folder of its own, its cast
spawned, ticked with a wait for every decision, ended by the scenario's end conditions and
scored by its weights. An episode (``episode.run_episode``) and the RL environment
(``agent_world.rl``) both play scenarios on it, so there is one way to run one.

The cast enters as ``spawn`` inputs (its goods as ``give`` inputs), so the world's event log
replays it exactly. After each tick the stage waits until every decision asked for has come
back, so a brain's answers land at the same ticks however fast the machine is: the same seed
and a deterministic brain give the same result on any machine. For the same reason brains
have at least ``THINK_WAIT_S`` for each decision (``decisions.brains.deadline_ms``; a
policy's sandbox call is stopped at 80% of it): a deadline there only stops a brain that
hangs, never a correct one on a loaded machine.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_world.app import Session
from agent_world.config import Config, llm_profile_of
from agent_world.core import components as c
from agent_world.core.world import World
from agent_world.eval.course import Course, team_results
from agent_world.eval.diagnostics import Diagnostics
from agent_world.eval.scenario import OBJECTIVE_EVERY, SUBJECT, Scenario, Subjects
from agent_world.persistence import open_world
from agent_world.types import TickReport
from agent_world.userbrains.registry import load_brains

__all__ = ["TEAM_METRICS", "THINK_WAIT_S", "Play", "Scoring", "Stage", "cast_of",
           "staged", "tick_settled", "wealth"]

THINK_WAIT_S = 30  # the longest one tick waits for its decisions (s), and brains' deadline
TEAM_METRICS = ("captures", "kills", "deaths", "damage_dealt", "damage_taken",
                "team_messages", "food_gathered", "crafted_value")
WAIT_POLL_S = 0.0005  # how often a tick's wait looks whether the decisions are in


def staged(config: Config, out: Path, name: str) -> Config:
    """``config`` for a world played headless into ``out/saves/<name>`` (its world log in
    ``out/logs/<name>``) with a wait for every decision: an episode's, a fork's branch's."""
    return config.replace(
        world={"name": name},
        paths={"saves": str(out / "saves"), "logs": str(out / "logs" / name)},
        log={"echo": False}, web={"enabled": False},
        # The stage waits for every decision, so a deadline is only a backstop for a
        # brain that hangs: a loaded machine must not turn slow answers into faults.
        decisions={"brains": {
            **config.decisions.brains,
            "deadline_ms": max(config.decisions.of("brains").deadline_ms,
                               THINK_WAIT_S * 1000)}})


def tick_settled(session: Session) -> TickReport:
    """One tick of ``session``'s loop, then a wait until every decision asked in it has
    been answered (at most ``THINK_WAIT_S``): how a stage and a fork's branch tick, so that
    a brain's answers land at the same ticks however fast the machine is."""
    report = session.loop.tick_once()
    waited = time.perf_counter()
    while (any(part.thinking() for part in session.thinking_parts())
           and time.perf_counter() - waited < THINK_WAIT_S):
        time.sleep(WAIT_POLL_S)
        session.send_queued()  # requests past a round go out as the round's answers come
    return report


def cast_of(scenario: Scenario) -> dict[str, tuple[str, Subjects]]:
    """Every agent a scenario spawns, by name: its team ("" for none) and its group."""
    cast = {}
    for team, group in scenario.groups().items():
        stem = team.capitalize() if team else "Subject"
        for i in range(group.count):
            cast[f"{stem}{i + 1}"] = (team, group)
    return cast


def wealth(world: World, eid: int, prices: Mapping[str, float]) -> float:
    """Gold and goods carried, the goods at ``prices`` (0 once dead)."""
    if not world.alive(eid):
        return 0.0
    inv = world.store.get(eid, c.Inventory)
    return inv.gold + sum(qty * prices.get(kind, 0.0) for kind, qty in inv.items.items())


@dataclass(slots=True)
class Play:
    """Who played: the subjects' ids, every cast agent's id (by name) and team, the wealth
    they started with and the market prices it was valued at."""

    subjects: list[int]
    teams: dict[int, str]
    start: dict[int, float]
    ids: dict[str, int] = field(default_factory=dict)
    # Wealth is valued at the prices the episode began with, at its end too: prices follow
    # open offers and hoards, which agents can move, so the end's prices could be rigged.
    prices: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of_cast(cls, world: World, cast: Mapping[str, tuple[str, Subjects]]) -> Play:
        """Who of ``cast`` is in ``world`` (after the tick that spawned them), as what."""
        play = cls(subjects=[], teams={}, start={})
        for name, eid in ((name, world.population.find(name)) for name in cast):
            if eid is None:
                continue
            play.ids[name] = eid
            team, group = cast[name]
            if group.brain == SUBJECT:
                play.subjects.append(eid)
            if team:
                play.teams[eid] = team
        return play

    def value_start(self, world: World) -> None:
        """The wealth the cast starts with, at the prices of this moment (once it has its
        goods)."""
        self.prices = dict(world.market.prices)
        self.start = {eid: wealth(world, eid, self.prices) for eid in self.ids.values()}


class Scoring:
    """A scenario's score and end conditions on a world its cast plays in: what a stage
    reads while it runs, and what a replay of its save folder reads to verify it
    (``eval.verify``)."""

    def __init__(self, scenario: Scenario, world: World, play: Play) -> None:
        self.scenario = scenario
        self.world = world
        self.play = play
        self.course: Course | None = None  # from ``start_course`` on

    def start_course(self) -> None:
        """Follow the episode's course from now (the cast has its goods) to its end."""
        self.play.value_start(self.world)
        cast = {eid: self.play.teams.get(eid, "") for eid in self.play.ids.values()}
        self.course = Course(self.world, cast, complete=self.scenario.complete,
                             recipes=bool(self.world.recipes),
                             figures=self._completion_figures())

    def after_tick(self, report: TickReport) -> None:
        """What the course learns from a tick played (or replayed) after ``start_course``."""
        if self.course is not None:
            self.course.after_tick(report, self._completion_figures())

    def _completion_figures(self) -> dict[int, dict[str, float]]:
        if not self.scenario.complete:
            return {}
        return {eid: self._figures(eid) for eid in self.play.subjects}

    def early_end(self) -> str | None:
        """Why the scenario ends before its ``end.ticks`` now: ``subjects_dead``,
        ``team_eliminated`` or ``objective`` (met); None while it goes on."""
        scenario, world, play = self.scenario, self.world, self.play
        if scenario.subjects_dead and not any(world.alive(eid) for eid in play.subjects):
            return "subjects_dead"
        if scenario.team_eliminated and any(
                not any(world.alive(eid) for eid in members)
                for members in self.members().values()):
            return "team_eliminated"
        if (scenario.score_at_least is not None and world.tick % OBJECTIVE_EVERY == 0
                and self._objective_met(scenario.score_at_least)):
            return "objective"
        return None

    def members(self) -> dict[str, list[int]]:
        teams: dict[str, list[int]] = {}
        for eid, team in self.play.teams.items():
            teams.setdefault(team, []).append(eid)
        return teams

    def _objective_met(self, target: float) -> bool:
        scores, _means = self.scores()
        return bool(scores) and sum(scores) / len(scores) >= target

    # -- scoring ------------------------------------------------------------------------------

    def figures(self, eid: int) -> dict[str, float]:
        """Every metric of a cast agent now, with the derived ones and its course's."""
        row = self._figures(eid)
        if self.course is not None:
            results = self.results()
            row.update(self.course.figures(eid, results.get(self.play.teams.get(eid, ""))))
        return row

    def results(self) -> dict[str, float]:
        """Each team's result now (two teams or more): 1 won, 0.5 a draw, 0 lost."""
        world = self.world
        alive: dict[str, bool] = {}
        for eid, team in self.play.teams.items():
            alive[team] = alive.get(team, False) or world.alive(eid)
        return team_results(alive, world.teams.held, alive)

    def _figures(self, eid: int) -> dict[str, float]:
        world, play = self.world, self.play
        row = world.metrics.of(eid)
        kept = world.metrics.rows.get(eid, {})
        row["ticks_alive"] = float(kept.get("died_at", world.tick) - kept.get("born", 0))
        row["wealth_gained"] = wealth(world, eid, play.prices) - play.start.get(eid, 0.0)
        row["team_held"] = float(world.teams.held.get(play.teams.get(eid, ""), 0))
        return row

    def score_of(self, eid: int) -> float:
        """A cast agent's score now: the scenario's weights of its figures."""
        return self._weigh(self.figures(eid))

    def _weigh(self, row: Mapping[str, float]) -> float:
        return sum(w * row[m] for m, w in self.scenario.score.items())

    def scores(self) -> tuple[list[float], dict[str, float]]:
        """The subjects' scores and their mean metrics."""
        figures = [self.figures(eid) for eid in self.play.subjects]
        scores = [self._weigh(row) for row in figures]
        means = {m: sum(row[m] for row in figures) / len(figures) for m in figures[0]} \
            if figures else {}
        return scores, means

    def teams(self) -> dict[str, dict[str, float]]:
        """Per team: agents, alive, held point-ticks, the sums of ``TEAM_METRICS`` and, from
        the course, whether it won and its members' mean coordination."""
        world = self.world
        results = self.results() if self.course is not None else {}
        out: dict[str, dict[str, float]] = {}
        for eid, team in sorted(self.play.teams.items()):
            group = out.setdefault(team, {"agents": 0.0, "alive": 0.0,
                                          "held": float(world.teams.held.get(team, 0))})
            group["agents"] += 1
            group["alive"] += world.alive(eid)
            figures = world.metrics.of(eid)
            for metric in TEAM_METRICS:
                group[metric] = group.get(metric, 0.0) + figures[metric]
            if self.course is not None and self.course.points:
                group["coordination"] = (group.get("coordination", 0.0)
                                         + self.course.figures(eid, None)["coordination"])
        for team, group in out.items():
            if "coordination" in group:  # the team's mean
                group["coordination"] /= group["agents"]
            if team in results:
                group["won"] = results[team]
        return out


class Stage(Scoring):
    """One scenario's world, from its opening (``__init__``: the folder, the session, the
    cast's spawn inputs) through ``begin`` (the cast is in, with its goods) and ``tick`` to
    ``close``. ``scores``/``score_of`` read the scenario's score at any tick."""

    def __init__(self, scenario: Scenario, seed: int, out: Path, *, name: str, brain: str,
                 brains: Mapping[str, str] | None = None, base: Config | None = None,
                 brains_path: str | None = None,
                 external: frozenset[str] = frozenset()) -> None:
        """Open ``out/saves/<name>`` with the scenario's world. The subjects play ``brain``
        (those named in ``brains`` the brain given there), the other teams their own;
        ``external`` names brains no part of the session answers for (the RL environment
        submits its agents' plans itself), so none is loaded for them."""
        self.seed = seed
        config = staged(scenario.config(base or Config()), out, name).replace(
            world={"name": name, "seed": seed})
        chosen = dict(brains or {})
        needed = {b for b in {brain, *chosen.values(), *scenario.other_brains()}
                  if b != "builtin" and llm_profile_of(b) is None} - external
        classes = load_brains(config.brains, path=brains_path, llm=config.llm.enabled,
                              models=config.llm.models) if needed else {}
        self.folder = out / "saves" / name
        if self.folder.exists():
            raise FileExistsError(f"{self.folder} exists already: an episode starts a new "
                                  "world; give another --out or remove it")
        opened = open_world(config, seed_given=True)
        self.session = Session(config, opened.world, folder=opened.folder,
                               resumed=opened.resumed, brains=classes)
        super().__init__(scenario, self.session.world, Play(subjects=[], teams={}, start={}))
        self.diagnostics = Diagnostics(self.world)
        self.session.loop.observers.append(self.diagnostics)
        self.cast = cast_of(scenario)
        for agent, (team, group) in self.cast.items():
            data: dict[str, Any] = {
                "kind": "agent", "name": agent,
                "brain": chosen.get(agent, brain) if group.brain == SUBJECT else group.brain}
            if group.personality:
                data["personality"] = group.personality
            if team:
                data["team"] = team
            if data["brain"] == "llm" and config.llm.model_for:
                data["model_for"] = config.llm.model_for  # logged: replay reads it there
            self.world.inbox.submit("spawn", data, source="eval")
        if self.session.brains is not None:  # heard before the first decision
            self.session.brains.begin_episode(
                {name: self._episode(name, team, group.brain == SUBJECT)
                 for name, (team, group) in self.cast.items()})

    def begin(self) -> None:
        """Two ticks: the cast is spawned, then given its goods; the wealth it starts with
        is taken at the prices of that moment, and its course followed from there."""
        world = self.world
        self.tick()  # the cast is spawned
        self.play = play = Play.of_cast(world, self.cast)
        for name, eid in play.ids.items():
            for kind, qty in self.cast[name][1].goods.items():
                world.inbox.submit("give", {"target": eid, "item": kind, "qty": qty},
                                   source="eval")
        self.diagnostics.subjects = set(play.subjects)
        self.tick()
        self.start_course()

    def tick(self) -> None:
        """One tick, then a wait until every decision asked in it has been answered (brains
        think on threads), so that each lands at the same tick however fast the machine is.

        The tick is the loop's own (``tick_once``: observers, persistence, the thinkers
        between ticks); a stage has no angel and no console, so nothing holds or pauses
        its loop."""
        self.after_tick(tick_settled(self.session))

    def run(self) -> None:
        """Tick until the scenario ends (``end.ticks``, or sooner: ``early_end``)."""
        while self.world.tick < self.scenario.ticks:
            self.tick()
            if self.early_end() is not None:
                break

    def _episode(self, name: str, team: str, subject: bool) -> dict[str, Any]:
        """What a cast agent's brain hears of the episode (``Brain.on_episode_start``)."""
        scenario = self.scenario
        return {"scenario": scenario.name, "objective": scenario.objective, "seed": self.seed,
                "ticks": scenario.ticks, "name": name, "team": team, "subject": subject}

    def close(self) -> None:
        """The brains' ``on_episode_end`` (for a cast that began), then the final snapshot,
        the brains' workers and the world's lock (``Session.close``)."""
        try:
            brains = self.session.brains
            if brains is not None and self.course is not None:
                world = self.world
                ended = ("ticks" if world.tick >= self.scenario.ticks
                         else self.early_end() or "stopped")
                play = self.play
                brains.end_episode({
                    eid: {**self._episode(name, play.teams.get(eid, ""),
                                          eid in play.subjects),
                          "agent": eid, "ended": ended, "tick": world.tick,
                          "score": self.score_of(eid), "figures": self.figures(eid)}
                    for name, eid in play.ids.items() if world.alive(eid)})
        finally:
            self.session.close()
