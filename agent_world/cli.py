"""Command line: ``python main.py [options]`` runs a world."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Sequence

import orjson

from agent_world import __version__
from agent_world.app import Session
from agent_world.config import Config, ConfigError, load_config
from agent_world.console import StdinKind, run_console, stdin_kind
from agent_world.core.world import World

__all__ = ["build_parser", "main"]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"expected 0 <= seed < 2**63, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python main.py",
        description="Run an Agent World: agents live, trade, fight and talk at 10 Hz.",
    )
    parser.add_argument("--version", action="version", version=f"agent-world {__version__}")
    parser.add_argument("--config", metavar="FILE",
                        help="YAML config (default: ./config.yaml if present, else defaults)")
    parser.add_argument("--seed", type=_seed, help="override world.seed")
    parser.add_argument("--world", metavar="NAME", help="override world.name (save folder)")
    parser.add_argument("--headless", action="store_true",
                        help="no interactive console; with --ticks, run flat out")
    parser.add_argument("--ticks", type=_positive_int, metavar="N",
                        help="stop after N ticks and print a JSON summary line")
    parser.add_argument("--exit-on-eof", action="store_true",
                        help="without a terminal, stop the world when piped commands end "
                             "(by default it runs on)")
    return parser


def _configure(args: argparse.Namespace) -> Config:
    config = load_config(args.config)
    world_changes: dict[str, object] = {}
    if args.seed is not None:
        world_changes["seed"] = args.seed
    if args.world is not None:
        world_changes["name"] = args.world
    if world_changes:
        config = config.replace(world=world_changes)
    config.llm.api_key()  # a configured but missing key stops start-up here
    return config


def _banner(session: Session) -> str:
    cfg = session.config
    world = session.world
    llm = (f"{cfg.llm.provider} ({cfg.llm.model} at {cfg.llm.base_url})" if cfg.llm.enabled
           else "not configured: agents use built-in brains (set llm.provider to use one)")
    return "\n".join([
        f"Agent World {__version__}: world '{cfg.world.name}', seed {world.seed}, "
        f"{world.terrain.width}x{world.terrain.height}, {len(world.agents())} agents, "
        f"{cfg.world.tick_rate:g} Hz",
        f"  world log:   {session.world_log.path}  (follow with: tail -F "
        f"{session.world_log.path})",
        f"  save folder: {session.save_dir}/",
        f"  LLM:         {llm}",
    ])


def _console_mode(args: argparse.Namespace) -> StdinKind:
    """tty: a prompt; pipe: commands read from stdin; none: no console at all.

    Runs of a fixed number of ticks are scripts and never read stdin. Without a terminal
    (or with --headless) there is no prompt; piped stdin still carries commands."""
    if args.ticks is not None:
        return "none"
    kind = stdin_kind(sys.stdin, sys.stdout)
    if kind == "tty" and args.headless:
        return "none"
    return kind


_CONSOLE_HINT = {
    "tty": "  Type /help for the commands (Tab completes); /quit, Ctrl-C or Ctrl-D stops "
           "cleanly.",
    "pipe": "  Reading commands from stdin, one per line (/help lists them); Ctrl-C stops "
            "cleanly.",
    "none": "  Ctrl-C stops cleanly.",
}


def _start_console(session: Session, mode: StdinKind,
                   args: argparse.Namespace) -> asyncio.Task[None] | None:
    if mode == "none":
        return None
    task = asyncio.create_task(run_console(session, interactive=mode == "tty",
                                           exit_on_eof=args.exit_on_eof), name="console")

    def stop_world_if_failed(done: asyncio.Task[None]) -> None:
        if not done.cancelled() and done.exception() is not None:
            session.loop.stop()  # the error is raised again when the task is awaited

    task.add_done_callback(stop_world_if_failed)
    return task


async def _stop_console(task: asyncio.Task[None] | None) -> None:
    if task is None:
        return
    if not task.done():
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def _run(config: Config, args: argparse.Namespace) -> int:
    echo = None if args.headless or not config.log.echo else sys.stdout
    world = World.create(config)
    session = Session(config, world, echo=echo)
    out = sys.stderr if args.headless else sys.stdout
    mode = _console_mode(args)
    print(_banner(session), file=out)
    print(_CONSOLE_HINT[mode], file=out, flush=True)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, session.loop.stop)
    console = _start_console(session, mode, args)
    try:
        await session.run(max_ticks=args.ticks, paced=not (args.headless and args.ticks))
    finally:
        try:
            await _stop_console(console)  # the world stopped: so does the console
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            session.close()
    summary = session.summary()
    if args.ticks is not None:
        sys.stdout.write(orjson.dumps(summary).decode() + "\n")
    else:
        print(f"stopped at tick {summary['tick']} (state {summary['state_hash']})", file=out)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        config = _configure(args)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return asyncio.run(_run(config, args))


if __name__ == "__main__":
    raise SystemExit(main())
