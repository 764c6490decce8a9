"""Running worlds whose LLM agents talk to the fake server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from agent_world.app import Session
from agent_world.cli import main
from agent_world.config import Config
from agent_world.contract.brains import Brain
from agent_world.persistence import open_world
from agent_world.types import Clock
from tests.llm_server import FakeLLMServer
from tests.persistence_helpers import records, saving_config

KEY_ENV = "AW_TEST_LLM_KEY"
KEY = "sk-or-v1-TESTSECRET-0123456789abcdef0123456789"


def llm_config(tmp: Path, server: FakeLLMServer, *, provider: str = "openai",
               name: str = "w", **llm: Any) -> Config:
    settings: dict[str, Any] = {
        "provider": provider, "base_url": server.base_url, "model": "test-model",
        "api_key_env": KEY_ENV, "agents": 4, "workers": 2, "max_concurrent": 2,
        "request_timeout_s": 3.0, "min_gap_ticks": 5, "think_interval_ticks": 40,
        "breaker_failures": 3, "breaker_cooldown_s": 30.0,
    }
    settings.update(llm)
    return saving_config(tmp, name).replace(llm=settings)


def open_session(config: Config, *, llm_clock: Clock | None = None,
                 clock: Clock | None = None,
                 brains: Mapping[str, type[Brain]] | None = None) -> Session:
    opened = open_world(config)
    return Session(config, opened.world, folder=opened.folder, resumed=opened.resumed,
                   llm_clock=llm_clock, clock=clock, brains=brains)


def run_until(session: Session, ticks: int, until: Callable[[], bool] | None = None,
              wall_s: float = 20.0, pause_s: float = 0.002) -> int:
    """Tick flat out up to ``ticks`` times, letting worker threads answer between ticks;
    stop early once ``until()`` holds. Returns the ticks run."""
    began = time.monotonic()

    async def drive() -> int:
        for n in range(ticks):
            await session.loop.run(max_ticks=1, paced=False)
            if until is not None and until():
                return n + 1
            if any(llm.in_flight or llm.queue.depth
                   for llm in (session.llm, *session.llm_models.values()) if llm is not None):
                await asyncio.sleep(pause_s)  # a real round trip takes real time
            if time.monotonic() - began > wall_s:
                return n + 1
        return ticks

    return asyncio.run(drive())


def wait_for(condition: Callable[[], bool], wall_s: float = 10.0) -> bool:
    began = time.monotonic()
    while not condition():
        if time.monotonic() - began > wall_s:
            return False
        time.sleep(0.005)
    return True


def llm_inputs(folder: Path) -> list[dict[str, Any]]:
    return [r for r in records(folder)
            if r.get("kind") == "input" and r.get("type") == "plan" and r.get("source") == "llm"]


def start_with_llm(tmp_path: Path, llm: Mapping[str, Any]) -> int:
    """``python main.py --headless --ticks 1`` with an OpenAI-compatible ``llm`` section
    (``llm`` on top), its saves and logs under ``tmp_path``: the exit status."""
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump({
        "llm": {"provider": "openai", "model": "m", "api_key_env": "", **llm},
        "paths": {"saves": str(tmp_path / "saves"), "logs": str(tmp_path / "logs")}}),
        encoding="utf-8")
    return main(["--config", str(config_file), "--headless", "--ticks", "1"])
