"""Movement: walking with A* around blocking tiles, wandering, following and fleeing, and
walking into reach for targeted actions (pickup, attack, trade ...)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_world.core import components as c
from agent_world.core.pathfinding import find_path
from agent_world.core.systems.acting import chebyshev, fail, finish, give_up_on, reach

if TYPE_CHECKING:
    from agent_world.core.world import World

__all__ = ["movement_system", "walk_toward"]

WANDER_TICKS = 30
FOLLOW_TICKS = 100
FLEE_TICKS = 80
# Targeted actions whose target is an entity the agent must walk up to.
APPROACHING = frozenset({"pickup", "use", "attack", "steal", "give", "trade_offer",
                         "use_ability"})


def _step(world: World, eid: int, pos: c.Position, needs: c.Needs, intent: c.Intent,
          tile: int) -> bool:
    """Move onto ``tile`` (adjacent) unless it is blocked; spends energy and time."""
    terrain = world.terrain
    if terrain.blocked[tile]:
        return False
    pos.y, pos.x = divmod(tile, terrain.width)
    world.agents_grid.moved(eid)
    if world.metrics.enabled:
        world.metrics.walked(world, eid)
    r = world.rules
    energy = needs.energy - r.energy_per_step
    needs.energy = energy = 0.0 if energy < 0.0 else energy
    interval = r.move_interval_ticks * 2 if energy < 10.0 else r.move_interval_ticks
    if eid in world.abilities.statuses:  # haste and slow, from abilities
        book, tick = world.abilities, world.tick
        if book.has_status(eid, "haste", tick):
            interval = max(1, interval // 2)
        if book.has_status(eid, "slow", tick):
            interval *= 2
    intent.next_move = world.tick + interval
    return True


def _plan(world: World, pos: c.Position, intent: c.Intent, gx: int, gy: int,
          reach: int) -> None:
    t = world.terrain
    distance = abs(pos.x - gx) + abs(pos.y - gy)
    steps, _complete = find_path(t.blocked, t.width, t.height, (pos.x, pos.y), (gx, gy),
                                 reach, max_nodes=min(4000, 200 + 40 * distance),
                                 avoid=world.ground.hazard_tiles or None)
    intent.path = steps
    intent.goal = gy * t.width + gx


def walk_toward(world: World, eid: int, pos: c.Position, needs: c.Needs, intent: c.Intent,
                gx: int, gy: int, reach: int) -> str:
    """One step toward (gx, gy): returns 'arrived', 'moving' or 'stuck'."""
    if chebyshev(pos.x, pos.y, gx, gy) <= reach:
        return "arrived"
    w = world.terrain.width
    goal = intent.goal
    # Re-plan when there is no path or the goal has moved (a walking target).
    if not intent.path or goal < 0 or abs(goal % w - gx) + abs(goal // w - gy) > 1:
        _plan(world, pos, intent, gx, gy, reach)
    if intent.path and _step(world, eid, pos, needs, intent, intent.path[-1]):
        intent.path.pop()
        return "moving"
    _plan(world, pos, intent, gx, gy, reach)  # something stood in the way: once more
    if intent.path and _step(world, eid, pos, needs, intent, intent.path[-1]):
        intent.path.pop()
        return "moving"
    return "stuck"


def _move_to(world: World, eid: int, pos: c.Position, needs: c.Needs,
             intent: c.Intent) -> None:
    action = intent.action
    assert action is not None
    if "target" in action.args:
        target = world.store.try_get(action.args["target"], c.Position)
        if target is None:
            fail(world, eid, intent, f"target #{action.args['target']} is gone")
            return
        gx, gy = target.x, target.y
    else:
        gx, gy = action.args["x"], action.args["y"]
        if not world.terrain.in_bounds(gx, gy):
            fail(world, eid, intent, f"({gx}, {gy}) is off the map")
            return
    reach = 1 if world.terrain.is_blocked(gx, gy) else 0
    state = walk_toward(world, eid, pos, needs, intent, gx, gy, reach)
    if state == "arrived":
        finish(intent)
    elif state == "stuck":
        fail(world, eid, intent, f"no way to ({gx}, {gy})")
        if "target" in action.args:
            give_up_on(world, eid, action.args["target"])


_HEADINGS = ((0, -1), (1, 0), (0, 1), (-1, 0))


def _wander_leg(world: World, pos: c.Position) -> list[int]:
    """A straight walk of 2-6 free tiles in a random heading (no path search needed),
    stopping short of hazards."""
    rng = world.rng
    terrain = world.terrain
    w = terrain.width
    hazards = world.ground.hazard_tiles
    for _ in range(4):
        dx, dy = _HEADINGS[rng.randrange(4)]
        leg: list[int] = []
        x, y = pos.x, pos.y
        for _step in range(rng.randint(2, 6)):
            x, y = x + dx, y + dy
            if terrain.is_blocked(x, y) or (hazards and y * w + x in hazards):
                break
            leg.append(y * w + x)
        if leg:
            leg.reverse()
            return leg
    return []


def _wander(world: World, eid: int, pos: c.Position, needs: c.Needs,
            intent: c.Intent) -> None:
    action = intent.action
    assert action is not None
    if world.tick - intent.since >= action.args.get("ticks", WANDER_TICKS):
        finish(intent)
        return
    if not intent.path:
        intent.path = _wander_leg(world, pos)
    if intent.path and _step(world, eid, pos, needs, intent, intent.path[-1]):
        intent.path.pop()
        # Wandering is strolling: half the pace of walking somewhere on purpose.
        intent.next_move += world.rules.move_interval_ticks
    else:
        intent.path = []


def _follow(world: World, eid: int, pos: c.Position, needs: c.Needs,
            intent: c.Intent) -> None:
    action = intent.action
    assert action is not None
    target = action.args["target"]
    tpos = world.store.try_get(target, c.Position)
    if tpos is None or not world.is_agent(target):
        fail(world, eid, intent, f"{world.label(target)} is gone")
        return
    if world.tick - intent.since >= action.args.get("ticks", FOLLOW_TICKS):
        finish(intent)
        return
    if walk_toward(world, eid, pos, needs, intent, tpos.x, tpos.y, 2) == "stuck":
        fail(world, eid, intent, f"cannot keep up with {world.label(target)}")
        give_up_on(world, eid, target)


def _flee(world: World, eid: int, pos: c.Position, needs: c.Needs,
          intent: c.Intent) -> None:
    action = intent.action
    assert action is not None
    threat = world.store.try_get(action.args["target"], c.Position)
    radius = world.rules.vision_radius
    if threat is None or world.tick - intent.since >= FLEE_TICKS:
        finish(intent)
        return
    d2 = (pos.x - threat.x) ** 2 + (pos.y - threat.y) ** 2
    if d2 > radius * radius:
        finish(intent, "ok: escaped")
        return
    terrain = world.terrain
    best, best_d2 = -1, d2
    for nx, ny in ((pos.x, pos.y - 1), (pos.x + 1, pos.y), (pos.x, pos.y + 1),
                   (pos.x - 1, pos.y)):
        if terrain.is_blocked(nx, ny):
            continue
        nd2 = (nx - threat.x) ** 2 + (ny - threat.y) ** 2
        if nd2 > best_d2:
            best, best_d2 = ny * terrain.width + nx, nd2
    if best >= 0:
        _step(world, eid, pos, needs, intent, best)


def _approach(world: World, eid: int, pos: c.Position, needs: c.Needs,
              intent: c.Intent) -> None:
    action = intent.action
    assert action is not None
    target = action.args["target"]
    tpos = world.store.try_get(target, c.Position)
    if tpos is None:
        return  # the acting system reports the missing target
    if walk_toward(world, eid, pos, needs, intent, tpos.x, tpos.y,
                   reach(world, action)) == "stuck":
        fail(world, eid, intent, f"cannot reach {world.label(target)}")
        give_up_on(world, eid, target)


_MOVERS = {"move_to": _move_to, "wander": _wander, "follow": _follow, "flee": _flee}


def movement_system(world: World) -> None:
    tick = world.tick
    statuses = world.abilities.statuses
    columns = world.agent_columns()
    for eid, pos, needs, intent in zip(columns.ids, columns.positions, columns.needs,
                                       columns.intents, strict=True):
        action = intent.action
        if action is None or tick < intent.next_move:
            continue
        if eid in statuses and world.abilities.has_status(eid, "root", tick):
            continue
        mover = _MOVERS.get(action.name)
        if mover is not None:
            mover(world, eid, pos, needs, intent)
        elif action.name in APPROACHING and "target" in action.args:
            _approach(world, eid, pos, needs, intent)
