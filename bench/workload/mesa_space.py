"""The workload on Mesa 3 the classic way: ``mesa.Agent`` subclasses on a
``mesa.space.MultiGrid(torus=True)``, staged activation through the model's AgentSet
(``do`` for order-free phases, ``shuffle_do`` where order matters), as Mesa's overview and
how-to pages show it."""

from __future__ import annotations

from typing import Any

import mesa
from mesa.space import MultiGrid

from bench.workload import (
    ATTACK_CHANCE,
    CROWD,
    DAMAGE,
    MAX_HEALTH,
    PERCEPTION_RADIUS,
    START_WEALTH,
    Counters,
    Workload,
)

__all__ = ["MesaSpaceModel"]


class Walker(mesa.Agent):
    model: MesaSpaceModel

    def __init__(self, model: MesaSpaceModel) -> None:
        super().__init__(model)
        self.health = MAX_HEALTH
        self.wealth = START_WEALTH
        self.seen = 0

    def move(self) -> None:
        grid = self.model.grid
        cells = grid.get_neighborhood(self.pos, moore=True, include_center=False)
        grid.move_agent(self, self.random.choice(cells))

    def perceive(self) -> None:
        others = self.model.grid.get_neighbors(self.pos, moore=True, include_center=True,
                                               radius=PERCEPTION_RADIUS)
        self.seen = len(others) - 1
        self.model.counters.seen_total += self.seen

    def fight(self) -> None:
        if self.health <= 0 or self.seen < CROWD:
            return
        foes = [a for a in self.model.grid.get_neighbors(self.pos, moore=True,
                                                         include_center=True)
                if a is not self and a.health > 0]
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
        partners = [a for a in self.model.grid.get_neighbors(self.pos, moore=True,
                                                             include_center=True)
                    if a is not self]
        if partners:
            self.random.choice(partners).wealth += 1
            self.wealth -= 1
            self.model.counters.transfers += 1


class MesaSpaceModel(mesa.Model):
    def __init__(self, workload: Workload, **kwargs: Any) -> None:
        super().__init__(seed=workload.seed, **kwargs)
        self.side = workload.side
        self.grid = MultiGrid(self.side, self.side, torus=True)
        self.counters = Counters()
        for _ in range(workload.agents):
            self._spawn()
        self.counters.wealth_created = workload.agents * START_WEALTH

    def _spawn(self) -> None:
        pos = (self.random.randrange(self.side), self.random.randrange(self.side))
        self.grid.place_agent(Walker(self), pos)

    def respawn(self) -> None:
        dead = [a for a in self.agents if a.health <= 0]
        for agent in dead:
            self.grid.remove_agent(agent)
            agent.remove()
            self._spawn()
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
