"""A recorded world served to the viewer: ``python main.py replay saves/NAME --serve``.

The page and the API are the live viewer's; what differs is where ticks come from. The
session's tick loop is a ``ReplayLoop``: each tick applies the inputs the log recorded for
it and checks the state hash the log recorded, so what the viewer shows is the recorded
world, verified as it plays. Controls are console commands (the one command surface, from
the terminal or the page): /play, /pause, /step N, /speed X (times the recorded pace, 0.25
to 100), /seek TICK and /fork NAME. Commands that would change the world are refused: a
recording changes only as it was recorded; /fork starts a new world that can change.

A seek starts from the latest of: the world on screen (if it is not past the target), a
snapshot or seek point in the save folder, or a checkpoint the background indexer wrote
(``checkpoints.py``); it then replays to the target, yielding to the event loop as it goes.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import orjson

from agent_world.app import Session
from agent_world.commands.dispatch import COMMANDS, Command
from agent_world.commands.parsing import CommandError, NoArgs, parse_no_args
from agent_world.commands.recent import RecentEvents
from agent_world.config import Config, ConfigError
from agent_world.core.loop import LoopError, TickLoop
from agent_world.core.world import World
from agent_world.persistence import DivergenceError, SaveFolder
from agent_world.persistence.eventlog import final_tick
from agent_world.persistence.folder import snapshot_files
from agent_world.persistence.replay import LogStepper
from agent_world.persistence.snapshots import (
    load_first_snapshot,
    load_snapshot_file,
    state_file_tick,
)
from agent_world.persistence.worlds import Setup
from agent_world.types import TickReport
from agent_world.web.access import is_terminal
from agent_world.web.server import WebError, WebServer

if TYPE_CHECKING:
    from agent_world.commands.dispatch import Console

__all__ = ["MAX_SPEED", "MIN_SPEED", "ForkRequest", "Playback", "ReplayLoop", "Served",
           "open_recording", "serve_recording"]

MIN_SPEED = 0.25
MAX_SPEED = 100.0
SEEK_YIELD_EVERY = 20  # ticks replayed between two turns of the event loop during a seek
RECORDED = ("a recorded world changes only as it was recorded; /fork NAME starts a new "
            "world from this tick that you can change")
# What a recording refuses (everything that would submit an input or write a save).
_CHANGES = ("spawn", "kill", "give", "say", "save", "ability", "cast", "abilities", "talk",
            "act", "release")


@dataclass(frozen=True, slots=True)
class ForkRequest:
    """The viewer asked to continue the recording as a new world ``name`` from ``tick``."""

    name: str
    tick: int
    world: World


class ReplayLoop(TickLoop):
    """Ticks from the log: the recorded inputs, the recorded hashes checked."""

    def __init__(self, loop: TickLoop, stepper: LogStepper, recorded_rate: float) -> None:
        super().__init__(loop.world, loop.clock, recorded_rate, loop.observers)
        self.between_ticks = loop.between_ticks
        self.stepper = stepper
        self.recorded_rate = recorded_rate
        self.diverged: str | None = None

    def at_end(self) -> bool:
        return not self.stepper.more()

    def tick_once(self) -> TickReport:
        if self.diverged is not None:
            raise LoopError(f"the replay stopped: {self.diverged}")
        if self.at_end():
            raise LoopError(f"the recording ends at tick {self.world.tick}; /seek back to "
                            "watch again")
        return super().tick_once()

    def advance(self) -> TickReport:
        try:
            report = self.stepper.step()
        except DivergenceError as exc:
            self.diverged = (f"DIVERGED at tick {exc.tick}: the log recorded state "
                             f"{exc.expected}, the replay reached {exc.actual}")
            self.pause()
            assert exc.report is not None
            return exc.report
        if self.at_end():
            self.pause()  # the end of the recording: the clock stops here
        return report


class Playback:
    """The timeline of a served replay: what the page's replay bar shows and does."""

    def __init__(self, session: Session, folder: SaveFolder, config: Config, setup: Setup,
                 *, last_tick: int) -> None:
        self.session = session
        self.folder = folder
        self.config = config
        self.setup = setup
        self.first_tick = session.world.tick
        self.last_tick = last_tick
        self.seeking: int | None = None
        self.fork: ForkRequest | None = None
        self.server: WebServer | None = None
        self.indexed_to: int | None = None  # the indexer's last checkpoint
        self.index_note = ""
        self.checkpoints = Path(tempfile.mkdtemp(prefix="agent-world-replay-"))
        self._indexer: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    @property
    def loop(self) -> ReplayLoop:
        loop = self.session.loop
        assert isinstance(loop, ReplayLoop)
        return loop

    def info(self) -> dict[str, Any]:
        loop = self.loop
        return {"world": self.folder.name, "tick": self.session.world.tick,
                "first_tick": self.first_tick, "last_tick": self.last_tick,
                "playing": not loop.paused, "speed": round(loop.tick_rate / loop.recorded_rate, 3),
                "seeking": self.seeking, "indexed_to": self.indexed_to,
                "index_note": self.index_note, "diverged": loop.diverged}

    # -- the background indexer -------------------------------------------------------------

    async def start_indexer(self) -> None:
        """Replay the whole log once in a child process, leaving checkpoints behind."""
        (self.checkpoints / "config.json").write_bytes(orjson.dumps(self.config.to_dict()))
        self._indexer = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "agent_world.web.checkpoints", str(self.folder.root),
            str(self.checkpoints), stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, stdin=asyncio.subprocess.DEVNULL)
        self._reader = asyncio.create_task(self._follow_indexer(), name="replay-indexer")

    async def _follow_indexer(self) -> None:
        proc = self._indexer
        assert proc is not None and proc.stdout is not None
        while line := await proc.stdout.readline():
            try:
                said = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if "tick" in said:
                self.indexed_to = said["tick"]
            elif "end" in said:
                self.index_note = f"indexed to the end (tick {said['end']})"
            elif "error" in said:
                self.index_note = f"indexing stopped: {said['error']}"
                self.session.report_problem(f"replay: {self.index_note}")
        await proc.wait()

    async def close(self) -> None:
        """Stop the indexer and the session, close the world on screen (unless a fork
        takes it over), and remove the temporary folders."""
        proc = self._indexer
        if proc is not None and proc.returncode is None:
            proc.terminate()
            with contextlib.suppress(ProcessLookupError):
                await proc.wait()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        self.session.close()
        if self.fork is None:
            self.session.world.close()
        shutil.rmtree(self.checkpoints, ignore_errors=True)
        shutil.rmtree(self.config.paths.logs, ignore_errors=True)

    # -- seeking ----------------------------------------------------------------------------

    def _start_for(self, tick: int) -> tuple[int, Path | None]:
        """Where a seek to ``tick`` starts: the latest state at or before it, the world on
        screen (no path) or a file: the folder's snapshots and seek points, and the
        indexer's checkpoints."""
        files = self.folder.saved_states(until=tick) + [
            (t, p) for t, p in snapshot_files(self.checkpoints) if t <= tick]
        best = max(files, default=(-1, None))
        here = self.session.world.tick
        return (here, None) if best[0] <= here <= tick else best

    def _describe(self, start: int, path: Path | None) -> str:
        if path is None:
            return f"the world on screen at tick {start}"
        kind = {self.checkpoints: "the indexer's checkpoint",
                self.folder.seek_dir: "the seek point"}.get(path.parent, "the snapshot")
        return f"{kind} of tick {start}"

    async def seek(self, tick: int) -> str:
        if not self.first_tick <= tick <= self.last_tick:
            raise CommandError(f"TICK must be from {self.first_tick} to {self.last_tick} "
                               f"(the recording), got {tick}")
        if self.seeking is not None:
            raise CommandError(f"a seek to tick {self.seeking} is under way; wait for it")
        loop = self.loop
        was_playing = not loop.paused
        loop.pause()
        self.seeking = tick
        loop.hold("seek")
        try:
            start, path = self._start_for(tick)
            world = self.session.world
            if path is not None:
                world = load_snapshot_file(path, self.config).world
                self.setup(world)
            stepper = LogStepper(world, self.folder, end=self.last_tick)
            try:
                while world.tick < tick and stepper.more():
                    stepper.step()
                    if world.tick % SEEK_YIELD_EVERY == 0:
                        await asyncio.sleep(0)
            except DivergenceError as exc:
                if world is not self.session.world:
                    world.close()
                raise CommandError(f"the log does not replay to tick {tick}: it diverged at "
                                   f"tick {exc.tick}") from None
            self._replace(world)
            loop.stepper = stepper
            loop.diverged = None
        finally:
            self.seeking = None
            loop.release("seek")
        if was_playing and not loop.at_end():
            loop.resume()
        return f"at tick {self.session.world.tick} (from {self._describe(start, path)})"

    def _replace(self, world: World) -> None:
        """Show ``world`` (another object, or the one on screen moved on by a seek): the
        viewer's clients start over from a keyframe, and the consoles forget the events of
        other ticks."""
        session, old = self.session, self.session.world
        for observer in session.loop.observers:
            if isinstance(observer, RecentEvents):
                observer.events.clear()  # /debug's recent events: of other ticks now
        if world is not old:
            world.inbox.redact = old.inbox.redact
            session.world = world
            session.loop.world = world
        if self.server is not None:
            self.server.world_replaced(world)
        if world is not old:
            old.close()

    # -- commands ---------------------------------------------------------------------------

    def commands(self) -> dict[str, Command[Any]]:
        """The console's table for this replay: the usual reading commands, the clock as a
        player's, and no command that would change the recording."""
        table = dict(COMMANDS)
        for name in _CHANGES:
            table[name] = _refused(table[name])
        table["resume"] = Command(name="resume", usage="/resume", summary="play (as /play)",
                                  parse=parse_no_args, run=self._play)
        table["play"] = Command(name="play", usage="/play", summary="play the recording "
                                "from here", parse=parse_no_args, run=self._play)
        table["speed"] = Command(
            name="speed", usage="/speed X", summary=f"play at X times the recorded pace "
            f"({MIN_SPEED:g} to {MAX_SPEED:g})", parse=_parse_speed, run=self._speed)
        table["seek"] = Command(
            name="seek", usage="/seek TICK", summary="jump to a tick of the recording",
            parse=_parse_tick, run=self._seek,
            details=("Starts from the nearest snapshot, seek point or checkpoint at or "
                     "before TICK and replays the rest, verifying it.",))
        table["fork"] = Command(
            name="fork", usage="/fork NAME", summary="continue from this tick as a new "
            "world NAME (as replay --fork)", parse=_parse_name, run=self._fork,
            details=("Stops the replay, writes saves/NAME starting at this tick and runs it "
                     "live in this process; the page follows.",))
        return table

    async def _play(self, _console: Console, _args: NoArgs) -> list[str]:
        loop = self.loop
        if loop.diverged is not None:
            raise CommandError(f"the replay stopped: {loop.diverged}; /seek to an earlier tick")
        if loop.at_end():
            raise CommandError(f"the recording ends at tick {self.session.world.tick}; /seek "
                               "back to watch again")
        if not loop.paused:
            return [f"already playing (tick {self.session.world.tick})"]
        loop.resume()
        return [f"playing from tick {self.session.world.tick} at "
                f"{loop.tick_rate / loop.recorded_rate:g}x"]

    async def _speed(self, _console: Console, speed: float) -> list[str]:
        loop = self.loop
        loop.set_speed(loop.recorded_rate * speed)
        return [f"speed {speed:g}x ({loop.tick_rate:g} ticks per second)"]

    async def _seek(self, _console: Console, tick: int) -> list[str]:
        return [await self.seek(tick)]

    async def _fork(self, _console: Console, name: str) -> list[str]:
        target = Path(self.config.paths.saves) / name
        if SaveFolder.describe(target) not in ("missing", "empty"):
            raise CommandError(f"{target} already exists; fork into a new name")
        if self.seeking is not None:
            raise CommandError("a seek is under way; fork when it is done")
        tick = self.session.world.tick
        self.fork = ForkRequest(name, tick, self.session.world)
        self.loop.stop()
        return [f"forking at tick {tick} into {target}: the new world runs live in a moment "
                "(this page follows it)"]


