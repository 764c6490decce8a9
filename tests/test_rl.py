"""The RL environments (issue 34 item 4): any scenario as a PettingZoo ParallelEnv and, for
one agent, a Gymnasium Env. They pass PettingZoo's and Gymnasium's own conformance checks;
an episode played through them is an ordinary save folder that replays; the same seed and
the same actions give the same world; rewards add up to the scenario's score; the action
set does what its labels say, and what is not possible now is masked and refused."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pettingzoo", reason="the rl extra is not installed (pip install -e '.[rl]')")
pytest.importorskip("gymnasium", reason="the rl extra is not installed (pip install -e '.[rl]')")

import gymnasium
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import parallel_api_test, parallel_seed_test

from agent_world import rl
from agent_world.cli.replay import run_replay
from agent_world.config import Config
from agent_world.contract.observation import observe
from agent_world.eval import built_in_names, load_scenario
from agent_world.eval.stage import Stage
from agent_world.rl.actions import plan_of
from tests.persistence_helpers import records

ROOT = Path(__file__).resolve().parent.parent
SHORT = 120  # ticks: a dozen steps of ten ticks


@pytest.fixture
def envs() -> Iterator[list[Any]]:
    """Envs made in a test, closed after it."""
    made: list[Any] = []
    yield made
    for env in made:
        env.close()


def _index(env: Any, label: str) -> int:
    return next(i for i in range(len(env.table)) if env.action_label(i) == label)


def _me(env: Any, name: str) -> Any:
    """The agent's own part of its observation now."""
    return observe(env.world, env.world.population.find(name)).me


def _masked_random(env: Any, observations: dict[str, Any], seed: int) -> dict[str, int]:
    for i, agent in enumerate(env.agents):
        env.action_space(agent).seed(seed + i)
    return {agent: int(env.action_space(agent).sample(mask=observations[agent]["action_mask"]))
            for agent in env.agents}


# -- the conformance checks of PettingZoo and Gymnasium ------------------------------------------


@pytest.mark.parametrize("scenario", built_in_names())
def test_every_built_in_scenario_passes_pettingzoos_parallel_api_test(scenario: str,
                                                                      envs: list[Any]) -> None:
    env = rl.parallel_env(scenario, ticks=SHORT)
    envs.append(env)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # PettingZoo warns of what it does not fail
        parallel_api_test(env, num_cycles=SHORT)


def test_pettingzoos_seed_test_passes() -> None:
    parallel_seed_test(lambda: rl.parallel_env("foraging", ticks=SHORT), num_cycles=SHORT)


@pytest.mark.parametrize("flatten", [False, True])
def test_gymnasiums_check_env_passes_on_a_registered_env(flatten: bool) -> None:
    env = gymnasium.make(rl.gym_id("survival"), ticks=SHORT, flatten=flatten)
    try:
        assert env.unwrapped.spec is not None  # so check_env also compares seeded resets
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped)
        if flatten:
            assert isinstance(env.observation_space, gymnasium.spaces.Box)
            obs, info = env.reset(seed=1)
            assert obs in env.observation_space and info["action_mask"].shape == (
                env.action_space.n,)
    finally:
        env.close()


def test_every_built_in_scenario_is_registered_with_gymnasium() -> None:
    for name in built_in_names():
        assert gymnasium.spec(rl.gym_id(name)).kwargs == {"scenario": name}


# -- an episode is a world like any other ------------------------------------------------------


def test_an_episode_through_the_env_is_a_save_folder_that_replays(tmp_path: Path,
                                                                  envs: list[Any]) -> None:
    env = rl.parallel_env("market", ticks=SHORT, out=tmp_path)
    envs.append(env)
    observations, _ = env.reset(seed=5)
    steps = carried_on = 0
    while env.agents:
        observations, _r, _t, _tr, infos = env.step(_masked_random(env, observations, steps))
        carried_on += sum(1 for info in infos.values() if info.get("carried_on"))
        steps += 1
        if steps == 3:  # the world counts the agents' actions as their decisions
            subject = env.world.population.find("Subject1")
            assert 1 <= env.world.metrics.of(subject)["decisions"] <= 3
    assert steps == 12 and env.stage is None  # the episode's end closed its world
    folder = env.folder
    assert folder == tmp_path / "saves" / "market-rl-5"
    assert run_replay(folder, Config(), to=None, playback=None) == 0
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["seed"] == 5 and meta["last_tick"] == SHORT
    # The agents' actions are plan inputs in its log, as any brain's decisions are.
    plans = [r for r in records(folder) if r.get("type") == "plan"
             and r["data"].get("source") == "rl"]
    assert len(plans) == 6 * steps - carried_on  # an action carried on is no new plan
    assert {p["data"]["brain"] for p in plans} == {"rl"}
    assert plans[0]["data"]["label"] == env.action_label(plans[0]["data"]["choice"])


