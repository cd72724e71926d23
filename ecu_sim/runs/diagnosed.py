"""A run with a scripted tester on its bus (``[diagnostics] script``): the script checked before
anything opens, and the tester built as a node on the run's bus, with its answers' file.

``simulate`` (and so a campaign case) and ``cosim`` both build it from here, after the truck's
nodes and before an attacker, so a script is the same ticks and frames in either.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack

import can

from ecu_sim.bus.port import Port
from ecu_sim.errors import CannotCreateError, ConfigError
from ecu_sim.settings.model import Settings
from ecu_sim.tester.node import TesterNode
from ecu_sim.tester.script import ScriptStep, load_script
from ecu_sim.tester.session import ScriptedSession
from ecu_sim.uds.security import KeyAlgorithm, load_algorithm

#: a script's steps and the key algorithm of its ``unlock``
Loaded = tuple[tuple[ScriptStep, ...], KeyAlgorithm]


def script(settings: Settings, duration_s: float | None) -> Loaded | None:
    """The script's steps and the key algorithm of its ``unlock``; None without a script;
    ConfigError for a script that is not right (``duration_s``: the run's end, None for none)."""
    path = settings.diagnostics.script
    if path is None:
        return None
    steps = load_script(path, duration_s)
    try:
        return steps, load_algorithm(settings.diagnostics.key_algorithm)
    except ValueError as exc:
        raise ConfigError(f"[diagnostics] {exc}") from None


def tester(stack: ExitStack, open_bus: Callable[[], can.BusABC], settings: Settings,
           loaded: Loaded) -> TesterNode:
    """The tester of :func:`script`'s steps on a bus of ``open_bus``; it, its port and its answers'
    file are closed with ``stack``."""
    steps, algorithm = loaded
    path = settings.diagnostics.answers
    answers = None
    if path is not None:
        try:
            answers = stack.enter_context(open(path, "w", encoding="utf-8", newline=""))  # noqa: SIM115
        except OSError as exc:
            raise CannotCreateError(f"cannot create {path} ([diagnostics] answers): "
                                    f"{exc.strerror or exc}") from None
    port = stack.enter_context(Port(open_bus(), []))
    return TesterNode(port, ScriptedSession(steps, settings.run.resolved_period_s, algorithm), answers)
