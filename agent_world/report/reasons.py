"""Grouping free text: failed-action reasons and causes of death.

The core writes reasons for people, with the entities and numbers of the moment in them
(``cannot reach club#3153``, ``Vale#2047 is no longer near``, ``fire_bolt is cooling down (12
ticks left)``). A report counts them by what happened, so the particulars are replaced by
placeholders, in this order:

1. the ability being cast (when the action is ``use_ability``) -> ``<ability>``;
2. ``no ability named 'x'; did you mean 'y'?`` -> ``no ability named <name>``;
3. entity labels (``NAME#ID``): an item kind -> ``<item>``, an object kind -> ``<object>``,
   anything else -> ``<agent>``; a bare ``#ID`` (an entity that is gone) -> ``<entity>``;
4. tiles ``(x, y)`` -> ``(<x>, <y>)``;
5. item kinds named as words (``not carrying any apple``) -> ``<item>``;
6. every other number -> ``<n>``.
"""

from __future__ import annotations

import re

from agent_world.core.items import ITEMS, OBJECTS

__all__ = ["KILLED", "death_cause", "normalise_reason"]

KILLED = "killed"  # the group of every "killed by NAME#ID" cause

_UNKNOWN_ABILITY = re.compile(r"no ability named '[^']*'(?:; did you mean '[^']*'\?)?")
_LABEL = re.compile(r"([^\s#()\[\]{},;:'\"]+)?#(\d+)")
_TILE = re.compile(r"\(-?\d+, -?\d+\)")
_ITEM_WORD = re.compile(r"\b(?:" + "|".join(sorted(ITEMS, key=len, reverse=True)) + r")\b")
_NUMBER = re.compile(r"(?<![\w<])-?\d+(?:\.\d+)?(?![\w>])")


def _label(match: re.Match[str]) -> str:
    word = match.group(1)
    if word is None:
        return "<entity>"
    if word in ITEMS:
        return "<item>"
    if word in OBJECTS:
        return "<object>"
    return "<agent>"


def normalise_reason(reason: str, ability: str = "") -> str:
    """``reason`` with its particulars replaced by placeholders (see the module docstring);
    ``ability`` is the ability being cast, if the failed action was ``use_ability``."""
    text = reason
    if ability:
        text = re.sub(rf"\b{re.escape(ability)}\b", "<ability>", text)
    text = _UNKNOWN_ABILITY.sub("no ability named <name>", text)
    text = _LABEL.sub(_label, text)
    text = _TILE.sub("(<x>, <y>)", text)
    text = _ITEM_WORD.sub("<item>", text)
    return _NUMBER.sub("<n>", text)


def death_cause(cause: str) -> str:
    """The group of a death's cause: ``killed`` for every ``killed by NAME#ID``; other
    causes (starvation, wounds, struck down by the operator, an operator's own words) as
    they are, with particulars replaced."""
    if cause.startswith("killed by "):
        return KILLED
    return normalise_reason(cause)
