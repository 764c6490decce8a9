"""Observations as arrays: the documented ``Observation`` of an agent, flattened into fixed
slots of numbers (a ``gymnasium.spaces.Dict``), with the action mask of that moment.

Keys (docs/evaluation.md, "Reinforcement learning", has the table):

- ``me``: position (0..1 of the map), health (0..1 of its maximum), hunger and energy
  (0..1 of 100), reputation (-1..1), attacked in the last 20 ticks, busy with an action,
  its last action failed, the episode's time gone (0..1);
- ``doing``: the action under way (0 none, else 1 + its index in the action set);
- ``carried``, ``prices``: per item kind (``layout.KINDS``; gold is carried gold);
- ``agents``, ``items``, ``objects``, ``hazards``, ``offers`` and (with capture points)
  ``points``: one row per slot, nearest first, column 0 ``present`` (1 filled, 0 padding),
  positions as offsets (dx, dy) from the agent and Chebyshev distance in tiles;
  ``item_kinds``, ``object_kinds``: each slot's kind (0 empty, else 1 + its index);
- ``action_mask``: 1 for each action of the action set possible now (``actions``).

Every number is clipped to its declared bounds, so an observation is always in its space.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces
from numpy.typing import NDArray

from agent_world.contract.observation import Observation, Offer, Seen, SeenAgent
from agent_world.rl.layout import KINDS, OBJECT_KINDS, VERBS, Layout

__all__ = ["COLUMNS", "View", "empty_observation", "encode", "observation_space"]

BIG = 1e6  # bound of counts that have none of their own (gold, quantities, prices)
ME = ("x", "y", "health", "hunger", "energy", "reputation", "attacked", "busy", "failed",
      "time")
COLUMNS: dict[str, tuple[str, ...]] = {
    "agents": ("present", "dx", "dy", "distance", "health", "feeling", "teammate",
               "attacker"),
    "items": ("present", "dx", "dy", "distance", "qty"),
    "objects": ("present", "dx", "dy", "distance", "stock"),
    "hazards": ("present", "dx", "dy", "distance"),
    "offers": ("present", "expires_in", *(f"gives_{k}" for k in KINDS),
               *(f"wants_{k}" for k in KINDS)),
    "points": ("present", "dx", "dy", "distance", "owner", "claimant", "progress"),
}
"""The columns of each slot group's rows."""
HIDDEN_OBJECTS = frozenset({"hazard", "capture_point"})  # slots of their own


@dataclass(frozen=True, slots=True)
class View:
    """What one agent perceives, cut to the layout's slots: the rows its observation holds
    and its actions' slot indices point at. ``moves`` holds, per direction, the open tile a
    ``move_to`` in it aims at (None: none is open)."""

    obs: Observation
    agents: tuple[SeenAgent, ...]
    items: tuple[Seen, ...]
    objects: tuple[Seen, ...]
    hazards: tuple[Seen, ...]
    offers: tuple[Offer, ...]
    points: tuple[Mapping[str, Any], ...]
    teammates: frozenset[int]
    moves: tuple[tuple[int, int] | None, ...]

    @classmethod
    def of(cls, obs: Observation, layout: Layout,
           moves: tuple[tuple[int, int] | None, ...]) -> View:
        custom = obs.custom
        points = custom.get("capture_points") or ()
        return cls(obs=obs, agents=obs.agents[:layout.agents], items=obs.items[:layout.items],
                   objects=tuple(o for o in obs.objects
                                 if o.kind not in HIDDEN_OBJECTS)[:layout.objects],
                   hazards=tuple(o for o in obs.objects if o.kind == "hazard")[:layout.hazards],
                   offers=obs.offers[:layout.offers], points=tuple(points)[:layout.points],
                   teammates=frozenset(custom.get("teammates") or ()), moves=moves)


def _bounds(layout: Layout, group: str) -> tuple[list[float], list[float]]:
    """Each column's low and high for a slot group."""
    span = float(layout.span)
    table = {"present": (0, 1), "dx": (-span, span), "dy": (-span, span),
             "distance": (0, span), "health": (0, 1), "feeling": (-1, 1), "teammate": (0, 1),
             "attacker": (0, 1), "qty": (0, BIG), "stock": (0, BIG), "expires_in": (0, BIG),
             "owner": (-1, 1), "claimant": (-1, 1), "progress": (0, 1)}
    pairs = [table.get(column, (0, BIG)) for column in COLUMNS[group]]
    return [float(lo) for lo, _hi in pairs], [float(hi) for _lo, hi in pairs]


def _box(low: list[float], high: list[float], rows: int | None = None) -> spaces.Box:
    lo, hi = np.array(low, dtype=np.float32), np.array(high, dtype=np.float32)
    if rows is not None:
        lo, hi = np.tile(lo, (rows, 1)), np.tile(hi, (rows, 1))
    return spaces.Box(lo, hi, dtype=np.float32)


def _groups(layout: Layout) -> dict[str, int]:
    groups = {"agents": layout.agents, "items": layout.items, "objects": layout.objects,
              "hazards": layout.hazards, "offers": layout.offers}
    if layout.points:
        groups["points"] = layout.points
    return groups


