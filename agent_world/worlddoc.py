"""The tables of docs/world.md, made from the program's own definitions.

docs/world.md explains the world's rules in words; every number in it sits in a table that
this module writes from the configuration defaults, the item and object kinds, the
personalities and the built-in abilities, between markers::

    <!-- table: items -->
    ...
    <!-- /table -->

``python -m agent_world.worlddoc`` rewrites the tables in place; ``--check`` only compares
and exits 1 naming the tables that drifted (CI runs it), so the document never states a
number the program does not use.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from agent_world.config import SECTIONS
from agent_world.core.brains import PROFILES
from agent_world.core.brains.casting import REQUESTS, SERVED_BY, SUITS
from agent_world.core.items import ITEMS, OBJECTS

__all__ = ["TABLES", "main", "render_tables"]

DOC = Path(__file__).resolve().parent.parent / "docs" / "world.md"
_BLOCK = re.compile(r"(<!-- table: ([a-z_]+) -->\n)(.*?)(<!-- /table -->)", re.DOTALL)


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (dict, list, tuple)):
        if not value:
            return "-"
        if isinstance(value, dict):
            return ", ".join(f"{k}: {_cell(v)}" for k, v in value.items())
        return ", ".join(_cell(v) for v in value)
    text = str(value)
    return text.replace("|", "\\|") if text else "-"


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines.extend("| " + " | ".join(_cell(v) for v in row) + " |" for row in rows)
    return "\n".join(lines) + "\n"


def _records(kinds: Iterable[Any]) -> str:
    """A table with one row per record (a frozen dataclass) and one column per field."""
    kinds = list(kinds)
    fields = [f.name for f in dataclasses.fields(kinds[0])]
    return _table([f.replace("_", " ") for f in fields],
                  ([getattr(k, f) for f in fields] for k in kinds))


def _settings(section: str) -> Callable[[], str]:
    def render() -> str:
        rows = []
        for f in dataclasses.fields(SECTIONS[section]):
            default = (f.default_factory() if f.default_factory is not dataclasses.MISSING
                       else f.default)
            rows.append([f"`{section}.{f.name}`", default, f.metadata["doc"]])
        return _table(["setting", "default", "meaning"], rows)
    return render


def _profiles() -> str:
    drives = [f.name for f in dataclasses.fields(next(iter(PROFILES.values())))]
    return _table(["personality", *drives],
                  ([name, *(getattr(p, d) for d in drives)] for name, p in PROFILES.items()))


def _casting() -> str:
    return _table(["personality", "reaches for"],
                  ([name, ", ".join(abilities)] for name, abilities in SUITS.items()))


def _requests() -> str:
    return _table(["need", "what a brain asks the angel for", "served by"],
                  ([need, " / ".join(f'"{t}"' for t in texts), SERVED_BY.get(need, "-")]
                   for need, texts in REQUESTS.items()))


def _builtin_abilities() -> str:
    # Loaded here, not at import: the sandbox layer is an outer one, and this module only
    # needs the sources' metadata.
    from agent_world.sandbox.host import load_builtins  # noqa: PLC0415

    return _table(["ability", "energy", "cooldown", "range", "arguments", "what it does"],
                  ([s.name, s.meta.energy_cost, s.meta.cooldown, s.meta.range,
                    dict(s.meta.args), s.meta.description] for s in load_builtins()))


TABLES: dict[str, Callable[[], str]] = {
    "items": lambda: _records(ITEMS.values()),
    "objects": lambda: _records(OBJECTS.values()),
    "personalities": _profiles,
    "abilities": _builtin_abilities,
    "casting": _casting,
    "requests": _requests,
    **{f"settings_{name}": _settings(name) for name in ("world", "game", "abilities")},
}
"""Every table docs/world.md may hold, by the name in its marker."""


def render_tables(text: str) -> tuple[str, list[str]]:
    """``text`` with every marked table written anew, and the names of those that changed.
    ValueError for a marker naming no known table."""
    changed: list[str] = []

    def fill(match: re.Match[str]) -> str:
        name = match.group(2)
        make = TABLES.get(name)
        if make is None:
            raise ValueError(f"docs/world.md has a table marker {name!r}; known tables: "
                             f"{', '.join(TABLES)}")
        table = make()
        if table != match.group(3):
            changed.append(name)
        return f"{match.group(1)}{table}{match.group(4)}"

    return _BLOCK.sub(fill, text), changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agent_world.worlddoc",
        description="Write the tables of docs/world.md from the program's definitions.")
    parser.add_argument("--check", action="store_true",
                        help="only compare: exit 1 if a table is out of date")
    parser.add_argument("--doc", type=Path, default=DOC, help="the document (docs/world.md)")
    args = parser.parse_args(argv)
    try:
        text = args.doc.read_text(encoding="utf-8")
        new, changed = render_tables(text)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        if changed:
            print(f"error: {args.doc}: tables out of date: {', '.join(changed)}; run "
                  "python -m agent_world.worlddoc", file=sys.stderr)
            return 1
        return 0
    if changed:
        args.doc.write_text(new, encoding="utf-8")
        print(f"rewrote {', '.join(changed)} in {args.doc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
