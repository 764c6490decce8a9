"""What LLM agents cost: 20 LLM agents for 10 minutes of world time against the fake
endpoint, which counts tokens from the request and reports cached prefixes as OpenAI does.
Figures per decision (prompt tokens, cached and uncached; answer tokens), decisions per
agent-hour, dollars per agent-hour at the price table, invalid answers and fallbacks per
decision, and how soon an agent decides after being attacked, spoken to or offered a trade.
The same run of the baseline commit's code (checked out beside this tree with ``git
worktree``) stands beside it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_world.llm.prices import PRICES, Price

__all__ = ["BASELINE", "measure_llm_cost"]

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "066f968"  # the last commit before the LLM economy work (issue 18)
PRICED = ("gpt-4o-mini", "claude-haiku-4-5", "local")


def _serve() -> None:
    """The fake endpoint (a child process): counted usage, prefix caching like OpenAI."""
    sys.path.insert(0, str(ROOT))
    from tests.llm_server import FakeLLMServer  # noqa: PLC0415 - only in the child

    server = FakeLLMServer()
    server.usage_mode = "prefix"
    server.delay_s = 0.0
    server.start()
    print(server.base_url, flush=True)
    sys.stdin.read()
    server.stop()


def _run(tree: Path, agents: int, ticks: int, out: Path) -> dict[str, Any]:
    """One run of ``tree``'s code against a fresh fake endpoint (an empty prefix cache)."""
    child = subprocess.Popen([sys.executable, "-c",
                              "from bench.llm_cost import _serve; _serve()"],
                             cwd=str(ROOT), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    assert child.stdout is not None and child.stdin is not None
    try:
        url = child.stdout.readline().strip()
        env = {**os.environ, "PYTHONPATH": str(tree)}
        done = subprocess.run([sys.executable, str(ROOT / "bench" / "llm_cost_run.py"), url,
                               str(out), "--agents", str(agents), "--ticks", str(ticks)],
                              env=env, capture_output=True, text=True, timeout=3600,
                              check=False)
    finally:
        child.stdin.close()
        child.wait(10)
    if done.returncode != 0:
        return {"error": (done.stderr or done.stdout).strip().splitlines()[-1:]}
    figures: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return figures


def _baseline_tree(folder: Path, commit: str) -> Path | None:
    """``commit`` checked out in ``folder`` (None without git or the commit)."""
    tree = folder / "baseline"
    done = subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--force",
                           str(tree), commit], capture_output=True, text=True, check=False)
    return tree if done.returncode == 0 else None


def _remove_tree(tree: Path) -> None:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                   capture_output=True, check=False)


def dollars(tokens: dict[str, float], price: Price) -> float:
    """One decision's cost: uncached and cached prompt tokens, answer tokens."""
    return (tokens["uncached"] * price.input + tokens["cached"] * price.cached_input
            + tokens["completion"] * price.output) / 1e6


def summarise(raw: dict[str, Any]) -> dict[str, Any]:
    if "error" in raw:
        return raw
    n = max(1, raw["decisions"])
    hours = raw["ticks"] / raw["tick_rate"] / 3600
    per_agent_hour = raw["decisions"] / (raw["agents"] * hours)
    tokens = {"prompt": raw["prompt_tokens"] / n, "cached": raw["cached_tokens"] / n,
              "uncached": (raw["prompt_tokens"] - raw["cached_tokens"]) / n,
              "completion": raw["completion_tokens"] / n}
    return {
        "decisions": raw["decisions"],
        "decisions_per_agent_hour": round(per_agent_hour, 1),
        "prompt_tokens_per_decision": round(tokens["prompt"]),
        "cached_tokens_per_decision": round(tokens["cached"]),
        "uncached_tokens_per_decision": round(tokens["uncached"]),
        "answer_tokens_per_decision": round(tokens["completion"]),
        "dollars_per_agent_hour": {name: round(dollars(tokens, PRICES[name]) * per_agent_hour,
                                               4) for name in PRICED},
        "invalid_per_decision": round(raw["invalid"] / n, 4),
        "fallbacks_per_decision": round(raw["fallbacks"] / n, 4),
        "reactions": raw["reactions"],
        "reaction_p50_s": (None if raw["reaction_p50_ticks"] is None
                           else round(raw["reaction_p50_ticks"] / raw["tick_rate"], 1)),
        "reaction_p95_s": (None if raw["reaction_p95_ticks"] is None
                           else round(raw["reaction_p95_ticks"] / raw["tick_rate"], 1)),
        "wall_s": raw["wall_s"],
    }


def measure_llm_cost(*, agents: int = 20, ticks: int = 6000, baseline: str | None = BASELINE,
                     log: Callable[[str], None] = print) -> dict[str, Any]:
    out: dict[str, Any] = {"agents": agents, "ticks": ticks, "baseline_commit": baseline,
                           "prices": {name: PRICES[name].describe() for name in PRICED}}
    with tempfile.TemporaryDirectory(prefix="bench-llm-cost-") as tmp:
        folder = Path(tmp)
        log(f"llm_cost: {agents} LLM agents, {ticks} ticks, this tree")
        out["now"] = summarise(_run(ROOT, agents, ticks, folder / "now.json"))
        tree = _baseline_tree(folder, baseline) if baseline else None
        if baseline is None:
            out["before"] = {"skipped": "no baseline asked for (--quick runs this tree only)"}
        elif tree is None:
            out["before"] = {"skipped": f"commit {baseline} is not available (git)"}
        else:
            try:
                log(f"llm_cost: the same at {baseline}")
                out["before"] = summarise(_run(tree, agents, ticks, folder / "before.json"))
            finally:
                _remove_tree(tree)
    return out
