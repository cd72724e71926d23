"""Where the cases run: local worker processes, or a Dask distributed cluster.

Both yield rows as cases finish, keeping only a few cases per worker in flight, so a campaign of
a hundred thousand cases neither builds a hundred thousand futures nor pickles them up front, and
an interruption loses no more than the cases being run. Rows do not depend on where a case ran:
every case is a fresh simulation with its own virtual clock and private bus.

Local workers are started by ``forkserver`` (``spawn`` where there is none): a fork of a process
holding threads (a progress line, a Dask client) may deadlock, and a pool's workers outlive many
cases, so their start-up is paid once. Dask is imported only when asked for (the ``cluster``
extra); ``--scheduler`` joins a running cluster, whose workers need ecu-sim installed and the
campaign's files (routes, DBCs, the traces folder) at the same paths.
"""

from __future__ import annotations

import logging
import multiprocessing
from collections.abc import Iterator, Sequence
from concurrent import futures
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from ecu_sim.campaign.case import run_case
from ecu_sim.campaign.figures import FIGURES
from ecu_sim.campaign.matrix import Case
from ecu_sim.campaign.row import Row
from ecu_sim.errors import ConfigError, EcuSimError, needs_extra
from ecu_sim.runtime.cores import usable_cores

#: cases in flight per worker: enough that a worker never waits for the next, few enough to lose
IN_FLIGHT_PER_WORKER = 4

#: seconds to wait for each killed worker to leave the process table after Ctrl-C
STOP_WAIT_S = 5.0


def default_workers() -> int:
    """All the cores this process may use."""
    return usable_cores()


def local(cases: Sequence[Case], workers: int, traces: str | None) -> Iterator[Row]:
    """Run ``cases`` on ``workers`` local processes; rows in the order cases finish."""
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    pending = iter(cases)
    with futures.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        running: set[futures.Future[Row]] = set()
        try:
            while True:
                for case in pending:
                    running.add(pool.submit(run_case, case, traces))
                    if len(running) >= workers * IN_FLIGHT_PER_WORKER:
                        break
                if not running:
                    return
                done, running = futures.wait(running, return_when=futures.FIRST_COMPLETED)
                for future in done:
                    yield future.result()
        except BrokenProcessPool:
            raise EcuSimError("a worker process died (killed, or out of memory); the finished cases "
                              "are saved: run the campaign again with --resume") from None
        except KeyboardInterrupt:
            _stop_workers(pool)
            raise
        finally:
            for future in running:
                future.cancel()


def _stop_workers(pool: futures.ProcessPoolExecutor) -> None:
    """Ctrl-C: end the workers now. A worker takes its own SIGINT as the end of its case only and
    would start the next queued one; a case's controller under test dies with its worker. The
    workers are killed before the pool is told to shut down, so the pool's own thread finds them
    gone instead of waiting for a case to end."""
    workers = multiprocessing.active_children()
    for process in workers:
        process.kill()
    for process in workers:
        process.join(STOP_WAIT_S)
    pool.shutdown(wait=False, cancel_futures=True)


def dask(cases: Sequence[Case], workers: int, scheduler: str | None,
         traces: str | None) -> Iterator[Row]:
    """Run ``cases`` on a Dask cluster: the one at ``scheduler``, else a LocalCluster of ``workers``."""
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise ConfigError(needs_extra("--executor dask", "dask.distributed", "cluster")) from None
    cluster = None
    if scheduler is None:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR)
    try:
        client = Client(scheduler if scheduler is not None else cluster, timeout="30s")
    except OSError as exc:
        raise EcuSimError(f"cannot reach the Dask scheduler {scheduler}: {exc}") from None
    try:
        size = workers if scheduler is None else max(1, len(client.scheduler_info()["workers"]))
        pending = iter(cases)
        by_future = {}
        for case in pending:
            by_future[client.submit(run_case, case, traces, pure=False, key=f"case-{case.id}")] = case
            if len(by_future) >= size * IN_FLIGHT_PER_WORKER:
                break
        flow = as_completed(list(by_future))
        for future in flow:
            case = by_future.pop(future)
            yield _dask_row(future, case)
            following = next(pending, None)
            if following is not None:
                new = client.submit(run_case, following, traces, pure=False, key=f"case-{following.id}")
                by_future[new] = following
                flow.add(new)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _dask_row(future: Any, case: Case) -> Row:
    """The case's row; a case whose task the cluster gave up on (it killed its workers) is failed."""
    try:
        row: Row = future.result()
        return row
    except Exception as exc:
        return Row(case.id, settings=case.columns(), figures=dict.fromkeys(FIGURES)).failed(
            f"{type(exc).__name__}: {exc}")
