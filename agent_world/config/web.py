"""The sections of the surfaces people and programs reach the world through: ``console``,
``web`` and ``remote`` (agents played over ``/agents``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent_world.config.base import ConfigError, setting

__all__ = ["ConsoleConfig", "RemoteConfig", "WebConfig"]

_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
# A host name (labels of letters, digits and '-'), an IPv4 address, or an IPv6 one.
_HOST = re.compile(rf"{_LABEL}(\.{_LABEL})*|\[?[0-9a-f:.]+\]?")


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsoleConfig:
    """The operator's commands (the console, and every surface that runs its commands)."""

    max_queued_inputs: int = setting(
        1000, "changes (spawn, kill, give, cast ...) waiting for the next tick at most; "
        "commands past it are refused until the world has taken them", low=1,
        high=1_000_000,
    )
    max_angel_requests: int = setting(
        8, "/ability requests waiting for the angel at most; more are refused until it "
        "has answered", low=1, high=10_000,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class WebConfig:
    """The web viewer and telemetry API, served by the running world. Writes (commands,
    training, /agents) always need the access token; docs/api.md, "Security"."""

    enabled: bool = setting(
        True, "serve the viewer and the API while the world runs (a --ticks or --until run "
        "serves only with --web)",
    )
    host: str = setting(
        "127.0.0.1", "address to listen on; beyond loopback, reads need the token too unless "
        "web.public_reads",
    )
    port: int = setting(8765, "TCP port (0: any free port, printed at start-up)", low=0,
                        high=65535)
    token_env: str = setting(
        "", "environment variable holding the access token; '' makes a new token each run, "
        "kept in a file only you can read (web.runtime_dir) and shown only on a terminal",
    )
    runtime_dir: str = setting(
        "", "folder of the file that holds a generated token (web-PORT.json, mode 0600, "
        "removed at exit); '' for $AGENT_WORLD_RUNTIME_DIR, else $XDG_RUNTIME_DIR/agent-world, "
        "else ~/.local/share/agent-world/runtime",
    )
    allowed_hosts: tuple[str, ...] = setting(
        (), "host names a request may name in its Host header besides the address served "
        "(and localhost on loopback); anything else is refused with 403, so a DNS-rebinding "
        "page gets nothing; ['*'] takes any name (only behind a proxy that checks it)",
    )
    public_reads: bool = setting(
        False, "beyond loopback, let anyone who reaches the port read (GET /api/..., /ws) "
        "without the token; on loopback reads are open anyway",
    )
    read_only: bool = setting(False, "refuse every write (commands) over the web")
    ring_events: int = setting(
        5000, "recent events kept in memory for /api/events (older ones come from the save "
        "folder's event log)", low=100, high=1_000_000,
    )
    max_connections: int = setting(
        256, "open connections at once, HTTP and WebSocket (lowered at start-up to leave the "
        "world room within the process's limit of open files); past it the longest-idle "
        "connection gives way, or the newcomer gets 503", low=4, high=100_000,
    )
    max_connections_per_address: int = setting(
        64, "open connections from one client address at once (the same rule past it)",
        low=2, high=100_000,
    )
    idle_timeout_s: float = setting(
        30.0, "a connection with no request under way for this long is closed (one that "
        "sends nothing, a keep-alive between requests, a client not taking its answer)",
        low=0.05, high=3600,
    )
    header_timeout_s: float = setting(
        10.0, "a request's head and body must arrive within this many seconds of its first "
        "byte, or the connection is closed (slowloris)", low=0.05, high=3600,
    )
    max_clients: int = setting(64, "WebSocket clients of /ws at once; more are refused", low=1,
                               high=10_000)
    subscribe_within_s: float = setting(
        10.0, "a /ws client that has not subscribed this long after connecting (or after "
        "unsubscribing) is closed, so idle clients cannot hold the places", low=0.05,
        high=3600,
    )
    messages_per_s: float = setting(
        10.0, "messages one /ws or /ws/train/ID client may send per second on average "
        "(bursts of twice that); a client over it is told so and disconnected", low=0.1,
        high=10_000,
    )
    train_max_ticks: int = setting(
        50_000, "longest episode a training run started over the web (POST /api/train) may "
        "have, its own ticks or its scenario's; the command line takes up to 10,000,000",
        low=1, high=10**7,
    )
    client_queue: int = setting(
        8, "frames waiting for one WebSocket client at most; past it, its frames are "
        "coalesced into a fresh keyframe", low=2, high=1000,
    )
    slow_client_s: float = setting(
        10.0, "a WebSocket client that takes no frame for this long is closed with a reason",
        low=0.5, high=3600,
    )
    play_idle_s: float = setting(
        300.0, "a played agent whose player gives it no order (/act, /talk) for this long "
        "goes back to its own brain (docs/agents.md, \"Chat and play\")", low=1.0,
        high=86_400,
    )
    frame_budget: float = setting(
        0.05, "share of the main thread's time the live feed may spend building frames "
        "for the viewer; past it frames come less often", low=0.001, high=1.0,
    )
    report_interval_s: float = setting(
        60.0, "malformed HTTP requests and refused connections are counted; the world log "
        "gets one line about them at most this often", low=0.1, high=86_400,
    )

    def __post_init__(self) -> None:
        for name in self.allowed_hosts:
            if name != "*" and not _HOST.fullmatch(name.lower().rstrip(".")):
                raise ConfigError(
                    f"web.allowed_hosts: {name!r} is not a host name (letters, digits, '-' "
                    "and '.', or an IP address, without a scheme or a port), e.g. "
                    "['myhost.lan'], or ['*'] for any")


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteConfig:
    """Agents played by programs in any language over the web server's /agents WebSocket
    (docs/agents.md): a client claims or spawns agents and answers their observations."""

    enabled: bool = setting(
        True, "take external agents on /agents while the web server runs (it needs the web "
        "token, or the one printed at start-up when web.token_env is unset)",
    )
    max_clients: int = setting(16, "external-agent connections at once; more are refused",
                               low=1, high=10_000)
    auth_within_s: float = setting(
        10.0, "a connection that has not authenticated this long after connecting is closed",
        low=0.05, high=3600,
    )
    max_agents_per_client: int = setting(
        100, "agents one connection may hold: those it claims, plus those spawned from its "
        "address that still live and no one claims (a released agent counts until it dies)",
        low=1, high=100_000,
    )
    spawns_per_hour: int = setting(
        1000, "agents the clients of one address may spawn in any hour", low=1,
        high=10_000_000,
    )
    messages_per_s: int = setting(
        50, "messages one connection may send per second on average (bursts of twice that); "
        "a client over it is told so, then disconnected", low=1, high=100_000,
    )


