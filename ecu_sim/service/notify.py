"""systemd integration: readiness, status and watchdog notifications (sd_notify).

The simulator runs unattended as a ``Type=notify`` service with ``WatchdogSec=`` on small boards, so
systemd must learn when the bus is really open (``READY=1``), what the node is doing (``STATUS=``)
and that the tick loop is still turning (``WATCHDOG=1``). Debian's python3-systemd is used when it
is installed; otherwise the sd_notify(3) datagram is sent directly, so a plain ``pip install`` in a
venv without systemd headers behaves the same. Outside systemd everything here is a cheap no-op, so
the run loop calls it unconditionally.
"""

from __future__ import annotations

import importlib
import logging
import os
import socket
from collections.abc import Callable, Mapping
from typing import Any

log = logging.getLogger(__name__)

def load_systemd(module: str, attribute: str) -> Any | None:
    """systemd-python is optional: a missing or foreign ``systemd`` package just means "not there".

    There is an unrelated PyPI package also called ``systemd``; checking for the attribute keeps
    it from being mistaken for systemd-python.
    """
    try:
        loaded = importlib.import_module(module)
    except ImportError:
        return None
    found = getattr(loaded, attribute, None)
    return found if callable(found) else None


class Notifier:
    """Talks to the service manager through ``$NOTIFY_SOCKET``; silent when there is none.

    Sending never raises: a lost status datagram must not stop a simulator that is otherwise fine.
    The watchdog interval is half of ``WATCHDOG_USEC`` as sd_watchdog_enabled(3) advises, so one
    slow tick does not get the service killed, but a stalled loop does.
    """

    def __init__(self, environ: Mapping[str, str] | None = None, *, use_library: bool | None = None,
                 pid: int | None = None) -> None:
        env = os.environ if environ is None else environ
        self._address = _socket_address(env.get("NOTIFY_SOCKET", ""))
        self._socket: socket.socket | None = None
        self._library: Callable[..., Any] | None = None
        # The library reads os.environ itself, so it is only right when that is what we were given.
        if self._address is not None and use_library is not False and environ is None:
            self._library = load_systemd("systemd.daemon", "notify")
        if use_library and self._library is None and self._address is not None:
            log.debug("systemd-python is not importable; sending sd_notify datagrams directly")
        self._watchdog_s = _watchdog_interval(env, os.getpid() if pid is None else pid)
        if self._address is None:
            self._watchdog_s = None  # nobody to report to, so nothing to kick
        self._last_kick: float | None = None

    @property
    def enabled(self) -> bool:
        """True under a service manager that listens (``NOTIFY_SOCKET`` is set and usable)."""
        return self._address is not None

    def watchdog_interval_s(self) -> float | None:
        """Seconds between kicks, or None when the unit has no watchdog for this process."""
        return self._watchdog_s

    def ready(self, status: str | None = None) -> None:
        """The bus is open and the loop ticks: ``systemctl start`` may now return."""
        self._send("READY=1" if status is None else f"READY=1\nSTATUS={_one_line(status)}")

    def status(self, text: str) -> None:
        """Shown by ``systemctl status``; one line, so it must not break the protocol's line format."""
        self._send(f"STATUS={_one_line(text)}")

    def stopping(self) -> None:
        """Lets systemd tell an orderly shutdown from a crash while the last frames are flushed."""
        self._send("STOPPING=1")

    def kick(self, now_s: float) -> None:
        """Called every tick from the loop itself: only a turning loop keeps the service alive.

        ``now_s`` comes from the loop's monotonic clock; a kick goes out at most once per interval
        so that a 10 Hz loop does not send 10 datagrams a second.
        """
        interval = self._watchdog_s
        if interval is None:
            return
        last = self._last_kick
        if last is not None and 0.0 <= now_s - last < interval:
            return
        self._last_kick = now_s
        self._send("WATCHDOG=1")

    def __enter__(self) -> Notifier:
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Say STOPPING=1 however the run ends, then close the socket."""
        self.stopping()
        self.close()

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def _send(self, message: str) -> None:
        if self._address is None:
            return
        if self._library is not None:
            try:
                self._library(message)
            except (OSError, ValueError) as exc:
                log.debug("sd_notify %r failed: %s", message, exc)
            return
        try:
            if self._socket is None:
                self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
            self._socket.sendto(message.encode("utf-8"), self._address)
        except OSError as exc:
            # systemd may be restarting (daemon-reexec) or the socket was never ours: log, go on.
            log.debug("sd_notify %r to %r failed: %s", message, self._address, exc)


def _socket_address(value: str) -> str | None:
    """``@name`` is an abstract socket (Linux: leading NUL byte), ``/path`` a socket file.

    Other forms (e.g. ``vsock:`` of newer systemd inside VMs) are not supported and disable
    notifications rather than failing the run.
    """
    if value.startswith("/"):
        return value
    if value.startswith("@") and len(value) > 1:
        return "\0" + value[1:]
    if value:
        log.warning("NOTIFY_SOCKET=%r is not a Unix socket address; systemd notifications are off", value)
    return None


def _watchdog_interval(environ: Mapping[str, str], pid: int) -> float | None:
    """Half the configured timeout, as sd_watchdog_enabled(3); None when it is not meant for us.

    ``WATCHDOG_PID`` names the process the watchdog is for: a child that inherited the variables
    (or a process started by ``systemd-run --pipe`` from a service) must not kick on its behalf.
    """
    raw_usec = environ.get("WATCHDOG_USEC", "")
    try:
        usec = int(raw_usec)
    except ValueError:
        return None
    if usec <= 0:
        return None
    raw_pid = environ.get("WATCHDOG_PID")
    if raw_pid is not None:
        try:
            if int(raw_pid) != pid:
                return None
        except ValueError:
            return None
    return usec / 2_000_000


def _one_line(text: str) -> str:
    return " ".join(text.splitlines())


# ---------------------------------------------------------------------------------------------
# logging
