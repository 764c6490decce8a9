"""Abilities composed from templates: how the angel writes code with no LLM configured.

A request's words pick a template (heal, bolt, blink, shield ...); its numbers (amounts,
costs, cooldowns) come from a digest of the request text, so the same request always gives
the same ability. The ability's name and description are made from what its effects do,
never from the request's words: an ability never promises what it does not do. A request
the templates cannot meet (no template fits, or it asks for more than any can give: to
kill, to reach everyone, a dragon) is refused in one line saying what they can make.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from agent_world.angel.generators import AbilityRequest, CannotWrite, Improvement
from agent_world.core.abilities import STATUSES

__all__ = ["BEYOND", "TEMPLATES", "Template", "TemplateGenerator", "Written", "ability_name",
           "beyond_templates"]

MAX_DESCRIPTION = 200
BEYOND: tuple[tuple[str, str], ...] = (
    (r"\bkill|\bslay|\bmurder|\bdestroy|\bannihilat|\bwipe out", "to kill or destroy"),
    (r"\bevery(one|body| agent| creature)|\ball (the )?(agents|creatures|enemies)"
     r"|\bwhole (map|world)|\bentire (map|world)|\bthe world\b|\bthe map\b",
     "to reach everyone or the whole map"),
    (r"\binstant|\bimmortal|\binvincib|\binfinite|\bforever|\bunlimited|\bgod",
     "unlimited or instant power"),
    (r"\bdragon|\bdemon|\bmonster|\barmy|\bcreature|\bbeast|\bminion|\bundead",
     "to summon creatures"),
    (r"\bresurrect|\bback to life|\braise the dead", "to bring back the dead"),
)
"""What a request may ask that no template gives, with how the refusal says it."""
MAKES = ("heal, shield, speed up or regenerate; slow, root, poison, damage or push one "
         "agent; blink; gather; raise a tree, bush, rock or shelter; make food; restore "
         "energy or ease hunger; speak aloud")
"""What the templates make, for a refusal."""


@dataclass(frozen=True, slots=True)
class Written:
    """What a template makes: the metadata, the body of ``execute``, the description of its
    effects (from the metadata as it finally is: an improved version may change its range)
    and the name they suggest."""

    meta: dict[str, object]
    body: str
    describe: Callable[[Mapping[str, object]], str]
    name: str


@dataclass(frozen=True, slots=True)
class Template:
    kind: str
    words: tuple[str, ...]
    make: Callable[[int], Written]  # dial -> the ability


def _pick(dial: int, low: int, high: int) -> int:
    return low + dial % (high - low + 1)


def _heal(d: int) -> Written:
    amount = _pick(d, 8, 16)
    return Written({"ENERGY_COST": _pick(d, 6, 12), "COOLDOWN": _pick(d, 30, 80), "RANGE": 3,
                    "ARGS": {"target": "agent?"}},
                   '    who = ctx["target"] or ctx["caster"]\n'
                   f'    return [{{"type": "heal", "target": who["id"], '
                   f'"amount": {amount} + rand_int(0, 4)}}]\n',
                   lambda m: f"Heal an agent within {m['RANGE']} tiles, or yourself, by "
                   f"{amount} to {amount + 4} health.", "heal")


def _bolt(d: int) -> Written:
    amount = _pick(d, 4, 9)
    return Written({"ENERGY_COST": _pick(d, 8, 14), "COOLDOWN": _pick(d, 20, 60), "RANGE": 5,
                    "ARGS": {"target": "agent"}},
                   '    target = ctx["target"]\n'
                   f'    return [{{"type": "damage", "target": target["id"], '
                   f'"amount": {amount} + rand_int(0, 3)}}]\n',
                   lambda m: f"Strike one agent within {m['RANGE']} tiles for {amount} to "
                   f"{amount + 3} damage.", "bolt")


def _blink(d: int) -> Written:
    reach = _pick(d, 3, 6)
    return Written({"ENERGY_COST": _pick(d, 5, 10), "COOLDOWN": _pick(d, 20, 60),
                    "RANGE": reach, "ARGS": {"x": "int", "y": "int"}},
                   '    tile = ctx["tile"]\n'
                   '    if tile["blocked"]:\n'
                   '        return [{"type": "message", "text": "The way is blocked."}]\n'
                   '    return [{"type": "move", "x": tile["x"], "y": tile["y"]}]\n',
                   lambda m: f"Move yourself at once to a free tile within {m['RANGE']} "
                   "tiles.", "blink")


def _push(d: int) -> Written:
    tiles = _pick(d, 1, 3)
    return Written({"ENERGY_COST": _pick(d, 4, 8), "COOLDOWN": _pick(d, 15, 40), "RANGE": 2,
                    "ARGS": {"target": "agent"}},
                   f'    return [{{"type": "push", "target": ctx["target"]["id"], '
                   f'"tiles": {tiles}}}]\n',
                   lambda m: f"Push an agent within {m['RANGE']} tiles {tiles} "
                   f"tile{'s' * (tiles > 1)} away from you.", "push")


def _self_status(status: str) -> Callable[[int], Written]:
    def make(d: int) -> Written:
        ticks = _pick(d, 40, 120)
        return Written({"ENERGY_COST": _pick(d, 5, 10), "COOLDOWN": _pick(d, 100, 200),
                        "RANGE": 0, "ARGS": {}},
                       f'    return [{{"type": "status", "target": ctx["caster"]["id"], '
                       f'"status": "{status}", "ticks": {ticks}}}]\n',
                       lambda m: f"For {ticks} ticks {_ON_YOU[status]} ({status}).", status)
    return make


def _hex(status: str) -> Callable[[int], Written]:
    def make(d: int) -> Written:
        ticks = _pick(d, 30, 90)
        return Written({"ENERGY_COST": _pick(d, 8, 14), "COOLDOWN": _pick(d, 60, 150),
                        "RANGE": 4, "ARGS": {"target": "agent"}},
                       f'    return [{{"type": "status", "target": ctx["target"]["id"], '
                       f'"status": "{status}", "ticks": {ticks}}}]\n',
                       lambda m: f"Put {status} on an agent within {m['RANGE']} tiles for "
                       f"{ticks} ticks: it {STATUSES[status]}.", f"{status}_hex")
    return make


_ON_YOU = {"shield": "damage you take is halved", "haste": "you walk twice as fast",
           "regen": "you regain 0.5 health per tick"}
"""The self statuses' effects (``STATUSES``), said to the caster."""


