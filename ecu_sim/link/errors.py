"""Why a CAN interface could not be set up, said as what to do about it.

The kernel answers a refused netlink request with a bare errno, and the same errno means different
things depending on what was asked: EOPNOTSUPP on create is a missing vcan module, on configure a
driver without the option. The advice is therefore a table keyed by errno and action, so adding a
case is adding a row, and every message can be read in one place.
"""

from __future__ import annotations

import errno
from collections.abc import Mapping
from dataclasses import dataclass

from ecu_sim.errors import EXIT_UNAVAILABLE, ConfigError, errno_of, missing_interface_hint

#: sysexits(3) EX_NOPERM: the command was right but this user may not run it.
EXIT_NOPERM = 77


class LinkError(ConfigError):
    """A CAN interface could not be inspected or changed; the message names the interface and the fix."""


class LinkNotFoundError(LinkError):
    """The interface is not there (yet): a USB adapter may still be enumerating, so callers may retry."""

    exit_status = EXIT_UNAVAILABLE


class LinkPermissionError(LinkError):
    """Changing links needs CAP_NET_ADMIN, which only the operator can grant."""

    exit_status = EXIT_NOPERM


class LinkUnsupportedError(LinkError):
    """The kernel or the driver cannot do what was asked (module not loaded, option not in hardware)."""

    exit_status = EXIT_UNAVAILABLE


@dataclass(frozen=True)
class Advice:
    """What to raise for one kernel refusal.

    The template is filled with ``name`` (the interface), ``action`` (what we were doing), ``exc``
    (the kernel's own words) and ``missing`` (the shared hint for an interface that is not there).
    """

    error: type[LinkError]
    template: str


#: the action an advice row applies to when it is not specific to one
ANY_ACTION = None

_NO_CAPABILITY = Advice(
    LinkPermissionError,
    "cannot {action} {name}: changing network links needs CAP_NET_ADMIN; run as root "
    "(sudo ecu-sim link {name} ...) or grant the capability (AmbientCapabilities=CAP_NET_ADMIN "
    "in the systemd unit)")
_BAD_BITRATE = Advice(
    LinkError,
    "cannot {action} {name}: the controller's clock cannot produce that bit rate "
    "within its bit-timing limits; use a standard rate (J1939: 250000 or 500000)")

#: (errno, action) -> advice; a row for one action wins over the row for ANY_ACTION
ADVICE: Mapping[tuple[int, str | None], Advice] = {
    (errno.ENODEV, ANY_ACTION): Advice(LinkNotFoundError, "{missing}"),
    (errno.EPERM, ANY_ACTION): _NO_CAPABILITY,
    (errno.EACCES, ANY_ACTION): _NO_CAPABILITY,
    (errno.EOPNOTSUPP, "create"): Advice(
        LinkUnsupportedError,
        "cannot create {name}: the kernel has no vcan support loaded; run `sudo modprobe vcan` "
        "(on Debian/Raspberry Pi OS the module is in the kernel image package; CONFIG_CAN_VCAN)"),
    (errno.EOPNOTSUPP, ANY_ACTION): Advice(
        LinkUnsupportedError,
        "cannot {action} {name}: the driver does not support this setting "
        "(vcan has no bit timing; listen-only and bus-error reporting depend on the controller)"),
    (errno.EBUSY, "restart"): Advice(LinkError, "cannot restart {name}: the controller is not bus-off"),
    (errno.EBUSY, ANY_ACTION): Advice(
        LinkError,
        "cannot {action} {name}: the interface is busy (up); "
        "bring it down with `sudo ip link set {name} down` and retry"),
    (errno.EINVAL, "restart"): Advice(
        LinkError,
        "cannot restart {name}: the kernel restarts only an up controller with "
        "restart-ms 0 (`ecu-sim link {name} --show` shows both)"),
    (errno.EINVAL, "up"): Advice(
        LinkError,
        "cannot bring {name} up: the controller has no bit timing yet; "
        "set one with `sudo ecu-sim link {name} --bitrate 250000`"),
    (errno.EINVAL, ANY_ACTION): Advice(
        LinkError,
        "cannot {action} {name}: the driver rejected the value ({exc}); "
        "check the bit rate is one the controller's clock can reach (J1939: 250000 or 500000)"),
    (errno.EDOM, ANY_ACTION): _BAD_BITRATE,
    (errno.ERANGE, ANY_ACTION): _BAD_BITRATE,
    (errno.EEXIST, ANY_ACTION): Advice(
        LinkError, "cannot {action} {name}: an interface with that name already exists"),
    (errno.EAFNOSUPPORT, ANY_ACTION): Advice(
        LinkUnsupportedError,
        "cannot {action} {name}: this kernel has no SocketCAN (PF_CAN); "
        "run `sudo modprobe can` or use a kernel built with CONFIG_CAN"),
}
#: an errno the table does not know: at least say what failed, in the kernel's words
FALLBACK = Advice(LinkError, "cannot {action} {name}: {exc}")


def advice_for(code: int, action: str) -> Advice:
    """The row for ``code`` while doing ``action``: the action's own row, else the general one."""
    return ADVICE.get((code, action)) or ADVICE.get((code, ANY_ACTION)) or FALLBACK


def translate_error(exc: BaseException, name: str, action: str) -> LinkError | None:
    """Turn a kernel refusal into advice, or ``None`` when the exception carries no errno.

    ``action`` is what we were doing ("create", "configure", "read", "up", "restart"), because the
    same errno means different things for each.
    """
    code = errno_of(exc)
    if code is None:
        return None
    advice = advice_for(code, action)
    return advice.error(advice.template.format(name=name, action=action, exc=exc,
                                               missing=missing_interface_hint(name)))
