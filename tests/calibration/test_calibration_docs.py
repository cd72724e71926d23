"""docs/diagnostics.md shows each node kind's layout as ``ecu-sim calibration show`` prints it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ecu_sim.calibration.layout import NODE_KINDS
from ecu_sim.calibration.show import layout_lines

PAGE = Path(__file__).resolve().parents[2] / "docs" / "diagnostics.md"


@pytest.mark.parametrize("kind", NODE_KINDS)
def test_the_page_has_the_layout_table_of_each_node_kind(kind: str) -> None:
    assert f"### {kind}\n\n" + "\n".join(layout_lines(kind)) + "\n" in PAGE.read_text(encoding="utf-8")