def _refused(command: Command[Any]) -> Command[Any]:
    async def refuse(_console: Console, _args: Any) -> list[str]:
        raise CommandError(RECORDED)

    return Command(name=command.name, usage=command.usage, summary=command.summary,
                   parse=lambda argv: argv, run=refuse, details=command.details)


def _one(argv: Sequence[str], what: str) -> str:
    if len(argv) != 1:
        raise CommandError(f"give exactly one {what}, got {len(argv)} words")
    return argv[0]


def _parse_speed(argv: Sequence[str]) -> float:
    text = _one(argv, "speed").lower().removesuffix("x")
    try:
        speed = float(text)
    except ValueError:
        raise CommandError(f"X must be a number from {MIN_SPEED:g} to {MAX_SPEED:g}, "
                           f"got {argv[0]!r}") from None
    if not MIN_SPEED <= speed <= MAX_SPEED:
        raise CommandError(f"X must be from {MIN_SPEED:g} to {MAX_SPEED:g}, got {speed:g}")
    return speed


def _parse_tick(argv: Sequence[str]) -> int:
    text = _one(argv, "tick")
    if not text.isdigit():
        raise CommandError(f"TICK must be a whole number >= 0, got {text!r}")
    return int(text)


def _parse_name(argv: Sequence[str]) -> str:
    name = _one(argv, "name")
    try:
        Config().replace(world={"name": name})
    except ConfigError as exc:
        raise CommandError(str(exc)) from None
    return name


