"""The World: entities, map, RNG, clock count and inbox, advanced one tick at a time.

The state at tick N is a pure function of the initial state and the inputs applied up to N
(see docs/architecture.md, "Determinism"). Everything random draws on ``self.rng``; systems
iterate entities in ascending id; derived indexes are rebuilt, never saved.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import orjson

from agent_world.config import (
    BRAIN_NAME,
    PERSONALITIES,
    AbilitiesConfig,
    Config,
    GameConfig,
    WorldConfig,
    config_from_dict,
    model_for_brain,
)
from agent_world.core import components as c
from agent_world.core import events as ev
from agent_world.core.abilities import AbilityBook
from agent_world.core.actions import Action
from agent_world.core.columns import AgentColumns
from agent_world.core.components import NO_ONE
from agent_world.core.ecs import EntityStore
from agent_world.core.errors import WorldError
from agent_world.core.ground import Ground
from agent_world.core.inbox import Inbox
from agent_world.core.inputs import apply_input
from agent_world.core.items import GOLD, ITEMS, OBJECTS
from agent_world.core.market import Market
from agent_world.core.metrics import MetricsBook
from agent_world.core.minds import Minds
from agent_world.core.names import pick_name
from agent_world.core.players import Players
from agent_world.core.population import Population
from agent_world.core.recipes import parse_recipes
from agent_world.core.rules import missing_settings, ruleset, saved_rules_version
from agent_world.core.schedule import Schedule
from agent_world.core.spatial import SpatialGrid
from agent_world.core.systems import SYSTEMS
from agent_world.core.systems.acting import start
from agent_world.core.systems.perception import perceive
from agent_world.core.teams import TEAM_NAME, TeamBook
from agent_world.core.terrain import Terrain
from agent_world.types import JSON, Event, Input, TickReport

__all__ = ["BRAINS", "STATE_FORMAT", "AgentRow", "World", "WorldError"]

STATE_FORMAT = 1
MEMORY_SIZE = 12
HAZARD_CLUMP = 5  # most tiles in one thorn patch
BRAINS = ("builtin", "llm")
"""Brains an agent may have: built-in rules, or decisions from an LLM (plans sent as
inputs; until one arrives the agent uses its built-in brain)."""
_NOT_SIMULATION = ("name", "tick_rate")
SIMULATION_SECTIONS = ("world", "game", "abilities")
"""Config sections that shape the simulation: they travel with a world's state."""


class AgentRow(NamedTuple):
    """One living agent's components (``World.agents()``), in ``AGENT_TYPES``' order: read
    them by name (``row.needs``); a tuple still, so systems may unpack it."""

    agent: c.Agent
    pos: c.Position
    needs: c.Needs
    inv: c.Inventory
    intent: c.Intent
    combat: c.Combat
    perception: c.Perception
    social: c.Social
    memory: c.Memory


AGENT_TYPES = (c.Agent, c.Position, c.Needs, c.Inventory, c.Intent, c.Combat, c.Perception,
               c.Social, c.Memory)


