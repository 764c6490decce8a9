"""Abilities, the engine side: what an ability is, which ones a world knows, and their state.

An ability is a source file with literal metadata and one ``def execute(ctx)`` that returns
effect data. The core never runs that code: it decides who may cast what (range, energy,
cooldown, arguments), hands the calls of a tick to an ``AbilityRunner`` (``types.py``; the
sandbox implements it), and validates and applies the effects (``core/effects.py``).

World state kept here (``AbilityBook``): the generated abilities (name, metadata, source and
its sha256), which abilities are disabled and why, each ability's strikes (its calls killed
in a row), per-caster cooldowns, status effects with their end ticks, open requests to
the angel, and whether the world's built-in brains cast (``brains_cast``: set when the
built-in abilities are installed into a world just created, so a world made without the
sandbox never has its brains cast, and its replay, with or without a sandbox, agrees).
Built-in abilities are part of the program, like the systems: they are installed into every
world by the layer that attaches the sandbox, and are not saved (only their disabled flag
and strikes are).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_world.config import AbilitiesConfig
from agent_world.types import ABILITY_METADATA, MAX_ABILITY_SOURCE, AbilityRunner

if TYPE_CHECKING:
    from agent_world.core.world import World

__all__ = [
    "ARG_KINDS",
    "MAX_SOURCE_CHARS",
    "METADATA_NAMES",
    "NAME_PATTERN",
    "STATUSES",
    "AbilityBook",
    "AbilityError",
    "AbilityMeta",
    "AbilitySpec",
    "ability_seed",
    "effective_cooldown",
    "source_digest",
]

MAX_SOURCE_CHARS = MAX_ABILITY_SOURCE
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]{1,31}")
MAX_DESCRIPTION = 200
MAX_ENERGY_COST = 100.0
MAX_COOLDOWN = 100_000

METADATA_NAMES = ABILITY_METADATA

ARG_KINDS: dict[str, tuple[str, ...]] = {
    "target": ("agent", "object", "item", "entity"),
    "x": ("int",),
    "y": ("int",),
    "item": ("item",),
    "qty": ("int",),
    "text": ("text",),
}
"""The arguments of ``use_ability`` an ability may declare in ARGS, with the kinds each may
have; a kind ending in ``?`` makes the argument optional."""

STATUSES: dict[str, str] = {
    "shield": "damage taken is halved",
    "haste": "walks twice as fast",
    "slow": "walks half as fast",
    "root": "cannot walk",
    "regen": "regains 0.5 health per tick",
    "poison": "loses 0.5 health per tick",
}
"""Status effects an ability may put on an agent for a number of ticks."""


class AbilityError(ValueError):
    """Ability metadata or a registration that breaks the rules (says which and why)."""


def source_digest(source: str) -> str:
    """The sha256 of an ability's source (UTF-8), as hex: how a runner knows the code."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def ability_seed(world_seed: int, tick: int, caster: int, name: str) -> int:
    """The seed of one call's own random numbers: stable across runs, machines and Python
    hash seeds (a BLAKE2b digest, never ``hash()``)."""
    digest = hashlib.blake2b(f"{world_seed}:{tick}:{caster}:{name}".encode(),
                             digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def effective_cooldown(meta: AbilityMeta, rules: AbilitiesConfig) -> int:
    """The ticks a caster waits between two casts: the ability's COOLDOWN, but never less
    than ``abilities.min_cooldown_ticks``."""
    return max(meta.cooldown, rules.min_cooldown_ticks)


def _number(value: Any) -> bool:
    return (type(value) in (int, float)) and math.isfinite(value)


@dataclass(frozen=True, slots=True, kw_only=True)
class AbilityMeta:
    """An ability's metadata, validated: ``AbilityMeta(name="heal", ...)``.

    ``args`` maps argument names of ``use_ability`` (target, x, y, item, qty, text) to their
    kind (see ``ARG_KINDS``); a trailing ``?`` makes one optional."""

    name: str
    description: str
    energy_cost: float
    cooldown: int
    range: int
    args: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if type(self.name) is not str or not NAME_PATTERN.fullmatch(self.name):
            raise AbilityError(f"NAME must be 2-32 characters of a-z, 0-9 and _, starting "
                               f"with a letter, got {self.name!r:.60}")
        if (type(self.description) is not str or not self.description.strip()
                or len(self.description) > MAX_DESCRIPTION
                or not self.description.isprintable()):
            raise AbilityError(f"DESCRIPTION must be 1-{MAX_DESCRIPTION} printable "
                               f"characters, got {self.description!r:.60}")
        if not _number(self.energy_cost) or not 0 <= self.energy_cost <= MAX_ENERGY_COST:
            raise AbilityError(f"ENERGY_COST must be a number in [0, {MAX_ENERGY_COST:g}], "
                               f"got {self.energy_cost!r:.40}")
        if type(self.cooldown) is not int or not 0 <= self.cooldown <= MAX_COOLDOWN:
            raise AbilityError(f"COOLDOWN must be a whole number of ticks in [0, "
                               f"{MAX_COOLDOWN}], got {self.cooldown!r:.40}")
        if type(self.range) is not int or not 0 <= self.range <= 64:
            raise AbilityError(f"RANGE must be a whole number of tiles in [0, 64], got "
                               f"{self.range!r:.40}")
        if type(self.args) is not dict or len(self.args) > len(ARG_KINDS):
            raise AbilityError(f"ARGS must be a dict of argument name to kind, e.g. "
                               f"{{'target': 'agent'}}, got {self.args!r:.80}")
        for key, kind in self.args.items():
            if key not in ARG_KINDS:
                raise AbilityError(f"ARGS: unknown argument {key!r:.40}; arguments are "
                                   f"{', '.join(ARG_KINDS)}")
            if type(kind) is not str or kind.removesuffix("?") not in ARG_KINDS[key]:
                raise AbilityError(f"ARGS[{key!r}] must be one of "
                                   f"{', '.join(ARG_KINDS[key])} (optionally ending in '?'), "
                                   f"got {kind!r:.40}")
        if ("x" in self.args) != ("y" in self.args):
            raise AbilityError("ARGS: declare x and y together (a tile), or neither")
        object.__setattr__(self, "energy_cost", float(self.energy_cost))

    def required(self) -> list[str]:
        return [k for k, kind in self.args.items() if not kind.endswith("?")]

    def kind(self, arg: str) -> str:
        return self.args[arg].removesuffix("?")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description,
                "energy_cost": self.energy_cost, "cooldown": self.cooldown,
                "range": self.range, "args": dict(self.args)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> AbilityMeta:
        """From ``to_dict`` form; AbilityError (never KeyError) for anything malformed."""
        if not isinstance(d, Mapping):
            raise AbilityError(f"metadata must be an object, got {type(d).__name__}")
        expected = {"name", "description", "energy_cost", "cooldown", "range", "args"}
        if set(d) != expected:
            raise AbilityError(f"metadata must have exactly the keys {sorted(expected)}, got "
                               f"{sorted(map(str, d))}")
        return cls(name=d["name"], description=d["description"],
                   energy_cost=d["energy_cost"], cooldown=d["cooldown"], range=d["range"],
                   args=d["args"])

    @classmethod
    def from_source_values(cls, values: Mapping[str, Any]) -> AbilityMeta:
        """From the literal assignments of a source file (NAME, DESCRIPTION ...)."""
        missing = [k for k in METADATA_NAMES if k != "ARGS" and k not in values]
        if missing:
            raise AbilityError(f"missing metadata: {', '.join(missing)} (an ability assigns "
                               f"{', '.join(METADATA_NAMES)} as literals)")
        return cls(name=values["NAME"], description=values["DESCRIPTION"],
                   energy_cost=values["ENERGY_COST"], cooldown=values["COOLDOWN"],
                   range=values["RANGE"], args=values.get("ARGS", {}))


@dataclass(frozen=True, slots=True, kw_only=True)
class AbilitySpec:
    """An ability a world knows: its metadata, source and digest, and where it came from."""

    meta: AbilityMeta
    source: str
    digest: str
    builtin: bool = False
    origin: str = ""  # builtin, angel, operator, file ...
    accepted: int = 0  # tick it entered the world

    def __post_init__(self) -> None:
        if type(self.source) is not str or len(self.source) > MAX_SOURCE_CHARS:
            raise AbilityError(f"source must be text of at most {MAX_SOURCE_CHARS} characters")
        if self.digest != source_digest(self.source):
            raise AbilityError(f"sha256 {self.digest!r:.70} does not match the source")

    @property
    def name(self) -> str:
        return self.meta.name

    def to_dict(self) -> dict[str, Any]:
        return {**self.meta.to_dict(), "source": self.source, "sha256": self.digest,
                "origin": self.origin, "accepted": self.accepted}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> AbilitySpec:
        meta = AbilityMeta.from_dict({k: d[k] for k in ("name", "description", "energy_cost",
                                                         "cooldown", "range", "args")})
        return cls(meta=meta, source=d["source"], digest=d["sha256"],
                   origin=str(d.get("origin", "")), accepted=int(d.get("accepted", 0)))


class AbilityBook:
    """The abilities of one world and their state. Lives at ``world.abilities``."""

    def __init__(self, rules: AbilitiesConfig) -> None:
        self.rules = rules
        self.builtins: dict[str, AbilitySpec] = {}  # program, not state
        self.generated: dict[str, AbilitySpec] = {}
        self.disabled: dict[str, str] = {}  # name -> reason
        self.strikes: dict[str, int] = {}  # name -> its calls killed in a row (if any)
        self.cooldowns: dict[int, dict[str, int]] = {}  # caster -> name -> tick ready
        self.statuses: dict[int, dict[str, int]] = {}  # agent -> status -> last tick
        self.requests: dict[int, dict[str, Any]] = {}  # id -> {agent, since, text, tick}
        self.next_request = 1
        self.runner: AbilityRunner | None = None  # attached by the sandbox layer
        # State: built-in brains may cast (set by installing built-ins while ``fresh``).
        self.brains_cast = False
        # Not state: true from World.create until the first tick (only for brains that cast).
        self.fresh = False
        # Outcomes a replayed tick brings from the log: (caster, ability) -> input data.
        self.recorded: dict[tuple[int, str], Mapping[str, Any]] = {}

    # -- the registry ------------------------------------------------------------------------

    def get(self, name: str) -> AbilitySpec | None:
        return self.builtins.get(name) or self.generated.get(name)

    def names(self) -> list[str]:
        return [*self.builtins, *self.generated]

    def catalog(self) -> list[dict[str, Any]]:
        """Every ability an agent may use, as plain data for observations and the console:
        name, description, cost, cooldown (the one that applies; ``declared_cooldown`` is
        the COOLDOWN it asked for when the floor raised it), range, arguments, and why it is
        disabled."""
        return [self.entry(spec) for spec in (*self.builtins.values(),
                                                *self.generated.values())]

    def entry(self, spec: AbilitySpec) -> dict[str, Any]:
        entry = {**spec.meta.to_dict(), "builtin": spec.builtin}
        cooldown = effective_cooldown(spec.meta, self.rules)
        if cooldown != spec.meta.cooldown:
            entry |= {"cooldown": cooldown, "declared_cooldown": spec.meta.cooldown}
        if spec.name in self.disabled:
            entry["disabled"] = self.disabled[spec.name]
        return entry

    def range_of(self, name: str) -> int:
        spec = self.get(name)
        return spec.meta.range if spec else 0

    def install_builtin(self, spec: AbilitySpec) -> None:
        """Make a built-in ability known (idempotent for the same source)."""
        current = self.builtins.get(spec.name)
        if current is not None:
            if current.digest != spec.digest:
                raise AbilityError(f"built-in ability {spec.name!r} is already installed "
                                   "with other source")
            return
        if spec.name in self.generated:
            raise AbilityError(f"built-in ability {spec.name!r} clashes with a generated "
                               "ability of this world")
        self.builtins[spec.name] = AbilitySpec(meta=spec.meta, source=spec.source,
                                               digest=spec.digest, builtin=True,
                                               origin="builtin")
        if self.fresh:
            self.brains_cast = True

    def add(self, spec: AbilitySpec) -> None:
        if self.get(spec.name) is not None:
            raise AbilityError(f"an ability named {spec.name!r} already exists; choose "
                               "another name")
        if spec.meta.range > self.rules.max_range:
            raise AbilityError(f"RANGE {spec.meta.range} exceeds abilities.max_range "
                               f"({self.rules.max_range})")
        self.generated[spec.name] = spec

    def disable(self, name: str, reason: str) -> None:
        """Disable ``name``; its strikes go (re-enabled, it starts afresh)."""
        self.disabled[name] = reason[:300]
        self.strikes.pop(name, None)

    def strike(self, name: str) -> int:
        """Count a killed call of ``name``; its calls killed in a row, this one included."""
        self.strikes[name] = self.strikes.get(name, 0) + 1
        return self.strikes[name]

    def completed(self, name: str) -> None:
        """A call of ``name`` came back (ok or error): its run of kills is over."""
        self.strikes.pop(name, None)

    # -- statuses ----------------------------------------------------------------------------

    def has_status(self, eid: int, status: str, tick: int) -> bool:
        active = self.statuses.get(eid)
        return active is not None and active.get(status, -1) >= tick

    def statuses_of(self, eid: int, tick: int) -> dict[str, int]:
        """Active statuses of an agent with the ticks each has left."""
        active = self.statuses.get(eid)
        if not active:
            return {}
        return {s: until - tick + 1 for s, until in active.items() if until >= tick}

    # -- state -------------------------------------------------------------------------------

    def is_empty(self) -> bool:
        """True while nothing about abilities has happened in this world: its snapshot then
        has no ``abilities`` key, exactly like a snapshot written before abilities existed."""
        return not (self.generated or self.disabled or self.strikes or self.cooldowns
                    or self.statuses or self.requests or self.next_request != 1
                    or self.brains_cast)

    def get_state(self) -> dict[str, Any]:
        """JSON-only state. ``strikes`` appears only while some ability has one, so a world
        that never had a kill hashes as it did before strikes existed."""
        return {
            "generated": [spec.to_dict() for spec in self.generated.values()],
            "disabled": self.disabled,
            "cooldowns": self.cooldowns,
            "statuses": self.statuses,
            "requests": list(self.requests.values()),
            "next_request": self.next_request,
        } | ({"strikes": dict(sorted(self.strikes.items()))} if self.strikes else {}) | (
            {"brains_cast": True} if self.brains_cast else {})

    def set_state(self, state: Mapping[str, Any] | None) -> None:
        self.generated = {}
        for row in (state or {}).get("generated", []):
            spec = AbilitySpec.from_dict(row)
            self.generated[spec.name] = spec
        if not state:
            return
        self.disabled = {str(k): str(v) for k, v in state["disabled"].items()}
        self.strikes = {str(k): int(v) for k, v in state.get("strikes", {}).items()}
        self.cooldowns = {int(k): {str(n): int(t) for n, t in v.items()}
                          for k, v in state["cooldowns"].items()}
        self.statuses = {int(k): {str(n): int(t) for n, t in v.items()}
                         for k, v in state["statuses"].items()}
        self.requests = {int(r["id"]): dict(r) for r in state["requests"]}
        self.next_request = int(state["next_request"])
        self.brains_cast = bool(state.get("brains_cast", False))


def forget_agent(world: World, eid: int) -> None:
    """Drop a dead agent's cooldowns and statuses (its open request runs out by itself)."""
    book = world.abilities
    book.cooldowns.pop(eid, None)
    book.statuses.pop(eid, None)