@dataclass(slots=True)
class Served:
    """How a served replay ended: its exit status, and a fork to run next (if asked)."""

    status: int
    fork: ForkRequest | None = None
    port: int = 0
    token: str | None = None  # the web's, handed to the forked world (the page keeps it)


def open_recording(folder: SaveFolder, config: Config, setup: Setup) -> Playback:
    """The recording of ``folder`` as a paused session at its first tick, with its timeline
    (``await playback.close()`` ends it all)."""
    rate = folder.recorded_tick_rate(config.world.tick_rate)
    last = max(int(folder.read_meta().get("last_tick", -1) or -1),
               state_file_tick(folder) or -1, final_tick(folder))
    world = load_first_snapshot(folder, config).world
    setup(world)
    # No model is asked (decisions come from the log), and the replay's world log stays out
    # of the live worlds' log.
    logs = tempfile.mkdtemp(prefix="agent-world-replay-log-")
    replaying = config.replace(llm={"provider": "none"}, paths={"logs": logs},
                               world={"tick_rate": rate})
    session = Session(replaying, world)
    session.loop = ReplayLoop(session.loop, LogStepper(world, folder, end=last), rate)
    session.loop.pause()
    playback = Playback(session, folder, replaying, setup, last_tick=max(last, world.tick))
    session.commands = playback.commands()
    return playback


