"""A driver holding the pedal still: one APP value, sent every tick through the codec.

It stands in for the CCM in ``simulate --app``: a standing start or a constant-pedal run needs
no controller, only the same frames a real pedal node would put on the bus.
"""

from __future__ import annotations

from ecu_sim.bus.transmit import Output
from ecu_sim.codec.role import RoleCodec


class ConstantPedal:
    def __init__(self, output: Output, app: RoleCodec, app_pct: float) -> None:
        self._output = output
        self._payload = app.encode(app_pct)
        self._tick = 0

    def poll(self, timeout_s: float) -> None:
        """The pedal listens to nothing."""

    def drain(self) -> None:
        """The pedal listens to nothing."""

    def tick(self, deadline: float, transmit: bool) -> None:
        if transmit:
            self._output.send(self._tick, deadline, self._payload)
        self._tick += 1
