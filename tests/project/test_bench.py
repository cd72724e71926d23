"""The benchmark's arithmetic (bench/analysis.py), and one short real recording of a sender."""

from __future__ import annotations

import json
import queue
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from bench import analysis, report
from bench.roles import PERIODIC_ID
from bench.timing import phase_summary, ratios
from ecu_sim.codec.profile import Profile
from tests.conftest import HANG_S, REPO, Udp, clean_env


def test_a_perfect_sender_has_no_period_error_and_no_drift() -> None:
    timing = analysis.stream_timing([100.0 + 0.1 * k for k in range(101)], 0.1)
    assert timing.frames == 101 and timing.gaps == 0
    assert timing.period_error.p99_ms == pytest.approx(0.0, abs=1e-6)
    assert timing.final_drift_ms == pytest.approx(0.0, abs=1e-6)


def test_a_sender_slow_by_a_tenth_of_a_ms_drifts_one_ms_per_second() -> None:
    timing = analysis.stream_timing([0.1001 * k for k in range(101)], 0.1)
    assert timing.period_error.mean_ms == pytest.approx(0.1)
    assert timing.final_drift_ms == pytest.approx(10.0)
    assert timing.drift_rate_ms_per_min == pytest.approx(60.0, rel=1e-3)


def test_jitter_on_absolute_deadlines_shows_in_the_error_but_not_in_the_drift() -> None:
    rng = random.Random(3)
    timing = analysis.stream_timing([0.1 * k + rng.uniform(0.0, 0.0005) for k in range(1001)], 0.1)
    assert 0.3 < timing.period_error.p99_ms <= 0.5
    assert abs(timing.final_drift_ms) <= 0.5


def test_a_lost_frame_is_a_gap_not_an_error_and_the_count_of_periods_goes_on() -> None:
    times = [0.1 * k for k in range(21) if k != 7]
    timing = analysis.stream_timing(times, 0.1)
    assert (timing.gaps, timing.missing, timing.period_error.n) == (1, 1, 18)
    assert timing.final_drift_ms == pytest.approx(0.0, abs=1e-6)


def grid(late: dict[int, float], skip: tuple[int, ...] = (), extra: tuple[float, ...] = ()) -> list[float]:
    """Frames on a 100 ms grid, some late, some slots empty, some extra frames (catch-up)."""
    return sorted([0.1 * k + late.get(k, 0.0) for k in range(40) if k not in skip] + list(extra))


@pytest.mark.parametrize(
    ("times", "missing"),
    [
        (grid({10: 0.06}), 0),  # one frame 60 ms late, no frame lost
        (grid({10: 0.06, 11: 0.06}), 0),  # two in a row
        (grid({11: 0.04}, skip=(10,)), 1),  # a stalled ecu-sim skips slot 10 and sends 11 late
        (grid({10: 0.14, 11: 0.04}), 0),  # send_periodic catching up after a 140 ms stall
    ],
)
def test_late_frames_are_told_apart_from_missing_ones(times: list[float], missing: int) -> None:
    timing = analysis.stream_timing(times, 0.1)
    assert timing.missing == missing
    assert timing.final_drift_ms == pytest.approx(0.0, abs=1e-6)
    assert timing.schedule_drift_ms == pytest.approx(0.0, abs=1e-6)


def test_schedule_drift_is_not_moved_by_a_late_last_frame() -> None:
    timing = analysis.stream_timing(grid({39: 0.03}), 0.1)
    assert timing.final_drift_ms == pytest.approx(30.0)
    assert timing.schedule_drift_ms == pytest.approx(0.0, abs=1e-6)


def test_percentiles_interpolate_between_ranks() -> None:
    assert analysis.percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert analysis.percentile([5.0], 99) == 5.0


def test_latency_is_measured_from_each_step_to_the_first_frame_that_reflects_it() -> None:
    app = [(0.00, 0.0), (0.15, 0.0), (0.31, 100.0), (0.45, 100.0), (0.62, 0.0)]
    # speed frames every 0.1 s: falling, then rising from 0.4 s, falling again from 0.7 s
    speeds = [80.0, 79.9, 79.8, 79.7, 79.9, 80.1, 80.3, 80.2, 80.1]
    speed = [(0.1 * k, v) for k, v in enumerate(speeds)]
    latency = analysis.step_latency(app, speed)
    assert latency.steps == 2 and latency.unanswered == 0
    assert latency.latencies_ms == pytest.approx([90.0, 80.0])
    assert latency.frames_before_reflected == {0: 2}


