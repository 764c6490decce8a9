"""The viewer's colours stay apart for colour-blind viewers (issue 35).

The colours are read from the page's own script (``app.js``), passed through the Machado,
Oliveira and Fernandes (2009) simulation of full deuteranopia, protanopia and tritanopia,
and compared in CIELAB: every two personalities, and every kind of object against the grass
it stands on and against each other, must stay at least a just-legible distance apart
(CIE76 delta E). The personalities have a shape each as well, so colour is never the only
cue; this keeps colour a good second one.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[1] / "agent_world" / "web" / "static" / "app.js"

# Machado et al. 2009, severity 1.0, applied to linear RGB.
SIMULATIONS = {
    "normal": ((1, 0, 0), (0, 1, 0), (0, 0, 1)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413),
                     (-0.011820, 0.042940, 0.968881)),
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216),
                   (-0.003882, -0.048116, 1.051998)),
    "tritanopia": ((1.255528, -0.076749, -0.178779), (-0.078411, 0.930809, 0.147602),
                   (0.004733, 0.691367, 0.303900)),
}
PERSONALITY_MIN = 20.0  # delta E between any two personalities
OBJECT_MIN = 12.0  # delta E between an object and the grass, and between two objects


def _table(name: str) -> dict[str, str]:
    text = APP.read_text(encoding="utf-8")
    block = re.search(rf"const {name} = \{{(.*?)\}};", text, re.S)
    assert block, f"{name} not found in app.js"
    return dict(re.findall(r"(\w+): '(#[0-9A-Fa-f]{6})'", block.group(1)))


def _grass() -> tuple[int, int, int]:
    found = re.search(r"grass: \[(\d+), (\d+), (\d+)\]", APP.read_text(encoding="utf-8"))
    assert found
    r, g, b = (int(v) for v in found.groups())
    return r, g, b


def _rgb(hexa: str) -> tuple[int, int, int]:
    return int(hexa[1:3], 16), int(hexa[3:5], 16), int(hexa[5:7], 16)


def _linear(c: float) -> float:
    c /= 255
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def _lab(rgb: tuple[int, int, int], how: str) -> tuple[float, float, float]:
    lin = [_linear(v) for v in rgb]
    m = SIMULATIONS[how]
    r, g, b = (min(1.0, max(0.0, sum(m[i][j] * lin[j] for j in range(3)))) for i in range(3))
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def _delta(a: tuple[int, int, int], b: tuple[int, int, int], how: str) -> float:
    la, lb = _lab(a, how), _lab(b, how)
    return float(sum((p - q) ** 2 for p, q in zip(la, lb, strict=True)) ** 0.5)


@pytest.mark.parametrize("how", list(SIMULATIONS))
def test_personalities_stay_apart(how: str) -> None:
    colours = _table("PERSONALITY_COLORS")
    assert set(colours) == {"aggressive", "cautious", "gatherer", "trader"}
    for (n1, c1), (n2, c2) in itertools.combinations(colours.items(), 2):
        d = _delta(_rgb(c1), _rgb(c2), how)
        assert d >= PERSONALITY_MIN, f"{how}: {n1} {c1} and {n2} {c2} are only {d:.1f} apart"


@pytest.mark.parametrize("how", list(SIMULATIONS))
def test_objects_stand_out_from_the_grass_and_each_other(how: str) -> None:
    colours = _table("OBJECT_COLORS")
    assert {"tree", "berry_bush", "rock", "shelter", "hazard", "capture_point"} <= set(colours)
    grass = _grass()
    for name, c in colours.items():
        d = _delta(_rgb(c), grass, how)
        assert d >= OBJECT_MIN, f"{how}: {name} {c} is only {d:.1f} from the grass"
    for (n1, c1), (n2, c2) in itertools.combinations(colours.items(), 2):
        d = _delta(_rgb(c1), _rgb(c2), how)
        assert d >= OBJECT_MIN, f"{how}: {n1} {c1} and {n2} {c2} are only {d:.1f} apart"


@pytest.mark.parametrize("how", list(SIMULATIONS))
def test_the_first_four_teams_stay_apart(how: str) -> None:
    """Team colours are handed out in order; a scenario rarely has more than four teams."""
    colours = list(_table("TEAM_COLORS").items())
    assert len(colours) >= 4
    for (n1, c1), (n2, c2) in itertools.combinations(colours[:4], 2):
        d = _delta(_rgb(c1), _rgb(c2), how)
        assert d >= PERSONALITY_MIN, f"{how}: {n1} {c1} and {n2} {c2} are only {d:.1f} apart"


def test_the_simulation_merges_what_it_should() -> None:
    """The check can fail: red and green, far apart to normal eyes, fall together for a
    deuteranope."""
    red, green = (220, 50, 50), (80, 160, 50)
    assert _delta(red, green, "normal") > 40
    assert _delta(red, green, "deuteranopia") < _delta(red, green, "normal") / 2
