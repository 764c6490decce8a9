"""The telemetry API's routes: parameters in, JSON out (docs/api.md has an example each).

A bad parameter is a 400 whose message names it and says what it accepts.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterable
from itertools import islice
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web

from agent_world.commands.parsing import Conflict
from agent_world.commands.recent import involves
from agent_world.config import PERSONALITIES
from agent_world.core.metrics import METRICS
from agent_world.persistence.eventlog import LogReader
from agent_world.talk import Filter, FilterError, TalkError
from agent_world.web import views
from agent_world.web.feed import LAYERS, BBox, with_lines

if TYPE_CHECKING:
    from agent_world.web.server import WebServer

__all__ = ["MAX_EVENTS", "ParamError", "add_routes", "error", "json_body", "json_response"]

MAX_EVENTS = 5000
MAX_COMMAND = 2000
MAX_WAIT_S = 30  # the longest an interview request or poll waits for its answer
MAX_LOG_SCAN = 2_000_000  # event-log lines one request may read at most
LINE_KINDS = ("input", "event", "check", "marker")
_ABILITY_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


class ParamError(ValueError):
    """A query parameter that cannot be used; answered with 400 and this message."""


def json_response(data: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS),
                        status=status, content_type="application/json")


def error(status: int, message: str) -> web.Response:
    return json_response({"error": message, "status": status}, status)


def _int(request: web.Request, name: str, default: int | None, *, low: int = 0,
         high: int = 2**62) -> int | None:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    if not re.fullmatch(r"-?[0-9]{1,19}", raw):
        raise ParamError(f"{name} must be a whole number, got {raw!r}")
    value = int(raw)
    if not low <= value <= high:
        raise ParamError(f"{name} must be from {low} to {high}, got {value}")
    return value


def _words(request: web.Request, name: str, allowed: Iterable[str] | None = None
           ) -> list[str] | None:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return None
    words = [w.strip() for w in raw.split(",") if w.strip()]
    if allowed is not None:
        options = list(allowed)
        for word in words:
            if word not in options:
                raise ParamError(f"{name}: unknown value {word!r} (one or more of "
                                 f"{', '.join(options)}, separated by commas)")
    return words


def _bbox(request: web.Request) -> BBox | None:
    raw = request.query.get("bbox")
    if raw is None or raw == "":
        return None
    parts = raw.split(",")
    if len(parts) != 4 or not all(re.fullmatch(r"-?[0-9]{1,9}", p.strip()) for p in parts):
        raise ParamError(f"bbox must be x0,y0,x1,y1 (four whole numbers), got {raw!r}")
    x0, y0, x1, y1 = (int(p) for p in parts)
    if x1 < x0 or y1 < y0:
        raise ParamError(f"bbox must have x0 <= x1 and y0 <= y1, got {raw!r}")
    return BBox(x0, y0, x1, y1)


def _endpoint(read: Callable[[web.Request], Any]) -> Callable[[web.Request], Any]:
    async def handle(request: web.Request) -> web.StreamResponse:
        try:
            result = read(request)
            if asyncio.iscoroutine(result):
                result = await result
        except ParamError as exc:
            return error(400, str(exc))
        if isinstance(result, web.StreamResponse):
            return result
        return json_response(result)
    return handle


def add_routes(app: web.Application, server: WebServer) -> None:
    """Every /api route, bound to ``server``."""
    get = app.router.add_get
    get("/api/state", _endpoint(lambda r: views.state(server)))
    get("/api/map", _endpoint(lambda r: views.terrain(server)))
    get("/api/entities", _endpoint(lambda r: _entities(server, r)))
    get("/api/agents", _endpoint(lambda r: _agents(server, r)))
    get("/api/agents/{id}", _endpoint(lambda r: _agent(server, r)))
    get("/api/stats", _endpoint(lambda r: views.stats(server.console)))
    get("/api/metrics", _endpoint(lambda r: _metrics(server, r)))
    get("/api/agent_metrics", _endpoint(lambda r: _agent_metrics(server, r)))
    get("/api/abilities", _endpoint(lambda r: _abilities(server)))
    get("/api/abilities/{name}", _endpoint(lambda r: _ability(server, r)))
    get("/api/events", _endpoint(lambda r: _events(server, r)))
    get("/api/log", _endpoint(lambda r: _log(server)))
    app.router.add_post("/api/commands", _endpoint(lambda r: _command(server, r)))
    app.router.add_post("/api/agents/{id}/ask", _endpoint(lambda r: _ask(server, r)))
    get("/api/interviews", _endpoint(lambda r: _interviews(server)))
    get("/api/interviews/{id}", _endpoint(lambda r: _interview(server, r)))
    app.router.add_post("/api/surveys", _endpoint(lambda r: _new_survey(server, r)))
    get("/api/surveys", _endpoint(lambda r: _surveys(server)))
    get("/api/surveys/{id}", _endpoint(lambda r: _survey(server, r)))


def _agent_metrics(server: WebServer, request: web.Request) -> dict[str, Any]:
    """Every agent's metrics (the world's, as /metrics and /top show them), highest on
    ``sort`` first, and each brain's and each team's totals."""
    world = server.session.world
    book = world.metrics
    sort = (_words(request, "sort", tuple(METRICS)) or ["walked"])[0]
    limit = _int(request, "limit", 1000, low=1, high=100_000)
    assert limit is not None
    agents = [{"id": eid, "name": book.rows[eid]["name"], "brain": book.rows[eid]["brain"],
               "team": book.rows[eid].get("team", ""), "alive": world.alive(eid),
               **book.of(eid)}
              for eid, _value in book.top(sort, limit)]
    by_team = {name: {**group, "held": world.teams.held.get(name, 0)}
               for name, group in book.by("team").items() if name != "?"}
    return {"tick": world.tick, "enabled": book.enabled, "metrics": METRICS, "sort": sort,
            "agents": agents, "by_brain": book.by("brain"), "by_team": by_team}


def _entities(server: WebServer, request: web.Request) -> dict[str, Any]:
    kinds = _words(request, "kind", LAYERS) or list(LAYERS)
    limit = _int(request, "limit", 100_000, low=1, high=1_000_000)
    assert limit is not None
    return views.entities(server, tuple(kinds), _bbox(request), limit)


def _agents(server: WebServer, request: web.Request) -> dict[str, Any]:
    sort = (_words(request, "sort", views.SORT_KEYS) or ["id"])
    if len(sort) != 1:
        raise ParamError(f"sort takes one key ({', '.join(views.SORT_KEYS)}), got {sort}")
    limit = _int(request, "limit", 1000, low=1, high=100_000)
    assert limit is not None
    personality = _words(request, "personality", PERSONALITIES)
    if personality is not None and len(personality) != 1:
        raise ParamError("personality takes one value")
    return views.agent_rows(server, sort=sort[0], limit=limit,
                            personality=personality[0] if personality else None)


def _agent(server: WebServer, request: web.Request) -> Any:
    raw = request.match_info["id"]
    if not re.fullmatch(r"[0-9]{1,19}", raw):
        raise ParamError(f"id must be an entity id (a whole number), got {raw!r}")
    detail = views.agent_detail(server, int(raw))
    if detail is None:
        return error(404, f"no living agent #{raw}; /api/agents lists them")
    return detail


def _metrics(server: WebServer, request: web.Request) -> dict[str, Any]:
    names = _words(request, "series", server.series.names())
    since = _int(request, "since", 0)
    assert since is not None
    return server.series.query(names, since)


def _abilities(server: WebServer) -> dict[str, Any]:
    return {"abilities": server.session.world.abilities.catalog()}


def _ability(server: WebServer, request: web.Request) -> Any:
    name = request.match_info["name"]
    if not _ABILITY_NAME.fullmatch(name):
        raise ParamError(f"name must be an ability name (lower case letters, digits, _), "
                         f"got {name!r}")
    book = server.session.world.abilities
    spec = book.get(name)
    if spec is None:
        return error(404, f"no ability {name!r}; /api/abilities lists them")
    return {**book.entry(spec), "source": spec.source}


def _log(server: WebServer) -> web.StreamResponse:
    path = server.session.world_log.path
    if not path.exists():
        return error(404, f"no world log at {path} yet")
    return web.FileResponse(path, headers={
        "Content-Type": "text/plain; charset=utf-8",
        "Content-Disposition": f'attachment; filename="{path.name}"'})


async def _command(server: WebServer, request: web.Request) -> web.Response:
    try:
        body = await request.json(loads=orjson.loads)
    except (orjson.JSONDecodeError, UnicodeDecodeError) as exc:
        return error(400, f"the body must be JSON like {{\"command\": \"/pause\"}}: {exc}")
    command = body.get("command") if isinstance(body, dict) else None
    if not isinstance(command, str) or not command.strip():
        return error(400, "command must be a console command line, e.g. "
                          "{\"command\": \"/spawn agent Zed 5 5\"}")
    if len(command) > MAX_COMMAND:
        return error(400, f"command is {len(command)} characters; at most {MAX_COMMAND}")
    console = server.console
    reply = await console.execute(command)
    redact = server.session.redactor
    lines = [redact(line) for line in reply]
    status = 200 if console.last_ok else (
        409 if isinstance(console.last_error, Conflict) else 400)
    return json_response({"command": redact(command), "ok": console.last_ok, "reply": lines,
                          "tick": server.session.world.tick}, status)


async def _events(server: WebServer, request: web.Request) -> dict[str, Any]:
    """Recent lines from memory; with ``since_tick`` before what memory holds, or a kind
    only the save's log has (check, marker), lines from the event log as well."""
    ring = list(server.feed.ring)
    oldest = ring[0]["tick"] if ring else server.session.world.tick + 1
    since = _int(request, "since_tick", None)
    until = _int(request, "until_tick", None)
    entity = _int(request, "entity", None)
    limit = _int(request, "limit", 500, low=1, high=MAX_EVENTS)
    assert limit is not None
    types = set(_words(request, "type") or ())
    sources = set(_words(request, "source") or ())
    kinds = set(_words(request, "kind", LINE_KINDS) or ())
    first = oldest if since is None else since

    def wanted(line: dict[str, Any]) -> bool:
        tick = line.get("tick", -1)
        data = line.get("data")
        return (tick >= first and (until is None or tick <= until)
                and (not types or line.get("type") in types)
                and (not sources or line.get("source") in sources)
                and (not kinds or line.get("kind") in kinds)
                and (entity is None or involves(line, entity)
                     or (isinstance(data, dict) and involves(data, entity))))

    log_only = kinds & {"check", "marker"}
    found: list[dict[str, Any]] = []
    origin = "memory"
    if server.log_folder() is not None and (first < oldest or log_only):
        origin = "event log and memory"
        # From the log: every kind before memory begins, and after it only what memory
        # does not keep (state checks and markers).
        found = await asyncio.to_thread(
            _from_log, server, first, until,
            lambda line: wanted(line) and (line.get("tick", 0) < oldest
                                           or line.get("kind") in log_only),
            limit)
    if not kinds or kinds - log_only:
        found.extend(islice((e for e in ring if wanted(e)), max(0, limit - len(found) + 1)))
        found.sort(key=lambda line: line.get("tick", 0))  # log lines of later ticks, merged
    truncated = len(found) > limit
    return {"events": with_lines(found[:limit]), "truncated": truncated, "from": origin,
            "memory_from_tick": oldest}


