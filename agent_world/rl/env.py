"""A scenario as a PettingZoo ``ParallelEnv``: each of the scenario's subjects the env plays
is an agent, a step is ``ticks_per_step`` world ticks, an action is one entry of the action
set (``actions.action_table``) and a reward is the change of the agent's scenario score.

The world is played on an ``eval.stage.Stage``, as an episode plays it: the same cast, the
same waits for brains that think off the tick, the same end conditions and the same score.
Each ``reset`` opens a new world in a save folder of its own; an agent's action enters it
as a ``plan`` input (``source: "rl"``), so the folder replays without the env, like any
other world. ``reset(seed=S)`` plays the world of seed ``S``, the one ``python main.py eval
SCENARIO --seeds S`` plays; the same seed and the same actions give the same world, state
hash and all.
"""

from __future__ import annotations

import operator
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from numpy.typing import NDArray
from pettingzoo import ParallelEnv as _ParallelEnv

from agent_world.config import Config, llm_profile_of, load_config
from agent_world.contract.observation import observe
from agent_world.contract.plan import PlanInput
from agent_world.core.actions import Action
from agent_world.core.world import World
from agent_world.eval.scenario import SUBJECT, Scenario, load_scenario, with_ticks
from agent_world.eval.stage import Stage, cast_of
from agent_world.rl.actions import DIRECTIONS, DURATIVE, Choice, action_table, mask_of, plan_of
from agent_world.rl.layout import Layout, LayoutError
from agent_world.rl.observations import View, empty_observation, encode, observation_space
from agent_world.userbrains.registry import brain_refusal, load_brains

__all__ = ["BRAIN", "SOURCE", "AgentWorldEnv"]

BRAIN = "rl"  # the brain name the env's agents are spawned with (no part of a session plays it)
SOURCE = "rl"  # the source of the env's plan inputs
MAX_SEED = 2**31 - 1  # seeds drawn for a reset() without one are below this


