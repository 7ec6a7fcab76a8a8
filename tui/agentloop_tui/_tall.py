"""Containers whose children may be tens of thousands of lines tall: a long answer, and the
conversation around it.

Each time Textual lays a container out it files the children in a spatial map, a grid of
100 × 20 cells, to find the ones on screen: a child is put in every cell it covers, so an
answer N lines tall costs N / 20 steps on every frame that changes its height — the last cost of
a streamed answer that grows with its length. ``coarse`` files them in a grid whose cells grow
with the content instead (a few dozen cells whatever the height): the same widgets are found on
screen, a few more are looked at and dropped. A container uses it from its ``arrange``.

The spatial map is an internal of Textual 8; if it is not where this expects it, the container
keeps Textual's own map (slower on long answers, and nothing else changes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.layout import DockArrangeResult, WidgetPlacement

__all__ = ["coarse"]

_ROWS = 32  # rows of the grid, whatever the content's height
_ROW_HEIGHT = 20  # Textual's own, the least a row is

try:
    from textual._spatial_map import SpatialMap
    from textual.layout import DockArrangeResult as _Result

    _PATCHABLE = "_spatial_map" in _Result.__dataclass_fields__
except (ImportError, AttributeError):  # pragma: no cover - another Textual
    _PATCHABLE = False


def _coarse_map(placements: list[WidgetPlacement]) -> SpatialMap[WidgetPlacement]:
    bottom = max((p.region.bottom for p in placements), default=0)
    grid: SpatialMap[WidgetPlacement] = SpatialMap(
        grid_height=max(_ROW_HEIGHT, bottom // _ROWS + 1)
    )
    # What DockArrangeResult.spatial_map files, in a coarser grid.
    grid.insert((p.region.grow(p.margin), p.offset, p.fixed, p.overlay, p) for p in placements)
    return grid


def coarse(arrangement: DockArrangeResult) -> DockArrangeResult:
    """``arrangement`` (a container's), its children to be filed in a grid of a few rows."""
    if _PATCHABLE and arrangement._spatial_map is None:
        arrangement._spatial_map = _coarse_map(arrangement.placements)
    return arrangement
