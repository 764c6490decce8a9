"""Command line.

``python main.py [options]`` runs a world (new, or the saved one of that name, resumed).
``python main.py replay saves/NAME [--to TICK] [--playback [SPEED]] [--fork NEW]`` replays a
saved world from its first snapshot, verifying it, and can fork it into a new world.
``python main.py ability check FILE.py`` validates an ability source and dry-runs it;
``python main.py policy check FILE.py`` does the same for a policy (docs/policies.md), and
``python main.py policy list`` lists the policies agents may use.
``python main.py worlds [list | delete NAME]`` lists or deletes saved worlds
(``cli.worlds``); ``python main.py runs [list | delete NAME]`` does the same for training
and evaluation runs (``cli.runs``); ``python main.py report saves/NAME`` reports how a saved
world lived (``cli.report``); ``python main.py schema`` prints the brain API's JSON Schema
(``cli.schema``); ``python main.py eval SCENARIO`` compares brains (``cli.eval``) and
``python main.py train SCENARIO`` improves a policy (``cli.train``); ``python main.py reask
saves/NAME --brain BRAIN`` asks other brains a saved world's logged decisions
(``cli.reask``) and ``python main.py export saves/NAME`` writes them out as trajectories
(``cli.export``). ``SUBCOMMANDS`` is the one table of them: dispatch, ``--help`` and the
docs' test read it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import os
import signal
import sys
import tempfile
import textwrap
import traceback
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from agent_world import __version__
from agent_world.agents import LLMBrain
from agent_world.app import Session
from agent_world.argtypes import positive_int, seed, speed, tick
from agent_world.cli.eval import build_parser as build_eval_parser
from agent_world.cli.eval import main as eval_main
from agent_world.cli.export import build_parser as build_export_parser
from agent_world.cli.export import main as export_main
from agent_world.cli.forkeval import build_parser as build_fork_eval_parser
from agent_world.cli.forkeval import main as fork_eval_main
from agent_world.cli.reask import build_parser as build_reask_parser
from agent_world.cli.reask import main as reask_main
from agent_world.cli.replay import (
    available_cpus,
    resolve_world_path,
    run_replay,
    sandboxed,
)
from agent_world.cli.report import build_parser as build_report_parser
from agent_world.cli.report import main as report_main
from agent_world.cli.runs import build_parser as build_runs_parser
from agent_world.cli.runs import main as runs_main
from agent_world.cli.schema import build_parser as build_schema_parser
from agent_world.cli.schema import main as schema_main
from agent_world.cli.train import build_parser as build_train_parser
from agent_world.cli.train import main as train_main
from agent_world.cli.verify import build_parser as build_verify_parser
from agent_world.cli.verify import main as verify_main
from agent_world.cli.worlds import build_parser as build_worlds_parser
from agent_world.cli.worlds import main as worlds_main
from agent_world.config import Config, ConfigError, llm_profile_of, load_config, unknown_model
from agent_world.console import StdinKind, run_console, stdin_kind
from agent_world.llm.local import check_local
from agent_world.persistence import (
    DivergenceError,
    OpenedWorld,
    SaveError,
    SaveFolder,
    fork_world,
    open_world,
)
from agent_world.policies.check import PolicyChecker
from agent_world.policies.library import available_policies
from agent_world.policies.policy import PolicyError
from agent_world.runs import prune_runs
from agent_world.sandbox import AbilityChecker, Sandbox
from agent_world.sandbox.pool import WorkerDied
from agent_world.types import ProviderError
from agent_world.userbrains.registry import load_brains, unregistered
from agent_world.web import WebError, WebServer, check_web, web_token
from agent_world.web.access import is_terminal
from agent_world.web.playback import serve_recording
from agent_world.worldlog import prune_nosave_logs, world_log_path

__all__ = ["SUBCOMMANDS", "Subcommand", "build_ability_parser", "build_parser",
           "build_policy_parser", "build_replay_parser", "main", "other_commands"]


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE",
                        help="YAML config (default: ./config.yaml if present, else defaults)")
    parser.add_argument("--headless", action="store_true",
                        help="no interactive console; with --ticks or --until, run flat out")
    parser.add_argument("--exit-on-eof", action="store_true",
                        help="without a terminal, stop the world when piped commands end "
                             "(by default it runs on)")
    parser.add_argument("--json-replies", action="store_true",
                        help="without a terminal, answer every piped command with exactly one "
                             "line: a JSON object {\"command\", \"ok\", \"reply\": [lines]}")
    parser.add_argument("--brains-path", metavar="DIR",
                        help="import the registered brains (brains: in the config) from "
                             "this folder too")
    stop = parser.add_mutually_exclusive_group()
    stop.add_argument("--ticks", type=positive_int, metavar="N",
                      help="stop after N more ticks and print a JSON summary line")
    stop.add_argument("--until", type=tick, metavar="TICK",
                      help="stop when the world reaches TICK (at once if it is already "
                           "there) and print a JSON summary line")
    web_choice = parser.add_mutually_exclusive_group()
    web_choice.add_argument("--web", action="store_true", default=None,
                            help="serve the viewer and API even in a --ticks/--until run")
    web_choice.add_argument("--no-web", dest="web", action="store_false",
                            help="do not serve the viewer and API (web.enabled: false)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python main.py",
        description="Run an Agent World: agents live, trade, fight and talk at 10 Hz. "
                    "A world with a save folder resumes where it stopped.",
        epilog=other_commands(), formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"agent-world {__version__}")
    _add_run_options(parser)
    parser.add_argument("--seed", type=seed, help="override world.seed (new worlds only)")
    parser.add_argument("--world", metavar="NAME", help="override world.name (save folder)")
    parser.add_argument("--no-save", action="store_true",
                        help="run without a save folder (nothing is written but this run's "
                             "world log, logs/nosave/NAME-PID.log)")
    return parser


def build_replay_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python main.py replay",
        description="Replay a saved world from its first snapshot (with --to, from the "
                    "nearest snapshot or seek point) using only its logged "
                    "inputs (no LLM, no network), verifying every logged state hash and "
                    "snapshot. Exit status: 0 OK (all verified), 3 PARTLY VERIFIED (damage "
                    "or lost lines: the output names what was not verified), 1 DIVERGED, "
                    "2 bad usage.",
    )
    parser.add_argument("path", type=Path, help="the save folder (e.g. saves/default), or "
                                                "the name of a world in paths.saves")
    parser.add_argument("--to", type=tick, metavar="TICK",
                        help="stop at TICK and print that tick's state hash (starting from "
                             "the latest snapshot or seek point at or before it)")
    parser.add_argument("--from-start", action="store_true",
                        help="with --to: replay from the first snapshot, verifying the "
                             "whole log up to TICK")
    parser.add_argument("--playback", type=speed, nargs="?", const=1.0, metavar="SPEED",
                        help="pace the replay (SPEED x real time, default 1) and print the "
                             "world log as it goes")
    parser.add_argument("--workers", type=positive_int, metavar="N",
                        help="processes a verification from the first snapshot may use, "
                             "each replaying the span between two saved states, when the log "
                             "is long enough (default: the CPUs this process may use; 1 "
                             "replays on one core)")
    parser.add_argument("--fork", metavar="NEW",
                        help="with --to: start a new world NEW from that tick and run it")
    parser.add_argument("--serve", action="store_true",
                        help="serve the recording to the web viewer with a timeline (play, "
                             "pause, speed, step, seek, fork); --to TICK opens it there")
    _add_run_options(parser)
    return parser


def build_ability_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python main.py ability",
        description="Work with ability source files (the same contract built-in and generated "
                    "abilities follow).",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    check = commands.add_parser(
        "check", help="validate a source and dry-run it in scratch worlds",
        description="Validate an ability source (gate, RestrictedPython, metadata) and "
                    "dry-run it in scratch worlds through the real sandbox. Prints "
                    "'accepted', 'rejected: REASON' or 'disabled: REASON' (stopped while "
                    "running); exits 0 only when accepted.")
    check.add_argument("file", type=Path, help="the ability source, e.g. my_ability.py")
    check.add_argument("--config", metavar="FILE",
                       help="YAML config whose abilities/sandbox settings apply "
                            "(default: ./config.yaml if present, else defaults)")
    return parser


def _read_source(path: Path) -> str | None:
    """The text of a source file, or None after saying on stderr why it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: cannot read {path}: {exc}", file=sys.stderr)
        return None


