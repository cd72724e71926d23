"""scripts/demo: two runs on one host stay apart, each saying which group and port it is on."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.conftest import HANG_S, REPO, clean_env

pytestmark = pytest.mark.slow


def test_two_demos_on_one_host_never_hear_each_other() -> None:
    demos = [subprocess.Popen([str(REPO / "scripts" / "demo"), "3"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=clean_env()) for _ in range(2)]
    outputs = [demo.communicate(timeout=HANG_S)[0] for demo in demos]
    groups = [re.search(r"^demo: ECU and CCM for 3 s on udp_multicast group (\S+) port (\d+) "
                        r"\(this host only; Ctrl-C ends it\)$",
                        out, re.MULTILINE) for out in outputs]
    assert all(groups), outputs
    assert groups[0].groups() != groups[1].groups()  # type: ignore[union-attr]
    summaries = [line for out in outputs for line in out.splitlines() if "stopped after" in line]
    assert len(summaries) == 4, outputs
    assert not any("foreign" in line for line in summaries), summaries
