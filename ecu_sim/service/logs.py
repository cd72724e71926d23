"""Logging for a terminal and for the journal: one line per record, with journald priorities.

Under systemd, stderr goes to the journal; a ``<N>`` prefix gives each line its priority, so
``journalctl -p warning`` finds the warnings. Debian's python3-systemd sends records to the
journal natively when it is installed.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import TextIO

from ecu_sim.errors import ConfigError
from ecu_sim.service.notify import load_systemd

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


class RepeatLimit(logging.Filter):
    """A library's record repeated within ``interval_s`` is counted, not written again.

    A library in a retry loop can log the same warning thousands of times a second (python-can's
    socketcand client did, for a refused port), drowning everything else and filling a board's
    journal. The first of a kind is written; repeats within the interval are counted, and the
    next one after it is written once with that count. ecu-sim's own records are rate-limited
    where they are made, so only other loggers' records are limited here.
    """

    def __init__(self, interval_s: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._interval_s = interval_s
        self._clock = clock
        #: (logger, level, message) -> (when it was last written, repeats since)
        self._seen: dict[tuple[str, int, str], tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "ecu_sim" or record.name.startswith("ecu_sim."):
            return True
        key = (record.name, record.levelno, record.getMessage())
        now = self._clock()
        written = self._seen.get(key)
        if written is not None and now - written[0] < self._interval_s:
            self._seen[key] = (written[0], written[1] + 1)
            return False
        if written is not None and written[1]:
            record.msg = (f"{record.getMessage()} (and {written[1]} more like it in the last "
                          f"{now - written[0]:.0f} s)")
            record.args = None
        if len(self._seen) > 256:  # many different messages: forget the oldest ones
            self._seen.clear()
        self._seen[key] = (now, 0)
        return True


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
        journal_handler = load_systemd("systemd.journal", "JournalHandler")
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
    handler.addFilter(RepeatLimit())
    setattr(handler, _HANDLER_MARK, True)
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, _HANDLER_MARK, False)]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(numeric)
    return mode