def _ability_main(argv: Sequence[str]) -> int:
    args = build_ability_parser().parse_args(argv)
    config = load_config(args.config)
    source = _read_source(args.file)
    if source is None:
        return 2
    with AbilityChecker(config) as checker:
        report = checker.check(source)
    print(report.line())
    if report.accepted and report.meta is not None:
        meta = report.meta
        print(f"  {meta.name}: {meta.description} (energy {meta.energy_cost:g}, cooldown "
              f"{meta.cooldown}, range {meta.range}, args {dict(meta.args) or 'none'}); took "
              f"effect in {report.casts} of {config.angel.dry_runs} dry runs",
              file=sys.stderr)
        for note in report.notes:
            print(f"  {note}", file=sys.stderr)
    return 0 if report.accepted else 1


def build_policy_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python main.py policy",
        description="Work with policy files: agents' brains written as sandboxed code "
                    "(docs/policies.md), used as brain=policy:NAME.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    check = commands.add_parser(
        "check", help="validate a policy and dry-run decide() on real observations",
        description="Validate a policy source (gate, RestrictedPython, metadata) and "
                    "dry-run decide(obs, memory) through the real sandbox on observations "
                    "of a small generated world. Prints 'accepted', or one 'rejected: "
                    "REASON' or 'failed: REASON' line per problem, then (on stderr) each "
                    "dry run's decision and the steps it took; exits 0 only when accepted.")
    check.add_argument("file", type=Path, help="the policy source, e.g. my_policy.py")
    listing = commands.add_parser(
        "list", help="the policies agents may use: built-in examples and brains.policies",
        description="List the policies agents may use as brain=policy:NAME: the built-in "
                    "examples and the files of the brains.policies folder.")
    for sub in (check, listing):
        sub.add_argument("--config", metavar="FILE",
                         help="YAML config whose brains/sandbox/world settings apply "
                              "(default: ./config.yaml if present, else defaults)")
    return parser


