"""The workload on Mesa 3 the classic way: ``mesa.Agent`` subclasses on a
``mesa.space.MultiGrid(torus=True)``, staged activation through the model's AgentSet
(``do`` for order-free phases, ``shuffle_do`` where order matters), as Mesa's overview and
how-to pages show it."""

from __future__ import annotations

from typing import Any

import mesa
from mesa.space import MultiGrid

from bench.workload import PERCEPTION_RADIUS, START_WEALTH, Counters, Workload
from bench.workload.mesa_rules import StagedModel, WalkerRules

__all__ = ["MesaSpaceModel"]


class Walker(WalkerRules, mesa.Agent):
    model: MesaSpaceModel

    def __init__(self, model: MesaSpaceModel) -> None:
        super().__init__(model)
        self.start()

    def move(self) -> None:
        grid = self.model.grid
        cells = grid.get_neighborhood(self.pos, moore=True, include_center=False)
        grid.move_agent(self, self.random.choice(cells))

    def perceive(self) -> None:
        others = self.model.grid.get_neighbors(self.pos, moore=True, include_center=True,
                                               radius=PERCEPTION_RADIUS)
        self.seen = len(others) - 1
        self.model.counters.seen_total += self.seen

    def around(self) -> list[Walker]:
        return [a for a in self.model.grid.get_neighbors(self.pos, moore=True,
                                                         include_center=True)
                if a is not self]


class MesaSpaceModel(StagedModel):
    def __init__(self, workload: Workload, **kwargs: Any) -> None:
        super().__init__(seed=workload.seed, **kwargs)
        self.side = workload.side
        self.grid = MultiGrid(self.side, self.side, torus=True)
        self.counters = Counters()
        for _ in range(workload.agents):
            self.spawn()
        self.counters.wealth_created = workload.agents * START_WEALTH

    def spawn(self) -> None:
        pos = (self.random.randrange(self.side), self.random.randrange(self.side))
        self.grid.place_agent(Walker(self), pos)

    def discard(self, agent: Walker) -> None:
        self.grid.remove_agent(agent)
        agent.remove()
