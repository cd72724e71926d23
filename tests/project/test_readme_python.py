"""README's python-can example is true: run as written, it drives a real ecu-sim on the default bus.

The example names ecu-sim's default group and port; the test moves it to a bus of its own (the
default one may be in use on this host) on a machine of its own (a network namespace: the
example, with python-can's defaults, also sends to its LAN), and checks first that what it names
are the defaults.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest

from ecu_sim.bus.hostlocal import DEFAULT_PORT
from ecu_sim.bus.options import DEFAULT_CHANNEL
from tests.conftest import HANG_S, REPO, Node, Udp, clean_env, first_line
from tests.project.test_readme_commands import fenced_blocks

README = REPO / "README.md"


def python_can_example() -> str:
    """The README's one Python block that opens a python-can bus."""
    blocks = [block for block in fenced_blocks(README, README.read_text(encoding="utf-8"))
              if block.info == "python" and any("can.Bus(" in text for _, text in block.lines)]
    assert len(blocks) == 1, f"README has {len(blocks)} python-can examples, the test reads one"
    return "\n".join(text for _, text in blocks[0].lines) + "\n"


def test_the_python_can_example_names_ecu_sims_default_group_and_port() -> None:
    example = python_can_example()
    assert f'channel="{DEFAULT_CHANNEL}"' in example and f"port={DEFAULT_PORT}" in example


@pytest.mark.slow
def test_the_python_can_example_sets_the_ecus_pedal_and_hears_its_speed(
        start: Callable[..., Node], udp: Udp, machine: list[str]) -> None:
    example = python_can_example().replace(DEFAULT_CHANNEL, udp.group)
    example = example.replace(str(DEFAULT_PORT), str(udp.port))
    ecu = start(*udp.args(), inside=machine)
    program = subprocess.Popen([*machine, sys.executable, "-u", "-c", example], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, text=True, env=clean_env())
    try:
        heard = first_line(program)  # the first speed frame it prints
        assert "18fef125" in heard, f"the example printed {heard!r}"
        ecu.wait_for(r"\| APP +40\.0 %")
    finally:
        program.kill()
        program.communicate(timeout=HANG_S)
    assert ecu.stop() == 0, ecu.log
