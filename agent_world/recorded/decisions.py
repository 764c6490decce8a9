"""The decisions a recorded world logged, each with the exact observation it answered.

A brain that decides off the tick (the LLM, a user's brain or policy, a remote agent, an RL
learner) reaches the world only as a ``plan`` input. Its logged data names the agent, the
actions, the thought, and ``asked_tick``: the tick after which the pipeline built the
request (``Pipeline._ask`` runs after tick ``asked_tick``, on the world as that tick left
it). Replaying the log to that moment and calling ``observe`` gives back, field for field,
the ``Observation`` the brain was handed.

This module is the one way to get them, in two passes over a save folder that only read it:

1. ``select_decisions``: a cheap pass over the log (no world) that collects a ``Key`` of
   four integers per logged decision in the range asked for (ticks, agents, a seeded
   sample). Plan inputs without ``asked_tick`` (logged before it was recorded) cannot be
   placed exactly: they are skipped and counted (``Selection.undated``); guessing "the tick
   before it applied" would hand a brain a wrong observation for an LLM's answers, which
   apply seconds after they were asked.
2. ``replay_decisions``: one forward replay (``LogStepper``, every logged state hash
   verified) from the saved state nearest before the first key, observing each agent at its
   asked tick and yielding a ``RecordedDecision`` once its plan input has been read. Only
   decisions asked and not yet answered are held (a few ticks' worth), so a long log streams
   in bounded memory.

Decision order, everywhere: by ``asked_tick``, then by the plan input's sequence number.
It is the order of a replay, so a log split into spans at saved states (``persistence.spans``)
and re-assembled span by span gives the same sequence as one replay.

``recorded_decisions`` does both. Re-asking (``recorded.reask``) and trajectory export
(``recorded.export``, which follows each decision's outcome with ``after_tick``) build on
it; neither replays a world of its own.
"""

from __future__ import annotations

import gzip
import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from agent_world.config import Config
from agent_world.contract.observation import Observation, observe
from agent_world.core import events as ev
from agent_world.core.world import World
from agent_world.persistence.eventlog import LogReader
from agent_world.persistence.folder import SaveFolder
from agent_world.persistence.replay import DivergenceError, LogStepper
from agent_world.persistence.snapshots import (
    claimed_tick,
    first_tick,
    load_nearest_snapshot,
)
from agent_world.persistence.spans import SetupFactory
from agent_world.types import Input, TickReport

__all__ = ["ANSWER_SLACK_TICKS", "PLAN", "AfterTick", "AtAsk", "Key", "LoggedDecision",
           "RecordError", "RecordedDecision", "Selection", "SelectionError", "recorded_decisions",
           "replay_decisions", "select_decisions"]

PLAN = "plan"  # the input type every brain's decision arrives as

ANSWER_SLACK_TICKS = 6000
"""How far past the last asked tick the first pass reads for answers (10 minutes of world
time at 10 Hz; the pipeline gives a request up long before: its deadline is seconds)."""


class SelectionError(ValueError):
    """A range, agent or sample that selects nothing usable; the message is one line naming
    the value and the fix."""


class RecordError(Exception):
    """The recording cannot be brought to a decision: it diverges from its own state hashes,
    or its log stops before the decision's answer."""


class Key(NamedTuple):
    """One logged decision, as the first pass keeps it: sorting keys gives decision order."""

    asked_tick: int
    seq: int  # the plan input's sequence number
    tick: int  # the tick it was applied at
    agent: int


