"""The worker process of ``brains.processes``: ``python -m agent_world.userbrains.procchild
READ_FD WRITE_FD MODULE:CLASS PATH_JSON``.

It imports the brain class, then answers requests on its pipe until the pipe closes: the
brains of the agents routed to it live here, one per agent, between decisions. Its stdout
is the world's stderr, so a brain's prints are seen and never mix with the pipe.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from multiprocessing.connection import Connection
from typing import Any

import orjson

from agent_world.contract.brains import Brain, BrainFault, deliver_hooks, take_trace
from agent_world.contract.decision import DecisionError, as_plan
from agent_world.contract.schema import action_schemas
from agent_world.core.inputs import MAX_PLAN

__all__ = ["serve"]


def serve(requests: Connection, answers: Connection, cls: type[Brain]) -> None:
    """Answer ``decide``, ``interview``, ``death``, ``tell`` and ``get_state`` requests until
    the pipe closes. A ``decide`` or ``interview`` carries the brain's saved state (None for
    none), given to ``set_state`` when the brain is made."""
    actions = action_schemas()
    answers.send(("ready",))
    brains: dict[int, Brain] = {}
    reflected: dict[int, int] = {}
    while True:
        try:
            msg = requests.recv()
        except (EOFError, OSError):
            return
        if msg[0] == "death":
            gone = brains.pop(msg[1], None)
            if gone is not None:
                with contextlib.suppress(Exception):
                    gone.on_death()
            continue
        if msg[0] == "tell":  # hooks with no decision after them (an episode's end)
            told = brains.get(msg[1])
            if told is not None:
                with contextlib.suppress(Exception):
                    deliver_hooks(told, msg[2])
            continue
        if msg[0] == "get_state":  # the brain's mind, for the snapshot being taken
            answers.send(("state", *_state_of(brains.get(msg[1]))))
            continue
        if msg[0] == "interview":  # ("interview", agent, question, obs, saved): text or None
            _kind, agent, question, obs, saved = msg
            made_notes: list[str] = []
            try:
                asked = brains.get(agent)
                if asked is None:
                    asked = brains[agent] = _made(cls, agent, saved, made_notes)
                text = asked.interview(question, obs)
                answers.send(("ok", text if isinstance(text, str) else None, [], made_notes))
            except Exception as exc:  # the user's code
                answers.send(("exception", f"{type(exc).__name__}: {str(exc)[:200]}", [],
                              made_notes))
            continue
        _kind, agent, obs, hooks, saved = msg
        brain = brains.get(agent)
        notes: list[str] = []
        try:
            if brain is None:
                brain = brains[agent] = _made(cls, agent, saved, notes)
            deliver_hooks(brain, hooks)
            answer = brain.decide(obs, actions)
            plan: list[Any] = list(answer) if isinstance(answer, list | tuple) else [answer]
            as_plan(plan, max_actions=MAX_PLAN)  # the error message is made here
            answers.send(("ok", [d.to_dict() for d in plan], take_trace(brain), notes))
        except DecisionError as exc:
            answers.send(("invalid", str(exc), take_trace(brain) if brain else [], notes))
            continue
        except BrainFault as exc:
            answers.send((exc.kind, str(exc)[:300], take_trace(brain) if brain else [],
                          notes))
            continue
        except Exception as exc:  # the user's code
            answers.send(("exception", f"{type(exc).__name__}: {str(exc)[:200]}",
                          take_trace(brain) if brain else [], notes))
            continue
        every = brain.reflect_every_ticks
        last = reflected.setdefault(agent, obs.tick)
        if every and obs.tick - last >= every:
            reflected[agent] = obs.tick
            with contextlib.suppress(Exception):  # its fault shows as the next one's delay
                brain.reflect()


def _made(cls: type[Brain], agent: int, saved: Any, notes: list[str]) -> Brain:
    """The agent's brain, given back its saved state (``saved``, None for none); a state it
    cannot take leaves a note and a fresh brain."""
    brain = cls()
    brain.on_spawn(agent)
    if saved is None:
        return brain
    try:
        brain.set_state(saved)
    except Exception as exc:  # the user's code
        notes.append(f"{type(exc).__name__}: {str(exc)[:200]}")
        brain = cls()
        brain.on_spawn(agent)
    return brain


def _state_of(brain: Brain | None) -> tuple[bytes | None, str]:
    """The brain's ``get_state()`` as JSON, or why not (None and '' when it keeps none)."""
    if brain is None:
        return None, ""
    try:
        state = brain.get_state()
        return (None if state is None else orjson.dumps(state)), ""
    except Exception as exc:  # the user's code (orjson.JSONEncodeError is a TypeError)
        return None, f"{type(exc).__name__}: {str(exc)[:200]}"


def main(argv: list[str]) -> int:
    read_fd, write_fd, spec, path = int(argv[0]), int(argv[1]), argv[2], argv[3]
    sys.path[:0] = [p for p in orjson.loads(path) if p not in sys.path]
    module_name, _, class_name = spec.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    serve(Connection(read_fd, writable=False), Connection(write_fd, readable=False), cls)
    return 0


if __name__ == "__main__":  # pragma: no cover - the worker process
    sys.exit(main(sys.argv[1:]))
