"""Training runs over HTTP and WebSocket, on the world's own web server.

- ``POST /api/train`` ``{"scenario", "iterations", "episodes", "generator", "from", "code",
  "ticks", "margin", "seed"}`` starts a run (``training.request.prepare`` checks it: 400
  with one line when something is wrong; 507 when it would pass the runs' disk budget,
  ``paths.runs_max_bytes``; 409 while another run is under way) and answers
  ``{"run_id", "out"}``.
- ``WS /ws/train/{run_id}`` sends what the run said so far, then each message as it comes:
  ``step``, ``episode_summary``, ``critique``, ``done`` (and ``error`` if the run could not
  go on). It takes ``{"type": "terminate"}``: the run stops after the episodes under way.
- ``GET /api/train`` lists the runs; ``GET /api/train/{run_id}`` is one run's state and
  lineage; ``GET /api/train/{run_id}/code`` the current best policy's source.

What a request may name is narrow: ``scenario`` is a name, never a path: a built-in scenario
or a ``NAME.yaml`` of ``paths.scenarios`` (``eval.scenario.scenario_by_name``; nothing in the
working folder is ever opened, and an answer never quotes what a file holds); ``from`` is a
policy's name; an episode runs at most ``web.train_max_ticks`` ticks.

The security rules are the viewer's: a POST passes the server's guard (the token when one
is set, JSON, the page's own origin, never on a read-only server), and a WebSocket must come
from the page's origin and may send ``web.messages_per_s`` messages a second (past it, it is
closed with 4429); ``terminate`` is a write, so it needs the token too (the
``Authorization`` header when connecting, or a ``token`` field in the message) and is
refused on a read-only server. A run works in a thread of its own (its episodes in worker
processes, one at a time by default), never on the world's loop. When the world stops, its
runs stop with it: their episodes' process groups get SIGTERM, then SIGKILL; a world killed
outright takes them along too (each episode process dies with its parent, ``lifeline``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import secrets
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import WSMsgType, web

from agent_world.config import ConfigError
from agent_world.eval.runner import STOP_GRACE_S
from agent_world.eval.scenario import SCENARIO_NAME, scenario_by_name
from agent_world.policies import PolicyError
from agent_world.policies.policy import NAME_PATTERN
from agent_world.ratelimit import TokenBucket
from agent_world.runs import RunRefused, prune_runs
from agent_world.training.request import TrainRequest, prepare
from agent_world.training.trainer import Message, Trainer, TrainError
from agent_world.web import api

if TYPE_CHECKING:
    from agent_world.web.server import WebServer

__all__ = ["TrainingRuns"]

HISTORY = 2000  # messages a run keeps for late watchers
WATCHER_QUEUE = 1000
MAX_RUNS = 20  # finished runs remembered
FLOOD_CLOSE = 4429  # more messages than web.messages_per_s allows (as on /ws)
REQUEST_KEYS = {"scenario", "iterations", "episodes", "generator", "from", "code", "ticks",
                "margin", "seed"}


def _unheard(_message: Message) -> None:
    """What a finished run's trainer says to (nobody: it says nothing more)."""


class Run:
    def __init__(self, run_id: str, trainer: Trainer, stop: threading.Event) -> None:
        self.run_id = run_id
        self.trainer = trainer
        self.stop = stop
        self.history: deque[Message] = deque(maxlen=HISTORY)
        self.watchers: set[asyncio.Queue[Message | None]] = set()
        self.state = "running"  # running | done | stopped | failed
        self.thread: threading.Thread | None = None
        self.aborted = False  # stopped with the world: its episodes were ended

    def publish(self, message: Message) -> None:
        """On the event loop: keep it and pass it to every watcher (a full one loses it)."""
        self.history.append(message)
        if message["type"] == "done":  # said before the run's thread returns
            self.state = "stopped" if message.get("stopped") else "done"
        elif message["type"] == "error":
            self.state = "failed"
        for queue in list(self.watchers):
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(message)
        if message["type"] in ("done", "error"):
            for queue in list(self.watchers):
                with contextlib.suppress(asyncio.QueueFull):
                    queue.put_nowait(None)

    def describe(self) -> dict[str, Any]:
        t = self.trainer
        best = t.best
        return {"run_id": self.run_id, "state": self.state, "scenario": t.scenario.name,
                "generator": t.generator.name, "iterations": t.iterations,
                "episodes": len(t.seeds), "out": str(t.out),
                "best": None if best is None else {"name": best.name, "score": best.score},
                "versions": [v.row() for v in t.versions]}


