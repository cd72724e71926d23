"""The controller under test's process: in a session of its own, so a stop reaches every process it
started, and killed if the worker running the case dies first, so an interrupted campaign leaves no
controller behind."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import tempfile
from contextlib import suppress

from ecu_sim.errors import ConfigError

#: Linux's prctl option that signals a child when the thread that started it dies
_PR_SET_PDEATHSIG = 1


class Child:
    """The program's process, in a session of its own; killed when the thread that started it
    dies, and on leaving the ``with`` block whatever happened."""

    def __init__(self, argv: list[str], folder: str, grace_s: float) -> None:
        self.grace_s = grace_s
        # open for the program's whole life, closed by __exit__
        self.output = tempfile.TemporaryFile()  # noqa: SIM115
        try:
            self.process = subprocess.Popen(argv, cwd=folder, stdin=subprocess.DEVNULL, stdout=self.output,
                                            stderr=subprocess.STDOUT, start_new_session=True,
                                            preexec_fn=_die_with_parent)
        except OSError as exc:
            self.output.close()
            raise ConfigError(f"cannot start {argv[0]}: {exc.strerror}") from None

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self.output.close()

    def exited(self) -> int | None:
        return self.process.poll()

    def stop(self) -> str:
        """End the program: SIGTERM to its session, SIGKILL after the grace period. Which one it
        took, or ``exited N`` when it had already ended by itself."""
        code = self.process.poll()
        if code is not None:
            self._signal(signal.SIGKILL)  # anything it left running in its session
            return f"exited {code}"
        self._signal(signal.SIGTERM)
        try:
            self.process.wait(self.grace_s)
            how = "SIGTERM"
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self.process.wait()
            how = "SIGKILL"
        self._signal(signal.SIGKILL)
        return how

    def _signal(self, signum: int) -> None:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signum)

    def last_words(self) -> str:
        """The last line the program wrote, for a failed row's error."""
        self.output.seek(0)
        lines = [line for line in self.output.read().decode("utf-8", "replace").splitlines() if line.strip()]
        return lines[-1].strip()[:200] if lines else ""


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the worker that started it dies (Linux)."""
    with suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
