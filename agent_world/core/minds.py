"""What built-in brains remember beyond their components (rules version 2 on).

- **Unreachable targets.** An agent that could not reach a target (no path, an emptied bush,
  a victim who caught it) leaves it alone for ``UNREACHABLE_TICKS``, so it never repeats a
  failing action without end, and the path search does not run again for the same failure.
- **Abilities the angel taught.** A built-in brain asks the angel with a phrase that names
  its need (``brains.casting``); the request is filed here, and the ability that answers it
  is taught to the asker for that need, even when the answer comes after the request timed
  out (a world running flat out outpaces the angel).
- **When the world may next ask** (``game.ability_requests_per_hour``).

World state: saved with the world (``World.get_state`` key ``minds``, present only once a
brain has remembered something, so worlds that never use it hash as before).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_UNREACHABLE", "UNREACHABLE_TICKS", "Minds"]

UNREACHABLE_TICKS = 1200
"""How long an agent leaves alone a target it could not reach (two minutes at 10 Hz)."""
MAX_UNREACHABLE = 16
"""Targets one agent remembers as unreachable at once (the soonest forgotten goes first)."""


class Minds:
    """Lives at ``world.minds``. Every table is keyed by agent id in insertion order."""

    def __init__(self) -> None:
        self.unreachable: dict[int, dict[int, int]] = {}  # agent -> target -> until tick
        self.taught: dict[int, dict[str, str]] = {}  # agent -> ability -> need
        self.requested: dict[int, dict[str, Any]] = {}  # request id -> {agent, need, tick}
        self.next_request = 0  # first tick a built-in brain may ask the angel again

    # -- unreachable targets -----------------------------------------------------------------

    def avoid(self, agent: int, target: int, until: int) -> None:
        known = self.unreachable.setdefault(agent, {})
        known.pop(target, None)
        known[target] = until
        if len(known) > MAX_UNREACHABLE:
            soonest = min(known, key=lambda t: (known[t], t))
            del known[soonest]

    def avoids(self, agent: int, target: int, tick: int) -> bool:
        known = self.unreachable.get(agent)
        if not known:
            return False
        until = known.get(target)
        if until is None:
            return False
        if until > tick:
            return True
        for stale in [t for t, u in known.items() if u <= tick]:
            del known[stale]
        if not known:
            del self.unreachable[agent]
        return False

    # -- the angel ---------------------------------------------------------------------------

    def asked(self, request: int, agent: int, need: str, tick: int) -> None:
        self.requested[request] = {"agent": agent, "need": need, "tick": tick}

    def answered(self, request: int, ability: str | None, alive: bool) -> str | None:
        """The angel answered ``request`` (with ``ability``, or None for a refusal): the asker
        learns it for its need. Returns the need, or None if no brain asked."""
        asked = self.requested.pop(request, None)
        if asked is None:
            return None
        if ability is not None and alive:
            self.taught.setdefault(int(asked["agent"]), {})[ability] = str(asked["need"])
        return str(asked["need"])

    def abilities_for(self, agent: int, need: str) -> list[str]:
        known = self.taught.get(agent)
        if not known:
            return []
        return [name for name, n in known.items() if n == need]

    def forget(self, agent: int) -> None:
        """An agent died: what it knew dies with it."""
        self.unreachable.pop(agent, None)
        self.taught.pop(agent, None)

    # -- state -------------------------------------------------------------------------------

    def is_empty(self) -> bool:
        return not (self.unreachable or self.taught or self.requested or self.next_request)

    def get_state(self) -> dict[str, Any]:
        return {"unreachable": self.unreachable, "taught": self.taught,
                "requested": self.requested, "next_request": self.next_request}

    def set_state(self, state: Mapping[str, Any] | None) -> None:
        state = state or {}
        self.unreachable = {int(a): {int(t): int(u) for t, u in known.items()}
                            for a, known in state.get("unreachable", {}).items()}
        self.taught = {int(a): {str(n): str(need) for n, need in known.items()}
                       for a, known in state.get("taught", {}).items()}
        self.requested = {int(r): dict(v) for r, v in state.get("requested", {}).items()}
        self.next_request = int(state.get("next_request", 0))
