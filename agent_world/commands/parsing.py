"""The edge of the console: command lines become typed argument records here, once.

Parsers check only the syntax and the fixed tables (item kinds, personalities ...); whether
a name, an id or a tile makes sense in the world right now is for the command to check.
Every problem is a ``CommandError`` whose message fits on one line.
"""

from __future__ import annotations

import difflib
import math
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agent_world.config import BRAIN_NAME, PERSONALITIES, llm_brain
from agent_world.config.brains import PROFILE_NAME
from agent_world.core.items import ITEMS, OBJECTS
from agent_world.core.teams import TEAM_NAME

__all__ = [
    "BRAINS",
    "LIST_GROUPS",
    "MAX_GIVE",
    "MAX_STEP",
    "CommandError",
    "Conflict",
    "EchoArgs",
    "EntityRef",
    "GiveArgs",
    "HelpArgs",
    "ListArgs",
    "NoArgs",
    "SayArgs",
    "SpawnArgs",
    "SpeedArgs",
    "StepArgs",
    "closest",
    "did_you_mean",
    "parse_echo",
    "parse_entity_ref",
    "parse_give",
    "parse_help",
    "parse_int",
    "parse_list",
    "parse_no_args",
    "parse_one_entity",
    "parse_say",
    "parse_spawn",
    "parse_speed",
    "parse_step",
    "split_line",
]

BRAINS = ("builtin", "llm")
LIST_GROUPS = ("agents", "items", "objects")
MAX_STEP = 100_000
MAX_GIVE = 1_000_000
MAX_SPAWN_QTY = 10_000
MAX_SPAWN_GOLD = 1_000_000
MAX_LINE = 2000
AGENT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_'-]{0,23}")
# ASCII digits only, and few enough for an id: "²" and "١٢" pass str.isdigit() or \d, and
# int("²") raises; a thousand digits would be a denial of service, not an id.
_INTEGER = re.compile(r"[+-]?[0-9]{1,19}")
_ID = re.compile(r"[0-9]{1,19}")
_LABEL = re.compile(r"(?:[A-Za-z][A-Za-z0-9_'-]*)?#([0-9]{1,19})")  # "#12" or "Zed#12"


class CommandError(ValueError):
    """A command that cannot be carried out; the message says what is wrong, on one line."""


class Conflict(CommandError):
    """A command that clashes with someone else's claim (an agent another player plays);
    the web answers it with 409."""


def closest(word: str, options: Iterable[str]) -> str | None:
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(word: str, options: Iterable[str]) -> str:
    close = closest(word, options)
    return f"; did you mean {close!r}?" if close else ""


def split_line(line: str) -> list[str]:
    """Words of a command line; quotes group words ("/say 'two words'")."""
    if len(line) > MAX_LINE:
        raise CommandError(f"the line is {len(line)} characters long; the limit is {MAX_LINE}")
    try:
        return shlex.split(line)
    except ValueError as exc:  # unbalanced quotes
        raise CommandError(f"cannot split the line into words: {exc}") from None


def parse_int(text: str, what: str, *, low: int, high: int) -> int:
    if not _INTEGER.fullmatch(text):
        raise CommandError(f"{what} must be a whole number (digits 0-9), got {text!r:.40}")
    value = int(text)
    if not low <= value <= high:
        raise CommandError(f"{what} must be between {low} and {high}, got {value}")
    return value


def _arity(argv: Sequence[str], low: int, high: int) -> None:
    if not low <= len(argv) <= high:
        if low == high == 0:
            raise CommandError(f"takes no arguments, got {len(argv)}")
        expected = str(low) if low == high else f"{low} to {high}"
        raise CommandError(f"takes {expected} argument{'s' if high != 1 else ''}, "
                           f"got {len(argv)}")


