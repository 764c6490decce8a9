"""Issue 30 and issue 36, attack by attack, against a real server on 127.0.0.1: the web
surface a local server shows to the machine and to the browser on it.

Each test is written from the attack as the issue describes it: a DNS-rebinding page, writes
without a token, the token in non-terminal output, idle and slowloris connections, idle
feed sockets locking the operator out, running out of file descriptors, a flooding or
bbox-looping feed client, malformed HTTP, HTTP/0.9. Real sockets, real WebSocket clients,
real programs; timeouts are settings, made small here, and a test waits for the server to
act on them (reading until it closes), never for a time of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import yaml

from agent_world.web.feedsocket import AUTH_CLOSE, FLOOD_CLOSE
from tests.web_helpers import Served, served

MAIN = Path(__file__).resolve().parents[1] / "main.py"
STATIC = Path(__file__).resolve().parents[1] / "agent_world" / "web" / "static"


def port_of(s: Served) -> int:
    return int(s.url.rsplit(":", 1)[1])


async def raw(s: Served) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port_of(s))


async def until_closed(reader: asyncio.StreamReader, limit: float = 30.0) -> bytes:
    """Everything the server sends until it closes the connection (``limit`` seconds at
    most: a safety net, never what the test measures)."""
    got = b""
    with contextlib.suppress(ConnectionError):
        while chunk := await asyncio.wait_for(reader.read(65536), limit):
            got += chunk
    return got


async def ws_closed(ws: aiohttp.ClientWebSocketResponse) -> tuple[list[Any], int | None]:
    """The messages until the server closes, and the close code it sent (the client's own
    ``close_code`` turns 1006 when the server hangs up before the client's answering close
    frame is written, which is the server's right once it has said why)."""
    got = []
    while True:
        msg = await ws.receive(timeout=30)
        if msg.type == aiohttp.WSMsgType.TEXT:
            got.append(orjson.loads(msg.data))
            continue
        return got, msg.data if msg.type == aiohttp.WSMsgType.CLOSE else ws.close_code


# -- 1. DNS rebinding and the token --------------------------------------------------------------


def test_a_rebinding_page_gets_nothing_even_with_the_token(tmp_path: Path) -> None:
    # A page on evil.example whose name now resolves to 127.0.0.1: the browser sends the
    # page's own name as Host and as Origin, so comparing the two proves nothing.
    async def go() -> None:
        async with served(tmp_path) as s:
            evil = f"evil.example:{port_of(s)}"
            foreign = {"Host": evil, "Origin": f"http://{evil}"}
            for method, path, body in (("GET", "/api/state", None), ("GET", "/", None),
                                       ("GET", "/api/events", None),
                                       ("POST", "/api/commands", {"command": "/resume"}),
                                       ("POST", "/api/train", {"scenario": "foraging"})):
                async with s.http.request(method, s.url + path, json=body,
                                          headers=foreign) as resp:
                    assert resp.status == 403, (method, path, resp.status)
                    said = (await resp.json())["error"]
                    assert "evil.example" in said and "web.allowed_hosts" in said
            for path in ("/ws", "/agents"):
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await s.http.ws_connect(s.url + path, headers=foreign)
                assert refused.value.status == 403
            assert s.session.loop.paused and s.world.population.find("Evil") is None
            # The names this server answers to: its address, and localhost on loopback.
            for host in (f"127.0.0.1:{port_of(s)}", f"localhost:{port_of(s)}", "localhost"):
                async with s.http.get(s.url + "/api/state", headers={"Host": host}) as resp:
                    assert resp.status == 200, host
        async with served(tmp_path, allowed_hosts=["viewer.lan"]) as s:
            for host, status in (("viewer.lan:80", 200), ("VIEWER.LAN.", 200),
                                 ("evil.example", 403)):
                async with s.http.get(s.url + "/api/state", headers={"Host": host}) as resp:
                    assert resp.status == status, host
        async with served(tmp_path, allowed_hosts=["*"]) as s:  # the explicit opening
            ask = s.http.get(s.url + "/api/state", headers={"Host": "any.example"})
            async with ask as resp:
                assert resp.status == 200
    asyncio.run(go())


def test_every_write_needs_the_token_by_default_even_on_loopback(tmp_path: Path) -> None:
    # The finding: on loopback with the default config every write was open.
    async def go() -> None:
        async with served(tmp_path) as s:
            for path, body in (("/api/commands", {"command": "/spawn agent Intruder"}),
                               ("/api/commands", {"command": "/fork evil"}),
                               ("/api/train", {"scenario": "foraging"})):
                async with s.bare.post(s.url + path, json=body) as resp:
                    assert resp.status == 401, path
                    said = (await resp.json())["error"]
                    assert "needs the access token" in said
                    assert s.server.token not in said
                    assert str(s.server.token_file.path) in said  # where to find it
            agents = await s.bare.ws_connect(s.url + "/agents")
            _got, code = await ws_closed(agents)
            assert code == 4401
            await s.step(2)
            assert s.world.population.find("Intruder") is None
            # Reads stay open on loopback, and the feed needs no token here.
            async with s.bare.get(s.url + "/api/state") as resp:
                assert resp.status == 200
            async with s.bare.ws_connect(s.url + "/ws") as ws:
                assert (await ws.receive_json(timeout=10))["t"] == "hello"
    asyncio.run(go())


def test_beyond_loopback_reads_and_the_feed_need_the_token_too(tmp_path: Path) -> None:
    # Served on 0.0.0.0 (every address of the machine): reads need the token unless
    # web.public_reads; the feed takes it as its first message, never in the URL.
    async def go() -> None:
        async with served(tmp_path, host="0.0.0.0") as s:
            url = s.url.replace("0.0.0.0", "127.0.0.1")
            async with s.bare.get(url + "/api/state") as resp:
                assert resp.status == 401
                assert "web.public_reads" in (await resp.json())["error"]
            async with s.bare.get(url + "/") as resp:  # the page asks for the token itself
                assert resp.status == 200
            async with s.bare.get(url + "/api/state", headers=s.auth) as resp:
                assert resp.status == 200
            ws = await s.bare.ws_connect(url + "/ws")
            await ws.send_json({"op": "subscribe"})
            got, code = await ws_closed(ws)
            assert code == AUTH_CLOSE and "unauthorized" in got[0]["message"]
            async with s.bare.ws_connect(url + "/ws") as ws:
                await ws.send_json({"op": "auth", "token": s.server.token})
                assert (await ws.receive_json(timeout=10))["t"] == "hello"
                await ws.send_json({"op": "subscribe", "layers": ["agents"]})
                assert (await ws.receive_json(timeout=10))["t"] == "key"
        async with served(tmp_path, host="0.0.0.0", public_reads=True) as s:
            url = s.url.replace("0.0.0.0", "127.0.0.1")
            async with s.bare.get(url + "/api/state") as resp:
                assert resp.status == 200
            async with s.bare.post(url + "/api/commands", json={"command": "/pause"}) as r:
                assert r.status == 401  # writes never open
    asyncio.run(go())


def test_the_viewer_never_puts_the_token_in_a_url() -> None:
    # It opened /ws?token=TOKEN once the operator had typed the token.
    source = (STATIC / "app.js").read_text(encoding="utf-8")
    assert "?token=" not in source and "token=${" not in source
    assert "op: 'auth'" in source  # the feed's first message carries it where needed


def _start_world(tmp_path: Path, *, nofile: int | None = None,
                 extra: dict[str, Any] | None = None) -> tuple[subprocess.Popen[str], Path]:
    """A paced world run by main.py, its stdout and stderr in files (not a terminal)."""
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "world": {"size": [32, 32], "starting_agents": 6, "seed": 3, "name": "guarded"},
        "web": {"port": 0, "runtime_dir": str(tmp_path / "runtime")},
        "persistence": {"hash_interval_ticks": 5},
        "paths": {"logs": str(tmp_path / "logs"), "saves": str(tmp_path / "saves")},
        **(extra or {})}), encoding="utf-8")
    out = (tmp_path / "out.txt").open("w")
    args = [sys.executable, str(MAIN), "--config", str(config), "--headless"]
    if nofile is not None:  # the world's own soft limit of open files, as a service has
        launch = ("import resource, runpy, sys; "
                  f"resource.setrlimit(resource.RLIMIT_NOFILE, ({nofile}, "
                  "resource.getrlimit(resource.RLIMIT_NOFILE)[1])); sys.argv = sys.argv[1:]; "
                  "runpy.run_path(sys.argv[0], run_name='__main__')")
        args = [sys.executable, "-c", launch, *args[1:]]
    proc = subprocess.Popen(args, cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=out,
                            stderr=subprocess.STDOUT, text=True)
    out.close()
    return proc, tmp_path / "out.txt"


