"""Abilities at the console: /ability asks the angel or loads a file, /abilities lists and
toggles them, /cast orders an agent to use one.

Asking the angel changes nothing by itself: the angel writes and checks the code on its own
thread and hands an accepted ability to the world as an input (logged, replayed). A loaded
file is checked the same way (gate, sandbox, dry runs) and enters as the same input, with
its full source. Turning an ability off or on is an ``ability_state`` input, and a cast is a
``plan`` input for the agent, like every other change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agent_world.commands.lookup import kind_of, resolve
from agent_world.commands.parsing import (
    CommandError,
    EntityRef,
    did_you_mean,
    parse_entity_ref,
    parse_int,
)
from agent_world.core.actions import MAX_TEXT
from agent_world.core.items import ITEMS
from agent_world.types import MAX_ABILITY_SOURCE

if TYPE_CHECKING:
    from agent_world.commands.dispatch import Console

__all__ = ["ABILITIES_HELP", "ABILITY_HELP", "CAST_HELP", "AbilitiesArgs", "AbilityArgs",
           "CastArgs", "ask", "cast", "manage", "parse_abilities", "parse_ability",
           "parse_cast"]

MAX_DESCRIPTION = 200
MAX_REASON = 200
LOAD_POLL_S = 0.1  # how often a waiting /ability load looks for a Ctrl-C

ABILITY_HELP = (
    'DESCRIPTION: what the ability should do, in words, e.g. /ability "a bolt of lightning '
    'that hurts one agent".',
    "/ability load FILE.py checks an ability file you wrote (as python main.py ability check "
    "does) and, if it is accepted, adds it to the world with its source (logged, replayed).",
    "The angel writes it (with the LLM, or from templates when none is configured), checks "
    "it in the sandbox and dry-runs it, then adds it to the world at a tick boundary; the "
    "world log says what it wrote, or why it refused.",
    "With angel.wait: world the world pauses until the answer is in.",
    "/ability improve NAME asks the angel for a better version of NAME, giving it how NAME "
    "did in this session (casts, effects, failures by reason); the new version gets a new "
    "name beside the old.",
)
ABILITIES_HELP = (
    "/abilities lists every ability: cost, cooldown, range, arguments, and why one is "
    "disabled.",
    "/abilities disable NAME [REASON] and /abilities enable NAME turn one off or on (an "
    "input: logged and replayed).",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class AbilityArgs:
    description: str = ""
    load: Path | None = None  # /ability load FILE.py
    improve: str = ""  # /ability improve NAME


CAST_HELP = (
    "AGENT: the agent who casts (id or name). ABILITY: its name (/abilities lists them).",
    "TARGET: the agent, object or item it acts on (id or agent name), or X Y for a tile; "
    "item=KIND qty=N text=WORDS for abilities whose ARGS ask for them.",
    "The agent walks into range first if it must; the cast is an input (logged, replayed), "
    "and the world log says what it did or why it failed.",
    "Example: /cast Zed fire_bolt Bob   |   /cast Zed dash 12 7   |   /cast Ann proclaim "
    "text='Market at noon'",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class CastArgs:
    caster: EntityRef
    ability: str
    target: EntityRef | None = None
    x: int | None = None
    y: int | None = None
    item: str | None = None
    qty: int | None = None
    text: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AbilitiesArgs:
    action: str = "list"  # list | disable | enable
    name: str = ""
    reason: str = ""


def parse_ability(argv: Sequence[str]) -> AbilityArgs:
    if len(argv) == 2 and argv[0].lower() == "load":
        return AbilityArgs(load=Path(argv[1]))
    if len(argv) == 2 and argv[0].lower() == "improve":
        return AbilityArgs(improve=argv[1])
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


def parse_cast(argv: Sequence[str]) -> CastArgs:
    """``AGENT ABILITY [TARGET | X Y] [item=KIND] [qty=N] [text=WORDS]``."""
    if len(argv) < 2:
        raise CommandError("name the agent and the ability, e.g. /cast Zed fire_bolt Bob")
    positional = [w for w in argv[2:] if "=" not in w]
    options: dict[str, str] = {}
    for word in (w for w in argv[2:] if "=" in w):
        key, _, value = word.partition("=")
        key = key.lower()
        if key not in ("item", "qty", "text"):
            raise CommandError(f"/cast takes no option {key!r:.30} (options: item=, qty=, "
                               f"text=){did_you_mean(key, ('item', 'qty', 'text'))}")
        if key in options:
            raise CommandError(f"option {key}= is given twice")
        options[key] = value
    target = x = y = None
    if len(positional) == 1:
        target = parse_entity_ref(positional[0])
    elif len(positional) == 2:
        x = parse_int(positional[0], "X", low=0, high=100_000)
        y = parse_int(positional[1], "Y", low=0, high=100_000)
    elif positional:
        raise CommandError(f"expected one TARGET or a tile X Y, got {' '.join(positional)!r:.60}")
    item = options.get("item")
    if item is not None and item.lower() not in ITEMS:
        raise CommandError(f"unknown item {item!r:.30} (items: {', '.join(ITEMS)})"
                           f"{did_you_mean(item.lower(), ITEMS)}")
    qty = parse_int(options["qty"], "qty", low=1, high=10_000) if "qty" in options else None
    text = options.get("text")
    if text is not None and not (text.strip() and len(text) <= MAX_TEXT
                                 and text.isprintable()):
        raise CommandError(f"text= must be 1-{MAX_TEXT} printable characters")
    return CastArgs(caster=parse_entity_ref(argv[0]), ability=argv[1], target=target, x=x,
                    y=y, item=item.lower() if item else None, qty=qty, text=text)


async def cast(console: Console, args: CastArgs) -> list[str]:
    world = console.world
    caster = resolve(world, args.caster, agent=True)
    book = world.abilities
    spec = book.get(args.ability)
    if spec is None:
        raise CommandError(f"no ability named {args.ability!r:.40}"
                           f"{did_you_mean(args.ability, book.names())} (/abilities lists "
                           "them)")
    if spec.name in book.disabled:
        raise CommandError(f"{spec.name} is disabled: {book.disabled[spec.name]} (/abilities "
                           f"enable {spec.name} turns it back on)")
    meta = spec.meta
    given: dict[str, object] = {}
    if args.target is not None:
        given["target"] = resolve(world, args.target)
    if args.x is not None:
        given["x"], given["y"] = args.x, args.y
    for key in ("item", "qty", "text"):
        if getattr(args, key) is not None:
            given[key] = getattr(args, key)
    wants = ", ".join(f"{k} ({v})" for k, v in meta.args.items()) or "no arguments"
    for key in given:
        if key not in meta.args:
            raise CommandError(f"{spec.name} takes no {key}; it takes {wants}")
    missing = [k for k in meta.required() if k not in given]
    if missing:
        raise CommandError(f"{spec.name} needs {', '.join(missing)}; it takes {wants}")
    target = given.get("target")
    if isinstance(target, int) and meta.kind("target") != "entity":
        kind = kind_of(world, target)
        if kind != meta.kind("target"):
            raise CommandError(f"{spec.name} acts on an {meta.kind('target')}; "
                               f"{world.label(target)} is an {kind}")
    console.submit("plan", {"agent": caster, "source": "console", "actions": [
        {"name": "use_ability", "args": {"ability": spec.name, **given}}]})
    on = f" on {world.label(target)}" if isinstance(target, int) else (
        f" at ({args.x}, {args.y})" if args.x is not None else "")
    return [f"{world.label(caster)} casts {spec.name}{on} from tick {world.tick + 1} (walking "
            "into range first if needed); the world log says how it went"]


def _read_source(path: Path) -> str:
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_ABILITY_SOURCE * 4 + 1)  # UTF-8: at most 4 bytes a character
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        source = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CommandError(f"{path} is not UTF-8 text; an ability is a Python source "
                           "file") from None
    if len(source) > MAX_ABILITY_SOURCE:
        raise CommandError(f"{path} has more than {MAX_ABILITY_SOURCE} characters; an "
                           "ability is a short file (see python main.py ability check)")
    return source


async def load(console: Console, path: Path) -> list[str]:
    """/ability load FILE.py: the same check as ``python main.py ability check``, then the
    source enters the world as an input (logged with its full text, replayed)."""
    session = console.session
    source = _read_source(path)
    try:
        sent = session.load_ability(source, path.name)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    with console.cancellable() as cancel:
        waiting = asyncio.wrap_future(sent.verdict)
        while not waiting.done():
            await asyncio.wait({waiting}, timeout=LOAD_POLL_S)
            if cancel.requested:
                return [f"stopped waiting for the check of {path}; the world log will say "
                        "whether it was accepted"]
    report = waiting.result()
    if report is None:
        raise CommandError(f"{path} could not be checked; the world log says why")
    if not report.accepted:
        raise CommandError(f"{path}: {report.line()}")
    enters = max(sent.due, console.world.tick + 1)
    return [f"loaded {report.name} from {path} (it took effect in {report.casts} of "
            f"{session.config.angel.dry_runs} dry runs); it enters the world at tick "
            f"{enters}: {report.description}"]


async def ask(console: Console, args: AbilityArgs) -> list[str]:
    if args.load is not None:
        return await load(console, args.load)
    session = console.session
    limit = session.config.console.max_angel_requests
    angel = session.angel
    if angel is not None and angel.pending() >= limit:
        raise CommandError(f"the angel already has {angel.pending()} requests to answer (the "
                           "limit is console.max_angel_requests); wait for its answers in "
                           "the world log")
    try:
        if args.improve:
            session.improve_ability(args.improve)
        else:
            session.request_ability(args.description)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    waiting = ("the world waits until the answer is in" if session.config.angel.wait == "world"
               else "the world runs on meanwhile")
    if args.improve:
        figures = session.ability_usage.of(args.improve).lines()
        return [f"asked the angel for a better {args.improve} ({figures[0]}); {waiting}; the "
                "world log will say what it wrote"]
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
    console.submit("ability_state", data)
    return [f"{args.name} will be {args.action}d at tick {console.world.tick + 1}"]
