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
    """Answer ``decide``, ``interview``, ``death`` and ``tell`` requests until the pipe
    closes."""
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
        if msg[0] == "interview":  # ("interview", agent, question, obs): text or None
            _kind, agent, question, obs = msg
            try:
                asked = brains.get(agent)
                if asked is None:
                    asked = brains[agent] = cls()
                    asked.on_spawn(agent)
                text = asked.interview(question, obs)
                answers.send(("ok", text if isinstance(text, str) else None, []))
            except Exception as exc:  # the user's code
                answers.send(("exception", f"{type(exc).__name__}: {str(exc)[:200]}", []))
            continue
        _kind, agent, obs, hooks = msg
        brain = brains.get(agent)
        try:
            if brain is None:
                brain = brains[agent] = cls()
                brain.on_spawn(agent)
            deliver_hooks(brain, hooks)
            answer = brain.decide(obs, actions)
            plan: list[Any] = list(answer) if isinstance(answer, list | tuple) else [answer]
            as_plan(plan, max_actions=MAX_PLAN)  # the error message is made here
            answers.send(("ok", [d.to_dict() for d in plan], take_trace(brain)))
        except DecisionError as exc:
            answers.send(("invalid", str(exc), take_trace(brain) if brain else []))
            continue
        except BrainFault as exc:
            answers.send((exc.kind, str(exc)[:300], take_trace(brain) if brain else []))
            continue
        except Exception as exc:  # the user's code
            answers.send(("exception", f"{type(exc).__name__}: {str(exc)[:200]}",
                          take_trace(brain) if brain else []))
            continue
        every = brain.reflect_every_ticks
        last = reflected.setdefault(agent, obs.tick)
        if every and obs.tick - last >= every:
            reflected[agent] = obs.tick
            with contextlib.suppress(Exception):  # its fault shows as the next one's delay
                brain.reflect()


def main(argv: list[str]) -> int:
    read_fd, write_fd, spec, path = int(argv[0]), int(argv[1]), argv[2], argv[3]
    sys.path[:0] = [p for p in orjson.loads(path) if p not in sys.path]
    module_name, _, class_name = spec.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    serve(Connection(read_fd, writable=False), Connection(write_fd, readable=False), cls)
    return 0


if __name__ == "__main__":  # pragma: no cover - the worker process
    sys.exit(main(sys.argv[1:]))
