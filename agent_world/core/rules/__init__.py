"""The rules a world runs by, versioned as a whole.

A world is made under the current rules (``RULES_VERSION``) and keeps the rules it was made
under for ever: its meta.json and every snapshot record the version, and a changed rule gets
a new version instead of a setting with a legacy value. What older versions do differently
lives in ``compat`` (their ``Ruleset`` and the settings they lack); the systems ask the
world's ``Ruleset`` what to do and never compare version numbers.

In a world's state the version is carried by ``game.brain_version`` (its first name, from
when the built-in brains were the only rule that had changed): keeping that key keeps every
saved world's state hash.

Policy: a rules version stays runnable (replay, resume, fork) for at least two years after
the release that replaced it, and as long as any golden world of it is kept in tests/. A
version retired after that is listed in ``RETIRED`` with the last release that runs it, and
opening such a world stops with one line naming that release.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_world.core.errors import WorldError
from agent_world.core.rules.compat import ADDED_IN, RULESETS, SETTINGS_BEFORE_VERSIONS
from agent_world.core.rules.ruleset import Ruleset

__all__ = ["OLDEST_RULES_VERSION", "RETIRED", "RULES_VERSION", "Ruleset", "check_rules_version",
           "missing_settings", "ruleset", "saved_rules_version"]

RULES_VERSION = 2
OLDEST_RULES_VERSION = min(RULESETS)
RETIRED: dict[int, str] = {}  # rules version -> the last release that runs it


def check_rules_version(version: object, what: str = "this world") -> None:
    """Raise WorldError with one line if this release cannot run rules ``version``."""
    if not isinstance(version, int) or isinstance(version, bool):
        raise WorldError(f"{what} names rules version {version!r}, not a whole number; its "
                         "state is damaged")
    if version in RULESETS:
        return
    if version in RETIRED:
        raise WorldError(f"{what} runs rules version {version}, retired since; "
                         f"{RETIRED[version]} is the last release that replays and resumes it")
    if version > RULES_VERSION:
        raise WorldError(f"{what} was made under rules version {version}, newer than this "
                         f"release's (it runs rules {OLDEST_RULES_VERSION}..{RULES_VERSION}); "
                         "upgrade Agent World to run it")
    raise WorldError(f"{what} names rules version {version!r}, which no release has had; "
                     "its state is damaged")


def ruleset(version: int) -> Ruleset:
    check_rules_version(version)
    return RULESETS[version]


def saved_rules_version(saved_game: Mapping[str, Any]) -> int:
    """The rules version of a state's ``config.game`` (as saved: keys may be missing);
    WorldError with one line if this release does not run it."""
    version = saved_game.get("brain_version", SETTINGS_BEFORE_VERSIONS["game"]["brain_version"])
    check_rules_version(version)
    return int(version)


def missing_settings(section: str, version: int) -> dict[str, Any]:
    """The values a world of rules ``version`` runs with for settings of ``section`` that
    its state lacks (it was saved before they existed): the behaviour it had."""
    values = dict(SETTINGS_BEFORE_VERSIONS.get(section, {}))
    for added_in in sorted(ADDED_IN):
        if added_in > version:
            values.update(ADDED_IN[added_in].get(section, {}))
    return values
