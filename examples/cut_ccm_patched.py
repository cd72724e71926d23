#!/usr/bin/env python3
"""cut_ccm.py "patched": the same controller except one behaviour, its proportional gain halved above
100 km/h. `ecu-sim campaign compare` should find exactly the cases that drive above 100 km/h.

The patch is what a binary patch would be: the original program with one function replaced, so
everything else (frames, timing, anti-windup) is the original's by construction.

  python3 examples/cut_ccm_patched.py --channel 239.74.163.2 --port 43113 --set-speed 110
"""

from __future__ import annotations

import cut_ccm  # the original, beside this file

original_gains = cut_ccm.gains


def gains(speed_kph: float) -> tuple[float, float]:
    """The original's gains, kp halved above 100 km/h."""
    kp, ki = original_gains(speed_kph)
    return (kp / 2.0, ki) if speed_kph > 100.0 else (kp, ki)


cut_ccm.gains = gains  # the patch

if __name__ == "__main__":
    cut_ccm.main()
