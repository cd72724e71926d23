"""A node's view of the bus: own echoes told apart, failures counted rather than fatal.

udp_multicast (and some adapters) hand a process its own frames back. A frame carrying an
identifier this node transmits is either that echo or another node using our address
(:mod:`ecu_sim.bus.own` tells which); it is kept from the node either way and counted, never
decoded as input. A frame with another identifier the node has sent (a J1939 claim, a hosted
restbus node's message) is kept from it only when it is our echo: another node's goes to the
node, whose J1939 layer judges it.

Given ``reopen``, a lost bus (interface down, deleted, adapter unplugged) does not end the run:
the port closes it, retries with exponential backoff while the loop keeps ticking, and reports
it. Frames due while the bus is down are dropped, so nothing stale is sent later.

A send the interface refuses without going away (a full transmit queue, ENOBUFS, which an
adapter alone on a bus gives at once) costs that frame only: it is counted as a tx error and the
next tick sends again. The log says so once when sends start failing and once when one works
again, with the number lost between, because a line per frame would flood a log at the loop's rate.
"""

from __future__ import annotations

import errno
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import TracebackType

import can

from ecu_sim.bus.listener import Direction, PortListener
from ecu_sim.bus.own import OwnFrames
from ecu_sim.bus.state import ControllerState, error_classes, state_from_error_frame
from ecu_sim.errors import BusUnavailableError, ConfigError, errno_of

log = logging.getLogger(__name__)

#: errno values of a send or receive that mean the interface went away (down, deleted, unplugged)
_LOST = frozenset({errno.ENETDOWN, errno.ENODEV, errno.ENXIO, errno.EBADF, errno.ENETUNREACH})
#: frames (echoes, error frames) one receive call skips at most before it returns
SKIP_LIMIT = 256
BACKOFF_INITIAL_S = 0.1
BACKOFF_MAX_S = 5.0


@dataclass
class PortCounters:
    rx: int = 0
    tx: int = 0
    echo: int = 0
    #: frames of another node carrying our identifier (OwnFrames.foreign, shown here)
    foreign: int = 0
    tx_errors: int = 0
    #: frames a tick wanted to send while the bus was down (dropped, never sent late)
    tx_dropped: int = 0
    reconnects: int = 0
    error_frames: Counter[str] = field(default_factory=Counter)

    def text(self) -> str:
        """The problem counters that are not zero, e.g. ``echo 12 tx_dropped 3``."""
        return " ".join(f"{name} {value}" for name, value in (
            ("echo", self.echo), ("foreign", self.foreign), ("tx_errors", self.tx_errors),
            ("tx_dropped", self.tx_dropped), ("reconnects", self.reconnects)) if value)