def test_an_env_keeps_each_reset_in_a_folder_of_its_own(tmp_path: Path,
                                                       envs: list[Any]) -> None:
    first = rl.parallel_env("survival", ticks=SHORT, out=tmp_path)
    second = rl.parallel_env("survival", ticks=SHORT, out=tmp_path)
    envs += [first, second]
    first.reset(seed=1)
    second.reset(seed=1)
    first.reset(seed=1)
    assert sorted(p.name for p in (tmp_path / "saves").iterdir()) == [
        "survival-rl-1", "survival-rl-1-2", "survival-rl-1-3"]
    first.step(dict.fromkeys(first.agents, _index(first, "wander")))
    first.close()  # mid-episode: the world stops there, with its final snapshot
    for name in ("survival-rl-1", "survival-rl-1-3"):  # the first ended by the next reset
        folder = tmp_path / "saves" / name
        assert (folder / "world_state.json").exists()  # kept
        assert run_replay(folder, Config(), to=None, playback=None) == 0


def test_a_temporary_folder_is_removed_when_the_env_closes() -> None:
    env = rl.parallel_env("survival", ticks=SHORT)
    env.reset(seed=2)
    assert env.folder is not None and env.folder.exists()
    env.close()
    env.close()  # twice does nothing
    assert not env.out.exists()
    with pytest.raises(RuntimeError, match="closed"):
        env.reset(seed=2)


# -- determinism -------------------------------------------------------------------------------


def _play(env: Any, seed: int, actions: list[dict[str, int]]) -> tuple[str, list[Any]]:
    env.reset(seed=seed)
    rewards = []
    for step in actions:
        if not env.agents:
            break
        _obs, reward, *_ = env.step({a: i for a, i in step.items() if a in env.agents})
        rewards.append(reward)
    return env.state_hash(), rewards


def test_the_same_seed_and_actions_give_the_same_state_hash(envs: list[Any]) -> None:
    env = rl.parallel_env("foraging", ticks=SHORT)
    envs.append(env)
    observations, _ = env.reset(seed=11)
    script = []
    while env.agents:  # a script of masked random actions, played once to write it down
        step = _masked_random(env, observations, len(script))
        script.append(step)
        observations, *_ = env.step(step)
    played = env.state_hash()
    again = rl.parallel_env("foraging", ticks=SHORT)
    envs.append(again)
    assert _play(again, 11, script) == _play(env, 11, script)
    assert _play(again, 11, script)[0] == played
    idle = _index(env, "idle")
    assert _play(again, 11, [dict.fromkeys(s, idle) for s in script])[0] != played
    assert _play(again, 12, script)[0] != played


def test_reset_without_a_seed_follows_the_last_seed() -> None:
    env = rl.gym_env("survival", ticks=SHORT)
    try:
        env.reset(seed=3)
        first = env.parallel.seed_played
        env.reset()
        drawn = env.parallel.seed_played
        env.reset(seed=3)
        env.reset()
        assert first == 3 and env.parallel.seed_played == drawn != 3
    finally:
        env.close()


def test_a_seed_is_the_world_eval_plays_with_that_seed(tmp_path: Path,
                                                      envs: list[Any]) -> None:
    scenario = load_scenario("foraging")
    env = rl.parallel_env(scenario, out=tmp_path / "env")
    envs.append(env)
    env.reset(seed=8)
    stage = Stage(scenario, 8, tmp_path / "eval", name="foraging-builtin-8", brain="builtin")
    try:
        stage.begin()
        assert bytes(stage.world.terrain.blocked) == bytes(env.world.terrain.blocked)
        for name, eid in stage.play.ids.items():
            assert observe(stage.world, eid).me.x == observe(env.world, eid).me.x, name
    finally:
        stage.close()


# -- rewards, ends ------------------------------------------------------------------------------


