"""A UDS tester on a python-can bus: udsoncan's client over can-isotp, 29-bit normal fixed addressing.

Both libraries are made for the client side, so nothing of ISO-TP or of the services is written
here: can-isotp segments, reassembles and keeps its timers on its own thread (a person's tester
has no loop whose virtual time it must keep, unlike the node's server), and udsoncan encodes the
requests, waits through "response pending" and checks the answers. What this module adds is
what a person needs around them: every request has a name, and a timeout or a refusal becomes an
error that says what happened and what to do (:mod:`ecu_sim.diag.refusals`).

The tester receives with block size 0 and STmin 0 (the node may stream its answers) and sends
as the node's flow control asks; its frames are padded to eight bytes with 0xCC, as the node's
are. udsoncan and can-isotp are the ``diag`` extra: the command imports this module only after
:func:`ecu_sim.diag.require` found them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Final, TypeVar

import can
import isotp
import udsoncan
from udsoncan import exceptions
from udsoncan.client import Client
from udsoncan.connections import PythonIsoTpConnection

from ecu_sim.diag.refusals import RefusedError, no_answer, refused
from ecu_sim.errors import EXIT_PROTOCOL, EcuSimError
from ecu_sim.uds.codes import Nrc

T = TypeVar("T")

#: the address a service tool takes in J1939 (ISO 15765-2's testers often use 0xF1)
DEFAULT_TESTER: Final = 0xF9
#: a person's tester waits this long for an answer by default; a loaded host's node may be late
DEFAULT_TIMEOUT_S: Final = 2.0
#: how long a node may keep a request pending (0x78): the server's P2* is 5 s
PENDING_S: Final = 5.0
PADDING: Final = 0xCC


class AnswerError(EcuSimError):
    """The node answered with something that is not a valid answer to the request."""

    exit_status = EXIT_PROTOCOL


class Raw(udsoncan.DidCodec):
    """udsoncan's codec for any data identifier: the answer's bytes as they are (the rest of it);
    what they mean is the caller's (:mod:`ecu_sim.diag.items`)."""

    def encode(self, *values: Any) -> bytes:
        return bytes(values[0])

    def decode(self, data: bytes) -> Any:
        return bytes(data)

    def __len__(self) -> int:
        raise udsoncan.DidCodec.ReadAllRemainingData


class WorkshopTester:
    """A tester at address ``tester`` asking the node at ``target`` on ``bus``; use it in ``with``."""

    def __init__(self, bus: can.BusABC, target: int, tester: int = DEFAULT_TESTER,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.target, self.tester, self.timeout_s = target, tester, timeout_s
        address = isotp.Address(isotp.AddressingMode.NormalFixed_29bits, source_address=tester,
                                target_address=target)
        stack = isotp.CanStack(bus, address=address, params={
            "blocking_send": False, "blocksize": 0, "stmin": 0, "tx_padding": PADDING,
            "tx_data_min_length": 8})
        config: Any = dict(udsoncan.configs.default_client_config)
        config.update(data_identifiers={"default": Raw()}, use_server_timing=False,
                      p2_timeout=timeout_s, p2_star_timeout=max(PENDING_S, timeout_s),
                      request_timeout=max(PENDING_S, timeout_s) + timeout_s)
        self.client: Client = Client(PythonIsoTpConnection(stack), config=config)
        # udsoncan logs each failure it raises; the error this tester makes of it says it once
        self.client.logger.setLevel(logging.CRITICAL)

    def __enter__(self) -> WorkshopTester:
        self.client.open()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.client.close()

    def ask(self, what: str, call: Callable[[Client], T]) -> T:
        """``call(client)``, its failures as errors a person can act on; ``what`` names the request."""
        with self._translated(what):
            return call(self.client)

    @contextmanager
    def _translated(self, what: str) -> Iterator[None]:
        try:
            yield
        except exceptions.TimeoutException:
            raise no_answer(self.target, self.tester, what, self.timeout_s) from None
        except exceptions.NegativeResponseException as exc:
            raise refused(self.target, what, int(exc.response.code or 0)) from None
        except (exceptions.InvalidResponseException, exceptions.UnexpectedResponseException) as exc:
            raise AnswerError(f"node 0x{self.target:02X} answered {what} with no valid answer "
                                f"({exc}); is it a UDS server?") from None

    def read(self, did: int, what: str) -> bytes:
        """The bytes of data identifier ``did``."""
        answer = self.ask(f"the read of {what} (DID {did:04X})",
                          lambda c: c.read_data_by_identifier(did))
        assert answer is not None  # None only for a suppressed positive answer
        value: bytes = answer.service_data.values[did]
        return value

    def read_if_any(self, did: int, what: str) -> bytes | None:
        """The bytes of ``did``; None when the node has no such identifier (0x31)."""
        try:
            return self.read(did, what)
        except RefusedError as exc:
            if exc.code != Nrc.REQUEST_OUT_OF_RANGE:
                raise
            return None

    def dtcs(self, mask: int = 0xFF) -> list[tuple[int, int]]:
        """The DTCs whose status has a bit of ``mask``: (the three bytes as a number, status)."""
        answer = self.ask("the read of the DTCs", lambda c: c.get_dtc_by_status_mask(mask))
        assert answer is not None
        return [(dtc.id, dtc.status.get_byte_as_int()) for dtc in answer.service_data.dtcs]

    def clear(self) -> None:
        """ClearDiagnosticInformation of every group (FFFFFF)."""
        self.ask("the clearing of the DTCs", lambda c: c.clear_dtc(0xFFFFFF))