def _from_log(server: WebServer, since: int, until: int | None,
              wanted: Callable[[dict[str, Any]], bool], limit: int) -> list[dict[str, Any]]:
    """Wanted lines of the save's event log from ``since`` to ``until`` (a worker thread:
    it reads files only)."""
    folder = server.log_folder()
    if folder is None:
        return []
    out: list[dict[str, Any]] = []
    reader = LogReader(folder, from_tick=since)
    for scanned, line in enumerate(reader):
        if (until is not None and line.get("tick", 0) > until) or scanned >= MAX_LOG_SCAN:
            break
        if wanted(line):
            out.append(line)
            if len(out) > limit:
                break
    return out


# -- talking to agents (agent_world/talk) ----------------------------------------------------


async def json_body(request: web.Request, example: str) -> dict[str, Any]:
    """The request's JSON object; ParamError naming ``example`` when it is not one."""
    try:
        body = await request.json(loads=orjson.loads)
    except (orjson.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ParamError(f"the body must be JSON like {example}: {exc}") from None
    if not isinstance(body, dict):
        raise ParamError(f"the body must be a JSON object like {example}")
    return body


def _remember(body: dict[str, Any]) -> bool | None:
    remember = body.get("remember")
    if remember is not None and not isinstance(remember, bool):
        raise ParamError(f"remember must be true or false, got {remember!r:.40}")
    return remember


def _wait_s(raw: Any) -> float:
    if raw is None or raw == "":
        return 0.0
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ParamError(f"wait_s must be a number of seconds, got {raw!r:.40}") from None
    if not 0 <= value <= MAX_WAIT_S:
        raise ParamError(f"wait_s must be from 0 to {MAX_WAIT_S}, got {value:g}")
    return value


async def _ask(server: WebServer, request: web.Request) -> web.Response:
    """``{"question", "remember"?, "wait_s"?}``: 202 with the interview under way, or 200
    with its answer when it came within ``wait_s``."""
    raw = request.match_info["id"]
    if not re.fullmatch(r"[0-9]{1,19}", raw):
        raise ParamError(f"id must be an agent's id (a whole number), got {raw!r:.40}")
    body = await json_body(request, '{"question": "how are you?"}')
    question = body.get("question")
    if not isinstance(question, str):
        raise ParamError('question must be text, e.g. {"question": "how are you?"}')
    remember = _remember(body)
    wait_s = _wait_s(body.get("wait_s"))
    talk = server.session.talk
    try:
        interview = talk.ask(int(raw), question, remember=remember, source="web")
    except TalkError as exc:
        return error(exc.status, str(exc))
    interview = await talk.wait(interview, wait_s)
    return json_response(interview.to_dict(), 200 if interview.done else 202)


def _interviews(server: WebServer) -> dict[str, Any]:
    return {"interviews": [i.to_dict() for i in server.session.talk.recent(100)],
            **server.session.talk.stats()}


async def _interview(server: WebServer, request: web.Request) -> web.Response:
    iid = request.match_info["id"]
    talk = server.session.talk
    interview = talk.get(iid)
    if interview is None:
        return error(404, f"no interview {iid!r:.40} (unknown, or an old one: the event log "
                          "keeps every interview as an 'interview' input)")
    interview = await talk.wait(interview, _wait_s(request.query.get("wait_s")))
    return json_response(interview.to_dict())


async def _new_survey(server: WebServer, request: web.Request) -> web.Response:
    """``{"question", "filter"?: {personality, brain, model, team, area}, "remember"?}``:
    202 with the survey under way."""
    body = await json_body(request, '{"question": "how are you?", "filter": {"personality": '
                                '"trader"}}')
    question = body.get("question")
    if not isinstance(question, str):
        raise ParamError('question must be text, e.g. {"question": "how are you?"}')
    given = body.get("filter", {})
    if not isinstance(given, dict):
        raise ParamError('filter must be an object, e.g. {"personality": "trader", "area": '
                         '[0, 0, 20, 20]}')
    try:
        filt = Filter.parse(given)
    except FilterError as exc:
        raise ParamError(f"filter: {exc}") from None
    try:
        survey = server.session.talk.survey(question, filt, remember=_remember(body),
                                            source="web")
    except TalkError as exc:
        return error(exc.status, str(exc))
    return json_response(survey.summary(), 202)


def _surveys(server: WebServer) -> dict[str, Any]:
    surveys = server.session.talk.surveys
    return {"surveys": [s.summary() for s in reversed(surveys.values())]}


def _survey(server: WebServer, request: web.Request) -> web.StreamResponse:
    sid = request.match_info["id"]
    found = server.session.talk.surveys.get(sid)
    if found is None:
        return error(404, f"no survey {sid!r:.40}; GET /api/surveys lists them")
    if request.query.get("format") == "csv":
        return web.Response(text=found.csv_text(), content_type="text/csv")
    if request.query.get("format") not in (None, "", "json"):
        raise ParamError(f"format must be json or csv, got {request.query['format']!r:.20}")
    return json_response(found.to_dict())
