"""Replay (verify, --to, --playback), divergence reports, and fork."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from agent_world.cli.replay import run_replay
from agent_world.config import Config
from agent_world.core.world import World
from agent_world.persistence import SaveError, SaveFolder, fork_world, open_world
from tests.persistence_helpers import records, reference_hash, run_session, saving_config

ROOT = Path(__file__).resolve().parent.parent


def _agents(cfg: Config) -> list[int]:
    world = World.create(cfg)
    try:
        return sorted(world.population.names.values())
    finally:
        world.close()


_A = _agents(saving_config(Path("/unused")))
INPUTS = {3: [("spawn", {"kind": "agent", "name": "Visitor", "personality": "aggressive"})],
          30: [("spawn", {"kind": "gold", "qty": 30})],
          55: [("give", {"target": _A[0], "item": "sword", "qty": 1}),
               ("kill", {"target": _A[1]})],
          90: [("plan", {"agent": _A[2], "actions": [{"name": "wander", "args": {"ticks": 20}},
                                                     {"name": "rest", "args": {}}]})]}


def _saved(tmp_path: Path, ticks: int = 200) -> Path:
    run_session(saving_config(tmp_path), ticks, inputs=INPUTS)
    return tmp_path / "saves" / "w"


def test_replay_of_a_run_with_console_inputs_verifies(tmp_path: Path, capsys) -> None:
    folder = _saved(tmp_path)
    assert run_replay(folder, saving_config(tmp_path), to=None, playback=None) == 0
    out = capsys.readouterr().out
    assert out.startswith("OK: replayed ticks 1..200 (200 ticks, 5 inputs, 20 state hashes "
                          "verified)")
    assert "ticks/s" in out and "x real time" in out


def test_replay_to_a_tick_prints_that_ticks_hash(tmp_path: Path, capsys) -> None:
    cfg = saving_config(tmp_path)
    folder = _saved(tmp_path)
    assert run_replay(folder, cfg, to=77, playback=None) == 0
    out = capsys.readouterr().out
    assert f"tick 77 state_hash {reference_hash(cfg, 77, INPUTS)}" in out
    assert run_replay(folder, cfg, to=900, playback=None) == 2
    assert "ends at tick 200" in capsys.readouterr().err


def test_replay_to_a_saved_tick_says_it_was_loaded_not_replayed(tmp_path: Path,
                                                               capsys) -> None:
    # Issue 29: `replay NAME --to 3000` on a world past it printed "OK: replayed no ticks
    # ... 0.0x real time": the state was a saved one, loaded, and nothing was replayed.
    cfg = saving_config(tmp_path)
    folder = _saved(tmp_path)
    assert run_replay(folder, cfg, to=100, playback=None) == 0
    lines = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"OK: tick 100 is the (snapshot|seek point) of tick 100 \(0000000100"
                        r"\.json\.gz\), loaded and checked against its own state hash; no tick "
                        r"needed replaying \(--from-start replays the log up to it from the "
                        r"first snapshot, verifying it\)", lines[0]), lines
    assert lines[1:] == [f"tick 100 state_hash {reference_hash(cfg, 100, INPUTS)}"]
    assert run_replay(folder, cfg, to=0, playback=None) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "OK: tick 0 is the world's first snapshot, loaded and checked against its own state "
        "hash; no tick needed replaying")


def test_playback_prints_the_world_log(tmp_path: Path, capsys) -> None:
    folder = _saved(tmp_path, ticks=60)
    assert run_replay(folder, saving_config(tmp_path), to=None, playback=1000.0) == 0
    out = capsys.readouterr().out
    assert "t=0000004 SPAWN    Visitor#" in out
    assert "t=0000056 DEATH" in out and "struck down by the operator" in out


def test_a_tampered_input_is_caught_at_the_first_check_with_the_field(tmp_path: Path,
                                                                      capsys) -> None:
    folder = _saved(tmp_path)
    chunk = folder / "events" / "0000000-0000249.jsonl"
    lines = chunk.read_bytes().splitlines(keepends=True)
    for i, raw in enumerate(lines):
        rec = orjson.loads(raw)
        if rec["kind"] == "input" and rec["data"].get("kind") == "gold":
            rec["data"]["qty"] = 31
            lines[i] = orjson.dumps(rec) + b"\n"
    chunk.write_bytes(b"".join(lines))
    assert run_replay(folder, saving_config(tmp_path), to=None, playback=None) == 1
    err = capsys.readouterr().err
    assert err.startswith("DIVERGED at tick 40:")
    assert "compared at snapshot tick 100" in err
    assert "first difference (compared at snapshot tick 100): entity #" in err


def test_fork_starts_a_new_world_and_leaves_the_original_untouched(tmp_path: Path) -> None:
    cfg = saving_config(tmp_path)
    source = _saved(tmp_path)

    def fingerprint() -> dict[str, str]:
        return {str(p.relative_to(source)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(source.rglob("*")) if p.is_file()}

    before = fingerprint()
    opened = fork_world(SaveFolder.open(source), 120, "branch", cfg)
    assert opened.world.tick == 120
    assert opened.world.state_hash() == reference_hash(cfg, 120, INPUTS)
    fork_cfg = cfg.replace(world={"name": "branch"})
    run_session(fork_cfg, 50, opened=opened,
                inputs={130: [("spawn", {"kind": "agent", "name": "Forked"})]})
    assert fingerprint() == before
    branch = tmp_path / "saves" / "branch"
    meta = orjson.loads((branch / "meta.json").read_bytes())
    assert meta["origin"]["tick"] == 120 and meta["origin"]["world"] == "w"
    assert meta["origin"]["state_hash"] == reference_hash(cfg, 120, INPUTS)
    assert SaveFolder(branch).history()[0][0] == 120
    assert run_replay(branch, fork_cfg, to=None, playback=None) == 0
    resumed = open_world(fork_cfg)
    assert resumed.world.tick == 170 and resumed.world.population.find("Forked") is not None
    assert min(r["tick"] for r in records(branch)) == 120


def test_a_fork_and_a_resumed_world_record_the_seed_they_have_in_both_places(
        tmp_path: Path) -> None:
    # Issue 29: a fork's meta.json had seed 913 beside config.world.seed 42 (the seed of
    # the run's config, which a world made earlier does not use).
    made = saving_config(tmp_path).replace(world={"seed": 913})
    run_session(made, 50)
    run_config = saving_config(tmp_path)  # seed 42: a config that did not make the world
    assert run_config.world.seed == 42
    opened = fork_world(SaveFolder.open(tmp_path / "saves" / "w"), 20, "branch", run_config)
    run_session(run_config.replace(world={"name": "branch"}), 5, opened=opened)
    run_session(run_config, 5)  # the original, resumed under the seed-42 config
    for name in ("branch", "w"):
        meta = SaveFolder.open(tmp_path / "saves" / name).read_meta()
        assert meta["seed"] == meta["config"]["world"]["seed"] == 913, (name, meta["seed"])
    branch = SaveFolder.open(tmp_path / "saves" / "branch").read_meta()
    assert branch["config"]["world"]["name"] == "branch" and branch["origin"]["world"] == "w"


def test_fork_past_the_end_of_the_log_or_into_an_existing_world_is_refused(
        tmp_path: Path) -> None:
    cfg = saving_config(tmp_path)
    source = SaveFolder.open(_saved(tmp_path))
    with pytest.raises(SaveError, match="ends at tick 200"):
        fork_world(source, 5000, "late", cfg)
    with pytest.raises(SaveError, match="already exists"):
        fork_world(source, 10, "w", cfg)


def _main(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False)


def test_replay_command_line(tmp_path: Path) -> None:
    folder = _saved(tmp_path, ticks=80)
    done = _main("replay", str(folder), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("OK: replayed ticks 1..80")
    missing = _main("replay", str(tmp_path / "nope"), cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.startswith("error: ") and "does not exist" in missing.stderr
    no_to = _main("replay", str(folder), "--fork", "x", cwd=tmp_path)
    assert no_to.returncode == 2 and "--fork needs --to" in no_to.stderr


def test_a_run_steered_from_the_console_replays_exactly(tmp_path: Path) -> None:
    """Commands typed into the real program (piped stdin) are logged inputs; replay
    reproduces the run with them."""
    config = tmp_path / "config.yaml"
    config.write_text(
        "world: {name: steered, size: [32, 32], starting_agents: 6, tick_rate: 50}\n"
        f"paths: {{saves: {tmp_path / 'saves'}, logs: {tmp_path / 'logs'}}}\n"
        "log: {echo: false}\n")
    commands = ("/pause\n/spawn agent Zed\n/step 1\n/give Zed sword 2\n/step 2\n"
                "/spawn gold qty=5\n/resume\n/give Zed apple\n/quit\n")
    run = subprocess.run([sys.executable, str(ROOT / "main.py"), "--config", str(config)],
                         input=commands, cwd=tmp_path, capture_output=True, text=True,
                         timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    folder = tmp_path / "saves" / "steered"
    inputs = [r for r in records(folder) if r["kind"] == "input"]
    assert [r["type"] for r in inputs] == ["spawn", "give", "spawn", "give"]
    assert all(r["source"] == "console" for r in inputs)  # the last one too: /quit waits
    done = _main("replay", str(folder), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"{len(inputs)} inputs" in done.stdout
