"""What followed a recorded decision: the deciding agent's figures over a window of ticks
from the tick its decision was applied, and a reward made from them.

The reward is a weighted sum of the figures' changes over the window: the weights of a
scenario's score (``--reward foraging``) or given one by one (``--reward
food_gathered=1,damage_taken=-0.5``). The figures are the world's own metrics (counted as
part of its state, so a replay gives them exactly), with three an episode also scores:
``ticks_alive`` (ticks it lived in the window), ``wealth_gained`` (gold and goods, the goods
at the market prices of the tick the window opened, so the agents cannot move them) and
``team_held`` (its team's capture point-ticks). Figures only a whole episode knows
(``completed``, ``won`` ...) cannot reward one decision, and are refused by name.

A window closes ``window`` ticks after it opened, at the agent's death, or at the end of the
log (``ended``: ``window``, ``death`` or ``log_end``), so an outcome never looks past what
was recorded. Only the open windows are held: memory is bounded by the decisions of one
window, whatever the world's length.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent_world.core.metrics import METRICS
from agent_world.core.teams import team_of
from agent_world.core.world import World
from agent_world.eval.scenario import ScenarioError, load_scenario
from agent_world.eval.stage import wealth

__all__ = ["EPISODE_FIGURES", "Outcomes", "Reward", "RewardError"]

WINDOW_FIGURES = ("ticks_alive", "wealth_gained", "team_held")
"""Figures an episode adds that a window of ticks has too."""
EPISODE_FIGURES = ("completed", "ticks_to_complete", "recipe_efficiency", "materials_wasted",
                   "coordination", "won")
"""Figures only a whole episode gives: no reward of one decision can use them."""


class RewardError(ValueError):
    """A reward that cannot be made: the message names the value and the fix."""


@dataclass(frozen=True, slots=True)
class Reward:
    """Weights of figure changes; ``label`` says where they came from."""

    weights: dict[str, float]
    label: str

    @classmethod
    def parse(cls, text: str) -> Reward:
        """``SCENARIO`` (a built-in name or a YAML file: its score's weights) or
        ``METRIC=WEIGHT[,METRIC=WEIGHT...]``."""
        text = text.strip()
        if "=" not in text:
            try:
                scenario = load_scenario(text)
            except ScenarioError as exc:
                raise RewardError(f"--reward {text!r}: {exc}") from None
            return cls._checked(dict(scenario.score), f"scenario {scenario.name}'s score",
                                text)
        weights: dict[str, float] = {}
        for piece in text.split(","):
            name, _, raw = piece.partition("=")
            try:
                weights[name.strip()] = float(raw)
            except ValueError:
                raise RewardError(f"--reward {text!r}: {piece.strip()!r} is not METRIC=WEIGHT "
                                  "(e.g. food_gathered=1,damage_taken=-0.5)") from None
        return cls._checked(weights, "weights " + ", ".join(f"{m}={w:g}"
                                                             for m, w in weights.items()), text)

    @classmethod
    def _checked(cls, weights: dict[str, float], label: str, text: str) -> Reward:
        known = [*METRICS, *WINDOW_FIGURES]
        for name in weights:
            if name in EPISODE_FIGURES:
                raise RewardError(f"--reward {text!r}: {name} is a figure of a whole episode, "
                                  "not of a window after one decision; reward by "
                                  f"{', '.join(WINDOW_FIGURES)} or the world's metrics")
            if name not in known:
                raise RewardError(f"--reward {text!r}: unknown metric {name!r}; the metrics "
                                  f"are {', '.join(known)}")
        return cls(weights, label)


@dataclass(slots=True)
class _Window:
    key: Any
    agent: int
    team: str
    opened: int
    prices: dict[str, float]
    start: dict[str, float]


class Outcomes:
    """Open windows on a world the replay steps (``open`` at the tick a decision was
    applied, ``after_tick`` after each tick, ``close_all`` at the log's end)."""

    def __init__(self, world: World, reward: Reward, window: int) -> None:
        if not world.metrics.enabled:
            raise RewardError(f"--reward {reward.label}: the world counted no "
                              "agent metrics (game.agent_metrics was off), so no outcome can "
                              "be measured; export it without --reward")
        self.world = world
        self.reward = reward
        self.window = window
        self._open: list[_Window] = []

    def open(self, key: Any, agent: int) -> None:
        """A window for ``agent`` from now (the decision ``key`` was just applied)."""
        world = self.world
        prices = dict(world.market.prices)
        team = team_of(world, agent)
        self._open.append(_Window(key, agent, team, world.tick, prices,
                                  self._figures(agent, team, prices, alive=True)))

    def after_tick(self) -> list[tuple[Any, dict[str, Any]]]:
        """The outcomes whose windows closed with this tick."""
        tick, done, still = self.world.tick, [], []
        for window in self._open:
            if not self.world.alive(window.agent):
                done.append((window.key, self._close(window, "death")))
            elif tick - window.opened >= self.window:
                done.append((window.key, self._close(window, "window")))
            else:
                still.append(window)
        self._open = still
        return done

    def close_all(self) -> list[tuple[Any, dict[str, Any]]]:
        """Every window still open, closed at the end of the log."""
        done = [(w.key, self._close(w, "log_end")) for w in self._open]
        self._open = []
        return done

    def _figures(self, agent: int, team: str, prices: Mapping[str, float], *, alive: bool
                 ) -> dict[str, float]:
        world = self.world
        row = world.metrics.of(agent)
        row["ticks_alive"] = 0.0  # counted at the close, from the window's own ticks
        row["wealth_gained"] = wealth(world, agent, prices) if alive else 0.0
        row["team_held"] = float(world.teams.held.get(team, 0)) if team else 0.0
        return row

    def _close(self, window: _Window, ended: str) -> dict[str, Any]:
        world = self.world
        alive = ended != "death"
        end = self._figures(window.agent, window.team, window.prices, alive=alive)
        died_at = world.metrics.rows.get(window.agent, {}).get("died_at", world.tick)
        end["ticks_alive"] = float((world.tick if alive else died_at) - window.opened)
        deltas = {name: end[name] - window.start[name] for name in self.reward.weights}
        return {"from_tick": window.opened, "to_tick": self.world.tick, "ended": ended,
                "deltas": deltas,
                "reward": sum(w * deltas[m] for m, w in self.reward.weights.items())}
