"""The entity store: private esper contexts, ordered iteration, scoped query caches."""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass
from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_world.core.ecs import EntityStore, UnknownEntityError


@dataclass
class A:
    v: int


@dataclass
class B:
    v: int


def test_stores_are_isolated() -> None:
    s1, s2 = EntityStore(), EntityStore()
    e1 = s1.create(A(1))
    s2.create(A(2), B(3))
    assert [e for e, _ in s1.query(A)] == [e1]
    assert s1.query(A, B) == []
    assert len(s2.query(A, B)) == 1
    s1.close()
    s2.close()


def test_query_is_ordered_by_id_and_cached_until_relevant_change() -> None:
    s = EntityStore()
    ids = [s.create(A(i)) for i in range(50)]
    for e in ids[::3]:
        s.add(e, B(e))
    both = s.query(A, B)
    assert [e for e, _ in both] == sorted(ids[::3])
    assert s.query(A, B) is both  # cached
    s.create(B(99))  # an entity without A cannot change the (A, B) result
    assert s.query(A, B) is both
    s.delete(ids[0])
    assert s.query(A, B) is not both
    assert [e for e, _ in s.query(A, B)] == sorted(ids[3::3])
    s.close()


def test_rows_preserve_creation_order_and_component_order() -> None:
    s = EntityStore()
    e1 = s.create(A(1))
    e2 = s.create(B(2), A(3))
    s.add(e1, B(4))
    rows = s.rows()
    assert [r["id"] for r in rows] == [e1, e2]
    assert list(rows[0]) == ["id", "A", "B"]
    assert list(rows[1]) == ["id", "B", "A"]
    s.close()


def test_restoring_ids_and_next_id() -> None:
    s = EntityStore()
    assert s.create(A(1), eid=5) == 5
    assert s.create(A(2), eid=9) == 9
    assert s.create(A(3)) == 10
    with pytest.raises(ValueError, match="below the next free id"):
        s.create(A(4), eid=3)
    s.set_next_id(20)
    assert s.create(A(5)) == 20
    s.close()


def test_missing_entities_and_components_are_named() -> None:
    s = EntityStore()
    e = s.create(A(1))
    with pytest.raises(UnknownEntityError, match=f"entity {e} has no B"):
        s.get(e, B)
    with pytest.raises(UnknownEntityError, match="entity 999 does not exist"):
        s.get(999, A)
    assert s.try_get(999, A) is None
    assert s.try_get(e, B) is None
    with pytest.raises(UnknownEntityError):
        s.delete(999)
    s.close()


