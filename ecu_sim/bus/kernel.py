"""Kernel-timed transmission on SocketCAN: the broadcast manager sends the node's frame.

On SocketCAN the default transmitter is :class:`KernelTransmitter`: the kernel's broadcast
manager (BCM) sends on its own timer, so the period on the wire does not depend on Python being
scheduled on time. Three rules keep that
timer honest:

- **Fixed phase.** The timer fires a quarter period after each of the loop's deadlines. A tick
  replaces the payload within a few milliseconds of its deadline, so the kernel always sends the
  newest completed tick, never half of an update (older kernels copied a new payload without a
  lock: the quarter period keeps the copy away from the timer).
  The BCM re-arms each period from the moment its handler runs, so its period runs a little
  long; :class:`PhaseLock` measures when the kernel really sent (the kernel timestamp of our own
  frame, heard back on the raw socket) and trims the next interval by at most ``LOCK_MAX_STEP`` of a period.
  When the phase is off by more than a tenth of a period (a resumed process, a changed clock),
  the timer is started afresh at the right moment.
- **No stale frames.** The timer is given a budget of :data:`STALL_FRAMES` sends, renewed by every
  tick. A loop that stalls (SIGSTOP, a hung process waiting for the watchdog) falls silent after
  that many frames, as a hung ECU would, instead of repeating a frozen value for as long as the
  process lives. The next tick starts the timer again.
- **Nothing outlives the bus.** The task is not registered with python-can (``store_task=False``):
  closing the bus closes the BCM socket, and the kernel deletes the timer with it, even when the
  interface has vanished and a TX_DELETE could not be sent.

python-can's cyclic task can change the payload (``modify_data``) but not the send budget without
restarting the timer, so each tick's update is one BCM ``TX_SETUP`` written with python-can's own
socketcan helpers on the task's socket.
"""
from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable

import can
from can.interfaces.socketcan import constants as bcm_constants
from can.interfaces.socketcan import socketcan as bcm

from ecu_sim.bus.listener import Direction
from ecu_sim.bus.port import Port
from ecu_sim.bus.transmit import Transmitter

log = logging.getLogger(__name__)

#: Fraction of the period by which the kernel's sends follow the ticks' deadlines.
KERNEL_PHASE = 0.25
#: Frames the kernel sends after the newest update before it falls silent (a stalled loop).
STALL_FRAMES = 3
#: Share of the phase error taken out of each next interval, and the most one interval changes.
LOCK_GAIN = 0.25
LOCK_MAX_STEP = 0.005
#: Phase error, as a fraction of the period, beyond which the timer is started afresh.
REARM_FRACTION = 0.1


class PhaseLock:
    """Where the kernel's sends fall between the loop's deadlines, and the interval that holds them.

    Pure arithmetic on monotonic times, so it is tested without a kernel. The error is the
    measured phase minus the target, wrapped into half a period either way; the next interval is
    the period shortened by ``LOCK_GAIN`` of it (a proportional lock: a timer that runs late by L
    each period settles at an error of L / LOCK_GAIN), never by more than ``LOCK_MAX_STEP`` of a
    period, so no single frame moves by more than that.
    """

    def __init__(self, period_s: float, phase_s: float) -> None:
        self.period_s = period_s
        self.phase_s = phase_s
        #: newest phase error in seconds (positive: the kernel sends late); None until measured
        self.error_s: float | None = None

    def observe(self, sent_at: float, deadline: float) -> None:
        """A frame the kernel sent at ``sent_at``, seen by the tick of ``deadline``."""
        period = self.period_s
        error = (sent_at - deadline - self.phase_s) % period
        self.error_s = error - period if error >= period / 2 else error

    def interval_s(self) -> float:
        if self.error_s is None:
            return self.period_s
        limit = LOCK_MAX_STEP * self.period_s
        return self.period_s - max(-limit, min(limit, LOCK_GAIN * self.error_s))

    @property
    def lost(self) -> bool:
        """True when the error is too large to trim away: the timer must be started afresh."""
        return self.error_s is not None and abs(self.error_s) > REARM_FRACTION * self.period_s

    def restarted(self) -> None:
        self.error_s = None


