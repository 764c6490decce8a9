"""Tier 2 with a mind that lasts: a forager that remembers where it found food, across
restarts, resumes after a crash and forks.

    python main.py --config examples/agents/keeper.yaml      # stop it (Ctrl-C), start it again

``get_state`` says what to keep (JSON data) and ``set_state`` takes it back; the world saves
it beside every snapshot (``minds/<tick>.jsonl.gz``) and gives it back when the world is
resumed or forked. ``/debug AGENT`` shows the reasoning trace: after a restart its first
decision already knows the places it found food before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_world.agents import Brain, Decision, Observation

FOOD = ("apple", "berries", "bread", "meat")
PLACES = 20  # the newest places it keeps


class Keeper(Brain):
    def __init__(self) -> None:
        self.places: list[list[int]] = []  # [x, y] where it found food, oldest first
        self.meals = 0

    def decide(self, obs: Observation, actions: Mapping[str, Any]) -> Decision | list[Decision]:
        me = obs.me
        food = [i for i in obs.items if i.kind in FOOD]
        if food:
            spot = [food[0].x, food[0].y]
            if spot not in self.places:
                self.places = [*self.places, spot][-PLACES:]
            return [Decision("move_to", {"target": food[0].id}),
                    Decision("pickup", {"target": food[0].id})]
        if me.hunger > 50 and any(me.items.get(kind, 0) for kind in FOOD):
            self.meals += 1
            return Decision("eat", reasoning=f"meal {self.meals}")
        if self.places:  # nothing in sight: back to the nearest place it found food before
            x, y = min(self.places, key=lambda p: abs(p[0] - me.x) + abs(p[1] - me.y))
            self.trace(f"remembers {len(self.places)} places with food; going to ({x}, {y})")
            if (x, y) != (me.x, me.y):
                return Decision("move_to", {"x": x, "y": y}, reasoning="food was here")
            self.places.remove([x, y])  # none left here: forget it
        return Decision("wander", {"ticks": 20})

    # What it keeps across a restart: JSON data only (lists, not tuples or sets).
    def get_state(self) -> dict[str, Any]:
        return {"places": self.places, "meals": self.meals}

    def set_state(self, state: Any) -> None:
        self.places = [[int(x), int(y)] for x, y in state["places"]][-PLACES:]
        self.meals = int(state["meals"])
