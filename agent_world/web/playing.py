"""The web API's routes for playing and talking: ``POST /api/agents/{id}/play``,
``/release``, ``/act`` and ``/talk``.

Each reads its JSON body into the command's own record and runs the command's own handler
through the web's console (``Console.run_parsed``): the same checks, replies and inputs as
``/play``, ``/release``, ``/act`` and ``/talk`` typed at the console. A body may name the
``player`` (default ``operator``); ``play`` may name the viewer's feed connection
(``client``, from its hello), whose closing gives the agent back. Answers are those of
``POST /api/commands``: 200 with the reply, 400 for a refusal, 409 when another player
plays the agent.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from aiohttp import web

from agent_world.commands.parsing import Conflict, EntityRef
from agent_world.commands.play import ActArgs, PlayArgs, TalkArgs
from agent_world.core.actions import MAX_TEXT, one_line
from agent_world.core.players import PLAYER_NAME
from agent_world.web.api import ParamError, error, json_body, json_response

if TYPE_CHECKING:
    from agent_world.web.server import WebServer

__all__ = ["add_routes"]

_ID = re.compile(r"[0-9]{1,19}")
_EXAMPLES = {"play": '{"player": "Ada"}', "release": '{"player": "Ada"}',
             "act": '{"player": "Ada", "action": {"action": "eat", "args": {"item": "apple"}}}',
             "talk": '{"player": "Ada", "text": "hello"}'}


class _Bad(ParamError):
    """A request that cannot be read into the command's record (400, this message)."""


def add_routes(app: web.Application, server: WebServer) -> None:
    post = app.router.add_post
    for name in ("play", "release", "act", "talk"):
        post(f"/api/agents/{{id}}/{name}", _handler(server, name))


def _handler(server: WebServer, name: str) -> Any:
    async def handle(request: web.Request) -> web.Response:
        if server.playback is not None:
            return error(409, "a recording plays what it recorded: nobody plays its agents "
                              "(fork it to play)")
        try:
            args = await _args(server, name, request)
        except ParamError as exc:
            return error(400, str(exc))
        console = server.console
        reply = await console.run_parsed(name, args)
        redact = server.session.redactor
        status = 200 if console.last_ok else (
            409 if isinstance(console.last_error, Conflict) else 400)
        return json_response({"ok": console.last_ok, "reply": [redact(r) for r in reply],
                              "tick": server.session.world.tick,
                              "agent": args.agent.eid, "player": args.player or "operator"},
                             status)
    return handle


async def _args(server: WebServer, name: str, request: web.Request) -> Any:
    raw = request.match_info["id"]
    if not _ID.fullmatch(raw):
        raise _Bad(f"id must be an agent's id (a whole number), got {raw!r:.40}")
    agent = EntityRef(text=raw, eid=int(raw))
    body = await json_body(request, _EXAMPLES[name])
    player = body.get("player")
    if player is not None and (not isinstance(player, str)
                               or not PLAYER_NAME.fullmatch(player)):
        raise _Bad(f"player must be a name of 1-24 letters, digits, _ ' or -, starting "
                   f"with a letter, got {player!r:.40}")
    if name == "play":
        client = body.get("client")
        known = (isinstance(client, int) and not isinstance(client, bool)
                 and server.sockets.client(client) is not None)
        if client is not None and not known:
            raise _Bad(f"client {client!r:.40} is no connected feed client; send the "
                       "number your /ws hello gave, or leave client out")
        return PlayArgs(agent=agent, player=player, client=client)
    if name == "release":
        force = body.get("force", False)
        if not isinstance(force, bool):
            raise _Bad(f"force must be true or false, got {force!r:.40}")
        return PlayArgs(agent=agent, player=player, force=force)
    if name == "act":
        action, args = body.get("action"), body.get("args", {})
        if not isinstance(action, str) or not isinstance(args, dict):
            raise _Bad("send the action as {\"action\": NAME, \"args\": {...}}, e.g. "
                       "{\"action\": \"move_to\", \"args\": {\"x\": 5, \"y\": 7}}")
        return ActArgs(agent=agent, action={"action": action, "args": args}, player=player)
    text = body.get("text")
    said = one_line(text) if isinstance(text, str) else ""
    if not said or len(said) > MAX_TEXT:
        raise _Bad(f"text must be 1 to {MAX_TEXT} characters of text, got {text!r:.40}")
    return TalkArgs(agent=agent, text=said, player=player)