def _url_of(proc: subprocess.Popen[str], out: Path) -> str:
    for _ in range(600):
        found = re.search(r"viewer:\s+(http://\S+/)", out.read_text())
        if found:
            return found.group(1)
        assert proc.poll() is None, out.read_text()
        time.sleep(0.05)  # the program starting: polled, as a person would
    raise AssertionError(f"no viewer URL: {out.read_text()}")


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_the_token_stays_out_of_urls_logs_saves_and_non_terminal_output(
        tmp_path: Path) -> None:
    proc, out = _start_world(tmp_path)
    try:
        url = _url_of(proc, out)
        files = list((tmp_path / "runtime").glob("web-*.json"))
        assert len(files) == 1
        # As Jupyter keeps its own: a file only the user can read, in a folder only the
        # user can enter.
        assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
        assert stat.S_IMODE(files[0].parent.stat().st_mode) == 0o700
        kept = json.loads(files[0].read_text())
        token = kept["token"]
        assert kept["url"] == url and len(token) >= 40

        async def use() -> None:
            async with aiohttp.ClientSession() as http:
                auth = {"Authorization": f"Bearer {token}"}
                async with http.post(url + "api/commands", headers=auth,
                                     json={"command": "/spawn agent Tokie"}) as resp:
                    assert resp.status == 200
                async with http.post(url + "api/commands", headers=auth,
                                     json={"command": f"/spawn agent {token[:20]}"}) as resp:
                    assert token not in await resp.text()
                async with http.post(url + "api/commands", headers=auth,
                                     json={"command": "/save"}) as resp:
                    assert resp.status == 200
        asyncio.run(use())
    finally:
        _stop(proc)
    assert proc.returncode == 0, out.read_text()
    said = out.read_text()
    assert "token:" in said and f"in {files[0]}" in said and "readable only by you" in said
    assert token not in said  # stdout and stderr are a file here, not a terminal
    for path in [*(tmp_path / "logs").rglob("*"), *(tmp_path / "saves").rglob("*")]:
        if path.is_file() and path.suffix != ".gz":
            assert token not in path.read_text(errors="replace"), path
    assert not files[0].exists()  # removed when the world stopped


