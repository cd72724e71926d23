"""``simulate``'s progress bar: simulated time against the run's length, on a terminal only.

tqdm draws it, and only once the run has taken a second (a short run stays silent); on a pipe
or a file there is none unless asked for, so a trace on stdout or a log stays clean. The bar is
advanced every few thousand ticks, which keeps it out of the cost of a tick.
"""

from __future__ import annotations

from typing import IO, Any

#: ticks between two updates of the bar
UPDATE_TICKS = 2048
#: seconds a run takes before its bar appears
DELAY_S = 1.0


class Progress:
    """A tick observer that advances a bar of simulated seconds; close it when the run ends."""

    def __init__(self, total_ticks: int, period_s: float, stream: IO[str]) -> None:
        from tqdm import tqdm  # only a run that shows a bar pays for the import

        self._period_s = period_s
        self._shown = 0.0
        self._bar: Any = tqdm(total=round(total_ticks * period_s), unit=" s", file=stream,
                              delay=DELAY_S, desc="simulated", dynamic_ncols=True, leave=False,
                              bar_format="{desc} {n:.0f}/{total:.0f} s {bar} {percentage:3.0f}% "
                                         "[{elapsed}<{remaining}]")

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        if (tick + 1) % UPDATE_TICKS == 0:
            self._advance(tick + 1)

    def _advance(self, ticks: int) -> None:
        simulated = ticks * self._period_s
        self._bar.update(simulated - self._shown)
        self._shown = simulated

    def close(self) -> None:
        self._bar.close()


def wanted(asked: bool | None, stream: IO[str]) -> bool:
    """``--progress`` / ``--no-progress``; by default a bar only on a terminal."""
    if asked is not None:
        return asked
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())
