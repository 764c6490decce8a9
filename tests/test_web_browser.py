"""The viewer in a real browser: headless Chromium (Debian's ``chromium``) driven by
Playwright against a world run by ``main.py``.

It waits until agents are on the canvas (their colour at their place, read from the canvas'
pixels), clicks one and finds its name in the inspector, pauses with the button and sees the
tick stop, steps 5 and sees tick + 5, and keeps screenshots. Writes need the world's access
token: the page asks for it once (a prompt, answered with the token from the file the world
keeps it in, as the banner says), and no request the page makes carries it in its URL.
Skipped where Chromium or Playwright is missing, unless ``AW_REQUIRE_BROWSER`` is set
(``.ci/run`` installs both and sets it, so CI never skips it quietly).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

MAIN = Path(__file__).resolve().parents[1] / "main.py"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def _browser_missing() -> str | None:
    if CHROMIUM is None:
        return "chromium is not installed (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install playwright)"
    return None


_missing = _browser_missing()
if _missing and os.environ.get("AW_REQUIRE_BROWSER"):
    raise RuntimeError(f"AW_REQUIRE_BROWSER is set but {_missing}")
pytestmark = pytest.mark.skipif(_missing is not None, reason=_missing or "")


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.load(resp)


def _token(url: str, runtime: Path) -> str:
    """The token the world made, from the file the banner names (readable by its owner)."""
    port = url.rsplit(":", 1)[1].strip("/")
    kept = json.loads((runtime / f"web-{port}.json").read_text(encoding="utf-8"))
    assert kept["url"] == url
    return str(kept["token"])


@pytest.fixture
def world_url(tmp_path: Path) -> Iterator[str]:
    """A paced world on a free port, serving the viewer; stopped with SIGINT afterwards."""
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "world": {"size": [48, 48], "starting_agents": 30, "seed": 11},
        "web": {"port": 0, "runtime_dir": str(tmp_path / "runtime")},
        "paths": {"logs": str(tmp_path / "logs"), "saves": str(tmp_path / "saves")},
    }), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(MAIN), "--config", str(config), "--headless",
                             "--no-save"], cwd=tmp_path, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        url = None
        give_up = time.monotonic() + 30
        while url is None:
            line = proc.stdout.readline()
            assert line or proc.poll() is None, "the world exited before serving"
            found = re.search(r"viewer:\s+(http://\S+/)", line)
            if found:
                url = found.group(1)
            assert time.monotonic() < give_up, "no viewer URL in the start-up banner"
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0


def test_the_viewer_draws_inspects_pauses_and_steps(world_url: str, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    shots = tmp_path / "screenshots"
    shots.mkdir()
    errors: list[str] = []
    token = _token(world_url, tmp_path / "runtime")
    asked: list[str] = []
    urls: list[str] = []

    def answer(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.accept(token)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("dialog", answer)
        page.on("request", lambda request: urls.append(request.url))
        page.on("websocket", lambda ws: urls.append(ws.url))
        page.goto(world_url)
        page.wait_for_function("Number(document.body.dataset.agentsDrawn || 0) > 0",
                               timeout=20_000)
        page.screenshot(path=str(shots / "1-drawn.png"))

        # Pause through the page first, so that agents stand still for the pixel checks.
        page.click("#btn-pause")
        page.wait_for_function("document.querySelector('#status-state').textContent"
                               ".toLowerCase().includes('paused')", timeout=10_000)
        paused_at = _get(world_url + "api/state")["tick"]
        page.wait_for_function(f"document.querySelector('#status-tick').textContent.trim()"
                               f" === '{paused_at}'", timeout=10_000)
        time.sleep(1.0)
        assert _get(world_url + "api/state")["tick"] == paused_at, "the tick did not stop"
        assert page.text_content("#status-tick").strip() == str(paused_at)  # type: ignore[union-attr]

        # Agents are on the canvas: at an agent's place the canvas has its colour.
        agents = _get(world_url + "api/agents?limit=200")["agents"]
        painted = 0
        for agent in agents:
            probe = page.evaluate(
                """(id) => {
                    const aw = window.agentWorld;
                    const at = aw.screenOf(id);
                    if (!at) return null;
                    const canvas = document.querySelector('#map');
                    const ctx = canvas.getContext('2d');
                    const scale = canvas.width / canvas.clientWidth;
                    const px = ctx.getImageData(Math.round(at.x * scale),
                                                Math.round(at.y * scale), 1, 1).data;
                    return {x: at.x, y: at.y, pixel: Array.from(px.slice(0, 3)),
                            colour: aw.colourOf(id)};
                }""", agent["id"])
            if probe is None or probe["colour"] is None:
                continue
            if all(abs(a - b) <= 40 for a, b in zip(probe["pixel"], probe["colour"],
                                                     strict=True)):
                painted += 1
        assert painted >= 5, f"only {painted} agents found painted on the canvas"

        # Click an agent clear of the panels floating over the map: its name shows in the
        # inspector.
        box = page.locator("#map").bounding_box()
        assert box is not None
        target, at = None, None
        for agent in agents:
            at = page.evaluate("(id) => window.agentWorld.screenOf(id)", agent["id"])
            if at and 360 < at["x"] < box["width"] - 220 and 80 < at["y"] < box["height"] - 40:
                target = agent
                break
        assert target is not None and at is not None, "no agent in the open middle of the map"
        page.mouse.click(box["x"] + at["x"], box["y"] + at["y"])
        page.wait_for_function(
            "(name) => (document.querySelector('#inspector-name')?.textContent || '')"
            ".includes(name)", arg=target["name"], timeout=10_000)
        page.screenshot(path=str(shots / "2-inspector.png"))

        # Step 5 with the controls: the world and the status bar are 5 ticks on.
        page.fill("#step-n", "5")
        page.click("#btn-step")
        page.wait_for_function(f"document.querySelector('#status-tick').textContent.trim()"
                               f" === '{paused_at + 5}'", timeout=10_000)
        assert _get(world_url + "api/state")["tick"] == paused_at + 5
        assert "stepped 5" in (page.text_content("#command-log") or "")
        page.screenshot(path=str(shots / "3-stepped.png"))
        browser.close()
    assert errors == [], f"errors in the page: {errors}"
    # One prompt for the token (the pause, the first write); then the tab keeps it.
    assert len(asked) == 1 and "access token" in asked[0], asked
    assert urls and not [u for u in urls if token in u], "the token went into a URL"
    assert len(list(shots.glob("*.png"))) == 3
