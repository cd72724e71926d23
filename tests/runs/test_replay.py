"""Recording and replay: a recorded run replays bit for bit; a replay finds the first tick that differs."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import can
import cantools
import pytest

from ecu_sim.codec.profile import Profile
from ecu_sim.faults.injector import FaultInjector
from ecu_sim.runs import replay
from ecu_sim.runtime.clock import Inputs, VirtualClock
from tests.conftest import Cli, Node, Udp, summary_of
from tests.helpers.nodebench import Bench

UNRELATED_ID = 0x18FEEE00


class ArrivingClock(VirtualClock):
    """Virtual time in which the bench's frames arrive while the loop waits, with stalls.

    ``arrive(wait)`` is called during each wait; at the waits in ``stalls`` the process loses
    that many seconds, as a preempted process would, so the loop runs overdue ticks unsent.
    """

    def __init__(self, stalls: dict[int, float] | None = None) -> None:
        super().__init__()
        self.stalls = stalls or {}
        self.waits = 0
        self.arrive: Callable[[int], None] = lambda wait: None

    def wait_until(self, deadline: float, inputs: Inputs) -> None:
        super().wait_until(deadline, inputs)
        self.arrive(self.waits)
        self._now += self.stalls.get(self.waits, 0.0)
        self.waits += 1


def record(path: Path, kind: str = "ecu", ticks: int = 60, faults: tuple[str, ...] = (),
           stalls: dict[int, float] | None = None, max_bytes: int = 0) -> Bench:
    """A recorded run with changing input and bad frames of several kinds among it."""
    clock = ArrivingClock(stalls)
    bench = Bench(kind, faults=faults, seed=5, clock=clock, record_to=str(path), record_max_bytes=max_bytes)

    def arrive(wait: int) -> None:
        bench.send_value((wait * 7) % 100 if kind == "ecu" else 80.0 + wait % 20)
        if wait % 3 == 0:
            bench.send_raw(can.Message(arbitration_id=UNRELATED_ID, data=bytes([wait % 256]) * 8))
        if wait % 10 == 4:
            bench.send(bytes.fromhex("FFFFFFFFFFFFFFFF"))  # not available: missing at once
        if wait % 10 == 7:
            bench.send_raw(can.Message(arbitration_id=0x080, is_error_frame=True, is_extended_id=False))
        if wait % 10 == 8:
            bench.send(b"\xff\xff")  # too short

    clock.arrive = arrive
    bench.tick(ticks)
    bench.close()
    return bench


@pytest.mark.parametrize("suffix", [".log", ".asc", ".blf"])
def test_an_ecu_recording_replays_bit_for_bit_in_each_format(tmp_path: Path, suffix: str) -> None:
    record(tmp_path / f"ecu{suffix}")
    result = replay.replay(str(tmp_path / f"ecu{suffix}"))
    assert result.identical and (result.ticks, result.frames) == (60, 60)


def test_a_ccm_recording_with_random_drops_replays_bit_for_bit(tmp_path: Path) -> None:
    bench = record(tmp_path / "ccm.log", kind="ccm", faults=("drop=0.3", "offset=2@2-3"))
    result = replay.replay(str(tmp_path / "ccm.log"))
    injector = bench.built.faults
    assert isinstance(injector, FaultInjector) and injector.injected["drop"] > 10
    assert result.identical and result.frames == 60 - injector.injected["drop"]


def test_a_run_with_overdue_ticks_replays_them_unsent_as_recorded(tmp_path: Path) -> None:
    bench = record(tmp_path / "ecu.log", stalls={10: 0.25, 30: 0.52})
    journal = (tmp_path / "ecu.log.ticks").read_text().splitlines()[1:]
    result = replay.replay(str(tmp_path / "ecu.log"))
    assert bench.loop.stats.skipped == 7 and sum(line.endswith("s") for line in journal) == 7
    assert result.identical and result.frames == 60 - 7


def test_a_rotated_recording_replays_across_its_files(tmp_path: Path) -> None:
    record(tmp_path / "ecu.log", ticks=200, max_bytes=2000)
    parts = sorted(p.name for p in tmp_path.glob("ecu_*#*.log"))
    result = replay.replay(str(tmp_path / "ecu.log"))
    assert len(parts) >= 3
    assert result.identical and result.frames == 200


def test_a_changed_output_frame_is_reported_at_its_tick(tmp_path: Path, cli_main: Cli) -> None:
    record(tmp_path / "ecu.log")
    log = tmp_path / "ecu.log"
    lines = log.read_text().splitlines()
    sent = [i for i, line in enumerate(lines) if line.endswith(" T")]
    lines[sent[42]] = re.sub(r"#(\w+) T$", "#FFFFFFFFFF0050FF T", lines[sent[42]])  # 80 km/h
    log.write_text("\n".join(lines) + "\n")
    result = cli_main("replay", str(log))
    assert result.status == 1
    assert ("differs at tick 42 (t = 4.2 s): recorded 18FEF125#FFFFFFFFFF0050FF, replayed 18FEF125#"
            in result.err)


def test_a_changed_input_frame_changes_the_replayed_output_from_that_tick(tmp_path: Path) -> None:
    record(tmp_path / "ecu.log")
    log = tmp_path / "ecu.log"
    lines = log.read_text().splitlines()
    app = [i for i, line in enumerate(lines) if "18F00326#FFFFFFFFFFFF" in line and line.endswith(" R")
           and not line.endswith("FFFF R")]
    lines[app[30]] = re.sub(r"#FFFFFFFFFFFF(\w\w)FF R$", "#FFFFFFFFFFFFE1FF R", lines[app[30]])  # 100 %
    log.write_text("\n".join(lines) + "\n")
    difference = replay.replay(str(log)).difference
    assert difference is not None and difference.tick == 30


def test_which_tick_a_frame_fell_before_is_part_of_the_recording(tmp_path: Path) -> None:
    record(tmp_path / "ecu.log")
    journal, log = tmp_path / "ecu.log.ticks", tmp_path / "ecu.log"
    lines, frames = journal.read_text().splitlines(), log.read_text().splitlines()
    counts = [[int(n) for n in line.split()] for line in lines[1:23]]
    # The last frame received before tick 20 moves behind its sent one: the same frames, in the
    # log and in the journal, but the frame now falls before tick 21.
    last = sum(rx + tx for rx, tx in counts[:20]) + counts[20][0] - 1
    assert frames[last].endswith(" R") and frames[last + 1].endswith(" T")
    frames[last], frames[last + 1] = frames[last + 1], frames[last]
    (rx, tx), (rx_next, tx_next) = counts[20], counts[21]
    lines[1 + 20], lines[1 + 21] = f"{rx - 1} {tx}", f"{rx_next + 1} {tx_next}"
    journal.write_text("\n".join(lines) + "\n")
    log.write_text("\n".join(frames) + "\n")
    moved = replay.replay(str(log))
    assert moved.mismatch is None
    assert moved.difference is not None and moved.difference.tick == 20


def test_the_recording_is_readable_by_cantools_with_the_projects_dbc(tmp_path: Path) -> None:
    record(tmp_path / "ecu.log")
    speed = Profile.load("amp").speed.message  # the cantools message from the project's DBC
    with (tmp_path / "ecu.log").open() as log:
        frames = [frame for frame in cantools.logreader.Parser(log)
                  if frame is not None and frame.frame_id == speed.frame_id]
    speeds = [speed.decode(frame.data)["WheelBasedVehicleSpeed"] for frame in frames]  # type: ignore[call-overload]
    assert len(speeds) == 60 and speeds[0] == 80.0
    assert all(isinstance(s, float) and 70.0 < s < 90.0 for s in speeds)


# -- recordings of real runs -------------------------------------------------------------------------


@pytest.mark.slow
def test_a_recorded_closed_loop_of_two_processes_stopped_by_sigterm_replays_bit_for_bit(
        tmp_path: Path, start: Callable[..., Node], udp: Udp, cli_main: Cli) -> None:
    """Both stopped by SIGTERM, so both recordings must be flushed and complete: every tick replays."""
    ecu_log, ccm_log = tmp_path / "ecu.blf", tmp_path / "ccm.log"
    ecu = start(*udp.args(), "--record", str(ecu_log))
    ccm = start("ccm", *udp.args(), "--record", str(ccm_log), "--fault", "drop=0.1")
    ccm.wait_for(r"\| cruise on \|")  # the CCM hears the ECU ...
    ecu.wait_for(r"\| APP +\d")  # ... and the ECU the CCM
    assert (ccm.stop(), ecu.stop()) == (0, 0), ecu.log + ccm.log
    for log, node in ((ecu_log, ecu), (ccm_log, ccm)):
        run = summary_of(node.log)
        result = cli_main("replay", str(log))
        assert result.status == 0, result.err
        assert f"replayed {run.ticks} ticks" in result.out, (result.out, run.line)
        assert f": {run.tx} frames sent bit for bit as recorded" in result.out, (result.out, run.line)


def test_a_run_ended_by_its_duration_leaves_a_complete_recording(
        tmp_path: Path, cli_main: Cli, virtual_time: None, virtual_channel: str) -> None:
    log = tmp_path / "ecu.asc"
    result = cli_main("-i", "virtual", "-c", virtual_channel, "--record", str(log), "--duration", "2")
    assert result.status == 0, result.err
    replayed = cli_main("replay", str(log))
    assert replayed.status == 0 and "replayed 20 ticks (2.0 s)" in replayed.out


# -- the log must be the one its tick journal was written with -----------------------------------

def recorded_with_echoes(path: Path) -> list[str]:
    """A recorded ECU that hears each frame it sends back as a received echo (udp_multicast does)."""
    bench = Bench("ecu", record_to=str(path), echo=True)
    bench.tick(10)
    bench.close()
    return path.read_text().splitlines()


def sent_line(path: Path, tick: int) -> int:
    """The index in the .log at ``path`` of the first frame the journal says ``tick`` sent."""
    ticks = [line.split() for line in Path(f"{path}.ticks").read_text().splitlines()[1:]
             if not line.startswith(("part ", "end "))]
    assert int(ticks[tick][1]) >= 1
    return sum(int(rx) + int(tx) for rx, tx, *_ in ticks[:tick]) + int(ticks[tick][0])


def test_a_sent_frame_deleted_from_the_log_fails_at_its_tick(tmp_path: Path, cli_main: Cli) -> None:
    log = tmp_path / "ecu.log"
    lines = recorded_with_echoes(log)
    index = sent_line(log, 2)
    assert lines[index].endswith(" T") and not any(line.endswith(" R") for line in lines)  # echoes not twice
    del lines[index]
    log.write_text("\n".join(lines) + "\n")
    result = cli_main("replay", str(log))
    assert result.status == 1, result.out
    assert "at tick 2 (t = 0.2 s)" in result.err


def test_a_sent_frame_marked_received_fails_at_its_tick(tmp_path: Path, cli_main: Cli) -> None:
    log = tmp_path / "ecu.log"
    lines = recorded_with_echoes(log)
    index = sent_line(log, 3)
    lines[index] = lines[index][:-1] + "R"
    log.write_text("\n".join(lines) + "\n")
    result = cli_main("replay", str(log))
    assert result.status == 1, result.out
    assert "does not fit its tick journal at tick 3 (t = 0.3 s)" in result.err
    assert "a sent frame is missing from the log or marked received" in result.err


def test_a_received_frame_marked_sent_fails_at_its_tick(tmp_path: Path, cli_main: Cli) -> None:
    record(tmp_path / "ecu.log")
    log = tmp_path / "ecu.log"
    lines = log.read_text().splitlines()
    index = sent_line(log, 6) - 1  # the last frame received before tick 6
    assert lines[index].endswith(" R")
    lines[index] = lines[index][:-1] + "T"
    log.write_text("\n".join(lines) + "\n")
    result = cli_main("replay", str(log))
    assert result.status == 1, result.out
    assert "at tick 6 (t = 0.6 s)" in result.err and "is marked sent where a received" in result.err


def test_a_log_cut_short_of_its_journal_fails_at_the_first_tick_it_lacks(
        tmp_path: Path, cli_main: Cli) -> None:
    record(tmp_path / "ecu.log")
    log = tmp_path / "ecu.log"
    lines = log.read_text().splitlines()
    log.write_text("\n".join(lines[:sent_line(log, 40)]) + "\n")  # tick 40's sent frame and on lost
    result = cli_main("replay", str(log))
    assert result.status == 1, result.out
    assert "at tick 40 (t = 4.0 s): the log ends before the tick's frames" in result.err
    assert "the 40 frames before it are identical" in result.err


def test_frames_left_after_the_journals_last_tick_fail(tmp_path: Path, cli_main: Cli) -> None:
    record(tmp_path / "ecu.log")
    log = tmp_path / "ecu.log"
    lines = log.read_text().splitlines()
    assert (tmp_path / "ecu.log.ticks").read_text().splitlines()[-1] == "end 0"
    lines.append(lines[-2])  # one more received frame
    assert lines[-1].endswith(" R")
    log.write_text("\n".join(lines) + "\n")
    result = cli_main("replay", str(log))
    assert result.status == 1, result.out
    assert "at tick 60 (t = 6.0 s): the log has frames left after the journal's last tick" in result.err


def test_a_damaged_blf_file_is_not_a_recording_and_names_the_file(tmp_path: Path, cli_main: Cli) -> None:
    record(tmp_path / "ecu.blf")
    blf = tmp_path / "ecu.blf"
    data = bytearray(blf.read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside the compressed frames
    blf.write_bytes(bytes(data))
    result = cli_main("replay", str(blf))
    assert result.status == 2, result.err
    assert re.search(rf"error: {re.escape(str(blf))}: frame \d+ cannot be read", result.err), result.err
    assert "record the run again" in result.err and "Traceback" not in result.err


def test_a_bad_hex_byte_in_a_log_is_not_a_recording_and_names_the_frame(
        tmp_path: Path, cli_main: Cli) -> None:
    record(tmp_path / "ecu.log")
    log = tmp_path / "ecu.log"
    lines = log.read_text().splitlines()
    lines[10] = re.sub(r"#(\w\w)", "#G1", lines[10], count=1)
    log.write_text("\n".join(lines) + "\n")
    result = cli_main("replay", str(log))
    assert result.status == 2, result.err
    assert f"{log}: frame 11 cannot be read (ValueError" in result.err
    assert "Traceback" not in result.err


# -- the class6 truck --------------------------------------------------------------------------------


def test_a_class6_ecu_recording_with_its_engine_frames_replays_bit_for_bit(
        tmp_path: Path, cli_main: Cli, virtual_time: None, virtual_channel: str) -> None:
    log = tmp_path / "class6.log"
    result = cli_main("-i", "virtual", "-c", virtual_channel, "--vehicle", "class6", "--profile", "j1939",
                      "--route", "appendix-d", "--initial-speed", "60", "--record", str(log),
                      "--duration", "3")
    assert result.status == 0, result.err
    replayed = cli_main("replay", str(log))
    assert replayed.status == 0, replayed.err
    # 30 ticks; speed, EEC1 and ETC2 from the end of the claim on, the claim and a DM1 before it
    assert "replayed 30 ticks (3.0 s)" in replayed.out and "bit for bit as recorded" in replayed.out
    sent = re.search(r": (\d+) frames sent bit for bit", replayed.out)
    assert sent is not None and int(sent[1]) > 3 * 27


def elevation_route(path: Path, top_m: float) -> Path:
    path.write_text("distance_m,elevation_m\n0,0\n500," + f"{top_m}\n1000,0\n")
    return path


def record_class6_on(route: Path, log: Path, cli_main: Cli, channel: str) -> None:
    result = cli_main("-i", "virtual", "-c", channel, "--vehicle", "class6", "--route", str(route),
                      "--record", str(log), "--duration", "2")
    assert result.status == 0, result.err


def test_a_class6_recording_replays_on_its_route_file_read_again(
        tmp_path: Path, cli_main: Cli, virtual_time: None, virtual_channel: str) -> None:
    record_class6_on(elevation_route(tmp_path / "hill.csv", 30.0), tmp_path / "hill.log", cli_main,
                     virtual_channel)
    replayed = cli_main("replay", str(tmp_path / "hill.log"))
    assert replayed.status == 0 and "replayed 20 ticks" in replayed.out


def test_a_class6_recording_whose_route_file_is_gone_exits_2_naming_it(
        tmp_path: Path, cli_main: Cli, virtual_time: None, virtual_channel: str) -> None:
    route = elevation_route(tmp_path / "hill.csv", 30.0)
    record_class6_on(route, tmp_path / "hill.log", cli_main, virtual_channel)
    route.unlink()
    replayed = cli_main("replay", str(tmp_path / "hill.log"))
    assert replayed.status == 2 and "recorded on the route" in replayed.err and "hill.csv" in replayed.err


def test_a_class6_recording_whose_route_file_changed_warns_that_the_replay_may_differ(
        tmp_path: Path, cli_main: Cli, virtual_time: None, virtual_channel: str) -> None:
    route = elevation_route(tmp_path / "hill.csv", 30.0)
    record_class6_on(route, tmp_path / "hill.log", cli_main, virtual_channel)
    elevation_route(route, 31.0)
    replayed = cli_main("replay", str(tmp_path / "hill.log"))
    assert "is not the route file the recording was made with" in replayed.err


@pytest.mark.slow
def test_a_class6_closed_loop_recorded_on_an_echoing_bus_compares_the_engine_frames_too(
        tmp_path: Path, start: Callable[..., Node], udp: Udp, cli_main: Cli) -> None:
    """udp_multicast hands every frame back: EEC1 and ETC2 must be known as the ECU's own, or
    their echoes are taken for received frames and the replay cannot compare what was sent."""
    ecu_log = tmp_path / "ecu.log"
    class6 = ("--vehicle", "class6", "--profile", "j1939")
    ecu = start(*udp.args(), *class6, "--record", str(ecu_log), "--duration", "3")
    ccm = start("ccm", *udp.args(), *class6, "--duration", "3")
    assert (ecu.wait(), ccm.wait()) == (0, 0), ecu.log + ccm.log
    result = cli_main("replay", str(ecu_log))
    assert result.status == 0, result.err
    compared = re.search(r"(\d+) frames sent bit for bit", result.out)
    assert compared is not None and int(compared[1]) >= 2 * 25, result.out  # speed, EEC1, ETC2 a tick


# -- the testbed truck on a road -----------------------------------------------------------------------


def test_a_testbed_recording_on_an_elevation_route_replays_bit_for_bit_on_its_file_read_again(
        tmp_path: Path, cli_main: Cli, virtual_time: None, virtual_channel: str) -> None:
    """The road is not in the journal as grade points: the file is read again, as for class6."""
    route = elevation_route(tmp_path / "hill.csv", 30.0)
    log = tmp_path / "hill.log"
    result = cli_main("-i", "virtual", "-c", virtual_channel, "--route", str(route), "--record", str(log),
                      "--duration", "5")
    assert result.status == 0, result.err
    head = json.loads(Path(f"{log}.ticks").read_text().splitlines()[0])
    assert head["settings"]["vehicle"]["preset"] == "testbed"
    assert head["route"] is None and head["road_sha256"] is not None
    assert head["settings"]["run"]["grade_file"] == str(route)
    replayed = cli_main("replay", str(log))
    assert replayed.status == 0, replayed.err
    assert "replayed 50 ticks (5.0 s)" in replayed.out and "bit for bit as recorded" in replayed.out
    route.unlink()
    gone = cli_main("replay", str(log))
    assert gone.status == 2 and "recorded on the route" in gone.err and "hill.csv" in gone.err


def test_a_testbed_replay_on_a_changed_road_sends_other_speeds(
        tmp_path: Path, cli_main: Cli, virtual_time: None, virtual_channel: str) -> None:
    """What the replay compares depends on the road: a steeper hill is found, not passed over."""
    route = elevation_route(tmp_path / "hill.csv", 30.0)
    log = tmp_path / "hill.log"
    assert cli_main("-i", "virtual", "-c", virtual_channel, "--route", str(route), "--record", str(log),
                    "--duration", "5").status == 0
    elevation_route(route, 60.0)
    replayed = cli_main("replay", str(log))
    assert "is not the route file the recording was made with" in replayed.err
    assert replayed.status != 0 and "bit for bit as recorded" not in replayed.out


def test_a_ccm_recording_does_not_need_the_ecus_road_file(
        tmp_path: Path, cli_main: Cli, virtual_time: None, virtual_channel: str) -> None:
    route = elevation_route(tmp_path / "hill.csv", 30.0)
    ini = tmp_path / "truck.ini"  # one file for both nodes, as a board's /etc/ecu-sim.ini is
    ini.write_text(f"[vehicle]\npreset = class6\n[run]\ngrade_file = {route}\n")
    log = tmp_path / "ccm.log"
    result = cli_main("ccm", "-i", "virtual", "-c", virtual_channel, "--config", str(ini),
                      "--record", str(log), "--duration", "1")
    assert result.status == 0, result.err
    route.unlink()
    assert cli_main("replay", str(log)).status == 0


def test_a_recording_made_before_the_vehicle_was_recorded_replays_as_the_testbed(
        tmp_path: Path, cli_main: Cli, virtual_time: None, virtual_channel: str) -> None:
    log = tmp_path / "ecu.log"
    assert cli_main("-i", "virtual", "-c", virtual_channel, "--record", str(log),
                    "--duration", "1").status == 0
    journal = Path(f"{log}.ticks")
    head, *rest = journal.read_text().splitlines(keepends=True)
    older = json.loads(head)
    del older["settings"]["vehicle"], older["road_sha256"]
    journal.write_text(json.dumps(older) + "\n" + "".join(rest))
    replayed = cli_main("replay", str(log))
    assert replayed.status == 0 and "bit for bit" in replayed.out


@pytest.mark.parametrize("name", ["sim.log", "sim.mcap"])
def test_a_simulations_recording_of_its_ecu_replays_bit_for_bit_in_simulated_time(
        cli_main: Cli, tmp_path: Path, name: str) -> None:
    if name.endswith(".mcap"):
        pytest.importorskip("mcap", reason="the mcap extra (a board installs only what the ECU needs)")
    path = tmp_path / name
    recorded = cli_main("simulate", "--duration", "5", "--no-progress", "--record", str(path))
    assert recorded.status == 0, recorded.err
    replayed = cli_main("replay", str(path))
    said = replayed.out + replayed.err
    assert replayed.status == 0 and "ECU replayed 50 ticks (5.0 s)" in said and "bit for bit" in said
    if name.endswith(".log"):  # sent frames at their tick's simulated time, not the wall clock's
        assert max(msg.timestamp for msg in can.CanutilsLogReader(str(path))) < 5.0
