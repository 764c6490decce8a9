"""The angel: writes, checks and hands over new abilities, on a thread of its own.

For each request: the generator writes a source; the checker gates, compiles and dry-runs it
in scratch worlds (with its own worker process); a failure is fed back for the next try, up
to ``angel.max_tries``. An accepted ability goes to the world as an ``ability`` input (name,
full source, sha256, metadata) through the inbox, so the event log alone reproduces it; a
request that cannot be met gets an ``ability_refused`` input (agents' requests) or a
message (the operator's). The angel never touches world state.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from agent_world.angel.generators import AbilityRequest, CannotWrite, Generator
from agent_world.config import Config
from agent_world.core.inbox import Inbox
from agent_world.sandbox.check import AbilityChecker, CheckReport

__all__ = ["Angel"]


Deliver = Callable[[AbilityRequest, str, dict[str, Any]], None]
"""Hands one answer (an input type and its data) for a request to the world."""


class Angel:
    """Takes requests from any thread; answers through ``deliver`` (by default straight into
    ``inbox``; the session's link holds answers until the tick they are due).

    ``on_done`` is called (from the angel's thread) after each request is answered, so the
    session can resume a world it paused; ``report`` carries messages for the operator."""

    def __init__(self, config: Config, inbox: Inbox, generator: Generator, *,
                 on_done: Callable[[AbilityRequest], None] | None = None,
                 report: Callable[[str], None] | None = None,
                 deliver: Deliver | None = None) -> None:
        self.config = config
        self.inbox = inbox
        self.generator = generator
        self._deliver: Deliver = deliver or (
            lambda _request, type, data: inbox.submit(type, data, source="angel"))
        self._on_done = on_done
        self._report = report or (lambda _message: None)
        self._queue: queue.SimpleQueue[tuple[AbilityRequest, Future[CheckReport | None]] | None]
        self._queue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._open = 0  # requests submitted and not yet answered
        self._issued: set[str] = set()  # names handed to the world (it may not have them yet)
        self.requests = 0
        self.generated = 0
        self.accepted = 0
        self.refused = 0
        self.rejected: Counter[str] = Counter()
        self.busy = False
        self.last_error: str | None = None
        self._thread = threading.Thread(target=self._run, name="angel", daemon=True)
        self._thread.start()

    def submit(self, request: AbilityRequest) -> Future[CheckReport | None]:
        """Queue a request. The future holds the accepted ability's check report once its
        input is in the inbox, or the last failing report (None if nothing was written)
        when the request could not be met."""
        done: Future[CheckReport | None] = Future()
        with self._lock:
            self.requests += 1
            self._open += 1
        self._queue.put((request, done))
        return done

    def pending(self) -> int:
        """Requests not answered yet."""
        return self._open

    def wait_idle(self, timeout: float) -> bool:
        """Block until every submitted request is answered (its input is in the inbox);
        False if that takes longer than ``timeout`` seconds."""
        with self._idle:
            return self._idle.wait_for(lambda: self._open == 0, timeout)

    def close(self, timeout: float = 10.0) -> bool:
        """Stop after the request in hand (if any) and release the generator on the angel's
        thread. Returns False if the thread is still busy after ``timeout`` seconds (a slow
        model): it is a daemon thread and is abandoned; nothing it would still send can reach
        a stopped world."""
        self._queue.put(None)
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def stats(self) -> dict[str, Any]:
        """Requests, sources written, accepted, rejected by reason, refused, pending."""
        with self._lock:
            out: dict[str, Any] = {
                "generator": self.generator.name, "requests": self.requests,
                "generated": self.generated, "accepted": self.accepted,
                "rejected": dict(self.rejected), "refused": self.refused,
                "pending": self._open}
            if self.last_error is not None:
                out["last_error"] = self.last_error
            fallbacks = getattr(self.generator, "fallbacks", None)  # FallbackGenerator's
            if fallbacks is not None:
                out["written by the fallback"] = fallbacks
            return out

    # -- the thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        checker: AbilityChecker | None = None
        try:
            while True:
                item = self._queue.get()
                if item is None:
                    return
                request, done = item
                self.busy = True
                verdict: CheckReport | None = None
                try:
                    if checker is None:
                        checker = AbilityChecker(self.config)
                    verdict = self._handle(request, checker)
                except Exception as exc:  # report, answer, keep serving
                    self.last_error = f"{type(exc).__name__}: {exc}"
                    self._refuse(request, f"the angel failed: {self.last_error}")
                finally:
                    # The link first: whoever hears the verdict (the console's "enters the
                    # world at tick N") or sees the angel idle may count on the answer
                    # being on its way into the world.
                    try:
                        if self._on_done is not None:
                            self._on_done(request)
                    finally:
                        done.set_result(verdict)
                        self.busy = False
                        with self._idle:
                            self._open -= 1
                            self._idle.notify_all()
        finally:
            # On this thread: the generator's connections and event loop live here.
            try:
                close = getattr(self.generator, "close", None)  # an older generator may lack it
                if callable(close):
                    close()
            finally:
                if checker is not None:
                    checker.close()

    def _handle(self, request: AbilityRequest, checker: AbilityChecker) -> CheckReport | None:
        taken = set(request.taken) | self._issued
        request = dataclasses.replace(request, taken=tuple(sorted(taken)))
        if request.source is not None:
            return self._check_given(request, checker)
        feedback: list[str] = []
        last: CheckReport | None = None
        for _attempt in range(self.config.angel.max_tries):
            try:
                source = self.generator.write(request, feedback)
            except CannotWrite as exc:  # said plainly: no point trying again
                self._refuse(request, str(exc))
                return last
            except Exception as exc:  # a failing writer (an LLM that timed out ...)
                with self._lock:
                    self.rejected["writer"] += 1
                feedback.append(f"the writer failed: {type(exc).__name__}: {exc}")
                continue
            with self._lock:
                self.generated += 1
            report = last = checker.check(source, taken=taken, scenes=request.scenes)
            if report.accepted:
                self._hand_over(request, report, "angel" if request.agent else "operator")
                asker = f"agent #{request.agent}" if request.agent else "the operator"
                self._report(f"angel: wrote {report.name} for {asker}: {report.description}")
                return report
            with self._lock:
                self.rejected[report.category or report.verdict] += 1
            feedback.append(report.line())
        self._refuse(request, f"no acceptable ability after {len(feedback)} tries; last: "
                              f"{feedback[-1] if feedback else 'nothing written'}")
        return last

    def _check_given(self, request: AbilityRequest, checker: AbilityChecker) -> CheckReport:
        """A source the operator wrote: checked once, handed over as it is or refused."""
        assert request.source is not None
        report = checker.check(request.source, taken=request.taken, scenes=request.scenes)
        if report.accepted:
            self._hand_over(request, report, request.origin or "operator")
            self._report(f"angel: loaded {report.name} from {request.text}: "
                         f"{report.description}")
        else:
            with self._lock:
                self.rejected[report.category or report.verdict] += 1
            self._report(f"angel: refused {request.text}: {report.line()}")
        return report

    def _hand_over(self, request: AbilityRequest, report: CheckReport, origin: str) -> None:
        """The accepted ability enters the world as an input holding its whole source."""
        assert report.meta is not None
        self._issued.add(report.meta.name)
        self._deliver(request, "ability", {
            "name": report.meta.name, "source": report.source, "sha256": report.digest,
            "meta": report.meta.to_dict(), "request": request.request, "origin": origin,
        })
        with self._lock:
            self.accepted += 1

    def _refuse(self, request: AbilityRequest, reason: str) -> None:
        with self._lock:
            self.refused += 1
        if request.request:
            self._deliver(request, "ability_refused", {"request": request.request,
                                                       "reason": reason[:300]})
        self._report(f"angel: refused {request.text!r:.60}: {reason}")
