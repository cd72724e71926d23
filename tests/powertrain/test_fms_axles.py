"""``--fms``: VW (PGN 65258) carries the weight on each axle, one axle per repetition, multiplexed on the
axle location (SPN 928), as the FMS-Standard sends it: the truck's mass with its payload, split by
``[fms] front_axle_share``. A recording of a real run, decoded by cantools with dbc/fms.dbc alone.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import can
import pytest

from tests.conftest import Cli
from tests.helpers.fms import fms_dbc

VW, CVW, ETC1 = 0x18FEEA4A, 0x18FE704A, 0x0CF00203
FRONT, REAR = 0x0F, 0x1F
SHARE, PAYLOAD_KG = 0.4, 3000.0
RUN = ("--vehicle", "class6", "--profile", "j1939", "--network", "powertrain", "--grade", "0", "--fms")


@pytest.fixture
def recording(tmp_path: Path, cli_main: Cli, virtual_time: None, virtual_channel: str) -> list[can.Message]:
    """Twelve seconds of a truck with a payload, its front axle carrying 40 % of the mass."""
    config, log = tmp_path / "truck.ini", tmp_path / "fms.log"
    config.write_text(f"[fms]\nfront_axle_share = {SHARE}\n")
    result = cli_main("-i", "virtual", "-c", virtual_channel, *RUN, "--payload", str(PAYLOAD_KG),
                      "--config", str(config), "--duration", "12", "--record", str(log))
    assert result.status == 0, result.err
    return list(can.LogReader(str(log)))


def decoded(recording: list[can.Message], can_id: int) -> list[dict[str, float]]:
    dbc = fms_dbc()
    found = []
    for m in recording:
        if m.arbitration_id == can_id:
            values = dbc.decode_message(can_id, bytes(m.data), decode_choices=False)
            assert isinstance(values, dict)
            found.append({name: float(value) for name, value in values.items()})  # type: ignore[arg-type]
    return found


def test_vw_carries_the_next_axle_at_each_repetition(recording: list[can.Message]) -> None:
    locations = [int(v["AxleLocation"]) for v in decoded(recording, VW)]
    assert len(locations) >= 10
    assert all({a, b} == {FRONT, REAR} for a, b in itertools.pairwise(locations))


def test_vw_goes_every_second(recording: list[can.Message]) -> None:
    # virtual time stamps frames with the host's clock; the bus's clock is ETC1, sent every 10 ms tick
    gaps, ticks, seen = set(), 0, 0
    for m in recording:
        if m.arbitration_id == ETC1:
            ticks += 1
        elif m.arbitration_id == VW:
            if seen:
                gaps.add(ticks)
            ticks, seen = 0, seen + 1
    assert gaps == {100}


def test_the_axle_weights_add_up_to_the_combination_weight_split_by_the_front_share(
        recording: list[can.Message]) -> None:
    pages = decoded(recording, VW)
    front = next(v["FrontAxleWeight"] for v in pages if v["AxleLocation"] == FRONT)
    rear = next(v["RearAxleWeight"] for v in pages if v["AxleLocation"] == REAR)
    combination = decoded(recording, CVW)[-1]["GrossCombinationVehicleWeight"]
    assert front + rear == pytest.approx(combination, abs=10.0)  # CVW's resolution
    assert front / (front + rear) == pytest.approx(SHARE, abs=0.001)
    assert combination > 11408.0 + PAYLOAD_KG - 10.0  # the payload is on the axles