def test_import_times_are_summed_by_package_and_top_level_import() -> None:
    lines = [
        "import time: self [us] | cumulative | imported package",
        "import time:      1000 |       1000 |     can.util",
        "import time:      2000 |       3000 |   can",
        "import time:       500 |       3500 | ecu_sim.bus.port",
        "not an import line",
    ]
    times = analysis.import_times(lines)
    assert times.total_ms == 3.5
    assert times.by_package_ms == {"can": 3.0, "ecu_sim": 0.5}
    assert times.top_level_ms == {"ecu_sim.bus.port": 3.5}


def test_a_target_missed_is_reported_as_missed() -> None:
    timing = analysis.stream_timing([0.1 * k + (0.002 if k % 2 else 0.0) for k in range(50)], 0.1)
    periodic = analysis.stream_timing([0.1 * k + 1e-5 * (k % 3) for k in range(50)], 0.1)
    timings = {report.OURS: timing, report.PERIODIC: periodic}
    rep = {"rep": 0, "timing": {k: v.brief() for k, v in timings.items()},
           "conditions": {"background_cores": 0.1}, "ratios": ratios(timings, 0, 0.1), "cpu": {}}
    result = {"quiet": {"repetitions": [rep], **phase_summary([rep])}}
    rows = {row["target"]: row for row in report.targets(result)}
    assert rows["p99 of abs period error, quiet (median of repetitions)"]["met"] is False
    assert rows["p99 below send_periodic's in every repetition, quiet"]["met"] is False
    assert rows["abs drift after 10 min"]["met"] is None


@pytest.mark.slow
def test_the_receiver_records_each_frame_of_python_cans_periodic_sender_in_the_order_it_came(
        tmp_path: Path, udp: Udp) -> None:
    """The recording, not its timing: how regular the sender is on this machine is the bench's figure.

    The roles share one multicast group (bench/roles.py); the test's own port keeps parallel runs apart.
    """
    out = tmp_path / "frames.json"
    said: queue.Queue[bytes] = queue.Queue()

    def actor(*args: object) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-m", "bench.actors", *map(str, args)], cwd=REPO,
                                env=clean_env(), stdout=subprocess.PIPE)

    def stop(process: subprocess.Popen[bytes]) -> None:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=HANG_S)

    def read(process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            said.put(line)

    receiver = actor("receiver", "--ports", udp.port, "--out", out)
    threading.Thread(target=read, args=(receiver,), daemon=True).start()
    try:
        assert said.get(timeout=HANG_S).strip() == b"ready"
        sender = actor("periodic", "--port", udp.port, "--period", 0.05)
        try:
            first = said.get(timeout=HANG_S).split()  # "first BUS IDENTIFIER TIMESTAMP": it heard the sender
            assert first[:3] == [b"first", b"0", str(PERIODIC_ID).encode()]
        finally:
            stop(sender)
    finally:
        stop(receiver)
    frames = json.loads(out.read_text())["frames"]
    payload = Profile.load("amp").speed.encode(80.0).hex()
    assert frames and all((bus, ident, data) == (0, PERIODIC_ID, payload) for _, bus, ident, data in frames)
    times = [t for t, *_ in frames]
    assert times == sorted(times), "kernel receive timestamps, in the order the frames came"


def test_a_burst_of_overdue_frames_after_a_long_stall_is_not_taken_for_lost_frames() -> None:
    # python-can's thread stalled 380 ms: slots 10..13 go out at once, then on time again
    times = grid({10: 0.28, 11: 0.1801, 12: 0.0802, 13: 0.0})
    timing = analysis.stream_timing(times, 0.1)
    assert timing.missing == 0
    assert timing.schedule_drift_ms == pytest.approx(0.0, abs=1e-6)


def test_a_sender_that_drifts_is_not_taken_for_one_that_skips() -> None:
    timing = analysis.stream_timing([0.11 * k for k in range(60)], 0.1)
    assert timing.missing == 0
    assert timing.final_drift_ms == pytest.approx(590.0)