def observation_space(layout: Layout, n_actions: int) -> spaces.Dict:
    """The space of ``encode``'s observations."""
    me_low = [0.0] * len(ME)
    me_low[ME.index("reputation")] = -1.0
    kinds = len(KINDS)
    parts: dict[str, spaces.Space[Any]] = {
        "me": _box(me_low, [1.0] * len(ME)),
        "doing": spaces.Discrete(len(VERBS) + 1),
        "carried": _box([0.0] * kinds, [BIG] * kinds),
        "prices": _box([0.0] * kinds, [BIG] * kinds),
    }
    for group, rows in _groups(layout).items():
        parts[group] = _box(*_bounds(layout, group), rows=rows)
    parts["item_kinds"] = spaces.MultiDiscrete(np.full(layout.items, kinds + 1))
    parts["object_kinds"] = spaces.MultiDiscrete(np.full(layout.objects, len(OBJECT_KINDS) + 1))
    parts["action_mask"] = spaces.MultiBinary(n_actions)
    return spaces.Dict(parts)


def _clip(rows: NDArray[np.float32], space: spaces.Space[Any]) -> NDArray[np.float32]:
    assert isinstance(space, spaces.Box)
    return np.clip(rows, space.low, space.high).astype(np.float32)


def _place(obs: Observation, x: int, y: int) -> list[float]:
    me = obs.me
    return [float(x - me.x), float(y - me.y), float(max(abs(x - me.x), abs(y - me.y)))]


def _rows(view: View, layout: Layout) -> dict[str, list[list[float]]]:
    obs = view.obs
    attacker = obs.me.attacked_by.id if obs.me.attacked_by is not None else None
    team = obs.custom.get("team", "")
    progress_of = max(1, int(obs.custom.get("capture_ticks", 1) or 1))

    def side(owner: str) -> float:
        return 0.0 if not owner else (1.0 if owner == team else -1.0)

    return {
        "agents": [[1.0, *_place(obs, a.x, a.y), a.health_pct / 100, a.feeling or 0.0,
                    float(a.id in view.teammates), float(a.id == attacker)]
                   for a in view.agents],
        "items": [[1.0, *_place(obs, i.x, i.y), float(i.qty)] for i in view.items],
        "objects": [[1.0, *_place(obs, o.x, o.y), float(o.stock)] for o in view.objects],
        "hazards": [[1.0, *_place(obs, h.x, h.y)] for h in view.hazards],
        "offers": [[1.0, float(o.expires_in), *(float(o.gives.get(k, 0)) for k in KINDS),
                    *(float(o.wants.get(k, 0)) for k in KINDS)] for o in view.offers],
        "points": [[1.0, *_place(obs, int(p["x"]), int(p["y"])),
                    side(str(p.get("owner", ""))), side(str(p.get("claimant", ""))),
                    float(p.get("progress", 0)) / progress_of] for p in view.points],
    }


def encode(view: View, layout: Layout, space: spaces.Dict,
           mask: NDArray[np.int8]) -> dict[str, Any]:
    """The observation of ``view`` (new arrays every call: callers keep them)."""
    obs, me = view.obs, view.obs.me
    w, h = max(1, layout.width - 1), max(1, layout.height - 1)
    doing = me.doing.split("(", 1)[0] if me.doing else ""
    out: dict[str, Any] = {
        "me": _clip(np.array([
            me.x / w, me.y / h, me.health / me.max_health, me.hunger / 100,
            me.energy / 100, me.reputation, float(me.attacked_by is not None),
            float(me.doing is not None),
            float((me.last_result or "").startswith("failed")),
            obs.tick / layout.episode_ticks], dtype=np.float32), space["me"]),
        "doing": np.int64(VERBS.index(doing) + 1 if doing in VERBS else 0),
        "carried": _clip(np.array([float(me.gold) if k == "gold" else float(me.items.get(k, 0))
                                   for k in KINDS], dtype=np.float32), space["carried"]),
        "prices": _clip(np.array([float(obs.prices.get(k, 0.0)) for k in KINDS],
                                 dtype=np.float32), space["prices"]),
    }
    for group, rows in _rows(view, layout).items():
        if group not in space.spaces:
            continue
        box = space[group]
        assert box.shape is not None
        block = np.zeros(box.shape, dtype=np.float32)
        if rows:
            block[:len(rows)] = rows
        out[group] = _clip(block, box)
    out["item_kinds"] = np.array([KINDS.index(i.kind) + 1 for i in view.items]
                                 + [0] * (layout.items - len(view.items)), dtype=np.int64)
    out["object_kinds"] = np.array([OBJECT_KINDS.index(o.kind) + 1 for o in view.objects]
                                   + [0] * (layout.objects - len(view.objects)),
                                   dtype=np.int64)
    out["action_mask"] = mask.copy()
    return {key: out[key] for key in space.spaces}  # the space's order


def empty_observation(space: spaces.Dict, mask: NDArray[np.int8]) -> dict[str, Any]:
    """The observation of an agent that has left the world (it died): zeros, and only the
    actions ``mask`` allows."""
    out: dict[str, Any] = {}
    for key, sub in space.spaces.items():
        if key == "action_mask":
            out[key] = mask.copy()
        elif isinstance(sub, spaces.Discrete):
            out[key] = np.int64(0)
        else:
            assert sub.shape is not None and sub.dtype is not None
            out[key] = np.zeros(sub.shape, dtype=sub.dtype)
    return out
