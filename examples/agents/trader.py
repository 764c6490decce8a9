"""Tier 2: a trader that answers whole decisions and learns from its hooks.

    python main.py --config examples/agents/trader.yaml

It sells what it has too much of for what it lacks, accepts offers that are worth it at
market prices, and keeps a grudge list from the events that name it (``on_event``): it never
trades with an agent that attacked or robbed it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_world.agents import Brain, Decision, Observation

FOOD = ("berries", "apple", "bread", "meat")
KEEP = 2  # of each food, eaten rather than sold


def worth(goods: Mapping[str, int], prices: Mapping[str, float]) -> float:
    return sum((1.0 if kind == "gold" else prices.get(kind, 1.0)) * qty
               for kind, qty in goods.items())


class Trader(Brain):
    def __init__(self) -> None:
        self.me = 0
        self.grudges: set[int] = set()
        self.failed_offers = 0

    def on_spawn(self, agent_id: int) -> None:
        self.me = agent_id

    def on_event(self, event: Mapping[str, Any]) -> None:
        if event.get("type") in ("attack", "steal") and event.get("target") == self.me:
            culprit = event.get("agent")
            if isinstance(culprit, int):
                self.grudges.add(culprit)

    def on_result(self, action: str, outcome: str) -> None:
        if action == "trade_offer" and outcome != "ok":
            self.failed_offers += 1

    def decide(self, obs: Observation, actions: Mapping[str, Any]
               ) -> Decision | list[Decision]:
        me = obs.me
        for offer in obs.offers:
            gain = worth(offer.gives, obs.prices) - worth(offer.wants, obs.prices)
            has_goods = all(me.items.get(k, 0) >= q if k != "gold" else me.gold >= q
                            for k, q in offer.wants.items())
            if offer.sender in self.grudges or not has_goods or gain < 0:
                return Decision("trade_decline", {"offer": offer.id},
                                reasoning=f"not worth it from {offer.sender_name}")
            return Decision("trade_accept", {"offer": offer.id},
                            reasoning=f"gains {gain:.1f} gold of value")
        food = sum(me.items.get(kind, 0) for kind in FOOD)
        if me.hunger > 50 and food:
            return Decision("eat", reasoning="hungry")
        partners = [a for a in obs.agents if a.id not in self.grudges and a.distance <= 4]
        surplus = {k: n - KEEP for k, n in me.items.items() if n > KEEP}
        if partners and surplus:
            kind, qty = max(surplus.items(), key=lambda kv: kv[1] * obs.prices.get(kv[0], 1))
            price = max(1, round(obs.prices.get(kind, 1.0) * min(qty, 3) * 1.1))
            return Decision("trade_offer", {"target": partners[0].id,
                                            "give": {kind: min(qty, 3)},
                                            "want": {"gold": price}},
                            reasoning=f"selling {kind} for {price} gold")
        if food < KEEP and me.gold >= 3:
            sellers = [a for a in obs.agents if a.id not in self.grudges]
            if sellers:
                return Decision("trade_offer", {"target": sellers[0].id, "give": {"gold": 3},
                                                "want": {"berries": 2}},
                                reasoning="buying food")
        near_food = [i for i in obs.items if i.kind in FOOD]
        if near_food:
            return [Decision("pickup", {"target": near_food[0].id}, reasoning="free food")]
        return Decision("wander", {"ticks": 30}, reasoning="looking for customers")
