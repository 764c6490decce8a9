"""Abilities composed from templates: how the angel writes code with no LLM configured.

A request's words pick a template (heal, bolt, blink, shield ...); its numbers (amounts,
costs, cooldowns) come from a digest of the request text, so the same request always gives
the same ability. The request text only ever enters the source through ``repr``, as the
DESCRIPTION string: it cannot become code.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agent_world.angel.generators import AbilityRequest

__all__ = ["TEMPLATES", "Template", "TemplateGenerator", "ability_name", "describe"]

MAX_DESCRIPTION = 200
_STOP_WORDS = frozenset({"the", "and", "with", "for", "that", "this", "from", "please", "make",
                         "let", "can", "want", "some", "into", "them", "you", "your", "all",
                         "give", "need", "would", "like", "able", "could", "should"})


@dataclass(frozen=True, slots=True)
class Template:
    kind: str
    words: tuple[str, ...]
    body: Callable[[int], tuple[dict[str, object], str]]  # dial -> (metadata, execute body)


def _pick(dial: int, low: int, high: int) -> int:
    return low + dial % (high - low + 1)


def _heal(d: int) -> tuple[dict[str, object], str]:
    return ({"ENERGY_COST": _pick(d, 6, 12), "COOLDOWN": _pick(d, 30, 80), "RANGE": 3,
             "ARGS": {"target": "agent?"}},
            f'    who = ctx["target"] or ctx["caster"]\n'
            f'    return [{{"type": "heal", "target": who["id"], '
            f'"amount": {_pick(d, 8, 16)} + rand_int(0, 4)}}]\n')


def _bolt(d: int) -> tuple[dict[str, object], str]:
    return ({"ENERGY_COST": _pick(d, 8, 14), "COOLDOWN": _pick(d, 20, 60), "RANGE": 5,
             "ARGS": {"target": "agent"}},
            f'    target = ctx["target"]\n'
            f'    return [{{"type": "damage", "target": target["id"], '
            f'"amount": {_pick(d, 4, 9)} + rand_int(0, 3)}}]\n')


def _blink(d: int) -> tuple[dict[str, object], str]:
    return ({"ENERGY_COST": _pick(d, 5, 10), "COOLDOWN": _pick(d, 20, 60),
             "RANGE": _pick(d, 3, 6), "ARGS": {"x": "int", "y": "int"}},
            '    tile = ctx["tile"]\n'
            '    if tile["blocked"]:\n'
            '        return [{"type": "message", "text": "The way is blocked."}]\n'
            '    return [{"type": "move", "x": tile["x"], "y": tile["y"]}]\n')


def _push(d: int) -> tuple[dict[str, object], str]:
    return ({"ENERGY_COST": _pick(d, 4, 8), "COOLDOWN": _pick(d, 15, 40), "RANGE": 2,
             "ARGS": {"target": "agent"}},
            f'    return [{{"type": "push", "target": ctx["target"]["id"], '
            f'"tiles": {_pick(d, 1, 3)}}}]\n')


def _self_status(status: str) -> Callable[[int], tuple[dict[str, object], str]]:
    def body(d: int) -> tuple[dict[str, object], str]:
        return ({"ENERGY_COST": _pick(d, 5, 10), "COOLDOWN": _pick(d, 100, 200), "RANGE": 0,
                 "ARGS": {}},
                f'    return [{{"type": "status", "target": ctx["caster"]["id"], '
                f'"status": "{status}", "ticks": {_pick(d, 40, 120)}}}]\n')
    return body


def _hex(status: str) -> Callable[[int], tuple[dict[str, object], str]]:
    def body(d: int) -> tuple[dict[str, object], str]:
        return ({"ENERGY_COST": _pick(d, 8, 14), "COOLDOWN": _pick(d, 60, 150), "RANGE": 4,
                 "ARGS": {"target": "agent"}},
                f'    return [{{"type": "status", "target": ctx["target"]["id"], '
                f'"status": "{status}", "ticks": {_pick(d, 30, 90)}}}]\n')
    return body


def _conjure(d: int) -> tuple[dict[str, object], str]:
    food = ("berries", "apple", "bread")[d % 3]
    return ({"ENERGY_COST": _pick(d, 8, 15), "COOLDOWN": _pick(d, 80, 200), "RANGE": 0,
             "ARGS": {}},
            f'    return [{{"type": "create_item", "item": "{food}", '
            f'"qty": 1 + rand_int(0, 1)}}]\n')


def _raise(kind: str, material: str) -> Callable[[int], tuple[dict[str, object], str]]:
    def body(d: int) -> tuple[dict[str, object], str]:
        return ({"ENERGY_COST": _pick(d, 12, 20), "COOLDOWN": _pick(d, 100, 300),
                 "RANGE": 2, "ARGS": {"x": "int", "y": "int"}},
                '    tile = ctx["tile"]\n'
                f'    return [{{"type": "consume", "item": "{material}", "qty": 2}},\n'
                f'            {{"type": "spawn_object", "kind": "{kind}", "x": tile["x"], '
                '"y": tile["y"]}]\n')
    return body


def _gather(d: int) -> tuple[dict[str, object], str]:
    return ({"ENERGY_COST": _pick(d, 3, 6), "COOLDOWN": _pick(d, 15, 40), "RANGE": 2,
             "ARGS": {"target": "object"}},
            '    yields = {"tree": "apple", "berry_bush": "berries", "rock": "stone"}\n'
            '    target = ctx["target"]\n'
            '    kind = yields.get(target["object"])\n'
            '    if kind is None or target["stock"] < 1:\n'
            '        return [{"type": "message", "text": "Nothing to gather here."}]\n'
            '    return [{"type": "transfer", "item": kind, "qty": 1, "from": target["id"],\n'
            '             "to": ctx["caster"]["id"]}]\n')


def _need(need: str, sign: int) -> Callable[[int], tuple[dict[str, object], str]]:
    def body(d: int) -> tuple[dict[str, object], str]:
        return ({"ENERGY_COST": 0 if need == "energy" else _pick(d, 4, 8),
                 "COOLDOWN": _pick(d, 100, 250), "RANGE": 2, "ARGS": {"target": "agent?"}},
                '    who = ctx["target"] or ctx["caster"]\n'
                f'    return [{{"type": "need", "target": who["id"], "need": "{need}", '
                f'"delta": {sign * _pick(d, 10, 25)}}}]\n')
    return body


def _message(d: int) -> tuple[dict[str, object], str]:
    return ({"ENERGY_COST": 1, "COOLDOWN": _pick(d, 10, 30), "RANGE": 0,
             "ARGS": {"text": "text"}},
            '    text = ctx["args"]["text"].strip()\n'
            '    name = ctx["caster"]["name"]\n'
            '    return [{"type": "message", "text": f"{name}: {text}"[:160]}]\n')


def _blessing(d: int) -> tuple[dict[str, object], str]:
    return ({"ENERGY_COST": _pick(d, 4, 8), "COOLDOWN": _pick(d, 60, 120), "RANGE": 0,
             "ARGS": {}},
            '    caster = ctx["caster"]\n'
            f'    return [{{"type": "heal", "target": caster["id"], "amount": {_pick(d, 3, 8)}}},\n'
            '            {"type": "message", "text": f"{caster[\'name\']} glows faintly."}]\n')


TEMPLATES: tuple[Template, ...] = (
    Template("heal", ("heal", "mend", "cure", "restore", "health", "wound", "revive"), _heal),
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
    Template("conjure", ("food", "feed", "bread", "conjure", "summon", "create", "eat",
                         "meal", "hungry"), _conjure),
    Template("refresh", ("energy", "rest", "refresh", "wake", "tired", "stamina"),
             _need("energy", 1)),
    Template("sate", ("hunger", "sate", "fill", "satiate", "starv"), _need("hunger", -1)),
    Template("herald", ("speak", "shout", "message", "announce", "voice", "tell", "sing"),
             _message),
)
FALLBACK = Template("blessing", (), _blessing)


def describe(text: str) -> str:
    """The request as a DESCRIPTION: printable, single spaces, at most 200 characters."""
    clean = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return (clean or "An ability the angel wrote.")[:MAX_DESCRIPTION]


def ability_name(text: str, kind: str, taken: Sequence[str]) -> str:
    """A free name from the request's first words and the template kind."""
    words = [w for w in re.findall(r"[a-z]+", text.lower())
             if len(w) > 2 and w not in _STOP_WORDS][:2]
    base = "_".join([*words, kind]) if words else kind
    base = re.sub(r"[^a-z0-9_]", "", base)[:26].strip("_") or kind
    if not base[0].isalpha():
        base = f"a_{base}"
    name, n = base, 2
    while name in taken:
        name = f"{base}_{n}"
        n += 1
    return name


