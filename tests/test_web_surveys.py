"""Surveys in the viewer (issue 33 item 4): the page's Surveys panel (``static/surveys.js``)
lists a world's surveys, starts one with the access token, shows its table fill with answers
(who answered what, from which brain and model) and downloads its CSV. In headless Chromium
against a world run by ``main.py``, as the other viewer tests; and the script is served, and
cached, like the page's other files."""

from __future__ import annotations

import asyncio
import csv
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.test_web_browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    _get,
    _serving,
    _token,
    _wait_drawn,
)
from tests.test_web_browser import pytestmark as browser_only
from tests.web_helpers import served

CHATTY = '''
from agent_world.agents import Brain, Decision

class Chatty(Brain):
    def decide(self, obs, actions):
        return Decision("wander", {})
    def interview(self, question, obs):
        return f"Chatty {obs.me.name} says: I heard '{question}'."
'''


def test_the_surveys_script_is_served_after_the_page_and_cached(tmp_path: Path) -> None:
    async def go() -> None:
        async with served(tmp_path) as s:
            async with s.http.get(s.url + "/") as page:
                html = await page.text()
            app, own = html.index('src="/static/app.js"'), html.index('src="/static/surveys.js"')
            assert app < own  # it uses what app.js exposes
            assert 'id="panel-surveys"' in html and 'data-panel="surveys"' in html
            async with s.http.get(s.url + "/static/surveys.js") as script:
                assert script.status == 200
                assert "javascript" in script.headers["Content-Type"]
                text = await script.text()
                assert "/api/surveys" in text
                modified = script.headers["Last-Modified"]
            async with s.http.get(s.url + "/static/surveys.js",
                                  headers={"If-Modified-Since": modified}) as again:
                assert again.status == 304  # the browser keeps its copy
            # Served to a reader without the token, as the page's other files are.
            async with s.bare.get(s.url + "/static/surveys.js") as bare:
                assert bare.status == 200
    asyncio.run(go())


@pytest.fixture
def survey_world(tmp_path: Path) -> Iterator[str]:
    """A paced, saving world with a user's brain that answers interviews itself."""
    brains = tmp_path / "brains"
    brains.mkdir()
    (brains / "viewer_talk.py").write_text(CHATTY, encoding="utf-8")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "world": {"size": [40, 40], "starting_agents": 12, "seed": 21, "name": "polled"},
        "web": {"port": 0, "runtime_dir": str(tmp_path / "runtime")},
        "brains": {"registered": {"chatty": "viewer_talk:Chatty"}, "path": str(brains)},
        "paths": {"logs": str(tmp_path / "logs"), "saves": str(tmp_path / "saves")},
    }), encoding="utf-8")
    with _serving(["--config", str(config), "--headless"], tmp_path,
                  wait_s=30) as (url, proc):
        yield url
    assert proc.returncode == 0


@browser_only
def test_a_survey_started_from_the_page_fills_its_table(survey_world: str,
                                                        tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    url = survey_world
    errors: list[str] = []
    prompts: list[str] = []
    token = _token(url, tmp_path / "runtime")

    def answer(dialog: object) -> None:
        prompts.append(dialog.message)  # type: ignore[attr-defined]
        dialog.accept(token)  # type: ignore[attr-defined]

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900}, accept_downloads=True)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("dialog", answer)
        page.goto(url)
        _wait_drawn(page)
        assert page.is_visible("#panel-surveys")
        page.wait_for_function("document.querySelector('#survey-detail').textContent"
                               ".includes('No surveys yet')", timeout=10_000)
        # Two agents on a user's brain, which answers for itself.
        for name in ("Chat", "Chit"):
            page.evaluate("(line) => window.agentWorld.api.command(line)",
                          f"/spawn agent {name} brain=chatty")
        page.wait_for_function("() => ['Chat', 'Chit'].every((n) => [...window.agentWorld"
                               ".store.agents.byId.values()].some((a) => a[5] === n))",
                               timeout=15_000)
        # A bad filter: one line from the page, nothing asked.
        page.fill("#survey-question", "What do you want most?")
        page.fill("#survey-filter", "mood=happy")
        page.click("#survey-start")
        page.wait_for_function("document.querySelector('#survey-note').textContent"
                               ".includes(\"unknown filter 'mood'\")", timeout=10_000)
        assert _get(url + "api/surveys")["surveys"] == []
        # Every agent: started with the token (asked for once), the table fills.
        page.fill("#survey-filter", "")
        page.click("#survey-start")
        page.wait_for_function("document.querySelector('#survey-note').textContent"
                               ".startsWith('survey s')", timeout=10_000)
        sid = page.text_content("#survey-note").split()[1].rstrip(":")  # type: ignore[union-attr]
        page.wait_for_function("document.querySelector('#survey-state')?.textContent"
                               ".startsWith('done')", timeout=20_000)
        page.locator("#survey-table").scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "surveys.png"))
        made = _get(url + f"api/surveys/{sid}")
        asked = made["agents"]
        assert asked >= 14 and made["answered"] >= asked - 1  # an agent may die meanwhile
        rows = page.evaluate("() => [...document.querySelectorAll('#survey-table tbody tr')]"
                             ".map((tr) => [...tr.cells].map((td) => td.textContent))")
        assert len(rows) == asked
        assert all(r[4] == "died before answering" for r in rows
                   if not r[4].startswith(("I am ", "Chatty ")))
        by_name = {r[0]: r for r in rows}
        for name in ("Chat", "Chit"):
            assert by_name[name][2] == "chatty" and by_name[name][3] == "brain"
            assert by_name[name][4] == f"Chatty {name} says: I heard 'What do you want most?'."
        plain = [r for r in rows if r[2] == "builtin" and r[3] == "plain"]
        assert len(plain) >= asked - 3 and all(r[4].startswith("I am ") for r in plain)
        assert page.text_content("#survey-progress") == (
            f"{made['answered']} answered, {made['failed']} not, 0 waiting of {asked}")
        assert f"surveys/{sid}.csv" in (page.text_content(".survey-files") or "")
        assert sid in page.evaluate("() => [...document.querySelectorAll('#survey-pick "
                                    "option')].map((o) => o.value)")
        # The CSV, as the server wrote it.
        with page.expect_download() as caught:
            page.click("#survey-csv")
        saved = tmp_path / "download.csv"
        caught.value.save_as(saved)
        assert caught.value.suggested_filename == f"survey-{sid}.csv"
        table = list(csv.DictReader(io.StringIO(saved.read_text(encoding="utf-8"))))
        assert len(table) == asked
        assert {r["answered_by"] for r in table} == {"plain", "brain"}
        on_disk = tmp_path / "saves" / "polled" / "surveys" / f"{sid}.csv"
        assert saved.read_text(encoding="utf-8") == on_disk.read_text(encoding="utf-8")
        # A name in the table selects the agent.
        page.click("#survey-table a.ent >> text=Chit")
        page.wait_for_function("(document.querySelector('#inspector-name')?.textContent || '')"
                               ".includes('Chit')", timeout=10_000)
        browser.close()
    assert len(prompts) == 1 and "access token" in prompts[0], prompts
    assert errors == [], f"errors in the page: {errors}"
