"""The environment's action set: one ``Discrete`` index per concrete action of the world's
action set (``core.actions.ACTIONS``), its arguments given by the slot an index names in the
agent's observation ("attack the agent in slot 2", "pick up the item in slot 0").

An index becomes a plan of validated ``Action`` records, submitted as a ``plan`` input like
any brain's decision. Whether an index is possible now (its slot filled, the goods carried,
the recipe's inputs at hand) is decided once, by ``Choice.args``: the action mask and the
decoding use the same answer. What the world decides (in reach, out of sight) is left to it.
Not in the set: ``say``, ``team_say`` and ``request_ability`` (free text), ``use_ability``
(episodes run without the sandbox), ``give`` and trades other than selling one unit for its
market price.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agent_world.core.actions import Action
from agent_world.core.items import GOLD, ITEMS
from agent_world.rl.layout import KINDS, Layout
from agent_world.rl.observations import View

__all__ = ["DIRECTIONS", "DURATIVE", "Choice", "action_table", "plan_of"]

DIRECTIONS: tuple[tuple[str, int, int], ...] = (
    ("north", 0, -1), ("northeast", 1, -1), ("east", 1, 0), ("southeast", 1, 1),
    ("south", 0, 1), ("southwest", -1, 1), ("west", -1, 0), ("northwest", -1, -1))
DURATIVE = frozenset({"idle", "wander", "rest", "follow"})  # given the step's ticks
FOOD = tuple(k for k in KINDS if ITEMS[k].category == "food")
MEDICINE = tuple(k for k in KINDS if ITEMS[k].heal > 0)
GOODS = tuple(k for k in KINDS if k != GOLD)

Args = dict[str, Any] | str  # an action's arguments, or why it is not possible now


@dataclass(frozen=True, slots=True)
class Choice:
    """One entry of the action set: ``verb`` (an action's name), the ``group`` its index
    points into ("" none, ``direction``, ``agents``, ``items``, ``objects``, ``offers``,
    ``points``, ``kinds``), the ``index`` there, an item ``kind`` for those that need one, and a
    ``label`` ("attack agents[2]")."""

    verb: str
    group: str = ""
    index: int = 0
    kind: str = ""

    @property
    def label(self) -> str:
        if self.group == "direction":
            return f"{self.verb} {DIRECTIONS[self.index][0]}"
        if self.group == "kinds":
            return f"{self.verb} {self.kind}"
        where = f" {self.group}[{self.index}]" if self.group else ""
        if self.verb == "trade_offer":
            return f"sell 1 {self.kind} to{where} for its price in gold"
        return f"{self.verb}{where}"

    def args(self, view: View) -> Args:
        """The arguments of this choice for ``view``, or why it is not possible now."""
        return _ARGS[self.group](self, view)


def action_table(layout: Layout) -> tuple[Choice, ...]:
    """Every choice, in index order: the actions without arguments, the eight directions,
    then per agent slot, item slot, object slot, offer slot, capture point slot and item
    kind."""
    table = [Choice(verb) for verb in ("idle", "wander", "rest", "defend", "eat")]
    table += [Choice("move_to", "direction", d) for d in range(len(DIRECTIONS))]
    for verb in ("attack", "follow", "flee", "steal", "move_to"):
        table += [Choice(verb, "agents", a) for a in range(layout.agents)]
    table += [Choice("trade_offer", "agents", a, kind) for kind in GOODS
              for a in range(layout.agents)]
    table += [Choice("pickup", "items", i) for i in range(layout.items)]
    for verb in ("use", "move_to"):
        table += [Choice(verb, "objects", o) for o in range(layout.objects)]
    for verb in ("trade_accept", "trade_decline"):
        table += [Choice(verb, "offers", m) for m in range(layout.offers)]
    table += [Choice("move_to", "points", p) for p in range(layout.points)]
    table += [Choice("eat", "kinds", kind=kind) for kind in FOOD]
    table += [Choice("use", "kinds", kind=kind) for kind in MEDICINE]
    table += [Choice("drop", "kinds", kind=kind) for kind in KINDS]
    table += [Choice("craft", "kinds", kind=kind) for kind in GOODS]
    return tuple(table)


def mask_of(table: tuple[Choice, ...], view: View) -> NDArray[np.int8]:
    """1 for each choice possible for ``view``, 0 for the rest."""
    return np.array([isinstance(choice.args(view), dict) for choice in table], dtype=np.int8)


def plan_of(choice: Choice, view: View, ticks: int) -> tuple[Action, ...] | str:
    """The plan a choice stands for: its action, then ``idle`` for the rest of the step
    (``ticks``), so that an action that ends early leaves the agent waiting for its next
    step rather than on its built-in brain; or why it is not possible now."""
    args = choice.args(view)
    if isinstance(args, str):
        return f"{choice.label} is not possible now: {args}"
    if choice.verb in DURATIVE:
        return (Action(name=choice.verb, args={**args, "ticks": ticks}),)
    return (Action(name=choice.verb, args=args), Action(name="idle", args={"ticks": ticks}))


# -- each group's arguments -------------------------------------------------------------------


def _plain(choice: Choice, view: View) -> Args:
    if choice.verb == "eat" and not any(view.obs.me.items.get(k, 0) for k in FOOD):
        return "no food carried"
    return {}


def _direction(choice: Choice, view: View) -> Args:
    tile = view.moves[choice.index]
    if tile is None:
        return f"no open tile to the {DIRECTIONS[choice.index][0]}"
    return {"x": tile[0], "y": tile[1]}


def _agent(choice: Choice, view: View) -> Args:
    if choice.index >= len(view.agents):
        return f"agents[{choice.index}] is empty"
    target = view.agents[choice.index].id
    if choice.verb != "trade_offer":
        return {"target": target}
    if view.obs.me.items.get(choice.kind, 0) < 1:
        return f"no {choice.kind} carried"
    price = max(1, round(view.obs.prices.get(choice.kind, ITEMS[choice.kind].value)))
    return {"target": target, "give": {choice.kind: 1}, "want": {GOLD: price}}


def _item(choice: Choice, view: View) -> Args:
    if choice.index >= len(view.items):
        return f"items[{choice.index}] is empty"
    return {"target": view.items[choice.index].id}


def _object(choice: Choice, view: View) -> Args:
    if choice.index >= len(view.objects):
        return f"objects[{choice.index}] is empty"
    seen = view.objects[choice.index]
    if choice.verb == "use" and seen.stock <= 0 and seen.kind != "shelter":
        return f"objects[{choice.index}] ({seen.kind}) has nothing to harvest"
    return {"target": seen.id}


def _offer(choice: Choice, view: View) -> Args:
    if choice.index >= len(view.offers):
        return f"offers[{choice.index}] is empty"
    return {"offer": view.offers[choice.index].id}


def _point(choice: Choice, view: View) -> Args:
    # By its tile, not its id: a capture point is known wherever it is, not only in sight.
    if choice.index >= len(view.points):
        return f"points[{choice.index}] is empty"
    point = view.points[choice.index]
    return {"x": int(point["x"]), "y": int(point["y"])}


def _kind(choice: Choice, view: View) -> Args:
    me, kind = view.obs.me, choice.kind
    if choice.verb == "craft":
        recipe = view.obs.custom.get("recipes", {}).get(kind)
        if recipe is None:
            return f"no recipe makes {kind} in this world"
        short = sorted(k for k, n in recipe.items() if me.items.get(k, 0) < n)
        if short:
            return f"{kind} needs {', '.join(short)}"
        return {"item": kind}
    held = me.gold if kind == GOLD else me.items.get(kind, 0)
    if held < 1:
        return f"no {kind} carried"
    return {"item": kind, "qty": 1} if choice.verb == "drop" else {"item": kind}


_ARGS: dict[str, Callable[[Choice, View], Args]] = {
    "": _plain, "direction": _direction, "agents": _agent, "items": _item,
    "objects": _object, "offers": _offer, "points": _point, "kinds": _kind}
