"""The telemetry API over a real aiohttp server on loopback: every endpoint, its bad
parameters, and the guards on writes (token, read-only, origin, body size, path traversal)."""

from __future__ import annotations

import asyncio
import base64
import zlib
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from agent_world.config import ConfigError
from agent_world.persistence import SaveFolder
from agent_world.persistence.replay import replay
from agent_world.persistence.snapshots import load_first_snapshot
from agent_world.web import WebError, WebServer, check_web
from tests.web_helpers import Served, served, web_config


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_state_map_and_entities_describe_the_world(tmp_path: Path) -> None:
    async def go() -> None:
        async with served(tmp_path) as s:
            await s.step(3)
            state = await s.get("/api/state")
            assert state["tick"] == s.world.tick == 3
            assert state["paused"] is True and state["running"] is False
            assert state["agents_alive"] == len(s.world.agents())
            terrain = await s.get("/api/map")
            tiles = zlib.decompress(base64.b64decode(terrain["tiles"]))
            assert (terrain["width"], terrain["height"]) == (32, 32)
            assert tiles == bytes(s.world.terrain.tiles)
            everything = await s.get("/api/entities")
            ids = sorted(rec[0] for rec in everything["agents"])
            assert ids == [eid for eid, _row in s.world.agents()]
            first = everything["agents"][0]
            pos = s.world.agent_row(first[0])[1]  # type: ignore[index]
            assert (first[1], first[2]) == (pos.x, pos.y)
            box = await s.get(f"/api/entities?kind=agents&bbox={pos.x},{pos.y},{pos.x},"
                              f"{pos.y}")
            assert first[0] in [rec[0] for rec in box["agents"]]
            assert all((r[1], r[2]) == (pos.x, pos.y) for r in box["agents"])
            assert set(box) >= {"agents", "fields"} and "items" not in box
            one = await s.get("/api/entities?kind=items&limit=1")
            assert len(one["items"]) <= 1
    run(go())


@pytest.mark.parametrize(("query", "named"), [
    ("/api/entities?kind=dragons", "kind"),
    ("/api/entities?bbox=1,2,3", "bbox"),
    ("/api/entities?bbox=5,5,1,1", "bbox"),
    ("/api/entities?limit=0", "limit"),
    ("/api/entities?limit=ten", "limit"),
    ("/api/agents?sort=height", "sort"),
    ("/api/agents?personality=grumpy", "personality"),
    ("/api/agents/abc", "id"),
    ("/api/events?since_tick=-5", "since_tick"),
    ("/api/events?limit=999999", "limit"),
    ("/api/events?kind=gossip", "kind"),
    ("/api/metrics?series=nonsense", "series"),
    ("/api/abilities/Bad..Name", "name"),
])
def test_a_bad_parameter_is_a_400_that_names_it(tmp_path: Path, query: str,
                                                  named: str) -> None:
    async def go() -> None:
        async with served(tmp_path) as s:
            body = await s.get(query, status=400)
            assert body["error"].startswith(named), body
    run(go())


def test_agents_scoreboard_and_one_agent(tmp_path: Path) -> None:
    async def go() -> None:
        async with served(tmp_path) as s:
            await s.step(20)
            board = await s.get("/api/agents?sort=gold&limit=3")
            golds = [a["gold"] for a in board["agents"]]
            assert golds == sorted(golds, reverse=True) and len(golds) == 3
            assert board["count"] == len(s.world.agents())
            eid = board["agents"][0]["id"]
            detail = await s.get(f"/api/agents/{eid}")
            agent = s.world.agent_row(eid)[0]  # type: ignore[index]
            assert detail["name"] == agent.name and detail["id"] == eid
            assert set(detail) >= {"needs", "inventory", "plan", "thinking", "memory",
                                   "relationships", "recent_events", "llm", "action"}
            missing = await s.get("/api/agents/999999", status=404)
            assert "no living agent" in missing["error"]
    run(go())


