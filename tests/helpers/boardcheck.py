"""The board stage's checks (scripts/board-test), run as root inside the emulated armhf Debian.

``python3 boardcheck.py PAYLOAD`` runs ``deploy/install.sh`` as the README's "A board as a
service" says (offline, from the payload's wheelhouse), then runs itself again under the installed
venv's Python, where python-can and cantools read the frames. Every check is judged on the guest's
own clock and on what systemd and the kernel report, never on how fast the emulator is: a check
waits for what it expects up to a generous limit. Writes ``PAYLOAD/results.json``: per check
``ok``, ``detail`` and ``kind`` (the one-line cause the host prints), and the figures.
"""

from __future__ import annotations

import glob
import importlib.resources
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

IFACE = "vcan0"
ECU, CCM = f"ecu-sim@{IFACE}.service", f"ecu-sim-ccm@{IFACE}.service"
VENV_PYTHON = "/opt/ecu-sim/venv/bin/python"
#: the amp profile's speed frame (the ECU's CCVS1) and the j1939 profile's EEC1 from the engine
CCVS1_AMP, EEC1_PGN, CLAIM_PGN = 0x18FEF125, 0xF004, 0xEE00
POWERTRAIN = {0x00: "engine", 0x03: "transmission", 0x0B: "brakes", 0x0F: "retarder"}
#: the env file lines that make ecu-sim@vcan0 the powertrain network (docs/service.md)
POWERTRAIN_ENV = ("ECU_SIM_VEHICLE_PRESET=class6\nECU_SIM_PROFILE_NAME=j1939\n"
                  "ECU_SIM_J1939_NETWORK=powertrain\n")
#: generous limits on the guest's clock for what takes an emulated CPU long (start-up, restarts)
START_LIMIT_S, WATCHDOG_LIMIT_S, LOOP_WAIT_S = 240.0, 300.0, 300.0
#: the loop must close within 60 s of the truck's own time: 600 ticks of 100 ms, one CCVS1 each
#: (the guest's clock would judge the host's load instead)
LOOP_LIMIT_TICKS = 600
#: window over which CPU per tick is measured
CPU_WINDOW_S = 20.0
#: the reflash: the powertrain standing (programming needs it), the engine's new image, and the
#: kernel's ISO-TP identifiers of a tester at 0xF9 (29-bit, normal fixed addressing)
REFLASH_ENV = "ECU_SIM_RUN_INITIAL_SPEED_KPH=0\n"
REFLASH_ID, REFLASH_LIMIT_KPH = "BOARD-60", 60
CAN_EFF_FLAG, TO_ENGINE, FROM_ENGINE = 0x80000000, 0x18DA00F9, 0x18DAF900
#: UDS: negative answer, response pending
NEGATIVE, PENDING = 0x7F, 0x78
#: J1939 socket option numbers (linux/can/j1939.h), for Pythons that lack the names
SOL_CAN_J1939 = 100 + socket.CAN_J1939
SO_J1939_PROMISC = getattr(socket, "SO_J1939_PROMISC", 2)


class Report:
    """The checks and figures so far, echoed to the console as they come (the console log is
    what a failed run leaves)."""

    def __init__(self, payload: Path) -> None:
        self.payload = payload
        self.checks: dict[str, dict[str, Any]] = {}
        self.figures: dict[str, Any] = {}
        self._console = open("/dev/ttyAMA0", "w", buffering=1)  # noqa: SIM115 (open for the run)

    def say(self, text: str) -> None:
        self._console.write(f"[boardcheck {time.monotonic():8.2f}] {text}\n")

    def check(self, name: str, ok: bool, detail: str, kind: str) -> bool:
        self.checks[name] = {"ok": ok, "detail": detail, "kind": kind}
        self.say(f"{'PASS' if ok else 'FAIL'} {name}: {detail}")
        return ok

    def figure(self, name: str, value: Any) -> None:
        self.figures[name] = value
        self.say(f"figure {name} = {value}")

    def write(self) -> None:
        text = json.dumps({"checks": self.checks, "figures": self.figures}, indent=1)
        (self.payload / "results.json").write_text(text)
        self._console.write(f"=== board results ===\n{json.dumps(json.loads(text))}\n=== end ===\n")


def sh(*cmd: str, timeout: float = 600) -> tuple[int, str]:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout + done.stderr


