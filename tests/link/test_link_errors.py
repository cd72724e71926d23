"""The kernel's refusals, turned into advice by the errno-and-action table."""

from __future__ import annotations

import errno
from typing import Any

import pytest

pytest.importorskip("pyroute2")

from pyroute2.netlink.exceptions import NetlinkError

from ecu_sim.errors import ConfigError
from ecu_sim.link.errors import (
    ADVICE,
    ANY_ACTION,
    LinkError,
    LinkNotFoundError,
    LinkPermissionError,
    LinkUnsupportedError,
    translate_error,
)


@pytest.mark.parametrize("make", [lambda code: NetlinkError(code, "kernel says no"),
                                  lambda code: OSError(code, "kernel says no")])
def test_errnos_become_advice(make: Any) -> None:
    missing = translate_error(make(errno.ENODEV), "vcan0", "read")
    assert isinstance(missing, LinkNotFoundError) and missing.exit_status == 69
    assert str(missing) == "vcan0 does not exist; create it with `sudo ecu-sim link vcan0 --create`"

    denied = translate_error(make(errno.EPERM), "vcan0", "create")
    assert isinstance(denied, LinkPermissionError) and denied.exit_status == 77
    assert "CAP_NET_ADMIN" in str(denied) and "root" in str(denied)

    no_module = translate_error(make(errno.EOPNOTSUPP), "vcan0", "create")
    assert isinstance(no_module, LinkUnsupportedError)
    assert "sudo modprobe vcan" in str(no_module)

    no_option = translate_error(make(errno.EOPNOTSUPP), "can0", "configure")
    assert "modprobe" not in str(no_option) and "driver does not support" in str(no_option)

    no_timing = translate_error(make(errno.EINVAL), "can0", "up")
    assert "ecu-sim link can0 --bitrate 250000" in str(no_timing)

    other = translate_error(make(errno.ENOBUFS), "can0", "read")
    assert type(other) is LinkError and "cannot read can0" in str(other)


def test_a_missing_adapter_is_not_told_to_become_a_vcan_only() -> None:
    message = str(translate_error(NetlinkError(errno.ENODEV), "can0", "read"))
    assert message.startswith("can0 does not exist; plug in the CAN adapter")
    assert "sudo ecu-sim link can0 --create" in message


def test_errors_without_an_errno_are_left_alone() -> None:
    assert translate_error(ValueError("bug"), "vcan0", "read") is None


def test_link_errors_are_config_errors_for_the_cli() -> None:
    assert issubclass(LinkNotFoundError, ConfigError)


def test_a_row_for_the_action_wins_over_the_general_row() -> None:
    assert str(translate_error(OSError(errno.EBUSY, "busy"), "can0", "restart")) == (
        "cannot restart can0: the controller is not bus-off")
    assert "bring it down with `sudo ip link set can0 down`" in str(
        translate_error(OSError(errno.EBUSY, "busy"), "can0", "configure"))


def test_an_errno_without_a_row_still_says_what_failed_in_the_kernels_words() -> None:
    other = translate_error(OSError(errno.ENOBUFS, "No buffer space available"), "can0", "configure")
    assert str(other) == f"cannot configure can0: [Errno {errno.ENOBUFS}] No buffer space available"


def test_the_errno_is_found_behind_a_wrapping_exception() -> None:
    wrapped = RuntimeError("netlink request failed")
    wrapped.__cause__ = OSError(errno.EPERM, "Operation not permitted")
    assert isinstance(translate_error(wrapped, "vcan0", "create"), LinkPermissionError)


@pytest.mark.parametrize(("code", "action"), list(ADVICE))
def test_every_row_names_the_interface_and_raises_its_class(code: int, action: str | None) -> None:
    error = translate_error(OSError(code, "refused"), "can7", action or "configure")
    assert type(error) is ADVICE[code, action].error
    assert "can7" in str(error)


@pytest.mark.parametrize("code", sorted(code for code, action in ADVICE
                                        if action is ANY_ACTION and code != errno.ENODEV))
def test_a_general_row_names_the_action_that_failed(code: int) -> None:
    message = str(translate_error(OSError(code, "refused"), "can7", "configure"))
    assert message.startswith("cannot configure can7: ")
