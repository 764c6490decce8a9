"""The world's event types, named once.

Every event the world emits (``World.emit``) and the two the tick loop reports have their
type here; code that emits or matches one uses these names, never the string itself, and
docs/api.md lists exactly ``EVENT_TYPES`` (tests/test_architecture.py and tests/test_docs.py
check both). The strings are what the event log holds: they never change, so old logs
still read.
"""

from __future__ import annotations

__all__ = [
    "ABILITY",
    "ABILITY_ACCEPTED",
    "ABILITY_DISABLED",
    "ABILITY_ENABLED",
    "ABILITY_KILLED",
    "ABILITY_REFUSED",
    "ABILITY_REQUESTED",
    "ABILITY_REQUEST_EXPIRED",
    "ACTION_FAILED",
    "ATTACK",
    "BRAIN_CHANGED",
    "CAPTURE",
    "CENSUS",
    "CRAFT",
    "DEATH",
    "DEFEND",
    "DROP",
    "EAT",
    "EVENT_TYPES",
    "GIFT",
    "GIVEN",
    "HARVEST",
    "HAZARD",
    "INPUT_REJECTED",
    "INTERVIEW",
    "LOOP_EVENTS",
    "OVERRUN",
    "PICKUP",
    "PLAYED",
    "PRICE",
    "RELEASED",
    "REMOVED",
    "RESEEDED",
    "SAY",
    "SKIPPED",
    "SPAWN",
    "SPOILED",
    "SPOKEN",
    "TEAM_SAY",
    "THEFT",
    "TRADE",
    "TRADE_DECLINED",
    "TRADE_EXPIRED",
    "TRADE_OFFER",
    "TRADE_UNDONE",
    "USE",
    "WEAPON_BROKE",
    "WORLD_EVENTS",
]

# agents
SPAWN = "spawn"
DEATH = "death"
REMOVED = "removed"
GIVEN = "given"
SPOILED = "spoiled"

# actions
PICKUP = "pickup"
DROP = "drop"
EAT = "eat"
USE = "use"
HARVEST = "harvest"
SAY = "say"
GIFT = "gift"
CRAFT = "craft"
TEAM_SAY = "team_say"
ACTION_FAILED = "action_failed"

# scenario mechanics
HAZARD = "hazard"
CAPTURE = "capture"

# combat
ATTACK = "attack"
DEFEND = "defend"
WEAPON_BROKE = "weapon_broke"
THEFT = "theft"

# trade and market
TRADE_OFFER = "trade_offer"
TRADE = "trade"
TRADE_DECLINED = "trade_declined"
TRADE_EXPIRED = "trade_expired"
TRADE_UNDONE = "trade_undone"
PRICE = "price"
CENSUS = "census"

# abilities
ABILITY = "ability"
ABILITY_REQUESTED = "ability_requested"
ABILITY_ACCEPTED = "ability_accepted"
ABILITY_REFUSED = "ability_refused"
ABILITY_REQUEST_EXPIRED = "ability_request_expired"
ABILITY_DISABLED = "ability_disabled"
ABILITY_ENABLED = "ability_enabled"
ABILITY_KILLED = "ability_killed"

# the world
INPUT_REJECTED = "input_rejected"
BRAIN_CHANGED = "brain_changed"  # a ``brain`` input gave an agent another brain
RESEEDED = "reseeded"  # a ``reseed`` input gave the world another seed
INTERVIEW = "interview"  # an agent keeps an interview in memory (an ``interview`` input)

# people in the world (core/players.py)
PLAYED = "played"  # a person takes control of an agent (a ``play`` input)
RELEASED = "released"  # ... and gives it back to its brain (``release``)
SPOKEN = "spoken"  # a person speaks at a tile (``speak``)

# the tick loop's, reported with the tick after the one they are about
OVERRUN = "overrun"
SKIPPED = "skipped"

WORLD_EVENTS: frozenset[str] = frozenset({
    SPAWN,
    DEATH,
    REMOVED,
    GIVEN,
    SPOILED,
    PICKUP,
    DROP,
    EAT,
    USE,
    HARVEST,
    SAY,
    GIFT,
    CRAFT,
    TEAM_SAY,
    ACTION_FAILED,
    HAZARD,
    CAPTURE,
    ATTACK,
    DEFEND,
    WEAPON_BROKE,
    THEFT,
    TRADE_OFFER,
    TRADE,
    TRADE_DECLINED,
    TRADE_EXPIRED,
    TRADE_UNDONE,
    PRICE,
    CENSUS,
    ABILITY,
    ABILITY_REQUESTED,
    ABILITY_ACCEPTED,
    ABILITY_REFUSED,
    ABILITY_REQUEST_EXPIRED,
    ABILITY_DISABLED,
    ABILITY_ENABLED,
    ABILITY_KILLED,
    INPUT_REJECTED,
    BRAIN_CHANGED,
    RESEEDED,
    INTERVIEW,
    PLAYED,
    RELEASED,
    SPOKEN,
})
"""What ``World.emit`` may emit."""
LOOP_EVENTS: frozenset[str] = frozenset({OVERRUN, SKIPPED})
EVENT_TYPES: frozenset[str] = WORLD_EVENTS | LOOP_EVENTS