class World:
    """Owns all simulation state. Only the main thread may call its methods (except
    ``inbox.submit``, which any thread may call)."""

    def __init__(self, config: Config, terrain: Terrain, *, seed: int) -> None:
        self.config = config
        self.settings: WorldConfig = config.world
        self.rules: GameConfig = config.game
        self.ability_rules: AbilitiesConfig = config.abilities
        # The rules version's behaviour (its number travels as game.brain_version).
        self.ruleset = ruleset(config.game.brain_version)
        self.seed = seed
        self.rng = random.Random(seed)
        self.tick = 0
        self.terrain = terrain
        self.store = EntityStore()
        self._agents_query = self.store.handle(*AGENT_TYPES, row=AgentRow._make)
        self.inbox = Inbox()
        self.agents_grid = SpatialGrid(terrain.width, terrain.height)
        area = terrain.width * terrain.height
        self.ground = Ground(terrain, self.store,
                             capacity=area * self.settings.max_items_per_1000_tiles / 1000,
                             regrow_ticks=config.game.object_regrow_ticks)
        self.market = Market(config.game.offer_ttl_ticks)
        self.counters: dict[str, int] = {}
        self.population = Population()  # names, personalities, teams (derived)
        self.input_observers: list[Callable[[Sequence[Input]], None]] = []
        self.abilities = AbilityBook(config.abilities)
        self.minds = Minds()  # what built-in brains remember beyond their components
        self.metrics = MetricsBook(config.game.agent_metrics, config.game.metrics_version)
        try:
            self.recipes = parse_recipes(config.game.recipes)
        except ValueError as exc:
            raise WorldError(str(exc)) from None
        self.teams = TeamBook()
        self.players = Players()  # who plays which agent (core/players.py)
        self.replaying = False  # true while a step's inputs come from a log
        self.schedule = Schedule()  # which agents have work this tick (derived)
        self._events: list[Event] = []
        self._late_inputs: list[Input] = []
        self._row_index: dict[int, AgentRow] = {}
        self._rows_indexed: list[tuple[int, AgentRow]] | None = None
        self._columns = AgentColumns.of([])
        sections = config.to_dict()
        # Settings that shape the simulation travel with its state; name and pace do not.
        self._sim_config = {name: dict(sections[name]) for name in SIMULATION_SECTIONS}
        for key in _NOT_SIMULATION:
            del self._sim_config["world"][key]

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def create(cls, config: Config | None = None, *, seed: int | None = None) -> World:
        """A new world: generated map and objects, ``starting_agents`` agents."""
        config = config or Config()
        seed = config.world.seed if seed is None else seed
        rng = random.Random(seed)
        w, h = config.world.size
        terrain = Terrain.generate(w, h, rng, config.world.obstacle_density)
        world = cls(config, terrain, seed=seed)
        world.rng = rng
        world._populate()
        world._events.clear()  # creation is not news; the world log starts at tick 1
        # Built-in abilities installed before the first tick (the sandbox layer's setup) let
        # the built-in brains cast; see AbilityBook.brains_cast.
        world.abilities.fresh = world.ruleset.brains_cast
        return world

    def _populate(self) -> None:
        s = self.settings
        area = self.terrain.width * self.terrain.height
        kinds = [k for k in OBJECTS.values() if k.placement_weight > 0]
        weights = [k.placement_weight for k in kinds]
        for _ in range(round(area * s.objects_per_1000_tiles / 1000)):
            spot = self.terrain.random_open_tile(self.rng)
            if spot is not None:
                kind = self.rng.choices(kinds, weights)[0]
                self.spawn_object(kind.name, *spot)
        for _ in range(round(area * s.shelters_per_1000_tiles / 1000)):
            spot = self.terrain.random_open_tile(self.rng)
            if spot is not None:
                self.spawn_object("shelter", *spot)
        self._place_hazards(round(area * s.hazard_tiles_per_1000_tiles / 1000))
        for _ in range(s.capture_points):
            spot = self.terrain.random_open_tile(self.rng)
            if spot is not None:
                self.spawn_object("capture_point", *spot)
        # With an LLM configured, the first llm.agents newcomers think with it (a label in
        # the state: the decisions themselves arrive as plan inputs).
        thinkers = self.config.llm.agents if self.config.llm.enabled else 0
        personalities = self._starting_personalities()
        brains = ["llm"] * min(thinkers, len(personalities))
        for name, count in self._brain_counts(len(personalities) - len(brains)):
            brains += [name] * count  # users' brains (brains.mix), after the LLM's
        for i, personality in enumerate(personalities):
            self.spawn_agent(personality=personality,
                             brain=brains[i] if i < len(brains) else "builtin",
                             model_for=self.config.llm.model_for)
        if self.rules.lifespan_ticks:
            # The first agents are of all ages, so that they do not all grow old at once.
            for _eid, row in self.agents():
                row.agent.born = -self.rng.randint(0, self.rules.lifespan_ticks // 2)
        for _ in range(int(self.ground.capacity // 3)):
            self.spawn_random_item()
        for eid, row in self.agents():  # everyone sees the world as it was created
            self._perceive(eid, row.pos, row.perception)

    def _place_hazards(self, tiles: int) -> None:
        """Thorn patches: clumps of up to ``HAZARD_CLUMP`` open tiles, until ``tiles``."""
        w, terrain = self.terrain.width, self.terrain
        placed = 0
        while placed < tiles:
            spot = terrain.random_open_tile(self.rng)
            if spot is None:
                return
            x, y = spot
            for _ in range(self.rng.randint(1, HAZARD_CLUMP)):
                if (terrain.in_bounds(x, y) and not terrain.is_blocked(x, y)
                        and y * w + x not in self.ground.hazard_tiles):
                    self.spawn_object("hazard", x, y)
                    placed += 1
                    if placed >= tiles:
                        return
                dx, dy = self.rng.choice(((1, 0), (0, 1), (-1, 0), (0, -1)))
                x, y = x + dx, y + dy

    def _brain_counts(self, room: int) -> list[tuple[str, int]]:
        """How many of the ``room`` starting agents left each registered brain of
        ``brains.mix`` gets: its share of all starting agents, largest remainders first."""
        n = self.settings.starting_agents
        mix = self.config.brains.mix
        exact = {name: share * n for name, share in mix.items() if share > 0}
        counts = {name: int(v) for name, v in exact.items()}
        spare = min(round(sum(exact.values())), room) - sum(counts.values())
        for name in sorted(exact, key=lambda k: (counts[k] - exact[k], k))[:max(0, spare)]:
            counts[name] += 1
        out, left = [], room
        for name in sorted(counts):
            take = min(counts[name], left)
            out.append((name, take))
            left -= take
        return out

    def _starting_personalities(self) -> list[str]:
        """The configured mix apportioned exactly (largest remainder), in shuffled order."""
        n = self.settings.starting_agents
        mix = {p: w for p, w in self.settings.personality_mix.items() if w > 0}
        total = sum(mix.values())
        shares = {p: n * w / total for p, w in mix.items()}
        counts = {p: int(share) for p, share in shares.items()}
        by_remainder = sorted(mix, key=lambda p: (-(shares[p] - counts[p]), p))
        for p in by_remainder[: n - sum(counts.values())]:
            counts[p] += 1
        order = [p for p in PERSONALITIES for _ in range(counts.get(p, 0))]
        self.rng.shuffle(order)
        return order

    # -- entity lifecycle --------------------------------------------------------------------

    def _check_tile(self, x: int, y: int) -> None:
        if not self.terrain.in_bounds(x, y):
            raise WorldError(f"tile ({x}, {y}) is off the map (0..{self.terrain.width - 1}, "
                             f"0..{self.terrain.height - 1})")
        if self.terrain.is_blocked(x, y):
            raise WorldError(f"tile ({x}, {y}) is blocked ({self.describe_tile(x, y)}); "
                             "pick a free tile")

    def _place(self, x: int | None, y: int | None) -> tuple[int, int]:
        if x is None or y is None:
            spot = self.terrain.random_open_tile(self.rng)
            if spot is None:
                raise WorldError("no free tile found; the map is full")
            return spot
        self._check_tile(x, y)
        return x, y

    def spawn_agent(self, name: str | None = None, personality: str | None = None,
                    x: int | None = None, y: int | None = None, *, brain: str = "builtin",
                    gold: int | None = None, team: str | None = None,
                    model_for: Mapping[str, Mapping[str, str]] | None = None) -> int:
        """A new agent. ``model_for`` (``llm.model_for``, from the spawn input: replay reads
        it there, whatever the configuration says then) turns brain ``llm`` into its team's
        or personality's model profile ``llm:NAME``."""
        # Every check comes before the first random draw: a refused spawn changes nothing.
        cap = self.settings.max_agents
        if len(self.agents()) >= cap:
            raise WorldError(f"the world already holds {cap} agents, its cap "
                             "(world.max_agents); raise the cap or wait for one to die")
        if personality is not None and personality not in PERSONALITIES:
            raise WorldError(f"unknown personality {personality!r}; "
                             f"expected one of {', '.join(PERSONALITIES)}")
        if brain not in BRAINS and not BRAIN_NAME.fullmatch(brain):
            raise WorldError(f"unknown brain {brain!r}; expected one of {', '.join(BRAINS)} "
                             "or a registered brain's name (a-z, 0-9 and _)")
        if name is not None:
            if not name.strip() or len(name) > 32 or not name.isprintable():
                raise WorldError(f"agent name {name!r} must be 1-32 printable characters")
            if name.strip().lstrip("#").isdigit():
                raise WorldError(f"agent name {name!r} looks like an entity id; include a "
                                 "letter")
            if self.population.find(name) is not None:
                raise WorldError(f"an agent named {name!r} already lives; pick another name")
        if gold is not None and gold < 0:
            raise WorldError(f"gold must be >= 0, got {gold}")
        if team is not None and not TEAM_NAME.fullmatch(team):
            raise WorldError(f"team name {team!r} must be 1-16 of a-z, 0-9 and _, starting "
                             "with a letter")
        if (x is None) != (y is None):
            raise WorldError("give both x and y, or neither")
        if x is not None and y is not None:
            self._check_tile(x, y)
        if personality is None:
            mix = self.settings.personality_mix
            names = [p for p in PERSONALITIES if mix.get(p, 0) > 0] or list(PERSONALITIES)
            personality = self.rng.choices(names, [mix.get(p, 1.0) for p in names])[0]
        if brain == "llm" and model_for:  # its team's or personality's model profile
            brain = model_for_brain(model_for, personality, team)
        if name is None:
            name = pick_name(self.rng, self.population.names)
        x, y = self._place(x, y)
        r = self.rules
        if gold is None:
            gold = self.rng.randint(0, r.starting_gold_max)
        self.market.mint(gold)
        items: dict[str, int] = {}
        if self.rng.random() < 0.7:
            items["berries"] = self.rng.randint(1, 3)
        if personality == "aggressive" and self.rng.random() < 0.5:
            items["club"] = 1
        pos = c.Position(x, y)
        eid = self.store.create(
            c.Agent(name=name, personality=personality, brain=brain, born=self.tick),
            pos,
            c.Needs(hunger=self.rng.uniform(0, 30), energy=self.rng.uniform(70, 100),
                    health=r.max_health, max_health=r.max_health),
            c.Inventory(items=items, gold=gold),
            c.Intent(),
            c.Combat(),
            c.Perception(),
            c.Social(),
            c.Memory(),
        )
        if team is not None:
            self.store.add(eid, c.Team(team))
        # Stagger the expensive per-agent work across ticks: a newcomer first takes in its
        # surroundings for a few ticks, so a crowd does not make its first decisions at once.
        intent = self.store.get(eid, c.Intent)
        start(self, intent, Action(name="idle", args={"ticks": 1 + eid % r.think_interval_ticks}))
        intent.next_think = self.tick + 1 + eid % r.think_interval_ticks
        look = self.tick + 1 + eid % r.perception_interval_ticks
        self.store.get(eid, c.Perception).next_update = look
        self.schedule.look_at(eid, look)
        self._index(eid)  # the grid, the name, the personality count, the team
        self._perceive(eid, pos, self.store.get(eid, c.Perception))
        self.count("agents_spawned")
        self.emit(ev.SPAWN, agent=eid, name=name, personality=personality, x=x, y=y,
                  brain=brain, **({"team": team} if team is not None else {}))
        return eid

    def _perceive(self, eid: int, pos: c.Position, perc: c.Perception) -> None:
        agents, items, objects = perceive(self, eid, pos.x, pos.y)
        assert objects is not None
        perc.agents, perc.items, perc.objects = agents, items, objects

    def spawn_item(self, kind: str, qty: int, x: int, y: int, *, owner: int = NO_ONE,
                   source: str | None = None, carried: bool = False) -> int:
        """Put goods on a tile (merging with a like stack there). ``source`` names a gold
        source for the ledger; goods moved from an inventory pass no source and
        ``carried``: under ``game.metrics_version`` 2 the stack counts them as
        ``SecondHand`` (picking them up again is not gathering)."""
        if kind not in ITEMS:
            raise WorldError(f"unknown item kind {kind!r}; expected one of {', '.join(ITEMS)}")
        if qty < 1:
            raise WorldError(f"item quantity must be >= 1, got {qty}")
        if not self.terrain.in_bounds(x, y):
            raise WorldError(f"tile ({x}, {y}) is off the map")
        if kind == GOLD and source is not None:
            self.market.mint(qty)
        # Version 1 of the metrics rules keeps no such count: its worlds hash as they did.
        second_hand = qty if carried and self.rules.metrics_version >= 2 else 0
        return self.ground.put(kind, qty, x, y, owner=owner, second_hand=second_hand)

    def spawn_object(self, kind: str, x: int, y: int) -> int:
        spec = OBJECTS.get(kind)
        if spec is None:
            raise WorldError(f"unknown object kind {kind!r}; expected one of "
                             f"{', '.join(OBJECTS)}")
        self._check_tile(x, y)
        if spec.blocking and (self.ground.items.at(x, y) or self.agents_grid.at(x, y)):
            raise WorldError(f"tile ({x}, {y}) is not clear (an agent or items stand there) "
                             f"and a {kind} would block it; pick a clear tile")
        pos = c.Position(x, y)
        eid = self.store.create(c.StaticObject(kind=kind, stock=spec.max_stock), pos)
        self._index(eid)
        return eid

    def spawn_random_item(self) -> int | None:
        spot = self.terrain.random_open_tile(self.rng)
        if spot is None:
            return None
        kinds = list(ITEMS.values())
        kind = self.rng.choices(kinds, [k.spawn_weight for k in kinds])[0]
        qty = self.rng.randint(3, 12) if kind.name == GOLD else 1
        return self.spawn_item(kind.name, qty, *spot, source="spawn")

    def remove_entity(self, eid: int) -> None:
        """Delete an entity and drop it from every index (no drops, no events)."""
        store = self.store
        if store.has(eid, c.Agent):
            self.agents_grid.remove(eid)
            self.population.remove(eid, store.get(eid, c.Agent), store.try_get(eid, c.Team))
            self.players.seats.pop(eid, None)  # nobody plays the dead
        else:
            self.ground.unindex(eid)
            self.teams.points.pop(eid, None)  # a capture point's owner and progress
        self.ground.changed(eid)
        store.delete(eid)

    # -- queries -----------------------------------------------------------------------------

    def agents(self) -> list[tuple[int, AgentRow]]:
        """Every living agent with all its components, ascending by id (cached)."""
        # The store makes these rows with AgentRow._make (the handle's row maker).
        return self._agents_query()  # type: ignore[return-value]

    def agent_row(self, eid: int) -> AgentRow | None:
        """One agent's components (as in ``agents()``), or None if it is not an agent."""
        return self.agent_rows().get(eid)

    def agent_rows(self) -> dict[int, AgentRow]:
        """Every living agent's components by id (cached; read-only)."""
        rows = self.agents()
        if rows is not self._rows_indexed:  # the agent set changed since the index was built
            self._row_index = dict(rows)
            self._rows_indexed = rows
        return self._row_index

    def agent_columns(self) -> AgentColumns:
        """Every living agent's hot components as parallel lists (cached; read-only)."""
        rows = self.agents()
        if rows is not self._columns.rows:
            self._columns = AgentColumns.of(rows)
        return self._columns

    def is_agent(self, eid: int) -> bool:
        return self.store.has(eid, c.Agent)

    def alive(self, eid: int) -> bool:
        needs = self.store.try_get(eid, c.Needs)
        return needs is not None and needs.health > 0

    def label(self, eid: int) -> str:
        agent = self.store.try_get(eid, c.Agent)
        if agent is not None:
            return f"{agent.name}#{eid}"
        item = self.store.try_get(eid, c.Item)
        if item is not None:
            return f"{item.kind}#{eid}"
        obj = self.store.try_get(eid, c.StaticObject)
        if obj is not None:
            return f"{obj.kind}#{eid}"
        return f"#{eid}"

    def name_of(self, eid: int) -> str:
        agent = self.store.try_get(eid, c.Agent)
        return agent.name if agent else f"#{eid}"

    def describe_tile(self, x: int, y: int) -> str:
        if not self.terrain.in_bounds(x, y):
            return "off the map"
        obj = self.ground.object_at(x, y)
        return obj.kind if obj is not None else self.terrain.tile_name(x, y)

    def total_gold(self) -> int:
        """Gold carried plus gold lying on the ground."""
        carried: int = sum(inv.gold for _, (inv,) in self.store.query(c.Inventory))
        ground: int = sum(item.qty for _, (item,) in self.store.query(c.Item)
                          if item.kind == GOLD)
        return carried + ground

    # -- events and memory -------------------------------------------------------------------

    def emit(self, type: str, **fields: Any) -> None:
        event = {"type": type, **fields}
        self._events.append(event)
        if self.metrics.enabled:
            self.metrics.on_event(self, event)

    def count(self, counter: str, n: int = 1) -> None:
        self.counters[counter] = self.counters.get(counter, 0) + n

    def remember(self, eid: int, text: str) -> None:
        memory = self.store.try_get(eid, c.Memory)
        if memory is not None:
            memory.recent.append({"tick": self.tick, "text": text})
            if len(memory.recent) > MEMORY_SIZE:
                del memory.recent[0]

    # -- the tick ----------------------------------------------------------------------------

    def step(self, inputs: Sequence[Input] | None = None) -> TickReport:
        """Advance one tick. ``inputs`` (for replay) replaces draining the inbox."""
        self.tick += 1
        self.abilities.fresh = False
        self.replaying = inputs is not None
        if inputs is None:
            inputs = self.inbox.drain(self.tick)
        else:
            for inp in inputs:
                if inp.tick != self.tick:
                    raise WorldError(f"input #{inp.seq} is for tick {inp.tick}, "
                                     f"not {self.tick}")
            if inputs:
                self.inbox.next_seq = max(self.inbox.next_seq, inputs[-1].seq + 1)
        for observer in self.input_observers:
            observer(inputs)
        for inp in inputs:
            apply_input(self, inp)
        for system in SYSTEMS:
            system(self)
        events, self._events = self._events, []
        if self._late_inputs:
            inputs = [*inputs, *self._late_inputs]
            self._late_inputs = []
        return TickReport(tick=self.tick, inputs=inputs, events=events)

    def report_input(self, type: str, data: dict[str, JSON], source: str) -> Input:
        """Record an input a system produced during this tick: an outcome that depended on
        wall-clock time (a sandbox kill). It is stamped with this tick and the next sequence
        number and shown to the input observers at once, so the event log holds it; a replay
        passes it back in with the tick's inputs, and its handler hands it to the system
        instead of the system measuring time again. Types in ``inbox.LATE_INPUTS`` only."""
        from agent_world.core.inbox import LATE_INPUTS  # noqa: PLC0415 - keep inbox leaf

        if type not in LATE_INPUTS:
            raise WorldError(f"{type!r} is not a late input type ({', '.join(LATE_INPUTS)})")
        inp = Input(tick=self.tick, seq=self.inbox.next_seq, type=type, data=data,
                    source=source)
        self.inbox.next_seq += 1
        for observer in self.input_observers:
            observer([inp])
        self._late_inputs.append(inp)
        return inp

    # -- state -------------------------------------------------------------------------------

    def get_state(self) -> dict[str, Any]:
        """Everything that determines the future, as JSON-ready values.

        Entity rows are live objects: serialise (``state_bytes``) before the next tick.
        The parts' keys sit where the first saved worlds had them (the order is hashed)."""
        market, ground = self.market.get_state(), self.ground.get_state()
        return {
            "format": STATE_FORMAT,
            "tick": self.tick,
            "seed": self.seed,
            "rng": self.rng.getstate(),
            "next_entity": self.store.next_id,
            "next_seq": self.inbox.next_seq,
            "next_offer": market["next_offer"],
            "config": self._sim_config,
            "terrain": self.terrain.get_state(),
            "prices": market["prices"],
            "offers": market["offers"],
            "ledger": market["ledger"],
            "counters": self.counters,
            "spawn_credit": ground["spawn_credit"],
            "market_tally": market["market_tally"],
            "entities": self.store.rows(),
        } | ({} if self.abilities.is_empty() else {"abilities": self.abilities.get_state()}) | (
            {} if self.minds.is_empty() else {"minds": self.minds.get_state()}) | (
            {} if self.metrics.is_empty() else {"metrics": self.metrics.get_state()}) | (
            {} if self.teams.is_empty() else {"teams": self.teams.get_state()}) | (
            {} if self.players.is_empty() else {"players": self.players.get_state()})

    def state_bytes(self) -> bytes:
        return orjson.dumps(self.get_state(), option=orjson.OPT_NON_STR_KEYS)

    def state_hash(self) -> str:
        return hash_state_bytes(self.state_bytes())

    @classmethod
    def from_state(cls, state: dict[str, Any], config: Config | None = None) -> World:
        """Rebuild a world from ``get_state()`` output (as parsed from JSON).

        ``config`` supplies the settings that do not shape the simulation (name, tick rate,
        paths ...); the simulation settings always come from the state."""
        if state.get("format") != STATE_FORMAT:
            raise WorldError(f"state format {state.get('format')!r} is not supported "
                             f"(this version reads format {STATE_FORMAT})")
        base = (config or Config()).to_dict()
        saved = state["config"]
        # A world keeps the rules version it was made under. A setting added since (or a
        # whole section, like abilities) takes the value that reproduces the behaviour the
        # world ran with (core/rules/compat.py), else its default; the state keeps exactly
        # the keys it was saved with, so that it hashes as it did.
        version = saved_rules_version(saved.get("game", {}))
        defaults = Config().to_dict()
        rules = {name: {**defaults[name], **missing_settings(name, version),
                        **saved.get(name, {})}
                 for name in SIMULATION_SECTIONS}
        rules["world"].update({k: base["world"][k] for k in _NOT_SIMULATION})
        merged = config_from_dict({**base, **rules}, source="saved state")
        world = cls(merged, Terrain.from_state(state["terrain"]), seed=int(state["seed"]))
        world._sim_config = {name: {k: v for k, v in world._sim_config[name].items()
                                    if k in saved[name]}
                             for name in SIMULATION_SECTIONS if name in saved}
        version, internal, gauss = state["rng"]
        world.rng.setstate((version, tuple(internal), gauss))
        world.tick = int(state["tick"])
        world.inbox.next_seq = int(state["next_seq"])
        world.market.set_state(state)
        world.counters = dict(state["counters"])
        world.ground.set_state(state)
        world.abilities.set_state(state.get("abilities"))
        world.minds.set_state(state.get("minds"))
        world.metrics.set_state(state.get("metrics"))
        world.teams.set_state(state.get("teams"))
        world.players.set_state(state.get("players"))
        for row in state["entities"]:
            world.place_entity(int(row["id"]), [c.component_from_state(name, data)
                                                for name, data in row.items() if name != "id"])
        world.store.set_next_id(int(state["next_entity"]))
        return world

    def place_entity(self, eid: int, components: Sequence[Any]) -> None:
        """Add an entity with a known id and its components as they are (a loaded or copied
        one), and index it like a spawned one."""
        self.store.create(*components, eid=eid)
        self._index(eid)

    def _index(self, eid: int) -> None:
        store = self.store
        pos = store.try_get(eid, c.Position)
        if pos is None:
            return
        if store.has(eid, c.Agent):
            self.agents_grid.insert(eid, pos)
            self.population.add(eid, store.get(eid, c.Agent), store.try_get(eid, c.Team))
        else:
            self.ground.index(eid, pos)
        self.ground.changed(eid)

    def close(self) -> None:
        self.store.close()


def hash_state_bytes(data: bytes) -> str:
    """The state hash: a stable digest of the canonical snapshot bytes."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()
