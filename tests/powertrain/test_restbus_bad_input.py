"""A ``--restbus`` file ecu-sim cannot send is one line that names the file and what is wrong, exit 2,
before the bus opens: the bus given here (a SocketCAN interface that does not exist) would fail
with another message and another status if it were opened first."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import REPO, Cli

RUN = ("-i", "socketcan", "-c", "nosuchcan9", "--vehicle", "class6", "--profile", "j1939",
       "--network", "powertrain", "--duration", "1")
HEADER = 'VERSION ""\nBU_: BODY\n'
CYCLE = ('BA_DEF_ BO_ "GenMsgCycleTime" INT 0 3600000;\nBA_DEF_ BU_ "NmStationAddress" INT 0 255;\n'
         'BA_DEF_DEF_ "GenMsgCycleTime" 0;\nBA_DEF_DEF_ "NmStationAddress" 254;\n')
AMB = 'BO_ 2566845729 AMB: 8 BODY\n SG_ Cab : 8|16@1+ (0.03125,-273) [-273|1735] "degC" Vector__XXX\n'


def run_with(tmp_path: Path, cli_main: Cli, text: str) -> tuple[int, str]:
    dbc = tmp_path / "bad.dbc"
    dbc.write_text(text)
    result = cli_main(*RUN, "--restbus", str(dbc))
    return result.status, result.err.strip()


def test_a_dbc_that_does_not_parse_is_named_with_its_line(tmp_path: Path, cli_main: Cli) -> None:
    status, err = run_with(tmp_path, cli_main, HEADER + AMB + "BO_ oops\n")
    assert status == 2 and len(err.splitlines()) == 1
    assert "bad.dbc" in err and "line 5" in err


def test_a_sending_node_without_a_source_address_is_named(tmp_path: Path, cli_main: Cli) -> None:
    status, err = run_with(tmp_path, cli_main,
                           HEADER + AMB + CYCLE + 'BA_ "GenMsgCycleTime" BO_ 2566845729 1000;\n')
    assert status == 2 and len(err.splitlines()) == 1
    assert "bad.dbc" in err and "node BODY" in err and "NmStationAddress" in err


def test_a_message_with_neither_cycle_time_nor_send_type_is_named(tmp_path: Path, cli_main: Cli) -> None:
    status, err = run_with(tmp_path, cli_main,
                           HEADER + AMB + CYCLE + 'BA_ "NmStationAddress" BU_ BODY 33;\n')
    assert status == 2 and len(err.splitlines()) == 1
    assert "bad.dbc" in err and "message AMB" in err and "GenMsgCycleTime" in err


def test_a_signal_that_does_not_fit_its_message_is_named(tmp_path: Path, cli_main: Cli) -> None:
    status, err = run_with(tmp_path, cli_main, HEADER + AMB.replace("8|16@1+", "60|16@1+"))
    assert status == 2 and len(err.splitlines()) == 1
    assert "bad.dbc" in err and "signal Cab" in err and "message AMB" in err


def test_a_restbus_needs_the_powertrain_network(cli_main: Cli) -> None:
    result = cli_main("-i", "socketcan", "-c", "nosuchcan9", "--vehicle", "class6", "--profile", "j1939",
                      "--restbus", str(REPO / "examples" / "restbus" / "cluster.dbc"))
    assert result.status == 2 and "--restbus needs --network powertrain" in result.err