def test_stores_on_two_threads_do_not_mix() -> None:
    results: dict[str, list[int]] = {}

    def work(name: str, n: int) -> None:
        s = EntityStore()
        for i in range(n):
            s.create(A(i))
            if i % 7 == 0:
                s.query(A)
        results[name] = [a.v for _, (a,) in s.query(A)]
        s.close()

    threads = [threading.Thread(target=work, args=(f"t{k}", 300 + k)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        assert results[f"t{k}"] == list(range(300 + k))


@dataclass
class Cc:
    v: int

def _scan(s: EntityStore, q: tuple[type, ...]) -> list[tuple[int, tuple[object, ...]]]:
    """What ``s.query(*q)`` must return, found from scratch."""
    return sorted((eid, tuple(s.get(eid, t) for t in q)) for eid in s.ids()
                  if all(s.has(eid, t) for t in q))


_OPS = st.lists(st.tuples(st.sampled_from(["create", "delete", "add", "remove"]),
                          st.integers(0, 40), st.sampled_from([A, B, Cc])), max_size=80)


@settings(max_examples=150, deadline=None, database=None)
@given(_OPS)
def test_cached_queries_always_equal_a_fresh_scan(ops) -> None:
    """Query results are updated entity by entity; they must match a scan from scratch."""
    s = EntityStore()
    queries = [(A,), (A, B), (B, Cc), (A, B, Cc)]
    held = [s.query(*q) for q in queries]  # results a system could be iterating
    snapshot = [list(r) for r in held]
    try:
        for op, n, comp in ops:
            ids = list(s.ids())
            target = ids[n % len(ids)] if ids else None
            if op == "create":
                s.create(comp(n))
            elif op == "delete" and target is not None:
                s.delete(target)
            elif op == "add" and target is not None:
                s.add(target, comp(n))
            elif op == "remove" and target is not None and s.has(target, comp):
                s.remove(target, comp)
            for q in queries:
                assert s.query(*q) == _scan(s, q)
        assert [list(r) for r in held] == snapshot  # never changed under an iterator
    finally:
        s.close()


def test_many_changes_between_reads_rebuild_the_result() -> None:
    s = EntityStore()
    first = s.query(A)
    ids = [s.create(A(i)) for i in range(300)]
    for eid in ids[::3]:
        s.delete(eid)
    for eid in ids[1::3]:
        s.add(eid, B(eid))
    assert first == []  # handed out earlier, never changed
    assert [e for e, _ in s.query(A)] == [e for e in ids if e not in ids[::3]]
    assert [e for e, _ in s.query(A, B)] == ids[1::3]
    s.close()


@pytest.mark.parametrize("seed", range(20))
def test_bursts_of_changes_between_reads_match_a_fresh_scan(seed: int) -> None:
    """Many changes between two reads of a query (deaths and arrivals in the middle of a
    long result, components added and removed) are applied run by run; the result must
    match a scan from scratch."""
    rng = random.Random(seed)
    s = EntityStore()
    queries = [(A,), (A, B), (B, Cc)]
    try:
        for i in range(200):
            s.create(A(i), B(i) if i % 2 else Cc(i))
        held = [s.query(*q) for q in queries]
        snapshot = [list(r) for r in held]
        for _burst in range(6):
            for _ in range(rng.randint(17, 120)):
                ids = list(s.ids())
                target = rng.choice(ids)
                roll = rng.random()
                if roll < 0.35:
                    s.delete(target)
                elif roll < 0.6:
                    s.create(*((A(0), B(0)) if rng.random() < 0.5 else (Cc(0),)))
                elif roll < 0.8 and not s.has(target, B):
                    s.add(target, B(1))
                elif s.has(target, Cc):
                    s.remove(target, Cc)
            for q in queries:
                assert s.query(*q) == _scan(s, q)
        assert [list(r) for r in held] == snapshot
    finally:
        s.close()


def test_a_query_handle_always_returns_what_query_returns() -> None:
    s = EntityStore()
    try:
        handle = s.handle(A, B)
        assert handle() == [] and handle() is s.query(A, B)
        ids = [s.create(A(i), B(i)) for i in range(40)]
        assert handle() is s.query(A, B) and [e for e, _ in handle()] == ids
        for eid in ids[::2]:
            s.delete(eid)
        s.remove(ids[1], B)
        assert [e for e, _ in handle()] == ids[3::2] and handle() is s.query(A, B)
        s.clear()
        assert handle() == [] and s.query(A, B) == []
        new = s.create(A(1), B(1))
        assert [e for e, _ in handle()] == [new] and handle() is s.query(A, B)
    finally:
        s.close()


class Pair(NamedTuple):
    a: A
    b: B


def test_a_query_with_a_row_maker_gives_named_rows_however_it_is_brought_up_to_date() -> None:
    s = EntityStore()
    s.query(A, B)  # read before the maker was given: rebuilt with it
    first = [s.create(A(i), B(-i)) for i in range(5)]
    handle = s.handle(A, B, row=Pair._make)
    assert all(isinstance(row, Pair) for _e, row in handle())
    assert [row.b.v for _e, row in handle()] == [0, -1, -2, -3, -4]
    s.create(A(9), B(-9))  # a few changes: patched in
    s.delete(first[0])
    assert [row.a.v for _e, row in handle()] == [1, 2, 3, 4, 9]
    more = [s.create(A(100 + i), B(0)) for i in range(40)]  # many: merged
    rows = s.query(A, B)
    assert len(rows) == 45 and all(isinstance(row, Pair) for _e, row in rows)
    assert rows[-1] == (more[-1], Pair(A(139), B(0)))
    with pytest.raises(ValueError, match="has a handle already"):
        s.handle(A, B, row=tuple)
    s.close()