class TrainingRuns:
    """The runs one web server started."""

    def __init__(self, server: WebServer) -> None:
        self.server = server
        self.runs: dict[str, Run] = {}
        self.closed_flooding = 0  # watchers closed for sending too much
        self.preparing = False  # a POST is checking its run

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post("/api/train", self._start)
        app.router.add_get("/api/train", self._list)
        app.router.add_get("/api/train/{run_id}", self._one)
        app.router.add_get("/api/train/{run_id}/code", self._code)
        app.router.add_get("/ws/train/{run_id}", self._watch)

    def _run(self, request: web.Request) -> Run:
        run = self.runs.get(request.match_info["run_id"])
        if run is None:
            raise web.HTTPNotFound(reason=f"no training run {request.match_info['run_id']!r} "
                                          "(GET /api/train lists them)")
        return run

    # -- HTTP ----------------------------------------------------------------------------

    async def _start(self, request: web.Request) -> web.StreamResponse:
        if self.preparing or any(run.state == "running" for run in self.runs.values()):
            return api.error(409, "a training run is under way; watch it, terminate it "
                                  "(WS /ws/train/ID) or wait for it to end")
        try:
            body = orjson.loads(await request.read())
        except orjson.JSONDecodeError as exc:
            return api.error(400, f"the body is not JSON: {exc}")
        config = self.server.session.config
        try:
            train = _request(body, max_ticks=config.web.train_max_ticks)
            # Names only: a built-in scenario or one of paths.scenarios, never a path.
            scenario = scenario_by_name(train.scenario, config.paths.scenarios)
        except ValueError as exc:
            return api.error(400, str(exc))
        run_id = secrets.token_hex(6)
        out = Path(config.paths.runs) / f"{train.scenario}-{run_id}"
        loop = asyncio.get_running_loop()
        stop = threading.Event()
        holder: list[Run] = []

        def said(message: Message) -> None:  # on the run's thread
            _tell(loop, holder[0].publish, message)

        self.preparing = True  # off the loop (it reads the runs' sizes): one at a time
        try:
            trainer = await asyncio.to_thread(
                prepare, train, config, out, on_message=said, stop=stop, scenario=scenario,
                max_ticks=config.web.train_max_ticks)
        except RunRefused as exc:
            return api.error(507, str(exc))
        except (ConfigError, ValueError, PolicyError) as exc:
            return api.error(400, str(exc))
        except OSError as exc:
            return api.error(503, f"the run could not be prepared: {exc.strerror or exc}")
        finally:
            self.preparing = False
        run = Run(run_id, trainer, stop)
        holder.append(run)
        self.runs[run_id] = run
        self._forget_old()
        run.thread = threading.Thread(target=self._work, args=(run, loop),
                                      name=f"train-{run_id}", daemon=True)
        run.thread.start()
        return api.json_response({"run_id": run_id, "out": str(out),
                                  "watch": f"/ws/train/{run_id}",
                                  "code": f"/api/train/{run_id}/code"}, status=202)

    def _work(self, run: Run, loop: asyncio.AbstractEventLoop) -> None:
        """The run's thread. Its state changes with its last message, on the loop; then
        retention prunes old runs (the world log says which went)."""
        try:
            run.trainer.run()
        except TrainError as exc:
            _tell(loop, run.publish, {"type": "error", "error": str(exc)})
        except Exception as exc:  # reported to the watchers, never raised into the world
            _tell(loop, run.publish, {
                "type": "error", "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
        finally:
            # The trainer's ``on_message`` reaches this run through ``holder``: a cycle that,
            # frozen by the world's collector policy (gcpolicy.py), only a sweep of the
            # whole heap would free once the run is forgotten. Every message is on its
            # way by now (each bound its ``publish`` when said).
            run.trainer.on_message = _unheard
        if run.aborted:
            return  # the world is stopping: retention runs at its next start
        for line in prune_runs(self.server.session.config.paths, spare=run.trainer.out):
            _tell(loop, self._note, line)

    def _note(self, line: str) -> None:
        session = self.server.session
        session.world_log.note(session.world.tick, line)

    def _forget_old(self) -> None:
        finished = [k for k, r in self.runs.items() if r.state != "running"]
        for key in finished[:max(0, len(finished) - MAX_RUNS)]:
            del self.runs[key]

    async def _list(self, _request: web.Request) -> web.StreamResponse:
        return api.json_response({"runs": [{k: v for k, v in run.describe().items()
                                            if k != "versions"}
                                           for run in self.runs.values()]})

    async def _one(self, request: web.Request) -> web.StreamResponse:
        return api.json_response(self._run(request).describe())

    async def _code(self, request: web.Request) -> web.StreamResponse:
        run = self._run(request)
        best = run.trainer.best
        if best is None:
            return api.error(409, "the starting policy is still being checked and evaluated; "
                                  "ask again shortly")
        return api.json_response({"run_id": run.run_id, "name": best.name,
                                  "version": best.version, "parent": best.parent,
                                  "score": best.score, "source": best.source})

    # -- WebSocket -----------------------------------------------------------------------

    async def _watch(self, request: web.Request) -> web.StreamResponse:
        server = self.server
        run = self._run(request)
        if not server.same_origin(request):
            return api.error(403, f"origin {request.headers.get('Origin')!r} is not this "
                                  "server's")
        ws = web.WebSocketResponse(compress=False, max_msg_size=4096, heartbeat=30)
        if not ws.can_prepare(request).ok:
            return api.error(400, "/ws/train/ID is a WebSocket: connect with a WebSocket "
                                  "client (docs/api.md)")
        await ws.prepare(request)
        may_write = server.authorized(request)
        queue: asyncio.Queue[Message | None] = asyncio.Queue(maxsize=WATCHER_QUEUE)
        for message in run.history:
            await ws.send_bytes(orjson.dumps(message))
        finished = run.state != "running" and any(
            m["type"] in ("done", "error") for m in run.history)
        if finished:
            await ws.close()
            return ws
        run.watchers.add(queue)
        sender = asyncio.create_task(self._send(ws, queue))
        rate = server.session.config.web.messages_per_s
        bucket = TokenBucket(rate, clock=asyncio.get_running_loop().time)
        try:
            async for msg in ws:
                if not bucket.take():
                    self.closed_flooding += 1
                    why = f"flooding: more than {rate:g} messages a second (web.messages_per_s)"
                    with contextlib.suppress(ConnectionError):
                        await ws.send_bytes(orjson.dumps({"type": "error", "error": why}))
                    await ws.close(code=FLOOD_CLOSE, message=why.encode()[:120])
                    break
                if msg.type != WSMsgType.TEXT:
                    continue
                reply = self._on_message(run, msg.data, may_write)
                if reply is not None:
                    await ws.send_bytes(orjson.dumps(reply))
        finally:
            run.watchers.discard(queue)
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sender
        return ws

    @staticmethod
    async def _send(ws: web.WebSocketResponse, queue: asyncio.Queue[Message | None]) -> None:
        while True:
            message = await queue.get()
            if message is None:
                await ws.close()
                return
            await ws.send_bytes(orjson.dumps(message))

    def _on_message(self, run: Run, text: str, may_write: bool) -> Message | None:
        try:
            msg = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            return {"type": "error", "error": f"not JSON: {exc}"}
        kind = msg.get("type") if isinstance(msg, dict) else None
        if kind != "terminate":
            return {"type": "error", "error": f"unknown message type {kind!r}; this socket "
                                              "takes only {\"type\": \"terminate\"}"}
        server = self.server
        if server.read_only:
            return {"type": "error", "error": "this world is served read-only "
                                              "(web.read_only); terminate is refused"}
        token = msg.get("token")
        if not may_write and not (server.token is not None and isinstance(token, str)
                                  and hmac.compare_digest(token.encode(),
                                                          server.token.encode())):
            return {"type": "error", "error": "terminate needs the access token: connect "
                                              "with 'Authorization: Bearer TOKEN' or send "
                                              "it as \"token\""}
        run.stop.set()
        return {"type": "terminating", "run_id": run.run_id}

    def close(self, grace_s: float = STOP_GRACE_S) -> None:
        """Stop every run now (the world is stopping): no new episode starts, and the
        episodes under way are ended, their process groups sent SIGTERM then SIGKILL after
        ``grace_s``; then each run's thread has ``grace_s`` to say it stopped."""
        running = [run for run in self.runs.values() if run.state == "running"]
        for run in running:
            run.aborted = True
            run.trainer.abort(grace_s)
        for run in running:
            if run.thread is not None:
                run.thread.join(grace_s)


def _tell(loop: asyncio.AbstractEventLoop, callback: Callable[[Any], None],
          value: Any) -> None:
    """From the run's thread: ``callback(value)`` on the loop, unless the loop is gone (the
    world stopped while the run was ending: nobody is left to tell)."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(callback, value)


def _request(body: Any, *, max_ticks: int) -> TrainRequest:
    if not isinstance(body, dict):
        raise ValueError("send a JSON object: {\"scenario\": ..., \"iterations\": ..., "
                         "\"episodes\": ...}")
    unknown = sorted(set(body) - REQUEST_KEYS)
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r}; the keys are "
                         f"{', '.join(sorted(REQUEST_KEYS))}")
    scenario = body.get("scenario")
    if not isinstance(scenario, str) or not SCENARIO_NAME.fullmatch(scenario):
        raise ValueError("'scenario' must be a scenario's name: 1-64 of a-z, 0-9, _ and -, "
                         "starting with a letter (foraging, market ...; files are for the "
                         "command line)")
    whole, text, number = (int, "a whole number"), (str, "text"), ((int, float), "a number")
    typed: dict[str, tuple[tuple[Any, str], Any]] = {
        "iterations": (whole, 5), "episodes": (whole, 3), "generator": (text, "templates"),
        "from": (text, None), "code": (text, None), "ticks": (whole, None),
        "margin": (number, 0.02), "seed": (whole, 0)}
    values: dict[str, Any] = {}
    for key, ((kind, said), default) in typed.items():
        value = body.get(key, default)
        if value is not None and (isinstance(value, bool) or not isinstance(value, kind)):
            raise ValueError(f"{key!r} must be {said}, got {value!r:.40}")
        values[key] = value
    ticks = values["ticks"]
    if ticks is not None and not 1 <= ticks <= max_ticks:
        raise ValueError(f"'ticks' {ticks}: an episode started over the web runs 1 to "
                         f"{max_ticks:,} ticks (web.train_max_ticks)")
    start = values.pop("from")
    if start is not None and start.endswith(".py"):
        raise ValueError("'from' must be a policy's name over the web (send a file's source "
                         "as 'code')")
    if start is not None and not NAME_PATTERN.fullmatch(start):
        raise ValueError("'from' must be a policy's name: 2-32 of a-z, 0-9 and _, starting "
                         "with a letter (python main.py policy list shows them)")
    return TrainRequest(scenario=scenario, start=start, workers=1, **values)
