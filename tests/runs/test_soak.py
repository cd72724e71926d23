"""Soak: ECU and CCM processes close the loop for minutes of real time under a stream of bad input.

Opt-in, not in the default suite: ``ECU_SIM_SOAK=600 .venv/bin/python -m pytest tests/runs/test_soak.py``
runs ten minutes (the value is the duration in seconds). Both processes record; the test feeds
every kind of bad input on both roles and a flood of random identifiers, then reports what it
fed, what each node counted, lost (skipped) and late ticks, the speed frames heard and the
schedule's drift, and the last speed. Those are figures of this machine and its load, printed,
not asserted (the kernel may drop any datagram). Asserted are the rules: both runs end by their
duration with status 0 after exactly its ticks, each tick sent or counted as skipped, no frame
counted twice, and both recordings replay bit for bit, i.e. nothing but the recorded input moved
the model.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import can
import pytest

from tests.conftest import Udp, clean_env, ecu_sim_command, run_cli, summary_of

SOAK_S = float(os.environ.get("ECU_SIM_SOAK", "0"))
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(SOAK_S <= 0, reason="opt-in: ECU_SIM_SOAK=<seconds>, e.g. 600")]

APP_ID, SPEED_ID = 0x18F00326, 0x18FEF125
APP_40 = bytes.fromhex("FFFFFFFFFFFFA5FF")
SPEED_85 = bytes.fromhex("FFFFFFFFFF0055FF")
PERIOD_S = 0.1


def frame(**fields: object) -> Callable[[], can.Message]:
    return lambda: can.Message(**fields)  # type: ignore[arg-type]


def bad_frames() -> list[tuple[str, Callable[[], can.Message]]]:
    """(kind, frame) for every kind of bad input, for the ECU's input (APP) and the CCM's (speed)."""
    kinds: list[tuple[str, Callable[[], can.Message]]] = []
    for role, ident, good in (("app", APP_ID, APP_40), ("speed", SPEED_ID, SPEED_85)):
        kinds += [
            (f"{role} short_frame", frame(arbitration_id=ident, data=good[:5])),
            (f"{role} out_of_range", frame(arbitration_id=ident, data=bytes.fromhex("FFFFFFFFFFFCFCFF"))),
            (f"{role} remote_frame", frame(arbitration_id=ident, is_remote_frame=True, dlc=8)),
            (f"{role} fd_frame", frame(arbitration_id=ident, is_fd=True, data=good + bytes(4))),
            (f"{role} wrong_source", frame(arbitration_id=(ident & ~0xFF) | 0x27, data=good)),
        ]
    kinds.append(("error_frame", frame(arbitration_id=0x0A0, is_error_frame=True, is_extended_id=False,
                                       data=bytes(8))))
    return kinds


#: 8-byte payloads this test sends with the speed's identifier (the ECU never sends these)
INJECTED_SPEEDS = {bytes.fromhex(h) for h in ("FFFFFFFFFFFCFCFF", "FFFFFFFFFFFFFFFF", "FFFFFFFFFFFFFEFF")}
#: sent rarely: the input is missing at once, so the ECU coasts (or cruise pauses) for a tick
MISSING = [("app not_available", APP_ID, "FF"), ("app error_indicator", APP_ID, "FE"),
           ("speed not_available", SPEED_ID, "FF"), ("speed error_indicator", SPEED_ID, "FE")]


def report(request: pytest.FixtureRequest, text: str) -> None:
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    assert capture is not None
    with capture.global_and_fixture_disabled():
        print(text)


def test_soak_closed_loop_under_bad_input(tmp_path: Path, udp: Udp, udp_bus: can.BusABC,
                                          request: pytest.FixtureRequest) -> None:
    duration = f"{SOAK_S:g}"
    # The logs go to files: a pipe nobody reads for minutes fills up and blocks the process.
    ecu_log, ccm_log = (tmp_path / "ecu.err").open("w"), (tmp_path / "ccm.err").open("w")
    ecu = subprocess.Popen(ecu_sim_command(*udp.args(), "--app-source", "0x26",
                                           "--duration", duration, "--record", str(tmp_path / "ecu.blf")),
                           stderr=ecu_log, env=clean_env())
    ccm = subprocess.Popen(ecu_sim_command("ccm", *udp.args(), "--speed-source", "0x25",
                                           "--duration", duration, "--record", str(tmp_path / "ccm.log")),
                           stderr=ccm_log, env=clean_env())
    fed: Counter[str] = Counter()
    kinds = bad_frames()
    rng = random.Random(1)
    speed_times: list[float] = []
    next_bad = next_flood = next_missing = time.monotonic() + 2.0
    step = 0
    give_up = time.monotonic() + SOAK_S + 60
    while (ecu.poll() is None or ccm.poll() is None) and time.monotonic() < give_up:
        now = time.monotonic()
        if now >= next_bad:  # one bad frame every 20 ms, kinds in turn
            kind, make = kinds[step % len(kinds)]
            udp_bus.send(make())
            fed[kind] += 1
            step += 1
            next_bad += 0.02
        if now >= next_missing:  # a not-available or error value every 7 s
            kind, ident, top = MISSING[int(now) % len(MISSING)]
            udp_bus.send(can.Message(arbitration_id=ident, data=bytes.fromhex(f"FFFFFFFFFFFF{top}FF")))
            fed[kind] += 1
            next_missing += 7.0
        if now >= next_flood:  # a burst of 200 frames of random identifiers every second
            for _ in range(200):
                udp_bus.send(can.Message(arbitration_id=rng.getrandbits(29) | 0x100, data=rng.randbytes(8)))
            fed["other (random identifiers)"] += 200
            next_flood += 1.0
        while (msg := udp_bus.recv(0.0)) is not None:
            if (msg.arbitration_id == SPEED_ID and len(msg.data) == 8 and not msg.is_fd
                    and not msg.is_remote_frame and bytes(msg.data) not in INJECTED_SPEEDS):
                speed_times.append(time.monotonic())  # the ECU's, not our bad frames heard back
        time.sleep(0.002)
    ecu.wait(timeout=30)
    ccm.wait(timeout=30)
    ecu_log.close()
    ccm_log.close()
    ecu_err, ccm_err = (tmp_path / "ecu.err").read_text(), (tmp_path / "ccm.err").read_text()
    assert (ecu.returncode, ccm.returncode) == (0, 0), ecu_err[-2000:] + ccm_err[-2000:]

    ticks_expected = round(SOAK_S / PERIOD_S)
    ecu_run, ccm_run = summary_of(ecu_err), summary_of(ccm_err)
    # Tick 0 and the last tick always send (overdue ticks are followed by one that sends), so
    # the first and the last speed frame lie (ticks - 1) periods apart on an undrifting schedule.
    span = speed_times[-1] - speed_times[0] if speed_times else 0.0
    drift_s = span - (ticks_expected - 1) * PERIOD_S
    last_speed = float(re.findall(r"speed\s+([\d.]+) km/h", ecu_err)[-1])
    replays = {name: run_cli("replay", str(tmp_path / name), timeout=600) for name in ("ecu.blf", "ccm.log")}
    report(request, "\n".join([
        f"\nsoak {SOAK_S:g} s: fed {sum(fed.values())} bad or unrelated frames: "
        + ", ".join(f"{kind} {n}" for kind, n in sorted(fed.items())),
        *(f"{name}: {run.ticks} ticks, {run.late} late, {run.skipped} lost (skipped); "
          f"{run.line.split(' skipped, ')[-1]}" for name, run in (("ECU", ecu_run), ("CCM", ccm_run))),
        f"speed frames heard: {len(speed_times)} of {ecu_run.tx} sent, first to last {span:.3f} s, "
        f"drift {drift_s * 1000:+.1f} ms; last speed {last_speed:.2f} km/h (set 90)",
        *(f"replay {name}: {r.stdout.strip() or r.stderr.strip()}" for name, r in replays.items()),
    ]))
    for run in (ecu_run, ccm_run):
        assert run.ticks == ticks_expected, run.line
        assert run.ticks == run.tx + run.tx_errors + run.tx_dropped + run.skipped, run.line
        assert run.invalid_total + run.other <= run.rx, run.line
    assert all(r.returncode == 0 for r in replays.values()), "the recordings replay bit for bit"