def show(unit: str, *props: str) -> dict[str, str]:
    _, out = sh("systemctl", "show", unit, *[f"-p{p}" for p in props])
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def wait_for(predicate: Callable[[], Any], limit_s: float) -> Any:
    """Polls once a second: each systemctl call costs the emulated CPU the services need."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        if value := predicate():
            return value
        time.sleep(1.0)
    return predicate()


def running(unit: str, not_pid: int = 0) -> dict[str, str] | None:
    p = show(unit, "ActiveState", "SubState", "MainPID", "NRestarts", "StatusText",
             "ActiveEnterTimestampMonotonic")
    ok = p["ActiveState"] == "active" and p["SubState"] == "running" and int(p["MainPID"]) not in (0, not_pid)
    return p if ok else None


def cpu_s(pid: int) -> float:
    """User plus system time of the whole process (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------------------------------------
# phase 1: under Debian's python3, before anything of ecu-sim is installed

def install(report: Report) -> bool:
    report.figure("boot_to_checks_s", round(time.monotonic(), 1))  # the guest's clock starts at boot
    wheel = glob.glob(str(report.payload / "dist" / "ecu_sim-*.whl"))[0]
    start = time.monotonic()
    rc, out = sh("sh", str(report.payload / "src/deploy/install.sh"), "--find-links",
                 str(report.payload / "wheelhouse"), "--enable", IFACE, "--ccm", wheel)
    (report.payload / "install.log").write_text(out)
    report.figure("install_s", round(time.monotonic() - start, 1))
    last = out.strip().splitlines()[-1] if out.strip() else ""
    return report.check("install", rc == 0, f"deploy/install.sh exit {rc}: {last}", "install failed")


# ------------------------------------------------------------------------------------------------
# phase 2: under the installed venv's Python

def builtin_dbc(name: str) -> Any:
    """A built-in profile's DBC as the installed package carries it."""
    import cantools

    text = (importlib.resources.files("ecu_sim.dbc") / f"{name}.dbc").read_text(encoding="utf-8")
    return cantools.database.load_string(text, database_format="dbc", strict=False)


def units_ready(report: Report) -> bool:
    ok = True
    for unit, key in ((ECU, "ecu"), (CCM, "ccm")):
        p = wait_for(partial(running, unit), START_LIMIT_S) or show(unit, "ActiveState", "SubState")
        # Type=notify: active (running) means systemd got READY=1
        ok &= report.check(f"{key}_ready", "StatusText" in p and p["StatusText"] != "",
                           f"{p.get('ActiveState')} ({p.get('SubState')}), status: {p.get('StatusText', '')}",
                           "unit failed")
    rc, out = sh("ip", "-d", "-j", "link", "show", IFACE)
    kind = json.loads(out)[0].get("linkinfo", {}).get("info_kind", "") if rc == 0 else ""
    pre = show(ECU, "ExecStartPre")["ExecStartPre"]
    ok &= report.check("vcan0_made_by_link_step", kind == "vcan" and "status=0" in pre.replace(" ", ""),
                       f"kind {kind!r}; {pre.strip()[:160]}", "unit failed")
    return ok


def loop_closes(report: Report) -> bool:
    """Restarts the ECU (its truck starts again at the initial speed) and reads its speed frames
    until the speed is within 1 km/h of the set speed."""
    import can

    from ecu_sim.settings.model import RunSettings

    ccvs1 = builtin_dbc("amp").get_message_by_frame_id(CCVS1_AMP)
    wanted = RunSettings().set_speed_kph
    with can.Bus(interface="socketcan", channel=IFACE,
                 can_filters=[{"can_id": CCVS1_AMP, "can_mask": 0x1FFFFFFF, "extended": True}]) as bus:
        sh("systemctl", "restart", ECU)
        p = show(ECU, "ActiveEnterTimestampMonotonic", "InactiveExitTimestampMonotonic")
        ready = int(p["ActiveEnterTimestampMonotonic"]) / 1e6
        # frames stamped before the new start began are the old process's (python-can stamps
        # with the wall clock)
        started = time.time() - (time.monotonic() - int(p["InactiveExitTimestampMonotonic"]) / 1e6)
        speeds: list[tuple[float, float]] = []
        while time.monotonic() - ready < LOOP_WAIT_S and len(speeds) < LOOP_LIMIT_TICKS:
            msg = bus.recv(timeout=1.0)
            if msg is None or msg.timestamp < started:
                continue
            speed = float(ccvs1.decode(msg.data)["WheelBasedVehicleSpeed"])
            speeds.append((time.monotonic() - ready, speed))
            if abs(speed - wanted) <= 1.0:
                break
        frames_per_tick = measure_single_cpu(report, bus)
    if not speeds:
        return report.check("loop_closes", False, "no speed frame from the restarted ECU",
                            "loop did not close")
    first, last = speeds[0], speeds[-1]
    report.figure("loop_first_speed_kph", round(first[1], 2))
    report.figure("loop_within_1_kph_after_ready_s", round(last[0], 1))
    report.figure("loop_within_1_kph_after_ticks", len(speeds))
    climbed = last[1] > first[1]
    closed = abs(last[1] - wanted) <= 1.0 and climbed and frames_per_tick
    return report.check("loop_closes", bool(closed),
                        f"speed {first[1]:.2f} km/h in the restarted ECU's first frame, {last[1]:.2f} km/h "
                        f"after {len(speeds)} ticks ({last[0]:.1f} s of the guest's clock after READY=1; "
                        f"set speed {wanted:g}, limit {LOOP_LIMIT_TICKS} ticks)",
                        "loop did not close")


def measure_single_cpu(report: Report, bus: Any) -> bool:
    """CPU per tick of the single node at 10 Hz: one CCVS1 a tick."""
    pid = int(show(ECU, "MainPID")["MainPID"])
    if not pid:
        return False
    before, frames, end, begun = cpu_s(pid), 0, time.monotonic() + CPU_WINDOW_S, time.time()
    while time.monotonic() < end:
        msg = bus.recv(timeout=0.5)
        frames += msg is not None and msg.timestamp >= begun  # not what waited in the queue
    spent = cpu_s(pid) - before
    if frames:
        report.figure("single_node_10hz_cpu_ms_per_tick", round(1000 * spent / frames, 2))
        report.figure("single_node_10hz_ticks_per_s", round(frames / CPU_WINDOW_S, 1))
    return frames > 0


def watchdog_restarts(report: Report) -> bool:
    before = show(ECU, "MainPID", "NRestarts")
    pid = int(before["MainPID"])
    t_stop = time.monotonic()
    os.kill(pid, signal.SIGSTOP)
    after = wait_for(lambda: running(ECU, not_pid=pid), WATCHDOG_LIMIT_S)
    _, log = sh("journalctl", "-b", "-u", ECU, "--no-pager", "-o", "cat")
    if after:
        report.figure("watchdog_sigstop_to_running_again_s", round(time.monotonic() - t_stop, 1))
    ok = bool(after) and int(after["NRestarts"]) > int(before["NRestarts"]) and "Watchdog timeout" in log
    return report.check("watchdog_restarts_stopped_ecu", ok,
                        f"MainPID {pid} -> {after['MainPID'] if after else 'none'}, NRestarts "
                        f"{before['NRestarts']} -> {after['NRestarts'] if after else '?'}, "
                        f"journal names the watchdog: {'Watchdog timeout' in log}", "unit failed")


def clean_stop(report: Report, unit: str, key: str) -> bool:
    wait_for(lambda: running(unit), START_LIMIT_S)
    rc, _ = sh("systemctl", "stop", unit)
    p = show(unit, "ActiveState", "Result", "ExecMainCode", "ExecMainStatus")
    ok = (rc == 0 and p["ActiveState"] == "inactive" and p["Result"] == "success"
          and p["ExecMainStatus"] == "0")
    return report.check(f"{key}_clean_stop", ok, str(p), "unit failed")


def j1939_socket() -> socket.socket:
    """A promiscuous CAN_J1939 socket: the kernel's J1939 stack hands it every message."""
    sock = socket.socket(socket.PF_CAN, socket.SOCK_DGRAM, socket.CAN_J1939)
    sock.setsockopt(SOL_CAN_J1939, SO_J1939_PROMISC, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
    sock.bind((IFACE, socket.J1939_NO_NAME, socket.J1939_NO_PGN, 0xF9))
    return sock


def powertrain(report: Report) -> bool:
    """``--network powertrain`` through the env file; the four claims through CAN_J1939."""
    env = Path(f"/etc/ecu-sim/{IFACE}.env")
    env.write_text(env.read_text() + POWERTRAIN_ENV)
    sock = j1939_socket()
    sh("systemctl", "start", ECU)
    claimed: dict[int, int] = {}
    end = time.monotonic() + START_LIMIT_S
    asked = False
    while time.monotonic() < end and set(claimed) != set(POWERTRAIN):
        if not asked and running(ECU):
            # also ask every node for its claim, in case one was sent before the socket listened
            sock.sendto(CLAIM_PGN.to_bytes(3, "little"), (IFACE, socket.J1939_NO_NAME, 0xEA00, 0xFF))
            asked = True
        sock.settimeout(1.0)
        try:
            data, (_, name, pgn, source) = sock.recvfrom(1785)
        except TimeoutError:
            continue
        if pgn == CLAIM_PGN and source in POWERTRAIN:
            claimed[source] = name or int.from_bytes(data[:8], "little")
    seen = ", ".join(f"{POWERTRAIN[a]} 0x{a:02X} NAME {n:016X}" for a, n in sorted(claimed.items()))
    ok = report.check("powertrain_claims_via_can_j1939", set(claimed) == set(POWERTRAIN),
                      seen or "no claim", "network not seen")
    if ok:
        measure_powertrain_cpu(report, sock)
    sock.close()
    return ok


def measure_powertrain_cpu(report: Report, sock: socket.socket) -> None:
    """CPU per tick of the powertrain at 10 ms: EEC1 from the engine every few ticks (its DBC
    cycle over the period)."""
    cycle_ms = builtin_dbc("j1939").get_message_by_name("EEC1").cycle_time
    ticks_per_eec1 = cycle_ms / 10.0
    pid = int(show(ECU, "MainPID")["MainPID"])
    sock.setblocking(False)
    try:  # forget what waited in the queue: only this window's EEC1 count
        while sock.recv(1785):
            pass
    except BlockingIOError:
        pass
    before, eec1, end = cpu_s(pid), 0, time.monotonic() + CPU_WINDOW_S
    sock.settimeout(0.5)
    while time.monotonic() < end:
        try:
            _, (_, _, pgn, source) = sock.recvfrom(1785)
        except TimeoutError:
            continue
        eec1 += pgn == EEC1_PGN and source == 0x00
    spent = cpu_s(pid) - before
    if eec1:
        ticks = eec1 * ticks_per_eec1
        report.figure("powertrain_10ms_cpu_ms_per_tick", round(1000 * spent / ticks, 2))
        report.figure("powertrain_10ms_ticks_per_s", round(ticks / CPU_WINDOW_S, 1))
    report.figure("powertrain_status", show(ECU, "StatusText")["StatusText"])


def uds(sock: socket.socket, request: str) -> bytes:
    """One UDS request (hex) through the kernel's ISO-TP; the final answer (past 0x78 pending)."""
    sock.send(bytes.fromhex(request))
    while True:
        answer = sock.recv(4095)
        if not (len(answer) == 3 and answer[0] == NEGATIVE and answer[2] == PENDING):
            return answer


def reflash(sock: socket.socket, data: bytes) -> str | None:
    """The engine reprogrammed with ``data`` as a tester does it; None, or the step that failed."""
    from ecu_sim.uds.security import default_key

    steps = [("1003", "5003"), ("1002", "5002")]
    for request, positive in steps:
        if not (answer := uds(sock, request)).hex().startswith(positive):
            return f"{request} -> {answer.hex()}"
    seed = uds(sock, "2701")
    if seed[:2] != b"\x67\x01":
        return f"2701 -> {seed.hex()}"
    size = len(data).to_bytes(4, "big").hex()
    for request, positive in ((f"2702{default_key(seed[2:], 1).hex()}", "6702"), ("3101ff00", "7101ff00"),
                              (f"34004400080000{size}", "74"), (f"3601{data.hex()}", "7601"), ("37", "77"),
                              ("3101ff01", "7101ff01"), ("1101", "5101")):
        if not (answer := uds(sock, request)).hex().startswith(positive):
            return f"{request[:16]} -> {answer.hex()}"
    return None


def reflash_kept(report: Report) -> bool:
    """An image downloaded into the powertrain's engine through the service (kernel ISO-TP, the
    default key) runs after the reset and is still the engine's after a restart of the unit."""
    from ecu_sim.calibration.files import read_image

    env = Path(f"/etc/ecu-sim/{IFACE}.env")
    env.write_text(env.read_text() + REFLASH_ENV)
    path = report.payload / "slow.s19"
    rc, out = sh(VENV_PYTHON, "-m", "ecu_sim", "calibration", "build", "--node", "engine", "--id", REFLASH_ID,
                 "--set", f"road_speed_limit_kph={REFLASH_LIMIT_KPH}", "-o", str(path))
    if not report.check("reflash_image_built", rc == 0, out.strip()[-160:], "reflash failed"):
        return False
    image = read_image(path, "engine")
    sh("systemctl", "start", ECU)
    sock = socket.socket(socket.PF_CAN, socket.SOCK_DGRAM, socket.CAN_ISOTP)
    sock.bind((IFACE, FROM_ENGINE | CAN_EFF_FLAG, TO_ENGINE | CAN_EFF_FLAG))
    sock.settimeout(20.0)
    try:
        first = wait_for(lambda: running(ECU), START_LIMIT_S)
        start = time.monotonic()
        try:
            failed = reflash(sock, image.data) if first else "the unit did not start"
        except TimeoutError:
            failed = "the engine did not answer within 20 s"
        report.figure("reflash_session_to_reset_answered_s", round(time.monotonic() - start, 2))
        if not report.check("reflash_through_the_service", failed is None,
                            failed or f"{REFLASH_ID} downloaded", "reflash failed"):
            return False
        sh("systemctl", "restart", ECU)
        wait_for(lambda: running(ECU, not_pid=int(first["MainPID"])), START_LIMIT_S)
        reported = wait_for(partial(_identified, sock), START_LIMIT_S)
        expected = (REFLASH_ID, image.cvn)
        return report.check("reflash_kept_across_a_restart", reported == expected,
                            f"after the restart: {_shown(reported)}, the image's {_shown(expected)}",
                            "reflash not kept")
    finally:
        sock.close()


def _shown(identified: tuple[str, int] | None) -> str:
    return "no answer" if identified is None else f"{identified[0]!r} CVN 0x{identified[1]:08X}"


def _identified(sock: socket.socket) -> tuple[str, int] | None:
    """The engine's calibration ID and CVN (F182, F1A0), or None while it does not answer."""
    try:
        cal_id, cvn = uds(sock, "22f182"), uds(sock, "22f1a0")
    except TimeoutError:
        return None
    if cal_id[:3] != b"\x62\xf1\x82" or cvn[:3] != b"\x62\xf1\xa0":
        return None
    return cal_id[3:].rstrip(b"\0").decode("ascii", "replace"), int.from_bytes(cvn[3:7], "big")


def board_modules(report: Report) -> bool:
    """The boards' CAN drivers are in the kernel (c_can on a BeagleBone, mcp251x on a Pi HAT)."""
    found = {}
    for module in ("c_can", "c_can_platform", "mcp251x", "can_j1939", "vcan"):
        rc, _ = sh("modinfo", "-F", "filename", module)
        found[module] = rc == 0
    rc, _ = sh("modprobe", "c_can_platform")
    return report.check("board_can_modules", all(found.values()) and rc == 0,
                        f"modinfo: {found}; modprobe c_can_platform exit {rc}", "modules missing")


def installed_checks(report: Report) -> None:
    units_ready(report) and loop_closes(report) and watchdog_restarts(report)
    clean_stop(report, CCM, "ccm")
    clean_stop(report, ECU, "ecu")
    powertrain(report) and clean_stop(report, ECU, "powertrain")
    reflash_kept(report) and clean_stop(report, ECU, "reflash")
    board_modules(report)


def main() -> None:
    payload = Path(sys.argv[1])
    report = Report(payload)
    if len(sys.argv) > 2:  # phase 2: the results of phase 1 come along
        previous = json.loads((payload / "results.json").read_text())
        report.checks, report.figures = previous["checks"], previous["figures"]
    try:
        if len(sys.argv) == 2:
            if install(report):
                report.write()
                os.execv(VENV_PYTHON, [VENV_PYTHON, __file__, str(payload), "installed"])
        else:
            installed_checks(report)
    except Exception as exc:  # report, not hang: the host sees a failed check
        report.check("checks_completed", False, f"{type(exc).__name__}: {exc}", "checks crashed")
    finally:
        _, journal = sh("journalctl", "-b", "--no-pager", "-o", "short-monotonic")
        (payload / "journal.txt").write_text(journal)
        report.write()


if __name__ == "__main__":
    main()
