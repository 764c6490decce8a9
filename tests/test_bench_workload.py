"""The benchmark's shared workload keeps its rules on both engines: constant population,
wealth conserved except through respawns, alike dynamics. Mesa is optional (the bench
extra): its cases are skipped without it. No timings are asserted; ``python -m bench``
measures."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

import pytest

from bench.workload import START_WEALTH, Workload, WorkloadModel
from bench.workload.ecs import Body, EcsModel, Place, Senses, Wallet, perceive_system

HAS_MESA = importlib.util.find_spec("mesa") is not None
needs_mesa = pytest.mark.skipif(not HAS_MESA, reason="mesa is not installed (the bench extra)")


def _ecs(workload: Workload) -> WorkloadModel:
    return EcsModel(workload)


def _mesa_space(workload: Workload) -> WorkloadModel:
    from bench.workload.mesa_space import MesaSpaceModel

    return MesaSpaceModel(workload)


def _mesa_cells(workload: Workload) -> WorkloadModel:
    from bench.workload.mesa_cells import MesaCellsModel

    return MesaCellsModel(workload)


IMPLEMENTATIONS = [
    pytest.param(_ecs, id="agent_world"),
    pytest.param(_mesa_space, id="mesa_space", marks=needs_mesa),
    pytest.param(_mesa_cells, id="mesa_cells", marks=needs_mesa),
]


@pytest.mark.parametrize("make", IMPLEMENTATIONS)
def test_workload_keeps_population_and_wealth(make: Callable[[Workload], WorkloadModel]) -> None:
    workload = Workload(agents=300, density=0.1, seed=42)
    model = make(workload)
    assert model.total_wealth() == 300 * START_WEALTH
    for _ in range(40):
        model.step()
        assert model.population() == 300
        # Wealth moves between agents (trade, loot); only respawns create it.
        created = 300 * START_WEALTH + model.counters.deaths * START_WEALTH
        assert model.counters.wealth_created == created
        assert model.total_wealth() == created
    c = model.counters
    assert c.attacks > 0 and c.deaths > 0 and c.transfers > 0 and c.seen_total > 0


@needs_mesa
def test_both_engines_show_alike_dynamics() -> None:
    """Same rules, different random streams: the rates agree within a loose margin."""
    workload = Workload(agents=500, density=0.1, seed=7)
    rates = []
    for make in (_ecs, _mesa_space, _mesa_cells):
        model = make(workload)
        for _ in range(30):
            model.step()
        c = model.counters
        rates.append((c.attacks, c.transfers, c.seen_total))
    for ours, theirs in zip(rates[0], rates[1], strict=True):
        assert 0.8 < ours / theirs < 1.25
    for ours, theirs in zip(rates[0], rates[2], strict=True):
        assert 0.8 < ours / theirs < 1.25


def test_ecs_workload_is_deterministic() -> None:
    a, b = EcsModel(Workload(agents=200, seed=3)), EcsModel(Workload(agents=200, seed=3))
    for _ in range(20):
        a.step()
        b.step()
    assert a.counters == b.counters
    assert a.store.rows() == b.store.rows()


def test_ecs_neighbourhood_wraps_around_the_torus() -> None:
    model = EcsModel(Workload(agents=1, density=0.01, seed=1))  # a 10x10 torus
    [(eid, (place, *_rest))] = model.store.query(Place, Body, Wallet, Senses)
    model.occupancy[place.y * 10 + place.x] -= 1
    del model.cells[place.y * 10 + place.x]
    place.x, place.y = 0, 9  # a corner: its neighbours wrap across both edges
    model.occupancy[90] += 1
    model.cells[90] = [eid]
    assert model.near(9, 0) == [eid]  # diagonal across both edges
    assert model.near(1, 8) == [eid]
    assert model.near(2, 9) == []
    perceive_system(model)
    assert place.x == 0 and model.store.get(eid, Senses).seen == 0
    # Radius 2 reaches (8, 7) from (0, 9) across both edges: count the agent from there.
    other = model._spawn()
    other_place = model.store.get(other, Place)
    cell = other_place.y * 10 + other_place.x
    model.occupancy[cell] -= 1
    model.cells[cell].remove(other)
    if not model.cells[cell]:
        del model.cells[cell]
    other_place.x, other_place.y = 8, 7
    model.occupancy[78] += 1
    model.cells.setdefault(78, []).append(other)
    perceive_system(model)
    assert model.store.get(eid, Senses).seen == 1
    other_place.x, other_place.y = 7, 7
    model.occupancy[78] -= 1
    model.occupancy[77] += 1
    perceive_system(model)
    assert model.store.get(eid, Senses).seen == 0