_PLURAL = {"berries": "berries", "apple": "apples", "bread": "loaves of bread"}


def _conjure(d: int) -> Written:
    food = ("berries", "apple", "bread")[d % 3]
    return Written({"ENERGY_COST": _pick(d, 8, 15), "COOLDOWN": _pick(d, 80, 200),
                    "RANGE": 0, "ARGS": {}},
                   f'    return [{{"type": "create_item", "item": "{food}", '
                   f'"qty": 1 + rand_int(0, 1)}}]\n',
                   lambda m: f"Make one or two {_PLURAL[food]} in your pack.",
                   f"conjure_{food}")


def _raise(kind: str, material: str) -> Callable[[int], Written]:
    def make(d: int) -> Written:
        label = kind.replace("_", " ")
        return Written({"ENERGY_COST": _pick(d, 12, 20), "COOLDOWN": _pick(d, 100, 300),
                        "RANGE": 2, "ARGS": {"x": "int", "y": "int"}},
                       '    tile = ctx["tile"]\n'
                       f'    return [{{"type": "consume", "item": "{material}", "qty": 2}},\n'
                       f'            {{"type": "spawn_object", "kind": "{kind}", '
                       '"x": tile["x"], "y": tile["y"]}]\n',
                       lambda m: f"Use 2 {material} from your pack to raise a {label} on a "
                       f"tile within {m['RANGE']} tiles.", f"raise_{kind}")
    return make


def _gather(d: int) -> Written:
    return Written({"ENERGY_COST": _pick(d, 3, 6), "COOLDOWN": _pick(d, 15, 40), "RANGE": 2,
                    "ARGS": {"target": "object"}},
                   '    yields = {"tree": "apple", "berry_bush": "berries", "rock": "stone"}\n'
                   '    target = ctx["target"]\n'
                   '    kind = yields.get(target["object"])\n'
                   '    if kind is None or target["stock"] < 1:\n'
                   '        return [{"type": "message", "text": "Nothing to gather here."}]\n'
                   '    return [{"type": "transfer", "item": kind, "qty": 1, '
                   '"from": target["id"],\n'
                   '             "to": ctx["caster"]["id"]}]\n',
                   lambda m: "Take one apple, berries or stone from a tree, bush or rock "
                   f"within {m['RANGE']} tiles.", "gather")