@dataclass(frozen=True, slots=True, kw_only=True)
class LoggedDecision:
    """A ``plan`` input as the log keeps it (docs/save-format.md, "plan").

    ``actions`` are ``{"name", "args"}`` objects; ``data`` is the input's whole logged data:
    besides the fields above, ``request``, ``reasons``, ``latency_ms``, and for an LLM's
    answer ``model``, ``usage``, ``raw``, ``cached``, for a user's brain ``brain`` and
    ``trace``, for a remote agent ``client``."""

    tick: int
    seq: int
    asked_tick: int
    agent: int
    source: str
    actions: tuple[Mapping[str, Any], ...]
    thought: str
    data: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_input(cls, inp: Input) -> LoggedDecision:
        data = inp.data
        actions = data.get("actions")
        return cls(tick=inp.tick, seq=inp.seq, asked_tick=_int(data.get("asked_tick")),
                   agent=_int(data.get("agent")), source=str(data.get("source", inp.source)),
                   actions=tuple(a for a in actions if isinstance(a, dict))
                   if isinstance(actions, list) else (),
                   thought=str(data.get("thought", "")), data=dict(data))


AfterTick = Callable[[World, TickReport], None]
"""Called after each replayed tick, on the world as that tick left it; like ``at_ask``, it
must not change the world."""
AtAsk = Callable[[World, Key, Observation], object]
"""Called at a decision's asked tick, on the replayed world as the pipeline saw it (after
the observation is made): what it returns travels as ``RecordedDecision.aside``. It must
not change the world: the replay verifies every logged state hash, so a change is caught as
a divergence at the next one."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedDecision:
    """A logged decision with the observation its brain was handed (``observe`` of its
    agent after tick ``logged.asked_tick``), and what ``at_ask`` returned there."""

    key: Key
    logged: LoggedDecision
    observation: Observation
    aside: object = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Selection:
    """The first pass's result. ``keys`` in decision order; ``found``: the dated decisions in
    the range and agents before sampling; ``undated``: plan inputs there without
    ``asked_tick`` (skipped); ``extent``: the ticks the folder records (first snapshot ..
    last tick reached); ``first``/``last``: the asked ticks the range covers."""

    keys: tuple[Key, ...]
    found: int
    undated: int
    extent: tuple[int, int]
    first: int
    last: int


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


# -- the first pass: which decisions ------------------------------------------------------------


def select_decisions(folder: SaveFolder, *, first: int | None = None, last: int | None = None,
                     agents: Sequence[int] | None = None, sample: int | None = None,
                     seed: int = 0) -> Selection:
    """The logged decisions asked at ticks ``first``..``last`` (None: the folder's first and
    last tick) by ``agents`` (None: any), or ``sample`` of them drawn with ``seed`` (the same
    arguments give the same keys). SelectionError for a tick outside the folder's ticks, an
    agent not alive in the range, or a sample below 1."""
    start, end = first_tick(folder), claimed_tick(folder)
    if start < 0:
        raise SelectionError(f"{folder.root} holds no first snapshot; it cannot be replayed")
    lo = start if first is None else first
    hi = end if last is None else last
    for flag, value in (("--from", first), ("--to", last)):
        if value is not None and not start <= value <= end:
            raise SelectionError(f"{flag} {value}: outside the ticks of {folder.root} "
                                 f"({start}..{end}); give a tick in that range")
    if lo > hi:
        raise SelectionError(f"--from {lo} is after --to {hi}; give --from <= --to")
    if sample is not None and sample < 1:
        raise SelectionError(f"--sample {sample}: give 1 or more decisions")
    wanted = frozenset(agents) if agents else None
    keys, undated, lives = _scan(folder, lo, hi, wanted, start)
    if wanted is not None:
        _check_alive(folder, sorted(wanted), keys, lives, lo, hi)
    found = len(keys)
    if sample is not None and sample < found:
        keys = random.Random(seed).sample(keys, sample)
    keys.sort()
    return Selection(keys=tuple(keys), found=found, undated=undated, extent=(start, end),
                     first=lo, last=hi)


def _scan(folder: SaveFolder, lo: int, hi: int, agents: frozenset[int] | None,
          start: int) -> tuple[list[Key], int, dict[int, list[int]]]:
    """Keys of the dated decisions asked in ``lo..hi``, the undated plan inputs applied
    after ``lo``, and (when ``agents`` are named) their spawn and death ticks."""
    keys: list[Key] = []
    undated = 0
    lives: dict[int, list[int]] = {}  # agent -> [born, died] (-1: not seen)
    reader = LogReader(folder, from_tick=start if agents is not None else lo + 1)
    for rec in reader:
        tick = rec.get("tick")
        if not isinstance(tick, int):
            continue
        if tick > hi + ANSWER_SLACK_TICKS:
            break
        kind = rec.get("kind")
        if kind == "event" and agents is not None:
            _note_life(rec, agents, lives, tick)
            continue
        if kind != "input" or rec.get("type") != PLAN:
            continue
        data = rec.get("data")
        if not isinstance(data, dict):
            continue
        agent = _int(data.get("agent"))
        if agents is not None and agent not in agents:
            continue
        asked = data.get("asked_tick")
        if not isinstance(asked, int) or isinstance(asked, bool):
            if tick > lo and tick - 1 <= hi:
                undated += 1
            continue
        if lo <= asked <= hi:
            keys.append(Key(asked, int(rec["seq"]), tick, agent))
    return keys, undated, lives


def _note_life(rec: Mapping[str, Any], agents: frozenset[int], lives: dict[int, list[int]],
               tick: int) -> None:
    kind = rec.get("type")
    agent = rec.get("agent")
    if agent not in agents or not isinstance(agent, int):
        return
    if kind == ev.SPAWN:
        lives.setdefault(agent, [-1, -1])[0] = tick
    elif kind == ev.DEATH:
        lives.setdefault(agent, [-1, -1])[1] = tick


def _first_agents(folder: SaveFolder) -> set[int]:
    """The agents of the world's first snapshot (read as data: no world is built)."""
    history = folder.history()
    if not history:
        return set()
    raw = history[0][1].read_bytes()
    doc = orjson.loads(gzip.decompress(raw) if history[0][1].suffix == ".gz" else raw)
    return {row["id"] for row in doc["state"]["entities"] if "Agent" in row}


