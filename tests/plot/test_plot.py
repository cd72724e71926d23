"""``ecu-sim plot FILE -o OUT.png``: a picture of any run, whose lines are the input's values."""

from __future__ import annotations

import json
import math
from pathlib import Path

import can
import numpy
import pytest
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from mcap.reader import make_reader

from ecu_sim.codec.profile import Profile
from ecu_sim.plot.figure import draw
from ecu_sim.plot.series import load_series, merge
from tests.conftest import Cli
from tests.helpers.busclock import Peer, peer
from tests.runs.test_replay import record

__all__ = ["peer"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def line(figure: Figure, label: str) -> Line2D:
    """The line drawn for ``label`` (speed, APP, grade ...)."""
    found = [ln for ax in figure.axes for ln in ax.get_lines() if ln.get_label() == label]
    assert len(found) == 1, [ln.get_label() for ax in figure.axes for ln in ax.get_lines()]
    return found[0]


def ydata(figure: Figure, label: str) -> list[float]:
    return [float(y) for y in numpy.asarray(line(figure, label).get_ydata(), dtype=float)]


def xdata(figure: Figure, label: str) -> list[float]:
    return [float(x) for x in numpy.asarray(line(figure, label).get_xdata(), dtype=float)]


def plotted(cli_main: Cli, path: Path, *options: str) -> Figure:
    """Plot ``path`` through the command line (a PNG must come out), and the figure it draws."""
    out = path.with_suffix(".png")
    result = cli_main("plot", str(path), "-o", str(out), *options)
    assert result.status == 0, result.err
    assert out.read_bytes().startswith(PNG_MAGIC)
    x = options[options.index("--x") + 1] if "--x" in options else "time"
    return draw(load_series(str(path)), x)


def test_a_simulation_csv_is_plotted_column_for_column(cli_main: Cli, tmp_path: Path) -> None:
    csv = tmp_path / "run.csv"
    assert cli_main("simulate", "--duration", "30", "--out", str(csv)).status == 0
    rows = [[float(v) for v in row.split(",")] for row in csv.read_text().splitlines()[1:]]
    figure = plotted(cli_main, csv)
    t, speed, app, grade, _ = (list(column) for column in zip(*rows, strict=True))
    assert xdata(figure, "speed") == t
    assert (ydata(figure, "speed"), ydata(figure, "APP"), ydata(figure, "grade")) == (speed, app, grade)


def test_over_distance_the_x_axis_is_the_distance_driven(cli_main: Cli, tmp_path: Path) -> None:
    csv = tmp_path / "run.csv"
    assert cli_main("simulate", "--duration", "30", "--out", str(csv)).status == 0
    distance = [float(row.split(",")[4]) for row in csv.read_text().splitlines()[1:]]
    figure = plotted(cli_main, csv, "--x", "distance")
    assert xdata(figure, "speed") == distance and figure.axes[-1].get_xlabel() == "distance [m]"


def test_a_recording_is_plotted_as_its_replayed_node_sent_and_received_it(
        cli_main: Cli, peer: Peer, tmp_path: Path) -> None:
    log = tmp_path / "ecu.log"
    assert cli_main(*peer.args, "--duration", "4", "--record", str(log), "--fault", "silent@1+1").status == 0
    figure = plotted(cli_main, log)
    profile = Profile.load("amp")
    frames = list(can.LogReader(str(log)))
    sent = [bytes(m.data) for m in frames if not m.is_rx]
    speeds = ydata(figure, "speed")
    # each plotted speed is the model's, which encodes to the recorded frame of its tick
    unsent = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19}  # silent@1+1: ticks 1.0 .. 1.9 s send nothing
    assert [profile.speed.encode(v) for k, v in enumerate(speeds) if k not in unsent] == sent
    assert len(speeds) == 40
    fault_spans = [p for p in figure.axes[0].patches if str(p.get_label()).startswith("fault")]
    assert [p.get_label() for p in fault_spans] == ["fault silent@1-2"]


def test_the_overdue_ticks_of_a_recording_are_marked_late(tmp_path: Path) -> None:
    record(tmp_path / "ecu.log", stalls={10: 0.25, 30: 0.52})
    journal = (tmp_path / "ecu.log.ticks").read_text().splitlines()[1:]
    overdue = [round(k * 0.1, 9) for k, entry in enumerate(journal) if entry.endswith("s")]
    figure = draw(load_series(str(tmp_path / "ecu.log")))
    assert xdata(figure, "late tick") == overdue and len(overdue) == 7


