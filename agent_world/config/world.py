"""The simulation's sections: the world (``world``) and its rules (``game``). Both travel
with a world's state (a saved world keeps the rules it was made under)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent_world.config.base import ConfigError, setting

__all__ = ["PERSONALITIES", "RECIPE", "GameConfig", "WorldConfig"]

PERSONALITIES = ("aggressive", "cautious", "gatherer", "trader")
_WORLD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True, slots=True, kw_only=True)
class WorldConfig:
    """The map, its population and its clock."""

    name: str = setting("default", "save folder name under paths.saves (letters, digits, _ . -)")
    size: tuple[int, int] = setting(
        (64, 64), "map width and height in tiles: one number for a square, or [width, height]",
        low=16, high=4096,
    )
    tick_rate: float = setting(10.0, "ticks per second when running paced", low=0.001,
                               high=1000)
    seed: int = setting(42, "seed of the world's random number generator", low=0, high=2**63 - 1)
    starting_agents: int = setting(20, "agents created with a new world", low=0, high=200_000)
    item_spawn_rate: float = setting(
        0.25, "items appearing on the map per tick, on average (food, materials, weapons, gold)",
        low=0, high=1000,
    )
    max_items_per_1000_tiles: float = setting(
        30.0, "cap on items lying on the ground, per 1000 tiles of map", low=0, high=1000,
    )
    obstacle_density: float = setting(
        0.10, "fraction of the map covered by blocking terrain (water, rock)", low=0, high=0.5,
    )
    objects_per_1000_tiles: float = setting(
        25.0, "trees, bushes and rocks per 1000 tiles", low=0, high=500,
    )
    shelters_per_1000_tiles: float = setting(
        0.8, "shelters (better rest) per 1000 tiles", low=0, high=100,
    )
    hazard_tiles_per_1000_tiles: float = setting(
        0.0, "hazard tiles (thorn patches, in clumps of a few tiles) per 1000 tiles of a new "
        "map: walkable, but they hurt whoever stands on them (game.hazard_damage); the "
        "foraging scenario sets them; 0: none", low=0, high=200,
    )
    capture_points: int = setting(
        0, "capture points placed on a new map: a team takes one by holding it alone for "
        "game.capture_ticks and scores every tick it holds it (the team_capture scenario); "
        "0: none", low=0, high=100,
    )
    personality_mix: dict[str, float] = setting(
        {"aggressive": 1.0, "cautious": 1.0, "gatherer": 1.0, "trader": 1.0},
        "relative weights of the built-in personalities among new agents",
        low=0, high=1000,
    )
    immigration_interval_ticks: int = setting(
        600, "while fewer agents live than starting_agents, one newcomer arrives this often "
        "(0 turns immigration off)", low=0, high=10**9,
    )
    max_agents: int = setting(
        10_000, "most agents alive at once: spawns past it are refused (at least "
        "starting_agents)", low=1, high=10**7,
    )
    immigrants_fill_mix: bool = setting(
        True, "newcomers take the personality the population lacks most against "
        "personality_mix (a missing one first), and one arrives even in a full world while "
        "a personality of the mix has no one left; off: newcomers are drawn at random from "
        "the mix and arrive only while the world is short (worlds saved before this setting)",
    )

    def __post_init__(self) -> None:
        # One canonical key order: the mix is part of a world's state, and so of its hash.
        object.__setattr__(self, "personality_mix", dict(sorted(self.personality_mix.items())))
        unknown = sorted(set(self.personality_mix) - set(PERSONALITIES))
        if unknown:
            raise ConfigError(
                f"world.personality_mix: unknown personality {unknown[0]!r}; "
                f"expected some of {', '.join(PERSONALITIES)}"
            )
        if self.starting_agents > self.max_agents:
            raise ConfigError(
                f"world.starting_agents ({self.starting_agents}) is more than world.max_agents "
                f"({self.max_agents}); raise max_agents or start with fewer agents"
            )
        if self.starting_agents and not any(v > 0 for v in self.personality_mix.values()):
            raise ConfigError(
                "world.personality_mix: every weight is 0; give at least one personality "
                "a weight > 0"
            )
        if not _WORLD_NAME.fullmatch(self.name):
            raise ConfigError(
                f"world.name: {self.name!r} is not a valid folder name; use 1-64 letters, "
                "digits, '_', '.' or '-', starting with a letter or digit"
            )

    @property
    def width(self) -> int:
        return self.size[0]

    @property
    def height(self) -> int:
        return self.size[1]


_RECIPE_PART = r"\s*[a-z_]+(\s*\*\s*[1-9][0-9]{0,3})?\s*"
RECIPE = re.compile(rf"{_RECIPE_PART}(\+{_RECIPE_PART}){{0,5}}")
"""The text of one recipe's inputs: up to six item kinds, each with an optional *COUNT."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GameConfig:
    """Balance numbers. They are part of a world's state: a save keeps the ones it ran with."""

    max_health: float = setting(100.0, "health of a fresh agent", low=1, high=10_000)
    hunger_per_tick: float = setting(0.05, "hunger gained per tick (0 fed .. 100 starving)",
                                     low=0, high=100)
    starvation_damage_per_tick: float = setting(
        0.2, "health lost per tick while hunger is 100", low=0, high=100,
    )
    health_regen_per_tick: float = setting(
        0.05, "health regained per tick while fed (hunger < 50) and rested (energy > 20)",
        low=0, high=100,
    )
    energy_per_tick: float = setting(0.02, "energy spent per tick just living", low=0, high=100)
    energy_per_step: float = setting(0.08, "energy spent per tile walked", low=0, high=100)
    rest_energy_per_tick: float = setting(0.6, "energy regained per tick of rest", low=0,
                                          high=100)
    shelter_rest_multiplier: float = setting(
        2.0, "rest is this many times faster next to a shelter", low=1, high=100,
    )
    move_interval_ticks: int = setting(2, "ticks per tile walked (2 = 5 tiles/s at 10 Hz)",
                                       low=1, high=100)
    vision_radius: int = setting(8, "how far agents see, in tiles", low=1, high=64)
    hearing_radius: int = setting(10, "how far speech carries, in tiles", low=1, high=64)
    perception_interval_ticks: int = setting(
        5, "ticks between two updates of one agent's visible set (staggered across agents)",
        low=1, high=100,
    )
    think_interval_ticks: int = setting(
        15, "ticks between two decisions of a busy built-in agent (idle or attacked agents "
        "decide at once)",
        low=1, high=1000,
    )
    action_timeout_ticks: int = setting(
        300, "an action not finished after this many ticks fails as timed out", low=10,
        high=100_000,
    )
    base_attack_damage: float = setting(6.0, "damage of an unarmed hit before modifiers",
                                        low=0, high=10_000)
    combat_damage_multiplier: float = setting(1.0, "scales all combat damage", low=0, high=100)
    attack_cooldown_ticks: int = setting(6, "ticks between two hits by one agent", low=1,
                                         high=1000)
    attack_energy_cost: float = setting(1.0, "energy spent per hit", low=0, high=100)
    defend_damage_factor: float = setting(
        0.5, "damage taken while defending is multiplied by this", low=0, high=1,
    )
    defend_duration_ticks: int = setting(30, "how long one defend action lasts", low=1,
                                         high=10_000)
    steal_success_chance: float = setting(0.5, "chance that a theft attempt succeeds", low=0,
                                          high=1)
    steal_reputation_cost: float = setting(
        0.15, "reputation lost by a thief who is noticed", low=0, high=2,
    )
    attack_reputation_cost: float = setting(
        0.05, "reputation lost per unprovoked attack", low=0, high=2,
    )
    trade_range: int = setting(3, "offers and gifts reach this many tiles", low=1, high=64)
    offer_ttl_ticks: int = setting(100, "an unanswered trade offer expires after this many ticks",
                                   low=1, high=100_000)
    price_update_interval_ticks: int = setting(
        50, "ticks between two market price updates", low=1, high=100_000,
    )
    price_sensitivity: float = setting(
        0.15, "how strongly one update moves a price toward supply and demand", low=0, high=1,
    )
    object_regrow_ticks: int = setting(
        400, "ticks for a tree, bush or rock to regrow one harvestable unit", low=1,
        high=1_000_000,
    )
    starting_gold_max: int = setting(30, "new agents start with 0..this many gold", low=0,
                                     high=1_000_000)
    # -- the rules of a living world (a world saved before one of them runs on as it did:
    # agent_world/core/rules/compat.py) ---------------------------------------------------
    brain_version: int = setting(
        2, "the rules version a new world is made under (named for its first change, the "
        "built-in brains); a saved world keeps its own. 2: brains that trade by need, talk "
        "from their own state, memory and relationships, cast the abilities that suit their "
        "personality, ask the angel for new ones and remember targets they could not reach, "
        "and the world counts every action started (actions_started); 1: the first rules, "
        "only to reproduce worlds made under them", low=1, high=2,
    )
    agent_metrics: bool = setting(
        True, "count each agent's metrics (gathered, eaten, walked, damage, kills, trades, "
        "gold, casts, decisions, latency, tokens) as part of the world's state: /top, "
        "/metrics and the API show them, and replays keep them (false: worlds saved before "
        "them)",
    )
    metrics_version: int = setting(
        2, "how agent metrics count: 2 = nothing can be raised by undoing and redoing it: "
        "gathering (and gold picked up) counts only goods first taken from the world, not "
        "goods that were carried before (dropped, left by a death), damage and kills on a "
        "teammate do not count, and a team's capture of a point counts once; 1 = every "
        "pickup, hit and capture counts (worlds saved before this setting)", low=1, high=2,
    )
    carry_capacity: float = setting(
        40.0, "weight an agent can carry (item weights are in docs/world.md; gold weighs "
        "nothing); goods past it cannot be picked up, harvested, bought or received. 0: no "
        "limit", low=0, high=1_000_000,
    )
    food_spoilage: float = setting(
        1.0, "how fast food and herbs spoil, carried or on the ground: 1 = each unit lasts "
        "its kind's shelf life on average, 2 = twice as fast, 0 = never", low=0, high=100,
    )
    ground_item_life_ticks: int = setting(
        8_000, "goods other than gold left lying on the ground are lost after about this "
        "many ticks (weather, scavengers), so a full map takes new finds again; 0: they stay",
        low=0, high=10**9,
    )
    market_fee: float = setting(
        0.1, "share of the gold paid in a trade that the market takes (it leaves the world)",
        low=0, high=1,
    )
    gold_upkeep_per_hour: float = setting(
        2.0, "share of an agent's gold above upkeep_free_gold that goes on upkeep (purses, "
        "guards, losses) per world-hour of 36,000 ticks, paid every 1,000 ticks; it keeps "
        "hoards from growing without end", low=0, high=10,
    )
    upkeep_free_gold: int = setting(
        25, "gold an agent keeps free of upkeep", low=0, high=1_000_000,
    )
    weapon_wear: float = setting(
        0.02, "chance that a hit breaks the weapon it was struck with", low=0, high=1,
    )
    estate_dues: float = setting(
        0.5, "share of a dead agent's gold that leaves the world (dues, the burial); the "
        "rest goes to its heirs (inheritance) or falls where it died", low=0, high=1,
    )
    inheritance: bool = setting(
        True, "a dead agent's gold (after estate_dues) goes in equal shares to up to three "
        "living agents it liked best, never its killer; off, or with no one it liked, it "
        "falls where it died",
    )
    lifespan_ticks: int = setting(
        180_000, "agents grow old: past this age each has a 1 in 10 chance every 1,000 ticks "
        "to die of old age (the first agents of a world start at ages spread over half of "
        "it); 0: no one ages", low=0, high=10**12,
    )
    ability_requests_per_hour: float = setting(
        2.0, "new abilities built-in agents may ask the angel for per world-hour (36,000 "
        "ticks), across the world, when none they know fits their need; 0: they never ask",
        low=0, high=3600,
    )
    # -- scenario mechanics: off in the default world (no hazards, recipes or capture points)
    hazard_damage: float = setting(
        1.0, "health lost per tick while standing on a hazard tile (see "
        "world.hazard_tiles_per_1000_tiles)", low=0, high=10_000,
    )
    recipes: dict[str, str] = setting(
        {}, "what the craft action makes: OUTPUT: 'INPUT*N + INPUT ...', item kinds, e.g. "
        "{club: 'wood*2', spear: 'club + stone'}; one unit of the output per craft. {}: no "
        "crafting (the crafting_chain scenario sets a chain)",
    )
    craft_ticks: int = setting(
        20, "ticks one craft takes (the inputs are used and the output made at the end)",
        low=1, high=100_000,
    )
    capture_radius: int = setting(
        2, "tiles (straight-line distance) around a capture point within which agents hold "
        "or take it", low=0, high=50,
    )
    capture_ticks: int = setting(
        30, "ticks a team must be alone at a capture point to take it", low=1, high=100_000,
    )
    team_channel_size: int = setting(
        16, "team_say messages a team's channel keeps (who said what, when, and who heard it "
        "is part of the world's state)", low=1, high=1000,
    )
    team_message_chars: int = setting(
        80, "longest team_say message, in characters", low=1, high=160,
    )

    def __post_init__(self) -> None:
        # One canonical key order: recipes are part of a world's state, and so of its hash.
        object.__setattr__(self, "recipes", dict(sorted(self.recipes.items())))
        for output, text in self.recipes.items():
            if not RECIPE.fullmatch(text):
                raise ConfigError(
                    f"game.recipes.{output} = {text!r}: expected inputs like 'wood*2 + stone' "
                    "(item kinds, each with an optional *COUNT, joined by +)")


