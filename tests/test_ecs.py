"""The entity store: private esper contexts, ordered iteration, scoped query caches."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest

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
