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

import contextlib
import itertools
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


@contextlib.contextmanager
def _serving(argv: list[str], cwd: Path, *, wait_s: float
             ) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``python main.py ARGV`` until its banner names the viewer's URL; stopped with SIGINT
    (then killed, if it will not stop) when the block ends."""
    proc = subprocess.Popen([sys.executable, str(MAIN), *argv], cwd=cwd,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        url = None
        give_up = time.monotonic() + wait_s
        while url is None:
            line = proc.stdout.readline()
            assert line or proc.poll() is None, "the world exited before serving"
            found = re.search(r"viewer:\s+(http://\S+/)", line)
            if found:
                url = found.group(1)
            assert time.monotonic() < give_up, "no viewer URL in the start-up banner"
        yield url, proc
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


@pytest.fixture
def world_url(tmp_path: Path) -> Iterator[str]:
    """A paced world on a free port, serving the viewer; stopped with SIGINT afterwards."""
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "world": {"size": [48, 48], "starting_agents": 30, "seed": 11},
        "web": {"port": 0, "runtime_dir": str(tmp_path / "runtime")},
        "paths": {"logs": str(tmp_path / "logs"), "saves": str(tmp_path / "saves")},
    }), encoding="utf-8")
    with _serving(["--config", str(config), "--headless", "--no-save"], tmp_path,
                  wait_s=30) as (url, proc):
        yield url
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


# -- issue 35: the page as a place to watch ------------------------------------------------------

VIEWPORTS = [(1400, 900), (1280, 720)]
# Panels that float over the map or sit beside it: none may cover another.
PANELS = ["#map-tools", "#inspector", "#minimap", "#map-foot", "#side", "#statusbar"]


def _boxes(page: Any) -> dict[str, dict[str, float]]:
    boxes: dict[str, dict[str, float]] = page.evaluate(
        """(ids) => {
            const out = {};
            for (const id of ids) {
                const el = document.querySelector(id);
                if (!el || el.hidden || el.offsetParent === null) continue;
                const r = el.getBoundingClientRect();
                if (r.width && r.height) out[id] = {x: r.x, y: r.y, w: r.width, h: r.height};
            }
            const map = document.querySelector('#map-area').getBoundingClientRect();
            out['#map-area'] = {x: map.x, y: map.y, w: map.width, h: map.height};
            return out;
        }""", PANELS)
    return boxes


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (a["x"] < b["x"] + b["w"] - 0.5 and b["x"] < a["x"] + a["w"] - 0.5
            and a["y"] < b["y"] + b["h"] - 0.5 and b["y"] < a["y"] + a["h"] - 0.5)


def _map_share(page: Any) -> float:
    """The share of the map canvas' sampled pixels that are not its empty background."""
    share: float = page.evaluate(
        """() => {
            const cv = document.querySelector('#map');
            const d = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
            let drawn = 0, n = 0;
            for (let y = 3; y < cv.height; y += 17) for (let x = 3; x < cv.width; x += 17) {
                const i = (y * cv.width + x) * 4;
                const off = Math.abs(d[i] - 10) + Math.abs(d[i + 1] - 12) + Math.abs(d[i + 2] - 15);
                n++; if (off > 12) drawn++;
            }
            return drawn / n;
        }""")
    return share


def _wait_drawn(page: Any) -> None:
    page.wait_for_function("document.body.dataset.mapDrawn === '1' && "
                           "Number(document.body.dataset.agentsDrawn || 0) > 0", timeout=20_000)


