"""A served session for web tests: a real aiohttp server on a free loopback port, a session on
a fake clock (the world moves only when a test steps it) and client sessions to talk to it:
``http`` sends the server's access token with every request, as the operator's scripts do;
``bare`` sends none, as a stranger would."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

from agent_world.app import Session
from agent_world.config import Config
from agent_world.core.world import World
from agent_world.persistence import open_world
from agent_world.sandbox import Sandbox
from agent_world.types import FakeClock
from agent_world.web import WebServer

__all__ = ["Served", "served", "web_config"]


def web_config(tmp_path: Path, *, world: dict[str, Any] | None = None,
               **web: Any) -> Config:
    settings = {"size": [32, 32], "starting_agents": 8, "seed": 4, **(world or {})}
    return Config().replace(world=settings, web={
        "port": 0, "runtime_dir": str(tmp_path / "runtime"), **web}, paths={
        "logs": str(tmp_path / "logs"), "saves": str(tmp_path / "saves")})


class Served:
    def __init__(self, session: Session, server: WebServer, http: aiohttp.ClientSession,
                 bare: aiohttp.ClientSession) -> None:
        self.session = session
        self.server = server
        self.http = http
        self.bare = bare
        assert server.url is not None
        self.url = server.url.rstrip("/")

    @property
    def world(self) -> World:
        return self.session.world

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.server.token}"}

    async def get(self, path: str, status: int = 200) -> Any:
        async with self.http.get(self.url + path) as resp:
            body = await resp.json()
            assert resp.status == status, (resp.status, body)
            return body

    async def command(self, line: str, status: int = 200,
                      headers: dict[str, str] | None = None) -> Any:
        async with self.http.post(self.url + "/api/commands", json={"command": line},
                                  headers=headers or {}) as resp:
            body = await resp.json()
            assert resp.status == status, (resp.status, body)
            return body

    async def step(self, n: int = 1) -> None:
        await self.session.loop.step(n)


@contextlib.asynccontextmanager
async def served(tmp_path: Path, *, save: bool = False, token: str | None = None,
                 config: Config | None = None, sandbox: bool = False,
                 **web: Any) -> AsyncIterator[Served]:
    """A paused session with its web server; ``save`` gives it a save folder, ``sandbox``
    the ability sandbox (and so the built-in abilities and the angel)."""
    cfg = config or web_config(tmp_path, **web)
    box = Sandbox(cfg, wait=True) if sandbox else None
    if save:
        opened = open_world(cfg)
        session = Session(cfg, opened.world, clock=FakeClock(), folder=opened.folder,
                          resumed=opened.resumed, sandbox=box)
    else:
        session = Session(cfg, World.create(cfg), clock=FakeClock(), sandbox=box)
    session.loop.pause()
    server = WebServer(session, cfg.web, token=token)
    await server.start()
    # A test that gives the token sends it itself (it is testing the token's rules).
    http = aiohttp.ClientSession(
        headers={} if token is not None else {"Authorization": f"Bearer {server.token}"})
    bare = aiohttp.ClientSession()
    try:
        yield Served(session, server, http, bare)
    finally:
        await http.close()
        await bare.close()
        await server.close()
        session.close()