def _choose(text: str, attempt: int) -> Template:
    lowered = text.lower()
    matches = [t for t in TEMPLATES if any(w in lowered for w in t.words)]
    options = [*matches, FALLBACK]
    return options[min(attempt, len(options) - 1)]


def _render(name: str, description: str, meta: dict[str, object], body: str) -> str:
    lines = [
        '"""Written by the angel from a request."""',
        "",
        f"NAME = {name!r}",
        f"DESCRIPTION = {description!r}",
    ]
    lines += [f"{key} = {meta[key]!r}" for key in ("ENERGY_COST", "COOLDOWN", "RANGE", "ARGS")]
    return "\n".join(lines) + "\n\n\ndef execute(ctx):\n" + body


class TemplateGenerator:
    """Writes abilities without an LLM. Each retry falls back to the next matching template
    and finally to a harmless blessing."""

    name = "templates"
    repeatable = True  # the same request text always makes the same source

    def write(self, request: AbilityRequest, feedback: Sequence[str]) -> str:
        template = _choose(request.text, len(feedback))
        dial = int.from_bytes(hashlib.blake2b(request.text.encode("utf-8"),
                                              digest_size=4).digest(), "big")
        meta, body = template.body(dial)
        name = ability_name(request.text, template.kind, request.taken)
        return _render(name, describe(request.text), meta, body)

    def close(self) -> None:
        """Templates hold nothing to release."""