def test_an_mcap_recording_is_plotted_from_its_ticks(cli_main: Cli, peer: Peer, tmp_path: Path) -> None:
    path = tmp_path / "ecu.mcap"
    assert cli_main(*peer.args, "--duration", "4", "--record", str(path)).status == 0
    with path.open("rb") as handle:
        ticks = [json.loads(m.data) for _, _, m in make_reader(handle).iter_messages(topics=["/ticks"])]
    figure = plotted(cli_main, path)
    assert xdata(figure, "speed") == [t["loop"]["t_s"] for t in ticks]
    assert ydata(figure, "speed") == [t["ecu"]["state"]["speed_kph"] for t in ticks]
    assert ydata(figure, "APP") == [t["ecu"]["state"]["app_pct"] for t in ticks]
    assert ydata(figure, "grade") == [t["ecu"]["state"]["grade_pct"] for t in ticks]


def test_a_ccm_recording_plots_the_set_speed(cli_main: Cli, peer: Peer, tmp_path: Path) -> None:
    peer.role = "speed"
    path = tmp_path / "ccm.mcap"
    result = cli_main("ccm", *peer.args, "--duration", "2", "--set-speed", "85", "--record", str(path))
    assert result.status == 0, result.err
    figure = plotted(cli_main, path)
    assert ydata(figure, "set speed") == [85.0] * 20


@pytest.mark.parametrize(("content", "name", "message"), [
    ("t,v\n1,2\n", "run.csv", "not a simulate --out CSV: line 1 must name the columns t_s and speed_kph"),
    ("t_s,speed_kph\n0,80\n0.1,fast\n", "run.csv", "run.csv, line 3: expected numbers"),
    ("hello", "run.txt", "cannot plot this file"),
    ("(not a log)", "ecu.log", "cannot read the tick journal"),
    ("not mcap", "ecu.mcap", "cannot be read as MCAP"),
])
def test_a_bad_input_file_exits_2_saying_what_is_wrong(
        cli_main: Cli, tmp_path: Path, content: str, name: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    result = cli_main("plot", str(path), "-o", str(tmp_path / "out.png"))
    assert result.status == 2 and message in result.err and not (tmp_path / "out.png").exists()


def test_a_missing_input_file_exits_2_naming_it(cli_main: Cli, tmp_path: Path) -> None:
    result = cli_main("plot", str(tmp_path / "none.csv"), "-o", str(tmp_path / "out.png"))
    assert result.status == 2 and f"cannot read {tmp_path / 'none.csv'}" in result.err


def test_distance_on_a_ccm_recording_exits_2(cli_main: Cli, peer: Peer, tmp_path: Path) -> None:
    peer.role = "speed"
    path = tmp_path / "ccm.mcap"
    assert cli_main("ccm", *peer.args, "--duration", "1", "--record", str(path)).status == 0
    result = cli_main("plot", str(path), "-o", str(tmp_path / "out.png"), "--x", "distance")
    assert result.status == 2 and "--x distance needs the truck's distance" in result.err


def test_a_second_file_adds_what_the_first_lacks_at_the_same_time(
        cli_main: Cli, peer: Peer, tmp_path: Path) -> None:
    csv, ccm = tmp_path / "run.csv", tmp_path / "ccm.mcap"
    assert cli_main("simulate", "--duration", "2", "--out", str(csv)).status == 0
    peer.role = "speed"
    ran = cli_main("ccm", *peer.args, "--duration", "1", "--set-speed", "85", "--record", str(ccm))
    assert ran.status == 0, ran.err
    out = tmp_path / "both.png"
    result = cli_main("plot", str(csv), str(ccm), "-o", str(out))
    assert result.status == 0, result.err
    figure = draw(merge(load_series(str(csv)), load_series(str(ccm))))
    set_speed = ydata(figure, "set speed")
    # the CCM ran for the first second (ticks 0..9) of the simulation's two
    assert set_speed[:10] == [85.0] * 10 and all(math.isnan(v) for v in set_speed[10:])
    assert ydata(figure, "speed") == [float(r.split(",")[1]) for r in csv.read_text().splitlines()[1:]]


def test_brake_gear_and_engine_speed_are_drawn_when_the_input_has_them(cli_main: Cli, tmp_path: Path) -> None:
    csv = tmp_path / "run.csv"
    rows = [(k / 10, 80 + k, 30.0, 5.0 * (k % 2), 0.5, k * 2.0, 6 + k % 3, 1400 + 10 * k) for k in range(12)]
    csv.write_text("t_s,speed_kph,app_pct,brake_pct,grade_pct,distance_m,gear,engine_speed_rpm\n"
                   + "".join(",".join(str(v) for v in row) + "\n" for row in rows))
    figure = plotted(cli_main, csv)
    columns = [list(map(float, column)) for column in zip(*rows, strict=True)]
    assert ydata(figure, "brake") == columns[3]
    assert (ydata(figure, "gear"), ydata(figure, "engine speed")) == (columns[6], columns[7])
