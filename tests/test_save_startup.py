"""Start-up against a save folder that cannot be written: one line naming the problem and
the fix (exit 2), no traceback, and no half-made world folder left behind.

The mechanisms are real: a full disk is a tmpfs of a few pages mounted in a private mount
namespace (root only) or a file size limit (RLIMIT_FSIZE, any user: writes past it fail with
EFBIG); a read-only folder is chmod, run without the capabilities that let root write
anyway (tests often run as root, for whom chmod alone stops nothing)."""

from __future__ import annotations

import ctypes
import errno
import hashlib
import math
import os
import resource
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from agent_world.config import Config
from agent_world.persistence import SaveFolder, open_world
from tests.persistence_helpers import run_session

ROOT = Path(__file__).resolve().parent.parent
PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2


def _config(tmp_path: Path, saves: Path) -> tuple[Config, Path]:
    cfg = Config().replace(world={"size": [32, 32], "starting_agents": 8},
                           paths={"saves": str(saves), "logs": str(tmp_path / "logs")},
                           log={"echo": False})
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg.to_dict()))
    return cfg, path


def _start(tmp_path: Path, config: Path, *, preexec: Callable[[], None] | None = None,
           prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, str(ROOT / "main.py"), "--config", str(config),
         "--headless", "--ticks", "3"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
        stdin=subprocess.DEVNULL, preexec_fn=preexec)


def _one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ") and "Traceback" not in done.stderr
    return lines[0]


def _fingerprint(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".lock"}


# -- read-only folders ----------------------------------------------------------------------


