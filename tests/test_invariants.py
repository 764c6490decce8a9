"""Long runs keep the world's invariants after every tick."""

from __future__ import annotations

from agent_world.core import components as c
from agent_world.core.items import ITEMS, OBJECTS
from agent_world.core.social import MAX_RELATIONSHIPS
from agent_world.core.terrain import GRASS
from agent_world.core.world import World


def check_invariants(w: World) -> None:
    store, terrain = w.store, w.terrain
    agents = w.agents()
    assert sorted(w.population.names.values()) == [eid for eid, _ in agents]
    for eid, (agent, pos, needs, inv, intent, _cb, perc, social, memory) in agents:
        where = f"tick {w.tick}: {agent.name}#{eid}"
        assert 0 < needs.health <= needs.max_health, f"{where} health {needs.health}"
        assert 0 <= needs.hunger <= 100, f"{where} hunger {needs.hunger}"
        assert 0 <= needs.energy <= 100, f"{where} energy {needs.energy}"
        assert inv.gold >= 0, f"{where} gold {inv.gold}"
        for kind, qty in inv.items.items():
            assert kind in ITEMS and kind != "gold" and qty >= 1, f"{where} {kind}={qty}"
        assert terrain.in_bounds(pos.x, pos.y), f"{where} off the map at {pos}"
        i = pos.y * terrain.width + pos.x
        assert terrain.tiles[i] == GRASS and terrain.blocked[i] == 0, (
            f"{where} stands in blocking terrain at ({pos.x}, {pos.y})")
        assert eid in [e for _d, e in w.agents_grid.near(pos.x, pos.y, 0)], f"{where} grid"
        assert -1 <= social.reputation <= 1
        assert len(social.relationships) <= MAX_RELATIONSHIPS
        assert all(-1 <= v <= 1 for v in social.relationships.values())
        assert len(memory.recent) <= 12
        assert len(perc.heard) <= 5
        assert intent.plan_source or not intent.plan
    on_ground: dict[str, int] = {}
    for eid, (item, pos) in store.query(c.Item, c.Position):
        assert item.qty >= 1 and item.kind in ITEMS, f"item #{eid}: {item}"
        assert terrain.in_bounds(pos.x, pos.y)
        assert eid in w.ground.items
        on_ground[item.kind] = on_ground.get(item.kind, 0) + item.qty
    assert {k: v for k, v in w.ground.goods.items() if v} == on_ground
    for eid, (obj, pos) in store.query(c.StaticObject, c.Position):
        assert 0 <= obj.stock <= OBJECTS[obj.kind].max_stock, f"object #{eid}: {obj}"
        assert terrain.tiles[pos.y * terrain.width + pos.x] == GRASS
        assert eid in w.ground.objects
    gold = w.market.ledger["gold_created"] - w.market.ledger["gold_destroyed"]
    assert w.total_gold() == gold, f"tick {w.tick}: gold {w.total_gold()} != ledger {gold}"
    for oid, offer in w.market.offers.items():
        assert w.is_agent(offer["from"]) and w.is_agent(offer["to"]), f"offer {oid}"
        assert oid in w.market.offers_to[offer["to"]]
        assert offer["expires"] > w.tick
    assert sum(len(v) for v in w.market.offers_to.values()) == len(w.market.offers)
    assert all(p > 0 for p in w.market.prices.values())


def test_invariants_hold_for_800_ticks(make_world) -> None:
    w = make_world(seed=21, size=[48, 48], starting_agents=40, item_spawn_rate=1.0)
    events: dict[str, int] = {}
    for _ in range(800):
        report = w.step()
        for e in report.events:
            events[e["type"]] = events.get(e["type"], 0) + 1
        check_invariants(w)
    # The run must actually exercise the mechanics the invariants guard.
    for kind in ("pickup", "eat", "attack", "trade", "death", "say"):
        assert events.get(kind, 0) > 0, f"no {kind} events in 800 ticks: {events}"


def test_invariants_hold_with_operator_inputs(make_world) -> None:
    w = make_world(seed=22, starting_agents=15)
    for t in range(400):
        if t % 37 == 0:
            w.inbox.submit("spawn", {"kind": "agent"})
        if t % 53 == 0:
            w.inbox.submit("spawn", {"kind": "gold", "qty": 25})
        if t % 71 == 0 and w.population.names:
            target = sorted(w.population.names.values())[0]
            w.inbox.submit("give", {"target": target, "item": "gold", "qty": 7})
        if t % 97 == 0 and w.population.names:
            w.inbox.submit("kill", {"target": sorted(w.population.names.values())[-1]})
        w.step()
        check_invariants(w)
    assert w.counters.get("deaths", 0) >= 4