class AgentWorldEnv(_ParallelEnv):  # type: ignore[misc]  # pettingzoo ships no types
    """A scenario's world as a parallel environment (``agent_world.rl.parallel_env``).

    Options (all keyword): ``ticks_per_step`` (world ticks one step lasts, 1..100, default
    10: one second of world time); ``ticks`` (the episode's length, default the scenario's
    ``end.ticks``); ``agents`` (how many of the scenario's subjects the env plays, the first
    ones, or their names; default all); ``others`` (the brain the other subjects play,
    default ``builtin``); ``slots`` (rows per slot group of the observation, e.g.
    ``{"agents": 8}``); ``flatten`` (observations as one ``Box`` vector instead of a
    ``Dict``; the action mask is then in each agent's info too); ``out`` (where the
    episodes' save folders go, kept; default a temporary folder removed by ``close``);
    ``config`` (the base configuration: a ``Config`` or a YAML file's path)."""

    metadata: ClassVar[dict[str, Any]] = {"name": "agent_world_v0", "render_modes": [],
                                          "is_parallelizable": False}

    def __init__(self, scenario: str | Scenario, *, ticks_per_step: int = 10,
                 ticks: int | None = None, agents: int | Sequence[str] | None = None,
                 others: str = "builtin", slots: Mapping[str, int] | None = None,
                 flatten: bool = False, out: str | Path | None = None,
                 config: Config | str | Path | None = None,
                 render_mode: str | None = None) -> None:
        if render_mode is not None:
            raise LayoutError(f"render_mode {render_mode!r}: the env draws nothing; watch "
                              "an episode's save folder with python main.py replay --serve")
        self.scenario = with_ticks(load_scenario(scenario) if isinstance(scenario, str)
                                   else scenario, ticks)
        self.base = config if isinstance(config, Config) else load_config(config) \
            if config is not None else Config()
        self.layout = Layout.of(self.scenario.config(self.base), ticks_per_step=ticks_per_step,
                                episode_ticks=self.scenario.ticks, slots=slots)
        self.others = others
        self.possible_agents = _chosen(self.scenario, agents)
        _check_brains(self.scenario, self.base, others,
                      len(self.possible_agents) < len(_chosen(self.scenario, None)))
        self.agents: list[str] = []
        self.render_mode = None
        self.table: tuple[Choice, ...] = action_table(self.layout)
        self._dict_space = observation_space(self.layout, len(self.table))
        self.flatten = bool(flatten)
        space: spaces.Space[Any] = spaces.flatten_space(self._dict_space) if self.flatten \
            else self._dict_space
        self.observation_spaces = dict.fromkeys(self.possible_agents, space)
        self.action_spaces = {agent: spaces.Discrete(len(self.table))
                              for agent in self.possible_agents}
        self._temporary = out is None
        self.out = Path(tempfile.mkdtemp(prefix="agent-world-rl-")) if out is None \
            else Path(out)
        self.stage: Stage | None = None
        self.folder: Path | None = None  # the save folder of the latest episode
        self.np_random: np.random.Generator | None = None
        self.seed_played: int | None = None  # the latest episode's world seed
        self._ids: dict[str, int] = {}
        self._views: dict[str, View] = {}
        self._masks: dict[str, NDArray[np.int8]] = {}
        self._scores: dict[str, float] = {}
        self._hash: str | None = None
        self._steps = 0  # steps of the episode under way
        self._closed = False

    # -- the spaces ---------------------------------------------------------------------------

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.action_spaces[agent]

    def action_label(self, action: int) -> str:
        """What an action index stands for: ``"attack agents[2]"``, ``"move_to north"``."""
        return self.table[int(action)].label

    # -- an episode ---------------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """A new episode in a new save folder: the world of ``seed`` (without one, a seed
        drawn from the generator the last seed started). ``options`` are not used (the
        env's options are given when it is made)."""
        self._check_open()
        if seed is not None:
            self.np_random, _ = seeding.np_random(seed)
            world_seed = int(seed)
        else:
            if self.np_random is None:
                self.np_random, _ = seeding.np_random(None)
            world_seed = int(self.np_random.integers(MAX_SEED))
        self._end_stage()
        name = _free_name(self.out / "saves", f"{self.scenario.name}-{BRAIN}-{world_seed}")
        stage = Stage(self.scenario, world_seed, self.out, name=name, brain=self.others,
                      brains=dict.fromkeys(self.possible_agents, BRAIN), base=self.base,
                      external=frozenset({BRAIN}))
        self.stage, self.folder, self.seed_played = stage, stage.folder, world_seed
        try:
            stage.begin()
        except BaseException:
            self._end_stage()
            raise
        self._ids = {agent: stage.play.ids[agent] for agent in self.possible_agents
                     if agent in stage.play.ids}
        self.agents = [agent for agent in self.possible_agents
                       if agent in self._ids and stage.world.alive(self._ids[agent])]
        self._scores = dict.fromkeys(self.agents, 0.0)
        self._steps = 0
        observations = {agent: self._observe(agent) for agent in self.agents}
        infos = {agent: self._info(agent, stage.score_of(self._ids[agent]))
                 for agent in self.agents}
        return observations, infos

    def step(self, actions: Mapping[str, Any]) -> tuple[
            dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool],
            dict[str, dict[str, Any]]]:
        """Each agent's action (an index of the action set) becomes its plan for the step,
        then the world runs ``ticks_per_step`` ticks (fewer when the episode ends). An
        action not possible now (its mask entry 0) is refused: the agent waits the step
        out (``idle``) and its info says why. The action an agent is doing already goes
        on (``carried_on``) rather than starting over. An agent given no action carries on
        with what it was doing (its built-in brain once that is done)."""
        stage = self.stage
        if stage is None or not self.agents:
            raise RuntimeError("the episode is over (or has not begun): call reset() first")
        world = stage.world
        strangers = sorted(str(agent) for agent in actions if agent not in self.agents)
        if strangers:
            raise ValueError(f"agent {strangers[0]!r} is not playing now; env.agents are "
                             f"{', '.join(self.agents)}")
        self._steps += 1
        said: dict[str, dict[str, Any]] = {}
        for agent in self.agents:  # a fixed order: the inputs' order is part of the world
            if agent in actions:
                said[agent] = self._act(world, agent, actions[agent])
        end = None
        for _ in range(self.layout.ticks_per_step):
            stage.tick()
            end = "ticks" if world.tick >= self.scenario.ticks else stage.early_end()
            if end is not None:
                break
        playing = list(self.agents)
        observations, rewards, terminations, truncations, infos = {}, {}, {}, {}, {}
        for agent in playing:
            eid = self._ids[agent]
            alive = world.alive(eid)
            score = stage.score_of(eid)
            rewards[agent] = float(score - self._scores[agent])
            self._scores[agent] = score
            terminations[agent] = not alive or (end is not None and end != "ticks")
            truncations[agent] = end == "ticks" and not terminations[agent]
            observations[agent] = self._observe(agent) if alive else self._gone(agent)
            infos[agent] = self._info(agent, score) | said.get(agent, {})
            if end is not None:
                infos[agent]["end"] = end
        self.agents = [agent for agent in playing
                       if not (terminations[agent] or truncations[agent])]
        if not self.agents:
            self._end_stage()  # the final snapshot: the folder is a finished world
        return observations, rewards, terminations, truncations, infos

    def state_hash(self) -> str:
        """The world's state hash now (after the episode's end: at its end)."""
        if self.stage is not None:
            return self.stage.world.state_hash()
        if self._hash is None:
            raise RuntimeError("no episode has been played yet: call reset() first")
        return self._hash

    @property
    def world(self) -> World:
        """The world of the episode under way (read it; change it only through inputs)."""
        if self.stage is None:
            raise RuntimeError("no episode is under way: call reset() first")
        return self.stage.world

    def close(self) -> None:
        """End the episode under way (its final snapshot is written) and, when the env
        made its own temporary folder, remove it. Closing twice does nothing."""
        if self._closed:
            return
        self._closed = True
        self._end_stage()
        self.agents = []
        if self._temporary:
            shutil.rmtree(self.out, ignore_errors=True)

    def render(self) -> None:
        """The env draws nothing (``render_mode`` is None): replay a save folder with
        ``python main.py replay FOLDER --serve`` to watch an episode."""

    # -- inside -------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this env is closed; make a new one")

    def _end_stage(self) -> None:
        stage, self.stage = self.stage, None
        if stage is not None:
            self._hash = stage.world.state_hash()
            stage.close()

    def _act(self, world: World, agent: str, action: Any) -> dict[str, Any]:
        """Submit ``agent``'s plan for the step. What its info says of it: ``refused`` (why
        ``action`` is not possible now), or ``carried_on`` (the agent is doing that very
        plan already, so it goes on rather than starting over: a craft, a long walk or a
        fight lasts as many steps as it needs)."""
        index = _index(action, len(self.table), agent)
        choice = self.table[index]
        ticks = self.layout.ticks_per_step
        view = self._views[agent]
        plan = plan_of(choice, view, ticks)
        said: dict[str, Any] = {}
        if isinstance(plan, str):
            said["refused"], plan = plan, (Action(name="idle", args={"ticks": ticks}),)
        elif (choice.verb not in DURATIVE and view.obs.me.doing == str(plan[0])
              and view.obs.me.plan == tuple(str(a) for a in plan[1:])):
            return {"carried_on": True}
        # No latency: the learner's time is not the world's, and a measured one would make
        # the same actions give another world (the metrics keep a latency histogram).
        PlanInput(agent=self._ids[agent], actions=plan, source=SOURCE, thought="",
                  request=self._steps, reasons=("step",), latency_s=0.0,
                  asked_tick=view.obs.tick,
                  by={"brain": BRAIN, "choice": index, "label": choice.label, **said}
                  ).submit(world.inbox)
        return said

    def _observe(self, agent: str) -> Any:
        """The agent's observation now; its view and action mask are kept for the step."""
        assert self.stage is not None
        world = self.stage.world
        obs = observe(world, self._ids[agent])
        view = View.of(obs, self.layout, _moves(world, obs.me.x, obs.me.y,
                                               self.layout.move_tiles))
        self._views[agent] = view
        self._masks[agent] = mask = mask_of(self.table, view)
        return self._shaped(encode(view, self.layout, self._dict_space, mask))

    def _gone(self, agent: str) -> Any:
        """The observation of an agent that has died: zeros, and only ``idle``."""
        self._masks[agent] = mask = np.zeros(len(self.table), dtype=np.int8)
        mask[0] = 1
        return self._shaped(empty_observation(self._dict_space, mask))

    def _shaped(self, observation: dict[str, Any]) -> Any:
        if self.flatten:
            return spaces.flatten(self._dict_space, observation)
        return observation

    def _info(self, agent: str, score: float) -> dict[str, Any]:
        """The world's tick and the agent's score now (its rewards so far add up to it)."""
        assert self.stage is not None
        info: dict[str, Any] = {"tick": self.stage.world.tick, "score": score}
        if self.flatten:
            info["action_mask"] = self._masks[agent].copy()
        return info


