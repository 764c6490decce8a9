"""The RL environment's speed (``python -m bench --only rl``): env steps per second on one
scenario, every subject given a random action among those its mask allows, beside the same
scenario played as an eval episode (built-in brains, no env) for the world's own cost.

The env does per step what a learner needs: the plans in, ``ticks_per_step`` ticks (each
with the stage's wait for decisions), then per agent an observation, its action mask and
its score. The difference between the two worlds' ticks per second is that work. Needs the
``rl`` extra; without it the section says it skipped.
"""

from __future__ import annotations

import importlib.util
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_world.eval.episode import run_episode
from agent_world.eval.scenario import Scenario, load_scenario, with_ticks

__all__ = ["measure_rl", "rl_available"]

SCENARIO = "foraging"  # 6 subjects among 10 built-in agents, hazards, food about
SEED = 7
TICKS_PER_STEP = 10


def rl_available() -> bool:
    return all(importlib.util.find_spec(name) is not None
               for name in ("pettingzoo", "gymnasium"))


def measure_rl(*, quick: bool, log: Callable[[str], None]) -> dict[str, Any]:
    """Env steps per second over one episode (300 ticks quick, 3,000 full), and the same
    episode's ticks per second without the env: the median of interleaved runs (1 quick,
    3 full), so that a load that comes and goes hits both alike."""
    if not rl_available():
        log("rl section skipped: pettingzoo and gymnasium are not installed "
            "(pip install -e '.[rl]')")
        return {"skipped": "the rl extra is not installed (pip install -e '.[rl]')"}
    ticks, repeats = (300, 1) if quick else (3000, 3)
    scenario = with_ticks(load_scenario(SCENARIO), ticks)
    runs, plains = [], []
    with tempfile.TemporaryDirectory(prefix="bench-rl-") as tmp:
        for i in range(repeats):
            runs.append(_env_run(scenario, Path(tmp) / f"env{i}"))
            episode = run_episode(scenario, "builtin", SEED, Path(tmp) / f"eval{i}")
            plains.append(episode.ticks / episode.seconds)
    env_figures = sorted(runs, key=lambda r: r["steps_per_s"])[len(runs) // 2]
    plain = {"ticks": ticks, "ticks_per_s": round(statistics.median(plains), 1)}
    log(f"  rl: {SCENARIO}, {env_figures['agents']} agents, {env_figures['steps']} steps of "
        f"{TICKS_PER_STEP} ticks: {env_figures['steps_per_s']} steps/s "
        f"({env_figures['agent_steps_per_s']} agent-steps/s, {env_figures['ticks_per_s']} "
        f"ticks/s); the episode without the env: {plain['ticks_per_s']} ticks/s")
    return {"scenario": SCENARIO, "seed": SEED, "ticks_per_step": TICKS_PER_STEP,
            "repeats": repeats, "env": env_figures, "episode": plain}


def _env_run(scenario: Scenario, out: Path) -> dict[str, Any]:
    """One episode through the env, every agent on random actions its mask allows."""
    from agent_world import rl  # noqa: PLC0415 - optional (the rl extra)

    env = rl.parallel_env(scenario, ticks_per_step=TICKS_PER_STEP, out=out)
    try:
        began = time.perf_counter()
        observations, _infos = env.reset(seed=SEED)
        reset_s = time.perf_counter() - began
        agents = len(env.agents)
        for i, agent in enumerate(env.agents):
            env.action_space(agent).seed(SEED + i)
        steps = agent_steps = 0
        stepping = 0.0
        while env.agents:
            actions = {a: env.action_space(a).sample(mask=observations[a]["action_mask"])
                       for a in env.agents}
            began = time.perf_counter()
            observations, *_ = env.step(actions)
            stepping += time.perf_counter() - began
            steps += 1
            agent_steps += len(actions)
    finally:
        env.close()
    return {"agents": agents, "steps": steps, "ticks": scenario.ticks,
            "reset_s": round(reset_s, 3), "seconds": round(stepping, 3),
            "steps_per_s": round(steps / stepping, 1),
            "agent_steps_per_s": round(agent_steps / stepping, 1),
            "ticks_per_s": round(scenario.ticks / stepping, 1)}
