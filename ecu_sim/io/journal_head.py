"""Line 1 of a recording's tick journal: everything that decides what the node sends.

A replay builds the node again from this line alone (with the DBC and a road file, each checked
by its checksum), so it holds the settings' sections a node is made from, the route, the fault
schedule with its seed, and where the FMS totals started (ecu_sim.io.journal reads and writes the
lines that follow).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from ecu_sim.codec.profile import Profile
from ecu_sim.faults.spec import FaultSchedule
from ecu_sim.io.journal import file_checksum
from ecu_sim.powertrain.fms import load_totals
from ecu_sim.settings.model import Settings

#: settings sections a replay needs; [bus] is not needed, [record] and [faults] are resolved
REPLAYED_SECTIONS = ("profile", "truck", "vehicle", "controller", "run", "j1939", "ccm", "fms")


def header(kind: str, settings: Settings, profile: Profile, route: Sequence[tuple[float, float]] | None,
           schedule: FaultSchedule, log_name: str, road_file: str | None = None) -> dict[str, Any]:
    """Line 1 of the journal: everything that decides what the node sends. ``route``: the testbed
    truck's grade schedule; ``road_file``: the file a road (any truck's) was read from."""
    return {
        "node": kind,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "log": os.path.basename(log_name),
        "settings": _replayed_settings(settings, road_file),
        "route": None if route is None else [list(point) for point in route],
        # a road file is read again by the replay (its elevation samples can be many): its checksum
        # tells whether it is still the same
        "road_sha256": file_checksum(road_file),
        "dbc": {"path": profile.dbc_path, "sha256": file_checksum(settings.profile.dbc)},
        "faults": {"seed": schedule.seed, "faults": [dataclasses.asdict(f) for f in schedule.faults]},
    }


def _replayed_settings(settings: Settings, road_file: str | None) -> dict[str, Any]:
    """The sections a replay needs; the DBC's and the road file's paths made absolute, so a replay
    run from another folder finds them (a built-in profile or route is stored by its name alone)."""
    sections = {name: dataclasses.asdict(getattr(settings, name)) for name in REPLAYED_SECTIONS}
    if settings.profile.dbc is not None:
        sections["profile"]["dbc"] = os.path.abspath(settings.profile.dbc)
    if road_file is not None:
        sections["run"]["grade_file"] = os.path.abspath(road_file)
    sections["j1939"]["restbus"] = [os.path.abspath(path) for path in settings.j1939.restbus]
    fms = settings.fms
    if fms.enabled and not fms.start_totals:  # the totals this run starts from, not the file's later ones
        start = load_totals(fms.state_file)
        in_tank = fms.tank_l if start.in_tank_l is None else start.in_tank_l
        sections["fms"]["start_totals"] = [*start[:3], in_tank]
    sections["fms"]["state_file"] = None
    return sections
