"""How ``--restbus`` reads a DBC's timing attributes, whichever tool wrote them."""

from __future__ import annotations

from pathlib import Path

from ecu_sim.codec.restbus_dbc import load_restbus
from tests.powertrain.test_restbus_bad_input import AMB, CYCLE, HEADER


def test_a_send_type_is_read_whatever_its_dbc_tool_capitalised(tmp_path: Path) -> None:
    dbc = tmp_path / "cyclic.dbc"
    dbc.write_text(HEADER + AMB + 'BA_DEF_ BO_ "GenMsgSendType" ENUM "Cyclic","Event";\n' + CYCLE
                   + 'BA_ "NmStationAddress" BU_ BODY 33;\nBA_ "GenMsgCycleTime" BO_ 2566845729 500;\n'
                   + 'BA_ "GenMsgSendType" BO_ 2566845729 0;\n')
    assert load_restbus(str(dbc)).nodes[0].messages[0].cycle_ms == 500
