"""The real program with its console: in a real terminal (tmux), and with stdin a pipe.

Nothing here measures time. Each wait polls for what should appear, with a generous limit
that only matters when something is broken (then the failure shows the screen or output).
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TypeVar

import pytest

from agent_world.config import load_config
from agent_world.core.world import World

T = TypeVar("T")
ROOT = Path(__file__).resolve().parent.parent
MAIN = ROOT / "main.py"
TMUX = shutil.which("tmux")
WAIT_S = 60.0


def write_config(tmp_path: Path, *, world: str = "size: [32, 32], starting_agents: 6, seed: 5",
                 echo: bool = False) -> Path:
    """A small world's config; a seek point on every 100th tick, whatever the ticks cost."""
    path = tmp_path / "config.yaml"
    path.write_text(
        f"world: {{{world}}}\n"
        f"paths: {{logs: '{tmp_path / 'logs'}', saves: '{tmp_path / 'saves'}'}}\n"
        f"log: {{echo: {'true' if echo else 'false'}}}\n"
        f"web: {{runtime_dir: '{tmp_path / 'runtime'}'}}\n"
        "persistence: {seek_interval_ticks: 100, seek_target_ms: 0}\n",
        encoding="utf-8",
    )
    return path


def poll(check: Callable[[], T | None], describe: Callable[[], str],
         timeout: float = WAIT_S) -> T:
    """Call ``check()`` until it returns something truthy; fail showing ``describe()``."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting; last seen:\n{describe()}")
        time.sleep(0.05)


# -- in a terminal ---------------------------------------------------------------------------


class Terminal:
    """A detached tmux session on a private server, running one command."""

    def __init__(self) -> None:
        assert TMUX is not None
        self.base = [TMUX, "-L", f"agent-world-test-{uuid.uuid4().hex[:12]}", "-f", os.devnull]

    def tmux(self, *args: str) -> str:
        done = subprocess.run([*self.base, *args], capture_output=True, text=True,
                              check=True, timeout=30)
        return done.stdout

    def start(self, command: str, *, width: int = 150, height: int = 50) -> None:
        self.tmux("new-session", "-d", "-s", "world", "-x", str(width), "-y", str(height),
                  command)

    def type(self, text: str, *keys: str) -> None:
        self.tmux("send-keys", "-t", "world", "-l", text)
        for key in keys:
            self.tmux("send-keys", "-t", "world", key)

    def enter(self, line: str) -> None:
        self.type(line, "Enter")

    def screen(self) -> str:
        """The visible screen and its scrollback, wrapped lines joined."""
        return self.tmux("capture-pane", "-p", "-J", "-S", "-1000", "-t", "world")

    def wait_for(self, pattern: str) -> re.Match[str]:
        regex = re.compile(pattern, re.MULTILINE)
        return poll(lambda: regex.search(self.screen()), self.screen)

    def close(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True, check=False,
                       timeout=30)


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    term = Terminal()
    yield term
    term.close()


def free_tile(config_path: Path) -> tuple[int, int]:
    """A tile no wall, water or object will ever cover in this world: built in-process from
    the same seed (only objects block, and the console spawns none here)."""
    world = World.create(load_config(config_path))
    try:
        for y in range(5, world.terrain.height):
            for x in range(5, world.terrain.width):
                if not world.terrain.is_blocked(x, y) and not world.ground.objects.at(x, y):
                    return x, y
    finally:
        world.close()
    raise AssertionError("no free tile")


@pytest.mark.skipif(TMUX is None, reason="needs tmux")
def test_the_console_in_a_real_terminal(tmp_path: Path, terminal: Terminal) -> None:
    config = write_config(tmp_path)
    exit_file = tmp_path / "exit_code"
    terminal.start(f"cd '{tmp_path}' && '{sys.executable}' '{MAIN}' --config '{config}'; "
                   f"echo $? > '{exit_file}'; sleep 600")
    # On a terminal the banner shows the web's token itself (in a file or pipe only where
    # it is kept: tests/test_web_hostile.py).
    token = terminal.wait_for(r"token:\s+([A-Za-z0-9_-]{43})\s+\(commands").group(1)
    kept = next((tmp_path / "runtime").glob("web-*.json")).read_text(encoding="utf-8")
    assert f'"token": "{token}"' in kept
    terminal.wait_for(r"^world>")
    terminal.wait_for(r"tick \d+ \| running \| 10 Hz \| \d+ agents \| p99 ")  # the status line

    terminal.enter("/pause")
    paused = int(terminal.wait_for(r"paused at tick (\d+);").group(1))
    terminal.wait_for(rf"tick {paused} \| PAUSED \| 10 Hz")

    terminal.enter("/step 5")
    terminal.wait_for(rf"stepped 5 ticks: tick {paused} -> {paused + 5} \(paused\)")
    terminal.enter("/stats")
    stats_tick = int(terminal.wait_for(r"ticks:\s+tick (\d+) · state paused").group(1))
    assert stats_tick == paused + 5, "exactly five ticks while paused"

    x, y = free_tile(config)
    terminal.enter(f"/spawn agent Zed {x} {y} personality=trader")
    terminal.wait_for(rf"spawning agent 'Zed' at \({x}, {y}\) \(personality=trader\)")
    terminal.enter("/step")
    terminal.wait_for(rf"stepped 1 tick: tick {paused + 5} -> {paused + 6}")

    terminal.enter("/list agents")
    terminal.wait_for(r"^\d+\s+Zed\s+trader\s+builtin\s")

    terminal.wait_for(r"^world>$")  # the next prompt is up
    # Tab completes the command, then the name. Completion runs asynchronously, so wait
    # for each one to show, as a person would, before typing on.
    terminal.type("/deb", "Tab")
    terminal.wait_for(r"^world> /debug\s*$")
    terminal.type(" Ze", "Tab")
    terminal.wait_for(r"^world> /debug Zed\s*$")
    terminal.type("", "Enter")
    terminal.wait_for(r"^Zed#\d+: agent, trader, brain builtin")
    terminal.wait_for(r"^  Position: x=\d+ y=\d+$")
    terminal.wait_for(r"^  Needs: hunger=")

    terminal.enter("/bogus 1 2")
    terminal.wait_for(r"^error: unknown command '/bogus' \(usage: /help \[COMMAND\]")

    terminal.enter("/quit")
    poll(lambda: (exit_file.exists() and exit_file.read_text().strip()) or None,
         terminal.screen)
    assert exit_file.read_text().strip() == "0"
    screen = terminal.screen()
    assert f"stopped at tick {paused + 6} " in screen
    assert "Traceback" not in screen
    history = (tmp_path / "logs" / "console_history").read_text(encoding="utf-8")
    assert "+/spawn agent Zed" in history and "+/quit" in history


@pytest.mark.skipif(TMUX is None, reason="needs tmux")
def test_a_served_replay_has_the_console_with_its_own_commands(
        tmp_path: Path, terminal: Terminal) -> None:
    config = write_config(tmp_path)
    done = run_main(tmp_path, "--headless", "--ticks", "250", stdin="")
    assert done.returncode == 0, done.stderr
    exit_file = tmp_path / "exit_code"
    terminal.start(f"cd '{tmp_path}' && '{sys.executable}' '{MAIN}' replay saves/default "
                   f"--serve --config '{config}'; echo $? > '{exit_file}'; sleep 600")
    terminal.wait_for(r"replaying world 'default' .*ticks 0\.\.250, recorded at 10 Hz; "
                      r"paused at tick 0")
    terminal.wait_for(r"viewer: http://127\.0\.0\.1:\d+/")
    terminal.wait_for(r"^world>")

    terminal.enter("/seek 150")
    terminal.wait_for(r"^at tick 150 \(from the seek point of tick 100\)")
    terminal.enter("/step 3")
    terminal.wait_for(r"stepped 3 ticks: tick 150 -> 153")
    terminal.enter("/spawn agent Eve")
    terminal.wait_for(r"^error: a recorded world changes only as it was recorded; /fork NAME")
    terminal.enter("/speed 500")
    terminal.wait_for(r"^error: X must be from 0\.25 to 100, got 500")
    terminal.type("/see", "Tab")  # the replay's own commands complete too
    terminal.wait_for(r"^world> /seek\s*$")
    terminal.type("", "C-u")

    terminal.enter("/quit")
    poll(lambda: (exit_file.exists() and exit_file.read_text().strip()) or None,
         terminal.screen)
    assert exit_file.read_text().strip() == "0"
    assert "Traceback" not in terminal.screen()


@pytest.mark.skipif(TMUX is None, reason="needs tmux")
def test_log_lines_print_above_a_half_typed_command(tmp_path: Path, terminal: Terminal) -> None:
    # A crowded map of aggressive agents: the world log has news every few ticks.
    config = write_config(tmp_path, echo=True, world="size: [24, 24], starting_agents: 40, "
                          "seed: 11, personality_mix: {aggressive: 3, trader: 1}")
    terminal.start(f"cd '{tmp_path}' && '{sys.executable}' '{MAIN}' --config '{config}'; "
                   "sleep 600", height=30)
    terminal.wait_for(r"^world>")
    terminal.type("/stat")
    terminal.wait_for(r"^world> /stat$")
    log_line = re.compile(r"^\d{4}-\d\d-\d\d \S+ t=(\d+) ", re.MULTILINE)

    def latest_logged_tick() -> int:
        return max((int(t) for t in log_line.findall(terminal.screen())), default=0)

    typed_at = latest_logged_tick()
    poll(lambda: latest_logged_tick() > typed_at or None, terminal.screen)  # news arrived
    screen = terminal.screen()
    prompts = [line for line in screen.splitlines() if line.startswith("world>")]
    assert prompts[-1] == "world> /stat", "the half-typed command is still whole"
    assert all(line.startswith(("world>", "tick ")) or "world>" not in line
               for line in screen.splitlines()), "no log text ran into the prompt"
    terminal.type("s", "Enter")  # finish the command typed before the news
    terminal.wait_for(r"^ticks:\s+tick \d+ · state running")
    terminal.type("", "C-d")
    terminal.wait_for(r"^stopped at tick \d+ ")


@pytest.mark.skipif(TMUX is None, reason="needs tmux")
def test_ctrl_c_clears_a_line_cancels_a_step_and_stops_on_an_empty_line(
        tmp_path: Path, terminal: Terminal) -> None:
    config = write_config(tmp_path)
    exit_file = tmp_path / "exit_code"
    terminal.start(f"cd '{tmp_path}' && '{sys.executable}' '{MAIN}' --config '{config}'; "
                   f"echo $? > '{exit_file}'; sleep 600")
    terminal.wait_for(r"^world>")
    terminal.type("/spawn agent Half")
    terminal.wait_for(r"^world> /spawn agent Half$")
    terminal.type("", "C-c")  # a half-typed line is cleared, as in a shell
    terminal.wait_for(r"^world>\s*$")
    terminal.wait_for(r"\| running \|")
    assert not exit_file.exists(), "Ctrl-C on a typed line must not stop the world"

    terminal.enter("/pause")
    terminal.wait_for(r"paused at tick \d+;")
    terminal.enter("/step 100000")
    terminal.wait_for(r"stepping: [\d,]+ of 100,000 ticks done \(tick \d+\); Ctrl-C cancels")
    terminal.type("", "C-c")  # cancels the step, not the world
    terminal.wait_for(r"step cancelled after \d+ of 100000 ticks")  # after an echoed ^C
    terminal.wait_for(r"^world>\s*$")
    terminal.enter("/stats")
    terminal.wait_for(r"ticks:\s+tick \d+ · state paused")
    assert not exit_file.exists()

    terminal.type("", "C-c")  # on an empty line: stop
    poll(lambda: (exit_file.exists() and exit_file.read_text().strip()) or None,
         terminal.screen)
    assert exit_file.read_text().strip() == "0"
    assert "Traceback" not in terminal.screen()


# -- without a terminal ----------------------------------------------------------------------


class Lines:
    """Collects a child's output lines on a thread, so waiting never blocks the test."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: list[str] = []
        self._queue: queue.SimpleQueue[str] = queue.SimpleQueue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line.rstrip("\n"))

    def _drain(self) -> None:
        while not self._queue.empty():
            self.lines.append(self._queue.get())

    def wait_for(self, pattern: str) -> re.Match[str]:
        regex = re.compile(pattern)

        def check() -> re.Match[str] | None:
            self._drain()
            return next((m for m in map(regex.search, self.lines) if m), None)

        return poll(check, lambda: "\n".join(self.lines))