def _check_brains(scenario: Scenario, base: Config, others: str, others_play: bool) -> None:
    """The brains the episodes need besides the env's: the other teams' and, when some
    subjects are not the env's, ``others``; checked before any world opens, as eval does."""
    needed = {f"scenario {scenario.name}: a team's brain": b for b in scenario.other_brains()}
    if others_play:
        needed["others"] = others
    if not needed:
        return
    registered = load_brains(base.brains, llm=base.llm.enabled, models=base.llm.models) \
        if any(b != "builtin" and llm_profile_of(b) is None for b in needed.values()) else {}
    for said, brain in needed.items():
        refusal = brain_refusal(brain, registered, llm=base.llm.enabled, models=base.llm.models)
        if refusal is not None:
            raise LayoutError(f"{said}: {refusal}")


def _chosen(scenario: Scenario, agents: int | Sequence[str] | None) -> list[str]:
    """The subjects the env plays, by name, in the cast's order."""
    subjects = [name for name, (_team, group) in cast_of(scenario).items()
                if group.brain == SUBJECT]
    if agents is None:
        return subjects
    if isinstance(agents, bool) or not isinstance(agents, (int, list, tuple)) \
            or (not isinstance(agents, int) and not all(isinstance(a, str) for a in agents)):
        raise LayoutError(f"agents must be a number of subjects or a list of their names, "
                          f"got {agents!r}")
    if isinstance(agents, int):
        if not 1 <= agents <= len(subjects):
            raise LayoutError(f"agents must be a number of subjects in [1, {len(subjects)}] "
                              f"(scenario {scenario.name} has {len(subjects)}), got {agents}")
        return subjects[:agents]
    unknown = [a for a in agents if a not in subjects]
    if unknown or not agents:
        raise LayoutError(f"agents: {unknown[0] if unknown else 'none given'!r} is not a "
                          f"subject of scenario {scenario.name}; its subjects are "
                          f"{', '.join(subjects)}")
    return [a for a in subjects if a in set(agents)]


