"""The web viewer and telemetry API, served by a running world (``docs/api.md``)."""

from agent_world.web.server import WebError, WebServer, check_web, web_token

__all__ = ["WebError", "WebServer", "check_web", "web_token"]
