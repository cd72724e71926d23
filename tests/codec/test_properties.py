"""Properties over random frames: nothing crashes the ECU or the CCM, and input changes only by the rules.

The rules, checked against an oracle that decodes with cantools and the J1939 ranges of the wire
format (not with the project's codec): a frame of another message changes nothing; a frame of the
input role changes the held input only when it is a clean value of a frame as long as the DBC
says (it becomes the input, with the tick it arrived before and its sender) or a J1939
not-available or error-indicator value (the input becomes missing); everything else is counted by
kind and changes nothing. At the end of the module the number of frames fed, by kind, is printed.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Iterator

import can
import cantools
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ecu_sim.nodes.ccm import Ccm
from ecu_sim.nodes.ecu import Ecu
from tests.helpers.nodebench import Bench
from tests.helpers.nodebench import settings as bench_settings

#: frames fed by every test of this module, by the kind the oracle gives them
FED: Counter[str] = Counter()
FD_LENGTHS = (0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24, 32, 48, 64)
#: each frame checked against the oracle on its own: the module's main property
PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: batches of frames between ticks (up to 100 an example), for each of four node and profile pairs:
#: what each frame does is checked one by one above, so 25 examples a pair (100 in all) suffice
BATCHES = settings(PROPERTY, max_examples=25)
#: two nodes side by side, fed up to 160 frames an example
SIDE_BY_SIDE = settings(PROPERTY, max_examples=50)


@pytest.fixture(scope="module", autouse=True)
def report_frames_fed(request: pytest.FixtureRequest) -> Iterator[None]:
    """Print how many frames of each kind the module fed, past pytest's output capture."""
    yield
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if FED and capture is not None:
        kinds = ", ".join(f"{kind} {n}" for kind, n in FED.most_common())
        with capture.global_and_fixture_disabled():
            print(f"\nproperty tests fed {sum(FED.values())} frames: {kinds}")


@st.composite
def frames(draw: st.DrawFn, role_id: int, own_id: int, top_byte: int, length: int) -> can.Message:
    """Any frame: the input role from any address, our own identifier, other traffic, bad flags.

    ``top_byte`` is where the input signal's most significant byte sits: half of the role frames
    get one of the J1939 boundary values there (valid, reserved, error, not available). About half
    of the classic frames have the DBC's ``length``, the rest any length from 0 to 8.
    """
    which = draw(st.sampled_from(["role", "role", "role", "other29", "other11", "own", "error"]))
    bits = draw(st.integers(0, 0x1FFFFFFF))
    flags = draw(st.integers(0, 15))  # FD for a quarter of the frames, remote for a sixteenth
    if which == "error":
        return can.Message(arbitration_id=bits, is_error_frame=True, data=bytes(8), check=False)
    extended = which != "other11"
    ident = {"role": (role_id & 0x03FFFF00) | (bits & 0x1C0000FF), "own": own_id,
             "other29": bits, "other11": bits & 0x7FF}[which]
    if flags == 5:
        return can.Message(arbitration_id=ident, is_extended_id=extended, is_remote_frame=True,
                           dlc=bits % 9, check=False)
    fd = flags & 3 == 0
    size = draw(st.sampled_from(FD_LENGTHS) if fd else st.one_of(st.just(length), st.integers(0, 8)))
    data = bytearray(draw(st.binary(min_size=size, max_size=size)))
    top = draw(st.sampled_from([None, 0x00, 0x7D, 0xFA, 0xFB, 0xFC, 0xFD, 0xFE, 0xFF]))
    if top is not None and which == "role" and top_byte < size:
        data[top_byte] = top
    return can.Message(arbitration_id=ident, is_extended_id=extended, is_fd=fd, data=data, check=False)


def frames_for(bench: Bench) -> st.SearchStrategy[can.Message]:
    signal = bench.codec_in.signal
    return _frames(bench.role_id(), bench.out.frame_id, (signal.start + signal.length - 1) // 8,
                   bench.codec_in.message.length)


@functools.cache
def _frames(role_id: int, own_id: int, top_byte: int, length: int) -> st.SearchStrategy[can.Message]:
    """One strategy per node layout, built once: hypothesis validates a new strategy on each draw."""
    return frames(role_id, own_id, top_byte, length)


def expected(node: Ecu | Ccm, msg: can.Message) -> tuple[str, float | None]:
    """The oracle: (kind, value) of a frame for this node; value only for "accepted"."""
    if msg.is_error_frame:
        return "error_frame", None
    if msg.arbitration_id in node.port.own_ids:
        return "own_id", None  # our echo, or another sender of our identifier: never input
    message, signal = node.codec_in.message, node.codec_in.signal
    pgn = cantools.j1939.pgn_from_frame_id
    is_role = msg.is_extended_id and (
        pgn(msg.arbitration_id) == pgn(message.frame_id))  # type: ignore[no-untyped-call]
    if not is_role:
        return "other", None
    if msg.is_remote_frame:
        return "remote_frame", None
    if msg.is_fd and not message.is_fd:
        return "fd_frame", None
    source = msg.arbitration_id & 0xFF
    if node.source is not None and source != node.source:
        return "wrong_source", None
    needed = (signal.start + signal.length - 1) // 8 + 1  # little-endian signals in both profiles
    if len(msg.data) < needed:
        return "short_frame", None
    if not msg.is_fd and len(msg.data) != message.length:
        return "wrong_dlc", None
    decoded = message.decode(bytes(msg.data[:8]).ljust(8, b"\xff"), scaling=False)
    assert isinstance(decoded, dict)
    raw = decoded[signal.name]
    assert isinstance(raw, int)
    top = raw >> (signal.length - 8)
    if top == 0xFF:
        return "not_available", None
    if top == 0xFE:
        return "error_indicator", None
    if top >= 0xFB:
        return "out_of_range", None
    value = raw * signal.scale + signal.offset
    half_step = abs(signal.scale) / 2
    assert signal.minimum is not None and signal.maximum is not None
    if value < signal.minimum - half_step or value > signal.maximum + half_step:
        return "out_of_range", None
    return "accepted", value


