"""Abilities at the console: /ability asks the angel, /abilities lists and toggles them.

Asking the angel changes nothing by itself: the angel writes and checks the code on its own
thread and hands an accepted ability to the world as an input (logged, replayed). Turning
an ability off or on is an ``ability_state`` input like every other change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_world.console.parsing import CommandError

if TYPE_CHECKING:
    from agent_world.console.commands import Console

__all__ = ["ABILITIES_HELP", "ABILITY_HELP", "AbilitiesArgs", "AbilityArgs", "ask",
           "manage", "parse_abilities", "parse_ability"]

MAX_DESCRIPTION = 200
MAX_REASON = 200

ABILITY_HELP = (
    'DESCRIPTION: what the ability should do, in words, e.g. /ability "a bolt of lightning '
    'that hurts one agent".',
    "The angel writes it (with the LLM, or from templates when none is configured), checks "
    "it in the sandbox and dry-runs it, then adds it to the world at a tick boundary; the "
    "world log says what it wrote, or why it refused.",
    "With angel.wait: world the world pauses until the answer is in.",
)
ABILITIES_HELP = (
    "/abilities lists every ability: cost, cooldown, range, arguments, and why one is "
    "disabled.",
    "/abilities disable NAME [REASON] and /abilities enable NAME turn one off or on (an "
    "input: logged and replayed).",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class AbilityArgs:
    description: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AbilitiesArgs:
    action: str = "list"  # list | disable | enable
    name: str = ""
    reason: str = ""


def parse_ability(argv: Sequence[str]) -> AbilityArgs:
    text = " ".join(" ".join(argv).split())
    if not text:
        raise CommandError('describe the ability, e.g. /ability "a gust of wind that pushes '
                           'an agent away"')
    if len(text) > MAX_DESCRIPTION:
        raise CommandError(f"the description is {len(text)} characters; keep it to "
                           f"{MAX_DESCRIPTION}")
    return AbilityArgs(description=text)


def parse_abilities(argv: Sequence[str]) -> AbilitiesArgs:
    if not argv:
        return AbilitiesArgs()
    action = argv[0].lower()
    if action not in ("disable", "enable"):
        raise CommandError(f"expected nothing, 'disable NAME [REASON]' or 'enable NAME', got "
                           f"{argv[0]!r}")
    if len(argv) < 2:
        raise CommandError(f"{action} needs the ability's NAME")
    reason = " ".join(argv[2:])
    if action == "enable" and reason:
        raise CommandError("enable takes only the NAME")
    if len(reason) > MAX_REASON:
        raise CommandError(f"the reason is {len(reason)} characters; keep it to {MAX_REASON}")
    return AbilitiesArgs(action=action, name=argv[1], reason=reason)


async def ask(console: Console, args: AbilityArgs) -> list[str]:
    session = console.session
    try:
        session.request_ability(args.description)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    waiting = ("the world is paused until the answer is in" if session.loop.paused
               and session.config.angel.wait == "world" else "the world runs on meanwhile")
    return [f"asked the angel for: {args.description!r}; {waiting}; the world log will say "
            "what it wrote"]


async def manage(console: Console, args: AbilitiesArgs) -> list[str]:
    book = console.world.abilities
    if args.action == "list":
        catalog = book.catalog()
        if not catalog:
            return ["no abilities (this session runs without a sandbox)"]
        lines = [f"{len(catalog)} abilities ({len(book.builtins)} built-in, "
                 f"{len(book.generated)} generated, {len(book.disabled)} disabled):"]
        for entry in catalog:
            args_text = ", ".join(f"{k}:{v}" for k, v in entry["args"].items()) or "-"
            state = f"  DISABLED: {entry['disabled']}" if "disabled" in entry else ""
            lines.append(f"  {entry['name']:<18} energy {entry['energy_cost']:g} · cooldown "
                         f"{entry['cooldown']} · range {entry['range']} · args {args_text}"
                         f"{'' if entry['builtin'] else ' · generated'}{state}")
        return lines
    if book.get(args.name) is None:
        close = [n for n in book.names() if n.startswith(args.name[:3])][:3]
        hint = f"; known names include {', '.join(close)}" if close else ""
        raise CommandError(f"no ability named {args.name!r}{hint} (/abilities lists them)")
    data: dict[str, object] = {"ability": args.name, "enabled": args.action == "enable"}
    if args.reason:
        data["reason"] = args.reason
    console.world.inbox.submit("ability_state", data, source="console")
    return [f"{args.name} will be {args.action}d at tick {console.world.tick + 1}"]