def _policy_main(argv: Sequence[str]) -> int:
    args = build_policy_parser().parse_args(argv)
    config = load_config(args.config)
    if args.command == "list":
        try:
            policies = available_policies(config.brains.policies)
        except PolicyError as exc:
            print(f"error: {exc.problems[0]}", file=sys.stderr)
            return 2
        for policy in policies.values():
            meta = policy.meta
            print(f"{policy.brain:<24} v{meta.version:<3} {policy.origin}: {meta.description}")
        return 0
    source = _read_source(args.file)
    if source is None:
        return 2
    try:
        # Another policy of that name would be refused at start-up (the same text is not
        # another policy: the file checked is one of them).
        taken = {name for name, policy in available_policies(config.brains.policies).items()
                 if policy.source != source}
    except PolicyError:
        taken = set()  # another file is broken: this one is checked on its own
    with PolicyChecker(config) as checker:
        report = checker.check(source, origin=str(args.file), taken=taken)
    print("\n".join(report.lines()))
    for line in report.details():
        print(f"  {line}", file=sys.stderr)
    return 0 if report.accepted else 1


def _configure(args: argparse.Namespace, *, needs_llm: bool = True) -> Config:
    config = load_config(args.config)
    world_changes: dict[str, object] = {}
    if getattr(args, "seed", None) is not None:
        world_changes["seed"] = args.seed
    if getattr(args, "world", None) is not None:
        world_changes["name"] = args.world
    if getattr(args, "fork", None) is not None:
        world_changes["name"] = args.fork
    if world_changes:
        config = config.replace(world=world_changes)
    if getattr(args, "no_save", False):
        config = config.replace(persistence={"enabled": False})
    if config.web.enabled:
        check_web(config.web)  # a missing token or an open address stops start-up here
    if needs_llm:
        config.llm.api_key()  # a configured but missing key stops start-up here
        if config.llm.provider == "local":
            try:
                check_local(config.llm.model)
            except ProviderError as exc:
                raise ConfigError(str(exc)) from None
    return config


