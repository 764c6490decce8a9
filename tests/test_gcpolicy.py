"""The garbage-collection policy: no automatic collections, one between ticks every N."""

from __future__ import annotations

import gc
import weakref

from agent_world.gcpolicy import GcPolicy


class Cycle:
    def __init__(self) -> None:
        self.me = self


def test_collects_only_between_ticks_and_restores_the_collector() -> None:
    assert gc.isenabled()
    policy = GcPolicy(every_ticks=3)
    try:
        assert not gc.isenabled()
        garbage = Cycle()  # only the cycle collector can free it
        ref = weakref.ref(garbage)
        del garbage
        for _ in range(2):
            policy.between_ticks()
        assert ref() is not None and policy.collections == 0
        policy.between_ticks()
        assert ref() is None and policy.collections == 1
        assert policy.stats()["every_ticks"] == 3
    finally:
        policy.close()
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_a_collection_due_in_a_busy_gap_moves_half_an_interval_on() -> None:
    policy = GcPolicy(every_ticks=10)
    try:
        for _ in range(9):
            policy.between_ticks()
        policy.between_ticks(busy=True)  # due now, but the gap holds a fork
        assert policy.collections == 0
        for _ in range(4):
            policy.between_ticks()
        assert policy.collections == 0
        policy.between_ticks()  # five ticks later
        assert policy.collections == 1
        for _ in range(9):
            policy.between_ticks()
        assert policy.collections == 1
        policy.between_ticks()  # and every ten from there: off the busy phase
        assert policy.collections == 2
    finally:
        policy.close()
