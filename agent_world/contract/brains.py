"""The brain classes a user subclasses: ``SimpleBrain`` (tier 1) and ``Brain`` (tier 2).

One instance per agent, made on a worker thread the first time the agent decides; every
method runs on a worker thread, never inside a tick, one call at a time per agent. A brain
that raises, hangs past ``decisions.brains.deadline_ms`` or answers something that is not a valid
decision leaves its agent on the built-in brain for that decision; the fault is counted
and shown (``/stats``, ``/debug``, the world log).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from agent_world.contract.decision import Decision, DecisionError
from agent_world.contract.observation import Observation
from agent_world.core.items import ITEMS

__all__ = ["MAX_TRACE", "MAX_TRACE_LINE", "Brain", "BrainFault", "BrainLLM", "SimpleBrain",
           "deliver_hooks", "sensible_args", "take_trace"]

MAX_TRACE = 20  # reasoning-trace lines kept per decision (the newest)
MAX_TRACE_LINE = 300


class BrainLLM(Protocol):
    """The configured LLM as a brain sees it (``Brain.llm``; the LLM layer provides it)."""

    rules: Callable[[], str]
    """The system prompt LLM agents get now: the world's rules, actions and abilities."""

    def complete(self, prompt: str, *, system: str = "", max_tokens: int | None = None,
                 temperature: float | None = None) -> str:
        """The model's answer to ``prompt`` after ``system``."""
        ...


class BrainFault(Exception):
    """A brain's decision failed in a way it can name: ``kind`` is what ``/stats`` and the
    world log count it as (a policy's ``limit``, ``invalid``, ``timeout`` ...) instead of
    ``exception``. The agent falls back to its built-in brain for that decision."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind if kind and kind != "ok" else "exception"


class Brain:
    """Tier 2: answer a ``Decision`` or a short plan of them from an ``Observation``.

    ``actions`` maps every action's name to its JSON Schema (``python main.py schema
    --part actions``). The hooks are called before the next ``decide``, in order.

    Class settings: ``deadline_ms`` replaces ``decisions.brains.deadline_ms`` for this brain;
    ``reflect_every_ticks`` (0: never) schedules ``reflect()`` after a decision once that
    many ticks have passed since the last one. ``llm`` is the configured LLM
    (``complete(prompt, system=...) -> str``) when the world has one, else None."""

    deadline_ms: int | None = None
    reflect_every_ticks: int = 0
    llm: BrainLLM | None = None

    def decide(self, obs: Observation, actions: Mapping[str, Any]
               ) -> Decision | Sequence[Decision]:
        raise NotImplementedError

    def on_spawn(self, agent_id: int) -> None:
        """The agent this brain thinks for; called once, before its first decision."""

    def on_result(self, action: str, outcome: str) -> None:
        """How the agent's last decided action ended: ``ok`` or why it failed."""

    def on_event(self, event: Mapping[str, Any]) -> None:
        """An event that names the agent (an attack on it, speech to it, a trade ...)."""

    def on_death(self) -> None:
        """The agent died; no ``decide`` follows."""

    def on_episode_start(self, episode: Mapping[str, Any]) -> None:
        """An episode begins (``eval``, ``train``, ``fork-eval``, the RL environment); called
        before the agent's first ``decide``. ``episode``: ``scenario``, ``objective``,
        ``seed``, ``ticks`` (its longest length), and the agent's ``agent`` id, ``name``,
        ``team`` ("" for none) and ``subject`` (whether it plays the brain under test)."""

    def on_episode_end(self, episode: Mapping[str, Any]) -> None:
        """The episode ended with the agent alive (a dead one had ``on_death``): ``episode``
        holds what ``on_episode_start`` had, with ``ended`` (``ticks``, ``subjects_dead``,
        ``team_eliminated``, ``objective`` or ``stopped``), ``tick``, the agent's ``score``
        and ``figures`` (its metrics as the results show them). In a fork's branch the
        ``scenario`` names the fork, ``branch`` its number, and ``score`` is None (a fork
        has no score; its figures count from the fork). No ``decide`` follows; it is held to
        the brain's deadline."""

    def interview(self, question: str, obs: Observation) -> str | None:
        """Answer an interviewer's question (``/ask``, a survey) in the agent's own voice,
        from ``obs`` (what it perceives now) and whatever the brain remembers. Plain text;
        the world keeps at most ``talk.max_answer_chars`` of it. Called on an interview
        thread, never while another call of this brain runs, and held to the brain's
        deadline. None (the default): the world answers plainly from the agent's state
        (its needs, goods, plan, likes and dislikes, what happened to it lately)."""
        return None

    def reflect(self) -> None:
        """Think over what happened (every ``reflect_every_ticks``, after a decision, on the
        worker, within the deadline): distil memories, revise goals. Its time never delays
        a decision; an exception in it is counted like a fault of ``decide``."""

    def get_state(self) -> Any:
        """What this brain wants to remember across a restart, as JSON data (dicts with text
        keys, lists, text, numbers, true/false, None), or None for nothing (the default).

        Opt in by overriding it together with ``set_state``: it is called on a worker
        between two of the brain's calls, once per snapshot, and what it answers is saved
        beside that snapshot (``minds/<tick>.jsonl.gz``), at most
        ``minds.max_bytes_per_agent`` bytes of it (past that, the oldest items of its
        longest list or object are left out). A resumed or forked world gives it back
        through ``set_state``. An exception here, or an answer that is not JSON data, keeps
        the state of the previous snapshot and is counted as a ``get_state`` fault."""
        return None

    def set_state(self, state: Any) -> None:
        """Take back what ``get_state`` saved: called once, on a worker, after
        ``on_spawn`` and before the first hook and ``decide`` of a resumed or forked
        world's brain. An exception here is one warning naming the agent, which then starts
        afresh (a new brain, its memory empty)."""
        raise NotImplementedError(f"{type(self).__name__} saves a state (get_state) but "
                                  "cannot take it back: define set_state(state)")

    def trace(self, text: str) -> None:
        """A line of the reasoning trace: ``/debug AGENT`` shows the last decision's trace
        and the event log keeps it with the decision (the newest ``MAX_TRACE`` lines)."""
        lines: list[str] = self.__dict__.setdefault("_trace_lines", [])
        lines.append(" ".join(str(text).split())[:MAX_TRACE_LINE])
        del lines[:-MAX_TRACE]