def test_the_inspector_reads_memory_and_relationships_as_names(tmp_path: Path) -> None:
    """Memory lines read as sentences (goods in words, agents by name, the dead marked), a
    dead agent in relationships keeps its name, and event lines carry the world log's
    sentence (issue 35)."""
    async def go() -> None:
        async with served(tmp_path) as s:
            await s.step(5)
            (a, _row_a), (b, _row_b) = s.world.agents()[:2]
            name_b = s.world.name_of(b)
            social = s.world.agent_row(a)[7]  # type: ignore[index]
            social.relationships[b] = -0.5
            s.world.remember(a, f"{s.world.label(b)} offers {{'herb': 1}} for "
                                f"{{'gold': 2, 'wood': 3}} (offer 4)")
            await s.command(f"/kill {b}")
            await s.step(1)
            detail = await s.get(f"/api/agents/{a}")
            rel = next(r for r in detail["relationships"] if r["id"] == b)
            assert rel == {"id": b, "name": name_b, "alive": False, "value": -0.5}
            assert detail["memory"][-1]["line"] == (
                f"{name_b} (dead) offers 1 herb for 2 gold and 3 wood (offer 4)")
            lines = (await s.get("/api/events?since_tick=0&limit=5000"))["events"]
            death = next(e for e in lines if e["type"] == "death")
            assert death["line"].startswith(f"{name_b}#{b} (") and "=" not in death["line"]
    run(go())


def test_say_puts_words_in_an_agents_mouth(tmp_path: Path) -> None:
    async def go() -> None:
        async with served(tmp_path) as s:
            eid, _row = s.world.agents()[0]
            reply = await s.command(f"/say {eid} hello there")
            assert reply["ok"], reply
            await s.step(2)
            said = (await s.get("/api/events?type=say&since_tick=0"))["events"]
            assert [e["text"] for e in said if e["agent"] == eid] == ["hello there"]
            assert said[0]["line"].endswith('"hello there" (heard by '
                                            f'{said[0]["heard_by"]})')
            bad = await s.command("/say", status=400)
            assert "name the agent" in bad["reply"][0]
    run(go())


def test_readable_memory_leaves_other_text_alone() -> None:
    from agent_world.web.views import readable
    def nobody(eid: int) -> bool:
        return False

    assert readable("plan interrupted: attacked", nobody) == "plan interrupted: attacked"
    assert readable("Una#125 hit me for 5.13", lambda eid: eid == 125) == \
        "Una (dead) hit me for 5.13"
    assert readable("gave me {}", nobody) == "gave me nothing"


def test_stats_metrics_abilities_and_log(tmp_path: Path) -> None:
    async def go() -> None:
        async with served(tmp_path) as s:
            s.server.series.interval = 5
            await s.step(20)
            stats = await s.get("/api/stats")
            assert stats["ticks"]["tick"] == 20
            assert stats["web"]["url"] == s.server.url
            metrics = await s.get("/api/metrics?series=agents,gold_gini&since=10")
            assert metrics["ticks"] == [10, 15, 20]
            assert metrics["series"]["agents"][-1] == len(s.world.agents())
            assert set(metrics["series"]) == {"agents", "gold_gini"}
            catalog = await s.get("/api/abilities")
            names = [a["name"] for a in catalog["abilities"]]
            assert names == s.world.abilities.names()
            if names:
                one = await s.get(f"/api/abilities/{names[0]}")
                assert one["source"] == s.world.abilities.get(names[0]).source  # type: ignore[union-attr]
            await s.get("/api/abilities/no_such_power", status=404)
            s.session.world_log.note(s.world.tick, "a line to download")
            for _ in range(200):  # the log's own thread writes it
                async with s.http.get(s.url + "/api/log") as resp:
                    if resp.status == 200 and "a line to download" in await resp.text():
                        break
                await asyncio.sleep(0.02)
            else:
                raise AssertionError("the world log never held the line")
    run(go())


def test_events_filter_by_type_entity_and_tick(tmp_path: Path) -> None:
    async def go() -> None:
        async with served(tmp_path) as s:
            await s.step(200)
            every = (await s.get("/api/events?limit=5000&since_tick=0"))["events"]
            assert every and all(e["tick"] <= 200 for e in every)
            kinds = {e["type"] for e in every}
            some = sorted(kinds)[0]
            only = (await s.get(f"/api/events?type={some}&limit=5000"))["events"]
            assert only == [e for e in every if e["type"] == some]
            window = (await s.get("/api/events?since_tick=50&until_tick=60&limit=5000")
                      )["events"]
            assert window == [e for e in every if 50 <= e["tick"] <= 60]
            eid = next(e["agent"] for e in every if isinstance(e.get("agent"), int))
            mine = (await s.get(f"/api/events?entity={eid}&limit=5000"))["events"]
            assert mine and all(eid in (e.get("agent"), e.get("target"), e.get("victim"),
                                        e.get("to"), e.get("killer")) for e in mine)
            capped = await s.get("/api/events?limit=2")
            assert len(capped["events"]) == 2 and capped["truncated"] is True
    run(go())