def test_panels_never_overlap_and_the_map_is_never_blank(world_url: str,
                                                         tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for width, height in VIEWPORTS:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(world_url)
            _wait_drawn(page)
            for stage in ("fit", "inspector", "zoomed"):
                if stage == "inspector":
                    first = _get(world_url + "api/agents?limit=1")["agents"][0]["id"]
                    page.evaluate("(id) => window.agentWorld.selectAgent(id, {centre: true})",
                                  first)
                    page.wait_for_selector("#inspector:not([hidden])")
                if stage == "zoomed":
                    page.evaluate("() => window.agentWorld.view.centreOn(10, 10, 40)")
                    page.wait_for_function("!document.querySelector('#minimap').hidden")
                page.wait_for_timeout(300)
                page.screenshot(path=str(tmp_path / f"{width}x{height}-{stage}.png"))
                boxes = _boxes(page)
                assert {"#map-tools", "#map-foot", "#side", "#map-area"} <= set(boxes), boxes
                names = [n for n in boxes if n != "#map-area"]
                for one, other in itertools.combinations(names, 2):
                    assert not _overlap(boxes[one], boxes[other]), \
                        f"{width}x{height} {stage}: {one} covers {other}: {boxes}"
                # The strip below the map (timeline, legend) never covers the map itself.
                assert not _overlap(boxes["#map-foot"], boxes["#map-area"])
                for name, box in boxes.items():
                    assert box["y"] + box["h"] <= height + 0.5, f"{name} runs off the page"
                share = _map_share(page)
                assert share > 0.25, f"{width}x{height} {stage}: the map is blank ({share:.2f})"
            page.close()
        browser.close()
    assert errors == [], f"errors in the page: {errors}"


def test_a_session_selects_follows_and_sees_speech(world_url: str, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    token = _token(world_url, tmp_path / "runtime")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("dialog", lambda dialog: dialog.accept(token))
        page.goto(world_url)
        _wait_drawn(page)
        agent = _get(world_url + "api/agents?limit=1")["agents"][0]
        # Find it by name, as a person would: it is selected, centred and followed.
        page.fill("#find-agent", agent["name"])
        page.press("#find-agent", "Enter")
        page.wait_for_function(
            "(name) => (document.querySelector('#inspector-name')?.textContent || '')"
            ".includes(name)", arg=agent["name"], timeout=10_000)
        assert page.evaluate("() => window.agentWorld.inspector.follow")
        assert page.evaluate("() => location.hash") == f"#agent={agent['id']}"
        # Make it speak: a bubble over it, and its hearers marked while it is selected.
        page.evaluate("(line) => window.agentWorld.api.command(line)",
                      f"/say {agent['id']} Hello from the test")
        page.wait_for_function(
            "(id) => window.agentWorld.speech.byId.get(id)?.text === 'Hello from the test'"
            " && Number(document.body.dataset.bubbles || 0) >= 1", arg=agent["id"],
            timeout=15_000)
        page.screenshot(path=str(tmp_path / "speech.png"))
        assert "hearers" in page.evaluate("() => Object.keys(document.body.dataset)")
        # The camera followed: the agent is at the map's focus point.
        at = page.evaluate("(id) => window.agentWorld.screenOf(id)", agent["id"])
        focus = page.evaluate("() => [window.agentWorld.view.fx(), window.agentWorld.view.h / 2]")
        assert abs(at["x"] - focus[0]) < 40 and abs(at["y"] - focus[1]) < 40, (at, focus)
        # The events panel reads in sentences and hides routine lines until asked.
        page.wait_for_function("document.querySelector('#event-list').textContent"
                               ".includes('Hello from the test')", timeout=10_000)
        said = page.evaluate("() => [...document.querySelectorAll('#event-list li.t-say .text')]"
                             ".map((e) => e.textContent)")
        assert any(line.endswith(')') and "Hello from the test" in line and "=" not in line
                   for line in said), said
        shown = page.evaluate("() => [...document.querySelectorAll('#event-list .type')]"
                              ".map((e) => e.textContent)")
        assert not {"pickup", "eat", "census", "state_hash"} & set(shown)
        # Coloured by team: two teams in two colours, agents without one in grey.
        page.evaluate("() => window.agentWorld.setFollow(false)")
        page.click("#btn-fit")
        for team in ("red", "blue"):
            page.evaluate("(line) => window.agentWorld.api.command(line)",
                          f"/spawn agent team={team} personality=cautious")
        page.wait_for_function(
            "() => new Set([...window.agentWorld.store.agents.byId.values()].map((a) => a[8]))"
            ".size >= 3", timeout=15_000)
        page.select_option("#color-by", "team")
        colours = page.evaluate(
            "() => Object.fromEntries([...window.agentWorld.store.agents.byId.values()]"
            ".map((a) => [a[8] || 'none', window.agentWorld.colourOf(a[0]).join(',')]))")
        assert len({colours["red"], colours["blue"], colours["none"]}) == 3, colours
        assert "red" in page.inner_text("#legend") and "blue" in page.inner_text("#legend")
        browser.close()
    assert errors == [], f"errors in the page: {errors}"


@pytest.fixture
def replay_url(tmp_path: Path) -> Iterator[str]:
    """A world recorded as 'rec35', then served with replay --serve under a config whose
    world is 'default' (the name the header used to show)."""
    saves = tmp_path / "saves"
    recording = tmp_path / "record.yaml"
    recording.write_text(yaml.safe_dump({
        "world": {"size": [32, 32], "starting_agents": 12, "seed": 5, "name": "rec35"},
        "web": {"enabled": False},
        "persistence": {"seek_interval_ticks": 50, "seek_target_ms": 0},
        "paths": {"logs": str(tmp_path / "logs"), "saves": str(saves)}}), encoding="utf-8")
    subprocess.run([sys.executable, str(MAIN), "--config", str(recording), "--headless",
                    "--ticks", "300"], cwd=tmp_path, stdin=subprocess.DEVNULL, check=True,
                   capture_output=True, timeout=120)
    serving = tmp_path / "serve.yaml"
    serving.write_text(yaml.safe_dump({
        "web": {"port": 0, "runtime_dir": str(tmp_path / "runtime")},
        "paths": {"logs": str(tmp_path / "logs"), "saves": str(saves)}}), encoding="utf-8")
    with _serving(["replay", str(saves / "rec35"), "--serve", "--config", str(serving),
                   "--headless"], tmp_path, wait_s=60) as (url, _proc):
        yield url


def test_a_replay_names_its_recording_refuses_changes_and_seeks(replay_url: str,
                                                               tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    token = _token(replay_url, tmp_path / "runtime")
    assert _get(replay_url + "api/state")["world"] == "rec35"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("dialog", lambda dialog: dialog.accept(token))
        page.goto(replay_url)
        _wait_drawn(page)
        page.wait_for_function("document.querySelector('#status-world').textContent"
                               ".includes('replay of rec35')", timeout=10_000)
        assert page.title().startswith("rec35")
        agent = _get(replay_url + "api/agents?limit=1")["agents"][0]
        page.evaluate("(id) => window.agentWorld.selectAgent(id, {centre: true})", agent["id"])
        page.wait_for_selector("#inspector:not([hidden])")
        for button in ("#btn-spawn", "#btn-kill", "#btn-give", "#btn-ability"):
            assert page.is_disabled(button), f"{button} is enabled in a replay"
        assert page.is_visible("#replay-bar") and page.is_visible("#replay-note")
        boxes = _boxes(page)
        assert not _overlap(boxes["#map-foot"], boxes["#map-area"])
        assert not _overlap(boxes["#map-foot"], boxes["#inspector"])
        # Seek with the timeline bar's slider; the page follows to that tick.
        page.evaluate("""() => {
            const sl = document.querySelector('#replay-slider');
            sl.value = '200'; sl.dispatchEvent(new Event('change'));
        }""")
        page.wait_for_function("document.querySelector('#status-tick').textContent.trim()"
                               " === '200'", timeout=30_000)
        _wait_drawn(page)
        assert _map_share(page) > 0.25
        page.screenshot(path=str(tmp_path / "replay.png"))
        browser.close()
    assert errors == [], f"errors in the page: {errors}"


def _free_tiles_near(url: str, x: int, y: int) -> list[tuple[int, int]]:
    """Grass tiles 3 to 4 steps from (x, y) with no object on them, nearest first."""
    import base64
    import zlib

    terrain = _get(url + "api/map")
    tiles = zlib.decompress(base64.b64decode(terrain["tiles"]))
    grass = {int(k) for k, v in terrain["legend"].items() if v == "grass"}
    width, height = terrain["width"], terrain["height"]
    objects = {(o[1], o[2]) for o in _get(url + "api/entities?kind=objects")["objects"]}
    found = []
    for ty in range(max(0, y - 4), min(height, y + 5)):
        for tx in range(max(0, x - 4), min(width, x + 5)):
            if (max(abs(tx - x), abs(ty - y)) >= 3 and tiles[ty * width + tx] in grass
                    and (tx, ty) not in objects):
                found.append((tx, ty))
    return found


def test_a_person_chats_plays_an_agent_walks_it_speaks_and_releases_it(
        world_url: str, tmp_path: Path) -> None:
    """Issue 33 item 5 in the browser: select an agent, talk to it (the line shows in the
    chat), take control (the agent is marked played on the map and in the API), click a
    tile and see it walk there, speak as it (its bubble), and give it back."""
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    token = _token(world_url, tmp_path / "runtime")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("dialog", lambda dialog: dialog.accept(token))
        page.goto(world_url)
        _wait_drawn(page)
        agent = _get(world_url + "api/agents?limit=1")["agents"][0]
        aid = agent["id"]
        page.evaluate("(id) => window.agentWorld.selectAgent(id, {centre: true})", aid)
        page.wait_for_function(
            "(name) => (document.querySelector('#inspector-name')?.textContent || '')"
            ".includes(name)", arg=agent["name"], timeout=10_000)
        # Chat: the person's words are heard in the world and shown in the chat box.
        page.fill("#player-name", "Tester")
        page.fill("#chat-text", "hello there")
        page.click("#chat-send")
        page.wait_for_function("document.querySelector('#chat-log').textContent"
                               ".includes('Tester: hello there')", timeout=15_000)
        # Play: the agent is ours, marked on the map and in the API.
        page.click("#btn-play")
        page.wait_for_function("(id) => window.agentWorld.play.agent === id", arg=aid,
                               timeout=10_000)
        assert page.is_visible("#play-bar")
        page.wait_for_function(
            "(id) => (window.agentWorld.store.agents.get(id)?.[4] & 4) === 4", arg=aid,
            timeout=15_000)
        assert _get(world_url + f"api/agents/{aid}")["played_by"]["player"] == "Tester"
        assert page.inner_text("#btn-play") == "Release"
        page.screenshot(path=str(tmp_path / "played.png"))
        # Click a free tile near it: it walks there (zoomed in, so the click hits a tile).
        here = _get(world_url + f"api/agents/{aid}")
        goal = None
        for tx, ty in _free_tiles_near(world_url, here["x"], here["y"]):
            crowd = page.evaluate(
                "([x, y]) => [...window.agentWorld.store.agents.byId.values()]"
                ".filter((a) => Math.abs(a[1] - x) <= 1 && Math.abs(a[2] - y) <= 1).length",
                [tx, ty])
            if crowd:
                continue
            page.evaluate("([x, y]) => window.agentWorld.view.centreOn(x, y, 24)", [tx, ty])
            at = page.evaluate("([x, y]) => window.agentWorld.view.toScreen(x + 0.5, y + 0.5)",
                               [tx, ty])
            box = page.locator("#map").bounding_box()
            assert box is not None
            page.mouse.click(box["x"] + at[0], box["y"] + at[1])
            page.wait_for_function("() => /move_to/.test(document.querySelector("
                                   "'#play-result').textContent)", timeout=5_000)
            goal = (tx, ty)
            break
        assert goal is not None, "no free tile near the agent"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            now = _get(world_url + f"api/agents/{aid}")
            if (now["x"], now["y"]) == goal:
                break
            time.sleep(0.3)
        assert (now["x"], now["y"]) == goal, (now["x"], now["y"], goal, now["last_result"])
        page.wait_for_function(
            "([id, x, y]) => { const a = window.agentWorld.store.agents.get(id);"
            " return a && a[1] === x && a[2] === y; }", arg=[aid, *goal], timeout=10_000)
        # Speak as it: its own speech, a bubble over it and a line in the chat.
        page.evaluate("(id) => window.agentWorld.selectAgent(id)", aid)
        page.fill("#chat-text", "I walk where I am told")
        page.click("#chat-send")
        page.wait_for_function(
            "(id) => window.agentWorld.speech.byId.get(id)?.text === 'I walk where I am told'",
            arg=aid, timeout=15_000)
        page.wait_for_function("document.querySelector('#chat-log').textContent"
                               ".includes('I walk where I am told')", timeout=10_000)
        page.screenshot(path=str(tmp_path / "walked.png"))
        # Release: its brain has it again.
        page.click("#btn-play")
        page.wait_for_function("() => window.agentWorld.play.agent === null", timeout=10_000)
        deadline = time.monotonic() + 15
        while _get(world_url + f"api/agents/{aid}")["played_by"] is not None:
            assert time.monotonic() < deadline, "the agent was not given back"
            time.sleep(0.2)
        page.wait_for_function(
            "(id) => (window.agentWorld.store.agents.get(id)?.[4] & 4) === 0", arg=aid,
            timeout=15_000)
        browser.close()
    assert errors == [], f"errors in the page: {errors}"
