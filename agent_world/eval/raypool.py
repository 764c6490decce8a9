"""Episodes as Ray tasks (``--ray auto|ADDRESS``; ``pip install 'agent-world[ray]'``).

Each episode is one task needing one CPU, run by whichever node Ray picks; the job and its
result are plain data, and the episodes' folders are absolute paths, so on one machine (or
a shared filesystem) every node writes where a local run would. Results are those of a
local run of the same seeds: an episode does not depend on where or when it runs.
"""

from __future__ import annotations

import socket
from collections.abc import Collection
from typing import Any

from agent_world.eval.jobs import Job, run_job

__all__ = ["RayError", "RayPool"]

CONNECT_TIMEOUT_S = 5


class RayError(RuntimeError):
    """No cluster to run on; the message says why and what to do."""


def _reachable(address: str) -> None:
    """Fail fast on an address nothing listens at (Ray itself waits minutes for one)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise RayError(f"--ray {address}: expected auto or HOST:PORT (the head's address, "
                       "as ray start --head prints it)")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise RayError(f"--ray {address}: cannot reach a Ray cluster there "
                       f"({exc.strerror or exc}); start one (ray start --head) or give its "
                       "address") from None


class RayPool:
    def __init__(self, address: str) -> None:
        try:
            import ray  # noqa: PLC0415 - optional
        except ImportError:
            raise RayError("--ray needs Ray: pip install 'agent-world[ray]' (or ray)") from None
        self.ray = ray
        if address != "auto":
            _reachable(address)
        try:
            ray.init(address=address, log_to_driver=False, ignore_reinit_error=True,
                     include_dashboard=False)
        except Exception as exc:  # ConnectionError, a bad address ...
            raise RayError(f"--ray {address}: cannot reach a Ray cluster there "
                           f"({type(exc).__name__}: {str(exc).splitlines()[0][:160]}); "
                           "start one (ray start --head) or give its address") from None
        self._task = ray.remote(num_cpus=1, max_retries=0)(run_job)

    def submit(self, job: Job) -> Any:
        return self._task.remote(job)

    def wait(self, handles: Collection[Any], timeout: float | None = None
             ) -> list[tuple[Any, dict[str, Any]]]:
        ready, _rest = self.ray.wait(list(handles), num_returns=1, timeout=timeout)
        out = []
        for ref in ready:
            try:
                out.append((ref, self.ray.get(ref)))
            except Exception as exc:  # the task's worker or node died
                out.append((ref, {"ok": False, "error": f"the Ray task failed "
                                                        f"({type(exc).__name__}: {exc})"}))
        return out

    def cancel(self, handles: Collection[Any]) -> None:
        for ref in handles:
            self.ray.cancel(ref, force=True)

    def close(self) -> None:
        self.ray.shutdown()
