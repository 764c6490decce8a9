"""The ground: what lies on the map (item stacks, objects), and what follows from it.

``World.ground`` indexes the item and object entities of the world's store: the item and
object grids, the goods lying on the ground by kind, the tiles next to a shelter, the hazard
tiles, the capture points, the objects regrowing their stock, and (only while someone
watches) which of them changed. All of that is derived from the entities and rebuilt as they
are placed on load, never saved. Its one piece of state is the credit of item spawns
(``spawn_credit``, saved under that top-level key of the world's state).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_world.core import components as c
from agent_world.core.components import NO_ONE
from agent_world.core.ecs import EntityStore
from agent_world.core.items import OBJECTS
from agent_world.core.spatial import SpatialGrid
from agent_world.core.terrain import Terrain

__all__ = ["Ground"]


class Ground:
    """Lives at ``world.ground``. Other modules read ``items``, ``objects``, ``goods``,
    ``hazard_tiles``, ``capture_points``, ``regrowing`` and ``changes``, and change them
    through the methods (the world's spawns and removals through ``index``/``unindex``)."""

    def __init__(self, terrain: Terrain, store: EntityStore, *, capacity: float,
                 regrow_ticks: int) -> None:
        self.terrain = terrain
        self.store = store
        self.capacity = capacity  # most item stacks on the ground (world.max_items_...)
        self.regrow_ticks = regrow_ticks
        self.items = SpatialGrid(terrain.width, terrain.height, static=True)
        self.objects = SpatialGrid(terrain.width, terrain.height, static=True)
        self.goods: dict[str, int] = {}  # units lying on the ground, by kind
        self.shelter_tiles: dict[int, int] = {}  # tile next to shelters -> how many
        self.hazard_tiles: set[int] = set()
        self.capture_points: set[int] = set()
        self.regrowing: set[int] = set()  # harvestable objects below full stock
        # Ids of items and objects whose ground state (existence, position, quantity, stock)
        # changed since a reader last took them; None (nothing kept) until someone asks.
        self.changes: set[int] | None = None
        self.spawn_credit = 0.0

    # -- indexing the store's entities --------------------------------------------------------

    def index(self, eid: int, pos: c.Position) -> None:
        """An item or object entity was placed (spawned or loaded); others are not ours."""
        store = self.store
        item = store.try_get(eid, c.Item)
        if item is not None:
            self.items.insert(eid, pos)
            self.goods[item.kind] = self.goods.get(item.kind, 0) + item.qty
            return
        obj = store.try_get(eid, c.StaticObject)
        if obj is None:
            return
        spec = OBJECTS[obj.kind]
        self.objects.insert(eid, pos)
        if spec.blocking:
            self.terrain.block(pos.x, pos.y)
        if obj.kind == "shelter":
            self._shelter_area(pos.x, pos.y, 1)
        elif obj.kind == "hazard":
            self.hazard_tiles.add(pos.y * self.terrain.width + pos.x)
        elif obj.kind == "capture_point":
            self.capture_points.add(eid)
        if obj.stock < spec.max_stock:
            self.regrowing.add(eid)

    def unindex(self, eid: int) -> None:
        """An item or object entity is about to leave the store; others are not ours."""
        store = self.store
        item = store.try_get(eid, c.Item)
        if item is not None:
            self.items.remove(eid)
            self.goods[item.kind] -= item.qty
            return
        obj = store.try_get(eid, c.StaticObject)
        if obj is None:
            return
        pos = store.get(eid, c.Position)
        self.objects.remove(eid)
        self.regrowing.discard(eid)
        if OBJECTS[obj.kind].blocking:
            self.terrain.unblock(pos.x, pos.y)
        if obj.kind == "shelter":
            self._shelter_area(pos.x, pos.y, -1)
        elif obj.kind == "hazard" and not any(  # (this one has left the grid)
                store.get(other, c.StaticObject).kind == "hazard"
                for other in self.objects.at(pos.x, pos.y)):
            self.hazard_tiles.discard(pos.y * self.terrain.width + pos.x)
        elif obj.kind == "capture_point":
            self.capture_points.discard(eid)

    def _shelter_area(self, x: int, y: int, delta: int) -> None:
        w = self.terrain.width
        for ny in range(max(0, y - 1), min(self.terrain.height, y + 2)):
            for nx in range(max(0, x - 1), min(w, x + 2)):
                tile = ny * w + nx
                count = self.shelter_tiles.get(tile, 0) + delta
                if count:
                    self.shelter_tiles[tile] = count
                else:
                    del self.shelter_tiles[tile]

    # -- goods on the ground ------------------------------------------------------------------

    def put(self, kind: str, qty: int, x: int, y: int, *, owner: int = NO_ONE,
            second_hand: int = 0) -> int:
        """Lay goods on a tile, on a like stack there (same kind and owner) or a new one;
        ``second_hand`` of them were carried before (``SecondHand``). Returns the stack."""
        self.goods[kind] = self.goods.get(kind, 0) + qty
        store = self.store
        for eid in self.items.at(x, y):
            item = store.get(eid, c.Item)
            if item.kind == kind and item.owner == owner:
                item.qty += qty
                if second_hand:
                    marked = store.try_get(eid, c.SecondHand)
                    if marked is None:
                        store.add(eid, c.SecondHand(second_hand))
                    else:
                        marked.qty += second_hand
                self.changed(eid)
                return eid
        pos = c.Position(x, y)
        parts = (c.Item(kind=kind, qty=qty, owner=owner), pos)
        eid = store.create(*parts, *((c.SecondHand(second_hand),) if second_hand else ()))
        self.items.insert(eid, pos)
        self.changed(eid)
        return eid

    def take(self, eid: int, item: c.Item, qty: int) -> int:
        """Take ``qty`` units off a ground stack, leaving some (the caller removes a stack
        it empties). Units carried before go first: how many of them were taken."""
        item.qty -= qty
        self.goods[item.kind] -= qty
        self.changed(eid)
        return self.second_hand_taken(eid, qty)

    def second_hand_taken(self, eid: int, qty: int) -> int:
        """Of ``qty`` units taken off a stack, how many had been carried before (they go
        first, so that goods dropped on a stack cannot be picked up as fresh ones)."""
        marked = self.store.try_get(eid, c.SecondHand)
        if marked is None:
            return 0
        taken = min(marked.qty, qty)
        marked.qty -= taken
        if not marked.qty:
            self.store.remove(eid, c.SecondHand)
        return taken

    def bank_spawns(self, rate: float) -> None:
        """A tick's worth of item spawns (``world.item_spawn_rate``) joins the credit."""
        self.spawn_credit += rate

    def spawn_due(self) -> bool:
        """Whether one more item spawns now, taking it from the credit. A full ground
        (``capacity`` stacks) spends the credit: it does not bank spawns for later."""
        if self.spawn_credit < 1.0:
            return False
        if len(self.items) >= self.capacity:
            self.spawn_credit = 0.0
            return False
        self.spawn_credit -= 1.0
        return True

    # -- objects ------------------------------------------------------------------------------

    def deplete(self, eid: int, obj: c.StaticObject, qty: int, tick: int) -> None:
        """Take ``qty`` from an object's stock; it starts regrowing if it was full (or its
        regrowth was due)."""
        if obj.stock == OBJECTS[obj.kind].max_stock or obj.regrow_at <= tick:
            obj.regrow_at = tick + self.regrow_ticks
        obj.stock -= qty
        self.regrowing.add(eid)
        self.changed(eid)

    def regrow(self, tick: int) -> None:
        """Every object below full stock whose time has come grows one unit back."""
        store = self.store
        for eid in sorted(self.regrowing):
            obj = store.get(eid, c.StaticObject)
            if obj.regrow_at <= tick:
                obj.stock += 1
                obj.regrow_at = tick + self.regrow_ticks
                self.changed(eid)
                if obj.stock >= OBJECTS[obj.kind].max_stock:
                    self.regrowing.discard(eid)

    def near_shelter(self, x: int, y: int) -> bool:
        """A shelter on this tile or any of the eight around it."""
        return y * self.terrain.width + x in self.shelter_tiles

    def object_at(self, x: int, y: int) -> c.StaticObject | None:
        """The first object on a tile, if any."""
        for eid in self.objects.at(x, y):
            return self.store.get(eid, c.StaticObject)
        return None

    # -- changes, for the live feed -----------------------------------------------------------

    def changed(self, eid: int) -> None:
        changes = self.changes
        if changes is not None:
            changes.add(eid)

    def track_changes(self, on: bool) -> None:
        """Start (an empty set) or stop (None) keeping ``changes``."""
        self.changes = set() if on else None

    # -- state --------------------------------------------------------------------------------

    def get_state(self) -> dict[str, Any]:
        return {"spawn_credit": self.spawn_credit}

    def set_state(self, state: Mapping[str, Any]) -> None:
        """The saved credit; the indexes follow the entities as the world places them."""
        self.spawn_credit = float(state["spawn_credit"])

    def indexes(self) -> dict[str, Any]:
        """The derived indexes as plain data, in a canonical order (for comparing two
        grounds: a loaded world's against the one it was saved from)."""
        return {"items": sorted(self.items), "objects": sorted(self.objects),
                "goods": {k: v for k, v in sorted(self.goods.items()) if v},
                "shelter_tiles": dict(sorted(self.shelter_tiles.items())),
                "hazard_tiles": sorted(self.hazard_tiles),
                "capture_points": sorted(self.capture_points),
                "regrowing": sorted(self.regrowing),
                "blocked": {i: n for i, n in enumerate(self.terrain.blocked) if n}}
