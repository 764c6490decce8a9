"""Editing a policy source as text: its literal metadata and its numeric constants.

Both generators hand back whole sources; the trainer stamps each version's metadata
(``NAME``, ``VERSION``, ``PARENT``) itself, so a generator (an LLM) cannot get a version's
identity wrong, and the template generator changes constants in place, leaving every other
character of the source as it was.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

__all__ = ["Constant", "numeric_constants", "replace_values", "stamp"]


@dataclass(frozen=True, slots=True)
class Constant:
    """A module-level ``UPPER_CASE = number`` and where its number is written."""

    name: str
    value: int | float
    line: int  # 1-based
    start: int  # column offsets of the literal on that line
    end: int


def _number(node: ast.expr) -> int | float | None:
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        sign, node = -1, node.operand
    if isinstance(node, ast.Constant) and not isinstance(node.value, bool) \
            and isinstance(node.value, (int, float)):
        return sign * node.value
    return None


def _assignments(source: str) -> list[tuple[str, ast.expr]]:
    out = []
    for node in ast.parse(source).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)):
            out.append((node.targets[0].id, node.value))
    return out


def numeric_constants(source: str) -> list[Constant]:
    """The tunable constants: upper-case names bound to a number on one line, metadata
    (``VERSION``) left out."""
    found = []
    for name, value in _assignments(source):
        number = _number(value)
        if (number is None or not name.isupper() or name == "VERSION"
                or value.end_lineno != value.lineno or value.end_col_offset is None):
            continue
        found.append(Constant(name, number, value.lineno, value.col_offset,
                              value.end_col_offset))
    return found


def replace_values(source: str, changes: dict[str, str]) -> str:
    """``source`` with the literal of each named top-level assignment replaced by the text
    given (one-line literals only; names not bound at the top level are ignored)."""
    lines = source.splitlines(keepends=True)
    spans = []
    for name, value in _assignments(source):
        if name in changes and value.end_lineno == value.lineno \
                and value.end_col_offset is not None:
            spans.append((value.lineno, value.col_offset, value.end_col_offset, changes[name]))
    for line, start, end, text in sorted(spans, reverse=True):
        # Offsets are in UTF-8 bytes: edit the encoded line.
        raw = lines[line - 1].encode("utf-8")
        lines[line - 1] = (raw[:start] + text.encode("utf-8") + raw[end:]).decode("utf-8")
    return "".join(lines)


def stamp(source: str, *, name: str, version: int, parent: str | None) -> str:
    """``source`` with its ``NAME``, ``VERSION`` and ``PARENT`` set (added at the top after
    the docstring when missing)."""
    wanted = {"NAME": repr(name), "VERSION": str(version), "PARENT": repr(parent)}
    present = {n for n, _v in _assignments(source)}
    out = replace_values(source, {k: v for k, v in wanted.items() if k in present})
    missing = [f"{k} = {v}\n" for k, v in wanted.items() if k not in present]
    if not missing:
        return out
    tree = ast.parse(out)
    first = tree.body[0] if tree.body else None
    docstring = (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                 and isinstance(first.value.value, str))
    lines = out.splitlines(keepends=True)
    at = first.end_lineno if docstring and first is not None and first.end_lineno else 0
    return "".join([*lines[:at], *(["\n"] if at else []), *missing, *lines[at:]])
