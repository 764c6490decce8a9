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
