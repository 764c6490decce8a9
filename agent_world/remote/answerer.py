"""External agents on the decision pipeline (``agent_world.decisions``): the same triggers,
queue, coalescing, deadline, fallback, world-log lines and figures as LLM agents and users'
brains, with a program on the far side of a WebSocket answering.

A client *claims* an agent (a built-in one, or one it spawned with ``brain=remote``). When
the agent should decide, the observation goes to the client as an ``observe`` message with a
request id; the client's ``decide`` for that request, checked by ``as_plan`` like any
brain's answer, becomes a ``plan`` input (source ``remote``), applied at the next tick and
logged, so replay never needs the client. No answer within ``decisions.remote.deadline_ms``, or an
invalid one, leaves the agent on its built-in brain for that decision. A disconnect or a
death releases the agent.

An agent a client spawned counts against that client's address until it dies, claimed or
not: spawning, releasing and spawning again cannot fill the world (``held``). The clients of
one address may also spawn only ``remote.spawns_per_hour`` agents in any hour.

Everything here runs on the main thread: the tick loop's between-ticks hook and the web
server's handlers share the asyncio loop, so no lock is needed.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any, Protocol

from agent_world.config import KindPace, RemoteConfig
from agent_world.contract.decision import DecisionError, as_plan, from_json
from agent_world.contract.observation import observe
from agent_world.core import components as c
from agent_world.core import events as ev
from agent_world.core.inputs import MAX_PLAN
from agent_world.core.world import World
from agent_world.decisions.answerer import Answer, Answering, Fault, Pace, Reply
from agent_world.decisions.metrics import percentile
from agent_world.decisions.mind import Mind
from agent_world.decisions.requests import Job, Outcome
from agent_world.remote.protocol import Decide, ProtocolError
from agent_world.types import ENTITY_KEYS, Clock, TickReport

__all__ = ["CLAIMABLE", "Link", "RemoteBrains"]

CLAIMABLE = ("builtin", "remote")  # an LLM's or a user brain's agent has a brain already
MAX_EVENTS = 50  # events kept for one agent's next observation (the newest)
UNBOUNDED = 1 << 30  # the queue is emptied every tick: a deep one is never stale
HOUR_S = 3600.0


class Link(Protocol):
    """One client connection, as the manager sees it."""

    name: str
    address: str  # the client's address (its spawned agents count against it)

    def send(self, message: dict[str, Any]) -> None:
        """Queue a message for the client (never blocks)."""


class RemoteBrains(Answering):
    """The answerer of agents that clients claimed, and what only they have: the clients'
    links and claims, the spawns they asked for, their fault counts. Its requests go out
    on the main thread after each tick (the clients are the workers); each answer arrives
    later as a client's ``decide``."""

    source = "remote"
    label = "remote"

    def __init__(self, cfg: RemoteConfig, world: World, *, settings: KindPace,
                 clock: Clock | None = None) -> None:
        """``settings``: ``decisions.remote`` over ``decisions``."""
        # No agent is remote until a client claims it (``Pipeline.serve``).
        super().__init__(pace=Pace(interval=settings.think_interval_ticks,
                                   min_gap=settings.min_gap_ticks, round_size=UNBOUNDED,
                                   workers=0), clock=clock)
        self.world = world
        self.cfg = cfg
        self.deadline_ms = settings.deadline_ms
        self.deadline_s = settings.deadline_ms / 1000
        self.claims: dict[int, Link] = {}
        self.links: dict[Link, set[int]] = {}
        self._replies: dict[int, Reply] = {}  # agent -> its request sent to its client
        self._events: dict[int, list[dict[str, Any]]] = {}
        # name (lower) -> who asked, the interval it asked for, the tick it asked at
        self._spawning: dict[str, tuple[Link, int | None, int]] = {}
        # Agents spawned for a client, by the address it came from, until they die.
        self.spawned_by: dict[int, str] = {}
        self._spawn_times: dict[str, deque[float]] = {}  # address -> when it spawned
        self.faults: dict[str, int] = {}  # kind -> count
        self.connections = 0  # in all, since start
        self.refused_auth = 0  # connections closed for a missing or wrong token
        self.closed_flooding = 0  # connections closed for sending too much

    # -- connections and claims (the endpoint calls these) ---------------------------------------

    def connect(self, link: Link) -> None:
        self.links[link] = set()
        self.connections += 1

    def disconnect(self, link: Link) -> None:
        """The client went away: its agents return to their built-in brains."""
        for eid in sorted(self.links.pop(link, set())):
            self._release(eid)
        # Its spawns still under way stay expected: the agents they make are its address's
        # (``_spawned``), or a client could spawn and hang up to escape its cap.

    def _interval(self, every_ticks: int | None) -> int:
        return max(every_ticks, self.pace.min_gap) if every_ticks else 0

    def claim(self, link: Link, agent: int, every_ticks: int | None) -> dict[str, Any]:
        """Give ``agent`` to ``link``: the ``claimed`` message; ProtocolError why not."""
        world = self.world
        row = world.store.try_get(agent, c.Agent)
        if row is None or not world.alive(agent):
            raise ProtocolError(f"claim: no living agent #{agent}; /list agents on the "
                                "console (or GET /api/agents) shows them")
        owner = self.claims.get(agent)
        if owner is link:
            raise ProtocolError(f"claim: agent #{agent} is yours already")
        if owner is not None:
            raise ProtocolError(f"claim: agent #{agent} is claimed by another client")
        if row.brain not in CLAIMABLE:
            raise ProtocolError(f"claim: agent #{agent} thinks with {row.brain}; claim a "
                                "built-in agent, or spawn one")
        count = self.held(link, besides=agent)
        if count >= self.cfg.max_agents_per_client:
            raise ProtocolError(f"claim: you hold {count} agents (with those spawned from "
                                "your address that still live), the most "
                                "remote.max_agents_per_client allows; release one first, or "
                                "let the ones you spawned die")
        self.links.setdefault(link, set()).add(agent)
        self.claims[agent] = link
        mind = self.pipeline.serve(agent, interval=self._interval(every_ticks))
        self.pipeline.note(f"remote   {link.name} claims {world.name_of(agent)}#{agent}")
        return {"type": "claimed", "agent": agent, "name": row.name, "tick": world.tick,
                "every_ticks": mind.interval or self.pace.interval}

    def expect_spawn(self, link: Link, name: str, every_ticks: int | None) -> None:
        """``name`` is being spawned for ``link``: claim it when it appears."""
        self._spawning[name.lower()] = (link, every_ticks, self.world.tick)

    def held(self, link: Link, *, besides: int | None = None) -> int:
        """Agents ``link`` plays or is about to (spawns not yet applied), and the agents
        spawned from its address that still live and no one plays (but ``besides``)."""
        coming = sum(1 for asker, _e, _t in self._spawning.values() if asker is link)
        orphans = [eid for eid in self.unclaimed_spawns(link.address) if eid != besides]
        return len(self.links.get(link, ())) + coming + len(orphans)

    def unclaimed_spawns(self, address: str) -> list[int]:
        """Living agents spawned from ``address`` that no client plays now."""
        alive = self.world.alive
        for eid in [e for e in self.spawned_by if not alive(e)]:
            del self.spawned_by[eid]  # a death this manager did not see (a replaced world)
        return [eid for eid, where in self.spawned_by.items()
                if where == address and eid not in self.claims]

    def spawn_refusal(self, link: Link) -> str | None:
        """Why ``link`` may not spawn now (its address spawned its hourly share), or None."""
        times = self._spawn_times.get(link.address)
        if not times:
            return None
        now = self.clock.now()
        while times and now - times[0] >= HOUR_S:
            times.popleft()
        if len(times) < self.cfg.spawns_per_hour:
            return None
        wait = HOUR_S - (now - times[0])
        return (f"{len(times)} agents were spawned from {link.address} in the last hour, the "
                f"most remote.spawns_per_hour allows; the next may come in {wait / 60:.0f} min")

    def spawned_now(self, link: Link) -> None:
        """``link`` asked for a spawn (counted against its address's hourly share)."""
        self._spawn_times.setdefault(link.address, deque()).append(self.clock.now())

    def release(self, link: Link, agent: int) -> None:
        if self.claims.get(agent) is not link:
            raise ProtocolError(f"release: agent #{agent} is not yours")
        self._release(agent)
        link.send({"type": "released", "agent": agent, "reason": "you released it"})

    def _release(self, agent: int) -> None:
        link = self.claims.pop(agent, None)
        if link is not None:
            self.links.get(link, set()).discard(agent)
        self.pipeline.forget(agent)
        self._events.pop(agent, None)
        reply = self._replies.pop(agent, None)
        if reply is not None:
            reply.withdraw()
        if link is not None:
            self.pipeline.note(f"remote   {link.name} lets go of "
                               f"{self.world.name_of(agent)}#{agent}")

    # -- decisions in --------------------------------------------------------------------------

    def decide(self, link: Link, msg: Decide) -> dict[str, Any]:
        """A client's answer: ``accepted`` (a plan input for the next tick) or ``rejected``
        with the reason (the agent then keeps its built-in brain for that decision)."""
        agent, rid = msg.agent, msg.request
        if self.claims.get(agent) is not link:
            raise ProtocolError(f"decide: agent #{agent} is not yours; claim it first")
        reply = self._replies.get(agent)
        if reply is None or reply.job.rid != rid or not reply.open:
            return {"type": "rejected", "agent": agent, "request": rid,
                    "reason": "no open request with that id (it was answered, or given up "
                              f"at the {self.deadline_ms} ms deadline); answer the "
                              "newest observe"}
        del self._replies[agent]
        elapsed = time.perf_counter() - reply.started
        try:
            actions, reasoning = as_plan(from_json(msg.decision), max_actions=MAX_PLAN)
        except DecisionError as exc:
            self.metrics.error("invalid")
            reply(Fault(kind="invalid", error=str(exc), latency_s=elapsed))
            return {"type": "rejected", "agent": agent, "request": rid, "reason": str(exc)}
        self.metrics.answered(elapsed)
        reply(Answer(actions=actions, thought=reasoning, latency_s=elapsed,
                     by={"client": link.name}))
        return {"type": "accepted", "agent": agent, "request": rid,
                "applies_at_tick": self.world.tick + 1}

    # -- the pipeline's hooks --------------------------------------------------------------------

    def on_events(self, tick: int, report: TickReport) -> None:
        refused = []
        for event in report.events:
            kind = event.get("type")
            if kind == ev.SPAWN and event.get("brain") == "remote":
                self._spawned(event)
            elif (kind == ev.INPUT_REJECTED and event.get("source") == self.source
                    and event.get("input") == "spawn"):
                refused.append(str(event.get("reason", "")))
            elif kind == ev.DEATH and event.get("agent") in self.claims:
                eid = int(event["agent"])
                self.spawned_by.pop(eid, None)
                link = self.claims[eid]
                self._release(eid)
                link.send({"type": "released", "agent": eid, "reason": "died", "tick": tick})
                continue
            for key in ENTITY_KEYS:
                named = event.get(key)
                if isinstance(named, int) and named in self.claims:
                    due = self._events.setdefault(named, [])
                    due.append(dict(event))
                    del due[:-MAX_EVENTS]
        self._unspawned(tick, refused)

    def _unspawned(self, tick: int, refused: list[str]) -> None:
        """Spawns asked before this tick that did not happen in it: the world refused them
        (the reason, when one refusal can be told apart)."""
        for name, (link, _every, asked) in list(self._spawning.items()):
            if asked < tick:
                del self._spawning[name]
                if link not in self.links:
                    continue  # it has gone: nobody to tell
                why = f" ({refused[0]})" if len(refused) == 1 else ""
                link.send({"type": "error",
                           "message": f"spawn: {name!r} was not spawned{why}"})

    def _spawned(self, event: dict[str, Any]) -> None:
        asker = self._spawning.pop(str(event.get("name", "")).lower(), None)
        if asker is None:
            return
        link, every, _asked = asker
        # Its client's, even if the client has gone: it counts until it dies.
        self.spawned_by[int(event["agent"])] = link.address
        if link not in self.links:
            return
        try:
            link.send(self.claim(link, int(event["agent"]), every))
        except ProtocolError as exc:
            link.send({"type": "error", "message": str(exc)})

    def late(self, job: Job, waited_s: float) -> Fault:
        """No answer by the deadline: the client hears it was given up."""
        self._replies.pop(job.agent, None)
        self.metrics.error("timeout")
        self.claims[job.agent].send({
            "type": "expired", "agent": job.agent, "request": job.rid,
            "reason": f"no answer within {self.deadline_ms} ms; the agent uses its "
                      "built-in brain for it"})
        return Fault(kind="timeout", latency_s=waited_s,
                     error=f"no answer within {self.deadline_ms} ms "
                           "(decisions.remote.deadline_ms)")

    def prepare(self, eid: int, mind: Mind, rid: int, reasons: tuple[str, ...],
                priority: int) -> Job:
        world = self.world
        message = {"type": "observe", "agent": eid, "request": rid, "tick": world.tick,
                   "reasons": list(reasons), "deadline_ms": self.deadline_ms,
                   "observation": observe(world, eid).to_dict(),
                   "events": self._events.pop(eid, [])}
        return Job(rid=rid, agent=eid, tick=world.tick, priority=priority, reasons=reasons,
                   payload=message, deadline_s=self.deadline_s)

    def answer(self, job: Job, reply: Reply) -> None:
        """Send the request to the agent's client (main thread, after the tick, urgent
        first); its ``decide`` answers it later."""
        link = self.claims.get(job.agent)
        if link is None:
            reply.withdraw()
            return
        self._replies[job.agent] = reply
        link.send(job.payload)

    def on_failed(self, tick: int, outcome: Outcome, mind: Mind) -> bool:
        """Counted per kind; one world-log line for each (the rest are counted)."""
        self.faults[outcome.error_kind] = self.faults.get(outcome.error_kind, 0) + 1
        return self.faults[outcome.error_kind] <= 1

    # -- figures -------------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        m = self.metrics
        figures = m.figures()
        return {
            "clients": len(self.links),
            "connections": self.connections,
            "refused (token)": self.refused_auth,
            "closed (flooding)": self.closed_flooding,
            "agents": len(self.claims),
            "observations": self.pipeline.requests_made,
            "decisions applied": m.applied,
            "fallbacks": m.fallbacks,
            "faults": dict(sorted(self.faults.items())) or "none",
            "waiting for an answer": sum(1 for r in self._replies.values() if r.open),
            "p50": f"{figures['p50_ms']:g} ms",
            "p95": f"{figures['p95_ms']:g} ms",
            "deadline": f"{self.deadline_ms} ms",
            "main thread p99": f"{percentile(list(self.pipeline.main_ms), 0.99):.2f} ms",
        }

    def describe_entity(self, eid: int) -> list[str]:
        """The console's /debug seam: who plays the agent, its state and last decision."""
        link = self.claims.get(eid)
        mind = self.minds.get(eid)
        if link is None or mind is None:
            return []
        reply = self._replies.get(eid)
        waiting = (f"; waiting for request {reply.job.rid}" if reply is not None and reply.open
                   else "")
        lines = [f"played by {link.name}: {self.state_of(eid)}{waiting}; {mind.decisions} "
                 f"decisions, {mind.errors} faults"]
        lines.extend(self.pipeline.last_lines(mind))
        return lines

    def close(self, timeout: float = 0.0) -> None:
        for link in list(self.links):
            self.disconnect(link)
        self.pipeline.close(timeout)
