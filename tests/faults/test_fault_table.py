"""The fault kinds are one table: the grammar reads it, and the page of faults has a row for each."""

from __future__ import annotations

import re

from ecu_sim.faults.spec import ALIASES, FAULTS, parse_fault
from tests.conftest import REPO


def test_the_faults_page_has_a_row_for_every_fault_kind() -> None:
    page = (REPO / "docs" / "faults-recording-replay.md").read_text(encoding="utf-8")
    named: set[str] = set()
    for row in re.finditer(r"^\| (?P<cell>`[^|]*) \|", page, re.MULTILINE):
        named.update(ALIASES.get(n, n) for n in re.findall(r"`([a-z_]+)", row["cell"]))
    assert set(FAULTS.names()) <= named


def test_a_fault_acts_in_the_stage_its_kind_says_value_faults_before_withholding() -> None:
    from ecu_sim.faults.spec import WITHHOLDING_STAGE, stage

    assert stage(parse_fault("offset=1").kind) < stage(parse_fault("delay=0.1").kind) < WITHHOLDING_STAGE
    assert stage(parse_fault("drop").kind) == stage(parse_fault("silent").kind) == WITHHOLDING_STAGE
