"""Another sender of our identifier on a real vcan0, while the kernel's timer sends our frames.

Frames with the ECU's speed identifier are written from another socket, as can-utils' ``cansend``
would, at moments unrelated to the ECU's ticks. The kernel hands them to the ECU's raw socket
exactly like the broadcast manager's own sends; only true echoes may reach the phase lock, or the
timer is restarted and the wire gets extra, repeated or reordered frames of ours.
"""

from __future__ import annotations

import itertools
import random
import re
import time
from collections.abc import Callable

import pytest

from tests.socketcan.conftest import Node, RawCapture
from tests.socketcan.test_nodes_vm import AMP, speeds

pytestmark = pytest.mark.socketcan

#: the foreign sender's payload: never one the coasting ECU sends (speed bytes 0xEEEE)
FOREIGN = b"\xee" * 8
INJECTED = 60


def test_foreign_frames_with_our_identifier_leave_our_kernel_timed_frames_alone(
        capture: RawCapture, start_node: Callable[..., Node]) -> None:
    """A coasting truck slows every tick: an extra frame shows as two within half a period, a
    repeated tick as an equal speed, a reordered one as a rise.

    A foreign frame taken for our echo moves the phase lock by up to half a period, and the timer
    restarted at once sends a second frame in that period. A tick the loop runs too late restarts
    the timer for a good reason (it may have used up its budget) and may do the same, or leave the
    kernel to repeat the previous value; so a doubled or repeated frame is allowed once per late
    or skipped tick of the ECU's own count, which on a quiet machine is none, never once per
    foreign frame.
    """
    ecu = start_node("--iface", "vcan0", "--initial-speed", "80", "--grade", "0")
    capture.wait_for(lambda f: f.can_id == AMP.speed_id, count=20, timeout=180)
    capture.clear()
    rng = random.Random(16)
    for _ in range(INJECTED):
        time.sleep(rng.uniform(0.05, 0.45))  # at any phase of the 100 ms period
        capture.send(AMP.speed_id, FOREIGN, extended=True)
    time.sleep(1.0)
    ours = [f for f in capture.frames(lambda f: f.can_id == AMP.speed_id) if f.data != FOREIGN]
    assert ecu.stop() == 0
    values = speeds(ours, AMP)
    steps = [b - a for a, b in itertools.pairwise(values)]
    gaps = [b.timestamp - a.timestamp for a, b in itertools.pairwise(ours)]
    repeats = sum(1 for step in steps if step == 0)
    doubled = sum(1 for gap in gaps if gap < 0.05)
    late, skipped = map(int, re.findall(r"stopped after \d+ ticks: (\d+) late, (\d+) skipped", ecu.log())[-1])
    print(f"with {INJECTED} foreign frames: {len(ours)} of ours, {repeats} repeated, {doubled} within "
          f"half a period of the previous one; the ECU counted {late} late and {skipped} skipped ticks")
    assert all(step <= 0 for step in steps), "never a rise: no reordered frame"
    assert doubled <= late + skipped, "no extra frame for a foreign one"
    assert repeats <= late + skipped, "no value sent again for a foreign frame"


def test_foreign_frames_with_our_identifier_are_counted_and_warned_about(
        capture: RawCapture, start_node: Callable[..., Node]) -> None:
    ecu = start_node("--iface", "vcan0", "--initial-speed", "80", "--grade", "0")
    capture.wait_for(lambda f: f.can_id == AMP.speed_id, count=20, timeout=180)
    for _ in range(5):
        capture.send(AMP.speed_id, FOREIGN, extended=True)
        time.sleep(0.2)
    time.sleep(1.0)
    assert ecu.stop() == 0
    log = ecu.log()
    assert f"another node sends our identifier {AMP.speed_id:08X} (payload EE EE EE EE EE EE EE EE)" in log
    assert log.count("another node sends our identifier") == 1, "one warning per episode"
    summary = [line for line in log.splitlines() if "stopped after" in line][-1]
    assert re.search(r"\bforeign 5\b", summary), summary