def counts(node: Ecu | Ccm) -> Counter[str]:
    c = Counter(node.invalid)
    c["other"] = node.other
    c["accepted"] = node.accepted
    c["own_id"] = node.port.counters.echo + node.port.counters.foreign
    c["error_frame"] = node.port.counters.error_frames.total()
    return +c


def sender_of(node: Ecu | Ccm, msg: can.Message) -> int | None:
    """The oracle's source address: the identifier's low byte for a J1939 message, else none."""
    return msg.arbitration_id & 0xFF if node.codec_in.message.protocol == "j1939" else None


def check_rules(bench: Bench, batch: list[can.Message]) -> None:
    """Feed frames one by one and check each one's effect against the oracle.

    Every third frame is followed by a tick, so values arrive before different ticks.
    """
    node = bench.node
    for i, msg in enumerate(batch):
        kind, value = expected(node, msg)
        FED[kind] += 1
        held = node.held
        before_counts = counts(node)
        before_held = (held.value, held.received_at, held.source)
        tick = node.tick_index
        bench.send_raw(msg)
        node.drain()
        after = counts(node)
        changed = after - before_counts
        if kind == "error_frame":
            assert sum(changed.values()) >= 1 and set(changed) <= {"error_frame"}, (msg, changed)
        else:
            assert changed == Counter({kind: 1}), (msg, kind, changed)
        if kind == "accepted":
            assert held.value == pytest.approx(value, rel=1e-12, abs=1e-12), msg
            assert (held.received_at, held.source) == (tick, sender_of(node, msg)), msg
        elif kind in ("not_available", "error_indicator"):
            assert held.value is None, msg
            assert (held.received_at, held.source) == before_held[1:], msg
        else:
            assert (held.value, held.received_at, held.source) == before_held, msg
        if i % 3 == 2:
            bench.tick()


@pytest.mark.parametrize("profile", ["amp", "j1939"])
@PROPERTY
@given(data=st.data())
def test_each_frame_changes_the_ecus_input_exactly_as_the_rules_say(profile: str,
                                                                    data: st.DataObject) -> None:
    bench = Bench("ecu", bench_settings(profile=profile))
    try:
        check_rules(bench, data.draw(st.lists(frames_for(bench), max_size=30)))
    finally:
        bench.close()


@pytest.mark.parametrize("profile", ["amp", "j1939"])
@PROPERTY
@given(data=st.data())
def test_each_frame_changes_the_ccms_input_exactly_as_the_rules_say(profile: str,
                                                                    data: st.DataObject) -> None:
    bench = Bench("ccm", bench_settings(profile=profile))
    try:
        check_rules(bench, data.draw(st.lists(frames_for(bench), max_size=30)))
    finally:
        bench.close()


@PROPERTY
@given(data=st.data(), source=st.integers(0, 253))
def test_with_a_source_filter_each_frame_still_follows_the_rules(data: st.DataObject, source: int) -> None:
    bench = Bench("ecu", bench_settings(app_source=source))
    try:
        check_rules(bench, data.draw(st.lists(frames_for(bench), max_size=30)))
    finally:
        bench.close()


@pytest.mark.parametrize("profile", ["amp", "j1939"])
@pytest.mark.parametrize("kind", ["ecu", "ccm"])
@BATCHES
@given(data=st.data())
def test_random_traffic_never_crashes_a_node_nor_costs_it_a_tick(kind: str, profile: str,
                                                                data: st.DataObject) -> None:
    bench = Bench(kind, bench_settings(profile=profile))
    try:
        for _ in range(5):
            for msg in data.draw(st.lists(frames_for(bench), max_size=20)):
                FED[expected(bench.node, msg)[0]] += 1
                bench.send_raw(msg)
            bench.tick()
            own = [m for m in bench.sent() if m.arbitration_id == bench.out.frame_id]
            assert len(own) == 1, "its own frame once per tick, whatever arrived (and answered)"
        if isinstance(bench.node, Ecu):
            assert math.isfinite(bench.node.state.speed_kph) and 0.0 <= bench.node.state.speed_kph <= 250.996
        else:
            assert 0.0 <= bench.node.app_pct <= 100.0
    finally:
        bench.close()


@SIDE_BY_SIDE
@given(data=st.data(), apps=st.lists(st.integers(0, 100), min_size=3, max_size=8))
def test_traffic_of_other_messages_never_changes_the_ecus_output(data: st.DataObject,
                                                                 apps: list[int]) -> None:
    clean, noisy = Bench("ecu"), Bench("ecu")
    try:
        for app in apps:
            for bench in (clean, noisy):
                bench.send_value(float(app))
            for msg in data.draw(st.lists(frames_for(noisy), max_size=20)):
                kind = expected(noisy.node, msg)[0]
                if kind in ("other", "own_id", "error_frame", "remote_frame", "fd_frame", "short_frame",
                            "wrong_dlc", "out_of_range"):  # the kinds that must change nothing
                    FED[kind] += 1
                    noisy.send_raw(msg)
            clean.tick()
            noisy.tick()
        assert [m.data for m in noisy.sent()] == [m.data for m in clean.sent()]
        assert noisy.ecu.state == clean.ecu.state
    finally:
        clean.close()
        noisy.close()
