"""The population: who lives, by name, personality and team.

``World.population`` indexes the agent entities of the world's store: each living agent's
name (case-insensitive, for lookups and for names not to repeat), how many live of each
personality (immigration reads it every tick, so it is counted, not searched) and the
members of each team. All of it follows from the ``Agent`` and ``Team`` components: it is
rebuilt as the world places the agents on load, never saved.
"""

from __future__ import annotations

from typing import Any

from agent_world.core import components as c

__all__ = ["Population"]


class Population:
    """Lives at ``world.population``. Other modules read ``names``, ``personalities`` and
    ``teams``; the world keeps them through ``add``/``remove``."""

    def __init__(self) -> None:
        self.names: dict[str, int] = {}  # lower-case name -> id
        self.personalities: dict[str, int] = {}  # personality -> living agents (never 0)
        self.teams: dict[str, set[int]] = {}  # team -> living members (never empty)

    def add(self, eid: int, agent: c.Agent, team: c.Team | None) -> None:
        self.names[agent.name.lower()] = eid
        self.personalities[agent.personality] = self.personalities.get(
            agent.personality, 0) + 1
        if team is not None:
            self.teams.setdefault(team.name, set()).add(eid)

    def remove(self, eid: int, agent: c.Agent, team: c.Team | None) -> None:
        self.names.pop(agent.name.lower(), None)
        left = self.personalities[agent.personality] - 1
        if left:
            self.personalities[agent.personality] = left
        else:
            del self.personalities[agent.personality]
        if team is not None:
            members = self.teams[team.name]
            members.discard(eid)
            if not members:
                del self.teams[team.name]

    def find(self, name: str) -> int | None:
        """The living agent called ``name`` (any case), if any."""
        return self.names.get(name.lower())

    def indexes(self) -> dict[str, Any]:
        """The indexes as plain data in a canonical order (for comparing two populations:
        a loaded world's against the one it was saved from)."""
        return {"names": dict(sorted(self.names.items())),
                "personalities": dict(sorted(self.personalities.items())),
                "teams": {t: sorted(m) for t, m in sorted(self.teams.items())}}
