"""What README.md and docs/*.md show: fenced blocks, inline code, command lines and the
console examples with their output, each with the file and line it is on.

tests/test_docs.py checks all of it against the program; this module only reads the
Markdown. A place in the docs is ``Where`` (``docs/api.md:42``), so a failure names the line
to fix.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS: tuple[Path, ...] = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))

_FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")
_SPAN = re.compile(r"(?<!`)`([^`]+)`(?!`)")
_ENV = re.compile(r"^[A-Z_][A-Z0-9_]*=\S*$")
# Words the docs write in capitals for something the reader fills in (SCENARIO, FILE.py).
PLACEHOLDER = re.compile(r"^(?:saves/)?[A-Z][A-Z0-9_]*(?:\.py|\.yaml)?$")


@dataclass(frozen=True, slots=True)
class Where:
    path: Path
    line: int

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


@dataclass(frozen=True, slots=True)
class Block:
    """A fenced block: its language and its lines, each with its line number."""

    where: Where
    lang: str
    lines: tuple[tuple[int, str], ...]

    @property
    def text(self) -> str:
        return "\n".join(text for _n, text in self.lines) + "\n"

    def at(self, number: int) -> Where:
        return Where(self.where.path, number)


@dataclass(frozen=True, slots=True)
class Span:
    """An inline code span (a line break inside it read as a space)."""

    where: Where
    text: str


@dataclass(frozen=True, slots=True)
class Command:
    """A command line the docs show: its words (``$``, environment variables and a trailing
    comment taken off), whether it is a mention in running text (inline) and, for a console
    block, the output shown under it."""

    where: Where
    words: tuple[str, ...]
    inline: bool
    output: tuple[str, ...] = ()
    stdin: str | None = None  # what ``printf '...' |`` pipes into it

    @property
    def line(self) -> str:
        return shlex.join(self.words)


@dataclass(frozen=True, slots=True)
class ConsoleLine:
    """A console command (``world> /spawn ...`` in a block, or an inline ``/top ...``)."""

    where: Where
    text: str
    inline: bool
    output: tuple[str, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class Doc:
    path: Path
    text: str
    blocks: tuple[Block, ...]
    spans: tuple[Span, ...]

    @property
    def name(self) -> str:
        return str(self.path.relative_to(ROOT))


def read(path: Path) -> Doc:
    text = path.read_text(encoding="utf-8")
    blocks: list[Block] = []
    prose: list[str] = []  # the text outside blocks, line for line (blocks blanked)
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            prose.append(lines[i])
            i += 1
            continue
        fence, start = m.group(2), i
        body: list[tuple[int, str]] = []
        prose.append("")
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append((i + 1, lines[i]))
            prose.append("")
            i += 1
        prose.append("")
        i += 1
        blocks.append(Block(Where(path, start + 1), m.group(3).lower(), tuple(body)))
    outside = "\n".join(prose)
    spans = [Span(Where(path, outside.count("\n", 0, m.start()) + 1),
                  " ".join(m.group(1).split()))
             for m in _SPAN.finditer(outside)]
    return Doc(path, text, tuple(blocks), tuple(spans))


def all_docs() -> list[Doc]:
    return [read(path) for path in DOCS]


# -- command lines ----------------------------------------------------------------------------

SHELL_BLOCKS = ("", "bash", "sh", "shell", "console", "text")
_PROGRAMS = ("main.py", "-m", "examples/", "bench/")


def _words(line: str) -> list[str] | None:
    """The words of one shell line, without a leading ``$``, environment assignments and a
    trailing comment; None when it is not a line shlex can read."""
    line = line.strip().removeprefix("$ ")
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return None
    while words and _ENV.match(words[0]):
        words.pop(0)
    return words


def _python(words: list[str]) -> bool:
    """Whether the words run a Python program of this repository."""
    return (len(words) >= 2 and words[0].endswith(("python", "python3"))
            and words[1].startswith(_PROGRAMS))


def _piped(line: str) -> tuple[str | None, str]:
    """``printf 'A\\nB\\n' | python main.py ...``: the piped text and the command."""
    m = re.match(r"^\s*(?:\$ )?printf '([^']*)'\s*\|\s*(.*)$", line)
    if m is None:
        return None, line
    return m.group(1).encode().decode("unicode_escape"), m.group(2)


def _joined(block: Block) -> Iterator[tuple[int, str]]:
    """A block's lines with ``\\`` continuations joined, each at its first line's number."""
    pending: list[str] = []
    first = 0
    for number, text in block.lines:
        if not pending:
            first = number
        if text.rstrip().endswith("\\"):
            pending.append(text.rstrip()[:-1])
            continue
        if not pending:
            yield first, text  # as written: an output line keeps its indent
            continue
        pending.append(text)
        yield first, " ".join(part.strip() for part in pending)
        pending = []
    if pending:
        yield first, " ".join(part.strip() for part in pending)


def commands(doc: Doc) -> list[Command]:
    """Every command line of this repository's programs the document shows: in shell and
    console blocks (with the output under a ``$`` line) and in inline code."""
    found: list[Command] = []
    for block in doc.blocks:
        if block.lang not in SHELL_BLOCKS:
            continue
        lines = list(_joined(block))
        console = any(text.startswith("$ ") for _n, text in lines)
        for index, (number, text) in enumerate(lines):
            if console and not text.startswith("$ "):
                continue
            stdin, command = _piped(text)
            words = _words(command)
            if not words or not _python(words):
                continue
            output: list[str] = []
            if console:
                for _n, after in lines[index + 1:]:
                    if after.startswith("$ "):
                        break
                    output.append(after)
            found.append(Command(block.at(number), tuple(words), inline=False,
                                 output=tuple(output), stdin=stdin))
    for span in doc.spans:
        words = _words(span.text)
        if words and _python(words):
            found.append(Command(span.where, tuple(words), inline=True))
    return found


# -- console commands ---------------------------------------------------------------------------

_CONSOLE = re.compile(r"^/[a-z]+(?:\s|$)")


def console_lines(doc: Doc) -> list[ConsoleLine]:
    """``world> /...`` lines of blocks (with the lines under them up to the next prompt) and
    inline spans that start like a console command (``/word``, not a path)."""
    found: list[ConsoleLine] = []
    for block in doc.blocks:
        lines = list(block.lines)
        for index, (number, text) in enumerate(lines):
            if not text.startswith("world> "):
                continue
            output: list[str] = []
            for _n, after in lines[index + 1:]:
                if after.startswith(("world> ", "$ ")) or "python main.py" in after:
                    break
                output.append(after)
            command = text.removeprefix("world> ").split("#", 1)[0].strip()
            found.append(ConsoleLine(block.at(number), command, inline=False,
                                     output=tuple(output)))
    for span in doc.spans:
        if _CONSOLE.match(span.text):
            found.append(ConsoleLine(span.where, span.text, inline=True))
    return found


def concrete(text: str) -> bool:
    """Whether a command is written out (``/top food_gathered 5``) rather than its usage
    (``/top [METRIC] [N]``, ``/kill ID|NAME``)."""
    if re.search(r"[\[\]|]|\.\.\.", text):
        return False
    try:
        words = shlex.split(text)
    except ValueError:
        return False
    return not any(PLACEHOLDER.match(word) for word in words[1:])


# -- tables -----------------------------------------------------------------------------------


def table_column(doc: Doc, header: str) -> list[tuple[Where, str]]:
    """The first cells of every table whose first header cell is ``header``, each with the
    backticked names in it (a cell may name several: `` `eaten`, `walked` ``)."""
    lines = doc.text.split("\n")
    found: list[tuple[Where, str]] = []
    i = 0
    while i < len(lines):
        cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
        rule = lines[i + 1].replace("|", "").strip() if i + 1 < len(lines) else "x"
        if lines[i].lstrip().startswith("|") and cells[0] == header and set(rule) <= set("-: "):
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                first = lines[i].strip().strip("|").split("|")[0]
                found.extend((Where(doc.path, i + 1), name)
                             for name in re.findall(r"`([^`]+)`", first))
                i += 1
            continue
        i += 1
    return found


def names_after(doc: Doc, anchor: str, end: str) -> tuple[Where, list[str]] | None:
    """The backticked names from ``anchor`` up to ``end``, leaving out what stands in
    parentheses there (``foraging` (food among thorn patches)``); None if the document does
    not say ``anchor``."""
    start = doc.text.find(anchor)
    if start < 0:
        return None
    rest = doc.text[start + len(anchor):]
    stop = rest.find(end)
    part = rest[:stop if stop >= 0 else len(rest)]
    part = re.sub(r"\([^()]*\)", "", part)
    return (Where(doc.path, doc.text.count("\n", 0, start) + 1),
            re.findall(r"`([^`]+)`", part))
