"""The link planner's rules, one per test, on hand-built states: no kernel, no pyroute2, no netlink."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ecu_sim.bus.state import ControllerState
from ecu_sim.link.errors import LinkError, LinkUnsupportedError
from ecu_sim.link.plan import (
    MAX_BITRATE,
    MAX_RESTART_MS,
    LinkSettings,
    Plan,
    check_name,
    check_settings,
    closest_bitrate,
    plan_configure,
    plan_restart,
    plan_vcan,
)
from ecu_sim.link.state import BittimingConst, LinkState

#: an SJA1000 behind an 8 MHz clock, as the emulated controllers of the VM tests report themselves
SJA1000_CLOCK = 8_000_000
SJA1000_LIMITS = BittimingConst(1, 16, 1, 8, 1, 64, 1)

CAN0 = LinkState(name="can0", index=3, kind="can", up=True, operstate="UP",
                 controller_state=ControllerState.ERROR_ACTIVE, bitrate=250000, restart_ms=0,
                 berr_reporting=False, listen_only=False)
VCAN0 = LinkState(name="vcan0", index=4, kind="vcan", up=True, operstate="UNKNOWN")


# --------------------------------------------------------------------------------------------------
# Values no controller accepts


@pytest.mark.parametrize("bitrate", [0, -250000, MAX_BITRATE + 1])
def test_a_bitrate_must_be_positive_and_within_cans_limit(bitrate: int) -> None:
    with pytest.raises(LinkError, match="bitrate must be a positive number of bit/s up to 1000000"):
        check_settings(bitrate=bitrate)


@pytest.mark.parametrize("restart_ms", [-1, MAX_RESTART_MS + 1])
def test_restart_ms_must_fit_the_kernels_unsigned_32_bit_field(restart_ms: int) -> None:
    with pytest.raises(LinkError, match="restart-ms must be 0"):
        check_settings(restart_ms=restart_ms)


@pytest.mark.parametrize(("bitrate", "restart_ms"), [
    (250000, 0), (500000, 100), (MAX_BITRATE, MAX_RESTART_MS), (None, None)])
def test_settings_within_the_limits_pass(bitrate: int | None, restart_ms: int | None) -> None:
    check_settings(bitrate, restart_ms)


@pytest.mark.parametrize("name", ["", "a" * 16, "has space", "a/b", ".", "..", "x:1"])
def test_an_interface_name_must_be_one_the_kernel_accepts(name: str) -> None:
    with pytest.raises(LinkError, match="not a valid interface name"):
        check_name(name)


@pytest.mark.parametrize("name", ["can0", "vcan0", "a" * 15, "can-bus.1"])
def test_ordinary_interface_names_pass(name: str) -> None:
    check_name(name)


def test_the_planner_refuses_impossible_values_on_its_own() -> None:
    with pytest.raises(LinkError, match="positive"):
        plan_configure(CAN0, LinkSettings(bitrate=0))


# --------------------------------------------------------------------------------------------------
# What a controller's reported limits allow


@pytest.mark.parametrize(("bitrate", "reached"), [(250000, 250000), (500000, 500000), (1000000, 1000000),
                                                  (125000, 125000), (7, None)])
def test_closest_bitrate_follows_the_kernels_search(bitrate: int, reached: int | None) -> None:
    assert closest_bitrate(8_000_000, bitrate, BittimingConst(1, 16, 1, 8, 1, 64, 1)) == reached


SJA1000 = replace(CAN0, clock_hz=SJA1000_CLOCK, bittiming_const=SJA1000_LIMITS)


def test_a_bitrate_the_clock_misses_by_more_than_the_kernels_tolerance_is_refused() -> None:
    with pytest.raises(LinkError, match="5% tolerance; the closest it reaches is 1000000 bit/s"):
        plan_configure(SJA1000, LinkSettings(bitrate=950000))


def test_a_bitrate_no_prescaler_can_produce_is_refused_without_a_closest_rate() -> None:
    with pytest.raises(LinkError, match=r"cannot produce 7 bit/s within the kernel's 5% tolerance; use"):
        plan_configure(SJA1000, LinkSettings(bitrate=7))


def test_a_bitrate_the_clock_reaches_within_the_tolerance_is_planned_as_asked() -> None:
    assert closest_bitrate(SJA1000_CLOCK, 245000, SJA1000_LIMITS) == 242424
    plan = plan_configure(SJA1000, LinkSettings(bitrate=245000))
    assert plan.change == LinkSettings(bitrate=245000)


def test_a_bitrate_above_the_transceivers_maximum_is_refused() -> None:
    with pytest.raises(LinkError, match="its transceiver allows at most 500000 bit/s, not 1000000"):
        plan_configure(replace(CAN0, bitrate_max=500000), LinkSettings(bitrate=1000000))


def test_a_driver_with_fixed_bitrates_accepts_only_those() -> None:
    fixed = replace(CAN0, bitrate_const=(125000, 250000, 500000))
    with pytest.raises(LinkError, match="supports only the bit rates 125000, 250000, 500000, not 333333"):
        plan_configure(fixed, LinkSettings(bitrate=333333))
    assert plan_configure(fixed, LinkSettings(bitrate=500000)).change.bitrate == 500000


def test_the_current_bitrate_is_not_checked_against_the_limits() -> None:
    """A rate the controller already runs at was accepted by the kernel; refusing it would help nobody."""
    assert plan_configure(replace(CAN0, bitrate_max=125000), LinkSettings(bitrate=250000)) == Plan()


def test_limits_a_driver_does_not_report_are_left_to_the_kernel() -> None:
    assert plan_configure(CAN0, LinkSettings(bitrate=7)).change == LinkSettings(bitrate=7)


def test_a_mode_the_controller_does_not_support_cannot_be_switched_on() -> None:
    with pytest.raises(LinkUnsupportedError, match=r"does not support --listen-only \(supported modes: "
                                                   r"loopback, one_shot\)"):
        plan_configure(replace(CAN0, supported_ctrlmodes=frozenset({"loopback", "one_shot"})),
                       LinkSettings(listen_only=True))


def test_a_mode_the_controller_does_not_support_may_be_asked_off() -> None:
    unsupported = replace(CAN0, supported_ctrlmodes=frozenset())
    assert plan_configure(unsupported, LinkSettings(berr_reporting=False, listen_only=False)) == Plan()


# --------------------------------------------------------------------------------------------------
# What must change


def test_nothing_is_sent_to_an_up_controller_that_already_has_the_settings() -> None:
    same = LinkSettings(bitrate=250000, restart_ms=0, berr_reporting=False, listen_only=False)
    assert plan_configure(CAN0, same) == Plan()


def test_only_the_settings_that_differ_are_changed() -> None:
    plan = plan_configure(CAN0, LinkSettings(bitrate=250000, listen_only=True))
    assert plan.change == LinkSettings(listen_only=True)


def test_a_running_controller_is_taken_down_for_a_change_and_brought_back_up() -> None:
    plan = plan_configure(CAN0, LinkSettings(restart_ms=100))
    assert (plan.take_down, plan.bring_up) == (True, True)
    assert plan.report == ("restart-ms 0 -> 100",)


def test_a_down_controller_is_changed_where_it_is_and_then_brought_up() -> None:
    plan = plan_configure(replace(CAN0, up=False), LinkSettings(restart_ms=100))
    assert (plan.take_down, plan.bring_up) == (False, True)
    assert plan.report == ("restart-ms 0 -> 100", "brought up")


def test_a_down_controller_with_the_settings_is_only_brought_up() -> None:
    plan = plan_configure(replace(CAN0, up=False), LinkSettings(bitrate=250000))
    assert plan == Plan(bring_up=True, report=("brought up",))


def test_the_report_gives_old_and_new_values_in_request_order() -> None:
    fresh = replace(CAN0, up=False, bitrate=None, controller_state=ControllerState.STOPPED)
    plan = plan_configure(fresh, LinkSettings(bitrate=250000, restart_ms=100, berr_reporting=True,
                                                    listen_only=True))
    assert plan.report == ("bitrate unset -> 250000", "restart-ms 0 -> 100", "berr-reporting on",
                           "listen-only on", "brought up")


def test_controller_settings_on_a_vcan_are_refused() -> None:
    with pytest.raises(LinkUnsupportedError, match="vcan0 is a vcan interface, not a CAN controller"):
        plan_configure(VCAN0, LinkSettings(bitrate=250000))


def test_an_interface_of_unknown_kind_is_refused_as_non_can() -> None:
    with pytest.raises(LinkUnsupportedError, match="eth0 is a non-CAN interface"):
        plan_configure(replace(VCAN0, name="eth0", kind=None), LinkSettings(listen_only=False))


def test_a_down_vcan_without_settings_is_only_brought_up() -> None:
    assert plan_configure(replace(VCAN0, up=False), LinkSettings()) == Plan(bring_up=True,
                                                                                 report=("brought up",))


# --------------------------------------------------------------------------------------------------
# Creating a vcan


def test_an_up_vcan_needs_nothing() -> None:
    assert plan_vcan(VCAN0) == Plan()


def test_a_down_vcan_is_brought_up() -> None:
    assert plan_vcan(replace(VCAN0, up=False)) == Plan(bring_up=True, report=("brought up",))


def test_an_interface_of_another_kind_is_never_taken_over_as_a_vcan() -> None:
    with pytest.raises(LinkError, match="can0 already exists and is a can interface, not a vcan"):
        plan_vcan(CAN0)


# --------------------------------------------------------------------------------------------------
# Restarting from bus-off


def test_a_bus_off_controller_without_automatic_restart_is_restarted() -> None:
    assert plan_restart(replace(CAN0, controller_state=ControllerState.BUS_OFF)) is True


@pytest.mark.parametrize("state", [ControllerState.ERROR_ACTIVE, ControllerState.ERROR_PASSIVE, None])
def test_a_controller_that_is_not_bus_off_is_left_alone(state: ControllerState | None) -> None:
    assert plan_restart(replace(CAN0, controller_state=state)) is False


def test_a_controller_that_restarts_itself_is_not_restarted_by_hand() -> None:
    with pytest.raises(LinkError, match="restarts itself 100 ms after a bus-off"):
        plan_restart(replace(CAN0, controller_state=ControllerState.BUS_OFF, restart_ms=100))


def test_a_down_controller_has_no_bus_off_to_restart_from() -> None:
    with pytest.raises(LinkError, match=r"can0 is down, .*\(`sudo ip link set can0 up`\)"):
        plan_restart(replace(CAN0, up=False, controller_state=ControllerState.STOPPED))


def test_a_vcan_has_no_bus_off_state() -> None:
    with pytest.raises(LinkUnsupportedError, match="vcan0 is a vcan interface, not a CAN controller"):
        plan_restart(VCAN0)
