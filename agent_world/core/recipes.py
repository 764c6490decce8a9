"""Recipes: ``game.recipes`` turn carried goods into one unit of something worth more.

A recipe is written ``OUTPUT: 'INPUT*N + INPUT'`` with item kinds (``club: 'wood*2'``,
``spear: 'club + stone'``): a chain where one recipe's output is the next one's input. The
``craft`` action takes ``game.craft_ticks``; the inputs are used and the output made at its
end, if the agent still holds the inputs then and can carry the result. The default world has
no recipes, so ``craft`` always fails there, with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping

from agent_world.core.items import GOLD, ITEMS

__all__ = ["Recipes", "craftable", "parse_recipes"]

Recipes = dict[str, dict[str, int]]


def parse_recipes(recipes: Mapping[str, str]) -> Recipes:
    """``game.recipes`` as ``{output: {input: count}}``; ValueError naming the recipe and the
    kind that is not an item (the text's form was checked with the configuration)."""
    parsed: Recipes = {}
    for output, text in recipes.items():
        if output not in ITEMS or output == GOLD:
            raise ValueError(f"game.recipes: {output!r} is not an item kind that can be made "
                             f"(item kinds: {', '.join(k for k in ITEMS if k != GOLD)})")
        inputs: dict[str, int] = {}
        for part in text.split("+"):
            kind, _, count = part.partition("*")
            kind = kind.strip()
            if kind not in ITEMS:
                raise ValueError(f"game.recipes.{output}: input {kind!r} is not an item kind "
                                 f"({', '.join(ITEMS)})")
            inputs[kind] = inputs.get(kind, 0) + (int(count) if count.strip() else 1)
        if output in inputs:
            raise ValueError(f"game.recipes.{output}: a recipe cannot use its own output")
        parsed[output] = inputs
    return parsed


def craftable(recipes: Recipes, items: Mapping[str, int], gold: int = 0) -> list[str]:
    """The outputs whose inputs ``items`` (and ``gold``) hold, most valuable first."""
    def has(inputs: Mapping[str, int]) -> bool:
        return all((gold if kind == GOLD else items.get(kind, 0)) >= n
                   for kind, n in inputs.items())
    return sorted((out for out, inputs in recipes.items() if has(inputs)),
                  key=lambda out: (-ITEMS[out].value, out))

