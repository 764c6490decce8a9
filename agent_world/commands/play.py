"""Playing an agent and talking to agents: /play /release /act /talk.

A person takes control of an agent (``/play``): its brain pauses and it does only what its
player orders (``/act``: any action of the action set, checked as every brain's choice is),
until the player gives it back (``/release``), their viewer disconnects or they give no
order for ``web.play_idle_s``. ``/talk`` speaks to an agent: as the player's own agent when
they play one, else as a person at the agent's tile, heard by those in range.

Each is checked here for an immediate answer and submitted as an input (``play``,
``release``, ``act``, ``speak``; core/players.py checks again when it applies it), so it is
logged and replayed. Who is speaking is the player's name (``as=NAME``; the web API takes
it from the request), by default ``operator``. One player per agent: a second one gets a
``Conflict`` that names the first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_world.commands.lookup import resolve
from agent_world.commands.parsing import (
    CommandError,
    Conflict,
    EntityRef,
    parse_entity_ref,
    parse_int,
)
from agent_world.core import components as c
from agent_world.core.actions import MAX_TEXT, ActionError, one_line, parse_action
from agent_world.core.players import PLAYER_NAME
from agent_world.play import PlayDesk

if TYPE_CHECKING:
    from agent_world.commands.dispatch import Console

__all__ = ["ACT_HELP", "DEFAULT_PLAYER", "PLAY_HELP", "TALK_HELP", "ActArgs", "PlayArgs",
           "TalkArgs", "act", "parse_act", "parse_play", "parse_release", "parse_talk",
           "play", "release", "talk"]

DEFAULT_PLAYER = "operator"

PLAY_HELP = (
    "You (as=NAME, default operator) take control of AGENT: its own brain pauses and it "
    "does only what you order with /act and says what you /talk, with the same checks as "
    "any brain's actions.",
    "One player per agent: an agent someone else plays is refused, naming them.",
    "/release AGENT gives it back; so does closing the viewer that plays it, or giving no "
    "order for web.play_idle_s seconds. /release AGENT force takes it from whoever plays "
    "it.",
    "Every step is an input (play, act, release): logged and replayed exactly.",
)
ACT_HELP = (
    "ACTION is any action of the action set (docs/agents.md): move_to x=X y=Y | move_to "
    "target=ID | pickup target=ID | drop item=K [qty=N] | eat [item=K] | attack target=ID | "
    "defend | give target=ID item=K [qty=N] | trade_offer target=ID give=apple:2 "
    "want=gold:5 | trade_accept offer=N | say text=\"...\" [to=ID] | use_ability "
    "ability=NAME [target=ID | x=X y=Y] ...",
    "Goods are KIND:N[,KIND:N]; numbers are whole numbers; quote text with spaces.",
    "Only the agent's player may order it (/play it first). An order replaces what it was "
    "doing; an action that cannot be done fails with the same reason a brain's would "
    "(its last result in /debug).",
)
TALK_HELP = (
    "If you play an agent, it says TEXT (to AGENT, when that is another agent); otherwise "
    "you speak as a person at AGENT's tile: every agent within hearing range hears you, "
    "and AGENT counts it as spoken to (an LLM agent answers in its next decision).",
    f"TEXT: 1 to {MAX_TEXT} characters. as=NAME (first, before TEXT) names you.",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class PlayArgs:
    agent: EntityRef
    player: str | None = None
    client: int | None = None  # the viewer's feed connection (web API only)
    force: bool = False  # /release: whoever plays it


@dataclass(frozen=True, slots=True, kw_only=True)
class ActArgs:
    agent: EntityRef
    action: dict[str, Any]  # {"action": name, "args": {...}}, checked by parse_action
    player: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TalkArgs:
    agent: EntityRef
    text: str
    player: str | None = None


def _player(word: str) -> str:
    name = word.partition("=")[2]
    if not PLAYER_NAME.fullmatch(name):
        raise CommandError(f"as={name!r:.40} is not a usable player's name: 1-24 letters, "
                           "digits, _ ' or -, starting with a letter")
    return name


def parse_play(argv: Sequence[str]) -> PlayArgs:
    if not argv:
        raise CommandError("name the agent to play, e.g. /play Zed")
    player = None
    for word in argv[1:]:
        if word.lower().startswith("as="):
            player = _player(word)
        else:
            raise CommandError(f"unexpected {word!r:.40}; /play AGENT [as=NAME]")
    return PlayArgs(agent=parse_entity_ref(argv[0]), player=player)


def parse_release(argv: Sequence[str]) -> PlayArgs:
    if not argv:
        raise CommandError("name the agent to give back, e.g. /release Zed")
    player, force = None, False
    for word in argv[1:]:
        if word.lower().startswith("as="):
            player = _player(word)
        elif word.lower() == "force":
            force = True
        else:
            raise CommandError(f"unexpected {word!r:.40}; /release AGENT [as=NAME] [force]")
    return PlayArgs(agent=parse_entity_ref(argv[0]), player=player, force=force)


def _value(key: str, text: str) -> Any:
    """A /act argument's value: a whole number, goods (``apple:2,gold:1``) or text."""
    if text.lstrip("-").isdigit() and text.isascii():
        return parse_int(text, key, low=-(2**62), high=2**62)
    if key in ("give", "want"):
        goods: dict[str, Any] = {}
        for part in text.split(","):
            kind, sep, qty = part.partition(":")
            if not sep or not kind:
                raise CommandError(f"{key}= takes goods as KIND:N[,KIND:N], e.g. apple:2, "
                                   f"got {text!r:.40}")
            goods[kind.strip().lower()] = parse_int(qty.strip(), f"{key} {kind}", low=1,
                                                    high=10**9)
        return goods
    return text


