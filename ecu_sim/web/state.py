"""What the page shows of a tick: one snapshot, handed from the loop's thread to the server's.

:class:`Publisher` is a tick observer. After each tick it builds one dictionary (the figures of the
status line by name, the J1939 address and active DTCs, and every decoded signal of the tick as
:class:`~ecu_sim.io.signals.TickView` sees it, the picture ``--stream`` sends) and hands it over
by replacing a reference and appending it to a bounded ring: the server thread only reads them,
and a snapshot is never changed once published, so there is no lock and the loop never waits.
While a page is open the publisher also wakes the server's event loop (one write to its wake-up
pipe); with none open the server thread sleeps and costs nothing.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from ecu_sim.faults.injector import FaultInjector
from ecu_sim.io.signals import TickView
from ecu_sim.nodes.ccm import Ccm
from ecu_sim.nodes.driver import Driver
from ecu_sim.nodes.ecu import Ecu
from ecu_sim.nodes.factory import Built
from ecu_sim.runtime.loop import LoopStats

#: snapshots the ring keeps: what a page that opens gets to start its plots with
RING_TICKS = 600


class Publisher:
    """A tick observer that publishes the tick's snapshot for the web server."""

    def __init__(self, name: str, built: Built, view: TickView, stats: LoopStats,
                 line: Callable[[], str], bus_state: Callable[[], str], ring_ticks: int = RING_TICKS) -> None:
        self.name = name
        self._built = built
        self._view = view
        self._stats = stats
        self._line = line
        self._bus_state = bus_state
        #: the newest snapshot (None before the first tick); replaced, never changed
        self.latest: dict[str, Any] | None = None
        #: the newest snapshots, oldest first
        self.ring: deque[dict[str, Any]] = deque(maxlen=ring_ticks)
        #: called after each published tick while a page is open (the server's wake-up), else None
        self.wake: Callable[[], None] | None = None

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        picture = self._view.take(tick, now, transmitted)
        group = picture[self.name]
        snapshot = {
            "node": self.name,
            "tick": tick,
            "t_s": picture["loop"]["t_s"],
            "timestamp": picture["timestamp"],
            "lateness_ms": picture["loop"]["lateness_ms"],
            **node_figures(self._built.node),
            "counters": self._counters(group["counters"]),
            "bus": self._bus_state(),
            "j1939": j1939_figures(self._built.node),
            "faults": faults_on(self._built.faults),
            "status_line": self._line(),
            "signals": {"rx": group["rx"], "tx": group["tx"]},
        }
        self.latest = snapshot
        self.ring.append(snapshot)
        wake = self.wake
        if wake is not None:
            wake()

    def _counters(self, counters: dict[str, float]) -> dict[str, int]:
        port = self._built.node.port.counters
        return {"rx": int(counters["rx"]), "tx": int(counters["tx"]), "invalid": int(counters["invalid"]),
                "late": self._stats.late, "echo": int(counters["echo"]), "foreign": port.foreign,
                "other": int(counters["other"]), "tx_errors": int(counters["tx_errors"])}


def node_figures(node: Ecu | Ccm | Driver) -> dict[str, Any]:
    """The model's figures of the status line, by name (None where the node has no such figure)."""
    figures: dict[str, Any] = {"speed_kph": None, "set_speed_kph": None, "app_pct": None,
                               "brake_pct": None, "grade_pct": None, "gear": None, "engine_rpm": None,
                               "cruise": None, "pedal_override_pct": None}
    if isinstance(node, Ecu):
        driveline = node.vehicle.driveline()
        figures.update(speed_kph=node.state.speed_kph, app_pct=None if node.app_missing else node.app_pct,
                       brake_pct=node.brake_demand_pct, grade_pct=node.grade_pct,
                       pedal_override_pct=node.pedal_override_pct)
        if driveline is not None:
            figures.update(gear=driveline.gear, engine_rpm=driveline.engine_rpm)
    elif isinstance(node, Ccm):
        cruise = ("off (no speed)" if node.speed_kph is None else "off" if not node.engaged
                  else "override" if node.override else "on")
        figures.update(speed_kph=node.speed_kph, set_speed_kph=node.set_speed_kph, app_pct=node.app_pct,
                       brake_pct=node.brake_pct if node.brake is not None else None, cruise=cruise,
                       pedal_override_pct=node.pedal_override_pct)
    else:
        figures.update(speed_kph=node.speed_kph, app_pct=node.controls.app_pct,
                       brake_pct=node.controls.brake_pct)
    return figures


def j1939_figures(node: Ecu | Ccm | Driver) -> dict[str, Any]:
    """The node's J1939 address and active DTCs as DM1 sends them (none without a network part)."""
    network = getattr(node, "network", None)
    if network is None:
        return {"address": None, "dtcs": []}
    return {"address": network.network.address,
            "dtcs": [{"spn": dtc.spn, "fmi": dtc.fmi, "occurrences": count}
                     for dtc, count in network.active_dtcs()]}


def faults_on(faults: FaultInjector | None) -> list[str]:
    """The faults acting on the node's frames now, in the ``--fault`` grammar."""
    return [] if faults is None else faults.acting()
