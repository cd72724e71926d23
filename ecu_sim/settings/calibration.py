"""The INI section ``[calibration]``: the image file each node kind starts from.

Paths only: the files are read and checked when the nodes are built (ecu_sim.nodes.calibrated),
so a wrong file is refused before the first tick, with the key that named it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CalibrationSettings:
    """The image each node kind starts from: an S-record or Intel HEX file (ecu_sim.calibration);
    None: the built-in image, made from the other settings."""

    ecu: str | None = None
    engine: str | None = None
    transmission: str | None = None
    brakes: str | None = None
    retarder: str | None = None
    ccm: str | None = None
