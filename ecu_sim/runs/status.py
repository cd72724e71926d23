"""What a running node tells the world: a status line in the log, and systemd's READY, STATUS, WATCHDOG.

Every tick kicks the watchdog (the notifier sends at most one kick per watchdog interval), so only
a turning loop keeps the service alive. READY=1 goes out after the first tick, i.e. once the bus is
open and a frame has been sent, together with the first STATUS= so that a service is never active
with an empty status (``systemctl status`` right after start). Under systemd the log is the
journal on an SD card, so a service may log the line less often (``status_interval_s``) while
``systemctl status`` stays current every second.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.service.notify import Notifier

log = logging.getLogger("ecu_sim")

#: how often systemd's STATUS= is renewed
NOTIFY_INTERVAL_S = 1.0


class StatusReporter:
    """A tick observer that logs ``line()`` every ``interval_s`` and keeps systemd informed."""

    def __init__(self, line: Callable[[], str], notifier: Notifier, period_s: float,
                 interval_s: float) -> None:
        self._line = line
        self._notifier = notifier
        self._log_every = max(1, ticks_in(interval_s, period_s))
        self._notify_every = max(1, ticks_in(NOTIFY_INTERVAL_S, period_s)) if notifier.enabled else 0
        self._ready = False

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        notifier = self._notifier
        if not self._ready:
            self._ready = True
            notifier.ready(self._line())
        notifier.kick(now)
        count = tick + 1
        if count % self._log_every == 0 and log.isEnabledFor(logging.INFO):  # a line unlogged is unbuilt
            log.info("%s", self._line())
        if self._notify_every and count % self._notify_every == 0:
            notifier.status(self._line())
