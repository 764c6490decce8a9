"""The workload on Mesa 3's newer cell space: ``CellAgent``s on an
``OrthogonalMooreGrid(torus=True)`` (as Mesa 3's own examples are written), staged
activation through the model's AgentSet. Measured beside the classic ``mesa.space`` version
so the comparison is with the faster way to write it in Mesa."""

from __future__ import annotations

from typing import Any

from mesa.discrete_space import CellAgent, OrthogonalMooreGrid

from bench.workload import PERCEPTION_RADIUS, START_WEALTH, Counters, Workload
from bench.workload.mesa_rules import StagedModel, WalkerRules

__all__ = ["MesaCellsModel"]


class CellWalker(WalkerRules, CellAgent):
    model: MesaCellsModel

    def __init__(self, model: MesaCellsModel, cell: Any) -> None:
        super().__init__(model)
        self.cell = cell
        self.start()

    def move(self) -> None:
        self.cell = self.cell.neighborhood.select_random_cell()

    def perceive(self) -> None:
        area = self.cell.get_neighborhood(radius=PERCEPTION_RADIUS, include_center=True)
        self.seen = sum(1 for _ in area.agents) - 1
        self.model.counters.seen_total += self.seen

    def around(self) -> list[CellWalker]:
        area = self.cell.get_neighborhood(radius=1, include_center=True)
        return [a for a in area.agents if a is not self]


class MesaCellsModel(StagedModel):
    def __init__(self, workload: Workload, **kwargs: Any) -> None:
        super().__init__(seed=workload.seed, **kwargs)
        self.side = workload.side
        self.grid = OrthogonalMooreGrid((self.side, self.side), torus=True,
                                        random=self.random)
        self.counters = Counters()
        for _ in range(workload.agents):
            self.spawn()
        self.counters.wealth_created = workload.agents * START_WEALTH

    def spawn(self) -> None:
        CellWalker(self, self.grid.all_cells.select_random_cell())
