"""systemd integration: readiness, status and watchdog notifications, and logging for the journal.

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
import sys
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from ecu_sim.errors import ConfigError

log = logging.getLogger(__name__)

__all__ = ["JOURNAL_PRIORITY", "JournalPrefixFormatter", "Notifier", "configure_logging",
           "stderr_is_journal"]

#: logging level -> syslog priority used by journald for ``<N>`` line prefixes (sd-daemon(3)).
JOURNAL_PRIORITY: dict[int, int] = {
    logging.CRITICAL: 2,
    logging.ERROR: 3,
    logging.WARNING: 4,
    logging.INFO: 6,
    logging.DEBUG: 7,
}

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR, "critical": logging.CRITICAL}

#: set on the handler this module installs, so a second configure_logging() replaces it
_HANDLER_MARK = "_ecu_sim_service_handler"


def _load_systemd(module: str, attribute: str) -> Any | None:
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
            self._library = _load_systemd("systemd.daemon", "notify")
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


def stderr_is_journal(environ: Mapping[str, str] | None = None, stream: TextIO | None = None) -> bool:
    """True when stderr is the journal stream systemd connected, not a file or pipe redirected later.

    systemd.exec(5): ``JOURNAL_STREAM`` holds ``device:inode`` of that stream; a process must
    compare it with its own stderr because the variable is inherited by children whose stderr may
    point somewhere else (``ecu-sim ... 2>log`` in a script run by a service).
    """
    env = os.environ if environ is None else environ
    value = env.get("JOURNAL_STREAM", "")
    device, sep, inode = value.partition(":")
    if not sep:
        return False
    target = sys.stderr if stream is None else stream
    try:
        info = os.fstat(target.fileno())
        return (info.st_dev, info.st_ino) == (int(device), int(inode))
    except (OSError, ValueError, AttributeError):
        return False


class JournalPrefixFormatter(logging.Formatter):
    """Prefixes every line with ``<priority>`` so journald keeps each record's level.

    Without the prefix everything written to stderr is logged at the unit's default priority
    (info), and ``journalctl -p warning`` would hide our warnings. Every line of a multi-line
    record (a traceback) gets the prefix, because journald splits the stream into lines.
    No timestamp: the journal adds its own.
    """

    def __init__(self) -> None:
        super().__init__("%(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        priority = JOURNAL_PRIORITY.get(record.levelno, _nearest_priority(record.levelno))
        text = super().format(record)
        return "\n".join(f"<{priority}>{line}" for line in text.splitlines() or [""])


def _nearest_priority(levelno: int) -> int:
    """Custom levels map to the priority of the next standard level at or above them."""
    for level in sorted(JOURNAL_PRIORITY):
        if levelno <= level:
            return JOURNAL_PRIORITY[level]
    return JOURNAL_PRIORITY[logging.CRITICAL]


def configure_logging(level: str, *, journal: bool | None = None,
                      environ: Mapping[str, str] | None = None, stream: TextIO | None = None) -> str:
    """Set up the root logger for where the output really goes; returns the mode chosen.

    ``journal=None`` decides by itself: systemd-python's JournalHandler (structured fields such as
    CODE_LINE, LOGGER) when stderr is the journal and the module is installed, ``<N>``-prefixed
    stderr lines when stderr is the journal without it, and a human format otherwise (a terminal,
    a pipe, a file). ``journal=True`` asks for the JournalHandler even when stderr is not the
    journal (e.g. under a supervisor that discards stderr); it falls back to prefixes without it.
    Calling it again replaces the handler installed before, so tests and reconfiguration work.
    """
    numeric = _LEVELS.get(level.strip().lower())
    if numeric is None:
        raise ConfigError(f"unknown log level {level!r}; use one of {', '.join(_LEVELS)}")
    target = sys.stderr if stream is None else stream
    connected = stderr_is_journal(environ, target)
    handler: logging.Handler
    mode: str
    journal_handler = None
    if journal or (journal is None and connected):
        journal_handler = _load_systemd("systemd.journal", "JournalHandler")
    if journal_handler is not None:
        handler = journal_handler(SYSLOG_IDENTIFIER="ecu-sim")
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        mode = "journal"
    elif connected or journal:
        handler = logging.StreamHandler(target)
        handler.setFormatter(JournalPrefixFormatter())
        mode = "prefix"
    else:
        handler = logging.StreamHandler(target)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
        mode = "human"
    setattr(handler, _HANDLER_MARK, True)
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, _HANDLER_MARK, False)]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(numeric)
    return mode
