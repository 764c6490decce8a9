"""A* on the tile grid (4-connected), bounded so that one search never stalls a tick."""

from __future__ import annotations

import heapq
from collections.abc import Set

__all__ = ["AVOID_COST", "find_path"]

AVOID_COST = 6  # extra steps a route takes to go round one tile to avoid


def find_path(
    blocked: bytearray,
    width: int,
    height: int,
    start: tuple[int, int],
    goal: tuple[int, int],
    reach: int = 0,
    max_nodes: int = 2000,
    avoid: Set[int] | None = None,
) -> tuple[list[int], bool]:
    """Path from ``start`` to any tile within Chebyshev distance ``reach`` of ``goal``.

    Returns ``(steps, complete)``: tile indices to walk with the next step *last* (so callers
    pop from the end), and whether they end at the goal. When the node budget runs out, or no
    route exists, ``steps`` leads to the explored tile nearest the goal (possibly empty) and
    ``complete`` is False. Ties break the same way every time (deterministic)."""
    sx, sy = start
    gx, gy = goal

    def h(x: int, y: int) -> int:
        return max(0, abs(x - gx) - reach) + max(0, abs(y - gy) - reach)

    start_i = sy * width + sx
    if h(sx, sy) == 0:
        return [], True
    came_from: dict[int, int] = {start_i: -1}
    cost: dict[int, int] = {start_i: 0}
    heap: list[tuple[int, int, int, int]] = [(h(sx, sy), h(sx, sy), 0, start_i)]
    order = 0
    best_i, best_h = start_i, h(sx, sy)
    expanded = 0
    end = -1
    while heap and expanded < max_nodes:
        _f, hi, _o, i = heapq.heappop(heap)
        if hi == 0:
            end = i
            break
        expanded += 1
        x, y = i % width, i // width
        g = cost[i] + 1
        for nx, ny in ((x, y - 1), (x + 1, y), (x, y + 1), (x - 1, y)):
            if nx < 0 or ny < 0 or nx >= width or ny >= height:
                continue
            j = ny * width + nx
            gj = g + AVOID_COST if avoid is not None and j in avoid else g
            if blocked[j] or cost.get(j, 1 << 30) <= gj:
                continue
            cost[j] = gj
            came_from[j] = i
            # h(nx, ny), inline: this line runs for every tile a search reaches
            dx = (nx - gx if nx > gx else gx - nx) - reach
            dy = (ny - gy if ny > gy else gy - ny) - reach
            hj = (dx if dx > 0 else 0) + (dy if dy > 0 else 0)
            if hj < best_h:
                best_i, best_h = j, hj
            order += 1
            heapq.heappush(heap, (gj + hj, hj, order, j))
    if end == -1 and best_h == 0:
        end = best_i  # reached on the budget's last expansion
    complete = end != -1
    if not complete:
        end = best_i
    steps: list[int] = []
    while end != start_i:
        steps.append(end)
        end = came_from[end]
    return steps, complete
