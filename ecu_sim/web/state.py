"""What the page shows of a tick: one snapshot, handed from the loop's thread to the server's.

:class:`Publisher` is a tick observer. After a tick it builds one dictionary (the figures of the
status line by name, the J1939 address and active DTCs, and every decoded signal of the tick as
:class:`~ecu_sim.io.signals.TickView` sees it, the picture ``--stream`` sends) and hands it over
by replacing a reference and appending it to a bounded ring: the server thread only reads them,
and a snapshot is never changed once published, so there is no lock and the loop never waits.

A snapshot is a tick's dearest extra work (every frame decoded by cantools, the counters, the
J1939 figures), and a person's eye needs far fewer than a 10 ms loop makes. So while someone
looks (a page open, a request for the state waiting) the publisher makes a point of the plots
every :data:`PAGE_INTERVAL_S` (the tick's timing and the model's figures, which the plots draw),
and every :data:`PAGE_SEND_S` a whole snapshot, the newest frame of each message the view kept
since it was last taken decoded, that ends a batch: it wakes the server's event loop (one write
to its wake-up pipe), which sends the points and the snapshot made since as one message. A
wake-up of the server's thread (its event loop, a WebSocket's send) costs the process more
than a snapshot, and a page's plots take a batch as they take one sample; the panel and the
plot of a decoded signal, which show the newest whole snapshot, change at the batches' pace.
The status line, which the page does not show, is built only for a snapshot a request for the
state waits for (:attr:`Publisher.hurry`), which also wakes the server at once.

While nobody looks, the publisher notes the tick's timing and the node's figures every
:data:`IDLE_INTERVAL_S` as they are, and makes them the points a page's plots open with only when
a page opens; the view keeps no frames (its listeners return at once), and the server's thread
sleeps. A node left running with its page closed then pays for little more than its port's
listeners and the page's spool (ecu_sim.io.spool).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from ecu_sim.faults.injector import FaultInjector
from ecu_sim.io.signals import TickView
from ecu_sim.member.part import NetworkPart
from ecu_sim.nodes.factory import Built
from ecu_sim.nodes.figures import Figure, Figured, values
from ecu_sim.runtime.loop import LoopStats
from ecu_sim.runtime.ticks import ticks_in

#: the figures the page shows, in its order; a node without one shows None there
PAGE_FIGURES = ("speed_kph", "set_speed_kph", "app_pct", "brake_pct", "grade_pct", "gear", "engine_rpm",
                "cruise", "pedal_override_pct")

#: snapshots the ring keeps: what a page that opens gets to start its plots with
RING_TICKS = 600
#: a point of the plots this often while someone looks: five a second still draw a plot of 30 s
#: or more smoothly
PAGE_INTERVAL_S = 0.2
#: and a point of the history a page opens with this often while nobody does
IDLE_INTERVAL_S = 1.0
#: the server's thread woken this often while a page is open, to send what was made since: the
#: page's figures lag by up to this, which a person reading them does not notice
PAGE_SEND_S = 0.6


class Publisher:
    """A tick observer that publishes the tick's snapshot for the web server."""

    def __init__(self, name: str, built: Built, view: TickView, stats: LoopStats,
                 line: Callable[[], str], bus_state: Callable[[], str], period_s: float,
                 ring_ticks: int = RING_TICKS) -> None:
        self.name = name
        self._every = max(1, ticks_in(PAGE_INTERVAL_S, period_s))
        self._send_every = self._every * max(1, round(PAGE_SEND_S / PAGE_INTERVAL_S))
        self._idle_every = max(1, ticks_in(IDLE_INTERVAL_S, period_s))
        self._built = built
        self._view = view
        self._stats = stats
        self._line = line
        self._bus_state = bus_state
        #: the newest snapshot made while someone looked (None before); replaced, never changed
        self.latest: dict[str, Any] | None = None
        #: the newest points and snapshots made while someone looked, oldest first
        self.ring: deque[dict[str, Any]] = deque(maxlen=ring_ticks)
        #: the newest points noted while nobody looked: the tick's timing and the node's figures
        self.idle: deque[tuple[dict[str, Any], tuple[Figure, ...]]] = deque(maxlen=ring_ticks)
        #: the server's wake-up while someone looks, else None: called every PAGE_SEND_S
        self.wake: Callable[[], None] | None = None
        #: set by the server while a request for the state waits: wake it at the next snapshot
        self.hurry = False
        self._watching = False
        self._kept_from = 0

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        wake = self.wake
        if (wake is not None) is not self._watching:  # someone came, or the last one left
            self._watching = wake is not None
            self._view.watch(self._watching)
            self._kept_from = tick + 1  # the view keeps the frames of the ticks after this one
        if wake is None:
            if tick % self._idle_every == 0:
                self._remember(tick, now, transmitted)
            return
        if tick % self._every:
            return
        hurry = self.hurry  # set by the server's thread: read once, so this snapshot answers it
        if (not hurry and tick % self._send_every) or tick - self._kept_from + 1 < self._every:
            # the frames stay for the batch's last snapshot; the first one after someone came
            # waits until the view has kept a point's interval of them, as a page's have
            self._point(tick, now, transmitted)
            return
        self._publish(tick, now, transmitted, with_line=hurry)
        if hurry:
            self.hurry = False  # the server sets it again for a request this one missed
        wake()

    def _remember(self, tick: int, now: float, transmitted: bool) -> None:
        """A point of the history a page opens with, while nobody looks: the tick's timing, taken
        now (its wall-clock time is read when asked), and the figures as they are, made a point
        only when a page opens (:meth:`history`); the frames let go."""
        self.idle.append((self._view.timing(tick, now, transmitted), self._built.node.figures()))
        self._view.forget()

    def history(self) -> list[dict[str, Any]]:
        """The newest points, oldest first, those noted while nobody looked made points now; in
        the server's thread, from copies (the loop appends meanwhile)."""
        noted = [self._as_point(*note) for note in list(self.idle)]
        points = sorted([*noted, *list(self.ring)], key=lambda point: point["tick"])
        return points[-(self.ring.maxlen or len(points)):]

    def _as_point(self, timing: dict[str, Any], figures: tuple[Figure, ...]) -> dict[str, Any]:
        """A point of the plots from the tick's timing and the node's figures then."""
        loop = timing["loop"]
        return {"node": self.name, "tick": loop["tick"], "t_s": loop["t_s"], "timestamp": timing["timestamp"],
                "lateness_ms": loop["lateness_ms"], **page_figures(figures)}

    def _point(self, tick: int, now: float, transmitted: bool) -> None:
        """A point of the plots: the tick's timing and the model's figures, nothing decoded."""
        timing = self._view.timing(tick, now, transmitted)
        self.ring.append(self._as_point(timing, self._built.node.figures()))

    def _publish(self, tick: int, now: float, transmitted: bool, with_line: bool) -> None:
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
            "j1939": j1939_figures(self._built.node.network),
            "faults": faults_on(self._built.faults),
            "status_line": self._line() if with_line else None,
            "signals": {"rx": group["rx"], "tx": group["tx"]},
        }
        self.latest = snapshot
        self.ring.append(snapshot)

    def _counters(self, counters: dict[str, float]) -> dict[str, int]:
        port = self._built.node.port.counters
        return {"rx": int(counters["rx"]), "tx": int(counters["tx"]), "invalid": int(counters["invalid"]),
                "late": self._stats.late, "echo": int(counters["echo"]), "foreign": port.foreign,
                "other": int(counters["other"]), "tx_errors": int(counters["tx_errors"])}


def node_figures(node: Figured) -> dict[str, Any]:
    """The model's figures the page shows, by name, now."""
    return page_figures(node.figures())


def page_figures(figures: Iterable[Figure]) -> dict[str, Any]:
    """The figures the page shows, by name (None where the node has no such figure); an APP that
    is missing shows as none, not as the coasting truck's 0 %."""
    has = values(figures)
    shown = {name: has.get(name) for name in PAGE_FIGURES}
    if has.get("app_missing"):
        shown["app_pct"] = None
    return shown


def j1939_figures(network: NetworkPart | None) -> dict[str, Any]:
    """The node's J1939 address and active DTCs as DM1 sends them (none without a network part)."""
    if network is None:
        return {"address": None, "dtcs": []}
    return {"address": network.network.address,
            "dtcs": [{"spn": dtc.spn, "fmi": dtc.fmi, "occurrences": count}
                     for dtc, count in network.active_dtcs()]}


def faults_on(faults: FaultInjector | None) -> list[str]:
    """The faults acting on the node's frames now, in the ``--fault`` grammar."""
    return [] if faults is None else faults.acting()
