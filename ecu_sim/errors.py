"""Errors a person can act on, each carrying the exit status the command line returns for it.

The statuses follow sysexits(3) where one fits, so scripts and systemd can tell a mistake in the
invocation (2, fix the command or the file) from a bus that is not there yet (69, retry later),
an output file that cannot be created (73) and one whose writing failed, e.g. on a full disk (74).
A diagnostic tester adds the statuses of a remote node's refusal: one that passes by itself (75),
the node's word on the protocol (76), a permission the tester lacks (77).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 69
EXIT_CANTCREAT = 73
EXIT_IOERR = 74
EXIT_TEMPFAIL = 75
EXIT_PROTOCOL = 76
EXIT_NOPERM = 77


class EcuSimError(Exception):
    """Base class: the message says what went wrong and what to do next."""

    exit_status = 1


class ConfigError(EcuSimError):
    """Bad arguments, configuration file, DBC or route: the message names the offending item."""

    exit_status = EXIT_USAGE


class BusUnavailableError(EcuSimError):
    """The CAN bus could not be opened or was lost for good; the message gives a hint."""

    exit_status = EXIT_UNAVAILABLE


class BusUnreachableError(BusUnavailableError):
    """A bus served over the network (socketcand) whose server does not answer (yet): a run
    starts anyway and retries, as it does for a lost SocketCAN interface."""


class CannotCreateError(EcuSimError):
    """An output file (a recording, a trace) cannot be created: a missing folder, no permission."""

    exit_status = EXIT_CANTCREAT


class OutputError(EcuSimError):
    """Writing an output file failed on the way (a full disk, an I/O error); what was written stays."""

    exit_status = EXIT_IOERR


def errno_of(exc: BaseException | None) -> int | None:
    """The operating system's error number behind an exception, wherever a library put it.

    python-can wraps OSError in its own exceptions (``error_code``), pyroute2's NetlinkError
    carries the kernel's errno in ``code``; both may hide it in the cause chain.
    """
    while exc is not None:
        for name in ("errno", "error_code", "code"):
            candidate = getattr(exc, name, None)
            if isinstance(candidate, int) and not isinstance(candidate, bool):
                return candidate
        exc = exc.__cause__ or exc.__context__
    return None


def missing_interface_hint(name: str) -> str:
    """What to do about a SocketCAN interface that does not exist: create it, or find the adapter."""
    create = f"create it with `sudo ecu-sim link {name} --create`"
    if name.startswith("vcan"):
        return f"{name} does not exist; {create}"
    return (f"{name} does not exist; plug in the CAN adapter and check its driver is loaded "
            f"(`ip -d link` lists the CAN interfaces), or for a virtual bus {create}")


def needs_extra(feature: str, package: str, extra: str, instead: str = "") -> str:
    """The message for a feature whose optional package is missing, in one wording everywhere.

    It names the feature's own extra and ``all`` beside it: whoever meets one missing package is
    likely to meet the next a command later, and ``[all]`` ends that in one install. ``instead``
    is a way to do without the package, when there is one.
    """
    message = (f"{feature} needs {package}, which is not installed; install it with "
               f"pip install 'ecu-sim[{extra}]' (or 'ecu-sim[all]' for every optional feature)")
    return f"{message}, {instead}" if instead else message
