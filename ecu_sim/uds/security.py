"""SecurityAccess: seeds, keys, the attempt counter and its delay, kept across resets and restarts.

A seed is the first four bytes of BLAKE2b over the node's identity and a counter that rises
with every seed given; the counter is part of the kept state (reserved a block ahead, so the
state is written once a block rather than once a seed), so a seed never repeats after an
ECUReset or a restart (the flaw of CVE-2024-12054, where a reset made seeds predictable) and a
simulation still gives the same seeds twice. The attempt counter and whether a delay ran are
kept the same way: an invalid key counts, and neither ECUReset nor a restart clears the count
or cuts the delay short (a restart during a delay starts it again whole).

The key is ``algorithm(seed, level)``: by default :func:`default_key`, documented in
docs/diagnostics.md; a user's own is named ``module:function`` (``[diagnostics] key_algorithm``)
and takes the same two arguments.

A node can be given the flaws researchers report (``[diagnostics] flaw``, :data:`FLAWS`), for a
flawed node beside its patched twin: each one undoes one of the rules above, here and nowhere
else (but ``any-tester``, which undoes the server's rule that a session is its tester's, in
:mod:`ecu_sim.uds.server`), and none changes what the node sends when no tester asks, so the two
drive the same.
``weak-key`` stands for the published seed/key breaks, where a few observed pairs or the
algorithm's structure leave a search small enough to run on the bus: only the key's last byte
is compared, so at most 256 guesses find it (our model, not a published algorithm).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Final

from ecu_sim.uds.codes import Nrc

log = logging.getLogger(__name__)

KeyAlgorithm = Callable[[bytes, int], bytes]
#: the security level the server has (sub-functions 01, request seed, and 02, send key)
LEVEL: Final = 1
SEED_BYTES: Final = 4
#: seeds the kept counter is reserved ahead by: the state is written once per this many seeds, so a
#: tester asking for seed after seed does not make the tick write a file each time
RESERVED_SEEDS: Final = 64
#: the constant the default key mixes in: "ECUS" in ASCII
_DEFAULT_MASK: Final = 0x45435553
#: the flaws a node can be given, each with what it undoes (module docstring)
FLAWS: Final = {
    "static-seed": "the same seed every time",
    "reset-seed": "the seed counter starts again at every start and ECUReset (CVE-2024-12054)",
    "no-attempt-limit": "invalid keys are never counted: no lockout, no delay",
    "weak-key": "only the key's last byte is compared: 256 guesses find it",
    "any-tester": "a session takes its requests from any tester: a second one can use, end or keep "
                  "alive the session, security and download another opened",
}


def default_key(seed: bytes, level: int) -> bytes:
    """The default key: the seed as a big-endian number, rotated left by 5 bits, XOR 0x45435553,
    plus the level, modulo 2**32, as four big-endian bytes. Not a secret: replace it for anything
    but a test bench."""
    value = int.from_bytes(seed, "big") & 0xFFFFFFFF
    rotated = ((value << 5) | (value >> 27)) & 0xFFFFFFFF
    return (((rotated ^ _DEFAULT_MASK) + level) & 0xFFFFFFFF).to_bytes(4, "big")


def load_algorithm(spec: str | None) -> KeyAlgorithm:
    """The key algorithm ``module:function`` names (None: the default); ValueError saying what to
    change when it cannot be found."""
    if spec is None:
        return default_key
    module_name, sep, function_name = spec.partition(":")
    if not sep or not module_name or not function_name:
        raise ValueError(f"key_algorithm must be MODULE:FUNCTION, e.g. mykeys:key (got {spec!r})")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"key_algorithm {spec!r}: cannot import {module_name!r} ({exc}); put the "
                         "module on PYTHONPATH") from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise ValueError(f"key_algorithm {spec!r}: {module_name} has no function {function_name!r}")
    algorithm: KeyAlgorithm = function
    return algorithm


@dataclass
class SecurityState:
    """What survives a reset and a restart; ``seed_counter`` is the highest counter reserved, so a
    restart goes on above every seed that may have been given."""

    seed_counter: int = 0
    failures: int = 0
    delayed: bool = False


class SecurityStore:
    """Where the state is kept: a small JSON file written atomically, or the run's memory (None)."""

    def __init__(self, path: str | None) -> None:
        self.path = path

    def load(self) -> SecurityState:
        if self.path is None or not os.path.exists(self.path):
            return SecurityState()
        try:
            with open(self.path, encoding="utf-8") as file:
                raw = json.load(file)
            return SecurityState(int(raw["seed_counter"]), int(raw["failures"]), bool(raw["delayed"]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            # Unreadable: the safe side is a delay, and a counter past any seed given before.
            log.warning("security state %s unreadable (%s): starting with a delay; delete it to "
                        "start afresh", self.path, exc)
            return SecurityState(seed_counter=1 << 32, failures=0, delayed=True)

    def save(self, state: SecurityState) -> None:
        if self.path is None:
            return
        directory = os.path.dirname(self.path) or "."
        os.makedirs(directory, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=directory, prefix=".uds-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump(asdict(state), file)
        os.replace(temporary, self.path)


class Security:
    """One node's security access: ``identity`` keys its seeds, ``delay_ticks`` follow too many
    invalid keys, ``attempts`` invalid keys are answered 0x35 before the next one exceeds them."""

    def __init__(self, identity: bytes, store: SecurityStore, algorithm: KeyAlgorithm,
                 attempts: int, delay_ticks: int, flaws: frozenset[str] = frozenset()) -> None:
        """``flaws``: names of :data:`FLAWS` (none: the node as it should be)."""
        unknown = flaws - FLAWS.keys()
        if unknown:
            raise ValueError(f"unknown flaw {sorted(unknown)[0]!r}; the flaws are {', '.join(FLAWS)}")
        self.flaws = flaws
        self._identity = identity
        self._store = store
        self._algorithm = algorithm
        self._attempts = attempts
        self._delay_ticks = delay_ticks
        self.state = store.load()
        #: the tick the delay ends at; a delay kept from before starts again whole
        self.delay_until = delay_ticks if self.state.delayed else 0
        self.unlocked = False
        self._seed: bytes | None = None
        self._counter = self.state.seed_counter
        self.restart()

    def restart(self) -> None:
        """The application starts again (ECUReset): locked; with ``reset-seed`` the seed counter
        goes back to its start, so the seeds after a reset are those after the last one."""
        self.lock()
        if "reset-seed" in self.flaws:
            self._counter = 0

    def lock(self) -> None:
        """Leaving a session or a reset: locked again, the seed given forgotten."""
        self.unlocked = False
        self._seed = None

    def request_seed(self, tick: int) -> bytes | Nrc:
        if self.unlocked:
            return bytes(SEED_BYTES)  # ISO 14229-1: a seed of zeros means already unlocked
        if self._delaying(tick):
            return Nrc.REQUIRED_TIME_DELAY_NOT_EXPIRED
        if "static-seed" in self.flaws:
            self._seed = self.seed_of(1)
            return self._seed
        seed = bytes(SEED_BYTES)
        while seed == bytes(SEED_BYTES):
            self._counter += 1
            seed = self.seed_of(self._counter)
        if self._counter > self.state.seed_counter and "reset-seed" not in self.flaws:
            self.state.seed_counter = self._counter + RESERVED_SEEDS - 1
            self._store.save(self.state)  # kept before the seed goes out
        self._seed = seed
        return seed

    def seed_of(self, counter: int) -> bytes:
        return hashlib.blake2b(self._identity + counter.to_bytes(16, "big"), digest_size=SEED_BYTES).digest()

    def send_key(self, key: bytes, tick: int) -> Nrc | None:
        """None: unlocked; else the code of the refusal."""
        if self._delaying(tick):
            return Nrc.REQUIRED_TIME_DELAY_NOT_EXPIRED
        seed, self._seed = self._seed, None
        if seed is None:
            return Nrc.REQUEST_SEQUENCE_ERROR
        if self._matches(key, self._algorithm(seed, LEVEL)):
            self.unlocked = True
            if self.state.failures:
                self.state.failures = 0
                self._store.save(self.state)
            return None
        if "no-attempt-limit" in self.flaws:
            return Nrc.INVALID_KEY
        self.state.failures += 1
        if self.state.failures > self._attempts:
            self.state.delayed = True
            self.delay_until = tick + self._delay_ticks
            self._store.save(self.state)
            return Nrc.EXCEED_NUMBER_OF_ATTEMPTS
        self._store.save(self.state)
        return Nrc.INVALID_KEY

    def _matches(self, key: bytes, expected: bytes) -> bool:
        if "weak-key" in self.flaws:
            return len(key) == len(expected) and key[-1:] == expected[-1:]
        return key == expected

    def _delaying(self, tick: int) -> bool:
        if not self.state.delayed:
            return False
        if tick < self.delay_until:
            return True
        self.state.delayed = False
        self.state.failures = 0
        self._store.save(self.state)
        return False