def _llm_brain_agents(session: Session) -> list[tuple[str, int, float]]:
    """Agents whose registered brain is an ``LLMBrain`` (they ask the configured LLM too):
    a label, how many, and the calls an hour each its schedule makes (a decision every
    ``decisions.brains.think_interval_ticks`` and a reflection every ``reflect_every_ticks``)."""
    if session.brains is None:
        return []
    hourly = 3600 * session.config.world.tick_rate
    counts = Counter(row.agent.brain for _eid, row in session.world.agents())
    found = []
    for name, cls in session.brains.classes.items():
        if counts[name] and issubclass(cls, LLMBrain):
            rate = hourly / session.config.decisions.of("brains").think_interval_ticks
            if cls.reflect_every_ticks:
                rate += hourly / cls.reflect_every_ticks
            found.append((f"agents on LLM brain {name}", counts[name], rate))
    return found


def _banner(session: Session, opened: OpenedWorld, *, terminal: bool = False,
            pruned: Sequence[str] = ()) -> str:
    cfg = session.config
    world = session.world
    thinkers = sum(1 for _eid, row in world.agents() if row.agent.brain == "llm")
    others = _llm_brain_agents(session)
    on_brains = "".join(f", {n} {label}" for label, n, _rate in others)
    where = f" at {cfg.llm.endpoint}" if cfg.llm.provider != "local" else " in-process"
    llm = (f"{cfg.llm.provider} ({cfg.llm.model}{where}), {thinkers} LLM agents{on_brains}"
           if cfg.llm.enabled
           else "not configured: agents use built-in brains (set llm.provider to use one)")
    if session.save_dir is None:
        saves = "none (--no-save): nothing but the world log is written"
    elif opened.resumed:
        saves = (f"{session.save_dir}/ (resumed at tick {world.tick}, "
                 f"{opened.replayed_ticks} ticks replayed from the log)")
    else:
        saves = f"{session.save_dir}/ (new world)"
    lines = [
        f"Agent World {__version__}: world '{cfg.world.name}', seed {world.seed}, "
        f"{world.terrain.width}x{world.terrain.height}, {len(world.agents())} agents, "
        f"{cfg.world.tick_rate:g} Hz",
        f"  world log:   {session.world_log.path}  (follow with: tail -F "
        f"{session.world_log.path})",
        f"  save folder: {saves}",
        f"  LLM:         {llm}",
    ]
    if session.llm is not None:
        lines.append(f"  LLM cost:    {session.llm.estimate(thinkers, others)}")
    by_model = Counter(llm_profile_of(row.agent.brain) for _eid, row in world.agents())
    for name, model in session.llm_models.items():
        profile = session.llm_profiles[name]
        lines.append(f"  model {name}: {profile.provider} ({profile.model} at "
                     f"{', '.join(profile.endpoints)}), {by_model[name]} agents; "
                     f"{model.estimate(by_model[name])}")
    book = world.abilities
    if session.angel is not None:
        lines.append(f"  abilities:   {len(book.builtins)} built-in, {len(book.generated)} "
                     f"generated; angel writes with {session.angel.generator.name} "
                     f"({'the world pauses' if cfg.angel.wait == 'world' else 'the asker waits'}"
                     f" while it works)")
    if session.web is not None:
        lines.append(f"  viewer:      {session.web.url}  (the API: {session.web.url}api/state; "
                     "see docs/api.md)")
        lines.append(f"  token:       {session.web.token_line(terminal=terminal)}")
        if session.web.note:
            lines.append(f"  note: {session.web.note}")
        if session.web.agents is not None:
            url = session.web.url.replace("http", "ws", 1)
            lines.append(f"  agents:      {url}agents  (with the token; docs/agents.md)")
    lines.extend(f"  note: {note}" for note in [*opened.notes, *pruned])
    return "\n".join(lines)


def _console_mode(args: argparse.Namespace) -> StdinKind:
    """tty: a prompt; pipe: commands read from stdin; none: no console at all.

    Runs of a fixed number of ticks are scripts and never read stdin. Without a terminal
    (or with --headless) there is no prompt; piped stdin still carries commands."""
    if args.ticks is not None or args.until is not None:
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
                                           exit_on_eof=args.exit_on_eof,
                                           json_replies=args.json_replies), name="console")

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


def _handle_signals(session: Session) -> Callable[[], None]:
    """Ctrl-C interrupts (a command, else the world), SIGTERM stops the world; returns what
    removes the handlers."""
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, session.interrupt)
    loop.add_signal_handler(signal.SIGTERM, session.loop.stop)

    def remove() -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    return remove