def _without_root_overrides() -> None:
    """Runs in the child before exec: drop the capabilities that let root write where the
    permissions say no (from the bounding set, so the program never gets them)."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Callable[[Path], None]]:
    """Makes folders read-only for the program (chmod), skipping the test where this user
    can write regardless; permissions are restored afterwards."""
    probe = tmp_path / "probe"
    probe.mkdir()
    probe.chmod(0o555)
    try:
        tried = subprocess.run([sys.executable, "-c",
                                f"open({str(probe / 'x')!r}, 'w')"],
                               capture_output=True, preexec_fn=_without_root_overrides,
                               check=False)
    except subprocess.SubprocessError as exc:
        pytest.skip(f"cannot drop root's write capabilities here ({exc})")
    finally:
        probe.chmod(0o755)
    if tried.returncode == 0:
        pytest.skip("this user writes into a chmod 555 folder even without "
                    "CAP_DAC_OVERRIDE; no real read-only folder to test with")
    changed: list[Path] = []

    def make(path: Path) -> None:
        for p in [path, *path.rglob("*")]:
            p.chmod(p.stat().st_mode & ~0o222)
            changed.append(p)

    yield make
    for p in changed:
        p.chmod(p.stat().st_mode | 0o200)


def test_a_read_only_saves_folder(tmp_path: Path, read_only: Callable[[Path], None]) -> None:
    saves = tmp_path / "saves"
    saves.mkdir()
    _cfg, config = _config(tmp_path, saves)
    read_only(saves)
    line = _one_error_line(_start(tmp_path, config, preexec=_without_root_overrides))
    assert line == (f"error: cannot create the folder of world 'default': {saves} is not "
                    f"writable (Permission denied writing {saves / 'default'}); make it "
                    f"writable (chmod -R u+w {saves}) or set paths.saves to a folder you "
                    "can write")
    assert list(saves.iterdir()) == []


@pytest.mark.parametrize("what", ["the folder", "everything"])
def test_a_read_only_world_folder(tmp_path: Path, read_only: Callable[[Path], None],
                                  what: str) -> None:
    saves = tmp_path / "saves"
    cfg, config = _config(tmp_path, saves)
    run_session(cfg, 20)
    root = saves / "default"
    before = _fingerprint(root)
    if what == "everything":
        read_only(root)
    else:
        read_only(root)
        (root / ".lock").chmod(0o644)  # a lock file that can still be opened
    line = _one_error_line(_start(tmp_path, config, preexec=_without_root_overrides))
    assert f"{root} is not writable (Permission denied writing {root}/" in line
    assert f"make it writable (chmod -R u+w {root})" in line
    assert _fingerprint(root) == before


def test_paths_saves_pointing_at_a_file(tmp_path: Path) -> None:
    saves = tmp_path / "saves.txt"
    saves.write_text("not a folder")
    _cfg, config = _config(tmp_path, saves)
    line = _one_error_line(_start(tmp_path, config))
    assert line == (f"error: paths.saves = {str(saves)!r} is a file, not a folder; set "
                    "paths.saves to a folder (it is created if missing) or move the file "
                    "away")
    below = tmp_path / "saves.txt" / "worlds"
    _cfg, config = _config(tmp_path, below)
    line = _one_error_line(_start(tmp_path, config))
    assert f"a part of {below} is a file, not a folder" in line


# -- a full disk ------------------------------------------------------------------------------


def _file_size_limit(limit: int) -> Callable[[], None]:
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past it fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_a_file_size_limit_at_the_first_snapshot(tmp_path: Path) -> None:
    saves = tmp_path / "saves"
    _cfg, config = _config(tmp_path, saves)
    line = _one_error_line(_start(tmp_path, config, preexec=_file_size_limit(2000)))
    root = saves / "default"
    assert line.startswith(f"error: cannot create world 'default' in {root}: the file size "
                           f"limit refused a write (File too large writing "
                           f"{root / 'snapshots' / '0000000000.json.gz'}); raise the limit")
    assert list(saves.iterdir()) == []  # the unfinished folder was removed
    again = _start(tmp_path, config)  # and the next try works
    assert again.returncode == 0, again.stderr
    assert "(new world)" in again.stderr


def _can_mount_tmpfs(tmp_path: Path) -> str | None:
    if shutil.which("unshare") is None:
        return "unshare is not installed"
    target = tmp_path / "mount-probe"
    target.mkdir()
    done = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                           f"mount -t tmpfs -o size=8k tmpfs {target}"],
                          capture_output=True, text=True, check=False)
    return None if done.returncode == 0 else (
        f"cannot mount a tmpfs in a private namespace: {done.stderr.strip()}")


def _pages(size: int) -> int:
    return math.ceil(size / resource.getpagesize())


@pytest.mark.parametrize("fails_at", ["world_state.json", "meta.json"])
def test_a_full_disk_at_start_up(tmp_path: Path, fails_at: str) -> None:
    """A real full disk: a tmpfs with room for exactly the files written before
    ``fails_at``. The world folder that could not be made is removed, and once there is
    room the next start works."""
    problem = _can_mount_tmpfs(tmp_path)
    if problem:
        pytest.skip(problem)
    # What a new world writes, in order: the lock (its pid), the first snapshot,
    # world_state.json, meta.json. Measure it on a normal disk (the same world, the same
    # bytes), then give the tmpfs room for what comes before ``fails_at``.
    measure = tmp_path / "measure"
    cfg, _path = _config(measure.parent, measure)
    opened = open_world(cfg)
    folder = opened.folder
    assert isinstance(folder, SaveFolder)
    before = [folder.root / ".lock", folder.snapshot_path(0), folder.state_path,
              folder.meta_path]
    sizes = [1] + [p.stat().st_size for p in before[1:]]
    opened.close()
    room = sum(_pages(s) for s in sizes[:[p.name for p in before].index(fails_at)])
    disk = tmp_path / "disk"
    disk.mkdir()
    saves = disk / "saves"
    _cfg, config = _config(tmp_path, saves)
    command = (f"{sys.executable} {ROOT / 'main.py'} --config {config} --headless --ticks 3")
    script = (f"mount -t tmpfs -o size={room * resource.getpagesize()} tmpfs {disk} && "
              f"{command} 2> {tmp_path / 'first.err'}; echo $? > {tmp_path / 'first.rc'}; "
              f"ls -A {saves} > {tmp_path / 'left.txt'}; "
              f"mount -o remount,size=4m {disk} && "
              f"{command} 2> {tmp_path / 'second.err'}; echo $? > {tmp_path / 'second.rc'}")
    subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                   cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, timeout=240,
                   check=False)
    first = subprocess.CompletedProcess([], int((tmp_path / "first.rc").read_text()), "",
                                        (tmp_path / "first.err").read_text())
    line = _one_error_line(first)
    root = saves / "default"
    assert line.startswith(f"error: cannot create world 'default' in {root}: the disk "
                           f"holding {root} is full ({os.strerror(errno.ENOSPC)} writing "
                           f"{root / fails_at}); free some space there")
    assert (tmp_path / "left.txt").read_text() == ""  # no half-made folder
    assert (tmp_path / "second.rc").read_text().strip() == "0", (
        tmp_path / "second.err").read_text()
    assert "(new world)" in (tmp_path / "second.err").read_text()
