"""A campaign from its file to its finished table: expand, skip what is done, run the rest, sort.

The cases already in the table (``--resume``) are not run again, whatever their status: a failed
case is a result too. Each row is appended the moment it arrives, so an interruption at any point
loses no finished case and the next ``--resume`` runs none twice.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ecu_sim.campaign import executors, matrix, program, spec
from ecu_sim.campaign.command import check as check_command
from ecu_sim.campaign.effect import EFFECT_FIGURES
from ecu_sim.campaign.figures import FIGURES
from ecu_sim.campaign.progress import CampaignProgress
from ecu_sim.campaign.results import Results
from ecu_sim.campaign.row import FAILED, HEAD, TAIL, Row
from ecu_sim.errors import ConfigError


@dataclass(frozen=True)
class Options:
    """How to run a campaign: the command line's options."""

    out: Path
    workers: int
    executor: str = "local"
    scheduler: str | None = None
    resume: bool = False
    overwrite: bool = False
    keep_traces: bool = False
    parquet: bool = False
    #: ``--command``: the controller under test's command instead of the file's ``[program]`` one
    command: str | None = None
    #: ``--socketcan``: each case on a vcan of its own, as ``[program] socketcan = true``
    socketcan: bool = False


@dataclass(frozen=True)
class Outcome:
    total: int
    ran: int
    failed: int
    table: Path


def columns(cases: list[matrix.Case]) -> list[str]:
    """The table's columns: id, status, every setting any case gives, the figures (and how a
    controller under test was stopped), the error."""
    settings: dict[str, None] = {}
    for case in cases:
        settings.update(dict.fromkeys(dotted for dotted, _, _ in case.values))
    extra = program.COLUMNS if any(case.program is not None for case in cases) else ()
    effects = EFFECT_FIGURES if any(case.attack()[0] for case in cases) else ()
    return [*HEAD, *settings, *FIGURES, *extra, *effects, *TAIL]


def load(path: str, command: str | None = None, socketcan: bool = False) -> list[matrix.Case]:
    """The campaign's cases, ``command`` replacing its program's and ``socketcan`` putting them on
    vcans; ConfigError for a bad file, or a program that cannot be started with some case's
    settings."""
    campaign = spec.load(path)
    if command is not None or socketcan:
        chosen = campaign.program
        if chosen is None:
            flag = "--command" if command is not None else "--socketcan"
            raise ConfigError(f"{flag} is for a controller under test's [program], and {path} has none")
        if socketcan and chosen.cosim:
            raise ConfigError(f"--socketcan: {path}'s [program] has cosim = true, which steps the ECU "
                              "over a UDP port: there is no CAN bus to put on SocketCAN")
        if command is not None:
            chosen = dataclasses.replace(chosen, command=command, origin="--command")
        campaign = dataclasses.replace(campaign, program=dataclasses.replace(
            chosen, socketcan=chosen.socketcan or socketcan))
    cases = matrix.expand(campaign)
    if campaign.program is not None and cases:
        # a repetition has its case's settings: each distinct case is checked once
        distinct = {case.base_id: case for case in cases}.values()
        check_command(campaign.program, [case.settings() for case in distinct], cases[0].folder)
    return cases


def run(path: str, options: Options, progress_out: TextIO) -> Outcome:
    """Run the campaign in ``path``; ConfigError for a bad file before any case runs."""
    cases = load(path, options.command, options.socketcan)
    results = Results(options.out, columns(cases), options.resume, options.overwrite)
    todo = [case for case in cases if case.id not in results.rows]
    traces = None
    if options.keep_traces:
        (options.out / "traces").mkdir(exist_ok=True)
        traces = str((options.out / "traces").resolve())
    real_time = any(case.program is not None for case in cases)
    progress = CampaignProgress(len(cases), len(cases) - len(todo), progress_out,
                                workers=options.workers if real_time else 0)
    ran = 0
    try:
        for row in _rows(todo, options, traces):
            results.append(row)
            ran += 1
            progress.case_done(row.status == FAILED)
    finally:
        progress.close()
        results.close()
    results.finish([case.id for case in cases], options.parquet)
    failed = sum(1 for case in cases if results.rows.get(case.id, {}).get("status") == FAILED)
    return Outcome(len(cases), ran, failed, results.path)


def _rows(todo: list[matrix.Case], options: Options, traces: str | None) -> Iterator[Row]:
    if not todo:
        return iter(())
    if options.executor == "dask":
        return executors.dask(todo, options.workers, options.scheduler, traces)
    return executors.local(todo, options.workers, traces)
