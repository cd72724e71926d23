"""``[fms]``: the FMS-Standard interface beside the powertrain, and what the truck's totals start from."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class FmsSettings:
    """``--fms``: the FMS-Standard messages the truck has values for (docs/whole-truck.md)."""

    enabled: bool = False
    #: the fuel tank's size; a first run starts with it full
    tank_l: float = 300.0
    #: the air around the truck, which the engine's coolant starts from and cools toward
    ambient_c: float = 20.0
    #: where the totals (distance, fuel used, engine hours, fuel in the tank) persist between runs,
    #: written atomically; None: every run starts from zero and a full tank
    state_file: str | None = None
    #: TCO1's driver working states (J1939 SPN 1612, 1613): 0 rest, 1 available, 2 work, 3 drive, 7 n/a
    driver1_state: int = 3
    driver2_state: int = 7
    #: a replay's: the totals the recorded run started from (distance m, fuel l, hours h, fuel in
    #: the tank l), so it neither reads nor writes the state file; empty: from ``state_file``
    start_totals: tuple[float, ...] = ()

    def problems(self) -> list[str]:
        found = []
        if not (math.isfinite(self.tank_l) and self.tank_l > 0.0):
            found.append(f"tank_l must be > 0 L (got {self.tank_l})")
        if not (math.isfinite(self.ambient_c) and -40.0 <= self.ambient_c <= 60.0):
            found.append(f"ambient_c must be within -40..60 degC (got {self.ambient_c})")
        for key in ("driver1_state", "driver2_state"):
            if getattr(self, key) not in (0, 1, 2, 3, 6, 7):
                found.append(f"{key} must be 0 rest, 1 available, 2 work, 3 drive, 6 error or 7 not "
                             f"available (got {getattr(self, key)})")
        return found
