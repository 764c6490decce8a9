"""The workload on Agent World's engine: an EntityStore, a SpatialGrid and plain system
functions run in a fixed order, all drawing on one seeded RNG (the game itself is not used).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from agent_world.core.ecs import EntityStore
from agent_world.core.spatial import SpatialGrid
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
GRID_CELL = 4  # bucket size of the spatial index (a radius-2 query visits at most 2x2)


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
    def __init__(self, workload: Workload) -> None:
        self.side = workload.side
        self.rng = random.Random(workload.seed)
        self.store = EntityStore()
        self.grid = SpatialGrid(self.side, self.side, cell=GRID_CELL)
        self.counters = Counters()
        for _ in range(workload.agents):
            self._spawn()
        self.counters.wealth_created = workload.agents * START_WEALTH

    def _spawn(self) -> int:
        place = Place(self.rng.randrange(self.side), self.rng.randrange(self.side))
        eid = self.store.create(place, Body(MAX_HEALTH), Wallet(START_WEALTH), Senses())
        self.grid.insert(eid, place)
        return eid

    def close(self) -> None:
        self.store.close()

    # -- queries -------------------------------------------------------------------------

    def near(self, x: int, y: int, radius: int) -> list[int]:
        """Ids within ``radius`` (Chebyshev) of (x, y) on the torus, ascending."""
        if radius > 2:
            raise ValueError(f"radius must be <= 2 (a square as a circle), got {radius}")
        side = self.side
        grid = self.grid
        r2 = 2 * radius * radius  # for r <= 2, d2 <= 2r^2 is exactly the (2r+1)^2 square
        xs = (x, x + side) if x < radius else (x, x - side) if x >= side - radius else (x,)
        ys = (y, y + side) if y < radius else (y, y - side) if y >= side - radius else (y,)
        found: list[tuple[int, int]] = []
        for qx in xs:
            for qy in ys:
                grid.collect(qx, qy, r2, grid.bucket_range(qx, qy, radius), found)
        return sorted(eid for _d2, eid in found)

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
    rng = m.rng
    moved = m.grid.moved
    for eid, (place, _body, _wallet, _senses) in m.store.query(Place, Body, Wallet, Senses):
        dx, dy = _STEPS[rng.randrange(8)]
        place.x = (place.x + dx) % side
        place.y = (place.y + dy) % side
        moved(eid)


def perceive_system(m: EcsModel) -> None:
    total = 0
    for _eid, (place, _body, _wallet, senses) in m.store.query(Place, Body, Wallet, Senses):
        senses.seen = len(m.near(place.x, place.y, PERCEPTION_RADIUS)) - 1
        total += senses.seen
    m.counters.seen_total += total


def _shuffled(m: EcsModel) -> list[tuple[int, tuple[Place, Body, Wallet, Senses]]]:
    rows = list(m.store.query(Place, Body, Wallet, Senses))
    m.rng.shuffle(rows)
    return rows


def fight_system(m: EcsModel) -> None:
    get = m.store.get
    for eid, (place, body, wallet, senses) in _shuffled(m):
        if body.health <= 0 or senses.seen < CROWD:
            continue
        foes = [o for o in m.near(place.x, place.y, 1) if o != eid and get(o, Body).health > 0]
        if not foes or m.rng.random() >= ATTACK_CHANCE:
            continue
        victim = m.rng.choice(foes)
        victim_body = get(victim, Body)
        victim_body.health -= DAMAGE
        m.counters.attacks += 1
        if victim_body.health <= 0:
            loot = get(victim, Wallet)
            wallet.wealth += loot.wealth
            loot.wealth = 0


def respawn_system(m: EcsModel) -> None:
    dead = [eid for eid, (_p, body, _w, _s) in m.store.query(Place, Body, Wallet, Senses)
            if body.health <= 0]
    for eid in dead:
        m.grid.remove(eid)
        m.store.delete(eid)
        m._spawn()
    m.counters.deaths += len(dead)
    m.counters.wealth_created += len(dead) * START_WEALTH


def trade_system(m: EcsModel) -> None:
    get = m.store.get
    for eid, (place, _body, wallet, _senses) in _shuffled(m):
        if wallet.wealth <= 0:
            continue
        partners = [o for o in m.near(place.x, place.y, 1) if o != eid]
        if partners:
            get(m.rng.choice(partners), Wallet).wealth += 1
            wallet.wealth -= 1
            m.counters.transfers += 1