class KernelTransmitter(Transmitter):
    """The kernel's broadcast manager sends the frame every period, locked to the loop's phase.

    Each send carries the deadline of its tick, the grid the timer locks to; the kernel's echoes
    of our frame reach it as a listener of the port (:meth:`on_frame`) and measure the phase.
    """

    def __init__(self, port: Port, arbitration_id: int, is_extended_id: bool, period_s: float,
                 phase_s: float | None = None, monotonic: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep,
                 wall: Callable[[], float] = time.time) -> None:
        super().__init__(port, arbitration_id, is_extended_id)
        self._period_s = period_s
        self.lock = PhaseLock(period_s, KERNEL_PHASE * period_s if phase_s is None else phase_s)
        self._monotonic = monotonic
        self._sleep = sleep
        self._wall = wall
        #: the deadline of the newest tick: any point of the loop's grid measures the phase
        self._deadline: float | None = None
        self._task: can.broadcastmanager.CyclicSendTaskABC | None = None
        self._generation = -1
        self._updated_at = -math.inf
        #: times the timer was started (first send, reconnects, stalls, lost phase)
        self.starts = 0
        port.add_listener(self)

    def send(self, tick: int, deadline: float, data: bytes) -> None:
        port = self._port
        self._deadline = deadline
        msg = self._new_frame(self._arbitration_id, data, self._is_extended_id)
        bus = port.bus
        if bus is None:
            port.not_sent(msg)
            return
        try:
            self._transmit(bus, msg, deadline)
        except (can.CanOperationError, OSError) as exc:
            self._task = None
            port.send_failed(msg, exc)
            return
        port.sent(msg)

    def _transmit(self, bus: can.BusABC, msg: can.Message, deadline: float) -> None:
        now = self._monotonic()
        # After a gap of more than 1.5 periods the kernel may have spent its budget and stopped;
        # starting afresh at the phase point is harmless if it has not.
        stopped = (self._task is None or self._generation != self._port.generation
                   or now - self._updated_at > 1.5 * self._period_s)
        if stopped or self.lock.lost:
            wait = deadline + self.lock.phase_s - now
            if wait >= 0.0:
                self._sleep(wait)
                self._start(bus, msg)
            elif stopped:
                self._start(bus, msg)  # late for this period's phase: a later on-time tick corrects it
            else:
                self._update(msg, start=False)  # try again at a tick that is on time
        else:
            self._update(msg, start=False)
        self._updated_at = self._monotonic()

    def _start(self, bus: can.BusABC, msg: can.Message) -> None:
        if self._task is None or self._generation != self._port.generation:
            # python-can opens the BCM socket and names the task; the timer is set up below.
            self._task = bus.send_periodic(msg, self._period_s, autostart=False, store_task=False)
            self._generation = self._port.generation
        self._update(msg, start=True)
        self.lock.restarted()
        self.starts += 1
        if self.starts > 1:
            log.debug("kernel timer started again (%d starts)", self.starts)

    def _update(self, msg: can.Message, start: bool) -> None:
        """One TX_SETUP: the new payload and a renewed budget; with ``start`` it sends now."""
        task = self._task
        assert task is not None
        flags = bcm_constants.SETTIMER | (bcm_constants.STARTTIMER if start else 0)
        if msg.is_fd:
            flags |= bcm_constants.CAN_FD_FRAME
        seconds, micros = divmod(round(self.lock.interval_s() * 1e6), 1_000_000)
        header = bcm.build_bcm_header(bcm_constants.CAN_BCM_TX_SETUP, flags, STALL_FRAMES,
                                      seconds, micros, 0, 0, task.task_id, 1)  # type: ignore[attr-defined]
        bcm.send_bcm(task.bcm_socket, header + bcm.build_can_frame(msg))  # type: ignore[attr-defined]

    def on_frame(self, msg: can.Message, direction: Direction) -> None:
        """Our own frame, looped back by the kernel with the time it was sent."""
        if (direction is not Direction.ECHO or self._deadline is None
                or msg.arbitration_id != self._arbitration_id):
            return
        # Receive timestamps are on CLOCK_REALTIME; the loop's deadlines on CLOCK_MONOTONIC.
        sent_at = msg.timestamp - (self._wall() - self._monotonic())
        self.lock.observe(sent_at, self._deadline)