def parse_act(argv: Sequence[str]) -> ActArgs:
    if len(argv) < 2:
        raise CommandError("name the agent and the action, e.g. /act Zed move_to x=5 y=7")
    player = None
    args: dict[str, Any] = {}
    for word in argv[2:]:
        key, sep, text = word.partition("=")
        key = key.lower()
        if not sep or not key:
            raise CommandError(f"arguments are KEY=VALUE, got {word!r:.40}")
        if key == "as":
            player = _player(word)
            continue
        if key in args:
            raise CommandError(f"{key}= is given twice")
        args[key] = _value(key, text)
    action = {"action": argv[1].lower(), "args": args}
    try:
        parse_action(action)
    except ActionError as exc:
        raise CommandError(str(exc)) from None
    return ActArgs(agent=parse_entity_ref(argv[0]), action=action, player=player)


def parse_talk(argv: Sequence[str]) -> TalkArgs:
    if len(argv) < 2:
        raise CommandError('name the agent and what you say, e.g. /talk Zed "hello"')
    words = list(argv[1:])
    player = None
    if words and words[0].lower().startswith("as="):
        player = _player(words.pop(0))
    text = one_line(" ".join(words))
    if not text or len(text) > MAX_TEXT:
        raise CommandError(f"TEXT must be 1 to {MAX_TEXT} characters, got {len(text)}")
    return TalkArgs(agent=parse_entity_ref(argv[0]), text=text, player=player)


# -- handlers ---------------------------------------------------------------------------------


def _desk(console: Console) -> PlayDesk:
    desk: PlayDesk | None = getattr(console.session, "play", None)
    if desk is None:
        raise CommandError("this session takes no players")
    return desk


def _conflict(console: Console, eid: int, who: str) -> Conflict:
    since = _desk(console).since(eid)
    when = f" since tick {since}" if since is not None else ""
    return Conflict(f"{console.world.label(eid)} is played by {who}{when}; one player per "
                    "agent: ask them to /release it, or pick another agent")


def _when(console: Console) -> str:
    tick = console.world.tick + 1
    return f"at tick {tick}" + (" (paused: /step applies it)" if console.loop.paused else "")


async def play(console: Console, args: PlayArgs) -> list[str]:
    world, desk = console.world, _desk(console)
    eid = resolve(world, args.agent, agent=True)
    player = args.player or DEFAULT_PLAYER
    who = desk.player_of(eid)
    if who is not None and who != player:
        raise _conflict(console, eid, who)
    label = world.label(eid)
    if who == player:
        desk.took(eid, player, args.client)
        return [f"{player} already plays {label}"]
    console.submit("play", {"agent": eid, "player": player})
    desk.took(eid, player, args.client)
    return [f"{player} plays {label} {_when(console)}: its brain is paused; /act "
            f"{eid} ACTION ... and /talk {eid} TEXT steer it, /release {eid} gives it back "
            f"(so does {desk.idle_s:g} s without an order)"]


async def release(console: Console, args: PlayArgs) -> list[str]:
    world, desk = console.world, _desk(console)
    eid = resolve(world, args.agent, agent=True)
    player = args.player or DEFAULT_PLAYER
    who = desk.player_of(eid)
    if who is None:
        raise CommandError(f"{world.label(eid)} is not played by anyone")
    if who != player and not args.force:
        raise _conflict(console, eid, who)
    data: dict[str, Any] = {"agent": eid, "player": who, "reason": "released"}
    if who != player:
        data["force"] = True
        data["reason"] = f"released by {player}"
    console.submit("release", data)
    desk.releasing(eid)
    return [f"{world.label(eid)} goes back to its brain {_when(console)}"]


def _own(console: Console, eid: int, player: str) -> None:
    who = _desk(console).player_of(eid)
    if who is None:
        raise CommandError(f"{console.world.label(eid)} is not played; /play {eid} first "
                           f"(as={player})")
    if who != player:
        raise _conflict(console, eid, who)


async def act(console: Console, args: ActArgs) -> list[str]:
    world = console.world
    eid = resolve(world, args.agent, agent=True)
    player = args.player or DEFAULT_PLAYER
    _own(console, eid, player)
    try:
        action = parse_action(args.action)
    except ActionError as exc:
        raise CommandError(str(exc)) from None
    console.submit("act", {"agent": eid, "player": player, "action": action.to_dict()})
    _desk(console).acted(eid)
    return [f"{world.label(eid)} will {action} {_when(console)}"]


async def talk(console: Console, args: TalkArgs) -> list[str]:
    world, desk = console.world, _desk(console)
    eid = resolve(world, args.agent, agent=True)
    player = args.player or DEFAULT_PLAYER
    mine = eid if desk.player_of(eid) == player else desk.agent_of(player)
    if mine is not None and world.is_agent(mine):
        say: dict[str, Any] = {"text": args.text}
        if mine != eid:
            say["to"] = eid
        console.submit("act", {"agent": mine, "player": player,
                               "action": {"name": "say", "args": say}})
        desk.acted(mine)
        to = f" to {world.label(eid)}" if mine != eid else ""
        return [f"{world.label(mine)} says{to} \"{args.text}\" {_when(console)}"]
    pos = world.store.get(eid, c.Position)
    console.submit("speak", {"name": player, "text": args.text, "x": pos.x, "y": pos.y,
                             "to": eid})
    return [f"{player} says to {world.label(eid)} \"{args.text}\" {_when(console)} (heard "
            f"within {world.rules.hearing_radius} tiles of ({pos.x}, {pos.y}))"]
