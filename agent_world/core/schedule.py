"""Which agents have work this tick, so that a system need not visit every agent to find out.

At 10,000 agents a pass over every agent costs milliseconds even when it does nothing: the
components it reads were pushed out of the CPU's caches by the systems before it. Two
derived indexes spare such passes. Neither is saved; both are rebuilt from components when
missing, so a loaded, resumed or replayed world visits exactly the agents a running one does,
in the same order (ascending id):

- **looks**: the tick each agent's visible set is next refreshed, as buckets by tick
  (``Perception.next_update`` is only ever set at spawn and by the perception system);
- **doing**: what each agent does after the deciding system's pass, grouped by action. No
  system after it starts an action for an agent it is not visiting (actions start when
  decided, or in the agent's own handler), so the agents a later system acts on this tick are
  among these; it still reads each one's action at its visit, as a whole pass would.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_world.core.world import AgentRow, World

__all__ = ["Row", "Schedule"]

Row = tuple[int, "AgentRow"]


class Schedule:
    def __init__(self) -> None:
        self._looks: dict[int, list[int]] | None = None
        self._looks_tick = -1  # the tick whose bucket was taken last
        self._doing: dict[str, list[Row]] = {}
        self._doing_tick = -1

    # -- looks ---------------------------------------------------------------------------

    def looks_due(self, world: World) -> list[int]:
        """Agents whose visible set is due for a refresh this tick, ascending (some may
        have died since they were scheduled)."""
        tick = world.tick
        looks = self._looks
        if looks is None or tick != self._looks_tick + 1:
            looks = self._looks = {}
            for eid, row in world.agents():
                looks.setdefault(max(row.perception.next_update, tick), []).append(eid)
        self._looks_tick = tick
        due = looks.pop(tick, [])
        due.sort()
        return due

    def look_at(self, eid: int, tick: int) -> None:
        """``eid``'s visible set is next refreshed at ``tick``."""
        if self._looks is not None:
            self._looks.setdefault(tick, []).append(eid)

    # -- doing ---------------------------------------------------------------------------

    def decided(self, world: World, doing: dict[str, list[Row]]) -> None:
        """What every agent does once this tick's decisions are made, by action (each
        group ascending); the deciding system's pass hands it over."""
        self._doing = doing
        self._doing_tick = world.tick

    def doing(self, world: World, names: Iterable[str]) -> list[Row]:
        """The agents (ascending) whose action, after this tick's decisions, is one of
        ``names``; every agent when this tick has not been decided yet (a system run on its
        own)."""
        if self._doing_tick != world.tick:
            return world.agents()
        doing = self._doing
        groups = [doing[name] for name in names if name in doing]
        if len(groups) == 1:
            return groups[0]
        found = [pair for group in groups for pair in group]
        found.sort(key=_first)
        return found


def _first(pair: Row) -> int:
    return pair[0]
