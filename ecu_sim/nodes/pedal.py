"""A driver holding the pedal still: one APP value, sent every tick through the codec.

It stands in for the CCM in ``simulate --app``: a standing start or a constant-pedal run needs
no controller, only the same frames a real pedal node would put on the bus. It still empties its
port every tick: a member of a bus that never reads would queue every frame of the run.
"""

from __future__ import annotations

from ecu_sim.bus.port import Port
from ecu_sim.bus.transmit import Output
from ecu_sim.codec.role import RoleCodec
from ecu_sim.nodes.figures import Figure


class ConstantPedal:
    def __init__(self, port: Port, output: Output, app: RoleCodec, app_pct: float) -> None:
        self._port = port
        self._output = output
        self._payload = app.encode(app_pct)
        self._figures = (Figure("app_pct", "%", app_pct, shown="APP {:5.1f} %"),)
        self._tick = 0

    def figures(self) -> tuple[Figure, ...]:
        """The one APP it holds: made once, as it never changes."""
        return self._figures

    def poll(self, timeout_s: float) -> None:
        """The pedal waits for nothing."""

    def prepare(self) -> None:
        """The payload never changes: nothing to do ahead."""

    def drain(self) -> None:
        """Discards what arrived: the pedal acts on nothing it hears."""
        while self._port.recv(0.0) is not None:
            pass

    def tick(self, deadline: float, transmit: bool) -> None:
        if transmit:
            self._output.send(self._tick, deadline, self._payload)
        self._tick += 1
