"""Every way of stopping a world ends the same: the final snapshot, a shutdown marker, exit 0.

Run as the real program against a real local LLM endpoint, with the angel writing through
it (the configuration that used to crash in ``Session.close``), both after the angel has
answered and while it is still waiting for the model.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_server import FakeLLMServer, fake_llm_server
from test_cli import MAIN, base_env, write_config

from agent_world.config import Config
from agent_world.llm.gates import Gates
from agent_world.llm.providers import provider_factory
from agent_world.llm.redact import Redactor
from agent_world.llm.textmodel import ProviderTextModel
from agent_world.types import MonotonicClock, ProviderError

REPO = Path(__file__).resolve().parents[1]
ABILITY = (REPO / "agent_world" / "abilities" / "heal.py").read_text(encoding="utf-8")
SOOTHE = ABILITY.replace('NAME = "heal"', 'NAME = "soothe"')


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with fake_llm_server() as s:
        s.text = f"```python\n{SOOTHE}```"
        yield s


def _start(tmp_path: Path, server: FakeLLMServer) -> subprocess.Popen[str]:
    config = write_config(tmp_path, {
        "log": {"echo": False},
        "llm": {"provider": "openai", "base_url": server.base_url, "model": "test-model",
                "api_key_env": "", "agents": 0, "request_timeout_s": 60},
    })
    return subprocess.Popen(
        [sys.executable, str(MAIN), "--config", str(config), "--headless"],
        cwd=tmp_path, env=base_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)


def _wait_for_log(tmp_path: Path, text: str, proc: subprocess.Popen[str]) -> None:
    log = tmp_path / "logs" / "world.log"
    give_up = time.monotonic() + 30
    while not (log.exists() and text in log.read_text(encoding="utf-8")):
        assert proc.poll() is None, f"exited early: {proc.communicate()}"
        assert time.monotonic() < give_up, f"world.log never said {text!r}"
        time.sleep(0.05)


def _stop(proc: subprocess.Popen[str], how: str) -> tuple[str, str]:
    assert proc.stdin is not None
    if how == "quit":
        proc.stdin.write("/quit\n")
        proc.stdin.flush()
    else:
        proc.send_signal(getattr(signal, how))
    try:
        return proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _event_lines(save: Path) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for path in sorted((save / "events").iterdir()):
        if path.name.endswith(".jsonl"):
            data = path.read_bytes()
        elif path.name.endswith(".jsonl.gz"):
            data = gzip.decompress(path.read_bytes())
        else:
            continue
        lines.extend(json.loads(line) for line in data.splitlines())
    return lines


def _assert_clean_stop(tmp_path: Path, proc: subprocess.Popen[str], err: str) -> None:
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "RuntimeError" not in err, err
    save = tmp_path / "saves" / "default"
    lines = _event_lines(save)
    last = lines[-1]
    assert (last["kind"], last["type"]) == ("marker", "shutdown"), last
    final_tick = last["tick"]
    snapshot = json.loads((save / "world_state.json").read_bytes())
    assert snapshot["tick"] == final_tick
    assert json.loads((save / "meta.json").read_bytes())["last_snapshot_tick"] == final_tick
    log = (tmp_path / "logs" / "world.log").read_text(encoding="utf-8")
    assert log.rstrip().endswith(f"world 'default' stopped at tick {final_tick}")


@pytest.mark.parametrize("how", ["quit", "SIGINT", "SIGTERM"])
def test_every_exit_path_saves_and_exits_zero_after_the_angel_used_the_llm(
        tmp_path: Path, server: FakeLLMServer, how: str) -> None:
    proc = _start(tmp_path, server)
    assert proc.stdin is not None
    proc.stdin.write('/ability "a soothing light"\n')
    proc.stdin.flush()
    _wait_for_log(tmp_path, "NEW      ability soothe", proc)
    assert server.count("/chat/completions") >= 1  # the angel really used the model
    _out, err = _stop(proc, how)
    _assert_clean_stop(tmp_path, proc, err)


@pytest.mark.parametrize("how", ["quit", "SIGTERM"])
def test_a_stop_while_the_angel_waits_on_a_hung_model_still_saves(
        tmp_path: Path, server: FakeLLMServer, how: str) -> None:
    server.mode = "hang"  # every call waits until the server is stopped
    proc = _start(tmp_path, server)
    assert proc.stdin is not None
    proc.stdin.write('/ability "a soothing light"\n')
    proc.stdin.flush()
    give_up = time.monotonic() + 30
    while server.count("/chat/completions") == 0:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < give_up, "the angel never called the model"
        time.sleep(0.05)
    _out, err = _stop(proc, how)
    _assert_clean_stop(tmp_path, proc, err)


def test_the_angels_model_closes_from_any_thread_even_beside_a_running_loop(
        server: FakeLLMServer) -> None:
    """The root cause of an old crash: the angel's model was closed on the main thread,
    where the world's event loop runs, while the model's loop belonged to the angel's
    thread. Its calls now run on its transport's own loop thread, so it may be closed from
    anywhere, the main thread's running loop included, and a call after that fails cleanly."""
    cfg = Config().replace(llm={"provider": "openai", "model": "m", "api_key_env": "",
                                "base_url": server.base_url}).llm
    redactor = Redactor()
    model = ProviderTextModel.alone(cfg, provider_factory(cfg, redactor),
                                    gates=Gates.from_config(cfg, clock=MonotonicClock(),
                                                            redact=redactor))
    answers: list[str] = []
    angel = threading.Thread(target=lambda: answers.append(model.complete("write one")))
    angel.start()
    angel.join(30)
    assert answers and "soothe" in answers[0]

    async def world_loop() -> None:  # as the main thread does, inside its running loop
        model.close()

    asyncio.run(world_loop())
    with pytest.raises(ProviderError, match="transport is closed"):
        model.complete("write another")
    assert not model.transport.running


def test_a_stop_while_llm_workers_wait_on_a_hung_model_still_saves(
        tmp_path: Path, server: FakeLLMServer) -> None:
    server.mode = "hang"
    config = write_config(tmp_path, {
        "log": {"echo": False},
        "llm": {"provider": "openai", "base_url": server.base_url, "model": "test-model",
                "api_key_env": "", "agents": 4, "request_timeout_s": 60},
    })
    proc = subprocess.Popen(
        [sys.executable, str(MAIN), "--config", str(config), "--headless"],
        cwd=tmp_path, env=base_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    give_up = time.monotonic() + 30
    while server.count("/chat/completions") < 4:  # every worker is stuck in a call
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < give_up, "the LLM agents never asked"
        time.sleep(0.05)
    _out, err = _stop(proc, "SIGTERM")
    _assert_clean_stop(tmp_path, proc, err)
