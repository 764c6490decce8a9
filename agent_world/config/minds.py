"""The ``minds`` section: what the minds of agents keep across a restart, and how memory is
recalled by meaning (docs/agents.md, "Minds that last")."""

from __future__ import annotations

from dataclasses import dataclass

from agent_world.config.base import setting

__all__ = ["MindsConfig"]


@dataclass(frozen=True, slots=True, kw_only=True)
class MindsConfig:
    """Minds saved with the world at every snapshot (``minds/<tick>.jsonl.gz``), and the
    optional embedding endpoint that ranks memories by meaning."""

    max_bytes_per_agent: int = setting(
        262_144, "most bytes of JSON one agent's mind may take in a save; past it its "
        "oldest memories are left out (docs/save-format.md, 'Minds')", low=1024,
        high=100_000_000,
    )
    capture_wait_s: float = setting(
        10.0, "how long a snapshot waits for a brain busy in a call before it saves that "
        "brain's mind as it was at the previous snapshot", low=0.1, high=600,
    )
    embeddings: str = setting(
        "", "the model profile (a name in llm.models, or 'default' for the llm section "
        "itself) whose OpenAI-compatible /embeddings endpoint ranks memories by meaning; "
        "'' keeps recall lexical (BM25), which is also the fallback when the endpoint fails",
    )
    recall_deadline_ms: int = setting(
        1500, "the longest one recall waits for the embedding endpoint before it ranks by "
        "BM25 instead", low=10, high=60_000,
    )
