"""Clock and session commands: /pause /resume /step /speed /save /quit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_world.console.parsing import CommandError, NoArgs, SpeedArgs, StepArgs
from agent_world.core.loop import LoopError

if TYPE_CHECKING:
    from agent_world.console.commands import Console

__all__ = ["SAVE_OFF", "SAVE_REQUESTED", "pause", "resume", "save", "speed", "step", "stop"]

STEP_CHUNK = 100
SAVE_OFF = "saving is off for this world (started with --no-save)"
SAVE_REQUESTED = "snapshot requested; it is written at the next tick boundary"


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
    try:
        while left and not loop.stopped:  # in chunks, so a stop (Ctrl-C) cuts a long step
            chunk = min(left, STEP_CHUNK)
            await loop.step(chunk)
            left -= chunk
    except LoopError as exc:
        raise CommandError(str(exc)) from None
    after = console.world.tick
    done = f"tick{'s' if after - before != 1 else ''}: tick {before} -> {after}"
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
    # The seam to the persistence layer: a session with saving on has a ``persistence``
    # object whose request_snapshot() asks for a snapshot at the next tick boundary.
    persistence = getattr(console.session, "persistence", None)
    if persistence is None:
        return [SAVE_OFF]
    persistence.request_snapshot()
    return [SAVE_REQUESTED]


async def stop(console: Console, _args: NoArgs) -> list[str]:
    """/quit: stop the loop; the command line's shutdown path does the rest."""
    console.quit_requested = True
    console.loop.stop()
    return [f"stopping at tick {console.world.tick}"]