def _check_alive(folder: SaveFolder, agents: Iterable[int], keys: list[Key],
                 lives: dict[int, list[int]], lo: int, hi: int) -> None:
    """Each agent named must be alive at some tick of ``lo..hi`` (an agent that decided
    there was). Alive after tick T: born at or before T, and not dead by T."""
    deciding = {k.agent for k in keys}
    at_start = None
    for agent in agents:
        if agent in deciding:
            continue
        if at_start is None:
            try:
                at_start = _first_agents(folder)
            except (OSError, ValueError, KeyError, TypeError):
                at_start = set()
        born, died = lives.get(agent, [-1, -1])
        if agent in at_start:
            born = first_tick(folder)
        if born < 0:
            raise SelectionError(f"--agents {agent}: no agent #{agent} appears in "
                                 f"{folder.root}'s first snapshot or log; python main.py "
                                 "report or the viewer lists its agents")
        if born > hi or 0 <= died <= lo:
            span = f"born at tick {born}" + (f", died at tick {died}" if died >= 0 else "")
            raise SelectionError(f"--agents {agent}: agent #{agent} is not alive at ticks "
                                 f"{lo}..{hi} ({span}); pick ticks it lived in, or another "
                                 "agent")


# -- the second pass: replaying to each decision -------------------------------------------------


def _casts(world: World) -> bool:
    """Whether the world ran with the ability sandbox: its built-in brains cast, or it holds
    generated abilities. A world made without one (an eval episode) replays without one,
    so that its observations list the abilities its brains were shown."""
    book = world.abilities
    return book.brains_cast or bool(book.generated)