def _index(action: Any, n: int, agent: str) -> int:
    """An action as an index of the action set (a Python or NumPy integer)."""
    try:
        if isinstance(action, (bool, np.bool_)):
            raise TypeError("a truth value is not an index")
        index = operator.index(action)
    except TypeError:
        raise ValueError(f"action of {agent!r} must be an integer index of the action set "
                         f"[0, {n}), got {action!r}") from None
    if not 0 <= index < n:
        raise ValueError(f"action of {agent!r} must be in [0, {n}), got {index}")
    return index


def _moves(world: World, x: int, y: int, tiles: int) -> tuple[tuple[int, int] | None, ...]:
    """Per direction, the farthest open tile up to ``tiles`` away in a straight line (the
    line stops at the first blocked tile); None when the next tile is blocked."""
    terrain = world.terrain
    out: list[tuple[int, int] | None] = []
    for _name, dx, dy in DIRECTIONS:
        last = None
        for k in range(1, tiles + 1):
            tx, ty = x + dx * k, y + dy * k
            if terrain.is_blocked(tx, ty):
                break
            last = (tx, ty)
        out.append(last)
    return tuple(out)


def _free_name(saves: Path, stem: str) -> str:
    """``stem``, or ``stem-2``, ``stem-3`` ... when a folder of that name exists."""
    name, n = stem, 1
    while (saves / name).exists():
        n += 1
        name = f"{stem}-{n}"
    return name
