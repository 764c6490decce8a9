"""How v2 brains use abilities, and when they ask the angel for a new one.

An agent may choose ``use_ability`` only when its world can run abilities (a sandbox runner
is attached: a bare ``World`` in a unit test has none) and was made with them (the built-in
abilities were installed before its first tick: ``AbilityBook.brains_cast``; so the replay of
a world run without the sandbox agrees, sandbox or not), the ability is known and enabled,
its cooldown is over and the agent has the energy for it with some to spare. Each
personality reaches for the built-in abilities that suit it (``SUITS``): the aggressive
hurl fire bolts and shove, the cautious shield and heal, gatherers harvest and forage,
traders proclaim their wares and rally those around them. Cooldowns keep casting
occasional: every cast is a round trip to the sandbox.

A brain asks the angel (``request_ability``) when a need comes up that no ability it knows
fits: the request's text is one of the phrases of ``REQUESTS`` (worded so that the angel's
templates answer it with the right kind of ability), the world files it
(``world.minds``), and the ability that answers it is taught to the asker for that need.
Asking is capped across the world by ``game.ability_requests_per_hour`` and never happens
while in danger (the asker waits for the answer).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agent_world.core import components as c
from agent_world.core.abilities import AbilitySpec
from agent_world.core.calendar import TICKS_PER_HOUR

if TYPE_CHECKING:
    from agent_world.core.world import World

__all__ = ["CHANCE", "FOE_NEEDS", "REQUESTS", "SERVED_BY", "SUITS", "args_for", "can_cast",
           "known_for", "need_of", "ready", "request_interval", "tempted", "wants_to_ask"]

ENERGY_SPARE = 15.0  # energy a brain keeps after a cast

CHANCE: dict[str, float] = {
    "fire_bolt": 0.25,  # a fighter, at each decision in or before a fight
    "shove": 0.12,  # a fighter, at a foe within reach (the badly hurt always may)
    "shield": 0.15,  # the less cautious when attacked (the cautious always)
    "rally": 0.12,  # a trader among the weary
    "proclaim": 0.06,  # a trader with goods to sell and people around
    "harvest": 0.4,  # a gatherer next to a tree or bush
    "forage": 0.2,  # a gatherer stocking up (the hungry always may)
}
"""How often a brain reaches for an ability when it would serve: casting stays occasional,
since every cast is a round trip to the sandbox."""

SUITS: dict[str, tuple[str, ...]] = {
    "aggressive": ("fire_bolt", "shove"),
    "cautious": ("shield", "heal"),
    "gatherer": ("harvest", "forage"),
    "trader": ("proclaim", "rally"),
}
"""The built-in abilities each personality reaches for first."""

REQUESTS: dict[str, tuple[str, ...]] = {
    "energy": ("a spell to wake me up when I am tired", "something to wake my tired legs"),
    "slow": ("a frost spell to slow whoever chases me", "a chill that slows my pursuers"),
    "root": ("vines to root an attacker in place", "roots to bind a bully to the spot"),
    "poison": ("a venom to poison my enemies", "a poison touch for those who cross me"),
    "food": ("conjure a meal when I go hungry", "a way to conjure bread when I go hungry"),
    "haste": ("swift feet to catch those who run", "a sprint to outrun my troubles"),
    "regen": ("renew my strength after a fight", "a way to recover between fights"),
    "voice": ("a loud call to announce my wares", "a way to shout my offers to all"),
    "blink": ("a way to leap away from danger", "a blink to get out of trouble"),
}
"""Needs a brain may ask the angel about, each with the phrases it asks with."""
_NEED_OF = {text: need for need, texts in REQUESTS.items() for text in texts}
SERVED_BY: dict[str, str] = {"food": "forage", "haste": "haste", "regen": "heal",
                             "voice": "proclaim", "blink": "dash"}
"""Needs a built-in ability already serves: asked about only while it is disabled."""
FOE_NEEDS = frozenset({"slow", "root", "poison"})
"""Needs whose ability is aimed at a foe; the others serve the asker itself."""


def need_of(text: str) -> str | None:
    """The need a request's text asks about, if a built-in brain asked it."""
    return _NEED_OF.get(text)