async def _run(config: Config, opened: OpenedWorld, args: argparse.Namespace,
               sandbox: Sandbox, *, token: str | None = None) -> int:
    """Run the world. ``token``: the web's access token when one is handed on (a served
    replay's, to the world it forked: the page that forked it keeps working)."""
    mode = _console_mode(args)
    # Piped commands get their replies on stdout: world-log lines would be mixed into them.
    echo = None if args.headless or mode == "pipe" or not config.log.echo else sys.stdout
    brains = load_brains(config.brains, path=args.brains_path,
                         llm=config.llm.enabled, models=config.llm.models)
    log = world_log_path(config)
    if not config.persistence.enabled:
        prune_nosave_logs(log.parent)  # throwaway runs leave a log each: keep the latest
    session = Session(config, opened.world, echo=echo, folder=opened.folder,
                      resumed=opened.resumed, sandbox=sandbox, brains=brains, world_log=log)
    for brain, count in unregistered(session.world, brains, session.llm_profiles).items():
        profile = llm_profile_of(brain)
        why = (unknown_model(profile, session.llm_profiles) if profile else
               "which is not registered (brains: in the config)")
        session.report_problem(f"{count} agent(s) have brain {brain!r}, {why}; they use "
                               "their built-in brains")
    out = sys.stderr if args.headless or mode == "pipe" else sys.stdout
    try:
        sandbox.ready()  # started while the world was opened; before "Ctrl-C stops cleanly"
    except WorkerDied as exc:
        session.close()
        print(f"error: {exc}", file=sys.stderr)
        return 2
    max_ticks = args.ticks
    if args.until is not None:
        max_ticks = max(0, args.until - session.world.tick)
    scripted = max_ticks is not None
    viewer: WebServer | None = None
    if args.web if args.web is not None else (config.web.enabled and not scripted):
        try:
            viewer = WebServer(session, config.web,
                               token=token if token is not None else web_token(config.web),
                               made_here=token is not None)
            await viewer.start()
        except (WebError, ConfigError) as exc:
            if viewer is not None:
                await viewer.close()
            session.close()
            print(f"error: {exc}", file=sys.stderr)
            return 2
    # Old training and evaluation runs go at start-up (paths.runs_keep and the others).
    pruned = prune_runs(config.paths)
    print(_banner(session, opened, terminal=is_terminal(out), pruned=pruned), file=out)
    print(_CONSOLE_HINT[mode], file=out, flush=True)
    remove_signal_handlers = _handle_signals(session)
    console = _start_console(session, mode, args)
    saved = False
    try:
        await session.run(max_ticks=max_ticks, paced=not (args.headless and scripted))
    finally:
        try:
            await _stop_console(console)  # the world stopped: so do the console and viewer
            if viewer is not None:
                await viewer.close()
        finally:
            # The handlers stay until the shutdown is done: a second Ctrl-C or SIGTERM
            # while the final snapshot is written is absorbed instead of cutting it short.
            saved = session.close()
            remove_signal_handlers()
    summary = session.summary()
    if scripted:
        sys.stdout.write(orjson.dumps(summary).decode() + "\n")
    else:
        print(f"stopped at tick {summary['tick']} (state {summary['state_hash']})", file=out)
    if not saved:
        print(f"error: the final snapshot of tick {summary['tick']} could not be written "
              "(see above); the save folder keeps what reached the disk", file=sys.stderr)
        return 1
    return 0


def _replay_main(argv: Sequence[str]) -> int:
    parser = build_replay_parser()
    args = parser.parse_args(argv)
    if args.fork and args.to is None:
        parser.error("--fork needs --to TICK: the tick to fork at")
    if args.from_start and args.to is None:
        parser.error("--from-start goes with --to TICK (without --to the whole log is "
                     "replayed from the first snapshot anyway)")
    if args.serve and (args.fork or args.playback):
        parser.error("--serve plays the recording in the browser: drop --fork and "
                     "--playback (/fork NAME forks from the page)")
    # Replay applies logged decisions and never calls a model: it needs no API key.
    config = _configure(args, needs_llm=bool(args.fork))
    path = resolve_world_path(args.path, config)  # a bare NAME is a world in paths.saves
    sandbox = Sandbox(config, wait=False)
    if args.serve:
        return _serve_replay(path, config, args, sandbox)
    if not args.fork:
        try:
            return run_replay(path, config, to=args.to, playback=args.playback,
                              setup=sandbox.install, from_start=args.from_start,
                              workers=args.workers or available_cpus(),
                              setup_factory=sandboxed)
        except KeyboardInterrupt:
            _say("error: replay interrupted before its verdict; nothing was changed (a "
                 "replay only reads the folder)")
            return 130
        finally:
            sandbox.close()
    try:
        opened = fork_world(SaveFolder.open(path), args.to, args.fork, config,
                            setup=sandbox.install)
    except BaseException:
        sandbox.close()
        raise
    return asyncio.run(_run(config, opened, args, sandbox))


