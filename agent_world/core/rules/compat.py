"""Everything older rules do differently, in one place.

Nothing outside ``agent_world.core.rules`` knows which rules version does what: the systems
ask the world's ``Ruleset`` (``world.ruleset``), and a saved state's missing settings are
completed here. When a rule changes:

1. bump ``RULES_VERSION`` in ``agent_world/core/rules/__init__.py`` (and the ``high`` bound
   of ``game.brain_version``, which carries the version in a world's state);
2. write the new behaviour as the current code, and give the *previous* version a
   ``Ruleset`` below that keeps the old behaviour (an old function moves here, as the first
   brains did: ``brains_v1``);
3. a setting that is new in version N is listed in ``ADDED_IN[N]`` with the value that
   reproduces the rules before it; the setting itself needs no legacy value;
4. make a golden world under the new rules (``python -m tests.golden.make``); the old
   golden worlds must keep passing untouched.
"""

from __future__ import annotations

from typing import Any

from agent_world.core.brains import v2
from agent_world.core.rules import brains_v1
from agent_world.core.rules.ruleset import Ruleset

__all__ = ["ADDED_IN", "RULESETS", "SETTINGS_BEFORE_VERSIONS"]

# Settings added before rules were versioned (all in release 0.1.0, by rules versions 1
# and 2): a state saved without one ran with this value, the behaviour before it. Their
# numbers that still show the defaults are the scenario mechanics', which are off unless
# set, so their values did not change anything before them.
SETTINGS_BEFORE_VERSIONS: dict[str, dict[str, Any]] = {
    "world": {"hazard_tiles_per_1000_tiles": 0.0, "capture_points": 0, "max_agents": 10**7,
              "immigrants_fill_mix": False},
    "game": {"brain_version": 1, "agent_metrics": False, "metrics_version": 1,
             "carry_capacity": 0.0, "food_spoilage": 0.0, "ground_item_life_ticks": 0,
             "market_fee": 0.0, "gold_upkeep_per_hour": 0.0, "upkeep_free_gold": 0,
             "weapon_wear": 0.0, "estate_dues": 0.0, "inheritance": False,
             "lifespan_ticks": 0, "ability_requests_per_hour": 0.0, "hazard_damage": 1.0,
             "recipes": {}, "craft_ticks": 20, "capture_radius": 2, "capture_ticks": 30,
             "team_channel_size": 16, "team_message_chars": 80},
    "abilities": {"caps": "effect", "min_cooldown_ticks": 0, "kills_to_disable": 1,
                  "tick_steps": 0},
}

# Settings new in rules version N (the key), with the values that reproduce the rules
# before it: {N: {section: {setting: value}}}. None yet: every setting so far came before
# rules were versioned (above).
ADDED_IN: dict[int, dict[str, dict[str, Any]]] = {}

RULESETS: dict[int, Ruleset] = {
    # The first rules: the first brains, which never cast, remember nothing beyond their
    # components, and whose actions the world does not count.
    1: Ruleset(version=1, decide=brains_v1.decide, counts_actions_started=False,
               avoids_unreachable=False, teaches_needs=False, brains_cast=False),
    2: Ruleset(version=2, decide=v2.decide, counts_actions_started=True,
               avoids_unreachable=True, teaches_needs=True, brains_cast=True),
}