def request_interval(world: World) -> int:
    """Ticks between two requests of the world's built-in brains."""
    rate = world.rules.ability_requests_per_hour
    return max(1, int(TICKS_PER_HOUR / rate)) if rate > 0 else 0


def can_cast(world: World) -> bool:
    """Whether this world's built-in brains use abilities at all: it runs them (a sandbox
    runner is attached) and was made to (``AbilityBook.brains_cast``)."""
    book = world.abilities
    return book.runner is not None and book.brains_cast


def tempted(world: World, name: str) -> bool:
    """A draw on the world's RNG: does the brain reach for ``name`` this time (``CHANCE``)."""
    return world.rng.random() < CHANCE[name]


def ready(world: World, eid: int, name: str, energy: float) -> AbilitySpec | None:
    """The ability if this agent may cast it now: runnable, known, enabled, cooled down and
    affordable with energy to spare."""
    book = world.abilities
    if book.runner is None or not book.brains_cast:
        return None
    spec = book.get(name)
    if spec is None or name in book.disabled:
        return None
    cooldowns = book.cooldowns.get(eid)
    if cooldowns is not None and cooldowns.get(name, 0) > world.tick:
        return None
    if energy < spec.meta.energy_cost + ENERGY_SPARE:
        return None
    return spec


def wants_to_ask(world: World, eid: int, need: str) -> dict[str, Any] | None:
    """The arguments of a request_ability for ``need``, if the world may ask now and no
    ability this agent knows (usable or not) serves it."""
    if not can_cast(world) or not world.rules.ability_requests_per_hour:
        return None
    minds = world.minds
    if minds.next_request > world.tick or known_for(world, eid, need):
        return None
    builtin = SERVED_BY.get(need)
    if builtin is not None and world.abilities.get(builtin) is not None \
            and builtin not in world.abilities.disabled:
        return None
    texts = REQUESTS[need]
    return {"text": texts[world.rng.randrange(len(texts))]}


def known_for(world: World, eid: int, need: str) -> list[str]:
    """The enabled abilities the angel taught this agent for ``need``."""
    book = world.abilities
    return [name for name in world.minds.abilities_for(eid, need)
            if book.get(name) is not None and name not in book.disabled]


def _away(world: World, pos: c.Position, foe: c.Position, reach: int) -> tuple[int, int] | None:
    """A free tile up to ``reach`` tiles from ``pos``, away from ``foe``."""
    dx = (pos.x > foe.x) - (pos.x < foe.x) or 1
    dy = (pos.y > foe.y) - (pos.y < foe.y)
    for step in range(reach, 0, -1):
        x, y = pos.x + dx * step, pos.y + dy * step
        if world.terrain.in_bounds(x, y) and not world.terrain.is_blocked(x, y):
            return x, y
    return None


def args_for(world: World, eid: int, spec: AbilitySpec, need: str, foe: int | None,
             text: str) -> dict[str, Any] | None:
    """Arguments for a taught ability serving ``need``, built from its ARGS; None when the
    brain cannot fill them (an LLM angel may write abilities that want other things)."""
    meta = spec.meta
    args: dict[str, Any] = {"ability": meta.name}
    store = world.store
    pos = store.get(eid, c.Position)
    declared: Mapping[str, str] = meta.args
    for key, declared_kind in declared.items():
        optional = declared_kind.endswith("?")
        kind = declared_kind.removesuffix("?")
        if key == "target":
            if need in FOE_NEEDS and foe is not None and kind in ("agent", "entity"):
                fpos = store.try_get(foe, c.Position)
                if fpos is None or max(abs(fpos.x - pos.x), abs(fpos.y - pos.y)) > meta.range:
                    return None
                args["target"] = foe
            elif not optional:
                return None
        elif key in ("x", "y"):
            if "x" in args:
                continue
            fpos = store.try_get(foe, c.Position) if foe is not None else None
            tile = _away(world, pos, fpos, meta.range) if fpos is not None else None
            if tile is None:
                if optional:
                    continue
                return None
            args["x"], args["y"] = tile
        elif key == "text":
            args["text"] = text
        elif not optional:
            return None
    return args
