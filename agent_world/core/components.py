"""Components: data only, one small dataclass per concern.

They are slotted on purpose. On CPython 3.11 a plain instance keeps its attributes in a
compact inline array until something asks for its ``__dict__``; orjson does, for every
plain dataclass it serialises, and from then on each attribute read and write on that
object is about twice as slow (measured: a 5,000-agent tick went from 66 to 92 ms after one
serialisation of the world). Slots never change shape, and orjson serialises them as fast as
a fresh plain instance. Every field is JSON-ready, so a snapshot is just the entity rows;
``COMPONENTS`` maps the names used in snapshots back to the classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent_world.core.actions import Action

__all__ = [
    "COMPONENTS",
    "Agent",
    "Combat",
    "Intent",
    "Inventory",
    "Item",
    "Memory",
    "Needs",
    "Perception",
    "Position",
    "SecondHand",
    "Social",
    "StaticObject",
    "component_from_state",
]

NO_ONE = 0
"""The entity id meaning "nobody" (esper ids start at 1)."""
NO_DEADLINE = 2**62


@dataclass(slots=True)
class Position:
    x: int
    y: int


@dataclass(slots=True)
class Agent:
    name: str
    personality: str
    brain: str = "builtin"
    born: int = 0
    kills: int = 0


@dataclass(slots=True)
class Needs:
    hunger: float  # 0 fed .. 100 starving
    energy: float  # 0 exhausted .. 100 rested
    health: float
    max_health: float


@dataclass(slots=True)
class Inventory:
    items: dict[str, int] = field(default_factory=dict)
    gold: int = 0

    def count(self, kind: str) -> int:
        return self.gold if kind == "gold" else self.items.get(kind, 0)

    def add(self, kind: str, qty: int) -> None:
        if qty < 0:
            raise ValueError(f"qty must be >= 0, got {qty}")
        if kind == "gold":
            self.gold += qty
        elif qty:
            self.items[kind] = self.items.get(kind, 0) + qty

    def take(self, kind: str, qty: int) -> None:
        """Remove goods; raises ValueError if fewer are carried."""
        have = self.count(kind)
        if qty < 0 or qty > have:
            raise ValueError(f"cannot take {qty} {kind}: carrying {have}")
        if qty == 0:
            return
        if kind == "gold":
            self.gold -= qty
        elif qty == have:
            del self.items[kind]
        else:
            self.items[kind] = have - qty


@dataclass(slots=True)
class Intent:
    """What an agent is doing: the current action, queued plan and walking state."""

    action: Action | None = None
    since: int = 0  # tick the current action started
    deadline: int = NO_DEADLINE  # tick after which the current action fails as timed out
    plan: list[Action] = field(default_factory=list)  # next actions, in order
    plan_source: str = ""  # who queued the plan (llm, console ...)
    path: list[int] = field(default_factory=list)  # tile indices to walk, next step last
    goal: int = -1  # tile index the path leads to
    next_move: int = 0  # tick the next step may be taken
    next_think: int = 0  # tick of the next decision
    last_result: str = ""  # outcome of the previous action ("ok" or why it failed)


@dataclass(slots=True)
class Combat:
    next_attack: int = 0
    defending_until: int = 0
    last_attacker: int = NO_ONE
    last_attacked: int = -1_000_000


HEARD_SIZE = 5
"""Speech an agent keeps in ``Perception.heard`` (the newest)."""


@dataclass(slots=True)
class Perception:
    """What an agent currently sees (nearest first) and recently heard."""

    agents: list[int] = field(default_factory=list)
    items: list[int] = field(default_factory=list)
    objects: list[int] = field(default_factory=list)
    heard: list[dict[str, Any]] = field(default_factory=list)
    next_update: int = 0


@dataclass(slots=True)
class Social:
    reputation: float = 0.0  # -1 .. 1, public
    relationships: dict[int, float] = field(default_factory=dict)  # other -> -1 .. 1
    last_spoke: int = -1_000_000
    last_offer: int = -1_000_000

    @classmethod
    def from_state(cls, d: dict[str, Any]) -> Social:
        data = dict(d)
        data["relationships"] = {int(k): v for k, v in d["relationships"].items()}
        return cls(**data)


@dataclass(slots=True)
class Memory:
    """Recent notable things that happened to or near an agent, oldest first."""

    recent: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class Item:
    kind: str
    qty: int
    owner: int = NO_ONE  # who may pick it up without it counting as theft


@dataclass(slots=True)
class SecondHand:
    """How many units of a ground stack have been carried before (dropped, left by a
    death): picking those up again is not gathering (``game.metrics_version`` 2). A stack
    has the component only while it holds such units, so a stack of goods fresh from the
    world keeps exactly the snapshot row it always had, and worlds counting by version 1
    (which never mark a stack) hash as they did."""

    qty: int


@dataclass(slots=True)
class StaticObject:
    kind: str
    stock: int = 0
    regrow_at: int = 0
    owner: int = NO_ONE


@dataclass(slots=True)
class Team:
    """The team an agent plays for (scenario mechanics; most agents have none)."""

    name: str


def _intent_from_state(d: dict[str, Any]) -> Intent:
    data = dict(d)
    data["action"] = Action.from_dict(d["action"]) if d.get("action") else None
    data["plan"] = [Action.from_dict(a) for a in d.get("plan", [])]
    return Intent(**data)


COMPONENTS: dict[str, type[Any]] = {
    cls.__name__: cls
    for cls in (Position, Agent, Needs, Inventory, Intent, Combat, Perception, Social, Memory,
                Item, SecondHand, StaticObject, Team)
}


def component_from_state(name: str, data: dict[str, Any]) -> Any:
    """Rebuild a component from its snapshot form."""
    if name == "Intent":
        return _intent_from_state(data)
    if name == "Social":
        return Social.from_state(data)
    cls = COMPONENTS.get(name)
    if cls is None:
        raise ValueError(f"unknown component {name!r} in snapshot "
                         f"(known: {', '.join(COMPONENTS)})")
    return cls(**data)
