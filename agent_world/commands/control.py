"""Clock and session commands: /pause /resume /step /speed /save /echo /quit."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from agent_world.commands.parsing import CommandError, EchoArgs, NoArgs, SpeedArgs, StepArgs
from agent_world.core.loop import LoopError

if TYPE_CHECKING:
    from agent_world.commands.dispatch import Console

__all__ = ["SAVE_OFF", "echo", "pause", "resume", "save", "speed", "step",
           "stop"]

STEP_CHUNK = 100
PROGRESS_S = 2.0  # a long /step at the prompt says how far it got this often
SAVE_OFF = "saving is off for this world (started with --no-save)"
SAVE_WAIT_S = 10.0  # /save waits this long for the disk before it answers anyway


async def pause(console: Console, _args: NoArgs) -> list[str]:
    tick = console.world.tick
    if console.loop.paused:
        return [f"already paused at tick {tick}"]
    console.loop.pause()
    return [f"paused at tick {tick}; /step [N] advances, /resume runs on"]


async def resume(console: Console, _args: NoArgs) -> list[str]:
    if not console.loop.paused:
        return [f"already running (tick {console.world.tick})"]
    console.loop.resume()
    return [f"running from tick {console.world.tick} at {console.loop.tick_rate:g} Hz"]


async def step(console: Console, args: StepArgs) -> list[str]:
    loop = console.loop
    if not loop.paused:
        raise CommandError("/step works only while paused; /pause first")
    before = console.world.tick
    left = args.n
    shown = time.monotonic()
    with console.cancellable() as cancel:
        try:
            # In chunks: between two, a stop or Ctrl-C (which cancels the step, not the
            # world) takes effect, and a long step shows how far it got.
            while left and not loop.stopped and not cancel.requested:
                chunk = min(left, STEP_CHUNK)
                await loop.step(chunk)
                left -= chunk
                if left and console.interactive and time.monotonic() - shown >= PROGRESS_S:
                    shown = time.monotonic()
                    console.tell(f"stepping: {args.n - left:,} of {args.n:,} ticks done "
                                 f"(tick {console.world.tick}); Ctrl-C cancels the step")
        except LoopError as exc:
            raise CommandError(str(exc)) from None
    after = console.world.tick
    done = f"tick{'s' if after - before != 1 else ''}: tick {before} -> {after}"
    if left and not loop.stopped:
        return [f"step cancelled after {after - before} of {args.n} {done} (paused)"]
    if left:
        return [f"stopped after {after - before} of {args.n} {done}: the world is stopping"]
    return [f"stepped {after - before} {done} (paused)"]


async def speed(console: Console, args: SpeedArgs) -> list[str]:
    loop = console.loop
    before = loop.tick_rate
    try:
        loop.set_speed(args.hz)
    except LoopError as exc:
        raise CommandError(str(exc)) from None
    note = " (paused: /resume to run)" if loop.paused else ""
    return [f"speed {loop.tick_rate:g} Hz (was {before:g} Hz){note}"]


async def save(console: Console, _args: NoArgs) -> list[str]:
    """/save: a snapshot of the world as it is, confirmed once it is on disk."""
    persistence = console.session.persistence
    if persistence is None:
        return [SAVE_OFF]
    tick = console.world.tick
    written = asyncio.wrap_future(persistence.save())
    with console.cancellable() as cancel:
        waited = 0.0
        while not written.done() and waited < SAVE_WAIT_S and not cancel.requested:
            await asyncio.wait({written}, timeout=0.1)
            waited += 0.1
    if not written.done():
        written.cancel()
        problem = persistence.stats()["error"] or "the writer is still busy"
        return [f"the snapshot of tick {tick} is not on disk yet ({problem}); it is kept and "
                "written as soon as the disk takes it (/stats shows when)"]
    try:
        saved = written.result()
    except OSError as exc:
        raise CommandError(f"the snapshot of tick {tick} was not saved: {exc}") from None
    return [f"saved tick {saved.tick} to {saved.path} ({_size(saved.size)}, written in "
            f"{saved.ms:.0f} ms)"]


def _size(n: int) -> str:
    return f"{n / (1 << 20):.1f} MB" if n >= 1 << 20 else f"{n / 1024:.0f} KB"


async def echo(console: Console, args: EchoArgs) -> list[str]:
    """/echo [on|off]: whether world-log lines are also printed at the console."""
    log = console.session.world_log
    if args.on is None:
        state = "on" if log.echo is not None else "off"
        return [f"world-log echo is {state}; the log is written to {log.path} either way "
                "(/echo on or /echo off)"]
    if not args.on:
        if log.echo is not None:
            console.muted_echo = log.echo
            log.echo = None
        return [f"world-log echo off; follow the log with: tail -F {log.path}"]
    if log.echo is None:
        if console.muted_echo is None:
            raise CommandError("there is no terminal to echo the log to (the world runs "
                               f"headless or from a pipe); follow it with tail -F {log.path}")
        log.echo, console.muted_echo = console.muted_echo, None
    return ["world-log echo on"]


async def stop(console: Console, _args: NoArgs) -> list[str]:
    """/quit: stop the loop; the command line's shutdown path does the rest."""
    console.quit_requested = True
    console.loop.stop()
    return [f"stopping at tick {console.world.tick}"]
