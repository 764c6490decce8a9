"""Agent names, drawn from the world's RNG."""

from __future__ import annotations

import random
from collections.abc import Container

__all__ = ["pick_name"]

_NAMES = (  # noqa: SIM905 - a word list reads better as text
    "Ada Alba Anik Arlo Asha Bram Brin Cato Cira Dara Dax Eda Edel Elio Emry Enzo Fara Fenn "
    "Galen Gwen Hale Hana Ines Ira Isel Jory Juno Kael Kira Lark Lena Lior Mabel Mara Milo "
    "Nadia Nell Nico Noor Odo Orla Otis Pax Pia Quin Rafe Rhea Rook Rosa Runa Sable Saul Sia "
    "Tam Tess Theo Ula Una Vale Vera Wren Xan Yara Yuri Zane Zia Bodhi Calla Dorian Esme Finch "
    "Greta Hugo Ilsa Joss Kit Lowell Mira Nash Ona Perrin Rilla Soren Tova Uri Vesna Wilder"
).split()


def pick_name(rng: random.Random, taken: Container[str]) -> str:
    """A name not in ``taken`` (case-insensitive): a plain name, or one with a number."""
    for _ in range(8):
        name = _NAMES[rng.randrange(len(_NAMES))]
        if name.lower() not in taken:
            return name
    base = _NAMES[rng.randrange(len(_NAMES))]
    n = 2
    while f"{base}{n}".lower() in taken:
        n += 1
    return f"{base}{n}"
