"""One case run to its row of results: the function every executor calls, in whatever process.

It runs the case through ``ecu_sim.runs.simulation.run``, the code ``ecu-sim simulate`` runs,
with settings built by the same loader from the case's values. Whatever the case raises becomes
a failed row carrying the error, so one bad case never stops a campaign; only an interruption
(Ctrl-C, a killed process) does, and then the row was never written.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ecu_sim.campaign import lockstep, program
from ecu_sim.campaign.effect import EFFECT_FIGURES, EffectProbe, effect
from ecu_sim.campaign.figures import FIGURES, Probe, StopAt, figures
from ecu_sim.campaign.matrix import Case
from ecu_sim.campaign.row import Figure, Row
from ecu_sim.runs import simulation
from ecu_sim.runs.attacked import AttackSetup
from ecu_sim.runtime.loop import TickObserver
from ecu_sim.settings.model import Settings


def run_case(case: Case, traces: str | None = None) -> Row:
    """The case's row: its id, status, settings, figures and error (empty unless it failed).

    With ``traces`` (a folder), the run's per-tick CSV goes to ``traces/ID.csv``, written under a
    temporary name and renamed when complete, so a trace file is never half a run. A case with a
    controller under test runs in real time against it (ecu_sim.campaign.program).
    """
    effects = EFFECT_FIGURES if case.attack()[0] else {}
    row = Row(case.id, settings=case.columns(), figures=dict.fromkeys([*FIGURES, *effects]))
    try:
        if case.program is None:
            return row.given(_simulate(case, traces))
        run = lockstep.run if case.program.cosim else program.run
        with trace_file(traces, case.id) as trace:
            return row.given(run(case, case.program, trace))
    except program.ProgramFailed as exc:
        return row.failed(str(exc), **exc.columns)
    except Exception as exc:
        return row.failed(f"{type(exc).__name__}: {exc}")


def _simulate(case: Case, traces: str | None) -> dict[str, Figure]:
    settings = case.settings()
    mode, app_pct = case.driver()
    driver = simulation.DriverSetup(mode, app_pct)
    specs, seed = case.attack()
    if specs:
        return attacked_case(case, settings, driver, specs, seed, traces)
    probes: list[Probe] = []

    def watch(sim: simulation.Simulation) -> list[TickObserver]:
        probes.append(Probe(sim))
        return [probes[0]] if case.distance_m is None else [probes[0], StopAt(sim, case.distance_m)]

    with trace_file(traces, case.id) as out:
        simulation.run(settings, driver, out, link="direct", watch=watch)
    set_speed = settings.run.set_speed_kph if mode == "ccm" else None
    return figures(probes[0], set_speed, case.settle_band_kph)


def attacked_case(case: Case, settings: Settings, driver: simulation.DriverSetup, specs: tuple[str, ...],
                  seed: int, traces: str | None) -> dict[str, Figure]:
    """The figures of an attacked case and its effect beside the attack-free twin; with ``traces``,
    its labelled capture as ``traces/ID.log`` (ecu-sim dataset reads them)."""
    probes: list[Probe] = []
    effects: list[EffectProbe] = []

    def watch(sim: simulation.Simulation) -> list[TickObserver]:
        probes.append(Probe(sim))
        effects.append(EffectProbe(sim))
        stop = [] if case.distance_m is None else [StopAt(sim, case.distance_m)]
        return [probes[-1], effects[-1], *stop]

    simulation.run(settings, driver, link="direct", watch=watch)
    capture = None if traces is None else str(Path(traces) / f"{case.id}.log")
    setup = AttackSetup(specs, seed, capture, scenario=case.id)
    attacked = simulation.run(settings, driver, link="direct", watch=watch, attack=setup)
    assert attacked.attacker is not None  # an AttackSetup always builds one
    windows = attacked.attacker.plan.windows
    start = min(window.start for window in windows)
    sources = (getattr(window.attack.params, "source", None) for window in windows)
    testers = frozenset(source for source in sources if isinstance(source, int))
    set_speed = settings.run.set_speed_kph if driver.kind == "ccm" else None
    return {**figures(probes[1], set_speed, case.settle_band_kph),
            **effect(effects[1], effects[0], (probes[1].speed_mps, probes[0].speed_mps), start, testers)}


@contextmanager
def trace_file(traces: str | None, case_id: str) -> Iterator[IO[str] | None]:
    """``traces/ID.csv`` written under a temporary name and renamed when complete, so a trace is
    never half a run; None without a traces folder."""
    if traces is None:
        yield None
        return
    final = Path(traces) / f"{case_id}.csv"
    handle, temporary = tempfile.mkstemp(dir=traces, prefix=f".{case_id}.", suffix=".csv")
    try:
        with open(handle, "w", encoding="ascii", buffering=1 << 16) as out:
            yield out
        os.replace(temporary, final)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