def start(tmp_path: Path, *args: str, stdin: int | None = subprocess.PIPE) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(MAIN), "--config", str(write_config(tmp_path)),
                             *args], cwd=tmp_path, stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def run_main(tmp_path: Path, *args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(MAIN), "--config", str(write_config(tmp_path)),
                           *args], input=stdin, capture_output=True, text=True, cwd=tmp_path,
                          check=False, timeout=WAIT_S)


def test_headless_commands_from_a_pipe(tmp_path: Path) -> None:
    done = run_main(tmp_path, "--headless", stdin="/pause\n/step 3\n/stats\n/quit\n")
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    tick = int(re.fullmatch(r"paused at tick (\d+); .*", out[0]).group(1))  # type: ignore[union-attr]
    assert out[1] == f"stepped 3 ticks: tick {tick} -> {tick + 3} (paused)"
    assert out[2].startswith(f"ticks:      tick {tick + 3} · state paused")
    assert any(line.startswith("  events:") for line in out)  # a reply's further lines
    assert out[-1] == f"stopping at tick {tick + 3}"
    assert f"stopped at tick {tick + 3} " in done.stderr
    assert "Traceback" not in done.stderr


def test_end_of_stdin_does_not_stop_the_world(tmp_path: Path) -> None:
    proc = start(tmp_path, "--headless")
    try:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        out, err = Lines(proc.stdout), Lines(proc.stderr)
        proc.stdin.write("/stats\n")
        proc.stdin.close()
        seen = int(out.wait_for(r"^ticks:\s+tick (\d+) · state running").group(1))
        err.wait_for(r"end of stdin; the world runs on")
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1.0)  # still alive after the end of its input
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=WAIT_S) == 0
        stopped = int(err.wait_for(r"^stopped at tick (\d+) ").group(1))
        assert stopped > seen, "the world kept ticking after stdin ended"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_exit_on_eof_stops_the_world_when_input_ends(tmp_path: Path) -> None:
    done = run_main(tmp_path, "--headless", "--exit-on-eof", stdin="/pause\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("paused at tick ")
    assert "stopping (--exit-on-eof)" in done.stderr


def test_stdin_from_dev_null_just_runs(tmp_path: Path) -> None:
    proc = start(tmp_path, "--headless", "--exit-on-eof", stdin=subprocess.DEVNULL)
    try:
        assert proc.stderr is not None
        err = Lines(proc.stderr)
        err.wait_for(r"^  Ctrl-C stops cleanly\.$")  # no console: nothing to read
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=WAIT_S) == 0
        err.wait_for(r"^stopped at tick \d+ ")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_ticks_run_never_waits_for_stdin(tmp_path: Path) -> None:
    proc = start(tmp_path, "--headless", "--ticks", "30")  # stdin: an open, silent pipe
    try:
        assert proc.wait(timeout=WAIT_S) == 0
        assert proc.stdout is not None
        last = proc.stdout.read().splitlines()[-1]
        assert last.startswith('{"world":"default","seed":5,"tick":30,')
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
