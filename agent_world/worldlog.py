"""The world log: one readable, tick-stamped line per notable event, written off the main
thread to ``logs/world.log``, rotated by size, safe to follow with ``tail -F``.

One file has one writer: ``world_log_path`` gives another world, and every run without a
save folder, a file of its own (two processes in one file made its ticks jump back and
forth)."""

from __future__ import annotations

import contextlib
import datetime
import os
import queue
import re
import sys
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from agent_world.config import Config, WorldConfig
from agent_world.core import events as ev
from agent_world.types import Event, TickReport

__all__ = ["NOSAVE_LOGS_KEPT", "ROUTINE", "WorldLog", "format_event", "printable",
           "prune_nosave_logs", "sentence", "world_log_path"]

MAX_BACKLOG_LINES = 100_000
NOSAVE_LOGS_KEPT = 10  # world logs of finished --no-save runs kept in logs/nosave/
_NOSAVE_LOG = re.compile(r"(?P<name>.+)-(?P<pid>\d+)\.log(?:\.\d+)?")


def printable(text: str) -> str:
    """``text`` as one line a terminal shows as it is: white space becomes a space and any
    other character that is not printable (ESC, BEL, NUL, backspace ...) is written as its
    escape (``\\x1b``), so that nothing from outside can drive the terminal of someone
    reading the log or split a line."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else " " if ch.isspace() else
                   (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
                   for ch in text)


def world_log_path(config: Config, *, pid: int | None = None) -> Path:
    """The world log of a run of ``config``'s world.

    A world with a save folder is run by one process at a time (its lock), so its log is
    its own: ``logs/world.log`` for the default world, ``logs/world-NAME.log`` for another.
    Nothing stops a run without a save folder (``--no-save``) beside it or beside another
    one, so each has ``logs/nosave/NAME-PID.log``."""
    logs = Path(config.paths.logs)
    name = config.world.name
    if not config.persistence.enabled:
        return logs / "nosave" / f"{name}-{pid if pid is not None else os.getpid()}.log"
    return logs / ("world.log" if name == WorldConfig().name else f"world-{name}.log")


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: running
    return True


def prune_nosave_logs(folder: Path, keep: int = NOSAVE_LOGS_KEPT) -> list[Path]:
    """Delete the world logs (with their rotated parts) of finished ``--no-save`` runs in
    ``folder`` beyond the newest ``keep``; the logs of runs still going are never touched.
    Returns what was deleted. Throwaway runs leave a log each: this keeps them bounded."""
    runs: dict[int, list[Path]] = {}
    try:
        entries = list(folder.iterdir())
    except OSError:
        return []
    for path in entries:
        m = _NOSAVE_LOG.fullmatch(path.name)
        if m is not None and path.is_file():
            runs.setdefault(int(m.group("pid")), []).append(path)

    def newest(files: list[Path]) -> float:
        times = []
        for path in files:
            with contextlib.suppress(OSError):
                times.append(path.stat().st_mtime)
        return max(times, default=0.0)

    finished = sorted((pid for pid in runs if not _running(pid)),
                      key=lambda pid: newest(runs[pid]), reverse=True)
    removed = []
    for pid in finished[keep:]:
        for path in runs[pid]:
            with contextlib.suppress(OSError):
                path.unlink()
                removed.append(path)
    return removed

# Routine events are left out of the log unless ``everything`` is on.
ROUTINE = frozenset({ev.PICKUP, ev.HARVEST, ev.EAT, ev.ACTION_FAILED, ev.TRADE_OFFER,
                     ev.TRADE_DECLINED, ev.TRADE_EXPIRED, ev.DEFEND, ev.USE, ev.DROP, ev.CENSUS,
                     ev.SPOILED})


def _goods(goods: dict[str, int]) -> str:
    return ", ".join(f"{q} {k}" for k, q in goods.items())


def _count(n: object, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _death(cause: object) -> str:
    """'was killed by Ann#3', 'was struck down by the operator', 'died of starvation': a
    cause that starts with a past participle is what happened to the agent, any other is
    what it died of."""
    text = str(cause)
    first = text.split(" ", 1)[0]
    if first.endswith("ed") or first in ("struck", "slain", "torn", "eaten", "shot"):
        return f"was {text}"
    return f"died of {text}"


def _who(e: Event, key: str = "agent", name: str = "name") -> str:
    return f"{e.get(name, '?')}#{e.get(key, '?')}"


def _estate(e: Event) -> str:
    """', 50 gold went in dues, 25 each to Ann#3 and Bob#7' (nothing without an estate)."""
    parts = []
    if e.get("estate_lost"):
        parts.append(f"{e['estate_lost']} gold went in dues")
    heirs = e.get("heirs") or []
    if heirs:
        parts.append("heirs: " + ", ".join(f"{h['name']}#{h['agent']} {h['gold']} gold"
                                           for h in heirs))
    return "; " + "; ".join(parts) if parts else ""


_FORMATS: dict[str, Callable[[Event], str]] = {
    ev.SPAWN: lambda e: f"SPAWN    {_who(e)} ({e['personality']}, {e['brain']}) appears at "
                       f"({e['x']}, {e['y']})",
    ev.DEATH: lambda e: f"DEATH    {_who(e)} ({e['personality']}) {_death(e['cause'])} at "
                       f"({e['x']}, {e['y']}) aged {_count(e['age'], 'tick')}"
                       + (f", dropping {_goods(e['dropped'])}" if e.get("dropped") else "")
                       + _estate(e),
    ev.ATTACK: lambda e: f"ATTACK   {_who(e)} hits {_who(e, 'target', 'target_name')} for "
                        f"{e['damage']:g}{' (defended)' if e.get('defended') else ''} "
                        f"-> health {e['health']:g}",
    ev.TRADE: lambda e: f"TRADE    {_who(e)} gives {_goods(e['give'])} to "
                       f"{_who(e, 'target', 'target_name')} for {_goods(e['want'])}"
                       + (f" (market fee {e['fee']} gold)" if e.get("fee") else ""),
    ev.TRADE_UNDONE: lambda e: f"UNDONE   {_who(e)} accepted offer #{e['offer']} of "
                              f"{_who(e, 'target', 'target_name')}, but {e['reason']}",
    ev.WEAPON_BROKE: lambda e: f"BROKE    {_who(e)}'s {e['item']} breaks",
    ev.THEFT: lambda e: (f"THEFT    {_who(e)} stole {e['qty']} {e['item']} from "
                        f"{_who(e, 'victim', 'victim_name')}"
                        if e.get("success", True) else
                        f"THEFT    {_who(e)} failed to rob "
                        f"{_who(e, 'victim', 'victim_name')}")
                       + (" (seen)" if e.get("noticed") else " (unseen)"),
    ev.SAY: lambda e: f"SAY      {_who(e)}"
                     + (f" to {_who(e, 'to', 'to_name')}" if "to" in e else "")
                     + f": \"{e['text']}\" (heard by {e['heard_by']})",
    ev.GIFT: lambda e: f"GIFT     {_who(e)} gives {e['qty']} {e['item']} to "
                      f"{_who(e, 'target', 'target_name')}",
    ev.TEAM_SAY: lambda e: f"TEAM     {_who(e)} to team {e['team']}: \"{e['text']}\" "
                          f"(heard by {e['heard_by']})",
    ev.CRAFT: lambda e: f"CRAFT    {_who(e)} makes a {e['item']} from "
                       + ", ".join(f"{n} {kind}" for kind, n in e["inputs"].items()),
    ev.CAPTURE: lambda e: f"CAPTURE  team {e['team']} takes the point at ({e['x']}, {e['y']})"
                         + (f" from {e['previous']}" if e.get("previous") else ""),
    ev.HAZARD: lambda e: f"HAZARD   {_who(e)} is hurt for {e['damage']:g} at ({e['x']}, "
                        f"{e['y']})",
    ev.PRICE: lambda e: f"PRICE    {e['item']} {e['old']:g} -> {e['price']:g} gold "
                       f"(supply {e['supply']}, demand {e['demand']:g})",
    ev.OVERRUN: lambda e: f"OVERRUN  tick {e['late_tick']} took {e['ms']:g} ms (budget "
                         f"{e['budget_ms']:g} ms)",
    ev.SKIPPED: lambda e: f"SKIPPED  {e['ticks']} ticks: the loop fell {e['ms']:g} ms behind "
                         f"and started afresh (a tick is {e['budget_ms']:g} ms)",
    ev.INPUT_REJECTED: lambda e: f"REJECTED input #{e['seq']} ({e['input']} from "
                                f"{e['source']}): {e['reason']}",
    ev.INTERVIEW: lambda e: f"ASKED    {_who(e)} was asked \"{e['question']}\" and "
                           f"answered \"{e['answer']}\"",
    ev.REMOVED: lambda e: f"REMOVED  {e['what']} by the operator",
    ev.PLAYED: lambda e: f"PLAYED   {e['player']} takes control of {_who(e)} (its brain "
                        "is paused)",
    ev.RELEASED: lambda e: f"RELEASED {e['player']} gives {_who(e)} back to its brain "
                          f"({e['reason']})",
    ev.SPOKEN: lambda e: f"SPOKEN   {e['speaker']} (a person)"
                        + (f" to {_who(e, 'to', 'to_name')}" if "to" in e else "")
                        + f": \"{e['text']}\" (heard by {e['heard_by']})",
    ev.GIVEN: lambda e: f"GIVEN    the operator gives {e['qty']} {e['item']} to "
                       f"{_who(e, 'target', 'target_name')}",
    ev.ABILITY: lambda e: f"ABILITY  {_who(e)} uses {e['ability']}: "
                         + ("; ".join(e["effects"]) or "no effect"),
    ev.ABILITY_REQUESTED: lambda e: f"REQUEST  {_who(e)} asks the angel (request "
                                   f"#{e['request']}): \"{e['text']}\"",
    ev.ABILITY_ACCEPTED: lambda e: f"NEW      ability {e['ability']} ({e['origin']}"
                                  + (f", for {_who(e)}" if "agent" in e else "")
                                  + f"): {e['description']}",
    ev.ABILITY_REFUSED: lambda e: f"REFUSED  the angel refused {_who(e)} (request "
                                 f"#{e['request']}): {e['reason']}",
    ev.ABILITY_DISABLED: lambda e: f"DISABLED ability {e['ability']}"
                                  + (f" (cast by {_who(e)})" if "agent" in e else "")
                                  + f": {e['reason']}",
    ev.ABILITY_ENABLED: lambda e: f"ENABLED  ability {e['ability']} by the operator",
    ev.ABILITY_KILLED: lambda e: f"KILLED   ability {e['ability']} (cast by {_who(e)}) was "
                                f"stopped: {e['reason']} (strike {e['strikes']} of "
                                f"{e['limit']})",
    ev.ABILITY_REQUEST_EXPIRED: lambda e: f"EXPIRED  request #{e['request']} of agent "
                                         f"#{e['agent']} got no answer in time",
    # Routine: left out of the log unless ``everything``, but shown by the viewer on demand.
    ev.PICKUP: lambda e: f"PICKUP   {_who(e)} picks up {e.get('qty', 1)} {e['item']}",
    ev.DROP: lambda e: f"DROP     {_who(e)} drops {e.get('qty', 1)} {e['item']}",
    ev.EAT: lambda e: f"EAT      {_who(e)} eats {_a(e['item'])}",
    ev.USE: lambda e: f"USE      {_who(e)} uses {_a(e['item'])}",
    ev.HARVEST: lambda e: f"HARVEST  {_who(e)} gathers {e['item']} from "
                         f"{_a(str(e['object']).replace('_', ' '))}",
    ev.ACTION_FAILED: lambda e: f"FAILED   {_who(e)} could not {e['action']}: {e['reason']}",
    ev.TRADE_OFFER: lambda e: f"OFFER    {_who(e)} offers {_goods(e['give'])} to "
                             f"{_who(e, 'target', 'target_name')} for {_goods(e['want'])}",
    ev.TRADE_DECLINED: lambda e: f"DECLINED {_who(e)} declines offer #{e['offer']} of "
                                f"{_who(e, 'target', 'target_name')}",
    ev.TRADE_EXPIRED: lambda e: f"EXPIRED  offer #{e['offer']} of agent #{e['agent']} to "
                               f"agent #{e['target']} expired",
    ev.DEFEND: lambda e: f"DEFEND   {_who(e)} raises a guard",
    ev.SPOILED: lambda e: f"SPOILED  {_who(e)}'s {_goods(e['goods'])} spoiled",
    ev.CENSUS: lambda e: "CENSUS   " + ", ".join(
        f"{k.replace('_', ' ')} {v}" for k, v in e.items()
        if k not in ("type", "tick", "seq", "kind", "x", "y") and not isinstance(v, dict | list)),
}
TAG_WIDTH = 8  # every phrase above starts with its tag, padded to this width, and a space


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def _words(value: object) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dict):
        return " ".join(_words(v) for v in value.values())
    return str(value)


def _input_sentence(source: str, kind: str, data: dict[str, Any]) -> str:
    """'console: plan for agent #61: say "hello"', 'web: kill #3'."""
    if kind == "plan":
        steps = [f"{a.get('name', '?')} {_words(a.get('args', {}))}".rstrip()
                 for a in data.get("actions", []) if isinstance(a, dict)]
        return f"{source}: plan for agent #{data.get('agent', '?')}: " + (
            ", then ".join(steps) or "nothing")
    rest = " ".join(f"{k} {_words(v)}" for k, v in data.items())
    return f"{source}: {kind} {rest}".rstrip()


def sentence(event: Event) -> str:
    """An event as the world log says it, without the tag: 'Asha#7 hits Bram#9 for 6 ->
    health 94' (the viewer's events panel shows these). An input reads as who sent what;
    an unknown or malformed event as its type and fields."""
    kind = event.get("kind")
    if kind == "input" or (kind not in (None, "event", "check", "marker")
                           and "source" in event):
        data = event.get("data")
        return _input_sentence(str(event.get("source", "?")), str(event.get("type", "?")),
                               data if isinstance(data, dict) else {})
    fmt = _FORMATS.get(event.get("type", ""))
    if fmt is not None:
        try:
            return fmt(event)[TAG_WIDTH + 1:]
        except (KeyError, TypeError, ValueError, AttributeError):
            pass
    rest = " ".join(f"{k}={v}" for k, v in event.items()
                    if k not in ("type", "tick", "seq", "kind"))
    return f"{event.get('type', 'event')}: {rest}"


def format_event(event: Event) -> str:
    """One line for any event: a fixed phrase for known types, key=value for the rest."""
    fmt = _FORMATS.get(event.get("type", ""))
    if fmt is not None:
        try:
            return fmt(event)
        except (KeyError, TypeError, ValueError, AttributeError):
            pass  # a malformed event still gets logged, in the generic form below
    rest = " ".join(f"{k}={v}" for k, v in event.items() if k not in ("type", "tick"))
    return f"{str(event.get('type', 'event')).upper():<8} {rest}"


class WorldLog:
    """A TickObserver that hands events to a writer thread.

    Write errors (a full disk, a vanished folder) never reach the main thread: the writer
    keeps the lines in memory, reports the error once on stderr and retries with the next
    batch; past ``MAX_BACKLOG_LINES`` it drops the oldest and logs how many it dropped."""

    def __init__(self, path: Path, *, max_bytes: int = 10_000_000, backups: int = 5,
                 everything: bool = False, echo: TextIO | None = None,
                 redact: Callable[[str], str] | None = None) -> None:
        """``redact`` takes secrets out of every line before it is written or echoed."""
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.backups = backups
        self.everything = everything
        self.echo = echo
        self.redact = redact
        self.lines_written = 0
        self.lines_dropped = 0
        self.last_error: str | None = None
        self._queue: queue.SimpleQueue[tuple[int, list[Event]] | None] = queue.SimpleQueue()
        self._backlog: deque[str] = deque()
        self._dropped_unreported = 0
        self._file: TextIO | None = None
        self._thread = threading.Thread(target=self._run, name="world-log", daemon=True)
        self._thread.start()

    def on_tick(self, report: TickReport) -> None:
        if report.events:
            self._queue.put((report.tick, list(report.events)))

    def note(self, tick: int, text: str) -> None:
        """Log a line that is not a world event (start-up, shutdown, warnings)."""
        self._queue.put((tick, [{"type": "note", "text": text}]))

    def close(self, timeout: float = 5.0) -> None:
        self._queue.put(None)
        self._thread.join(timeout)

    # -- writer thread ---------------------------------------------------------------------

    def _lines(self, tick: int, events: list[Event]) -> list[str]:
        stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        out = []
        for event in events:
            kind = event.get("type", "")
            if kind in ROUTINE and not self.everything:
                continue
            text = str(event.get("text", "")) if kind == "note" else format_event(event)
            if self.redact is not None:
                text = self.redact(text)
            out.append(f"{stamp} t={tick:07d} {printable(text)}")
        return out

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            batch = [item]
            while True:  # gather whatever else is waiting: one write per burst
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            done = False
            for entry in batch:
                if entry is None:
                    done = True
                    continue
                self._backlog.extend(self._lines(*entry))
            overflow = len(self._backlog) - MAX_BACKLOG_LINES
            if overflow > 0:
                for _ in range(overflow):
                    self._backlog.popleft()
                self.lines_dropped += overflow
                self._dropped_unreported += overflow
            self._flush()
            if done:
                if self._file is not None:
                    self._file.close()
                return

    def _flush(self) -> None:
        if not self._backlog and not self._dropped_unreported:
            return
        lines = list(self._backlog)
        if self._dropped_unreported:
            lines.insert(0, f"-- world log: dropped {self._dropped_unreported} lines while "
                            "the log could not be written --")
        try:
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = self.path.open("a", encoding="utf-8")
            self._file.write("\n".join(lines) + "\n")
            self._file.flush()
        except OSError as exc:
            self._problem("cannot write", exc,
                          f"keeping {len(self._backlog)} lines in memory and retrying")
            self._close_file()
            return
        self._backlog.clear()
        self._dropped_unreported = 0
        self.lines_written += len(lines)
        if self.last_error is not None:
            print(f"world log: writing {self.path} again", file=sys.stderr)
            self.last_error = None
        try:
            if self._file.tell() >= self.max_bytes:
                self._rotate()
        except OSError as exc:
            # The lines are written; only the rotation failed: carry on in the same file.
            self._problem("cannot rotate", exc, "it keeps growing until rotation works")
            self._close_file()
        if self.echo is not None:
            try:
                self.echo.write("\n".join(lines) + "\n")
                self.echo.flush()
            except (OSError, ValueError):
                self.echo = None  # the terminal went away; the file still gets every line

    def _problem(self, what: str, exc: OSError, consequence: str) -> None:
        message = f"{type(exc).__name__}: {exc}"
        if message != self.last_error:
            print(f"world log: {what} {self.path}: {message}; {consequence}", file=sys.stderr)
        self.last_error = message

    def _close_file(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):  # nothing is left to save after a failed write
                self._file.close()
            self._file = None

    def _rotate(self) -> None:
        assert self._file is not None
        self._file.close()
        self._file = None
        if self.backups == 0:
            self.path.unlink(missing_ok=True)
            return
        for n in range(self.backups - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{n}")
            if older.exists():
                os.replace(older, self.path.with_name(f"{self.path.name}.{n + 1}"))
        os.replace(self.path, self.path.with_name(f"{self.path.name}.1"))

    def stats(self) -> dict[str, Any]:
        return {"lines_written": self.lines_written, "lines_dropped": self.lines_dropped,
                "backlog": len(self._backlog), "error": self.last_error}
