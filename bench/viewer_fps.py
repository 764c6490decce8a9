"""The viewer's frame rate in headless Chromium (issue 35): a world of N agents served by
``main.py``, the page at 1400x900, frames counted by the page itself (``perf.measure``:
it draws on every animation frame for a few seconds and reports frames per second).

    .venv/bin/python bench/viewer_fps.py --agents 1000 10000

Each size is measured at fit zoom (the whole world on screen) and close in (40 px per
tile, names, bubbles and health bars), with agents moving (the world runs at 10 Hz).
Needs Debian's chromium and playwright (as tests/test_web_browser.py)."""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

MAIN = Path(__file__).resolve().parents[1] / "main.py"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


def serve(agents: int, root: Path) -> tuple[subprocess.Popen[str], str]:
    side = max(48, int(math.sqrt(agents * 16)))  # about as crowded as the default world
    cfg = root / "config.yaml"
    cfg.write_text(yaml.safe_dump({
        "world": {"size": [side, side], "starting_agents": agents, "seed": 7},
        "web": {"port": 0, "runtime_dir": str(root / "runtime")},
        "paths": {"logs": str(root / "logs"), "saves": str(root / "saves")}}), "utf-8")
    proc = subprocess.Popen([sys.executable, str(MAIN), "--config", str(cfg), "--headless",
                             "--no-save"], cwd=root, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    give_up = time.monotonic() + 180
    while time.monotonic() < give_up:
        line = proc.stdout.readline()
        found = re.search(r"viewer:\s+(http://\S+/)", line)
        if found:
            return proc, found.group(1)
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise SystemExit("the world did not serve")


def measure(url: str, seconds: float) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright  # noqa: PLC0415 (optional: bench only)

    out: dict[str, Any] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(url)
        page.wait_for_function("document.body.dataset.mapDrawn === '1' && "
                               "Number(document.body.dataset.agentsDrawn || 0) > 0",
                               timeout=120_000)
        page.wait_for_timeout(2000)
        for name, setup in (("fit", "() => window.agentWorld.view.fit()"),
                            ("close", "() => { const a = [...window.agentWorld.store.agents"
                                      ".byId.values()][0]; window.agentWorld.view"
                                      ".centreOn(a[1], a[2], 40); }")):
            page.evaluate(setup)
            page.wait_for_timeout(1500)
            out[name] = page.evaluate(f"() => window.agentWorld.perf.measure({seconds * 1000})")
        browser.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, nargs="+", default=[1000])
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    for n in args.agents:
        with tempfile.TemporaryDirectory(prefix="viewer-fps-") as tmp:
            proc, url = serve(n, Path(tmp))
            try:
                figures = measure(url, args.seconds)
            finally:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.communicate(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.communicate()
        print(json.dumps({"agents": n, **{k: {m: round(v, 1) for m, v in f.items()}
                                          for k, f in figures.items()}}), flush=True)


if __name__ == "__main__":
    main()
