"""Between a running world and its angel: requests out, pausing while it works.

``AngelLink`` watches every tick for ``ability_requested`` events (an agent's
request_ability) and hands them to the angel with the names the world already uses. With
``angel.wait: world`` it pauses the tick loop as soon as a request is out and resumes it when
the last answer is in (the answer is an input, applied at the next tick); with ``requester``
only the asking agent waits, its action kept busy until the answer arrives or times out.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from concurrent.futures import Future
from typing import Any

from agent_world.angel.angel import Angel
from agent_world.angel.generators import AbilityRequest
from agent_world.core.loop import TickLoop
from agent_world.core.scene import capture_around
from agent_world.sandbox.check import CheckReport
from agent_world.types import TickReport

__all__ = ["AngelLink"]

MAX_REQUEST_TEXT = 200


class AngelLink:
    """A TickObserver on the main thread; ``request`` is the operator's /ability."""

    def __init__(self, loop: TickLoop, *, pause_world: bool, dry_runs: int = 1) -> None:
        self.angel: Angel | None = None  # set once the angel exists (it calls back ``done``)
        self.loop = loop
        self.pause_world = pause_world
        self.dry_runs = dry_runs  # scenes captured for each request
        self.aio_loop: asyncio.AbstractEventLoop | None = None  # set while the session runs
        self._lock = threading.Lock()
        self._waiting = 0
        self._paused_by_us = False

    def on_tick(self, report: TickReport) -> None:
        for event in report.events:
            if event.get("type") == "ability_requested":
                self._send(AbilityRequest(request=int(event["request"]),
                                          agent=int(event["agent"]), text=str(event["text"])))

    def request(self, text: str) -> Future[CheckReport | None]:
        """The operator asks for an ability (the world pauses too with ``wait: world``)."""
        text = " ".join(text.split())
        if not text or len(text) > MAX_REQUEST_TEXT:
            raise ValueError(f"describe the ability in 1-{MAX_REQUEST_TEXT} characters, e.g. "
                             "/ability \"a bolt of lightning that hurts one agent\"")
        return self._send(AbilityRequest(request=0, agent=0, text=text))

    def load(self, source: str, label: str) -> Future[CheckReport | None]:
        """The operator hands over an ability file: checked like the angel's own work."""
        return self._send(AbilityRequest(request=0, agent=0, text=label, source=source,
                                         origin="file"))

    def _send(self, request: AbilityRequest) -> Future[CheckReport | None]:
        if self.angel is None:
            raise RuntimeError("the angel is not attached")
        world = self.loop.world
        with self._lock:
            self._waiting += 1
            if self.pause_world and not self.loop.paused:
                self.loop.pause()
                self._paused_by_us = True
        # On the main thread, between ticks: the taken names and copies of neighbourhoods
        # (the asker's first) go with the request as plain data.
        return self.angel.submit(dataclasses.replace(
            request, taken=tuple(world.abilities.names()),
            scenes=capture_around(world, request.agent or None, self.dry_runs)))

    def done(self, _request: AbilityRequest) -> None:
        """Called by the angel's thread after each answer."""
        aio = self.aio_loop
        if aio is not None and aio.is_running():
            aio.call_soon_threadsafe(self._finished)
        else:
            self._finished()

    def _finished(self) -> None:
        with self._lock:
            self._waiting = max(0, self._waiting - 1)
            resume = self._waiting == 0 and self._paused_by_us
            if resume:
                self._paused_by_us = False
        if resume and self.loop.paused:
            self.loop.resume()

    def stats(self) -> dict[str, Any]:
        return {"waiting": self._waiting, "paused_world": self._paused_by_us}
