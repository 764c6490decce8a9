"""The action set: every action any agent can take, with its argument schema.

Built-in brains, console plans and LLM decisions all produce ``Action`` records, and every
``Action`` is validated against this one table when it is made. ``parse_action`` is the edge
where untrusted JSON (an LLM's answer) becomes an ``Action`` or a clear ``ActionError``.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_world.core.items import ITEMS

__all__ = [
    "ACTIONS",
    "Action",
    "ActionError",
    "ActionSpec",
    "Arg",
    "action_schema",
    "one_line",
    "parse_action",
]

MAX_TEXT = 160
MAX_GOODS_ENTRIES = 4
MAX_QTY = 10_000
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]{1,31}")


class ActionError(ValueError):
    """An action that is not in the action set or whose arguments break its schema."""


@dataclass(frozen=True, slots=True)
class Arg:
    """One argument: ``kind`` is entity | int | item | text | goods | name (an ability's
    name: a-z, 0-9 and _)."""

    kind: str
    doc: str
    required: bool = True
    low: int = 0
    high: int = MAX_QTY


@dataclass(frozen=True, slots=True)
class ActionSpec:
    name: str
    doc: str
    args: Mapping[str, Arg] = field(default_factory=dict)
    # Alternative required groups: exactly one group's arguments must all be present.
    one_of: tuple[tuple[str, ...], ...] = ()
    # Tiles (Chebyshev) within which a targeted action takes effect; the agent walks closer.
    reach: int = 1


def _spec(name: str, doc: str, reach: int = 1, one_of: tuple[tuple[str, ...], ...] = (),
          **args: Arg) -> ActionSpec:
    return ActionSpec(name, doc, args, one_of, reach)


_TARGET = Arg("entity", "id of the entity acted on")

ACTIONS: dict[str, ActionSpec] = {
    s.name: s
    for s in (
        _spec("idle", "do nothing for a while",
              ticks=Arg("int", "how long", required=False, low=1, high=100)),
        _spec("wander", "walk about at random",
              ticks=Arg("int", "how long", required=False, low=1, high=300)),
        _spec("move_to", "walk to a tile (x, y) or to an entity (target)", reach=0,
              one_of=(("x", "y"), ("target",)),
              x=Arg("int", "tile column", required=False, high=100_000),
              y=Arg("int", "tile row", required=False, high=100_000),
              target=Arg("entity", "id of an entity to walk to", required=False)),
        _spec("follow", "stay close to another agent", reach=2, target=_TARGET,
              ticks=Arg("int", "how long", required=False, low=1, high=1000)),
        _spec("flee", "run away from an agent until out of its sight", target=_TARGET),
        _spec("pickup", "pick up an item lying on the ground", target=_TARGET),
        _spec("drop", "drop carried goods on the ground",
              item=Arg("item", "item kind or 'gold'"),
              qty=Arg("int", "how many", required=False, low=1)),
        _spec("eat", "eat carried food (the most filling if no item is named)",
              item=Arg("item", "food kind", required=False)),
        _spec("use", "use an object (harvest a tree/bush/rock, rest at a shelter) or a "
              "carried item (herb heals)", one_of=(("target",), ("item",)),
              target=Arg("entity", "id of an object", required=False),
              item=Arg("item", "carried item kind", required=False)),
        _spec("rest", "rest to regain energy (faster next to a shelter)",
              ticks=Arg("int", "how long", required=False, low=1, high=600)),
        _spec("say", "say something; agents within hearing range hear it",
              text=Arg("text", "what to say"),
              to=Arg("entity", "agent addressed", required=False)),
        _spec("attack", "attack an agent until it dies, escapes or you stop", target=_TARGET),
        _spec("defend", "raise your guard: take less damage for a while"),
        _spec("give", "give goods to an agent as a gift", reach=2, target=_TARGET,
              item=Arg("item", "item kind or 'gold'"),
              qty=Arg("int", "how many", required=False, low=1)),
        _spec("trade_offer", "offer an agent a trade; it happens only if they accept",
              reach=3, target=_TARGET,
              give=Arg("goods", "what you give, e.g. {\"apple\": 2}"),
              want=Arg("goods", "what you want, e.g. {\"gold\": 5}")),
        _spec("trade_accept", "accept a trade offer made to you",
              offer=Arg("int", "offer id", low=1, high=2**62)),
        _spec("trade_decline", "decline a trade offer made to you",
              offer=Arg("int", "offer id", low=1, high=2**62)),
        _spec("steal", "try to take goods from an agent (costs reputation if noticed)",
              target=_TARGET),
        _spec("use_ability", "use an ability (built-in or granted by the angel); give the "
              "arguments its ARGS ask for", reach=0,
              ability=Arg("name", "the ability's name"),
              target=Arg("entity", "id of the agent, object or item it acts on",
                         required=False),
              x=Arg("int", "tile column", required=False, high=100_000),
              y=Arg("int", "tile row", required=False, high=100_000),
              item=Arg("item", "item kind", required=False),
              qty=Arg("int", "how many", required=False, low=1),
              text=Arg("text", "words it uses", required=False)),
        _spec("craft", "make one unit of an item from carried goods by a recipe of this "
              "world (game.recipes; none in the default world)",
              item=Arg("item", "what to make")),
        _spec("team_say", "send a short message to every teammate, wherever they are "
              "(agents in a team only)", text=Arg("text", "the message")),
        _spec("request_ability", "ask the angel for a new ability; you wait until it "
              "answers", text=Arg("text", "what the ability should do")),
    )
}


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # control characters and line breaks


def one_line(text: str) -> str:
    """Text from outside (a brain's reasoning, a thought) as one printable line: control
    characters (ESC, BEL, NUL, backspace ...) and runs of white space become one space, so
    that nothing a brain writes can drive the operator's terminal or split a log line."""
    return " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())


def _check_arg(action: str, key: str, arg: Arg, value: Any) -> None:
    where = f"{action}.{key}"
    if arg.kind in ("entity", "int"):
        low = 1 if arg.kind == "entity" else arg.low
        high = 2**62 if arg.kind == "entity" else arg.high
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise ActionError(f"{where} must be a whole number in [{low}, {high}], got {value!r}")
    elif arg.kind == "item":
        if not isinstance(value, str) or value not in ITEMS:
            hint = difflib.get_close_matches(str(value), list(ITEMS), n=1)
            extra = f"; did you mean {hint[0]!r}?" if hint else ""
            raise ActionError(f"{where} must be an item kind ({', '.join(ITEMS)}), "
                              f"got {value!r}{extra}")
    elif arg.kind == "text":
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_TEXT:
            raise ActionError(f"{where} must be non-empty text of at most {MAX_TEXT} "
                              f"characters, got {value!r:.60}")
        if _CONTROL.search(value):
            raise ActionError(f"{where} must not contain control characters or line breaks")
    elif arg.kind == "goods":
        if (not isinstance(value, Mapping) or not 1 <= len(value) <= MAX_GOODS_ENTRIES):
            raise ActionError(f"{where} must map 1-{MAX_GOODS_ENTRIES} item kinds to "
                              f"quantities, e.g. {{\"apple\": 2}}, got {value!r:.80}")
        for kind, qty in value.items():
            if kind not in ITEMS:
                raise ActionError(f"{where}: {kind!r} is not an item kind "
                                  f"({', '.join(ITEMS)})")
            if not isinstance(qty, int) or isinstance(qty, bool) or not 1 <= qty <= MAX_QTY:
                raise ActionError(f"{where}[{kind!r}] must be a whole number in "
                                  f"[1, {MAX_QTY}], got {qty!r}")
    elif arg.kind == "name":
        if not isinstance(value, str) or not NAME_PATTERN.fullmatch(value):
            raise ActionError(f"{where} must be an ability name (2-32 of a-z, 0-9 and _, "
                              f"starting with a letter), got {value!r:.60}")
    else:  # pragma: no cover - a table bug
        raise AssertionError(f"unknown argument kind {arg.kind!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Action:
    """One validated action: ``Action(name="attack", args={"target": 17})``.

    Construction validates against ``ACTIONS``; an invalid action cannot exist."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        spec = ACTIONS.get(self.name)
        if spec is None:
            hint = difflib.get_close_matches(str(self.name), list(ACTIONS), n=1)
            extra = f"; did you mean {hint[0]!r}?" if hint else ""
            raise ActionError(f"unknown action {self.name!r}{extra} "
                              f"(actions: {', '.join(ACTIONS)})")
        if not isinstance(self.args, Mapping):
            raise ActionError(f"{self.name}: args must be an object, got {self.args!r:.60}")
        for key in self.args:
            if key not in spec.args:
                raise ActionError(f"{self.name}: unknown argument {key!r} "
                                  f"(arguments: {', '.join(spec.args) or 'none'})")
        for key, arg in spec.args.items():
            if key in self.args:
                _check_arg(self.name, key, arg, self.args[key])
            elif arg.required:
                raise ActionError(f"{self.name}: missing argument {key!r} ({arg.doc})")
        if spec.one_of:
            complete = [g for g in spec.one_of if all(k in self.args for k in g)]
            if len(complete) != 1:
                forms = " or ".join("{" + ", ".join(g) + "}" for g in spec.one_of)
                raise ActionError(f"{self.name}: give exactly one of {forms}")

    @property
    def spec(self) -> ActionSpec:
        return ACTIONS[self.name]

    def get(self, key: str, default: Any = None) -> Any:
        return self.args.get(key, default)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "args": dict(self.args)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Action:
        if not isinstance(d, Mapping) or "name" not in d:
            raise ActionError(f"an action must be an object with a 'name', got {d!r:.60}")
        args = d.get("args") or {}
        if not isinstance(args, Mapping):
            raise ActionError(f"{d['name']}: args must be an object, got {args!r:.60}")
        return cls(name=d["name"], args=dict(args))

    def __str__(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in self.args.items())
        return f"{self.name}({inner})"


def _lenient_int(value: Any) -> Any:
    """Accept the integer spellings models produce (17.0, "17"); leave anything else as is."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        digits = value.strip().lstrip("#")
        # ASCII only ("²" passes isdigit()); short enough to be an id, not a denial of service.
        if digits.isascii() and digits.isdigit() and len(digits) <= 19:
            return int(digits)
    return value


def parse_action(obj: Any) -> Action:
    """Turn untrusted JSON into an Action, or raise ActionError saying what is wrong.

    Accepts ``{"action": name, "args": {...}}`` (the decision format) or ``{"name": ...}``.
    Numbers written as strings or floats are read as whole numbers; text is trimmed and its
    line breaks turned into spaces. Nothing else is guessed."""
    if not isinstance(obj, Mapping):
        raise ActionError(f"an action must be a JSON object, got {type(obj).__name__}")
    name = obj.get("action", obj.get("name"))
    if not isinstance(name, str):
        raise ActionError(f"an action needs a string field 'action', got {name!r:.40}")
    raw_args = obj.get("args", {})
    if raw_args is None:
        raw_args = {}
    if not isinstance(raw_args, Mapping):
        raise ActionError(f"{name}: args must be an object, got {type(raw_args).__name__}")
    spec = ACTIONS.get(name.strip())
    args: dict[str, Any] = {}
    for key, value in raw_args.items():
        arg = spec.args.get(key) if spec else None
        if arg is None:
            args[key] = value
        elif arg.kind in ("entity", "int"):
            args[key] = _lenient_int(value)
        elif arg.kind == "text" and isinstance(value, str):
            args[key] = " ".join(value.split())
        elif arg.kind == "goods" and isinstance(value, Mapping):
            args[key] = {k: _lenient_int(v) for k, v in value.items()}
        else:
            args[key] = value
    return Action(name=name.strip(), args=args)


def action_schema() -> dict[str, Any]:
    """A JSON Schema for one action, derived from ``ACTIONS`` (for structured LLM output)."""
    variants = []
    for spec in ACTIONS.values():
        props: dict[str, Any] = {}
        for key, arg in spec.args.items():
            if arg.kind == "entity":
                props[key] = {"type": "integer", "minimum": 1, "maximum": 2**62}
            elif arg.kind == "int":
                props[key] = {"type": "integer", "minimum": arg.low, "maximum": arg.high}
            elif arg.kind == "item":
                props[key] = {"type": "string", "enum": list(ITEMS)}
            elif arg.kind == "text":
                props[key] = {"type": "string", "maxLength": MAX_TEXT}
            elif arg.kind == "name":
                props[key] = {"type": "string", "pattern": NAME_PATTERN.pattern}
            else:
                props[key] = {"type": "object", "minProperties": 1,
                              "maxProperties": MAX_GOODS_ENTRIES,
                              "propertyNames": {"enum": list(ITEMS)},
                              "additionalProperties": {"type": "integer", "minimum": 1,
                                                       "maximum": MAX_QTY}}
        required = [k for k, a in spec.args.items() if a.required]
        variants.append({
            "type": "object",
            "properties": {
                "action": {"const": spec.name},
                "args": {"type": "object", "properties": props, "required": required,
                         "additionalProperties": False},
            },
            "required": ["action", "args"],
        })
    return {"oneOf": variants}
