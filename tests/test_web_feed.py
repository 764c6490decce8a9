"""The live WebSocket feed: a client that applies a keyframe and the deltas after it sees
exactly the world, whole or through a bounding box; filters, errors, shared encoding, and
a client that never reads."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from agent_world.web.feed import LAYERS, Delta
from tests.web_helpers import Served, served


class Model:
    """What a browser keeps: records by id per layer, built from frames."""

    def __init__(self) -> None:
        self.layers: dict[str, dict[int, list[Any]]] = {k: {} for k in LAYERS}
        self.tick = -1
        self.events: list[dict[str, Any]] = []
        self.keyframes = 0

    def apply(self, frame: dict[str, Any]) -> None:
        self.tick = frame["tick"]
        if frame["t"] == "key":
            self.keyframes += 1
            for layer in LAYERS:
                if layer in frame:
                    self.layers[layer] = {rec[0]: rec for rec in frame[layer]}
            return
        for layer in LAYERS:
            part = frame.get(layer)
            if not part:
                continue
            records = self.layers[layer]
            for rec in part.get("add", []):
                records[rec[0]] = rec
            for rec in part.get("upd", []):
                if rec[0] in records:
                    old = records[rec[0]]
                    records[rec[0]] = [*rec, *old[len(rec):]]
            for eid in part.get("drop", []):
                records.pop(eid, None)
        self.events.extend(frame.get("events", []))


async def receive(ws: aiohttp.ClientWebSocketResponse) -> dict[str, Any]:
    msg = await asyncio.wait_for(ws.receive(), 10)
    assert msg.type == aiohttp.WSMsgType.TEXT, msg
    frame: dict[str, Any] = orjson.loads(msg.data)
    return frame


async def catch_up(s: Served, ws: aiohttp.ClientWebSocketResponse, model: Model) -> None:
    """Let a frame fall due, tick once, and read frames until one is of the world's tick."""
    await asyncio.sleep(0.12)  # past the subscription's rate (10 frames per second)
    await s.step(1)
    while model.tick < s.world.tick:
        model.apply(await receive(ws))


async def subscribe(s: Served, **sub: Any) -> tuple[aiohttp.ClientWebSocketResponse, Model]:
    ws = await s.http.ws_connect(s.url + "/ws")
    hello = await receive(ws)
    assert hello["t"] == "hello" and hello["tick"] == s.world.tick
    await ws.send_str(orjson.dumps({"op": "subscribe", "rate": 10, **sub}).decode())
    model = Model()
    key = await receive(ws)
    assert key["t"] == "key"
    model.apply(key)
    return ws, model


def world_records(s: Served, bbox: tuple[int, int, int, int] | None = None
                  ) -> dict[str, dict[int, list[Any]]]:
    from agent_world.web.feed import BBox

    box = BBox(*bbox) if bbox else None
    return {layer: {rec[0]: rec for rec in s.server.feed.records(layer, box)}
            for layer in LAYERS}


def test_keyframe_plus_deltas_is_the_world_tick_after_tick(tmp_path: Path) -> None:
    async def go() -> None:
        async with served(tmp_path, world={"starting_agents": 20}) as s:
            ws, model = await subscribe(s)
            assert model.layers == world_records(s)
            for round_ in range(12):
                await s.step(7)
                if round_ == 3:
                    await s.command("/spawn agent Newcomer")
                if round_ == 6:
                    victim = s.world.agents()[0][0]
                    await s.command(f"/kill {victim}")
                await catch_up(s, ws, model)
                assert model.layers == world_records(s), f"round {round_}"
            assert model.keyframes == 1  # all of it from deltas
            assert model.events, "the world's events came along"
            await ws.close()
    asyncio.run(go())


def test_a_bounding_box_shows_exactly_what_is_inside_it(tmp_path: Path) -> None:
    box = (0, 0, 15, 15)

    async def go() -> None:
        async with served(tmp_path, world={"starting_agents": 24}) as s:
            ws, model = await subscribe(s, bbox=list(box), layers=["agents", "items"])
            assert model.layers["agents"] == world_records(s, box)["agents"]
            entered = set(model.layers["agents"])
            for _ in range(15):
                await s.step(10)
                await catch_up(s, ws, model)
                now = world_records(s, box)
                assert model.layers["agents"] == now["agents"]
                assert model.layers["items"] == now["items"]
                assert model.layers["objects"] == {}
                entered |= set(model.layers["agents"])
            assert entered, "agents walked through the box"
            assert all(box[0] <= e["x"] <= box[2] and box[1] <= e["y"] <= box[3]
                       for e in model.events if "x" in e)
            await ws.close()
    asyncio.run(go())


