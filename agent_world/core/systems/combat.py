"""Combat: attacks (with weapons, cooldowns and defence) and defensive stances.

Weapons wear: each hit breaks the weapon it was struck with by chance
(``game.weapon_wear``), so arms are a good that gets used up, like food."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_world.core import components as c
from agent_world.core import events as ev
from agent_world.core.items import ITEMS
from agent_world.core.social import adjust_relationship, adjust_reputation, witnesses
from agent_world.core.systems.acting import chebyshev, fail, finish

if TYPE_CHECKING:
    from agent_world.core.world import AgentRow, World

__all__ = ["combat_system", "damage_of"]

PROVOCATION_TICKS = 100
MAX_WITNESS_EFFECTS = 8


def damage_of(world: World, attacker_inv: c.Inventory, roll: float, defending: bool) -> float:
    """Damage of one hit: base plus the best carried weapon, scaled, varied by ``roll``
    (0 .. 1 from the RNG), reduced while the target defends. Never negative."""
    r = world.rules
    weapon = max((ITEMS[k].damage for k in attacker_inv.items if ITEMS[k].category == "weapon"),
                 default=0.0)
    damage = (r.base_attack_damage + weapon) * r.combat_damage_multiplier * (0.8 + 0.4 * roll)
    if defending:
        damage *= r.defend_damage_factor
    return max(0.0, damage)


def _attack(world: World, eid: int, row: AgentRow) -> None:
    pos, needs, inv, intent, combat = row.pos, row.needs, row.inv, row.intent, row.combat
    assert intent.action is not None
    target: int = intent.action.args["target"]
    store = world.store
    tpos = store.try_get(target, c.Position)
    tneeds = store.try_get(target, c.Needs)
    if tpos is None:  # begin() checked it existed: it has died since
        finish(intent, "ok: target gone")
        return
    if tneeds is None:
        fail(world, eid, intent, f"{world.label(target)} cannot be attacked")
        return
    if tneeds.health <= 0:
        finish(intent, "ok: target down")
        return
    distance = chebyshev(pos.x, pos.y, tpos.x, tpos.y)
    if distance > world.rules.vision_radius + 2:
        fail(world, eid, intent, f"{world.label(target)} escaped")
        return
    tick = world.tick
    if distance > 1 or tick < combat.next_attack:
        return
    tcombat = store.get(target, c.Combat)
    defending = tcombat.defending_until > tick
    damage = round(damage_of(world, inv, world.rng.random(), defending), 2)
    if target in world.abilities.statuses and world.abilities.has_status(target, "shield",
                                                                         tick):
        damage = round(damage / 2, 2)
    tneeds.health = round(tneeds.health - damage, 2)
    r = world.rules
    combat.next_attack = tick + r.attack_cooldown_ticks
    needs.energy = max(0.0, needs.energy - r.attack_energy_cost)
    provoked = combat.last_attacker == target and tick - combat.last_attacked <= PROVOCATION_TICKS
    tcombat.last_attacker = eid
    tcombat.last_attacked = tick
    adjust_relationship(world, target, eid, -0.25)
    if not provoked:
        adjust_reputation(world, eid, -r.attack_reputation_cost)
        for other in witnesses(world, pos.x, pos.y, eid, target)[:MAX_WITNESS_EFFECTS]:
            adjust_relationship(world, other, eid, -0.05)
    world.remember(target, f"{world.label(eid)} hit me for {damage:g}")
    world.count("hits")
    if r.weapon_wear:
        _wear(world, eid, inv)
    world.emit(ev.ATTACK, agent=eid, name=world.name_of(eid), target=target,
               target_name=world.name_of(target), damage=damage,
               health=max(0.0, tneeds.health), defended=defending, provoked=provoked)


def _wear(world: World, eid: int, inv: c.Inventory) -> None:
    """The weapon a hit was struck with (the best carried) may break."""
    weapons = [k for k in inv.items if ITEMS[k].category == "weapon"]
    if not weapons:
        return
    weapon = max(weapons, key=lambda k: (ITEMS[k].damage, k))
    if world.rng.random() < world.rules.weapon_wear:
        inv.take(weapon, 1)
        world.count("weapons_broken")
        world.remember(eid, f"my {weapon} broke")
        world.emit(ev.WEAPON_BROKE, agent=eid, name=world.name_of(eid), item=weapon)


_FIGHTING = ("attack", "defend")


def combat_system(world: World) -> None:
    tick = world.tick
    for eid, row in world.schedule.doing(world, _FIGHTING):
        intent = row.intent
        action = intent.action
        if action is None:
            continue
        if action.name == "attack":
            _attack(world, eid, row)
        elif action.name == "defend":
            row.combat.defending_until = tick + world.rules.defend_duration_ticks
            world.emit(ev.DEFEND, agent=eid, name=world.name_of(eid))
            finish(intent)
