"""What v2 brains say: lines made from the speaker's state, memory and relationships.

A line is chosen by topic (a greeting, news about someone else, a remark on the speaker's
own state, the market or the place, a cry in a fight, a sales pitch) and worded by the
speaker's personality and mood (hungry, tired, hurt, flush, broke or fine). Two rules hold
for every line:

- a line about a third party never names the listener or the speaker (nobody is told to
  beware of themselves);
- only the agent who was attacked, and did not start the fight, cries for help; fighters
  taunt instead.

Every choice draws on the world's RNG, so what is said is part of a replay.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agent_world.core import components as c
from agent_world.core.items import ITEMS, OBJECTS

if TYPE_CHECKING:
    from agent_world.core.world import AgentRow, World

__all__ = ["advert", "asking_for_food", "buy_pitch", "chat", "cry", "mood", "sell_pitch",
           "threat"]

NEWS_TICKS = 3000  # memories younger than this are news worth telling

_GREET: dict[str, Sequence[str]] = {
    "aggressive": ("{name}.", "What do you want, {name}?", "Move along, {name}.",
                   "You again, {name}?", "Keep your distance, {name}.",
                   "Don't stare, {name}.", "Well, if it isn't {name}."),
    "cautious": ("Oh! Hello, {name}.", "Careful out here, {name}.", "Evening, {name}. Quiet today?",
                 "You startled me, {name}.", "Stay safe, {name}.",
                 "Good to see a calm face, {name}.", "Hello, {name}. All well?"),
    "gatherer": ("Morning, {name}!", "Hello, {name}! Found anything good?",
                 "Nice day for picking, {name}.", "Hey {name}, the soil smells of rain.",
                 "Good day, {name}!", "Hello there, {name}.", "How goes the foraging, {name}?"),
    "trader": ("Greetings, {name}! Buying or selling?", "{name}, my friend! What do you need?",
               "Ah, {name}. Good to see a customer.", "How's business, {name}?",
               "Welcome, {name}! Fair prices, always.", "{name}! Just the one I hoped to see.",
               "Good day, {name}. Anything to trade?"),
}
_FRIEND = ("Always glad to see you, {name}.", "{name}! My favourite face around here.",
           "There you are, {name}. I owe you one.", "{name}, old friend!",
           "Good to see you again, {name}.")
_COLD = ("I haven't forgotten, {name}.", "Stay where I can see you, {name}.",
         "Not you again, {name}.", "I've nothing to say to you, {name}.",
         "Keep walking, {name}.")
_MOOD: dict[str, Sequence[str]] = {
    "hungry": ("I could eat a whole bush of berries.", "My stomach won't stop growling.",
               "Haven't eaten since {ago}.", "Anyone seen food around here?"),
    "tired": ("I'm dead on my feet.", "I need a long rest.", "My legs are giving up on me.",
              "I could sleep for a week."),
    "hurt": ("I'm hurting, {health}% left in me.", "Took a beating lately.",
             "These wounds won't close.", "Still sore from the last fight."),
    "flush": ("Business has been good: {gold} gold in my purse.", "Life is kind to me lately.",
              "Never been richer.", "I can afford a feast."),
    "broke": ("Not a coin to my name.", "Times are hard, my purse is empty.",
              "I'd work for a single gold piece.", "Can't even afford berries."),
    "fine": ("Can't complain.", "All is well with me.", "A fine day, all in all.",
             "Quiet times, good times.", ""),
}
_ENEMY = {
    "robbed": ("{who} robbed me. Watch your purse, {name}.",
               "Keep your goods close, {name}. {who} has light fingers.",
               "{who} stole from me, {name}. Don't trust them."),
    "hit": ("{who} hit me for {n}, {name}. Be careful.", "{who} attacked me, {name}. Stay clear.",
            "Watch out for {who}, {name}. They fight dirty."),
    "struck": ("{who} struck me with some spell, {name}.",
               "{who} has strange powers, {name}. Keep away from them."),
    "": ("I don't trust {who}, {name}.", "{who} is trouble, {name}. Mark my words.",
         "Beware of {who}, {name}.", "If you see {who}, {name}, walk the other way."),
}
_FRIEND_NEWS = {
    "gave": ("{who} gave me {what} when I needed it, {name}. A good soul.",
             "{who} shared {what} with me, {name}. Remember that.",
             "Ask {who} if you're in need, {name}. They helped me with {what}."),
    "traded": ("{who} trades fair, {name}.", "I did good business with {who}, {name}.",
               "{who} kept their word in a deal, {name}."),
    "": ("{who} is a friend of mine, {name}.", "You should meet {who}, {name}.",
         "{who} is good company, {name}."),
}
_KILLED = ("I settled things with {who} for good.", "{who} won't trouble anyone again.")
_TAUGHT = ("The angel taught me {what}. Strange gift.", "I asked the angel and got {what}.",
           "Have you heard? The angel gave me {what}.")
_MARKET_UP = ("{item} costs {price} gold now, {name}. Robbery!",
              "Have you seen the price of {item}, {name}? {price} gold!",
              "{item} is dear these days: {price} gold.")
_MARKET_DOWN = ("{item} goes for just {price} gold now, {name}.",
                "Cheap {item} everywhere: {price} gold.",
                "Nobody wants {item}: {price} gold and no takers.")
_PLACE_BARE = ("The {things} around here are picked bare.", "Not a thing left on these {things}.",
               "Someone stripped the {things} in sight.")
_PLACE_RICH = ("The {things} here are full, {name}. Help yourself.",
               "Plenty on these {things}, {name}.", "Good {things} around here.")
_HOLD = ("I'm carrying {count} {item}. Heavy going.", "Got {count} {item} on me, if you need any.",
         "My pack is full of {item}.")
_FEAR = ("Help! {foe} is attacking me!", "Stay away from me, {foe}!",
         "{foe}, stop! I've done nothing to you!", "Somebody help! {foe} has gone mad!",
         "Leave me alone, {foe}!", "Why are you doing this, {foe}?")
_TAUNT = ("You'll pay for that, {foe}!", "Is that all you've got, {foe}?",
          "Come on then, {foe}!", "You picked the wrong fight, {foe}.",
          "I'll remember this, {foe}.")
_THREAT = ("Hand over your goods, {name}!", "This is my patch, {name}. Leave.",
           "Nice {item} you have, {name}. Shame if you lost it.",
           "Your purse looks heavy, {name}.", "Last warning, {name}.",
           "I don't like your face, {name}.")
_SELL = ("{name}, fresh {item} for {price} gold?", "{qty} {item} for {price} gold, {name}. "
         "Deal?", "I've spare {item}, {name}. {price} gold and it's yours.",
         "Best {item} around, {name}: {price} gold.", "{name}, you look like you need {item}. "
         "{price} gold.")
_BUY = ("{name}, I'll give {price} gold for some {item}.", "Spare a {item}, {name}? {price} gold.",
        "Sell me {item}, {name}? I pay {price} gold.")
_HUNGRY = ("I'm starving. Has anyone got food?", "Food... I need food.",
           "Anyone with {item} to spare? I'll pay.", "I'd trade my boots for a meal.",
           "Please, a bite of anything.", "Hungry here! Who's selling?")
_ADVERT = ("{item}! Fine {item}, {price} gold!", "Buying and selling, best prices: {item} at "
           "{price}!", "Come one, come all: {item} for {price} gold!",
           "Trader {me} has {item}, {price} gold a piece!", "Need {item}? {me} has it. "
           "{price} gold.")

_MEMORY = re.compile(r"^(?P<who>[^#]+)#(?P<id>\d+) (?P<what>robbed me|hit me for (?P<n>[0-9.]+)"
                     r"|struck me|gave me (?P<gift>.+)|accepted offer)")


def _pick(world: World, lines: Sequence[str]) -> str:
    return lines[world.rng.randrange(len(lines))]


def mood(needs: c.Needs, inv: c.Inventory) -> str:
    if needs.hunger > 60:
        return "hungry"
    if needs.health < needs.max_health * 0.5:
        return "hurt"
    if needs.energy < 25:
        return "tired"
    if inv.gold >= 60:
        return "flush"
    if inv.gold == 0:
        return "broke"
    return "fine"


def _alive_name(world: World, eid: int) -> str | None:
    agent = world.store.try_get(eid, c.Agent)
    return agent.name if agent is not None else None


def _news_about(world: World, memory: c.Memory, who: int) -> dict[str, str]:
    """The most recent thing the speaker remembers ``who`` doing to it."""
    for entry in reversed(memory.recent):
        if world.tick - entry["tick"] > NEWS_TICKS:
            break
        match = _MEMORY.match(entry["text"])
        if match is None or int(match["id"]) != who:
            continue
        what = match["what"]
        if what.startswith("hit"):
            return {"kind": "hit", "n": match["n"] or "?"}
        if what.startswith("gave"):
            return {"kind": "gave", "what": match["gift"]}
        if what.startswith("accepted"):
            return {"kind": "traded"}
        return {"kind": what.split(" ", 1)[0]}
    return {}


def _gossip(world: World, eid: int, row: AgentRow, listener: int, name: str) -> str | None:
    """News about a third party: the speaker's worst enemy or best friend in the world,
    never the listener and never the speaker."""
    social, memory = row.social, row.memory
    rel = social.relationships
    others = [k for k in rel if k not in (eid, listener) and abs(rel[k]) >= 0.3]
    if not others:
        return None
    who = others[world.rng.randrange(len(others))]
    who_name = _alive_name(world, who)
    if who_name is None:
        return None
    news = _news_about(world, memory, who)
    if rel[who] < 0:
        lines = _ENEMY.get(news.get("kind", ""), _ENEMY[""])
    else:
        lines = _FRIEND_NEWS.get(news.get("kind", ""), _FRIEND_NEWS[""])
    return _pick(world, lines).format(who=who_name, name=name, n=news.get("n", "?"),
                                      what=news.get("what", "a hand"))


def _recollection(world: World, row: AgentRow) -> str | None:
    """Something the speaker did itself: a kill, a gift from the angel."""
    for entry in reversed(row.memory.recent):
        if world.tick - entry["tick"] > NEWS_TICKS:
            return None
        text: str = entry["text"]
        if text.startswith("killed "):
            return _pick(world, _KILLED).format(who=text[7:].split("#", 1)[0])
        if text.startswith("the angel granted me "):
            return _pick(world, _TAUGHT).format(what=text[21:].split(":", 1)[0])
    return None


def _market(world: World, name: str) -> str:
    kinds = [k for k in ITEMS if k != "gold"]
    kind = kinds[world.rng.randrange(len(kinds))]
    price = world.market.prices[kind]
    lines = _MARKET_UP if price >= ITEMS[kind].value else _MARKET_DOWN
    return _pick(world, lines).format(item=kind, price=f"{price:.1f}", name=name)


def _place(world: World, row: AgentRow, name: str) -> str | None:
    objects = row.perception.objects
    if not objects:
        return None
    oid = objects[world.rng.randrange(min(4, len(objects)))]
    obj = world.store.try_get(oid, c.StaticObject)
    if obj is None or not OBJECTS[obj.kind].max_stock:
        return None
    things = "berry bushes" if obj.kind == "berry_bush" else f"{obj.kind}s"
    full = obj.stock >= OBJECTS[obj.kind].max_stock - 1
    return _pick(world, _PLACE_RICH if full else _PLACE_BARE).format(things=things, name=name)


def _holding(world: World, row: AgentRow) -> str | None:
    inv = row.inv
    if not inv.items:
        return None
    kind = max(inv.items, key=lambda k: (inv.items[k], k))
    if inv.items[kind] < 3:
        return None
    return _pick(world, _HOLD).format(count=inv.items[kind], item=kind)


def _mood_line(world: World, row: AgentRow) -> str:
    needs, inv = row.needs, row.inv
    feeling = mood(needs, inv)
    ago = "this morning" if needs.hunger < 80 else "yesterday"
    return _pick(world, _MOOD[feeling]).format(
        health=round(100 * needs.health / needs.max_health), gold=inv.gold, ago=ago)


def chat(world: World, eid: int, row: AgentRow, listener: int) -> dict[str, Any]:
    """Something to say to ``listener`` close by: a greeting, news or a remark."""
    rng = world.rng
    name = _alive_name(world, listener) or "friend"
    personality = row.agent.personality
    roll = rng.random()
    text: str | None = None
    if roll < 0.35:
        text = _gossip(world, eid, row, listener, name)
    elif roll < 0.45:
        text = _recollection(world, row)
    elif roll < 0.55:
        text = _market(world, name)
    elif roll < 0.65:
        text = _place(world, row, name)
    elif roll < 0.72:
        text = _holding(world, row)
    if text is None:
        liking = row.social.relationships.get(listener, 0.0)
        if liking > 0.4:
            greeting = _pick(world, _FRIEND)
        elif liking < -0.3:
            greeting = _pick(world, _COLD)
        else:
            greeting = _pick(world, _GREET[personality])
        text = greeting.format(name=name)
        if rng.random() < 0.6:
            text = f"{text} {_mood_line(world, row)}".strip()
    return {"text": text[:160], "to": listener}


def cry(world: World, victim_personality_fights: bool, foe: int) -> dict[str, Any]:
    """A line in a fight: fighters taunt, everyone else calls for help."""
    foe_name = _alive_name(world, foe) or "you"
    lines = _TAUNT if victim_personality_fights else _FEAR
    return {"text": _pick(world, lines).format(foe=foe_name), "to": foe}


def threat(world: World, target: int, row: AgentRow) -> dict[str, Any]:
    """An aggressive agent's opener (``row`` is the target's)."""
    inv = row.inv
    item = max(inv.items, key=lambda k: (ITEMS[k].value, k)) if inv.items else "purse"
    return {"text": _pick(world, _THREAT).format(name=row.agent.name, item=item), "to": target}


def sell_pitch(world: World, listener: int, item: str, qty: int,
               price: int) -> dict[str, Any]:
    name = _alive_name(world, listener) or "friend"
    return {"text": _pick(world, _SELL).format(name=name, item=item, qty=qty, price=price),
            "to": listener}


def buy_pitch(world: World, listener: int, item: str, price: int) -> dict[str, Any]:
    name = _alive_name(world, listener) or "friend"
    return {"text": _pick(world, _BUY).format(name=name, item=item, price=price),
            "to": listener}


def asking_for_food(world: World) -> dict[str, Any]:
    foods = [k for k, v in ITEMS.items() if v.category == "food"]
    return {"text": _pick(world, _HUNGRY).format(item=foods[world.rng.randrange(len(foods))])}


def advert(world: World, me: str, item: str, price: float) -> str:
    """A trader's proclamation."""
    return _pick(world, _ADVERT).format(item=item, price=f"{price:.0f}", me=me)
