"""The published fuel map the ``class6`` engine uses, read once from the package's data.

``cat3126e_fuel.csv`` beside this module carries NREL ADVISOR's Caterpillar 3126E map as data, with
its source, licence and the one transformation made (speeds in rpm) in its header. Read through
``importlib.resources`` so an installed package finds it as a source tree does; cached, so every
truck of a process shares one table.
"""

from __future__ import annotations

import functools
import importlib.resources

from ecu_sim.vehicle.fuel import FuelTable

FILE_NAME = "cat3126e_fuel.csv"
#: idle speed of the engine the map was measured on: the map's lowest speed
CAT3126E_IDLE_RPM = 700.0


@functools.cache
def cat3126e() -> FuelTable:
    """The Caterpillar 3126E map of ADVISOR's ``FC_CI205cat3126_emis.m``, as published."""
    text = importlib.resources.files(__package__).joinpath(FILE_NAME).read_text(encoding="utf-8")
    return parse(text, CAT3126E_IDLE_RPM)


def parse(text: str, idle_rpm: float) -> FuelTable:
    """A map in this format: ``#`` comments, then ``speed_rpm,full_load_nm,<torque>...`` and a row a speed."""
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    torques = [float(t) for t in lines[0].split(",")[2:]]
    rows = [[float(v) for v in line.split(",")] for line in lines[1:]]
    speeds = [row[0] for row in rows]
    return FuelTable(first_rpm=speeds[0], step_rpm=speeds[1] - speeds[0], first_nm=torques[0],
                     step_nm=torques[1] - torques[0], rates_gps=tuple(tuple(row[2:]) for row in rows),
                     full_load_nm=tuple(row[1] for row in rows), idle_rpm=idle_rpm)
