"""What the two Mesa versions share: the fight and trade rules, given a way to list an
agent's neighbours, and the model's staged step. They differ only in how they ask space
(``mesa_space.py``: ``mesa.space.MultiGrid``; ``mesa_cells.py``: ``mesa.discrete_space``)."""

from __future__ import annotations

import random
from typing import Any

import mesa

from bench.workload import ATTACK_CHANCE, CROWD, DAMAGE, MAX_HEALTH, START_WEALTH, Counters

__all__ = ["StagedModel", "WalkerRules"]


class WalkerRules:
    """The rules of a walker that do not touch space; mixed into a Mesa agent class."""

    random: random.Random
    model: StagedModel
    health: int
    wealth: int
    seen: int

    def start(self) -> None:
        self.health = MAX_HEALTH
        self.wealth = START_WEALTH
        self.seen = 0

    def around(self) -> list[Any]:
        """The other agents on this cell and the 8 around it."""
        raise NotImplementedError

    def fight(self) -> None:
        if self.health <= 0 or self.seen < CROWD:
            return
        foes = [a for a in self.around() if a.health > 0]
        if not foes or self.random.random() >= ATTACK_CHANCE:
            return
        victim = self.random.choice(foes)
        victim.health -= DAMAGE
        self.model.counters.attacks += 1
        if victim.health <= 0:
            self.wealth += victim.wealth
            victim.wealth = 0

    def trade(self) -> None:
        if self.wealth <= 0:
            return
        partners = self.around()
        if partners:
            self.random.choice(partners).wealth += 1
            self.wealth -= 1
            self.model.counters.transfers += 1


class StagedModel(mesa.Model):
    """Staged activation through the model's AgentSet: ``do`` for the order-free phases,
    ``shuffle_do`` where order matters, and respawning in between."""

    counters: Counters

    def spawn(self) -> None:
        raise NotImplementedError

    def discard(self, agent: Any) -> None:
        agent.remove()

    def respawn(self) -> None:
        dead = [a for a in self.agents if a.health <= 0]
        for agent in dead:
            self.discard(agent)
            self.spawn()
        self.counters.deaths += len(dead)
        self.counters.wealth_created += len(dead) * START_WEALTH

    def step(self) -> None:
        self.agents.do("move")
        self.agents.do("perceive")
        self.agents.shuffle_do("fight")
        self.respawn()
        self.agents.shuffle_do("trade")

    def population(self) -> int:
        return len(self.agents)

    def total_wealth(self) -> int:
        return sum(a.wealth for a in self.agents)
