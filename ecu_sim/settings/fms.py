"""``[fms]``: the FMS-Standard interface beside the powertrain, and what the truck's totals start from."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Final

#: ISO 3779's VIN: 17 characters, digits and capital letters but I, O and Q (read as 1 and 0)
_VIN: Final = re.compile(r"[0-9A-HJ-NPR-Z]{17}")


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
    #: the share of the truck's mass (with its payload) on the front axle, the rest on the rear:
    #: VW's axle weights; an assumption for a loaded two-axle box truck, not a measured one
    front_axle_share: float = 0.35
    #: the vehicle identification number VI carries (J1939 SPN 237); None: VI is "not available"
    vin: str | None = None
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
        if not (math.isfinite(self.front_axle_share) and 0.0 < self.front_axle_share < 1.0):
            found.append(f"front_axle_share must be within 0..1, exclusive (got {self.front_axle_share})")
        if self.vin is not None and not _VIN.fullmatch(self.vin):
            found.append(f"vin must be 17 characters of digits and capital letters but I, O and Q "
                         f"(ISO 3779; got {self.vin!r})")
        return found
