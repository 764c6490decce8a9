"""Code written while the world runs: ``abilities`` (their rules, with the world's state),
``sandbox`` (where ability and policy code runs) and ``angel`` (who writes abilities)."""

from __future__ import annotations

from dataclasses import dataclass

from agent_world.config.base import setting

__all__ = ["AbilitiesConfig", "AngelConfig", "SandboxConfig"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AbilitiesConfig:
    """Rules every ability (built-in or generated) runs under. Part of a world's state like
    the game section: a save keeps the ones it ran with."""

    step_budget: int = setting(
        20_000, "steps one ability call may take (loop turns, function calls, except and "
        "finally entries, items iterated); the call fails once it runs out", low=100,
        high=10_000_000,
    )
    alloc_budget: int = setting(
        4_000_000, "characters and list items one call may create through operators, "
        "methods and conversions; past it the call fails", low=10_000, high=100_000_000,
    )
    max_effects: int = setting(8, "effects one call may return", low=1, high=100)
    caps: str = setting(
        "cast", "what the max_* caps below limit: cast (the total of one cast, over all its "
        "effects and targets; at most one move) or effect (each effect alone, the rule of "
        "worlds saved before this setting)", choices=("cast", "effect"),
    )
    max_damage: float = setting(30.0, "damage one cast may deal in all (per cast)", low=0,
                                high=10_000)
    max_heal: float = setting(30.0, "health one cast may restore in all (per cast)", low=0,
                              high=10_000)
    max_move_tiles: int = setting(6, "tiles the move (teleport) effect of a cast may carry "
                                  "the caster", low=0, high=64)
    max_push_tiles: int = setting(3, "tiles one cast may shove its targets in all (per "
                                  "cast)", low=0, high=64)
    max_created_items: int = setting(
        3, "items one cast may create in all (per cast; food, materials and herbs only)",
        low=0, high=1000,
    )
    max_need_change: float = setting(
        30.0, "hunger one cast may change in all, and energy likewise (per cast: the sum of "
        "abs(delta) over its need effects)", low=0, high=100,
    )
    max_status_ticks: int = setting(
        300, "ticks of one status (shield, haste ...) one cast may put on one agent in all "
        "(per cast)", low=1, high=1_000_000,
    )
    min_cooldown_ticks: int = setting(
        10, "shortest cooldown of any ability, whatever its COOLDOWN says (10 = one cast a "
        "second at 10 Hz, the shortest built-in cooldown)", low=0, high=100_000,
    )
    kills_to_disable: int = setting(
        3, "calls killed in a row by a backstop (wall clock, CPU or memory limit, a dead "
        "worker) that disable an ability; each kill fails its cast, a call that completes "
        "resets the count (the step budget and errors disable at once)", low=1, high=1000,
    )
    max_range: int = setting(8, "largest RANGE an ability may declare, in tiles", low=0,
                             high=64)
    calls_per_tick: int = setting(
        64, "ability calls run in one tick at most; casters past it (by id) wait a tick",
        low=1, high=10_000,
    )
    tick_steps: int = setting(
        100_000, "steps the ability calls of one tick may take in all; once the calls before "
        "it took that many, a cast waits for the next tick (a rule of the world, the same on "
        "every machine; 0: no limit)", low=0, high=10**9,
    )
    request_timeout_ticks: int = setting(
        600, "an agent's request_ability fails when the angel has not answered by then",
        low=10, high=10**9,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxConfig:
    """The worker processes that run ability code (they never touch the world)."""

    call_timeout_ms: float = setting(
        5000.0, "a backstop: a call whose worker has not answered after this long of "
        "wall-clock time is killed, its cast fails and the kill is recorded as an outside "
        "event (abilities.kills_to_disable kills in a row disable the ability). The step "
        "budget, not this, limits code: it is set far beyond what code within its budget "
        "takes on a busy machine, and a lower value makes a busy machine's world differ from "
        "a quiet one's", low=1, high=600_000,
    )
    memory_mb: int = setting(256, "address-space limit of a worker process (RLIMIT_AS)",
                             low=64, high=1_000_000)
    cpu_seconds: int = setting(
        1, "CPU seconds one call may use (RLIMIT_CPU, in whole seconds, so up to one more), a "
        "backstop like call_timeout_ms; a new ability whose dry runs take more than a tenth "
        "of it is refused as too slow, so accepted code stays far from it", low=1, high=3600,
    )
    spare_workers: int = setting(
        1, "workers kept started and idle, so a killed one is replaced at once", low=0,
        high=16,
    )
    replay_slack: float = setting(
        20.0, "replay and resume give calls this many times call_timeout_ms (a slower "
        "machine must not stop what the recorded run did not)", low=1, high=10_000,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class AngelConfig:
    """The angel: writes new abilities when an agent (request_ability) or the operator
    (/ability) asks for one."""

    generator: str = setting(
        "auto", "who writes the code: auto (the LLM when llm.provider is set, else "
        "templates), templates, or llm", choices=("auto", "templates", "llm"),
    )
    wait: str = setting(
        "requester", "while the angel works: requester (only the asking agent waits) or "
        "world (the world pauses until the answer is in)", choices=("requester", "world"),
    )
    max_tries: int = setting(3, "attempts per request, each failure fed back, before refusing",
                             low=1, high=20)
    dry_runs: int = setting(4, "scratch worlds a new ability must run cleanly in", low=1,
                            high=64)
    answer_ticks: int = setting(
        50, "with templates (no LLM), an answer enters the world this many ticks after its "
        "request, the world waiting at that tick if the angel is not done, so that a world "
        "is the same on every machine (0: as soon as it is ready; an LLM's answers always "
        "enter as soon as they are ready)", low=0, high=100_000,
    )