def replay_decisions(folder: SaveFolder, config: Config, keys: Sequence[Key], *,
                     setup_factory: SetupFactory | None = None,
                     at_ask: AtAsk | None = None, after_tick: AfterTick | None = None,
                     follow_ticks: int = 0) -> Iterator[RecordedDecision]:
    """Each of ``keys`` (from ``select_decisions``) as a ``RecordedDecision``, in decision
    order, from one replay starting at the saved state nearest at or before the first.

    ``setup_factory`` makes the ability sandbox for a world that ran with one (the replay
    needs it to cast as the world did). ``after_tick`` sees every replayed tick, before the
    decisions it completes are yielded; with ``follow_ticks`` the replay goes on that many
    ticks past the last decision's (or to the log's end), for what follows the decisions.
    RecordError when the recording diverges or its log stops short of a decision."""
    ordered = sorted(keys)
    if not ordered:
        return
    loaded = load_nearest_snapshot(folder, config, ordered[0].asked_tick, [])
    world = loaded.world
    try:
        making = setup_factory(config) if setup_factory is not None and _casts(world) \
            else nullcontext()
        with making as setup:
            if setup is not None:
                setup(world)
            yield from _walk(world, folder, ordered, at_ask, after_tick, follow_ticks)
    except DivergenceError as exc:
        raise RecordError(f"{folder.root} diverges from its own log at tick {exc.tick} "
                          f"(python main.py replay {folder.root} says more); its decisions "
                          "cannot be rebuilt past it") from None
    finally:
        world.close()


def _walk(world: World, folder: SaveFolder, ordered: list[Key], at_ask: AtAsk | None,
          after_tick: AfterTick | None, follow_ticks: int) -> Iterator[RecordedDecision]:
    asked: dict[int, list[Key]] = {}
    for key in ordered:
        asked.setdefault(key.asked_tick, []).append(key)
    pending: dict[tuple[int, int], tuple[Key, Observation, object]] = {}
    ready: dict[tuple[int, int], RecordedDecision] = {}

    def observe_asked() -> None:
        for key in asked.pop(world.tick, ()):
            if not world.alive(key.agent):
                raise RecordError(f"agent #{key.agent} is not alive after tick "
                                  f"{key.asked_tick}, where its decision (input "
                                  f"{key.seq}) says it was asked; the log contradicts itself")
            seen = observe(world, key.agent)
            aside = at_ask(world, key, seen) if at_ask is not None else None
            pending[(key.tick, key.seq)] = (key, seen, aside)

    stepper = LogStepper(world, folder, verify=True)
    observe_asked()
    following = 0
    while following < len(ordered):
        if not stepper.more():
            key = ordered[following]
            raise RecordError(f"the log of {folder.root} stops at tick {world.tick}, before "
                              f"the decision of agent #{key.agent} applied at tick "
                              f"{key.tick} (python main.py replay {folder.root} says why)")
        report = stepper.step()
        if after_tick is not None:
            after_tick(world, report)
        observe_asked()
        for inp in report.inputs:
            if inp.type != PLAN:
                continue
            held = pending.pop((inp.tick, inp.seq), None)
            if held is not None:
                key, seen, aside = held
                ready[(inp.tick, inp.seq)] = RecordedDecision(
                    key=key, logged=LoggedDecision.from_input(inp), observation=seen,
                    aside=aside)
        while following < len(ordered):
            key = ordered[following]
            done = ready.pop((key.tick, key.seq), None)
            if done is None:
                break
            following += 1
            yield done
    until = max(k.tick for k in ordered) + follow_ticks
    while follow_ticks and world.tick < until and stepper.more():
        report = stepper.step()
        if after_tick is not None:
            after_tick(world, report)


def recorded_decisions(root: Path | SaveFolder, config: Config, *, first: int | None = None,
                       last: int | None = None, agents: Sequence[int] | None = None,
                       sample: int | None = None, seed: int = 0,
                       setup_factory: SetupFactory | None = None,
                       at_ask: AtAsk | None = None) -> Iterator[RecordedDecision]:
    """The logged decisions of a save folder with their observations, in decision order:
    ``select_decisions`` then ``replay_decisions`` (one process; ``recorded.reask`` shows how
    to split the keys into spans for several). Only reads the folder: a running world can
    be read too. Raises SelectionError, RecordError, or SaveError for a folder that is not
    a save."""
    folder = root if isinstance(root, SaveFolder) else SaveFolder.open(root)
    selection = select_decisions(folder, first=first, last=last, agents=agents,
                                 sample=sample, seed=seed)
    return replay_decisions(folder, config, selection.keys, setup_factory=setup_factory,
                            at_ask=at_ask)