class Port:
    """Receives for one node and sends its frames; every frame is shown to the listeners."""

    def __init__(self, bus: can.BusABC | None, own_ids: Iterable[int],
                 reopen: Callable[[], can.BusABC] | None = None,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.bus: can.BusABC | None = bus
        # a bus that keeps a node's own frames from it says so (ecu_sim.bus.hostlocal)
        self.own = OwnFrames(own_ids, monotonic, echoing=getattr(bus, "own_frames_come_back", True))
        self.own_ids = self.own.ids
        #: the node's other identifiers, learned at their first send while the bus hands its
        #: frames back: a frame with one is our echo or another node's (see ecu_sim.bus.own)
        self._learned: set[int] = set()
        self._learns = hands_back_sends(bus)
        self.counters = PortCounters()
        #: the controller's state as last reported by an error frame (assumed error-active until then)
        self.controller_state = ControllerState.ERROR_ACTIVE
        #: events a protocol layer above must look at: a frame of another sender with one of our
        #: identifiers, a change of the controller's state. Only compared, so a layer can skip its
        #: tick while nothing happened (ecu_sim.member.part)
        self.alerts = 0
        #: bumped on every reconnect, so transmitters know to set up again
        self.generation = 0
        self._listeners: tuple[PortListener, ...] = ()
        self._reopen = reopen
        self._monotonic = monotonic
        self._backoff_s = BACKOFF_INITIAL_S
        self._retry_at = 0.0
        self._lost_at = 0.0 if bus is not None else monotonic()  # None: not reachable yet, retried
        #: tx_errors when the sends now failing began to fail; None while sends work
        self._failing_since: int | None = None

    def __enter__(self) -> Port:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def add_listener(self, listener: PortListener) -> None:
        """Show ``listener`` every frame from now on (while the run is wired, before it starts)."""
        self._listeners = (*self._listeners, listener)

    @property
    def connected(self) -> bool:
        return self.bus is not None

    def state_text(self) -> str:
        """E.g. ``bus up``, ``bus up, error-passive | echo 40 tx_errors 2 | errors controller 1``.

        The controller state is shown unless error-active (the normal state); the counters only
        when not zero: echo (own frames heard back), foreign (another node's frames with our
        identifier), tx_errors (failed sends, e.g. ENOBUFS), tx_dropped (frames due while the bus
        was down), reconnects, and error frames by class.
        """
        if self.bus is None:
            head = "bus down (reconnecting)"
        elif self.controller_state is ControllerState.ERROR_ACTIVE:
            head = "bus up"
        else:
            head = f"bus up, {self.controller_state.value}"
        parts = [head]
        counts = self.counters.text()
        if counts:
            parts.append(counts)
        errors = " ".join(f"{name} {count}" for name, count in sorted(self.counters.error_frames.items()))
        if errors:
            parts.append(f"errors {errors}")
        return " | ".join(parts)

    def recv(self, timeout_s: float) -> can.Message | None:
        """The next frame for the node, or None when none came within ``timeout_s``.

        Echoes and error frames are counted and skipped here, so None always means "nothing
        (more) queued". After a skipped frame the wait does not restart: what is already queued
        is looked at, and the caller's clock asks again for the rest of its wait. At most
        SKIP_LIMIT frames are skipped per call, so an error-frame storm cannot hold up a tick.
        """
        bus = self.bus
        if bus is None:
            self._wait_and_reconnect(timeout_s)
            return None
        try:  # written out rather than through _recv_queued: every frame and every drain comes here
            msg = bus.recv(timeout_s)
        except (can.CanOperationError, OSError) as exc:
            self._lost(exc)
            return None
        if msg is None:
            return None  # the end of every drain: answered before anything else is looked up
        if (not msg.is_error_frame and msg.arbitration_id not in self.own_ids
                and msg.arbitration_id not in self._learned):
            self.counters.rx += 1
            for listener in self._listeners:
                listener.on_frame(msg, Direction.RECEIVED)
            return msg
        return self._skip(bus, msg)

    def _skip(self, bus: can.BusABC, msg: can.Message) -> can.Message | None:
        """Count and skip ``msg`` (an echo, a foreign frame with our identifier or an error frame)
        and the next ones like it, up to SKIP_LIMIT; the first other frame queued, or None."""
        counters, own_ids, listeners, own = self.counters, self.own_ids, self._listeners, self.own
        learned = self._learned
        for left in reversed(range(SKIP_LIMIT)):  # SKIP_LIMIT frames received at most, this one included
            if msg.is_error_frame:
                self._count_error_frame(msg)
                direction = Direction.RECEIVED
            elif msg.arbitration_id in own_ids:
                if own.is_echo(msg):
                    counters.echo += 1
                    direction = Direction.ECHO
                else:
                    counters.foreign += 1
                    self.alerts += 1
                    direction = Direction.FOREIGN
            elif msg.arbitration_id in learned and own.heard_back(msg):
                counters.echo += 1  # a frame the node sent with another identifier, heard back
                direction = Direction.ECHO
            else:
                counters.rx += 1
                for listener in listeners:
                    listener.on_frame(msg, Direction.RECEIVED)
                return msg
            for listener in listeners:
                listener.on_frame(msg, direction)
            next_msg = self._recv_queued(bus) if left else None  # the rest waits in the queue
            if next_msg is None:
                return None
            msg = next_msg
        return None

    def _recv_queued(self, bus: can.BusABC) -> can.Message | None:
        """The next frame already queued, or None; a lost bus starts a reconnect."""
        try:
            return bus.recv(0.0)
        except (can.CanOperationError, OSError) as exc:
            self._lost(exc)
            return None

    def send(self, msg: can.Message) -> None:
        """Send one frame; a failure costs this frame only, or starts a reconnect."""
        bus = self.bus
        if bus is None:
            self.not_sent(msg)
            return
        try:
            bus.send(msg)
        except (can.CanOperationError, OSError) as exc:
            self.send_failed(msg, exc)
            return
        self.own.remember(msg)  # own.sent, one call less
        if self._learns and msg.arbitration_id not in self._learned:
            self._learned.add(msg.arbitration_id)  # its echo is ours, not the node's input
        self.counters.tx += 1  # what sent() does, without a call: every tick of every node comes here
        if self._failing_since is not None:
            self._sending_again()
        for listener in self._listeners:
            listener.on_frame(msg, Direction.SENT)

    def sent(self, msg: can.Message) -> None:
        """``msg`` reached the bus (through ``send``, or a transmitter of its own on this port).

        Not the end of failing sends: the kernel's timer takes its update even while the queue
        it sends into is full, so only a frame ``send`` got through says the queue drained.
        """
        self.own.sent(msg)
        if self._learns:
            self._learned.add(msg.arbitration_id)
        self.counters.tx += 1
        for listener in self._listeners:
            listener.on_frame(msg, Direction.SENT)

    def not_sent(self, msg: can.Message) -> None:
        """``msg`` was due while the bus was down: dropped, never sent late."""
        self.counters.tx_dropped += 1
        for listener in self._listeners:
            listener.on_frame(msg, Direction.NOT_SENT)

    def send_failed(self, msg: can.Message, exc: Exception) -> None:
        """A full transmit queue (ENOBUFS) or a missing acknowledgement only costs this frame."""
        for listener in self._listeners:
            listener.on_frame(msg, Direction.NOT_SENT)
        if errno_of(exc) in _LOST:
            self._lost(exc)
            return
        if self._failing_since is None:
            self._failing_since = self.counters.tx_errors
            log.warning("sends fail (%s): the transmit queue is full or the frames are not "
                        "acknowledged; each refused frame is dropped and counted as tx_errors until "
                        "a send works again (check that another node is on the bus, and its bit rate)",
                        exc)
        self.counters.tx_errors += 1

    def _sending_again(self) -> None:
        """The first frame sent after failed ones: the episode is reported with what it cost."""
        assert self._failing_since is not None
        lost, self._failing_since = self.counters.tx_errors - self._failing_since, None
        log.warning("sending again after %d refused frame%s", lost, "" if lost == 1 else "s")

    def _count_error_frame(self, msg: can.Message) -> None:
        classes = error_classes(msg)
        for name in classes:
            self.counters.error_frames[name] += 1
        state = state_from_error_frame(msg)
        if state is None or state is self.controller_state:
            return
        previous, self.controller_state = self.controller_state, state
        self.alerts += 1
        if state is ControllerState.BUS_OFF:
            log.warning("controller is bus-off; it recovers by its restart-ms setting "
                        "(e.g. `sudo ecu-sim link <iface> --restart-ms 100`)")
        elif "restarted" in classes:
            log.warning("controller restarted after bus-off")
        else:
            log.warning("controller %s (was %s)", state.value, previous.value)

    def _lost(self, exc: BaseException) -> None:
        if self._reopen is None:
            raise BusUnavailableError(f"the bus failed: {exc}") from exc
        log.warning("bus lost (%s); reconnecting with backoff", exc)
        self._close_quietly()
        self._lost_at = self._monotonic()
        self._backoff_s = BACKOFF_INITIAL_S
        self._retry_at = self._lost_at + self._backoff_s

    def _wait_and_reconnect(self, timeout_s: float) -> None:
        """Sleep at most ``timeout_s`` (the loop keeps its schedule), retrying when due."""
        now = self._monotonic()
        if now < self._retry_at:
            time.sleep(min(timeout_s, self._retry_at - now))
            return
        assert self._reopen is not None
        try:
            self.bus = self._reopen()
        except (BusUnavailableError, ConfigError) as exc:
            self._backoff_s = min(2 * self._backoff_s, BACKOFF_MAX_S)
            self._retry_at = self._monotonic() + self._backoff_s
            log.debug("reconnect failed (%s); next try in %.1f s", exc, self._backoff_s)
            return
        self._learns = hands_back_sends(self.bus)
        self.generation += 1
        self.counters.reconnects += 1
        if self.controller_state is not ControllerState.ERROR_ACTIVE:
            self.controller_state = ControllerState.ERROR_ACTIVE
            self.alerts += 1
        log.warning("bus back after %.1f s", self._monotonic() - self._lost_at)

    def _close_quietly(self) -> None:
        bus, self.bus = self.bus, None
        if bus is not None:
            try:
                bus.shutdown()
            except Exception as exc:  # a bus that just failed may fail to close too
                log.debug("closing the lost bus: %s", exc)

    def close(self) -> None:
        if self.bus is not None:
            self.bus.shutdown()
            self.bus = None


def hands_back_sends(bus: can.BusABC | None) -> bool:
    """Whether ``bus`` hands the node back the frames it writes: a host-local bus says so
    (:mod:`ecu_sim.bus.hostlocal`), python-can's virtual bus when asked to. A SocketCAN socket
    hears the broadcast manager's frames, not its own writes, unless asked, which it does not say:
    taken as not."""
    said = getattr(bus, "own_frames_come_back", None)
    if said is not None:
        return bool(said)
    return bool(getattr(bus, "receive_own_messages", False))