def _serve_replay(path: Path, config: Config, args: argparse.Namespace,
                  sandbox: Sandbox) -> int:
    """``replay --serve``: the recording in the viewer; a /fork from it runs the new world
    live in this process (as ``--fork``), on the same port, so the page follows."""
    mode = _console_mode(args)
    out = sys.stderr if args.headless or mode == "pipe" else sys.stdout

    async def start_console(session: Session) -> Callable[[], Awaitable[None]]:
        remove_signal_handlers = _handle_signals(session)
        task = _start_console(session, mode, args)

        async def stop() -> None:
            await _stop_console(task)
            remove_signal_handlers()
        return stop

    folder = SaveFolder.open(path)
    try:
        served = asyncio.run(serve_recording(
            folder, config, sandbox.install, token=web_token(config.web), to=args.to,
            start_console=start_console, out=out))
    except BaseException:
        sandbox.close()
        raise
    if served.fork is None:
        sandbox.close()
        return served.status
    fork = served.fork
    try:
        opened = fork_world(folder, fork.tick, fork.name, config, setup=sandbox.install,
                            world=fork.world)
    except BaseException:
        fork.world.close()
        sandbox.close()
        raise
    args.to = fork.tick
    return asyncio.run(_run(config.replace(world={"name": fork.name}, web={"port": served.port}),
                            opened, args, sandbox, token=served.token))


# -- the commands -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Subcommand:
    """``python main.py NAME ...``: how it is parsed and run, and its lines in ``--help``.

    One table serves the dispatch, the help text and the docs' test (tests/test_docs.py
    parses every command line the docs show with ``parser``), so a command cannot be
    missing from any of them."""

    name: str
    usage: tuple[tuple[str, str], ...]  # (arguments after the name, what it does)
    parser: Callable[[], argparse.ArgumentParser]
    run: Callable[[Sequence[str]], int]


SUBCOMMANDS: dict[str, Subcommand] = {c.name: c for c in (
    Subcommand("replay", (("saves/NAME [--to T] [--playback [X]] [--fork NEW]",
                           "verify a saved world, play it back, or fork it; --serve shows "
                           "it in the viewer"),),
               build_replay_parser, _replay_main),
    Subcommand("ability", (("check FILE.py", "check an ability file (gate, sandbox, dry "
                                             "runs)"),),
               build_ability_parser, _ability_main),
    Subcommand("policy", (("check FILE.py", "check a policy file (a brain as sandboxed code)"),
                          ("list", "the policies agents may use (brain=policy:NAME)")),
               build_policy_parser, _policy_main),
    Subcommand("eval", (("SCENARIO --brains builtin,NAME [--seeds 1-20]",
                         "compare brains on a scenario over many seeds (docs/evaluation.md)"),),
               build_eval_parser, eval_main),
    Subcommand("fork-eval", (("saves/NAME --at T --agents A,B --brains X,Y --ticks N",
                              "fork a world at T into branches per brain for the chosen "
                              "agents and compare them (docs/evaluation.md)"),),
               build_fork_eval_parser, fork_eval_main),
    Subcommand("train", (("SCENARIO [--iterations N] [--episodes M] [--generator llm|templates]",
                          "improve a policy on a scenario from measured results"),),
               build_train_parser, train_main),
    Subcommand("worlds", (("[list | delete NAME]",
                           "the saved worlds: list them, or delete one"),),
               build_worlds_parser, worlds_main),
    Subcommand("runs", (("[list | delete NAME]",
                         "the training and evaluation runs: list them, or delete one"),),
               build_runs_parser, runs_main),
    Subcommand("report", (("saves/NAME", "liveliness per window of ticks, from the event "
                                         "log"),),
               build_report_parser, report_main),
    Subcommand("verify", (("RESULTS.json", "replay every episode of an eval, fork-eval or "
                                           "training result and check its figures"),),
               build_verify_parser, verify_main),
    Subcommand("reask", (("saves/NAME --brain BRAIN [--model M] [--from T --to T] [--sample N]",
                          "ask another brain or model the decisions a saved world logged, "
                          "at the very observation of each (docs/evaluation.md)"),),
               build_reask_parser, reask_main),
    Subcommand("export", (("saves/NAME [--format jsonl|parquet] [--reward SCENARIO|M=W,...]",
                           "every logged decision with its observation, reasoning, tokens "
                           "and the outcome that followed (docs/evaluation.md)"),),
               build_export_parser, export_main),
    Subcommand("schema", (("[--part P]", "JSON Schema of observations, decisions, actions "
                                         "and abilities (docs/agents.md)"),),
               build_schema_parser, schema_main),
)}