def test_rewards_add_up_to_the_scenarios_score(envs: list[Any]) -> None:
    env = rl.parallel_env("survival", ticks=SHORT, ticks_per_step=7)
    envs.append(env)
    env.reset(seed=4)
    totals = dict.fromkeys(env.agents, 0.0)
    ends: dict[str, dict[str, Any]] = {}
    rest = _index(env, "rest")
    while env.agents:
        _obs, rewards, terms, truncs, infos = env.step(dict.fromkeys(env.agents, rest))
        for agent, reward in rewards.items():
            totals[agent] += reward
            if terms[agent] or truncs[agent]:
                ends[agent] = infos[agent] | {"truncated": truncs[agent]}
    for agent, total in totals.items():
        assert total == pytest.approx(ends[agent]["score"])
        # survival scores the ticks alive: the last step ends at the scenario's end (7 does
        # not divide 120: the last step is short) and says so; the time limit truncates.
        assert ends[agent] == {"tick": SHORT, "score": ends[agent]["score"], "end": "ticks",
                               "truncated": True}
        assert ends[agent]["score"] == SHORT - 1


def test_an_agent_that_dies_is_terminated_and_leaves(envs: list[Any]) -> None:
    env = rl.parallel_env("survival", ticks=SHORT, agents=2)
    envs.append(env)
    env.reset(seed=6)
    victim = env.world.population.find("Subject2")
    env.world.inbox.submit("kill", {"target": victim}, source="test")
    idle = _index(env, "idle")
    obs, _rewards, terms, truncs, _infos = env.step(dict.fromkeys(env.agents, idle))
    assert terms == {"Subject1": False, "Subject2": True}
    assert truncs == {"Subject1": False, "Subject2": False}
    assert env.agents == ["Subject1"]
    assert obs["Subject2"] in env.observation_space("Subject2")
    with pytest.raises(ValueError, match="'Subject2' is not playing now"):
        env.step({"Subject2": idle})


def test_team_capture_ends_when_a_team_is_wiped_out(envs: list[Any]) -> None:
    env = rl.parallel_env("team_capture", ticks=600)
    envs.append(env)
    env.reset(seed=2)
    for name in ("Blue1", "Blue2", "Blue3", "Blue4", "Blue5"):
        env.world.inbox.submit("kill", {"target": env.world.population.find(name)}, source="test")
    _obs, _r, terms, truncs, infos = env.step(dict.fromkeys(env.agents, _index(env, "idle")))
    assert all(terms.values()) and not any(truncs.values())
    assert {info["end"] for info in infos.values()} == {"team_eliminated"}
    assert env.agents == [] and env.stage is None


# -- the action set --------------------------------------------------------------------------


def test_the_mask_says_what_is_possible_and_a_refused_action_idles(envs: list[Any]) -> None:
    env = rl.parallel_env("crafting_chain", ticks=SHORT, agents=1)
    envs.append(env)
    observations, _ = env.reset(seed=3)
    mask = observations["Subject1"]["action_mask"]
    view = env._views["Subject1"]
    for i, choice in enumerate(env.table):  # the mask and the decoding agree
        assert bool(mask[i]) == (not isinstance(plan_of(choice, view, 10), str)), choice.label
    # Subjects start with 3 wood, 1 stone, 1 iron: a club can be made, a sword cannot.
    assert mask[_index(env, "craft club")] and not mask[_index(env, "craft sword")]
    sword = _index(env, "craft sword")
    _obs, _r, _t, _tr, infos = env.step({"Subject1": sword})
    assert infos["Subject1"]["refused"] == ("craft sword is not possible now: sword needs "
                                            "spear")
    me = _me(env, "Subject1")
    assert me.doing is not None and me.doing.startswith("idle")
    with pytest.raises(ValueError, match=r"must be in \[0, 1\d\d\), got 9999"):
        env.step({"Subject1": 9999})
    with pytest.raises(ValueError, match="must be an integer index"):
        env.step({"Subject1": 1.5})


