"""JSON Schema (draft 2020-12) for what brains read and answer: the observation, the
decision, every action and every ability (``python main.py schema`` prints them all).

The observation's schema is derived from its dataclasses, so it cannot drift from them; the
actions' from ``ACTIONS``, the table every action is checked against.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any

from agent_world.contract.decision import MAX_REASONING
from agent_world.contract.observation import Observation
from agent_world.core.abilities import AbilityMeta
from agent_world.core.actions import ACTIONS, MAX_TEXT, action_schema
from agent_world.core.items import ITEMS

__all__ = ["DIALECT", "ability_schema", "action_schemas", "decision_schema", "every_schema",
           "observation_schema"]

DIALECT = "https://json-schema.org/draft/2020-12/schema"
_SCALARS: dict[Any, dict[str, Any]] = {int: {"type": "integer"}, float: {"type": "number"},
                                       str: {"type": "string"}, bool: {"type": "boolean"}}


def _of(hint: Any, defs: dict[str, Any]) -> dict[str, Any]:
    if hint in _SCALARS:
        return dict(_SCALARS[hint])
    if hint is Any:
        return {}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        name = hint.__name__
        if name not in defs:
            defs[name] = {}  # placed first: a dataclass may refer to itself
            defs[name] = _dataclass(hint, defs)
        return {"$ref": f"#/$defs/{name}"}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        options = [_of(a, defs) for a in args if a is not type(None)]
        if type(None) in args:
            options.append({"type": "null"})
        return options[0] if len(options) == 1 else {"anyOf": options}
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return {"type": "array", "items": _of(args[0], defs)}
    if origin in (Mapping, dict, typing.Mapping):
        return {"type": "object", "additionalProperties": _of(args[1], defs)}
    raise TypeError(f"no JSON Schema for {hint!r}")  # a new field type: teach it here


def _dataclass(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    props = {f.name: _of(hints[f.name], defs) for f in dataclasses.fields(cls)}
    return {"type": "object", "properties": props, "required": list(props),
            "additionalProperties": False}


def observation_schema() -> dict[str, Any]:
    """The schema of ``Observation.to_dict()``."""
    defs: dict[str, Any] = {}
    root = _dataclass(Observation, defs)
    return {"$schema": DIALECT, "title": "Observation", **root, "$defs": defs}


def _decision() -> dict[str, Any]:
    return {"type": "object",
            "properties": {"action": {"enum": list(ACTIONS)}, "args": {"type": "object"},
                           "reasoning": {"type": ["string", "null"],
                                         "maxLength": MAX_REASONING}},
            "required": ["action"], "additionalProperties": False}


def decision_schema(max_actions: int = 5) -> dict[str, Any]:
    """A decision, or a plan of 1..``max_actions`` of them; each action's own arguments are
    in the action schemas."""
    one = _decision()
    return {"$schema": DIALECT, "title": "Decision",
            "anyOf": [one, {"type": "array", "minItems": 1, "maxItems": max_actions,
                            "items": one}]}


def action_schemas() -> dict[str, dict[str, Any]]:
    """Each action's schema (``{"action": NAME, "args": {...}}``), with its description."""
    out = {}
    for variant in action_schema()["oneOf"]:
        name = variant["properties"]["action"]["const"]
        out[name] = {"description": ACTIONS[name].doc, **variant}
    return out


_ABILITY_ARG: dict[str, dict[str, Any]] = {
    "int": {"type": "integer"}, "item": {"type": "string", "enum": list(ITEMS)},
    "text": {"type": "string", "maxLength": MAX_TEXT},
}
_ID = {"type": "integer", "minimum": 1}


def ability_schema(meta: AbilityMeta) -> dict[str, Any]:
    """``use_ability`` with this ability's arguments (ARGS: ``target`` an agent, an object,
    an item or any entity; a trailing ``?`` is optional)."""
    props: dict[str, Any] = {"ability": {"const": meta.name}}
    for arg in meta.args:
        kind = meta.kind(arg)
        shape = _ID if arg == "target" else _ABILITY_ARG[kind]  # a target is an entity id
        props[arg] = {**shape, "description": f"{arg}: {kind}"}
    return {
        "description": (f"{meta.description} (energy {meta.energy_cost:g}, cooldown "
                        f"{meta.cooldown} ticks, range {meta.range})"),
        "type": "object",
        "properties": {"action": {"const": "use_ability"},
                       "args": {"type": "object", "properties": props,
                                "required": ["ability", *meta.required()],
                                "additionalProperties": False}},
        "required": ["action", "args"],
    }


def every_schema(abilities: Iterable[AbilityMeta], *, max_actions: int = 5) -> dict[str, Any]:
    """What ``python main.py schema`` prints."""
    return {"observation": observation_schema(), "decision": decision_schema(max_actions),
            "actions": action_schemas(),
            "abilities": {m.name: ability_schema(m) for m in abilities}}
