"""The market: prices, the census that moves them, open trade offers and the gold ledger.

World state (``World.market``), saved with the world under its historical top-level keys
(``next_offer``, ``prices``, ``offers``, ``ledger``, ``market_tally``: ``World.get_state``
places them where saved worlds have them). The offers-by-addressee and offers-by-sender
indexes are derived: rebuilt by ``set_state``, never saved.

Offers live in creation order and all live equally long (``game.offer_ttl_ticks``), so the
expired ones are always the first ones (``expire``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_world.core.items import GOLD, ITEMS

__all__ = ["PRICE_CEILING", "PRICE_FLOOR", "Market"]

PRICE_FLOOR, PRICE_CEILING = 0.25, 4.0
"""A price stays within these multiples of its good's base value."""


class Market:
    """Lives at ``world.market``. Other modules read ``prices``, ``offers``, ``offers_to``,
    ``offers_from``, ``tally`` and ``ledger`` and change them through the methods."""

    def __init__(self, offer_ttl_ticks: int) -> None:
        self.offer_ttl_ticks = offer_ttl_ticks
        self.prices: dict[str, float] = {k: v.value for k, v in ITEMS.items()}
        # The census of the current price period: state, since a period spans many ticks.
        self.tally: dict[str, dict[str, Any]] = {"carried": {}, "wanted": {}}
        self.offers: dict[int, dict[str, Any]] = {}
        self.offers_to: dict[int, list[int]] = {}  # addressee -> open offer ids (derived)
        self.offers_from: dict[int, list[int]] = {}  # sender -> open offer ids (derived)
        self.next_offer = 1
        self.ledger = {"gold_created": 0, "gold_destroyed": 0}

    # -- offers ------------------------------------------------------------------------------

    def open(self, tick: int, sender: int, receiver: int, give: dict[str, int],
             want: dict[str, int]) -> int:
        """A new offer from ``sender`` to ``receiver``, open until ``offer_ttl_ticks`` after
        ``tick``; returns its id."""
        oid = self.next_offer
        self.next_offer += 1
        self.offers[oid] = {"id": oid, "from": sender, "to": receiver, "give": give,
                            "want": want, "expires": tick + self.offer_ttl_ticks}
        self.offers_to.setdefault(receiver, []).append(oid)
        self.offers_from.setdefault(sender, []).append(oid)
        return oid

    def close(self, oid: int) -> dict[str, Any]:
        """Take an open offer off the market (accepted, declined, undone, expired)."""
        offer = self.offers.pop(oid)
        for index, who in ((self.offers_to, offer["to"]), (self.offers_from, offer["from"])):
            waiting = index[who]
            waiting.remove(oid)
            if not waiting:
                del index[who]
        return offer

    def offer(self, oid: int) -> dict[str, Any] | None:
        return self.offers.get(oid)

    def received(self, eid: int) -> list[dict[str, Any]]:
        """Open offers made to ``eid``, oldest first."""
        ids = self.offers_to.get(eid)
        if not ids:
            return []
        offers = self.offers
        return [offers[oid] for oid in ids]

    def sent(self, eid: int) -> list[dict[str, Any]]:
        """Open offers ``eid`` made, oldest first."""
        ids = self.offers_from.get(eid)
        if not ids:
            return []
        offers = self.offers
        return [offers[oid] for oid in ids]

    def is_waiting(self, sender: int, receiver: int) -> bool:
        """Whether ``sender`` already has an offer open to ``receiver``."""
        offers = self.offers
        return any(offers[oid]["from"] == sender for oid in self.offers_to.get(receiver, ()))

    def close_all_of(self, eid: int) -> None:
        """Close every offer ``eid`` made or received (it died)."""
        for oid in [o for o, offer in self.offers.items() if eid in (offer["from"],
                                                                     offer["to"])]:
            self.close(oid)

    def expire(self, tick: int) -> list[dict[str, Any]]:
        """Close the offers whose time is up at ``tick``; returns them, oldest first."""
        expired = []
        for oid, offer in self.offers.items():
            if offer["expires"] > tick:
                break  # creation order, equal lifetimes: the expired ones lead
            expired.append(oid)
        return [self.close(oid) for oid in expired]

    # -- prices ------------------------------------------------------------------------------

    def reprice(self, supply: Mapping[str, int], demand: Mapping[str, float], cushion: float,
                sensitivity: float) -> list[tuple[str, float, float]]:
        """Move each price (gold's excepted) ``sensitivity`` of the way toward base *
        (demand / supply), the ratio cushioned and bounded; returns ``(kind, old, new)``
        for each good, in ``ITEMS`` order."""
        prices = self.prices
        moves = []
        for kind, spec in ITEMS.items():
            if kind == GOLD:
                continue
            ratio = (demand[kind] + cushion) / (supply[kind] + cushion)
            ratio = min(PRICE_CEILING, max(PRICE_FLOOR, ratio))
            old = prices[kind]
            new = round(old + sensitivity * (spec.value * ratio - old), 3)
            prices[kind] = new
            moves.append((kind, old, new))
        return moves

    def clear_tally(self) -> None:
        """A price period ended: its census starts again."""
        self.tally["carried"].clear()
        self.tally["wanted"].clear()

    # -- the gold ledger ---------------------------------------------------------------------

    def mint(self, gold: int) -> None:
        """``gold`` entered the world (a newcomer's purse, spawned gold, an operator's gift)."""
        self.ledger["gold_created"] += gold

    def burn(self, gold: int) -> None:
        """``gold`` left the world (fees, upkeep, estate dues)."""
        self.ledger["gold_destroyed"] += gold

    # -- state -------------------------------------------------------------------------------

    def get_state(self) -> dict[str, Any]:
        """Live values under the world's saved keys: serialise before the next tick."""
        return {"next_offer": self.next_offer, "prices": self.prices,
                "offers": list(self.offers.values()), "ledger": self.ledger,
                "market_tally": self.tally}

    def set_state(self, state: Mapping[str, Any]) -> None:
        self.next_offer = int(state["next_offer"])
        self.prices = dict(state["prices"])
        self.offers, self.offers_to, self.offers_from = {}, {}, {}
        for offer in state["offers"]:
            oid = int(offer["id"])
            self.offers[oid] = dict(offer)
            self.offers_to.setdefault(int(offer["to"]), []).append(oid)
            self.offers_from.setdefault(int(offer["from"]), []).append(oid)
        self.ledger = dict(state["ledger"])
        tally = state["market_tally"]
        self.tally = {"carried": dict(tally["carried"]), "wanted": dict(tally["wanted"])}
