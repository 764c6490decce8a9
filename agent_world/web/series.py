"""Figures over the run, kept in memory for charts: population by personality, wealth
inequality, prices, tick time.

A sample is taken every ``interval`` ticks. When ``max_points`` samples are held, every
other one is dropped and the interval doubles, so a run of any length fits in the same
memory, finely for a short run and coarsely for a day.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from agent_world.config import PERSONALITIES
from agent_world.core.items import GOLD
from agent_world.core.systems.census import gini
from agent_world.core.world import World
from agent_world.types import TickReport

__all__ = ["MetricSeries"]


class MetricSeries:
    """A tick observer sampling the world's figures (main thread only)."""

    def __init__(self, world: World, *, tick_ms: Callable[[], tuple[float, float]],
                 thinking: Callable[[], int] | None = None, interval: int = 50,
                 max_points: int = 1000) -> None:
        if interval < 1 or max_points < 4:
            raise ValueError(f"interval must be >= 1 and max_points >= 4, got {interval}, "
                             f"{max_points}")
        self.world = world
        self.tick_ms = tick_ms
        self.thinking = thinking
        self.interval = interval
        self.max_points = max_points
        self.ticks: list[int] = []
        self.values: dict[str, list[float | None]] = {}

    def rebind(self, world: World) -> None:
        """Follow a replaced world (a served replay's seek): samples after its tick go."""
        self.world = world
        keep = sum(1 for t in self.ticks if t <= world.tick)
        self.ticks = self.ticks[:keep]
        for name in self.values:
            self.values[name] = self.values[name][:keep]

    def names(self) -> list[str]:
        return sorted(self.values)

    def on_tick(self, report: TickReport) -> None:
        if report.tick % self.interval == 0:
            self.sample()

    def sample(self) -> None:
        world = self.world
        figures: dict[str, float] = {}
        by = dict.fromkeys(PERSONALITIES, 0)
        gold: list[float] = []
        for _eid, row in world.agents():
            personality = row.agent.personality
            by[personality] = by.get(personality, 0) + 1
            gold.append(row.inv.gold)
        figures["agents"] = len(gold)
        for personality, n in by.items():
            figures[f"agents.{personality}"] = n
        figures["gold_gini"] = round(gini(gold), 4)
        figures["gold_total"] = sum(gold) + world.ground.goods.get(GOLD, 0)
        for kind, price in world.market.prices.items():
            if kind != GOLD:
                figures[f"price.{kind}"] = round(price, 3)
        p50, p99 = self.tick_ms()
        figures["tick_ms_p50"] = round(p50, 3)
        figures["tick_ms_p99"] = round(p99, 3)
        if self.thinking is not None:
            figures["llm_thinking"] = self.thinking()
        self._append(world.tick, figures)

    def _append(self, tick: int, figures: dict[str, float]) -> None:
        if self.ticks and tick <= self.ticks[-1]:
            return  # a tick sampled already (a resumed world repeats none, but be sure)
        n = len(self.ticks)
        for name in figures:
            if name not in self.values:
                self.values[name] = [None] * n
        for name, column in self.values.items():
            column.append(figures.get(name))
        self.ticks.append(tick)
        if len(self.ticks) >= self.max_points:
            self.ticks = self.ticks[::2]
            for name in self.values:
                self.values[name] = self.values[name][::2]
            self.interval *= 2

    def query(self, names: Iterable[str] | None = None, since: int = 0) -> dict[str, Any]:
        """``{"interval_ticks", "ticks": [...], "series": {name: [...]}}`` from tick
        ``since`` on; KeyError names an unknown series."""
        wanted = self.names() if names is None else list(names)
        for name in wanted:
            if name not in self.values:
                raise KeyError(name)
        start = next((i for i, t in enumerate(self.ticks) if t >= since), len(self.ticks))
        return {"interval_ticks": self.interval, "ticks": self.ticks[start:],
                "series": {name: self.values[name][start:] for name in wanted}}
