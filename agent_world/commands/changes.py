"""Commands that change the world: /spawn /kill /give.

They never touch the world directly. Each is checked against the world as it is now, for an
immediate answer, and then submitted to the world's inbox as an input from "console", so it
is logged, applied at the next tick and replayed exactly. The input handlers check again
when they apply it (the world may have moved on in between) and reject it with a reason,
which the console reports when it sees the rejection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_world.commands.lookup import kind_of, resolve
from agent_world.commands.parsing import (
    BRAINS,
    CommandError,
    EntityRef,
    GiveArgs,
    SayArgs,
    SpawnArgs,
    did_you_mean,
)
from agent_world.config import llm_profile_of, unknown_model
from agent_world.core.items import ITEMS, OBJECTS
from agent_world.core.world import World

if TYPE_CHECKING:
    from agent_world.commands.dispatch import Console

__all__ = ["SPAWN_HELP", "check_spawn_tile", "give", "kill", "spawn"]

SPAWN_HELP = (
    f"KIND: agent, an item ({', '.join(ITEMS)}) or an object ({', '.join(OBJECTS)}).",
    "NAME (agents only): a free name, 1-24 letters, digits, _ ' or -, starting with a letter.",
    "X Y: a free tile on the map (not water, rock, a tree ...); without them a random free "
    "tile is used.",
    "Agent options: personality=aggressive|cautious|trader|gatherer brain=builtin|llm gold=N "
    "team=NAME (teams take capture points and talk with team_say) model=NAME (with "
    "brain=llm: the model profile of llm.models it thinks with; brain=llm:NAME says the same).",
    "Item option: qty=N.",
    "Examples: /spawn agent Zed 5 5 personality=trader gold=10 | /spawn apple 3 4 qty=3 | "
    "/spawn tree",
    "A spawn is an input: it is logged and replayed, and takes effect at the next tick.",
)


def _when(console: Console) -> str:
    tick = console.world.tick + 1
    if console.loop.paused:
        return f"at tick {tick} (paused: /step applies it)"
    return f"at tick {tick}"


def check_spawn_tile(world: World, kind: str, x: int, y: int) -> None:
    """Raise CommandError unless ``kind`` may be spawned on tile (x, y) right now."""
    terrain = world.terrain
    if not terrain.in_bounds(x, y):
        raise CommandError(f"({x}, {y}) is off the map; X must be 0..{terrain.width - 1} and "
                           f"Y 0..{terrain.height - 1}")
    if terrain.is_blocked(x, y):
        raise CommandError(f"({x}, {y}) is {world.describe_tile(x, y)}, not a free tile; "
                           "pick another tile or leave out X Y")
    spec = OBJECTS.get(kind)
    if spec is not None and spec.blocking:
        if world.ground.items.at(x, y):
            raise CommandError(f"({x}, {y}) has items on it and a {kind} would bury them; "
                               "pick a clear tile")
        if world.agents_grid.at(x, y):
            raise CommandError(f"({x}, {y}) has an agent on it and a {kind} would trap it; "
                               "pick a clear tile")


def _describe_spawn(args: SpawnArgs) -> str:
    where = f" at ({args.x}, {args.y})" if args.x is not None else " on a random free tile"
    if args.kind == "agent":
        name = repr(args.name) if args.name else "a newcomer"
        extras = [f"{k}={getattr(args, k)}" for k in ("personality", "brain", "gold", "team")
                  if getattr(args, k) is not None]
        return f"agent {name}{where}" + (f" ({', '.join(extras)})" if extras else "")
    if args.kind in ITEMS:
        return f"{args.qty or 1} {args.kind}{where}"
    return f"a {args.kind}{where}"


async def spawn(console: Console, args: SpawnArgs) -> list[str]:
    world = console.world
    if args.kind == "agent":
        if args.name is not None:
            key = args.name.lower()
            if world.population.find(args.name) is not None:
                raise CommandError(f"an agent named {args.name!r} already lives; pick "
                                   "another name")
            if key in console.pending_names:
                raise CommandError(f"an agent named {args.name!r} is already being spawned; "
                                   "pick another name")
        profile = llm_profile_of(args.brain) if args.brain is not None else None
        if profile is not None and getattr(console.session, "llm", None) is None:
            raise CommandError("brain=llm needs an LLM and this world runs without one "
                               "(llm.provider is none); use brain=builtin")
        models = getattr(console.session, "llm_models", {})
        if profile and profile not in models:
            raise CommandError(f"{unknown_model(profile, list(models))}"
                               f"{did_you_mean(profile, list(models))}")
        if args.brain == "remote" and getattr(console.session, "remote", None) is None:
            raise CommandError("brain=remote is for agents played over the web server's "
                               "/agents WebSocket, and this world takes none (no web server, "
                               "or remote.enabled: false)")
        if args.brain is not None and args.brain not in (*BRAINS, "remote") and not profile:
            brains = getattr(console.session, "brains", None)
            known = brains.names() if brains is not None else []
            if args.brain not in known:
                fix = ("put its file in the brains.policies folder (docs/policies.md)"
                       if args.brain.startswith("policy:") else
                       "register yours in the config: brains: {NAME: \"module:Class\"}")
                raise CommandError(
                    f"unknown brain {args.brain!r} (brains: {', '.join([*BRAINS, *known])}); "
                    f"{fix}{did_you_mean(args.brain, [*BRAINS, *known])}")
        cap = world.settings.max_agents
        if len(world.agents()) + console.pending_agents >= cap:
            raise CommandError(f"the world holds {len(world.agents())} agents and "
                               f"{console.pending_agents} more are coming; its cap is {cap} "
                               "(world.max_agents): raise it in the config, or /kill some")
    if args.x is not None and args.y is not None:
        check_spawn_tile(world, args.kind, args.x, args.y)
    data = args.input_data()
    model_for = console.world.config.llm.model_for
    if args.kind == "agent" and args.brain == "llm" and model_for:
        data["model_for"] = model_for  # logged with it: replay needs no configuration
    console.submit("spawn", data)
    if args.kind == "agent":
        console.pending_agents += 1
    if args.name is not None:
        console.pending_names.add(args.name.lower())
    return [f"spawning {_describe_spawn(args)} {_when(console)}"]


async def kill(console: Console, ref: EntityRef) -> list[str]:
    world = console.world
    eid = resolve(world, ref)
    console.submit("kill", {"target": eid})
    what = ("dies and drops what it carries" if world.is_agent(eid)
            else f"({kind_of(world, eid)}) is removed")
    return [f"{world.label(eid)} {what} {_when(console)}"]


async def say(console: Console, args: SayArgs) -> list[str]:
    """The agent says TEXT next: a ``plan`` input, as /cast orders an ability."""
    world = console.world
    eid = resolve(world, args.speaker, agent=True)
    console.submit("plan", {"agent": eid, "source": "console", "actions": [
        {"name": "say", "args": {"text": args.text}}]})
    return [f"{world.label(eid)} says \"{args.text}\" {_when(console)}"]


async def give(console: Console, args: GiveArgs) -> list[str]:
    world = console.world
    eid = resolve(world, args.target, agent=True)
    console.submit("give", {"target": eid, "item": args.item, "qty": args.qty})
    return [f"{world.label(eid)} receives {args.qty} {args.item} {_when(console)}"]