def _need(need: str, sign: int) -> Callable[[int], Written]:
    def make(d: int) -> Written:
        amount = _pick(d, 10, 25)
        what = (f"Restore {amount} energy" if need == "energy"
                else f"Ease hunger by {amount}")
        return Written({"ENERGY_COST": 0 if need == "energy" else _pick(d, 4, 8),
                        "COOLDOWN": _pick(d, 100, 250), "RANGE": 2,
                        "ARGS": {"target": "agent?"}},
                       '    who = ctx["target"] or ctx["caster"]\n'
                       f'    return [{{"type": "need", "target": who["id"], "need": "{need}", '
                       f'"delta": {sign * amount}}}]\n',
                       lambda m: f"{what} for an agent within {m['RANGE']} tiles, or "
                       "yourself.", "refresh" if need == "energy" else "sate")
    return make


def _message(d: int) -> Written:
    return Written({"ENERGY_COST": 1, "COOLDOWN": _pick(d, 10, 30), "RANGE": 0,
                    "ARGS": {"text": "text"}},
                   '    text = ctx["args"]["text"].strip()\n'
                   '    name = ctx["caster"]["name"]\n'
                   '    return [{"type": "message", "text": f"{name}: {text}"[:160]}]\n',
                   lambda m: "Say a line of text for everyone nearby to read.", "herald")


TEMPLATES: tuple[Template, ...] = (
    Template("heal", ("heal", "mend", "cure", "restore", "health", "wound"), _heal),
    Template("shield", ("shield", "protect", "guard", "armor", "armour", "ward", "barrier"),
             _self_status("shield")),
    Template("haste", ("fast", "speed", "haste", "quick", "swift", "sprint"),
             _self_status("haste")),
    Template("regen", ("regenerat", "rejuvenat", "renew", "recover"), _self_status("regen")),
    Template("slow", ("slow", "freeze", "frost", "ice", "chill", "snare"), _hex("slow")),
    Template("root", ("root", "bind", "entangle", "trap", "hold", "vine"), _hex("root")),
    Template("poison", ("poison", "venom", "toxic", "curse", "plague"), _hex("poison")),
    Template("bolt", ("fire", "bolt", "strike", "attack", "hurt", "damage", "zap", "lightning",
                      "blast", "ranged", "arrow", "throw", "spear", "smite"), _bolt),
    Template("blink", ("teleport", "blink", "jump", "dash", "leap", "warp", "fly"), _blink),
    Template("push", ("push", "shove", "knock", "repel", "wind", "gust", "throw back"), _push),
    Template("gather", ("gather", "harvest", "collect", "mine", "pick", "chop"), _gather),
    Template("grove", ("tree", "plant", "grow", "forest", "orchard"), _raise("tree", "wood")),
    Template("bush", ("bush", "berry bush", "garden", "seed"), _raise("berry_bush", "berries")),
    Template("wall", ("wall", "rock", "stone wall", "barricade"), _raise("rock", "stone")),
    Template("shelter", ("build", "shelter", "house", "hut", "tent", "home"),
             _raise("shelter", "wood")),
    # What it makes, not how: "summon" or "create" alone does not say it wants food.
    Template("conjure", ("food", "feed", "bread", "meal", "hungry", "eat", "apple", "berries",
                         "berry"), _conjure),
    Template("refresh", ("energy", "rest", "refresh", "wake", "tired", "stamina"),
             _need("energy", 1)),
    Template("sate", ("hunger", "sate", "fill", "satiate", "starv"), _need("hunger", -1)),
    Template("herald", ("speak", "shout", "message", "announce", "voice", "tell", "sing",
                        "call"), _message),
)


def beyond_templates(text: str) -> str | None:
    """What the request asks that no template gives (None: nothing)."""
    lowered = text.lower()
    return next((what for pattern, what in BEYOND if re.search(pattern, lowered)), None)


def _describe(text: str) -> str:
    """Printable, single spaces, at most ``MAX_DESCRIPTION`` characters."""
    clean = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return clean[:MAX_DESCRIPTION]


def ability_name(hint: str, taken: Sequence[str]) -> str:
    """A free name from what the ability does (``heal``, ``conjure_bread``, ``heal_2`` ...)."""
    base = re.sub(r"[^a-z0-9_]", "", hint.lower())[:26].strip("_") or "ability"
    if not base[0].isalpha():
        base = f"a_{base}"
    name, n = base, 2
    while name in taken:
        name = f"{base}_{n}"
        n += 1
    return name


