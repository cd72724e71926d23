"""Cases done, rate and time left: a bar redrawn in place on a terminal, a plain line a minute otherwise.

Written here rather than taken from tqdm: it is one line of text, and the core package (which the
boards install) stays without a dependency only a campaign would use. Off a terminal (a CI log, a
file) a redrawn bar would be thousands of lines, so it is a plain line once a minute instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

BAR_WIDTH = 24
#: seconds between plain lines off a terminal, and between redraws on one
PLAIN_INTERVAL_S = 60.0
REDRAW_INTERVAL_S = 0.2


class CampaignProgress:
    """Counts finished cases; ``already`` were finished by an earlier run (``--resume``). With
    ``workers`` (cases in real time, which take their duration each) it shows how many run."""

    def __init__(self, total: int, already: int, out: TextIO,
                 clock: Callable[[], float] = time.monotonic, workers: int = 0) -> None:
        self.total = total
        self.workers = workers
        self.done = already
        self.already = already
        self.failed = 0
        self._out = out
        self._tty = out.isatty()
        self._clock = clock
        self._started = clock()
        self._shown = self._started
        if workers and self.done < total:  # real-time cases take long: say at once what runs
            self._show(self._started)

    def case_done(self, failed: bool) -> None:
        self.done += 1
        self.failed += failed
        now = self._clock()
        if now - self._shown >= (REDRAW_INTERVAL_S if self._tty else PLAIN_INTERVAL_S):
            self._show(now)

    def close(self) -> None:
        self._show(self._clock(), final=True)

    def text(self, now: float) -> str:
        ran = self.done - self.already
        elapsed = now - self._started
        rate = ran / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else float("nan")
        failed = f", {self.failed} failed" if self.failed else ""
        running = min(self.workers, self.total - self.done)
        failed += f", {running} running" if running > 0 else ""
        eta = _duration(left) if left == left else "?"
        return (f"{self.done}/{self.total} cases{failed} | {rate:.1f} cases/s | "
                f"{'ETA ' + eta if self.done < self.total else 'took ' + _duration(elapsed)}")

    def _show(self, now: float, final: bool = False) -> None:
        self._shown = now
        text = self.text(now)
        if self._tty:
            filled = BAR_WIDTH * self.done // max(1, self.total)
            bar = "#" * filled + "." * (BAR_WIDTH - filled)
            self._out.write(f"\r[{bar}] {text}\x1b[K" + ("\n" if final else ""))
        else:
            self._out.write(f"campaign: {text}\n")
        self._out.flush()


def _duration(seconds: float) -> str:
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"