def test_events_and_components_follow_the_subscription(tmp_path: Path) -> None:
    async def go() -> None:
        async with served(tmp_path, world={"starting_agents": 12}) as s:
            eid = s.world.agents()[0][0]
            ws, model = await subscribe(s, events=["say"], entities=None, layers=[])
            for _ in range(10):
                await s.step(20)
                await catch_up(s, ws, model)
            assert model.events and {e["type"] for e in model.events} == {"say"}
            from agent_world.core.components import Social

            other = s.world.agents()[1][0]
            s.world.store.get(eid, Social).relationships[other] = 0.5  # keyed by id
            await ws.send_str(orjson.dumps({"op": "subscribe", "layers": [],
                                            "entities": [eid],
                                            "components": ["Needs", "Social"],
                                            "rate": 10}).decode())
            key = await receive(ws)
            assert key["t"] == "key"
            needs = key["detail"][str(eid)]["Needs"]
            assert set(needs) == {"hunger", "energy", "health", "max_health"}
            assert key["detail"][str(eid)]["Social"]["relationships"][str(other)] == 0.5
            s.world.store.get(eid, Social).relationships[other] = -0.25
            await asyncio.sleep(0.12)
            await s.step(1)
            frame = await receive(ws)
            while "detail" not in frame:
                frame = await receive(ws)
            assert frame["detail"][str(eid)]["Social"]["relationships"][str(other)] == -0.25
            await ws.close()
    asyncio.run(go())


@pytest.mark.parametrize(("message", "named"), [
    ({"op": "subscribe", "bbox": [1, 2]}, "bbox"),
    ({"op": "subscribe", "layers": ["dragons"]}, "layers"),
    ({"op": "subscribe", "rate": 500}, "rate"),
    ({"op": "subscribe", "entities": list(range(40))}, "entities"),
    ({"op": "subscribe", "components": ["Needs"]}, "components"),
    ({"op": "subscribe", "colour": "red"}, "unknown field 'colour'"),
    ({"op": "dance"}, "unknown op"),
    ("not json at all", "not JSON"),
])
def test_a_bad_message_gets_an_error_naming_it(tmp_path: Path, message: Any,
                                               named: str) -> None:
    async def go() -> None:
        async with served(tmp_path) as s:
            ws = await s.http.ws_connect(s.url + "/ws")
            await receive(ws)
            await ws.send_str(message if isinstance(message, str)
                              else orjson.dumps(message).decode())
            reply = await receive(ws)
            assert reply["t"] == "error" and named in reply["message"], reply
            await ws.send_str('{"op": "ping"}')
            assert (await receive(ws))["t"] == "pong"  # the connection carries on
            await ws.close()
    asyncio.run(go())


def test_clients_asking_the_same_share_one_encoded_frame(tmp_path: Path) -> None:
    async def go() -> None:
        async with served(tmp_path) as s:
            clients = [await subscribe(s) for _ in range(5)]
            assert len(s.server.groups) == 1
            await s.step(5)
            await asyncio.sleep(0.12)
            await s.step(1)
            frames = []
            for ws, model in clients:
                while model.tick < s.world.tick:
                    msg = await asyncio.wait_for(ws.receive(), 10)
                    model.apply(orjson.loads(msg.data))
                frames.append(msg.data)
                await ws.close()
            assert len(set(frames)) == 1
    asyncio.run(go())


