"""The ``talk`` section: interviews (``/ask``) and surveys (``/survey``), their bounds."""

from __future__ import annotations

from dataclasses import dataclass

from agent_world.config.base import setting

__all__ = ["TalkConfig"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TalkConfig:
    """Talking to agents: /ask interviews one agent, /survey every agent a filter matches
    (docs/agents.md, "Talking to agents"). Answers come off the tick, in the agent's own
    voice; each one is a logged input, kept in the agent's memory only when asked to."""

    remember: bool = setting(
        False, "whether an interview enters the agent's memory when the question does not "
        "say (remember=yes|no)",
    )
    max_question_chars: int = setting(
        500, "longest question, in characters; a longer one is refused", low=1, high=4000,
    )
    max_answer_chars: int = setting(
        600, "longest answer kept, in characters (cut at a word)", low=20, high=4000,
    )
    max_answer_tokens: int = setting(
        160, "tokens a model may spend on an interview's answer", low=16, high=4000,
    )
    per_agent: int = setting(
        3, "interviews waiting for one agent at most (its own and surveys'); more are "
        "refused until it has answered", low=1, high=100,
    )
    max_pending: int = setting(
        1000, "interviews waiting for an answer at most, in all; a question or a survey past "
        "it is refused", low=1, high=100_000,
    )
    max_surveys: int = setting(
        4, "surveys collecting answers at once at most", low=1, high=100,
    )
    in_flight: int = setting(
        2, "interviews out at once per kind of brain (each model profile, users' brains); "
        "the LLM's go out only into free slots of llm.max_concurrent, never ahead of an "
        "urgent decision", low=1, high=64,
    )
    answer_timeout_s: float = setting(
        60.0, "an interview sent to a brain that has not answered within this many seconds "
        "ends without an answer", low=1, high=3600,
    )
    max_wait_s: float = setting(
        900.0, "an interview not yet sent this many seconds after it was asked (the budget "
        "spent, the model busy with decisions) ends without an answer", low=1, high=86_400,
    )
    keep: int = setting(
        1000, "finished interviews kept for GET /api/interviews/{id} (the oldest go first; "
        "the event log keeps every one)", low=10, high=100_000,
    )