def test_older_events_come_from_the_save_folders_log(tmp_path: Path) -> None:
    async def go() -> None:
        async with served(tmp_path, save=True, ring_events=100) as s:
            await s.step(300)
            await _on_disk(s)
            assert s.server.feed.ring[0]["tick"] > 1  # the ring forgot the first ticks
            body = await s.get("/api/events?since_tick=0&until_tick=5&kind=event"
                               "&limit=5000")
            assert body["from"] == "event log and memory"
            assert body["events"] and all(e["tick"] <= 5 for e in body["events"])
    run(go())


def test_commands_go_through_the_console_and_replay(tmp_path: Path) -> None:
    async def go() -> None:
        async with served(tmp_path, save=True) as s:
            x, y = _free_tile(s)
            reply = await s.command(f"/spawn agent Zed {x} {y}")
            assert reply["ok"] is True
            bad = await s.command("/spawn dragon", status=400)
            assert bad["ok"] is False and bad["reply"][0].startswith("error: ")
            assert len(bad["reply"]) == 1
            unknown = await s.command("/fly", status=400)
            assert "unknown command" in unknown["reply"][0]
            stepped = await s.command("/step 5")
            assert stepped["tick"] == 5
            zed = s.world.population.find("Zed")
            assert zed is not None
            resumed = await s.command("/resume")
            assert "running" in resumed["reply"][0]
            await s.command("/pause")
            await s.step(40)
            final = s.world.state_hash()
            root = s.session.save_dir
        assert root is not None  # (the session is closed: its log is complete)
        folder = SaveFolder.open(root)
        start = load_first_snapshot(folder, web_config(tmp_path)).world
        result = replay(start, folder)
        assert result.inputs >= 1 and start.state_hash() == final
        start.close()
    run(go())


async def _on_disk(s: Served) -> None:
    """Wait until the writer has put the log's lines on disk (/save writes them first)."""
    reply = await s.command("/save")
    assert reply["reply"][0].startswith("saved tick"), reply


def _free_tile(s: Served) -> tuple[int, int]:
    w = s.world
    for y in range(2, w.terrain.height - 2):
        for x in range(2, w.terrain.width - 2):
            if (not w.terrain.is_blocked(x, y) and not w.agents_grid.at(x, y)
                    and not w.ground.items.at(x, y)):
                return x, y
    raise AssertionError("no free tile")


def test_a_token_guards_writes_and_read_only_refuses_them(tmp_path: Path) -> None:
    async def go() -> None:
        # By default each run makes its own token, and writes need it on loopback too.
        async with served(tmp_path) as s:
            assert s.server.generated_token and len(s.server.token) >= 40
            await s.get("/api/state")
            async with s.bare.post(s.url + "/api/commands", json={"command": "/resume"}) as r:
                assert r.status == 401
                assert "needs the access token" in (await r.json())["error"]
            assert s.session.loop.paused
            async with s.bare.post(s.url + "/api/commands", json={"command": "/resume"},
                                   headers=s.auth) as r:
                assert r.status == 200
        async with served(tmp_path, token="s3cret-token") as s:
            await s.get("/api/state")  # reads stay open
            no = await s.command("/pause", status=401)
            assert "token" in no["error"]
            await s.command("/pause", status=401, headers={"Authorization": "Bearer nope"})
            ok = await s.command("/pause", headers={"Authorization": "Bearer s3cret-token"})
            assert ok["ok"] is True
        async with served(tmp_path, read_only=True) as s:
            refused = await s.command("/pause", status=403)
            assert "read-only" in refused["error"]
            assert s.session.loop.paused  # (paused by the fixture; nothing changed it)
    run(go())


