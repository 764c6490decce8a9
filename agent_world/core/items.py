"""What things exist: item kinds (carried, traded, dropped) and static object kinds."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GOLD", "ITEMS", "OBJECTS", "ItemKind", "ObjectKind", "is_goods_name"]

GOLD = "gold"
"""Gold is carried as a number (Inventory.gold) and lies on the ground as an item of this kind."""


@dataclass(frozen=True, slots=True)
class ItemKind:
    name: str
    category: str  # food | material | weapon | medicine | gold
    value: float  # base price in gold; market prices move around it
    spawn_weight: float  # relative chance among spawned items
    nutrition: float = 0.0  # hunger removed when eaten
    damage: float = 0.0  # bonus damage while carried (the best weapon counts)
    heal: float = 0.0  # health restored when used
    weight: float = 1.0  # against game.carry_capacity (gold weighs nothing)
    shelf_life: int = 0  # ticks one unit lasts on average before it spoils (0: never)


ITEMS: dict[str, ItemKind] = {
    k.name: k
    for k in (
        ItemKind("berries", "food", 2.0, 30, nutrition=15, weight=0.5, shelf_life=4000),
        ItemKind("apple", "food", 3.0, 22, nutrition=22, weight=1.0, shelf_life=8000),
        ItemKind("bread", "food", 5.0, 8, nutrition=35, weight=1.0, shelf_life=10000),
        ItemKind("meat", "food", 6.0, 6, nutrition=45, weight=2.0, shelf_life=3000),
        ItemKind("wood", "material", 2.0, 10, weight=3.0),
        ItemKind("stone", "material", 2.0, 8, weight=4.0),
        ItemKind("iron", "material", 8.0, 2, weight=4.0),
        ItemKind("club", "weapon", 10.0, 2.5, damage=4, weight=3.0),
        ItemKind("spear", "weapon", 18.0, 1.5, damage=7, weight=4.0),
        ItemKind("sword", "weapon", 30.0, 0.6, damage=11, weight=5.0),
        ItemKind("herb", "medicine", 6.0, 4, heal=25, weight=0.5, shelf_life=15000),
        ItemKind(GOLD, "gold", 1.0, 6, weight=0.0),
    )
}


@dataclass(frozen=True, slots=True)
class ObjectKind:
    name: str
    blocking: bool  # stands in the way of walking
    max_stock: int  # harvestable units when fully grown (0: not harvestable)
    yields: str = ""  # item given by one harvest while stock lasts
    rare_yield: str = ""  # sometimes given instead
    rare_chance: float = 0.0
    placement_weight: float = 0.0  # relative share among generated objects


OBJECTS: dict[str, ObjectKind] = {
    k.name: k
    for k in (
        ObjectKind("tree", True, 3, "apple", "wood", 0.3, placement_weight=45),
        ObjectKind("berry_bush", False, 4, "berries", placement_weight=35),
        ObjectKind("rock", True, 5, "stone", "iron", 0.12, placement_weight=20),
        ObjectKind("shelter", False, 0),
        ObjectKind("hazard", False, 0),  # hurts whoever stands on it (scenario mechanics)
        ObjectKind("capture_point", False, 0),  # taken and held by teams
    )
}


def is_goods_name(name: str) -> bool:
    """True for anything that can be given, dropped or traded (item kinds, including gold)."""
    return name in ITEMS
