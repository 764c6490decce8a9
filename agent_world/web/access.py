"""Who may do what on the web server: the access token, where a generated one is kept, and
which ``Host`` a request may name.

The token guards every write (commands, training, ``/agents``), whatever the address. Unless
``web.token_env`` names a variable holding one, each run makes its own and keeps it where
Jupyter keeps its own: in a file only the user can read (``web-PORT.json``, mode 0600, in
the runtime folder), removed when the world stops. It is never put in a URL, a log or a
save folder, and the start-up banner shows it only on a terminal.

The ``Host`` check is the defence against DNS rebinding: a page on another site that makes
its own name resolve to 127.0.0.1 reaches this port from the operator's own browser, and its
requests carry its name (``Host: evil.example:8765``) and a matching ``Origin``. Names are
refused unless listed in ``web.allowed_hosts``; an address typed as digits cannot be
rebound, so the address served (and, on loopback, any loopback address and ``localhost``)
passes.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
from pathlib import Path
from typing import TextIO

import orjson

from agent_world.config import ConfigError, WebConfig

__all__ = ["HostCheck", "TokenFile", "is_loopback", "is_terminal",
           "new_token",
           "runtime_dir", "split_host", "web_token"]


def new_token() -> str:
    """A fresh access token: 32 random bytes, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(32)


def web_token(cfg: WebConfig) -> str | None:
    """The access token ``web.token_env`` names, None without one (the server then makes
    one); ConfigError if the variable is named but not set."""
    if not cfg.token_env:
        return None
    token = os.environ.get(cfg.token_env, "")
    if not token:
        raise ConfigError(f"web.token_env: environment variable {cfg.token_env} is not set; "
                          f"export {cfg.token_env}=... (a long random string) or set "
                          "web.token_env: '' to have each run make its own")
    return token


def is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal (where a token may be shown)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # replaced or closed (tests, daemons)
        return False


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return host == ""


def split_host(header: str) -> str:
    """The host of a ``Host`` header, without its port, lower case, without a trailing dot
    (``[::1]:8765`` -> ``::1``)."""
    value = header.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value[1:]
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


class HostCheck:
    """Whether a request's ``Host`` names this server."""

    def __init__(self, served: str, allowed: tuple[str, ...]) -> None:
        self.served = served.lower()
        self.loopback = is_loopback(served)
        self.wildcard = _wildcard(served)
        self.any = "*" in allowed
        self.names = {split_host(name) for name in allowed if name != "*"}

    def allows(self, header: str | None) -> bool:
        if self.any:
            return True
        if not header:
            return False
        host = split_host(header)
        if host in self.names:
            return True
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:  # a name: only localhost, and only on loopback
            return self.loopback and host == "localhost"
        if self.wildcard:
            return True  # every address of the machine is served
        if self.loopback and ip.is_loopback:
            return True
        return host == self.served

    def refusal(self, header: str | None) -> str:
        if not header:
            return "the request has no Host header; send one (HTTP/1.1 requires it)"
        shown = f"{self.served}" if ":" not in self.served else f"[{self.served}]"
        return (f"Host {header[:100]!r} is not this server's address ({shown}"
                f"{' or localhost' if self.loopback else ''}); a page that reaches it under "
                "another name is refused (DNS rebinding). To serve under that name, add it to "
                "web.allowed_hosts")


def runtime_dir(cfg: WebConfig) -> Path:
    """Where a generated token's file goes (``web.runtime_dir``, else as Jupyter does)."""
    if cfg.runtime_dir:
        return Path(cfg.runtime_dir).expanduser()
    given = os.environ.get("AGENT_WORLD_RUNTIME_DIR")
    if given:
        return Path(given).expanduser()
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        return Path(xdg) / "agent-world"
    return Path.home() / ".local" / "share" / "agent-world" / "runtime"


class TokenFile:
    """``web-PORT.json`` in the runtime folder: the URL and token of the world serving on
    PORT, readable by its owner only, removed when the server closes."""

    def __init__(self, folder: Path, port: int) -> None:
        self.path = folder / f"web-{port}.json"
        self._written = False

    def write(self, *, url: str, token: str, world: str) -> None:
        """Write it (OSError when the folder cannot be made or written)."""
        folder = self.path.parent
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        temp = folder / f".{self.path.name}.{os.getpid()}"
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
        # Created 0600 from the start: never readable by others, not even for a moment.
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(orjson.dumps({"url": url, "token": token, "world": world,
                                    "pid": os.getpid()}, option=orjson.OPT_INDENT_2))
        os.replace(temp, self.path)
        self._written = True

    def remove(self) -> None:
        """Remove it if it is still this process's (another world may have taken the port
        since and written its own)."""
        if not self._written:
            return
        self._written = False
        try:
            data = orjson.loads(self.path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return
        if isinstance(data, dict) and data.get("pid") == os.getpid():
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
