"""A diagnostic script belongs to the runs in virtual time; a real-time run says it does not hold one."""

from __future__ import annotations

import pytest

from tests.conftest import Cli


def test_a_real_time_run_warns_that_it_does_not_run_a_diagnostic_script(
        cli_main: Cli, virtual_time: None, virtual_channel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ECU_SIM_DIAGNOSTICS_SCRIPT", "reflash.txt")
    result = cli_main("-i", "virtual", "-c", virtual_channel, "--duration", "0.3")
    assert result.status == 0, result.err
    assert "[diagnostics] script reflash.txt is held by a tester in simulate and cosim only" in result.err
