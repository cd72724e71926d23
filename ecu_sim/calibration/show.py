"""A calibration for people: the layout as a table, an image's values, NAME=VALUE changes parsed.

The layout table is also the one docs/diagnostics.md shows (a test checks the page against it),
so the page and ``ecu-sim calibration show`` never disagree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ecu_sim.calibration.image import Image
from ecu_sim.calibration.layout import CalibrationError, Layout, Number, layout_of


def _bound(value: float) -> str:
    return "inf" if value == math.inf else f"{value:g}"


def layout_lines(kind: str) -> list[str]:
    """The layout of ``kind`` as a Markdown table, under a line naming the node kind."""
    layout = layout_of(kind)
    end = layout.start + layout.size
    area = f"area 0x{layout.start:X}..0x{end:X} ({layout.size} bytes)"
    lines = [f"The {kind}: node kind {layout.code}, {area}.", "",
             "| parameter | address | size | type | range | unit | DID | what it sets |",
             "|---|---|---|---|---|---|---|---|"]
    for p in layout.parameters:
        span = f"{_bound(p.low)}..{_bound(p.high)}"
        lines.append(f"| `{p.name}` | 0x{p.address:X} | {p.size} | {p.type} | {span} | {p.unit} "
                     f"| 0x{p.did:04X} | {p.help} |")
    return lines


def image_lines(image: Image) -> list[str]:
    lines = [f"{image.kind} calibration {image.calibration_id!r}, CVN 0x{image.cvn:08X}"]
    for name, value in image.values.items():
        lines.append(f"  {name} = {value!r} {image.layout.parameter(name).unit}")
    return lines


def parse_changes(layout: Layout, words: Sequence[str]) -> dict[str, Number]:
    """``NAME=VALUE`` words as values of ``layout``'s parameters (``inf`` is a number)."""
    changes: dict[str, Number] = {}
    for word in words:
        name, sep, text = word.partition("=")
        if not sep:
            raise CalibrationError(f"{word!r} is not NAME=VALUE")
        parameter = layout.parameter(name.strip())
        try:
            value: Number = int(text) if parameter.type == "u32" else float(text)
        except ValueError:
            raise CalibrationError(f"{name}: {text!r} is not a number") from None
        problem = parameter.problem(value)
        if problem is not None:
            raise CalibrationError(problem)
        changes[parameter.name] = value
    return changes
