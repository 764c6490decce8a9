"""The workload on Mesa 3's newer cell space: ``CellAgent``s on an
``OrthogonalMooreGrid(torus=True)`` (as Mesa 3's own examples are written), staged
activation through the model's AgentSet. Measured beside the classic ``mesa.space`` version
so the comparison is with the faster way to write it in Mesa."""

from __future__ import annotations

from typing import Any

import mesa
from mesa.discrete_space import CellAgent, OrthogonalMooreGrid

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

__all__ = ["MesaCellsModel"]


class CellWalker(CellAgent):
    model: MesaCellsModel

    def __init__(self, model: MesaCellsModel, cell: Any) -> None:
        super().__init__(model)
        self.cell = cell
        self.health = MAX_HEALTH
        self.wealth = START_WEALTH
        self.seen = 0

    def move(self) -> None:
        self.cell = self.cell.neighborhood.select_random_cell()

    def perceive(self) -> None:
        area = self.cell.get_neighborhood(radius=PERCEPTION_RADIUS, include_center=True)
        self.seen = sum(1 for _ in area.agents) - 1
        self.model.counters.seen_total += self.seen

    def _around(self) -> list[CellWalker]:
        area = self.cell.get_neighborhood(radius=1, include_center=True)
        return [a for a in area.agents if a is not self]

    def fight(self) -> None:
        if self.health <= 0 or self.seen < CROWD:
            return
        foes = [a for a in self._around() if a.health > 0]
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
        partners = self._around()
        if partners:
            self.random.choice(partners).wealth += 1
            self.wealth -= 1
            self.model.counters.transfers += 1


class MesaCellsModel(mesa.Model):
    def __init__(self, workload: Workload, **kwargs: Any) -> None:
        super().__init__(seed=workload.seed, **kwargs)
        self.side = workload.side
        self.grid = OrthogonalMooreGrid((self.side, self.side), torus=True,
                                        random=self.random)
        self.counters = Counters()
        for _ in range(workload.agents):
            self._spawn()
        self.counters.wealth_created = workload.agents * START_WEALTH

    def _spawn(self) -> None:
        CellWalker(self, self.grid.all_cells.select_random_cell())

    def respawn(self) -> None:
        dead = [a for a in self.agents if a.health <= 0]
        for agent in dead:
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
