"""Files kept on disk by a thread of their own, so a slow card never holds up a tick.

The loop's thread only hands a recording to the operating system (one write call at a flush);
what survives a power cut besides needs a sync, which on an SD card can take a good part of a
period, so a thread asks for it every :data:`SYNC_INTERVAL_S`.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable

#: how often the thread asks the disk to keep the files: what a power cut loses at most, besides
#: what was not yet handed to the operating system
SYNC_INTERVAL_S = 10.0


class Syncer:
    """Every SYNC_INTERVAL_S, fsync the descriptors ``files`` names at that moment, from a thread
    of its own (none for ``files`` None: files not worth keeping). A descriptor closed meanwhile
    (a recording's rotation) is skipped."""

    def __init__(self, files: Callable[[], list[int]] | None) -> None:
        self._done = threading.Event()
        self._thread = None
        if files is not None:
            self._thread = threading.Thread(target=self._run, args=(files,), name="ecu-sim fsync",
                                            daemon=True)
            self._thread.start()

    def _run(self, files: Callable[[], list[int]]) -> None:
        while not self._done.wait(SYNC_INTERVAL_S):
            for number in files():
                with contextlib.suppress(OSError):
                    os.fsync(number)

    def stop(self) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