def _choose(text: str, attempt: int) -> Template | None:
    """The template for this attempt: the request's matches in turn (None: no more)."""
    lowered = text.lower()
    matches = [t for t in TEMPLATES if any(w in lowered for w in t.words)]
    return matches[attempt] if attempt < len(matches) else None


HEADER = '"""Written by the angel from a request."""'
TUNABLE = ("ENERGY_COST", "COOLDOWN", "RANGE")
MAX_TUNED_RANGE = 8


def improve(old: Improvement, taken: Sequence[str]) -> str:
    """A better version of an ability the templates wrote, from how it did: a longer reach
    when casts failed out of range, a lower cost when casters were too tired, a shorter
    cooldown when they waited on it. Its description is redone to match; CannotWrite when
    the ability is not a template's or its figures show nothing these can fix."""
    source = old.source
    if not source.startswith(HEADER):
        raise CannotWrite(f"the templates improve only abilities they wrote; {old.name} is "
                          "not one (an LLM, llm.provider, improves any)")
    meta = {key: int(m.group(1)) for key in TUNABLE
            if (m := re.search(rf"^{key} = (\d+)$", source, re.MULTILINE))}
    if len(meta) < len(TUNABLE):
        raise CannotWrite(f"{old.name} has lost the template's form; it cannot be tuned")
    failures = " ".join(old.figures).lower()
    tuned = dict(meta)
    if "out of range" in failures:
        tuned["RANGE"] = min(MAX_TUNED_RANGE, meta["RANGE"] + 2)
    if "too tired" in failures:
        tuned["ENERGY_COST"] = max(1, round(meta["ENERGY_COST"] * 0.6))
    if "cooling down" in failures:
        tuned["COOLDOWN"] = max(10, round(meta["COOLDOWN"] * 0.6))
    if tuned == meta:
        raise CannotWrite(f"{old.name}'s figures show nothing the templates can tune (they "
                          "fix failures out of range, too tired or cooling down): "
                          + "; ".join(old.figures)[:160])
    for key, value in tuned.items():
        source = re.sub(rf"^{key} = \d+$", f"{key} = {value}", source, flags=re.MULTILINE)
    if tuned["RANGE"] != meta["RANGE"]:
        source = re.sub(rf"within {meta['RANGE']} tiles", f"within {tuned['RANGE']} tiles",
                        source)
    base = re.sub(r"_\d+$", "", old.name)
    return re.sub(r"^NAME = .*$", f"NAME = {ability_name(base, taken)!r}", source, count=1,
                  flags=re.MULTILINE)


def _render(name: str, description: str, meta: dict[str, object], body: str) -> str:
    lines = [
        HEADER,
        "",
        f"NAME = {name!r}",
        f"DESCRIPTION = {description!r}",
    ]
    lines += [f"{key} = {meta[key]!r}" for key in ("ENERGY_COST", "COOLDOWN", "RANGE", "ARGS")]
    return "\n".join(lines) + "\n\n\ndef execute(ctx):\n" + body


class TemplateGenerator:
    """Writes abilities without an LLM. Each retry takes the request's next matching
    template; a request no template meets is refused (``CannotWrite``) with what they make."""

    name = "templates"
    repeatable = True  # the same request text always makes the same source

    def write(self, request: AbilityRequest, feedback: Sequence[str]) -> str:
        if request.improve is not None:
            return improve(request.improve, request.taken)
        kinds = MAKES
        beyond = beyond_templates(request.text)
        if beyond is not None:
            raise CannotWrite(f"the templates cannot make abilities {beyond}; they can: "
                              f"{kinds} (an LLM, llm.provider, writes others)")
        template = _choose(request.text, len(feedback))
        if template is None:
            raise CannotWrite(
                ("no template fits this request" if not feedback else
                 f"no other template fits after {len(feedback)} tries")
                + f"; they can: {kinds} (an LLM, llm.provider, writes others)")
        dial = int.from_bytes(hashlib.blake2b(request.text.encode("utf-8"),
                                              digest_size=4).digest(), "big")
        written = template.make(dial)
        name = ability_name(written.name, request.taken)
        return _render(name, _describe(written.describe(written.meta)), written.meta,
                       written.body)

    def close(self) -> None:
        """Templates hold nothing to release."""
