"""Between a running world and its angel: requests out, answers in at the right tick.

``AngelLink`` watches every tick for ``ability_requested`` events (an agent's
request_ability) and hands them to the angel with the names the world already uses and
copies of the asker's neighbourhood. The angel's answer (an ``ability`` or
``ability_refused`` input) comes back through ``deliver`` and enters the world at a tick
fixed when the request was made, not whenever the angel happened to finish:

- with ``angel.wait: world`` at the tick after the request: the world is held until the
  answer is in;
- otherwise, when the angel writes from templates (the same request always gets the same
  ability), ``answer_ticks`` after the request; the world is held at that tick only if the
  angel is not done by then. So a world without an LLM is the same on every machine however
  fast it runs, and a world resumed after a crash asks its open requests again (``reopen``)
  and gets the same answers at the same ticks;
- with an LLM writing (its answers differ from one call to the next anyway), as soon as it
  is ready.

Meanwhile only the asking agent waits (its action ends on the answer or after
``abilities.request_timeout_ticks``). Answers enter in the order their requests were made.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from agent_world.angel.angel import Angel
from agent_world.angel.generators import AbilityRequest, Improvement
from agent_world.core import events as ev
from agent_world.core.loop import TickLoop
from agent_world.core.scene import capture_around
from agent_world.core.world import World
from agent_world.sandbox.check import CheckReport
from agent_world.types import TickReport

__all__ = ["AngelLink", "Sent"]

MAX_REQUEST_TEXT = 200
HOLDER = "angel"


@dataclass(frozen=True, slots=True)
class Sent:
    """A request on its way: the check report to come, and the tick its answer enters the
    world (0: as soon as it is ready)."""

    verdict: Future[CheckReport | None]
    due: int


@dataclass(slots=True)
class _Pending:
    due: int  # the tick the answer enters (0: as soon as it is ready)
    answers: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    done: bool = False


class AngelLink:
    """A TickObserver on the main thread; ``request`` and ``load`` are the operator's."""

    def __init__(self, loop: TickLoop, *, pause_world: bool, dry_runs: int = 1,
                 answer_ticks: int = 0) -> None:
        """``answer_ticks``: ticks after a request its answer enters (0: when ready);
        ``pause_world`` makes it 1 and holds the world until the answer is in."""
        self.angel: Angel | None = None  # set once the angel exists
        self.loop = loop
        self.pause_world = pause_world
        self.dry_runs = dry_runs  # scenes captured for each request
        self.answer_ticks = 1 if pause_world else answer_ticks
        self.aio_loop: asyncio.AbstractEventLoop | None = None  # set while the session runs
        self._lock = threading.Lock()
        self._pending: dict[int, _Pending] = {}  # ticket -> answer to come, in ticket order
        self._next_ticket = 1

    @property
    def world(self) -> World:
        return self.loop.world

    # -- requests (main thread) --------------------------------------------------------------

    def on_tick(self, report: TickReport) -> None:
        for event in report.events:
            if event.get("type") == ev.ABILITY_REQUESTED:
                self._send(AbilityRequest(request=int(event["request"]),
                                          agent=int(event["agent"]), text=str(event["text"])),
                           asked=report.tick)
        self._deliver_due()

    def reopen(self) -> int:
        """Ask again for the requests the world holds open (after a resume: their answers
        were lost with the process that asked); each keeps the tick its answer is due.
        Returns how many were asked."""
        requests = sorted(self.world.abilities.requests.values(), key=lambda r: r["id"])
        for req in requests:
            self._send(AbilityRequest(request=int(req["id"]), agent=int(req["agent"]),
                                      text=str(req["text"])), asked=int(req["tick"]))
        self._deliver_due()
        return len(requests)

    def request(self, text: str) -> Sent:
        """The operator asks for an ability."""
        text = " ".join(text.split())
        if not text or len(text) > MAX_REQUEST_TEXT:
            raise ValueError(f"describe the ability in 1-{MAX_REQUEST_TEXT} characters, e.g. "
                             "/ability \"a bolt of lightning that hurts one agent\"")
        sent = self._send(AbilityRequest(request=0, agent=0, text=text),
                          asked=self.world.tick)
        self._deliver_due()  # between ticks: a hold (wait: world) must start now
        return sent

    def improve(self, name: str, source: str, figures: tuple[str, ...]) -> Sent:
        """The operator asks for a better version of ability ``name``, given how it did."""
        sent = self._send(AbilityRequest(request=0, agent=0, text=f"a better {name}",
                                         improve=Improvement(name, source, figures)),
                          asked=self.world.tick)
        self._deliver_due()
        return sent

    def load(self, source: str, label: str) -> Sent:
        """The operator hands over an ability file: checked like the angel's own work."""
        sent = self._send(AbilityRequest(request=0, agent=0, text=label, source=source,
                                         origin="file"), asked=self.world.tick)
        self._deliver_due()
        return sent

    def _send(self, request: AbilityRequest, *, asked: int) -> Sent:
        if self.angel is None:
            raise RuntimeError("the angel is not attached")
        world = self.world
        due = asked + self.answer_ticks if self.answer_ticks else 0
        with self._lock:
            ticket = self._next_ticket
            self._next_ticket += 1
            self._pending[ticket] = _Pending(due)
        # On the main thread, between ticks: the taken names and copies of neighbourhoods
        # (the asker's first) go with the request as plain data.
        verdict = self.angel.submit(dataclasses.replace(
            request, ticket=ticket, taken=tuple(world.abilities.names()),
            scenes=capture_around(world, request.agent or None, self.dry_runs)))
        return Sent(verdict, due)

    # -- answers -----------------------------------------------------------------------------

    def deliver(self, request: AbilityRequest, type: str, data: dict[str, Any]) -> None:
        """The angel's answer (any thread): into the world now, or kept for its tick."""
        with self._lock:
            pending = self._pending.get(request.ticket)
            if pending is not None and pending.due:
                pending.answers.append((type, data))
                return
        self.world.inbox.submit(type, data, source="angel")

    def done(self, request: AbilityRequest) -> None:
        """Called by the angel's thread after each request is answered."""
        with self._lock:
            pending = self._pending.get(request.ticket)
            if pending is not None:
                pending.done = True
                if not pending.due:
                    del self._pending[request.ticket]
        aio = self.aio_loop
        if aio is not None and aio.is_running():
            aio.call_soon_threadsafe(self._deliver_due)
        else:
            self._deliver_due()

    def _deliver_due(self) -> None:
        """Hand the answers due at the next tick to the inbox, in the order their requests
        were made; hold the loop while one of them is not in yet, and release it after."""
        upcoming = self.world.tick + 1
        waiting = False
        with self._lock:
            for ticket in sorted(self._pending):
                pending = self._pending[ticket]
                if not pending.due or pending.due > upcoming:
                    continue
                if not pending.done:
                    waiting = True
                    break  # later answers wait behind it: the order stays the same
                for type, data in pending.answers:
                    self.world.inbox.submit(type, data, source="angel")
                del self._pending[ticket]
        if waiting:
            self.loop.hold(HOLDER)
        else:
            self.loop.release(HOLDER)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"waiting": len(self._pending),
                    "holding the world": HOLDER in self.loop.holders}
