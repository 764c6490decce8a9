"""The workload on Agent World's engine: an EntityStore, space as flat arrays over the torus
and plain system functions run in a fixed order, all drawing on one seeded RNG (the game
itself is not used).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from agent_world.core.ecs import EntityStore
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

__all__ = ["EcsModel"]

_STEPS = ((-1, -1), (0, -1), (1, -1), (-1, 0), (1, 0), (-1, 1), (0, 1), (1, 1))


@dataclass
class Place:
    x: int
    y: int


@dataclass
class Body:
    health: int


@dataclass
class Wallet:
    wealth: int


@dataclass
class Senses:
    seen: int = 0


class EcsModel:
    """Components in the engine's EntityStore, iterated through its cached queries by plain
    system functions; space as flat arrays over the torus's cells (how many agents stand on
    each, and which), with each cell's wrapped neighbourhood rows and columns precomputed.
    A radius-2 count is 25 array reads, a radius-1 neighbour list 9 list lookups."""

    def __init__(self, workload: Workload) -> None:
        self.side = side = workload.side
        self.rng = random.Random(workload.seed)
        self.store = EntityStore()
        self.occupancy = [0] * (side * side)
        self.cells: dict[int, list[int]] = {}  # occupied cells only: a compact table
        r = PERCEPTION_RADIUS
        self.rows_far = [tuple(((y + d) % side) * side for d in range(-r, r + 1))
                         for y in range(side)]
        self.cols_far = [tuple((x + d) % side for d in range(-r, r + 1)) for x in range(side)]
        self.rows_near = [tuple(((y + d) % side) * side for d in (-1, 0, 1))
                          for y in range(side)]
        self.cols_near = [tuple((x + d) % side for d in (-1, 0, 1)) for x in range(side)]
        self.counters = Counters()
        for _ in range(workload.agents):
            self._spawn()
        self.counters.wealth_created = workload.agents * START_WEALTH

    def _spawn(self) -> int:
        place = Place(self.rng.randrange(self.side), self.rng.randrange(self.side))
        eid = self.store.create(place, Body(MAX_HEALTH), Wallet(START_WEALTH), Senses())
        cell = place.y * self.side + place.x
        self.occupancy[cell] += 1
        self.cells.setdefault(cell, []).append(eid)
        return eid

    def close(self) -> None:
        self.store.close()

    # -- queries -------------------------------------------------------------------------

    def near(self, x: int, y: int) -> list[int]:
        """Ids on (x, y) and the 8 cells around it (the torus wraps). The compact counts are
        read first, so only the (few) occupied cells' lists are touched: at 0.1 agents per
        cell that saves most of the cache misses of a big torus."""
        occ, cells = self.occupancy, self.cells
        c0, c1, c2 = self.cols_near[x]
        found: list[int] = []
        for b in self.rows_near[y]:
            if occ[b + c0]:
                found.extend(cells[b + c0])
            if occ[b + c1]:
                found.extend(cells[b + c1])
            if occ[b + c2]:
                found.extend(cells[b + c2])
        return found

    def population(self) -> int:
        return len(self.store.query(Place, Body, Wallet, Senses))

    def total_wealth(self) -> int:
        return sum(wallet.wealth for _eid, (wallet,) in self.store.query(Wallet))

    # -- the step --------------------------------------------------------------------------

    def step(self) -> None:
        move_system(self)
        perceive_system(self)
        fight_system(self)
        respawn_system(self)
        trade_system(self)


def move_system(m: EcsModel) -> None:
    side = m.side
    random = m.rng.random  # a C call: int(random() * 8) is uniform over the 8 steps
    occupancy, cells = m.occupancy, m.cells
    for eid, (place, _body, _wallet, _senses) in m.store.query(Place, Body, Wallet, Senses):
        old = place.y * side + place.x
        dx, dy = _STEPS[int(random() * 8)]
        place.x = x = (place.x + dx) % side
        place.y = y = (place.y + dy) % side
        new = y * side + x
        occupancy[old] -= 1
        occupancy[new] += 1
        here = cells[old]
        if len(here) == 1:
            del cells[old]
        else:
            here.remove(eid)
        there = cells.get(new)
        if there is None:
            cells[new] = [eid]
        else:
            there.append(eid)


def perceive_system(m: EcsModel) -> None:
    occ = m.occupancy
    rows_far, cols_far = m.rows_far, m.cols_far
    total = 0
    for _eid, (place, _body, _wallet, senses) in m.store.query(Place, Body, Wallet, Senses):
        c0, c1, c2, c3, c4 = cols_far[place.x]
        seen = -1  # not counting itself
        for b in rows_far[place.y]:
            seen += occ[b + c0] + occ[b + c1] + occ[b + c2] + occ[b + c3] + occ[b + c4]
        senses.seen = seen
        total += seen
    m.counters.seen_total += total


def _shuffled(m: EcsModel) -> list[tuple[int, tuple[Place, Body, Wallet, Senses]]]:
    rows = list(m.store.query(Place, Body, Wallet, Senses))
    m.rng.shuffle(rows)
    return rows


def fight_system(m: EcsModel) -> None:
    rng = m.rng
    rows = m.store.query(Place, Body, Wallet, Senses)
    by_id = dict(rows)
    for eid, (place, body, wallet, senses) in _shuffled(m):
        if body.health <= 0 or senses.seen < CROWD:
            continue
        foes = [o for o in m.near(place.x, place.y) if o != eid and by_id[o][1].health > 0]
        if not foes or rng.random() >= ATTACK_CHANCE:
            continue
        _vplace, victim_body, loot, _vsenses = by_id[rng.choice(foes)]
        victim_body.health -= DAMAGE
        m.counters.attacks += 1
        if victim_body.health <= 0:
            wallet.wealth += loot.wealth
            loot.wealth = 0


def respawn_system(m: EcsModel) -> None:
    dead = [(eid, place) for eid, (place, body, _w, _s)
            in m.store.query(Place, Body, Wallet, Senses) if body.health <= 0]
    for eid, place in dead:
        cell = place.y * m.side + place.x
        m.occupancy[cell] -= 1
        here = m.cells[cell]
        if len(here) == 1:
            del m.cells[cell]
        else:
            here.remove(eid)
        m.store.delete(eid)
        m._spawn()
    m.counters.deaths += len(dead)
    m.counters.wealth_created += len(dead) * START_WEALTH


def trade_system(m: EcsModel) -> None:
    rng = m.rng
    by_id = dict(m.store.query(Place, Body, Wallet, Senses))
    for eid, (place, _body, wallet, _senses) in _shuffled(m):
        if wallet.wealth <= 0:
            continue
        partners = [o for o in m.near(place.x, place.y) if o != eid]
        if partners:
            by_id[rng.choice(partners)][2].wealth += 1
            wallet.wealth -= 1
            m.counters.transfers += 1