ConsoleStarter = Callable[[Session], Awaitable[Callable[[], Awaitable[None]]]]


async def serve_recording(folder: SaveFolder, config: Config, setup: Setup, *, token: str | None,
                          to: int | None, start_console: ConsoleStarter,
                          out: TextIO) -> Served:
    """Serve ``folder``'s recording to the viewer until stopped (Ctrl-C, /quit) or forked.
    ``start_console`` starts the terminal's console on the session and returns what stops
    it."""
    playback = open_recording(folder, config, setup)
    session, rate = playback.session, playback.loop.recorded_rate
    viewer: WebServer | None = None
    stop_console = None
    try:
        try:
            viewer = WebServer(session, config.web, token=token)
            viewer.playback, playback.server = playback, viewer
            url = await viewer.start()
        except (WebError, ConfigError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return Served(2)
        await playback.start_indexer()
        if to is not None:
            try:
                await playback.seek(to)
            except CommandError as exc:
                print(f"error: --to: {exc}", file=sys.stderr)
                return Served(2)
        print(f"replaying world '{folder.name}' ({folder.root}): ticks {playback.first_tick}.."
              f"{playback.last_tick}, recorded at {rate:g} Hz; paused at tick "
              f"{session.world.tick}\n"
              f"  viewer: {url}" + (f"  ({viewer.note})" if viewer.note else "")
              + f"\n  token: {viewer.token_line(terminal=is_terminal(out))}"
              + "\n  /play, /pause, /step N, /speed X, /seek TICK, /fork NAME; Ctrl-C stops",
              file=out, flush=True)
        stop_console = await start_console(session)
        await session.run(paced=True)
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        return Served(0, playback.fork, port,
                      viewer.token if viewer.generated_token else None)
    finally:
        if stop_console is not None:
            await stop_console()
        if viewer is not None:
            await viewer.close()
        await playback.close()
