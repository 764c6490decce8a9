"""The garbage-collection policy: no automatic collections, one between ticks every N."""

from __future__ import annotations

import gc

from agent_world.gcpolicy import GcPolicy


class Cycle:
    def __init__(self) -> None:
        self.me = self


def test_collects_only_between_ticks_and_restores_the_collector() -> None:
    assert gc.isenabled()
    policy = GcPolicy(every_ticks=3)
    try:
        assert not gc.isenabled()
        for _ in range(2):
            policy.between_ticks()
        assert policy.collections == 0
        Cycle()  # garbage only the cycle collector can free
        before = gc.get_count()[0]
        assert before > 0
        policy.between_ticks()
        assert policy.collections == 1
        assert gc.get_count()[0] < before
        assert policy.stats()["every_ticks"] == 3
    finally:
        policy.close()
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