def test_a_direction_walks_and_a_craft_crafts(envs: list[Any]) -> None:
    env = rl.parallel_env("crafting_chain", ticks=600, agents=1)
    envs.append(env)
    observations, _ = env.reset(seed=3)
    me = _me(env, "Subject1")
    way = next(label for label in ("move_to east", "move_to west", "move_to north",
                                   "move_to south")
               if observations["Subject1"]["action_mask"][_index(env, label)])
    target = env._views["Subject1"].moves[
        ("north", "northeast", "east", "southeast", "south", "southwest", "west",
         "northwest").index(way.split()[1])]
    env.step({"Subject1": _index(env, way)})
    moved = _me(env, "Subject1")
    assert (moved.x, moved.y) == target != (me.x, me.y)
    craft = _index(env, "craft club")
    for _ in range(3):  # craft_ticks is 20: two steps and a bit
        env.step({"Subject1": craft})
    assert _me(env, "Subject1").items.get("club", 0) >= 1
    assert env.world.metrics.of(env.world.population.find("Subject1"))["crafted"] >= 1


def test_the_observation_is_the_documented_one_in_numbers(envs: list[Any]) -> None:
    env = rl.parallel_env("market", ticks=SHORT, agents=1)
    envs.append(env)
    observations, _ = env.reset(seed=9)
    seen = observations["Subject1"]
    obs = observe(env.world, env.world.population.find("Subject1"))
    width, height = env.layout.width, env.layout.height
    assert seen["me"][0] == pytest.approx(obs.me.x / (width - 1))
    assert seen["me"][1] == pytest.approx(obs.me.y / (height - 1))
    assert seen["me"][2] == pytest.approx(obs.me.health / obs.me.max_health)
    kinds = rl.layout.KINDS
    assert seen["carried"][kinds.index("gold")] == obs.me.gold
    assert seen["carried"][kinds.index("berries")] == obs.me.items["berries"] == 6
    assert seen["prices"][kinds.index("wood")] == pytest.approx(obs.prices["wood"])
    for row, other in zip(seen["agents"], obs.agents, strict=False):
        assert list(row[:4]) == [1.0, other.x - obs.me.x, other.y - obs.me.y, other.distance]
    assert seen["agents"][len(obs.agents):].sum() == 0  # empty slots are zeros
    assert seen in env.observation_space("Subject1")


# -- options and bad input -----------------------------------------------------------------------


@pytest.mark.parametrize(("options", "message"), [
    ({"ticks_per_step": 0}, r"ticks_per_step must be a whole number in \[1, 100\], got 0"),
    ({"slots": {"friends": 3}}, "slots: unknown group 'friends'; the groups are agents"),
    ({"slots": {"agents": 0}}, r"slots\['agents'\] must be a whole number in \[1, 64\]"),
    ({"agents": 7}, r"agents must be a number of subjects in \[1, 6\]"),
    ({"agents": ["Nobody"]}, "'Nobody' is not a subject of scenario survival"),
    ({"render_mode": "human"}, "the env draws nothing"),
    ({"agents": 2, "others": "ghost"}, "others: unknown brain 'ghost' \\(known: builtin, llm"),
    ({"agents": 2, "others": "llm"}, "others: llm needs an LLM; set llm.provider"),
])
def test_bad_options_are_one_line_naming_the_option(options: dict[str, Any],
                                                    message: str) -> None:
    with pytest.raises(rl.LayoutError, match=message) as caught:
        rl.parallel_env("survival", **options)
    assert "\n" not in str(caught.value)


def test_a_step_before_reset_says_to_reset(envs: list[Any]) -> None:
    env = rl.parallel_env("survival")
    envs.append(env)
    with pytest.raises(RuntimeError, match=r"call reset\(\) first"):
        env.step({})


def test_without_the_extra_the_import_says_how_to_install_it() -> None:
    code = ("import sys; sys.modules['pettingzoo'] = None\n"
            "try:\n    import agent_world.rl\n"
            "except ImportError as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=True)
    assert "pip install -e '.[rl]'" in done.stdout and "pettingzoo" in done.stdout


# -- the docs ---------------------------------------------------------------------------------


def _rl_snippets() -> list[str]:
    text = (ROOT / "docs" / "evaluation.md").read_text(encoding="utf-8")
    section = text.split("## Reinforcement learning", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)


def test_the_docs_examples_run_as_written(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    snippets = _rl_snippets()
    assert len(snippets) == 2
    monkeypatch.chdir(tmp_path)
    for snippet in snippets:
        exec(compile(snippet, "docs/evaluation.md", "exec"), {"__name__": "__docs__"})
    folders = sorted((tmp_path / "rl-runs" / "saves").iterdir())
    assert folders
    for folder in folders:
        assert run_replay(folder, Config(), to=None, playback=None) == 0
