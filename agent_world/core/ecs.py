"""The entity store: each World's own esper context. No other module touches esper.

esper 3 keeps its worlds in module globals and switches between them with ``switch_world``.
This wrapper gives each store a private context, takes a process-wide lock around every
switch (scratch worlds may live on other threads), and adds what the simulation needs on
top: deterministic iteration in ascending entity id, query results cached and brought up to
date lazily (changed entities are patched in when the query is next read), and an
order-preserving row per entity that a snapshot serialises as is.
"""

from __future__ import annotations

import bisect
import itertools
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import esper

__all__ = ["EntityStore", "QueryHandle", "UnknownEntityError"]

C = TypeVar("C")

# Guards every esper call that switches contexts; reads through ``_entities`` need no switch.
_ESPER_LOCK = threading.RLock()
_store_numbers = itertools.count(1)

if not all(hasattr(esper, name) for name in ("_entities", "_entity_count", "switch_world")):
    raise ImportError(  # pragma: no cover - guards an esper upgrade that changed its internals
        f"esper {getattr(esper, '__version__', '?')} lacks the internals agent_world relies on; "
        "install esper>=3.1,<4"
    )


_PATCH_LIMIT = 16  # pending changes beyond which a cached result is filtered, not patched


def _first(pair: tuple[int, Any]) -> int:
    return pair[0]


