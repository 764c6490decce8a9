"""The command table and the dispatcher.

A command is a spec (name, usage, help) with a parser that turns the words after the name
into a typed record and a handler that turns that record into reply lines. Whatever goes
wrong with the input is answered with one line naming the problem and the usage; the world
never sees a half-understood command.
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TextIO, TypeVar

from agent_world.commands import abilities, changes, control, play, scores, stats, talk, views
from agent_world.commands.parsing import (
    CommandError,
    HelpArgs,
    closest,
    did_you_mean,
    parse_echo,
    parse_give,
    parse_help,
    parse_list,
    parse_no_args,
    parse_one_entity,
    parse_say,
    parse_spawn,
    parse_speed,
    parse_step,
    split_line,
)
from agent_world.commands.recent import RecentEvents
from agent_world.core.loop import TickLoop
from agent_world.core.world import World
from agent_world.types import Event

if TYPE_CHECKING:
    from agent_world.app import Session

__all__ = ["COMMANDS", "Cancel", "Command", "Console"]

A = TypeVar("A")
Reply = list[str]


@dataclass(slots=True)
class Cancel:
    """Set when the operator asked to cancel the running command."""

    requested: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Command(Generic[A]):
    """One console command: ``parse`` reads its words into an ``A``, ``run`` acts on it."""

    name: str
    usage: str
    summary: str
    parse: Callable[[Sequence[str]], A]
    run: Callable[[Console, A], Awaitable[Reply]]
    details: tuple[str, ...] = ()


class Console:
    """The operator's side of one session: dispatches command lines and keeps what the
    commands need between calls (recent events, spawn names not yet applied, counters).

    Everything here runs on the main thread, between ticks."""

    def __init__(self, session: Session, *, notify: Callable[[str], None] | None = None,
                 source: str = "console",
                 refuse: Callable[[str, list[str]], str | None] | None = None) -> None:
        """``source`` names where the commands come from in the inputs they submit (the
        terminal's ``console``, the web's ``web``); ``refuse`` says why a command (its name
        and words) is not taken from there, or None."""
        self.session = session
        self.source = source
        self.refuse = refuse
        self.notify = notify
        self.quit_requested = False
        self.commands_run = 0
        self.errors = 0
        self.internal_errors = 0
        self.last_ok = True  # whether the last command succeeded (for replies as data)
        self.last_error: CommandError | None = None  # why the last command was refused
        self.interactive = False  # at a terminal prompt (progress lines are shown)
        self.muted_echo: TextIO | None = None  # the echo stream /echo off put aside
        self._cancel: Cancel | None = None  # the running command that Ctrl-C would cancel
        self.pending_names: set[str] = set()  # names of agents spawned but not yet applied
        self.pending_agents = 0  # agent spawns submitted but not yet applied
        self.recent = RecentEvents(source=source, on_rejected=self._rejected,
                                   on_tick=self._ticked)
        self.stats_sections = stats.default_sections()
        # The session's own table when it has one (a served replay's), else the world's.
        self.commands: Mapping[str, Command[Any]] = session.commands or COMMANDS
        session.loop.observers.append(self.recent)
        session.interrupt_handlers.append(self.interrupt)

    @property
    def world(self) -> World:
        return self.session.world

    @property
    def loop(self) -> TickLoop:
        return self.session.loop

    def _ticked(self) -> None:
        self.pending_names.clear()
        self.pending_agents = 0

    def submit(self, type: str, data: dict[str, Any]) -> None:
        """Hand a change to the world as a console input (applied at the next tick, logged,
        replayed); CommandError when ``console.max_queued_inputs`` already wait."""
        limit = self.session.config.console.max_queued_inputs
        waiting = self.world.inbox.pending()
        if waiting >= limit:
            raise CommandError(f"{waiting} changes already wait for the next tick (the limit "
                               "is console.max_queued_inputs); wait for the world to take "
                               "them" + (", or /step" if self.loop.paused else ""))
        self.world.inbox.submit(type, data, source=self.source)

    def tell(self, text: str) -> None:
        """A line for the operator outside a reply (progress, a later rejection)."""
        if self.notify is not None:
            self.notify(text)

    @contextlib.contextmanager
    def cancellable(self) -> Iterator[Cancel]:
        """While a long command runs inside this, Ctrl-C cancels the command (it checks
        ``requested``) instead of stopping the world."""
        cancel = Cancel()
        self._cancel = cancel
        try:
            yield cancel
        finally:
            self._cancel = None

    def interrupt(self) -> bool:
        """Ctrl-C (SIGINT): cancel the running command if it can be; True if it was."""
        if self._cancel is None:
            return False
        self._cancel.requested = True
        return True

    def close(self) -> None:
        """Detach from the tick loop."""
        if self.recent in self.session.loop.observers:
            self.session.loop.observers.remove(self.recent)
        if self.interrupt in self.session.interrupt_handlers:
            self.session.interrupt_handlers.remove(self.interrupt)

    def _rejected(self, tick: int, event: Event) -> None:
        if self.notify is not None:
            self.notify(f"tick {tick}: your {event.get('input')} (input #{event.get('seq')}) "
                        f"was rejected: {event.get('reason')}")

    async def execute(self, line: str) -> Reply:
        """Run one command line and return the reply lines (never raises for bad input)."""
        self.last_ok = False
        self.last_error = None
        text = line.strip()
        if not text or text.startswith("#"):
            self.last_ok = True
            return []
        try:
            words = split_line(text)
        except CommandError as exc:
            self.errors += 1
            return [_one_line(f"error: {exc}; type /help for the commands")]
        name = words[0].removeprefix("/").lower()
        command = self.commands.get(name)
        if command is None:
            self.errors += 1
            return [_unknown(words[0], self.commands)]
        refusal = self.refuse(name, words) if self.refuse is not None else None
        if refusal is not None:
            self.errors += 1
            return [_one_line(f"error: {refusal}")]
        try:
            args = command.parse(words[1:])
        except CommandError as exc:
            self.errors += 1
            self.last_error = exc
            return [_one_line(f"error: {exc} (usage: {command.usage})")]
        return await self._run(command, args)

    async def run_parsed(self, name: str, args: Any) -> Reply:
        """Run command ``name`` on arguments already in its record (the web API reads
        them from JSON): the same handler, checks and answers as a typed line."""
        self.last_ok = False
        self.last_error = None
        command = self.commands.get(name)
        if command is None:
            self.errors += 1
            self.last_error = CommandError(f"/{name} is not taken here")
            return [f"error: {self.last_error}"]
        return await self._run(command, args)

    async def _run(self, command: Command[Any], args: Any) -> Reply:
        name = command.name
        try:
            reply = await command.run(self, args)
        except CommandError as exc:
            self.errors += 1
            self.last_error = exc
            return [_one_line(f"error: {exc} (usage: {command.usage})")]
        except Exception as exc:  # a console bug must not stop the world: log, count, answer
            self.internal_errors += 1
            self.session.world_log.note(self.world.tick, f"console: /{name} failed:\n"
                                        + traceback.format_exc().rstrip())
            return [_one_line(f"error: /{name} failed inside the console "
                              f"({type(exc).__name__}: {exc}); this is a bug, the traceback "
                              f"is in {self.session.world_log.path}")]
        self.commands_run += 1
        self.last_ok = True
        return reply


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _unknown(word: str, commands: Mapping[str, Command[Any]]) -> str:
    name = word.removeprefix("/").lower()
    close = closest(name, commands)
    if close is not None:
        guess = commands[close]
        return _one_line(f"error: unknown command {word!r}; did you mean /{guess.name}? "
                         f"(usage: {guess.usage}; /help lists every command)")
    hint = "" if word.startswith("/") else "; commands start with /"
    return _one_line(f"error: unknown command {word!r}{hint} (usage: /help [COMMAND] lists "
                     "the commands)")


async def _help(console: Console, args: HelpArgs) -> Reply:
    commands = console.commands
    if args.command is None:
        width = max(len(c.usage) for c in commands.values())
        return ["commands (/help COMMAND for details; Tab completes names and ids):",
                *(f"  {c.usage:<{width}}  {c.summary}" for c in commands.values())]
    command = commands.get(args.command)
    if command is None:
        raise CommandError(f"no command {args.command!r}{did_you_mean(args.command, commands)}")
    return [f"{command.usage}  —  {command.summary}", *(f"  {d}" for d in command.details)]


def _table(*commands: Command[Any]) -> dict[str, Command[Any]]:
    return {c.name: c for c in commands}


COMMANDS: dict[str, Command[Any]] = _table(
    Command(name="pause", usage="/pause", summary="stop the clock (the world waits)",
            parse=parse_no_args, run=control.pause),
    Command(name="resume", usage="/resume", summary="run the clock again",
            parse=parse_no_args, run=control.resume),
    Command(name="step", usage="/step [N]", summary="while paused, advance exactly N ticks "
            "(default 1)", parse=parse_step, run=control.step,
            details=("Only while paused. Runs the ticks at once, then stays paused.",)),
    Command(name="speed", usage="/speed HZ", summary="set the tick rate (ticks per second)",
            parse=parse_speed, run=control.speed,
            details=("HZ is a number from 0.001 to 1000, e.g. /speed 20 or /speed 0.5.",)),
    Command(name="spawn", usage="/spawn KIND [NAME] [X Y] [key=value ...]",
            summary="add an agent, item or object (at the next tick)",
            parse=parse_spawn, run=changes.spawn, details=changes.SPAWN_HELP),
    Command(name="kill", usage="/kill ID|NAME", summary="remove an entity; an agent dies "
            "and drops what it carries", parse=parse_one_entity, run=changes.kill),
    Command(name="give", usage="/give ID|NAME ITEM [N]", summary="put N (default 1) of an "
            "item into an agent's inventory", parse=parse_give, run=changes.give),
    Command(name="say", usage="/say ID|NAME TEXT", summary="make an agent say TEXT to "
            "those within hearing", parse=parse_say, run=changes.say),
    Command(name="ask", usage="/ask AGENT QUESTION [remember=yes|no]",
            summary="interview an agent: its own brain answers, off the tick",
            parse=talk.parse_ask, run=talk.ask, details=talk.ASK_HELP),
    Command(name="survey", usage="/survey QUESTION [FILTER ...] [remember=yes|no]",
            summary="ask every agent the filters match; the answers go to a table",
            parse=talk.parse_survey, run=talk.survey, details=talk.SURVEY_HELP),
    Command(name="surveys", usage="/surveys [ID]", summary="the surveys, or one's answers",
            parse=talk.parse_surveys, run=talk.surveys),
    Command(name="talk", usage="/talk AGENT [as=NAME] TEXT", summary="speak to an agent: "
            "as a person at its tile, or as the agent you play", parse=play.parse_talk,
            run=play.talk, details=play.TALK_HELP),
    Command(name="play", usage="/play AGENT [as=NAME]", summary="take control of an agent "
            "(its brain pauses until you /release it)", parse=play.parse_play, run=play.play,
            details=play.PLAY_HELP),
    Command(name="act", usage="/act AGENT ACTION [KEY=VALUE ...] [as=NAME]",
            summary="order the agent you play to do an action", parse=play.parse_act,
            run=play.act, details=play.ACT_HELP),
    Command(name="release", usage="/release AGENT [as=NAME] [force]", summary="give an "
            "agent you play back to its own brain", parse=play.parse_release,
            run=play.release, details=play.PLAY_HELP),
    Command(name="debug", usage="/debug ID|NAME", summary="everything about one entity",
            parse=parse_one_entity, run=views.debug,
            details=("Components, brain and plan, inventory, relationships, memory and the "
                     "recent events that involve it.",)),
    Command(name="list", usage="/list [KIND]", summary="a table of agents (default), items "
            "or objects, or of one personality or kind", parse=parse_list, run=views.listing),
    Command(name="stats", usage="/stats", summary="tick times, entity and event counts, "
            "log figures", parse=parse_no_args, run=stats.show),
    Command(name="top", usage="/top [METRIC] [N]", summary="rank agents by one of their "
            "metrics (no METRIC: list the metrics)", parse=scores.parse_top, run=scores.top,
            details=scores.TOP_HELP),
    Command(name="metrics", usage="/metrics [AGENT]", summary="one agent's metrics, or each "
            "brain's totals", parse=scores.parse_metrics, run=scores.metrics,
            details=scores.METRICS_HELP),
    Command(name="save", usage="/save", summary="snapshot the world now and say when it is "
            "on disk", parse=parse_no_args, run=control.save),
    Command(name="echo", usage="/echo [on|off]", summary="show or hide world-log lines at "
            "the console (the log file gets them either way)", parse=parse_echo,
            run=control.echo),
    Command(name="ability", usage='/ability "DESCRIPTION" | load FILE.py | improve NAME',
            summary="ask the angel for a new ability or a better version of one, or load one "
            "from a file", parse=abilities.parse_ability,
            run=abilities.ask, details=abilities.ABILITY_HELP),
    Command(name="cast", usage="/cast AGENT ABILITY [TARGET | X Y] [item=K qty=N text=T]",
            summary="order an agent to use an ability", parse=abilities.parse_cast,
            run=abilities.cast, details=abilities.CAST_HELP),
    Command(name="abilities", usage="/abilities [disable NAME [REASON] | enable NAME]",
            summary="list the abilities, or turn one off or on",
            parse=abilities.parse_abilities, run=abilities.manage,
            details=abilities.ABILITIES_HELP),
    Command(name="help", usage="/help [COMMAND]", summary="this list, or one command in "
            "detail", parse=parse_help, run=_help),
    Command(name="quit", usage="/quit", summary="stop the world cleanly and exit",
            parse=parse_no_args, run=control.stop),
)
