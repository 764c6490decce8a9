"""Memory stays flat under connection churn (issue 36, item 1).

A real world process (``python main.py --headless --no-save``, its web server and
``/agents``) and a real client that connects, subscribes, claims and leaves in a loop. After
idle gaps the world's resident memory stays within a stated bound: growth under 1 MB over
16,000 connections, counted from after a warm-up of 12,000 connections and 700 idle ticks
(``python -m bench --only churn`` runs 50,000: +0.7 MB, about what the world grows by itself
in as many ticks; the same loop against the old policy grew +15 MB). In the
warm-up the world's rings fill. A closed connection leaves no reference cycle (the web
server breaks them: agent_world/web/guard.py), so it is freed at once and no sweep of the
whole heap is ever needed for it. The old policy (collect, then freeze all that survives,
after every tick) kept every connection open at a tick, cycles and all, for good, and grew
all along.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from bench.churn import TICK_RATE, WARMUP_TICKS, churn, idle_rss, world_process

CONNECTIONS = 16_000
BOUND_KB = 1024  # the old policy: ~15,000 KB here
WARMUP_ROUNDS = 6_000  # two connections each


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(),
                    reason="resident memory is read from /proc (Linux)")
def test_resident_memory_stays_flat_under_connection_churn(tmp_path: Path) -> None:
    async def scenario() -> None:
        # 50 Hz: five times as many ticks (and collections) while connections are open as
        # at the default rate, so more of them are caught open at a tick.
        with world_process(tmp_path, {"world": {"tick_rate": TICK_RATE}}) as world:
            async with aiohttp.ClientSession() as http:
                await churn(http, world.url, WARMUP_ROUNDS)
                await idle_rss(http, world, ticks=WARMUP_TICKS)
                before, _memory = await idle_rss(http, world)
                made = 0
                readings = []
                while made < CONNECTIONS:
                    made += await churn(http, world.url, 2_000)
                    after, memory = await idle_rss(http, world)
                    readings.append((made, after - before, memory))
                growth = readings[-1][1]
                assert growth < BOUND_KB, (
                    f"resident memory grew {growth} KB over {made:,} connections (bound "
                    f"{BOUND_KB} KB); readings (connections, KB, memory): {readings}; "
                    f"world said: {''.join(world.said)[-1500:]}")
                # Nothing waited for a sweep: a closed connection leaves no reference cycle
                # (web/guard.py, ``unlink``), so reference counting freed each one at once,
                # and the collector never had to walk the whole heap for them.
                assert readings[-1][2]["closed connections held"] == 0
                assert readings[-1][2]["sweeps"] == 0
                assert world.proc.poll() is None

    asyncio.run(scenario())
