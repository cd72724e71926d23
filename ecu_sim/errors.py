"""Errors a person can act on, each carrying the exit status the command line returns for it.

The statuses follow sysexits(3) where one fits, so scripts and systemd can tell a mistake in the
invocation (2, fix the command or the file) from a bus that is not there yet (69, retry later).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 69


class EcuSimError(Exception):
    """Base class: the message says what went wrong and what to do next."""

    exit_status = 1


class ConfigError(EcuSimError):
    """Bad arguments, configuration file, DBC or route: the message names the offending item."""

    exit_status = EXIT_USAGE


class BusUnavailableError(EcuSimError):
    """The CAN bus could not be opened or was lost for good; the message gives a hint."""

    exit_status = EXIT_UNAVAILABLE
