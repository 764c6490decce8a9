"""Tab completion from the live world: command names, agent names, entity ids, kinds and
/spawn options.

prompt_toolkit calls ``get_completions`` on the event loop's thread (the session is built
without ``complete_in_thread``), so reading the world here is safe: no tick runs meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from agent_world.commands.lookup import kind_of
from agent_world.commands.parsing import BRAINS, LIST_GROUPS
from agent_world.config import PERSONALITIES
from agent_world.core.items import ITEMS, OBJECTS

if TYPE_CHECKING:
    from agent_world.app import Session

__all__ = ["MAX_ID_COMPLETIONS", "WorldCompleter"]

MAX_ID_COMPLETIONS = 50
Candidate = tuple[str, str]  # (text, meta shown beside it)

_ENTITY_ARG = {"debug": (1,), "kill": (1,), "give": (1,), "ask": (1,), "say": (1,)}
_SURVEY_OPTIONS = ("personality=", "brain=", "model=", "team=", "area=", "remember=")
_SPAWN_OPTIONS = {"agent": ("personality=", "brain=", "gold="), "item": ("qty=",)}
_OPTION_VALUES = {"personality": PERSONALITIES, "brain": BRAINS}


class WorldCompleter(Completer):
    def __init__(self, session: Session, commands: Iterable[str]) -> None:
        self.session = session
        self.commands = tuple(commands)

    def get_completions(self, document: Document,
                        complete_event: CompleteEvent) -> Iterator[Completion]:
        text = document.text_before_cursor
        words = text.split()
        new_word = not words or text[-1:].isspace()
        current = "" if new_word else words[-1]
        index = len(words) if new_word else len(words) - 1  # 0 is the command itself
        if index == 0:
            typed = current.lower() if current.startswith("/") else f"/{current.lower()}"
            for name in self.commands:
                if f"/{name}".startswith(typed):
                    yield Completion(f"/{name}", start_position=-len(current))
            return
        command = words[0].removeprefix("/").lower()
        candidates = self._arguments(command, index, words, current)
        folded = current.lower()
        for cand, meta in candidates:
            if cand.lower().startswith(folded):
                yield Completion(cand, start_position=-len(current), display_meta=meta)

    # -- argument candidates ---------------------------------------------------------------

    def _arguments(self, command: str, index: int, words: list[str],
                   current: str) -> Iterable[Candidate]:
        if index in _ENTITY_ARG.get(command, ()):
            return self._entities(current)
        if command == "give" and index == 2:
            return ((k, "item") for k in ITEMS)
        if command == "help" and index == 1:
            return ((c, "") for c in self.commands)
        if command == "list" and index == 1:
            return [*((g, "") for g in LIST_GROUPS), *((p, "personality") for p in PERSONALITIES),
                    *((k, "item") for k in ITEMS), *((k, "object") for k in OBJECTS)]
        if command == "spawn":
            return self._spawn(index, words, current)
        if command in ("ask", "survey"):
            return self._talk(command, current)
        if command == "surveys" and index == 1:
            return ((sid, "survey") for sid in self.session.talk.surveys)
        return ()

    def _talk(self, command: str, current: str) -> Iterable[Candidate]:
        """remember=yes|no after an /ask's agent; a /survey's filters and their values."""
        key, eq, _value = current.partition("=")
        key = key.lower()
        if eq:
            values: tuple[str, ...] = ()
            if key == "remember":
                values = ("yes", "no")
            elif command == "survey" and key == "personality":
                values = PERSONALITIES
            elif command == "survey" and key == "brain":
                brains = getattr(self.session, "brains", None)
                values = (*BRAINS, *(brains.names() if brains is not None else ()))
            elif command == "survey" and key == "model":
                values = ("default", *getattr(self.session, "llm_models", {}))
            elif command == "survey" and key == "team":
                values = tuple(sorted(self.session.world.population.teams))
            return ((f"{key}={v}", "") for v in values)
        if not current:
            return ()
        options = _SURVEY_OPTIONS if command == "survey" else ("remember=",)
        return ((o, "option") for o in options)

    def _entities(self, current: str) -> Iterable[Candidate]:
        world = self.session.world
        digits = current.removeprefix("#")
        if (digits.isascii() and digits.isdigit()) or current == "#":
            found: list[Candidate] = []
            for eid in world.store.ids():
                if str(eid).startswith(digits):
                    found.append((f"{current[:1] if current.startswith('#') else ''}{eid}",
                                  f"{world.label(eid)} ({kind_of(world, eid)})"))
                    if len(found) == MAX_ID_COMPLETIONS:
                        break
            return found
        return [(row.agent.name, f"#{eid} {row.agent.personality}") for eid, row in world.agents()]

    def _spawn(self, index: int, words: list[str], current: str) -> Iterable[Candidate]:
        if index == 1:
            return [("agent", ""), *((k, "item") for k in ITEMS),
                    *((k, "object") for k in OBJECTS)]
        kind = words[1].lower() if len(words) > 1 else ""
        family = "agent" if kind == "agent" else "item" if kind in ITEMS else ""
        key, eq, _value = current.partition("=")
        if eq:
            values = _OPTION_VALUES.get(key.lower(), ())
            brains = getattr(self.session, "brains", None)
            if key.lower() == "brain" and brains is not None:
                values = (*values, *brains.names())  # the registered ones, the policies
            return ((f"{key}={v}", "") for v in values)
        return ((o, "option") for o in _SPAWN_OPTIONS.get(family, ()))
