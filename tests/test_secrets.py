"""An endpoint that echoes the API key back cannot put it into a save folder or a log.

The fake server answers with the caller's key in the decision's thought, in a spoken line
and in the response's model field, and writes it into the ability source it hands the angel.
Every file the world writes (compressed ones decompressed) is then searched for the key and
for the prefix servers echo when they truncate it.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_world.app import Session
from agent_world.llm.redact import MASK, Redactor
from agent_world.persistence import open_world
from agent_world.sandbox import Sandbox
from tests.llm_helpers import KEY, KEY_ENV, llm_config, run_until
from tests.llm_server import FakeLLMServer, fake_llm_server

REPO = Path(__file__).resolve().parents[1]
LEAKY_ABILITY = (REPO / "agent_world" / "abilities" / "heal.py").read_text(
    encoding="utf-8").replace('NAME = "heal"', 'NAME = "leaky_light"').replace(
    'DESCRIPTION = "', 'DESCRIPTION = "Key {KEY}. ')


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv(KEY_ENV, KEY)
    with fake_llm_server() as s:
        yield s


def _every_text(*roots: Path) -> dict[Path, str]:
    """Every file below ``roots``, gzip files decompressed, as text."""
    out = {}
    for root in roots:
        for path in root.rglob("*"):
            if not path.is_file():
                continue
            data = path.read_bytes()
            if path.name.endswith(".gz"):
                data = gzip.decompress(data)
            out[path] = data.decode("utf-8", "replace")
    return out


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_key_echoed_by_the_endpoint_reaches_no_file(tmp_path: Path, server: FakeLLMServer,
                                                      provider: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    server.mode = "echo_key"
    server.ability_text = f"```python\n{LEAKY_ABILITY}```"
    config = llm_config(tmp_path, server, provider=provider, agents=3)
    with Sandbox(config) as sandbox:
        opened = open_world(config, setup=sandbox.install)
        session = Session(config, opened.world, folder=opened.folder, sandbox=sandbox)
        try:
            llm = session.llm
            assert llm is not None
            session.request_ability("a light that carries a secret")
            run_until(session, 3000, lambda: llm.metrics.applied >= 3
                      and "leaky_light" in session.world.abilities.generated)
            assert llm.metrics.applied >= 3
            spec = session.world.abilities.generated["leaky_light"]
        finally:
            session.close()
    assert f"Key {MASK}." in spec.source  # the ability was kept, its secret was not
    files = _every_text(tmp_path / "saves", tmp_path / "logs")
    leaks = [str(p) for p, text in files.items() if KEY in text or KEY[:12] in text]
    assert not leaks, f"the key reached {leaks}"
    said = capsys.readouterr()
    assert KEY[:12] not in said.out + said.err  # nor the terminal
    events = "".join(t for p, t in files.items() if "events" in p.parts)
    assert f"psst: {MASK}" in events  # the decision still applied, without the key
    assert any(p.parent.name == "abilities" for p in files)


def test_scrub_redacts_every_string_and_key_in_json_data() -> None:
    redact = Redactor([KEY])
    data = {"thought": f"x {KEY} y", KEY: [1, {"deep": KEY[:12] + "..."}], "n": 3,
            "ok": None}
    clean = redact.scrub(data)
    assert clean == {"thought": f"x {MASK} y", MASK: [1, {"deep": f"{MASK}..."}], "n": 3,
                     "ok": None}
    assert Redactor().scrub(data) is data  # nothing to hide: untouched, no copy
