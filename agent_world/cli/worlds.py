"""``python main.py worlds``: the saved worlds under ``paths.saves``, and deleting one.

``python main.py worlds [list] [--config FILE]`` prints a table (name, the last tick its log
reaches, when last saved, seed, size on disk, origin, and the process running it, if any);
it only reads.
``python main.py worlds delete NAME [--yes] [--config FILE]`` deletes one world folder after
confirmation on a terminal (or with --yes), holding the world's lock while it does: a world
in use is refused, and so is anything that is not an Agent World save.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_world.cli.confirm import confirmation
from agent_world.config import ConfigError, WorldConfig, load_config
from agent_world.persistence import SaveError, SaveFolder
from agent_world.persistence.eventlog import final_tick
from agent_world.persistence.files import disk_problem, human_size
from agent_world.persistence.folder import DELETING, delete_folder
from agent_world.persistence.lock import WorldInUse, WorldLock, lock_holder

__all__ = ["WorldRow", "build_parser", "delete_world", "list_worlds", "main"]



def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python main.py worlds",
        description="List the saved worlds under paths.saves, or delete one.")
    config_help = ("YAML config whose paths.saves is used (default: ./config.yaml if "
                   "present, else defaults)")
    parser.add_argument("--config", metavar="FILE", help=config_help)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    listing = commands.add_parser(
        "list", help="the table of saved worlds (the default)",
        description="Print every saved world: name, last tick, when it was last saved, seed, "
                    "size on disk, what it was forked from, and the process running it.")
    listing.add_argument("--config", metavar="FILE", help=config_help,
                         default=argparse.SUPPRESS)
    delete = commands.add_parser(
        "delete", help="delete one saved world",
        description="Delete one saved world's folder. Asks for confirmation on a terminal; "
                    "without one, --yes is required. A world in use is refused.")
    delete.add_argument("name", metavar="NAME", help="the world's name (its folder under "
                                                     "paths.saves)")
    delete.add_argument("--yes", "-y", action="store_true",
                        help="delete without asking")
    delete.add_argument("--config", metavar="FILE", help=config_help,
                        default=argparse.SUPPRESS)
    return parser


# -- listing ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorldRow:
    name: str
    last_tick: int | None  # the last tick its event log reaches (a running world's too)
    saved: str  # when it was last saved (meta.json's updated, else created)
    seed: int | None
    size: int  # bytes on disk
    origin: str  # "-" or "fork of NAME at tick T"
    in_use: int | None  # the pid holding its lock (0: unknown pid), None: free
    problem: str | None = None  # meta.json could not be read


def _when(value: object) -> str:
    if not isinstance(value, str):
        return "?"
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError:
        return value
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _origin(value: object) -> str:
    if not isinstance(value, dict):
        return "-"
    return f"fork of {value.get('world', '?')} at tick {value.get('tick', '?')}"


def _row(root: Path) -> WorldRow:
    folder = SaveFolder(root)
    holder = lock_holder(root)
    size = folder.size_on_disk()
    try:
        meta = folder.read_meta()
    except SaveError as exc:
        return WorldRow(root.name, None, "?", None, size, "-", holder, problem=str(exc))
    # meta.json's last_tick is the latest snapshot's: a running world is far past it (261
    # shown while the world was near 2,500). The event log has the last tick written.
    meta_tick, seed = meta.get("last_tick"), meta.get("seed")
    logged = final_tick(folder)
    tick = max(logged, meta_tick) if isinstance(meta_tick, int) else logged
    return WorldRow(root.name, tick if tick >= 0 else None,
                    _when(meta.get("updated") or meta.get("created")),
                    seed if isinstance(seed, int) else None, size,
                    _origin(meta.get("origin")), holder)


def list_worlds(saves: Path) -> tuple[list[WorldRow], list[str]]:
    """The saved worlds in ``saves`` and a remark on everything else there. Reads only."""
    if saves.exists() and not saves.is_dir():
        raise SaveError(f"paths.saves = {str(saves)!r} is a file, not a folder; set "
                        "paths.saves to the folder holding the saved worlds")
    if not saves.is_dir():
        return [], []
    rows, others = [], []
    for root in sorted(saves.iterdir()):
        if root.name.startswith(".") and DELETING in root.name:
            others.append(f"{root.name}: what remains of an interrupted delete; remove it "
                          f"with: rm -r {root}")
            continue
        if root.name.startswith("."):
            continue  # hidden (.gitkeep ...): a world's name never starts with a dot
        kind = SaveFolder.describe(root)
        if kind == "save":
            rows.append(_row(root))
        elif kind == "unfinished":
            others.append(f"{root.name}: a world whose creation was interrupted (starting "
                          "it again makes it anew)")
        elif kind == "empty":
            others.append(f"{root.name}: an empty folder")
        elif root.is_dir():
            others.append(f"{root.name}: not an Agent World save (no meta.json)")
        else:
            others.append(f"{root.name}: a file, not a world")
    return rows, others


def _table(rows: list[WorldRow]) -> list[str]:
    header = ("NAME", "LAST TICK", "SAVED", "SEED", "SIZE", "ORIGIN", "IN USE")
    right = {1, 3, 4}
    cells = [header] + [
        (r.name, "?" if r.last_tick is None else str(r.last_tick), r.saved,
         "?" if r.seed is None else str(r.seed), human_size(r.size),
         r.origin if r.problem is None else f"(unreadable meta.json: {r.problem})",
         "-" if r.in_use is None else (f"pid {r.in_use}" if r.in_use else "yes"))
        for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return ["  ".join(cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
                      for i, cell in enumerate(row)).rstrip() for row in cells]


def _list(saves: Path) -> int:
    rows, others = list_worlds(saves)
    if rows:
        for line in _table(rows):
            print(line)
    else:
        where = "does not exist yet" if not saves.exists() else "holds no saved world"
        print(f"{saves} (paths.saves) {where}; 'python main.py' starts a world there")
    for other in others:
        print(f"  also in {saves}: {other}")
    return 0


# -- deleting ---------------------------------------------------------------------------------


def _check_name(name: str) -> None:
    try:
        WorldConfig(name=name)
    except ConfigError:
        raise SaveError(f"{name!r} is not a world name (letters, digits, _ . - and no "
                        "folders); 'python main.py worlds' lists the worlds") from None


def delete_world(saves: Path, name: str, *, confirm: Callable[[str], bool]) -> str | None:
    """Delete the world ``name`` in ``saves`` if ``confirm(question)`` agrees, holding its
    lock throughout. Returns what was deleted (None: not confirmed). SaveError when it is
    not a save, is in use, or cannot be deleted."""
    _check_name(name)
    root = saves / name
    if root.is_symlink():
        raise SaveError(f"{root} is a symbolic link; nothing was deleted: remove the link "
                        "or what it points to by hand")
    kind = SaveFolder.describe(root)
    if kind == "missing":
        raise SaveError(f"there is no world '{name}' in {saves}; 'python main.py worlds' "
                        "lists the worlds")
    if kind != "save":
        raise SaveError(f"{root} is not an Agent World save (no meta.json); nothing was "
                        "deleted: remove it by hand if you mean to")
    try:
        lock = WorldLock.acquire(root, name)
    except WorldInUse as exc:
        holder = f"process {exc.pid}" if exc.pid else "another process"
        raise SaveError(f"world '{name}' is in use by {holder} ({exc.path}); stop that "
                        "process first, then delete it") from None
    except OSError as exc:
        raise SaveError(f"cannot delete world '{name}': {disk_problem(exc, root)}") from None
    try:
        row = _row(root)
        tick = "?" if row.last_tick is None else row.last_tick
        what = f"world '{name}' ({root}, tick {tick}, {human_size(row.size)})"
        if not confirm(f"Delete {what}? This cannot be undone. [y/N] "):
            return None
        delete_folder(root, f"world '{name}'")
        return f"deleted {what}"
    finally:
        lock.release()


def main(argv: Sequence[str] | None = None, *,
         ask: Callable[[str], bool] | None = None) -> int:
    """The ``worlds`` command. ``ask`` answers the delete question (tests); by default a
    terminal is asked, and without one --yes is required."""
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        saves = Path(load_config(args.config).paths.saves)
        if args.command != "delete":
            return _list(saves)
        confirm = confirmation(f"world '{args.name}'", yes=args.yes, ask=ask)
        done = delete_world(saves, args.name, confirm=confirm)
    except (ConfigError, SaveError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if done is None:
        print(f"kept world '{args.name}'")
        return 1
    print(done)
    return 0