def test_writes_need_json_from_the_pages_own_origin_and_a_small_body(tmp_path: Path) -> None:
    async def go() -> None:
        async with served(tmp_path) as s:
            url = s.url + "/api/commands"
            async with s.http.post(url, data='{"command": "/pause"}',
                                   headers={"Content-Type": "text/plain"}) as resp:
                assert resp.status == 415
            async with s.http.post(url, json={"command": "/resume"},
                                   headers={"Origin": "http://evil.example"}) as resp:
                assert resp.status == 403
            async with s.http.post(url, json={"command": "/x" + "y" * 100_000}) as resp:
                assert resp.status == 413
            async with s.http.post(url, data="{not json",
                                   headers={"Content-Type": "application/json"}) as resp:
                assert resp.status == 400
                assert "JSON" in (await resp.json())["error"]
            assert s.session.loop.paused
    run(go())


def test_a_wrong_method_is_405_and_an_unknown_path_404_whatever_the_write_rules(
        tmp_path: Path) -> None:
    # Found by a user: POST /api/state answered 415 (the write rules ran before routing),
    # so the answer named the content type instead of the method.
    async def go() -> None:
        async with served(tmp_path, token="s3cret-token") as s:
            methods: dict[str, set[str]] = {}
            for route in s.server.app.router.routes():
                if route.resource is not None and route.resource.canonical.startswith("/api/"):
                    methods.setdefault(route.resource.canonical, set()).add(route.method)
            assert methods["/api/state"] == {"GET", "HEAD"}
            for path, allowed in sorted(methods.items()):
                for method in sorted({"GET", "POST", "PUT", "DELETE"} - allowed):
                    async with s.http.request(method, s.url + path.replace("{", "").replace(
                            "}", ""), data="x", headers={"Content-Type": "text/plain"}) as resp:
                        body = await resp.json()
                        assert resp.status == 405, (method, path, resp.status, body)
                        allow = ", ".join(sorted(allowed))
                        assert body == {"error": f"{method} is not allowed on "
                                                 f"{resp.url.path}; use {allow}",
                                        "status": 405}
                        assert resp.headers["Allow"] == allow
            async with s.http.get(s.url + "/api/commands") as resp:
                assert resp.status == 405 and resp.headers["Allow"] == "POST"
            async with s.http.post(s.url + "/api/nothing_here", json={}) as resp:
                assert resp.status == 404
                assert await resp.json() == {"error": "Not Found", "status": 404}
    run(go())


@pytest.mark.parametrize("path", [
    "/static/../server.py", "/static/%2e%2e/server.py", "/static/..%2fserver.py",
    "/static/%2e%2e/%2e%2e/config.py", "/static//etc/passwd", "/../config.py",
])
def test_nothing_outside_the_static_folder_is_served(tmp_path: Path, path: str) -> None:
    async def go() -> None:
        async with served(tmp_path) as s:
            reader, writer = await asyncio.open_connection("127.0.0.1",
                                                           int(s.url.rsplit(":", 1)[1]))
            writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                         "\r\n".encode())
            await writer.drain()
            raw = await reader.read()
            writer.close()
            head, _, body = raw.partition(b"\r\n\r\n")
            assert head.startswith((b"HTTP/1.1 404", b"HTTP/1.1 403")), head
            assert b"import" not in body and b"root:" not in body
            async with s.http.get(s.url + "/static/app.js") as ok:
                assert ok.status in (200, 404)  # the page's own files are served
            async with s.http.get(s.url + "/") as page:
                assert page.status == 200 and "html" in (await page.text()).lower()
    run(go())


