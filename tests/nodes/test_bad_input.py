"""Bad input: every kind is counted, none disturbs the loop, and only the stated ones change the model.

The stated changes: a J1939 not-available or error-indicator value of the input role makes the
input missing at once (the ECU coasts, the CCM turns cruise off). Everything else leaves the
held input, and so the model, exactly as it was.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import can
import pytest

from ecu_sim.nodes.input import DRAIN_LIMIT
from tests.conftest import Node, Summary, private_udp, summary_of
from tests.helpers.nodebench import CCM_SA, ECU_SA, Bench, settings

APP_40 = bytes.fromhex("FFFFFFFFFFFFA5FF")  # amp profile: byte 6, raw 165 = 40 %
UNRELATED_ID = 0x18FEEE00  # PGN 65262 engine temperature, SA 0: someone else's traffic


@pytest.fixture
def bench() -> Iterator[Bench]:
    b = Bench("ecu")
    yield b
    b.close()


def holding_40(b: Bench) -> None:
    b.send(APP_40)
    b.tick()
    assert b.ecu.app_pct == 40.0 and not b.ecu.app_missing


def test_a_frame_too_short_for_the_app_signal_is_counted_and_the_held_app_stays(bench: Bench) -> None:
    holding_40(bench)
    bench.send(APP_40[:6])  # byte 6 is missing
    bench.tick()
    assert bench.ecu.invalid["short_frame"] == 1
    assert bench.ecu.app_pct == 40.0 and not bench.ecu.app_missing


def test_an_app_frame_shorter_than_the_dbc_length_is_counted_as_wrong_dlc_and_not_used(bench: Bench) -> None:
    holding_40(bench)
    bench.send(bytes.fromhex("FFFFFFFFFFFFC8"))  # 75 % in byte 6, but 7 bytes where the DBC says 8
    bench.tick()
    assert bench.ecu.invalid["wrong_dlc"] == 1 and bench.ecu.invalid_total == 1
    assert bench.ecu.app_pct == 40.0 and bench.ecu.accepted == 1


def test_a_wrong_dlc_app_frame_alone_leaves_the_app_missing() -> None:
    b = Bench("ecu", settings(profile="j1939"))
    try:
        b.send(bytes.fromhex("F064"))  # EEC2 with SPN 91 = 40 %, but 2 bytes where the DBC says 8
        b.tick()
        assert b.ecu.invalid["wrong_dlc"] == 1 and b.ecu.app_missing
    finally:
        b.close()


def test_a_not_available_app_is_counted_and_means_coasting_at_once(bench: Bench) -> None:
    holding_40(bench)
    bench.send(bytes.fromhex("FFFFFFFFFFFFFFFF"))
    bench.tick()
    assert bench.ecu.invalid["not_available"] == 1
    assert bench.ecu.app_missing and bench.ecu.app_pct == 0.0


def test_an_error_indicator_app_is_counted_and_means_coasting_at_once(bench: Bench) -> None:
    holding_40(bench)
    bench.send(bytes.fromhex("FFFFFFFFFFFFFEFF"))
    bench.tick()
    assert bench.ecu.invalid["error_indicator"] == 1
    assert bench.ecu.app_missing


def test_an_app_outside_the_dbc_range_is_counted_and_the_held_app_stays(bench: Bench) -> None:
    holding_40(bench)
    bench.send(bytes.fromhex("FFFFFFFFFFFFE6FF"))  # raw 230 = 105 %, above the DBC's 100 %
    bench.tick()
    assert bench.ecu.invalid["out_of_range"] == 1
    assert bench.ecu.app_pct == 40.0


def test_an_app_in_the_j1939_reserved_range_is_counted_as_out_of_range() -> None:
    b = Bench("ecu", settings(profile="j1939"))
    try:
        b.send(bytes.fromhex("FFFBFFFFFFFFFFFF"))  # SPN 91 raw 0xFB: parameter specific / reserved
        b.tick()
        assert b.ecu.invalid["out_of_range"] == 1 and b.ecu.app_missing
    finally:
        b.close()


def test_app_from_any_source_address_and_priority_is_accepted_without_app_source(bench: Bench) -> None:
    bench.sender.send(can.Message(arbitration_id=bench.role_id(source=0x31, priority=3), data=APP_40))
    bench.tick()
    assert bench.ecu.app_pct == 40.0


def test_app_from_another_address_than_app_source_is_rejected_and_counted() -> None:
    b = Bench("ecu", settings(app_source=CCM_SA))
    try:
        b.send(APP_40, source=0x27)
        b.tick()
        assert b.ecu.invalid["wrong_source"] == 1 and b.ecu.app_missing
    finally:
        b.close()


def test_two_addresses_sending_app_in_one_period_are_reported_as_a_conflict(
        bench: Bench, caplog: pytest.LogCaptureFixture) -> None:
    bench.send(APP_40, source=CCM_SA)
    bench.send_value(60.0, source=0x27)
    with caplog.at_level(logging.WARNING, logger="ecu_sim"):
        bench.tick()
    assert bench.ecu.source_conflicts == 1
    assert "source address conflict at tick 0" in caplog.text and "0x26 and 0x27" in caplog.text


def test_without_app_source_the_newest_of_two_senders_wins(bench: Bench) -> None:
    bench.send(APP_40, source=CCM_SA)
    bench.send_value(60.0, source=0x27)
    bench.tick()
    assert bench.ecu.app_pct == 60.0


def test_with_app_source_that_address_wins_a_conflict_and_the_other_is_rejected() -> None:
    b = Bench("ecu", settings(app_source=CCM_SA))
    try:
        b.send(APP_40, source=CCM_SA)
        b.send_value(60.0, source=0x27)
        b.tick()
        assert b.ecu.app_pct == 40.0
        assert (b.ecu.source_conflicts, b.ecu.invalid["wrong_source"]) == (1, 1)
    finally:
        b.close()


def test_a_sender_taking_over_in_a_later_period_is_not_a_conflict(bench: Bench) -> None:
    bench.send(APP_40, source=CCM_SA)
    bench.tick()
    bench.send_value(60.0, source=0x27)
    bench.tick()
    assert bench.ecu.source_conflicts == 0 and bench.ecu.app_pct == 60.0


def test_a_remote_frame_of_app_is_counted_and_ignored(bench: Bench) -> None:
    holding_40(bench)
    bench.send(b"", is_remote_frame=True, dlc=8)
    bench.tick()
    assert bench.ecu.invalid["remote_frame"] == 1 and bench.ecu.app_pct == 40.0


def test_a_can_fd_frame_carrying_app_is_rejected_where_the_dbc_defines_a_classic_frame(
        bench: Bench) -> None:
    holding_40(bench)
    bench.send(bytes.fromhex("FFFFFFFFFFFFC8FF") + bytes(4), is_fd=True)  # 75 % in a 12-byte FD frame
    bench.tick()
    assert bench.ecu.invalid["fd_frame"] == 1 and bench.ecu.app_pct == 40.0


def test_error_frames_are_counted_by_the_port_and_frames_behind_them_are_taken_in_the_same_tick(
        bench: Bench) -> None:
    for _ in range(3):
        bench.send_raw(can.Message(arbitration_id=0x080, is_error_frame=True, is_extended_id=False))
    bench.send(APP_40)
    bench.tick()
    assert bench.port.counters.error_frames["bus_error"] == 3
    assert bench.ecu.app_pct == 40.0


def test_unrelated_traffic_is_counted_as_other(bench: Bench) -> None:
    for i in range(5):
        bench.send_raw(can.Message(arbitration_id=UNRELATED_ID + i, data=bytes(8)))
    bench.tick()
    assert bench.ecu.other == 5 and bench.ecu.invalid_total == 0


def bad_frames_of_every_harmless_kind(b: Bench) -> list[can.Message]:
    """One frame of each kind that must leave the model alone, around a clean APP frame."""
    role = b.role_id()
    return [
        can.Message(arbitration_id=role, data=APP_40[:6]),
        can.Message(arbitration_id=role, data=bytes.fromhex("FFFFFFFFFFFFC8")),
        can.Message(arbitration_id=role, data=bytes.fromhex("FFFFFFFFFFFFE6FF")),
        can.Message(arbitration_id=role, is_remote_frame=True, dlc=8),
        can.Message(arbitration_id=role, data=bytes.fromhex("FFFFFFFFFFFF00FF") + bytes(4), is_fd=True),
        can.Message(arbitration_id=0x0A0, is_error_frame=True, is_extended_id=False),
        *(can.Message(arbitration_id=UNRELATED_ID + i, data=bytes([i]) * 8) for i in range(20)),
    ]


def test_harmless_bad_frames_leave_the_speed_trajectory_bit_identical() -> None:
    clean, noisy = Bench("ecu"), Bench("ecu")
    try:
        for tick in range(100):
            app = (tick * 7) % 100
            for b in (clean, noisy):
                b.send_value(app)
            for msg in bad_frames_of_every_harmless_kind(noisy):
                noisy.send_raw(msg)
            for b in (clean, noisy):
                b.tick()
        assert noisy.ecu.invalid_total == 5 * 100 and noisy.ecu.other == 20 * 100
        assert [bytes(m.data) for m in noisy.sent()] == [bytes(m.data) for m in clean.sent()]
        assert noisy.ecu.state == clean.ecu.state
    finally:
        clean.close()
        noisy.close()


def test_a_flood_beyond_the_drain_limit_does_not_hold_up_the_tick(bench: Bench) -> None:
    for i in range(3 * DRAIN_LIMIT):
        bench.send_raw(can.Message(arbitration_id=UNRELATED_ID, data=i.to_bytes(8, "little")))
    bench.send(APP_40)
    bench.tick()
    assert bench.loop.stats.ticks == 1 and len(bench.sent()) == 1
    assert bench.ecu.overruns == 1 and bench.ecu.other == DRAIN_LIMIT
    bench.tick(3)
    assert bench.ecu.other == 3 * DRAIN_LIMIT and bench.ecu.app_pct == 40.0


def test_ccm_treats_a_not_available_speed_as_missing_and_turns_cruise_off() -> None:
    b = Bench("ccm")
    try:
        b.send_value(85.0)
        b.tick()
        assert b.ccm.cruise_active
        b.send(bytes.fromhex("FFFFFFFFFFFFFFFF"))
        b.tick()
        assert b.ccm.invalid["not_available"] == 1 and not b.ccm.cruise_active and b.ccm.app_pct == 0.0
    finally:
        b.close()


def test_ccm_turns_cruise_off_and_sends_app_0_when_its_speed_goes_stale() -> None:
    """Stale, not flagged: the last speed is used by three ticks (the default timeout), not a fourth."""
    b = Bench("ccm")
    try:
        b.send_value(85.0)
        b.tick(3)
        assert b.ccm.cruise_active and b.ccm.app_pct > 0.0
        b.sent()
        b.tick()
        assert not b.ccm.cruise_active and b.ccm.speed_kph is None
        assert b.ccm.app_pct == 0.0 and b.sent_values() == [0.0]
        assert b.ccm.pi_state.integral == 0.0 and b.ccm.invalid_total == 0
    finally:
        b.close()


def test_ccm_reports_two_addresses_sending_speed_in_one_period_as_a_conflict(
        caplog: pytest.LogCaptureFixture) -> None:
    b = Bench("ccm")
    try:
        b.send_value(85.0, source=ECU_SA)
        b.send_value(60.0, source=0x27)
        with caplog.at_level(logging.WARNING, logger="ecu_sim"):
            b.tick()
        assert b.ccm.source_conflicts == 1 and b.ccm.speed_kph == 60.0
        assert "0x25 and 0x27" in caplog.text and "--speed-source" in caplog.text
    finally:
        b.close()


def test_ccm_with_speed_source_takes_that_address_in_a_conflict_and_rejects_the_other() -> None:
    b = Bench("ccm", settings(speed_source=ECU_SA))
    try:
        b.send_value(85.0, source=ECU_SA)
        b.send_value(60.0, source=0x27)
        b.tick()
        assert b.ccm.speed_kph == 85.0 and b.ccm.held.source == ECU_SA
        assert (b.ccm.source_conflicts, b.ccm.invalid["wrong_source"]) == (1, 1)
    finally:
        b.close()


def test_ccm_keeps_its_speed_through_a_short_speed_frame() -> None:
    b = Bench("ccm")
    try:
        b.send_value(85.0)
        b.tick()
        b.send(bytes.fromhex("FFFFFFFFFF00"))  # speed needs bytes 5..6
        b.tick()
        assert b.ccm.invalid["short_frame"] == 1 and b.ccm.speed_kph == 85.0
    finally:
        b.close()


def test_the_status_line_lists_invalid_frames_by_kind_and_other_traffic(bench: Bench) -> None:
    bench.send(APP_40[:6])
    bench.send(b"", is_remote_frame=True, dlc=8)
    bench.send_raw(can.Message(arbitration_id=UNRELATED_ID, data=bytes(8)))
    bench.tick()
    assert "invalid 2 (remote_frame 1, short_frame 1) other 1" in bench.ecu.status_line()


# -- a real process through a flood on udp_multicast --------------------------------------------------
#
# How many flood datagrams the kernel delivers, and how regularly the ECU sends meanwhile, depend
# on the machine and its load (figures of scripts/bench). What holds on any machine: each frame
# the process received is counted once, in one bucket, and every tick sent its frame or counted
# as skipped (never a burst of late ones).

FLOOD_FRAMES = 20_000


@pytest.fixture(scope="module")
def flooded() -> Iterator[Summary]:
    """An ECU process fed one bad APP frame of three kinds, then a flood of unrelated frames, then SIGTERM."""
    udp = private_udp()
    bus = udp.bus()
    ecu = Node(*udp.args(), "--grade", "0")
    try:
        ecu.wait_for(r"\| APP ")  # a status line: the ECU is in its loop, its socket open
        app = 0x18F00326
        for frame in (can.Message(arbitration_id=app, data=APP_40[:6]),
                      can.Message(arbitration_id=app, data=bytes.fromhex("FFFFFFFFFFFFFFFF")),
                      can.Message(arbitration_id=app, is_remote_frame=True, dlc=8)):
            bus.send(frame)
        ecu.wait_for(r"invalid 3 \(not_available 1, remote_frame 1, short_frame 1\)")
        for i in range(FLOOD_FRAMES):  # as fast as this process can send
            bus.send(can.Message(arbitration_id=UNRELATED_ID, data=i.to_bytes(8, "little")))
        assert ecu.stop() == 0, ecu.log
        yield summary_of(ecu.log)
    finally:
        ecu.kill()
        bus.shutdown()


@pytest.mark.slow
def test_a_running_ecu_counts_every_frame_it_received_in_exactly_one_bucket_through_a_flood(
        flooded: Summary) -> None:
    run = flooded
    # No clean APP value was sent, so nothing was accepted: invalid and other are all it received.
    assert run.rx == run.invalid_total + run.other, run.line
    assert run.other <= FLOOD_FRAMES, run.line


@pytest.mark.slow
def test_a_running_ecu_logs_bad_input_by_kind_through_a_flood(flooded: Summary) -> None:
    assert flooded.invalid == {"not_available": 1, "remote_frame": 1, "short_frame": 1}, flooded.line


@pytest.mark.slow
def test_a_running_ecu_sends_or_skips_every_tick_through_a_flood_never_a_burst(flooded: Summary) -> None:
    run = flooded
    assert run.ticks == run.tx + run.tx_errors + run.tx_dropped + run.skipped, run.line