# -- 2. connections that hold places -------------------------------------------------------------


def test_idle_and_slowloris_connections_are_closed_and_the_operator_gets_in(
        tmp_path: Path) -> None:
    async def go() -> None:
        async with served(tmp_path, idle_timeout_s=0.3, header_timeout_s=0.3,
                          max_connections_per_address=6) as s:
            idle = [await raw(s) for _ in range(6)]  # send nothing at all
            slow, slow_writer = await raw(s)
            slow_writer.write(b"GET /api/state HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            # The operator comes while the attacker holds every place of its address: the
            # longest-idle connection gives way.
            async with s.http.get(s.url + "/api/state") as resp:
                assert resp.status == 200
            for _ in range(40):  # a byte of the head now and then: never done
                slow_writer.write(b"a")
                await slow_writer.drain()
                if slow.at_eof():
                    break
                await asyncio.sleep(0.05)
            assert await until_closed(slow) == b""
            for reader, writer in idle:
                assert await until_closed(reader) == b""
                writer.close()
            slow_writer.close()
            guard = s.server.guard
            assert guard.closed_head >= 1 and guard.closed_idle + guard.evicted >= 6
            assert len(guard.conns) <= 1
            stats = await s.get("/api/stats")
            assert stats["web"]["closed (slow head)"] >= 1
    asyncio.run(go())


def test_a_body_sent_a_byte_at_a_time_is_cut_at_the_head_timeout(tmp_path: Path) -> None:
    async def go() -> None:
        async with served(tmp_path, header_timeout_s=0.3) as s:
            reader, writer = await raw(s)
            writer.write(f"POST /api/commands HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         f"Authorization: Bearer {s.server.token}\r\nContent-Type: "
                         "application/json\r\nContent-Length: 200\r\n\r\n{".encode())
            await writer.drain()
            answer = await until_closed(reader)
            writer.close()
            assert answer.startswith(b"HTTP/1.1 408"), answer[:80]
            assert b"web.header_timeout_s" in answer
    asyncio.run(go())


def test_idle_feed_sockets_cannot_lock_the_operator_out(tmp_path: Path) -> None:
    # Issue 36: 64 /ws connections that never subscribe locked the 65th, the operator's
    # browser, out with 503 until the world restarted.
    async def go() -> None:
        async with served(tmp_path, max_clients=4, subscribe_within_s=0.3) as s:
            idle = [await s.bare.ws_connect(s.url + "/ws") for _ in range(4)]
            for ws in idle:
                got, code = await ws_closed(ws)
                assert got[0]["t"] == "hello" and code == 1008
            assert s.server.sockets.closed_idle == 4
            async with s.http.ws_connect(s.url + "/ws") as operator:
                assert (await operator.receive_json(timeout=10))["t"] == "hello"
                await operator.send_json({"op": "subscribe", "layers": ["agents"]})
                assert (await operator.receive_json(timeout=10))["t"] == "key"
    asyncio.run(go())


def test_past_the_caps_a_newcomer_gets_503_when_no_one_is_idle(tmp_path: Path) -> None:
    async def go() -> None:
        async with served(tmp_path, max_connections_per_address=3) as s:
            busy = [await s.bare.ws_connect(s.url + "/ws") for _ in range(3)]
            for ws in busy:
                await ws.receive_json(timeout=10)
                await ws.send_json({"op": "subscribe", "layers": []})
                assert (await ws.receive_json(timeout=10))["t"] == "key"
            reader, writer = await raw(s)
            answer = await until_closed(reader)
            writer.close()
            assert answer.startswith(b"HTTP/1.1 503"), answer[:60]
            assert b"web.max_connections_per_address" in answer
            assert s.server.guard.refused == 1
            for ws in busy:
                await ws.close()
    asyncio.run(go())


def test_running_out_of_files_refuses_clients_and_never_stops_the_world(
        tmp_path: Path) -> None:
    # Under a soft limit of 1,024 open files, ~1,100 idle connections made the next state
    # hash fail on os.pipe() (EMFILE) and the world exited. Here the limit is 128 and the
    # attacker opens 300.
    proc, out = _start_world(tmp_path, nofile=128)
    held: list[socket.socket] = []
    try:
        url = _url_of(proc, out)
        port = int(url.rsplit(":", 1)[1].strip("/"))
        said = out.read_text()
        cap = int(re.search(r"web\.max_connections 256 lowered to (\d+)", said).group(1))
        assert cap < 128
        for _ in range(300):
            sock = socket.create_connection(("127.0.0.1", port))
            held.append(sock)

        async def check() -> tuple[int, int]:
            async with aiohttp.ClientSession() as http:
                async with http.get(url + "api/state") as resp:
                    assert resp.status == 200  # an idle attacker's place went to it
                    first = (await resp.json())["tick"]
                tick = first
                while tick < first + 12:  # past two state hashes (every 5 ticks)
                    async with http.get(url + "api/state") as resp:
                        tick = (await resp.json())["tick"]
                return first, tick
        asyncio.run(check())
        assert proc.poll() is None, out.read_text()
    finally:
        for sock in held:
            sock.close()
        _stop(proc)
    assert proc.returncode == 0, out.read_text()
    assert "Traceback" not in out.read_text()


def test_a_world_out_of_files_skips_seek_points_and_keeps_its_hashes(tmp_path: Path) -> None:
    # The world itself at the limit (whatever took the files): a fork for the state hash
    # cannot get its pipe. It serialises on the main thread instead, skips the seek points,
    # says so once, and runs on; its hashes verify.
    script = tmp_path / "starve.py"
    script.write_text(f"""
import os, resource, sys
sys.path.insert(0, {str(MAIN.parent)!r})
from agent_world.config import Config
from agent_world.persistence import open_world, Persistence
from agent_world.persistence.replay import replay
from agent_world.persistence.snapshots import load_first_snapshot
from agent_world.persistence import SaveFolder
said = []
cfg = Config().replace(world={{"size": [32, 32], "starting_agents": 6, "seed": 2}},
                       persistence={{"hash_interval_ticks": 10, "seek_interval_ticks": 5,
                                    "seek_target_ms": 0}},
                       paths={{"saves": {str(tmp_path / "saves")!r}}})
opened = open_world(cfg)
p = Persistence(opened.folder, cfg.persistence, opened.world, report=said.append)
held = []
try:
    while True:
        held.append(os.open("/dev/null", os.O_RDONLY))
except OSError:
    pass
for _ in range(30):
    report = opened.world.step()
    p.on_tick(report)
    p.between_ticks(0.001)
for fd in held:
    os.close(fd)
final = opened.world.state_hash()
p.close()
folder = SaveFolder.open(opened.folder.root)
world = load_first_snapshot(folder, cfg).world
result = replay(world, folder)
forks = [line for line in said if "cannot start a child" in line]
print("refused", p.fork_failures, "skipped", p.seek_points_skipped, "said", len(forks))
print("checks", result.checks, "same", world.state_hash() == final)
print(forks[0] if forks else "")
""")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=240, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    refused, skipped, reports = (int(v) for v in lines[0].split()[1::2])
    assert refused == 6 and skipped == 3 and reports == 1  # ticks 5..30: seeks, hashes
    assert lines[1].split()[1] != "0" and lines[1].endswith("same True"), lines[1]
    assert "too many open files" in lines[2].lower()


# -- 3. what one client may ask of the world -----------------------------------------------------


def test_a_feed_client_over_its_message_rate_is_cut_off(tmp_path: Path) -> None:
    async def go() -> None:
        async with served(tmp_path, messages_per_s=5) as s:
            calm = await s.http.ws_connect(s.url + "/ws")
            await calm.receive_json(timeout=10)
            flood = await s.http.ws_connect(s.url + "/ws")
            await flood.receive_json(timeout=10)
            for _ in range(40):
                await flood.send_json({"op": "ping"})
            got, code = await ws_closed(flood)
            assert code == FLOOD_CLOSE
            assert s.server.sockets.closed_flooding == 1
            await s.step(5)
            await calm.send_json({"op": "ping"})
            assert await calm.receive_json(timeout=10) == {"t": "pong", "tick": 5}
            await calm.close()
            del got
    asyncio.run(go())


def test_keyframes_come_at_most_at_the_subscriptions_rate(tmp_path: Path) -> None:
    # A client changing its bbox in a loop made a keyframe on the main thread per message.
    async def go() -> None:
        async with served(tmp_path, messages_per_s=1000) as s:
            ws = await s.http.ws_connect(s.url + "/ws")
            await ws.receive_json(timeout=10)
            for i in range(60):
                await ws.send_json({"op": "subscribe", "layers": ["agents"], "rate": 2,
                                    "bbox": [0, 0, 4 + i % 20, 4 + i % 20]})
            await ws.send_json({"op": "ping"})
            frames = []
            while (msg := await ws.receive_json(timeout=10))["t"] != "pong":
                frames.append(msg)
            assert [f["t"] for f in frames] == ["key"]  # the first; the rest wait their turn
            sockets = s.server.sockets
            assert sockets.keyframes == 1 and sockets.keyframes_deferred == 1
            # Its turn comes (half a second on, at rate 2): the newest subscription, once.
            later = await ws.receive_json(timeout=10)
            assert later["t"] == "key" and sockets.keyframes == 2
            box = [0, 0, 4 + 59 % 20, 4 + 59 % 20]
            assert all(box[0] <= r[1] <= box[2] and box[1] <= r[2] <= box[3]
                       for r in later["agents"])
            group = next(iter(s.server.groups))
            assert (group.bbox.x1, group.bbox.y1) == (box[2], box[3])
            await ws.close()
    asyncio.run(go())


# -- 4. malformed requests -----------------------------------------------------------------------


def test_malformed_http_is_counted_and_said_once_not_a_traceback_each(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    async def go() -> None:
        async with served(tmp_path) as s:
            for i in range(200):
                reader, writer = await raw(s)
                writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\x01: %d\r\n"
                             b"\r\n" % i)
                answer = await until_closed(reader)
                writer.close()
                assert answer.split(b"\r\n")[0].split()[1] == b"400", answer[:40]
            assert s.server.malformed.total == 200
            stats = await s.get("/api/stats")
            assert stats["web"]["malformed requests"] == 200
            log = s.session.world_log.path
            for _ in range(500):  # the world log's own thread writes it
                if log.exists() and "malformed HTTP" in log.read_text():
                    break
                await asyncio.sleep(0.01)
            said = [line for line in log.read_text().splitlines() if "malformed HTTP" in line]
            assert len(said) == 1 and "1 malformed HTTP request(s)" in said[0]
            assert "at most every 60 s" in said[0]
    asyncio.run(go())
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Error handling request" not in err


def test_http_0_9_request_lines_are_refused(tmp_path: Path) -> None:
    async def go() -> None:
        async with served(tmp_path) as s:
            reader, writer = await raw(s)
            writer.write(b"GET /\r\n\r\n")
            answer = await until_closed(reader)
            writer.close()
            assert b"<html" not in answer.lower() and b"400" in answer.split(b"\r\n")[0]
            assert b"HTTP/0.9 requests are refused" in answer
    asyncio.run(go())