def test_no_response_holds_the_token_or_the_api_key(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AW_WEB_TOKEN", "tok-9f8e7d6c5b4a")
    cfg = web_config(tmp_path, token_env="AW_WEB_TOKEN")

    async def go() -> None:
        async with served(tmp_path, config=cfg, token="tok-9f8e7d6c5b4a") as s:
            auth = {"Authorization": "Bearer tok-9f8e7d6c5b4a"}
            bodies = []
            for line in ("/spawn agent tok-9f8e7d6c5b4a", '/ability "tok-9f8e7d6c5b4a"'):
                async with s.http.post(s.url + "/api/commands", json={"command": line},
                                       headers=auth) as resp:
                    bodies.append(await resp.text())
            await s.step(5)
            for path in ("/api/state", "/api/stats", "/api/agents", "/api/events",
                         "/api/metrics", "/api/abilities", "/api/entities"):
                async with s.http.get(s.url + path) as resp:
                    bodies.append(await resp.text())
            assert len(bodies) == 9
            assert [b for b in bodies if "tok-9f8e7d6c5b4a" in b] == []
    run(go())


def test_settings_that_cannot_serve_stop_start_up(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    check_web(web_config(tmp_path, host="0.0.0.0").web)  # the token it makes guards it
    for bad in ("http://myhost", "myhost:8765", "my host", "-x.lan"):
        with pytest.raises(ConfigError, match=r"web\.allowed_hosts: .* is not a host name"):
            web_config(tmp_path, allowed_hosts=[bad])
    check_web(web_config(tmp_path, allowed_hosts=["myhost.lan", "10.0.0.7", "*"]).web)
    monkeypatch.delenv("AW_NO_SUCH_TOKEN", raising=False)
    with pytest.raises(ConfigError, match="AW_NO_SUCH_TOKEN"):
        check_web(web_config(tmp_path, token_env="AW_NO_SUCH_TOKEN").web)

    async def go() -> None:
        async with served(tmp_path) as s:
            port = int(s.url.rsplit(":", 1)[1])
            taken = web_config(tmp_path, port=port)
            second = WebServer(s.session, taken.web)
            url = await second.start()
            assert url != s.server.url and f"port {port} is in use" in second.note
            async with s.http.get(url + "api/state") as resp:
                assert resp.status == 200
            await second.close()
            unbindable = WebServer(s.session, web_config(tmp_path, host="127.0.0.999").web,
                                   token="t")
            with pytest.raises(WebError, match=r"cannot listen on 127\.0\.0\.999"):
                await unbindable.start()
            await unbindable.close()
    run(go())


def test_ws_refuses_a_foreign_origin_and_too_many_clients(tmp_path: Path) -> None:
    async def go() -> None:
        async with served(tmp_path, max_clients=1) as s:
            with pytest.raises(aiohttp.WSServerHandshakeError) as foreign:
                await s.http.ws_connect(s.url + "/ws",
                                        headers={"Origin": "http://evil.example"})
            assert foreign.value.status == 403
            first = await s.http.ws_connect(s.url + "/ws")
            with pytest.raises(aiohttp.WSServerHandshakeError) as full:
                await s.http.ws_connect(s.url + "/ws")
            assert full.value.status == 503
            await first.close()
    run(go())


def test_the_web_refuses_what_belongs_to_the_terminal(tmp_path: Path) -> None:
    secret = tmp_path / "server-file.py"
    secret.write_text("NAME = 'x'\n", encoding="utf-8")

    async def go() -> None:
        async with served(tmp_path) as s:
            for line, said in (("/quit", "terminal"), ("/echo off", "terminal"),
                               (f"/ability load {secret}", "reads a file on the server")):
                reply = await s.command(line, status=400)
                assert len(reply["reply"]) == 1 and said in reply["reply"][0], reply
            assert not s.session.loop.stopped
            async with s.http.get(s.url + "/ws") as resp:  # not an upgrade
                assert resp.status == 400 and "WebSocket" in (await resp.json())["error"]
    run(go())


def test_input_lines_read_the_same_from_memory_and_from_the_log(tmp_path: Path) -> None:
    async def go() -> None:
        async with served(tmp_path, save=True) as s:
            x, y = _free_tile(s)
            await s.command(f"/spawn agent Ada {x} {y}")
            await s.step(60)
            ada = s.world.population.find("Ada")
            await _on_disk(s)
            memory = (await s.get("/api/events?kind=input&source=web"))["events"]
            logged = (await s.get("/api/events?kind=input&source=web&since_tick=0"
                                  "&until_tick=0"))["events"]
            assert memory and memory[0]["data"]["kind"] == "agent"
            assert memory[0]["type"] == "spawn" and memory[0]["kind"] == "input"
            checks = (await s.get("/api/events?kind=check&since_tick=0"))["events"]
            assert checks and {c["kind"] for c in checks} == {"check"}
            assert ada is not None
            mine = (await s.get(f"/api/events?entity={ada}&since_tick=0"))["events"]
            assert mine and all(e["tick"] >= 1 for e in mine)
            del logged
    run(go())