class SimpleBrain(Brain):
    """Tier 1: name an action; the world picks sensible arguments (``sensible_args``)."""

    def decide_action(self, ctx: Observation) -> str:
        raise NotImplementedError

    def decide(self, obs: Observation, actions: Mapping[str, Any]) -> Decision:
        name = self.decide_action(obs)
        if not isinstance(name, str):
            raise DecisionError(f"a SimpleBrain answers an action's name, got "
                                f"{type(name).__name__}")
        return Decision(name, sensible_args(name, obs))


def deliver_hooks(brain: Brain, hooks: Sequence[tuple[str, Any]]) -> None:
    """The hooks due, in order: ``("event", event)``, ``("result", (action, outcome))``,
    ``("episode_start", episode)`` or ``("episode_end", episode)``."""
    for kind, item in hooks:
        if kind == "event":
            brain.on_event(item)
        elif kind == "result":
            brain.on_result(*item)
        elif kind == "episode_start":
            brain.on_episode_start(item)
        elif kind == "episode_end":
            brain.on_episode_end(item)


def take_trace(brain: Brain) -> list[str]:
    """The trace lines ``brain`` wrote since the last call."""
    lines: list[str] = brain.__dict__.pop("_trace_lines", [])
    return lines


def _nearest_food(obs: Observation) -> int | None:
    return next((i.id for i in obs.items if ITEMS[i.kind].category == "food"), None)


def sensible_args(action: str, obs: Observation) -> dict[str, Any]:
    """Arguments for ``action`` from what the agent perceives: the nearest food for
    ``pickup`` (else the nearest item), the nearest harvestable object for ``use``, the
    nearest agent for ``attack``, ``follow`` and ``flee``, the first offer for
    ``trade_accept`` and ``trade_decline``, the nearest food or item for ``move_to``.
    DecisionError when there is nothing to act on; ``{}`` for actions that need none."""
    nearest_agent = obs.agents[0].id if obs.agents else None
    if action in ("attack", "follow", "flee"):
        target = nearest_agent
    elif action == "pickup":
        target = _nearest_food(obs) or (obs.items[0].id if obs.items else None)
    elif action == "use":
        target = next((o.id for o in obs.objects if o.stock > 0 or o.kind == "shelter"),
                      None)
    elif action == "move_to":
        target = _nearest_food(obs) or (obs.items[0].id if obs.items else None) or (
            obs.objects[0].id if obs.objects else None)
    elif action in ("trade_accept", "trade_decline"):
        if not obs.offers:
            raise DecisionError(f"{action}: no offer was made to this agent")
        return {"offer": obs.offers[0].id}
    elif action in ("idle", "wander", "rest", "defend", "eat"):
        return {}
    else:
        raise DecisionError(f"{action}: a SimpleBrain cannot pick its arguments; answer "
                            "a Decision from a Brain")
    if target is None:
        raise DecisionError(f"{action}: nothing in sight to {action.replace('_', ' ')}")
    return {"target": target}