def _raw_ws(port: int) -> socket.socket:
    """A WebSocket client that completes the handshake and then never reads."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                 b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                 b"Sec-WebSocket-Version: 13\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


def _masked_text(payload: bytes) -> bytes:
    mask = b"\x01\x02\x03\x04"
    body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    size = len(payload)
    head = bytes([0x81, 0x80 | size]) if size < 126 else \
        bytes([0x81, 0x80 | 126]) + size.to_bytes(2, "big")
    return head + mask + body


def test_a_client_that_never_reads_is_closed_and_memory_stays_bounded(
        tmp_path: Path) -> None:
    async def go() -> None:
        # (A message allowance no subscribe loop spends: this client is too slow, not too
        # talkative.)
        async with served(tmp_path, world={"size": [96, 96], "starting_agents": 400},
                          slow_client_s=1.0, client_queue=4, messages_per_s=10_000) as s:
            port = int(s.url.rsplit(":", 1)[1])
            sock = await asyncio.to_thread(_raw_ws, port)
            sub = _masked_text(orjson.dumps({"op": "subscribe", "rate": 30}))
            biggest_buffer = 0
            closed = None
            for _ in range(2000):  # each subscribe brings a keyframe of every layer
                await asyncio.to_thread(sock.sendall, sub)
                await s.step(1)
                await asyncio.sleep(0.01)
                for client in s.server.clients:
                    assert len(client.frames) <= client.size
                    transport = client.transport
                    if transport is not None:
                        biggest_buffer = max(biggest_buffer,
                                             transport.get_write_buffer_size())
                if not s.server.clients:
                    closed = s.server.closed_slow
                    break
            sock.close()
            assert closed == 1, "the client that never read was closed as too slow"
            # What waited for it in the process: at most the writer's high-water mark plus
            # one frame (the kernel holds the rest), however many frames it was sent.
            assert biggest_buffer < 2 * 1024 * 1024
            assert s.session.loop.ticks_run >= 1  # the world went on meanwhile
    asyncio.run(go())


def test_merged_deltas_equal_the_deltas_applied_in_turn() -> None:
    first = Delta(tick=1)
    first.add["agents"][5] = [5, 1, 1, 100, 0, "Ann", "trader", "builtin"]
    first.upd["agents"][6] = [6, 2, 2, 90, 0]
    second = Delta(tick=2)
    second.upd["agents"][5] = [5, 3, 4, 80, 1]
    second.drop["agents"].add(6)
    second.add["items"][9] = [9, 0, 0, 2, "apple"]
    third = Delta(tick=3)
    third.add["agents"][6] = [6, 7, 7, 100, 0, "Bo", "gatherer", "builtin"]
    merged = Delta(tick=0)
    for d in (first, second, third):
        merged.merge(d, max_events=10)
    assert merged.tick == 3
    assert merged.add["agents"] == {5: [5, 3, 4, 80, 1, "Ann", "trader", "builtin"],
                                    6: [6, 7, 7, 100, 0, "Bo", "gatherer", "builtin"]}
    assert merged.upd["agents"] == {} and merged.drop["agents"] == set()
    assert merged.add["items"] == {9: [9, 0, 0, 2, "apple"]}


def test_frames_follow_every_change_the_world_makes_to_its_ground(tmp_path: Path) -> None:
    """Items and objects are read only where the world notes a change: over a long run
    (pickups, harvests, spoiling, regrowth, deaths that drop goods) the frames must still
    add up to the world, layer by layer."""
    from agent_world.config import Config
    from agent_world.core.world import World
    from agent_world.web.feed import LiveFeed

    config = Config().replace(world={"starting_agents": 40, "seed": 5},
                              paths={"saves": str(tmp_path), "logs": str(tmp_path)})
    world = World.create(config)
    feed = LiveFeed(world, ring_events=100, frame_budget=1.0)
    model = Model()
    feed.listeners.append(lambda d: model.apply(orjson.loads(orjson.dumps(
        {"t": "delta", "tick": d.tick,
         **{layer: {"add": list(d.add[layer].values()), "upd": list(d.upd[layer].values()),
                    "drop": sorted(d.drop[layer])} for layer in LAYERS}}))))
    feed.watch()
    model.apply({"t": "key", "tick": world.tick,
                 **{layer: feed.records(layer) for layer in LAYERS}})
    seen: dict[str, int] = {}
    for tick in range(1, 901):
        report = world.step()
        feed.on_tick(report)
        for event in report.events:
            seen[event["type"]] = seen.get(event["type"], 0) + 1
        if tick % 150 == 0:
            for layer in LAYERS:
                assert model.layers[layer] == {r[0]: r for r in feed.records(layer)}, (
                    f"{layer} at tick {tick}")
    assert seen.get("pickup") and seen.get("harvest"), seen  # the ground did change
    feed.unwatch()
    assert world.ground.changes is None  # nobody watches: the world keeps nothing
    world.close()