class UnknownEntityError(KeyError):
    """An entity id that does not exist in this world (or lacks the asked-for component)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown entity"


def _drop_context(name: str) -> None:
    with _ESPER_LOCK:
        if esper.current_world == name:
            esper.switch_world("default")
        if name in esper.list_worlds():
            esper.delete_world(name)


class EntityStore:
    """Entities and their components, in a private esper context."""

    def __init__(self) -> None:
        self._ctx = f"agent_world.{next(_store_numbers)}"
        with _ESPER_LOCK:
            esper.switch_world(self._ctx)
            # The context's own dict (eid -> {type: component}); stable for its lifetime.
            self._entities: dict[int, dict[type[Any], Any]] = esper._entities
        self._next_id = 1
        self._rows: dict[int, dict[str, Any]] = {}
        self._queries: dict[tuple[type[Any], ...], list[tuple[int, tuple[Any, ...]]]] = {}
        self._query_types: dict[tuple[type[Any], ...], frozenset[type[Any]]] = {}
        self._pending: dict[tuple[type[Any], ...], set[int]] = {}  # changed since last read
        self._handles: dict[tuple[type[Any], ...], QueryHandle] = {}
        # How a query's rows are made (a named record for agents); plain tuples otherwise.
        self._makers: dict[tuple[type[Any], ...], Callable[[Iterable[Any]], tuple[Any, ...]]] = {}
        self._finalizer = weakref.finalize(self, _drop_context, self._ctx)

    # -- structure ------------------------------------------------------------------------

    def _enter(self) -> None:
        if esper.current_world != self._ctx:
            esper.switch_world(self._ctx)

    def _refresh(self, eid: int, types: frozenset[type[Any]]) -> None:
        """Note that ``eid`` changed structure (``types``: its component types before and
        after) for every cached query it can affect; ``query`` applies the changes."""
        for key, qtypes in self._query_types.items():
            if qtypes <= types:
                self._pending[key].add(eid)

    def _catch_up(self, key: tuple[type[Any], ...]) -> list[tuple[int, tuple[Any, ...]]]:
        """The cached result of ``key`` with its pending changes applied, in a new list (one
        a system is iterating is never changed). A few changes are patched in by bisection;
        many are applied by finding each changed entity by bisection, copying the runs of
        the old list between them (slices: no Python step per entry) and merging the
        changed entities back (new ids are the largest, so that is usually an append)."""
        changed = self._pending[key]
        qtypes = self._query_types[key]
        entities = self._entities
        back = []
        make = self._makers.get(key, tuple)
        for eid in sorted(changed):
            comps = entities.get(eid)
            if comps is not None and qtypes <= comps.keys():
                back.append((eid, make(comps[t] for t in key)))
        cached = self._queries[key]
        if len(changed) <= _PATCH_LIMIT:
            updated = cached[:]
            for eid in sorted(changed):
                i = bisect.bisect_left(updated, eid, key=_first)
                if i < len(updated) and updated[i][0] == eid:
                    del updated[i]
            for pair in back:
                updated.insert(bisect.bisect_left(updated, pair[0], key=_first), pair)
        else:
            size = len(cached)
            gone = []
            for eid in sorted(changed):
                i = bisect.bisect_left(cached, eid, key=_first)
                if i < size and cached[i][0] == eid:
                    gone.append(i)
            updated = []
            start = 0
            for i in gone:
                updated += cached[start:i]
                start = i + 1
            updated += cached[start:]
            if back and updated and back[0][0] < updated[-1][0]:
                updated.extend(back)
                updated.sort(key=_first)
            else:
                updated.extend(back)
        changed.clear()
        self._queries[key] = updated
        handle = self._handles.get(key)
        if handle is not None:
            handle.result = updated
        return updated

    def _build(self, key: tuple[type[Any], ...]) -> list[tuple[int, tuple[Any, ...]]]:
        with _ESPER_LOCK:
            self._enter()
            found = list(esper.get_components(*key))
        make = self._makers.get(key)
        if make is not None:
            found = [(eid, make(comps)) for eid, comps in found]
        found.sort(key=_first)
        return found

    def create(self, *components: Any, eid: int | None = None) -> int:
        """Create an entity; ``eid`` restores a saved id (ids only ever grow)."""
        with _ESPER_LOCK:
            self._enter()
            if eid is not None:
                if eid < self._next_id:
                    raise ValueError(f"entity id {eid} is below the next free id {self._next_id}")
                esper._entity_count = itertools.count(eid)
            new = int(esper.create_entity(*components))
        self._next_id = new + 1
        row: dict[str, Any] = {"id": new}
        for comp in components:
            row[type(comp).__name__] = comp
        self._rows[new] = row
        self._refresh(new, frozenset(type(c) for c in components))
        return new

    def delete(self, eid: int) -> None:
        if eid not in self._entities:
            raise UnknownEntityError(f"entity {eid} does not exist")
        types = frozenset(self._entities[eid])
        with _ESPER_LOCK:
            self._enter()
            esper.delete_entity(eid, immediate=True)
        del self._rows[eid]
        self._refresh(eid, types)

    def add(self, eid: int, component: Any) -> None:
        if eid not in self._entities:
            raise UnknownEntityError(f"entity {eid} does not exist")
        before = frozenset(self._entities[eid])
        with _ESPER_LOCK:
            self._enter()
            esper.add_component(eid, component)
        self._rows[eid][type(component).__name__] = component
        self._refresh(eid, before | {type(component)})

    def remove(self, eid: int, component_type: type[C]) -> C:
        comps = self._entities.get(eid)
        if comps is None or component_type not in comps:
            raise UnknownEntityError(f"entity {eid} has no {component_type.__name__}")
        before = frozenset(comps)
        with _ESPER_LOCK:
            self._enter()
            removed: C = esper.remove_component(eid, component_type)
        del self._rows[eid][component_type.__name__]
        self._refresh(eid, before)
        return removed

    def clear(self) -> None:
        with _ESPER_LOCK:
            self._enter()
            esper.clear_database()
        self._rows.clear()
        self._queries.clear()
        self._query_types.clear()
        self._pending.clear()
        self._next_id = 1
        for key, handle in self._handles.items():
            self._queries[key] = handle.result = []
            self._query_types[key] = frozenset(key)
            self._pending[key] = handle.pending = set()

    def close(self) -> None:
        """Release the esper context (also done automatically when the store is collected),
        and let go of every entity and cached query: the store and its query handles hold
        each other, and a closed world's entities must be freed by reference counting, not
        wait for a sweep of the collector's frozen heap (agent_world/gcpolicy.py)."""
        self._finalizer()
        for handle in self._handles.values():
            handle.result = []
            handle.pending = set()
        for table in (self._handles, self._queries, self._rows, self._pending, self._makers,
                      self._query_types):
            table.clear()

    # -- reads ------------------------------------------------------------------------------

    @property
    def next_id(self) -> int:
        return self._next_id

    def set_next_id(self, next_id: int) -> None:
        """Make the next created entity get ``next_id`` (used when restoring a snapshot)."""
        if next_id < self._next_id:
            raise ValueError(f"next id {next_id} is below the next free id {self._next_id}")
        with _ESPER_LOCK:
            self._enter()
            esper._entity_count = itertools.count(next_id)
        self._next_id = next_id

    def __contains__(self, eid: object) -> bool:
        return eid in self._entities

    def __len__(self) -> int:
        return len(self._entities)

    def get(self, eid: int, component_type: type[C]) -> C:
        """The component, or UnknownEntityError naming what is missing."""
        try:
            comp: C = self._entities[eid][component_type]
        except KeyError:
            what = "does not exist" if eid not in self._entities else (
                f"has no {component_type.__name__}")
            raise UnknownEntityError(f"entity {eid} {what}") from None
        return comp

    def try_get(self, eid: int, component_type: type[C]) -> C | None:
        comps = self._entities.get(eid)
        if comps is None:
            return None
        return comps.get(component_type)

    def has(self, eid: int, component_type: type[Any]) -> bool:
        comps = self._entities.get(eid)
        return comps is not None and component_type in comps

    def ids(self) -> Iterator[int]:
        """All entity ids, ascending."""
        return iter(self._rows)

    def components(self, eid: int) -> dict[str, Any]:
        """Name -> component for one entity, in the order they were added."""
        row = self._rows.get(eid)
        if row is None:
            raise UnknownEntityError(f"entity {eid} does not exist")
        return {k: v for k, v in row.items() if k != "id"}

    def rows(self) -> list[dict[str, Any]]:
        """Every entity as ``{"id": eid, ComponentName: component, ...}``, ascending by id.

        The rows are live: serialise them before the next tick changes them."""
        return list(self._rows.values())

    def handle(self, *types: type[Any],
               row: Callable[[Iterable[Any]], tuple[Any, ...]] | None = None) -> QueryHandle:
        """``query(*types)`` kept at hand: calling the handle returns the same list without
        hashing the key (for queries read hundreds of times a tick). ``row`` makes each
        entity's components into its row (a ``NamedTuple``'s ``_make``), for this query
        from now on, however it is read."""
        if row is not None and self._makers.get(types) is not row:
            if types in self._handles:
                raise ValueError(f"query {[t.__name__ for t in types]} has a handle already; "
                                 "give its row maker with the first one")
            self._makers[types] = row
            self._queries.pop(types, None)  # rows made before are rebuilt with it
        found = self._handles.get(types)
        if found is None:
            result = self.query(*types)
            found = self._handles[types] = QueryHandle(self, types, self._pending[types],
                                                       result)
        return found

    def query(self, *types: type[Any]) -> list[tuple[int, tuple[Any, ...]]]:
        """Entities having all ``types``, ascending by id, with those components.

        The returned list is cached and never changed afterwards; treat it as read-only."""
        cached = self._queries.get(types)
        if cached is None:
            cached = self._queries[types] = self._build(types)
            self._query_types[types] = frozenset(types)
            self._pending[types] = set()
        elif self._pending[types]:
            cached = self._catch_up(types)
        return cached


class QueryHandle:
    """A store's cached query, held by whoever reads it often (``EntityStore.handle``)."""

    __slots__ = ("key", "pending", "result", "store")

    def __init__(self, store: EntityStore, key: tuple[type[Any], ...], pending: set[int],
                 result: list[tuple[int, tuple[Any, ...]]]) -> None:
        self.store = store
        self.key = key
        self.pending = pending  # the store's set of changes not yet applied to ``result``
        self.result = result

    def __call__(self) -> list[tuple[int, tuple[Any, ...]]]:
        if self.pending:
            return self.store._catch_up(self.key)
        return self.result