# -- records ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class NoArgs:
    """For commands that take no arguments."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StepArgs:
    n: int = 1

    def __post_init__(self) -> None:
        if not 1 <= self.n <= MAX_STEP:
            raise CommandError(f"N must be between 1 and {MAX_STEP}, got {self.n}")


@dataclass(frozen=True, slots=True, kw_only=True)
class EchoArgs:
    on: bool | None = None  # None: say whether it is on


@dataclass(frozen=True, slots=True, kw_only=True)
class SpeedArgs:
    hz: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.hz) and self.hz > 0):
            raise CommandError(f"HZ must be a number of ticks per second > 0, got {self.hz!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class EntityRef:
    """An entity named on the command line: by id (``12``, ``#12``, ``Zed#12``) or by agent
    name (``Zed``, any case)."""

    text: str
    eid: int | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if (self.eid is None) == (self.name is None):
            raise ValueError("an EntityRef holds exactly one of eid and name")


@dataclass(frozen=True, slots=True, kw_only=True)
class SpawnArgs:
    kind: str
    name: str | None = None
    x: int | None = None
    y: int | None = None
    personality: str | None = None
    brain: str | None = None
    qty: int | None = None
    gold: int | None = None
    team: str | None = None

    def __post_init__(self) -> None:
        if (self.x is None) != (self.y is None):
            raise CommandError("give both X and Y, or neither")

    def input_data(self) -> dict[str, object]:
        """The ``spawn`` input this request becomes (only the fields that were given)."""
        data: dict[str, object] = {"kind": self.kind}
        for key in ("name", "x", "y", "personality", "brain", "qty", "gold", "team"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class SayArgs:
    speaker: EntityRef
    text: str


MAX_SAY = 200  # characters an operator puts in an agent's mouth


def parse_say(argv: Sequence[str]) -> SayArgs:
    if len(argv) < 2:
        raise CommandError('name the agent and what it says, e.g. /say Zed "hello there"')
    text = " ".join(argv[1:]).strip()
    if not text or len(text) > MAX_SAY:
        raise CommandError(f"TEXT must be 1 to {MAX_SAY} characters, got {len(text)}")
    return SayArgs(speaker=parse_entity_ref(argv[0]), text=text)


@dataclass(frozen=True, slots=True, kw_only=True)
class GiveArgs:
    target: EntityRef
    item: str
    qty: int = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ListArgs:
    what: str = "agents"


@dataclass(frozen=True, slots=True, kw_only=True)
class HelpArgs:
    command: str | None = None


# -- parsers ---------------------------------------------------------------------------------


def parse_no_args(argv: Sequence[str]) -> NoArgs:
    _arity(argv, 0, 0)
    return NoArgs()


def parse_step(argv: Sequence[str]) -> StepArgs:
    _arity(argv, 0, 1)
    if not argv:
        return StepArgs()
    return StepArgs(n=parse_int(argv[0], "N", low=1, high=MAX_STEP))


def parse_echo(argv: Sequence[str]) -> EchoArgs:
    _arity(argv, 0, 1)
    if not argv:
        return EchoArgs()
    word = argv[0].lower()
    if word not in ("on", "off"):
        raise CommandError(f"expected on or off, got {argv[0]!r:.40}")
    return EchoArgs(on=word == "on")


def parse_speed(argv: Sequence[str]) -> SpeedArgs:
    _arity(argv, 1, 1)
    text = argv[0].removesuffix("hz").removesuffix("Hz")
    try:
        hz = float(text)
    except ValueError:
        raise CommandError(f"HZ must be a number of ticks per second, got {argv[0]!r}") from None
    return SpeedArgs(hz=hz)


def parse_entity_ref(text: str) -> EntityRef:
    if _ID.fullmatch(text):
        return EntityRef(text=text, eid=int(text))
    label = _LABEL.fullmatch(text)
    if label:
        return EntityRef(text=text, eid=int(label.group(1)))
    if AGENT_NAME.fullmatch(text):
        return EntityRef(text=text, name=text)
    raise CommandError(f"{text!r:.40} is neither an entity id (digits 0-9: 12 or #12) nor an "
                       "agent name")


def parse_one_entity(argv: Sequence[str]) -> EntityRef:
    _arity(argv, 1, 1)
    return parse_entity_ref(argv[0])


def parse_give(argv: Sequence[str]) -> GiveArgs:
    _arity(argv, 2, 3)
    target = parse_entity_ref(argv[0])
    item = argv[1].lower()
    if item not in ITEMS:
        raise CommandError(f"unknown item {argv[1]!r} (items: {', '.join(ITEMS)})"
                           f"{did_you_mean(item, ITEMS)}")
    qty = parse_int(argv[2], "N", low=1, high=MAX_GIVE) if len(argv) == 3 else 1
    return GiveArgs(target=target, item=item, qty=qty)


def parse_list(argv: Sequence[str]) -> ListArgs:
    _arity(argv, 0, 1)
    if not argv:
        return ListArgs()
    what = argv[0].lower()
    singular = {g[:-1]: g for g in LIST_GROUPS}
    what = singular.get(what, what)
    known = (*LIST_GROUPS, *PERSONALITIES, *ITEMS, *OBJECTS)
    if what not in known:
        raise CommandError(f"cannot list {argv[0]!r}: expected agents, items, objects, a "
                           f"personality, an item or an object kind{did_you_mean(what, known)}")
    return ListArgs(what=what)


def parse_help(argv: Sequence[str]) -> HelpArgs:
    _arity(argv, 0, 1)
    return HelpArgs(command=argv[0].lstrip("/").lower() if argv else None)


# -- /spawn ----------------------------------------------------------------------------------

_SPAWN_OPTIONS = {
    "agent": ("personality", "brain", "model", "gold", "team"),
    "item": ("qty",),
    "object": (),
}


def _spawn_family(kind: str) -> str:
    if kind == "agent":
        return "agent"
    if kind in ITEMS:
        return "item"
    if kind in OBJECTS:
        return "object"
    known = ("agent", *ITEMS, *OBJECTS)
    raise CommandError(f"cannot spawn {kind!r}: KIND is agent, an item ({', '.join(ITEMS)}) "
                       f"or an object ({', '.join(OBJECTS)}){did_you_mean(kind, known)}")


def _options(family: str, kind: str, words: Sequence[str]) -> dict[str, str]:
    allowed = _SPAWN_OPTIONS[family]
    options: dict[str, str] = {}
    for word in words:
        key, _, value = word.partition("=")
        key = key.lower()
        if key not in allowed:
            accepted = ", ".join(f"{k}=" for k in allowed) or "none"
            raise CommandError(f"{kind} takes no option {key!r} (options: {accepted})"
                               f"{did_you_mean(key, allowed)}")
        if key in options:
            raise CommandError(f"option {key}= is given twice")
        if not value:
            raise CommandError(f"option {key}= has no value")
        options[key] = value
    return options


def parse_spawn(argv: Sequence[str]) -> SpawnArgs:
    """``KIND [NAME] [X Y] [key=value ...]``; NAME only for agents."""
    if not argv:
        raise CommandError("name what to spawn")
    kind = argv[0].lower()
    family = _spawn_family(kind)
    positional = [w for w in argv[1:] if "=" not in w]
    options = _options(family, kind, [w for w in argv[1:] if "=" in w])
    name: str | None = None
    if family == "agent" and len(positional) in (1, 3):
        name, positional = positional[0], positional[1:]
        if not AGENT_NAME.fullmatch(name):
            raise CommandError(f"{name!r} is not a usable name: 1-24 letters, digits, _ ' or "
                               "-, starting with a letter")
    if len(positional) not in (0, 2):
        raise CommandError(f"expected {'[NAME] ' if family == 'agent' else ''}[X Y], got "
                           f"{' '.join(positional)!r}")
    x = y = None
    if positional:
        x = parse_int(positional[0], "X", low=-(2**31), high=2**31)
        y = parse_int(positional[1], "Y", low=-(2**31), high=2**31)
    personality = options.get("personality")
    if personality is not None:
        personality = personality.lower()
        if personality not in PERSONALITIES:
            raise CommandError(f"unknown personality {personality!r} (personalities: "
                               f"{', '.join(PERSONALITIES)})"
                               f"{did_you_mean(personality, PERSONALITIES)}")
    brain = options.get("brain")
    if brain is not None:
        brain = brain.lower()
        if brain not in BRAINS and not BRAIN_NAME.fullmatch(brain):
            raise CommandError(f"unknown brain {brain!r} (brains: {', '.join(BRAINS)}, or "
                               "one registered in the config's brains: section)"
                               f"{did_you_mean(brain, BRAINS)}")
    model = options.get("model")
    if model is not None:  # brain=llm model=NAME is brain llm:NAME
        model = model.lower()
        if brain not in (None, "llm"):
            raise CommandError(f"model={model} is for LLM agents; give brain=llm (or leave "
                               "brain= out) with it")
        if not PROFILE_NAME.fullmatch(model):
            raise CommandError(f"model={model!r:.40} is not a model profile's name (a-z, 0-9 "
                               "and _, starting with a letter; llm.models names them)")
        brain = llm_brain("" if model == "default" else model)
    qty = gold = None
    if "qty" in options:
        qty = parse_int(options["qty"], "qty", low=1, high=MAX_SPAWN_QTY)
    if "gold" in options:
        gold = parse_int(options["gold"], "gold", low=0, high=MAX_SPAWN_GOLD)
    team = options.get("team")
    if team is not None:
        team = team.lower()
        if not TEAM_NAME.fullmatch(team):
            raise CommandError(f"team name {team!r} must be 1-16 of a-z, 0-9 and _, starting "
                               "with a letter")
    return SpawnArgs(kind=kind, name=name, x=x, y=y, personality=personality, brain=brain,
                     qty=qty, gold=gold, team=team)