HELP_WIDTH, HELP_INDENT = 92, 39  # the epilog's width, and where each summary starts


def other_commands() -> str:
    """The ``--help`` epilog: every command of ``SUBCOMMANDS``, one entry per usage."""
    lines = ["other commands (each has --help):"]
    for command in SUBCOMMANDS.values():
        for args, what in command.usage:
            usage = f"  python main.py {command.name} {args}"
            said = textwrap.wrap(what, HELP_WIDTH - HELP_INDENT)
            if len(usage) < HELP_INDENT:
                lines.append(f"{usage:<{HELP_INDENT}}{said[0]}")
                said = said[1:]
            else:
                lines.append(usage)
            lines += [" " * HELP_INDENT + part for part in said]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line. Whatever happens ends in at most one line on stderr and an exit
    status: 0 done, 1 failed (or diverged), 2 refused (bad config, arguments or save),
    130 interrupted while starting, 70 an internal error (a bug; its traceback is kept)."""
    try:
        return _main(argv)
    except BrokenPipeError:
        # Whoever read our output went away (replay --playback | head): stop writing.
        _drop_stdout()
        _say("error: the output was closed before everything was written (its reader went "
             "away); stopped")
        return 1
    except KeyboardInterrupt:
        _say("error: interrupted while starting; nothing ran (a world being resumed resumes "
             "again at the next start)")
        return 130
    except Exception as exc:  # a bug: one line here, the whole traceback in a file
        _say(f"error: an internal error stopped the program ({type(exc).__name__}: "
             f"{str(exc)[:200]}); this is a bug, please report it with the traceback in "
             f"{_keep_traceback()}")
        return 70


def _say(line: str) -> None:
    with contextlib.suppress(OSError, ValueError):  # stderr gone too: the status has to do
        print(line, file=sys.stderr, flush=True)


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so that the flush at exit does not fail again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _keep_traceback() -> str:
    text = traceback.format_exc()
    name = f"crash-{datetime.datetime.now():%Y%m%d-%H%M%S}-{os.getpid()}.txt"
    for folder in (Path("logs"), Path(tempfile.gettempdir())):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text, encoding="utf-8")
            return str(folder / name)
        except OSError:
            continue
    return "(no writable folder; run again with python -X dev to see it)"


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    sandbox: Sandbox | None = None
    try:
        command = SUBCOMMANDS.get(argv[0]) if argv else None
        if command is not None:
            return command.run(argv[1:])
        args = build_parser().parse_args(argv)
        config = _configure(args)
        # One line and exit 2 if a brain cannot be used.
        load_brains(config.brains, path=args.brains_path,
                    llm=config.llm.enabled, models=config.llm.models)
        sandbox = Sandbox(config, wait=False)
        opened = open_world(config, seed_given=args.seed is not None, setup=sandbox.install)
    except (ConfigError, SaveError, WorkerDied) as exc:
        if sandbox is not None:
            sandbox.close()
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except DivergenceError as exc:
        if sandbox is not None:
            sandbox.close()
        print(f"error: the save does not replay to its own recorded state: {exc}",
              file=sys.stderr)
        return 1
    return asyncio.run(_run(config, opened, args, sandbox))


if __name__ == "__main__":
    raise SystemExit(main())
