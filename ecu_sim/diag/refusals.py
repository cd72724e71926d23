"""What a person is told when a node does not answer or refuses, and the exit status of each.

A refusal is a negative response code: the message gives its number, its name (the server's own
table, :class:`ecu_sim.uds.codes.Nrc`) and what to do about it. The exit statuses follow
sysexits(3) as the rest of the command line does: no answer is a service that is not there
(69); a refusal that passes by itself (a lockout delay, a busy node, a truck that is moving) is
temporary (75); a wrong key is a permission (77); any other refusal is the node's word on the
protocol (76).
"""

from __future__ import annotations

from typing import Final

from ecu_sim.errors import EXIT_NOPERM, EXIT_PROTOCOL, EXIT_TEMPFAIL, EXIT_UNAVAILABLE, EcuSimError
from ecu_sim.uds.codes import Nrc

#: what to do about each code; a code not here is given by its name alone
ADVICE: Final[dict[int, str]] = {
    Nrc.GENERAL_REJECT: "the node gives no reason; its log may say more",
    Nrc.SERVICE_NOT_SUPPORTED: "this node does not offer the service",
    Nrc.SUB_FUNCTION_NOT_SUPPORTED: "this node does not offer that variant of the service",
    Nrc.INCORRECT_MESSAGE_LENGTH_OR_INVALID_FORMAT: "the node could not parse the request",
    Nrc.BUSY_REPEAT_REQUEST: "the node is busy (an erase in progress?); try again in a moment",
    Nrc.CONDITIONS_NOT_CORRECT: "programming needs the truck standing (below 1 km/h): stop it and "
                                "try again",
    Nrc.REQUEST_SEQUENCE_ERROR: "the steps came out of order (another tester at work?); start again",
    Nrc.REQUEST_OUT_OF_RANGE: "the node has no such identifier or memory: identifiers of calibration "
                              "parameters differ by node kind (`ecu-sim calibration show --node KIND`)",
    Nrc.SECURITY_ACCESS_DENIED: "the service needs security access first",
    Nrc.INVALID_KEY: "the key algorithm is not the node's: give its [diagnostics] key_algorithm "
                     "with --key-algorithm MODULE:FUNCTION or --config FILE",
    Nrc.EXCEED_NUMBER_OF_ATTEMPTS: "too many wrong keys: fix the key algorithm (--key-algorithm), then "
                                   "try again after the node's lockout delay ([diagnostics] delay_s)",
    Nrc.REQUIRED_TIME_DELAY_NOT_EXPIRED: "the lockout after wrong keys is running; try again after "
                                         "the node's [diagnostics] delay_s",
    Nrc.UPLOAD_DOWNLOAD_NOT_ACCEPTED: "the memory was not erased first; start the flash again",
    Nrc.TRANSFER_DATA_SUSPENDED: "the node took fewer bytes than were sent; start the flash again",
    Nrc.GENERAL_PROGRAMMING_FAILURE: "the node refused the image (another node kind, a value out of "
                                     "range, a damaged integrity field: `ecu-sim calibration show FILE`); "
                                     "it stays in boot mode until a valid image is flashed",
    Nrc.WRONG_BLOCK_SEQUENCE_COUNTER: "a block was lost on the way; start the flash again",
    Nrc.SUB_FUNCTION_NOT_SUPPORTED_IN_ACTIVE_SESSION: "not in the node's present session",
    Nrc.SERVICE_NOT_SUPPORTED_IN_ACTIVE_SESSION: "not in the node's present session (a node in boot "
                                                 "mode answers in the programming session only)",
    Nrc.VEHICLE_SPEED_TOO_HIGH: "the truck is moving: stop it and try again",
}
#: refusals that pass by themselves: try again later
TEMPORARY: Final = frozenset({Nrc.BUSY_REPEAT_REQUEST, Nrc.CONDITIONS_NOT_CORRECT,
                              Nrc.REQUIRED_TIME_DELAY_NOT_EXPIRED, Nrc.VEHICLE_SPEED_TOO_HIGH})
#: refusals of a key: a permission the tester does not have
DENIED: Final = frozenset({Nrc.SECURITY_ACCESS_DENIED, Nrc.INVALID_KEY, Nrc.EXCEED_NUMBER_OF_ATTEMPTS})


class NoAnswerError(EcuSimError):
    """Nothing came back from the node within the timeout."""

    exit_status = EXIT_UNAVAILABLE


class RefusedError(EcuSimError):
    """The node answered with a negative response code (``code``)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code
        self.exit_status = (EXIT_TEMPFAIL if code in TEMPORARY else EXIT_NOPERM if code in DENIED
                            else EXIT_PROTOCOL)


def code_name(code: int) -> str:
    """``0x31 request out of range``; a code the server never sends by its number alone."""
    try:
        return f"0x{code:02X} {Nrc(code).name.lower().replace('_', ' ')}"
    except ValueError:
        return f"0x{code:02X}"


def refused(target: int, what: str, code: int) -> RefusedError:
    advice = ADVICE.get(code)
    return RefusedError(f"node 0x{target:02X} refused {what}: {code_name(code)}"
                        f"{'; ' + advice if advice else ''}", code)


def no_answer(target: int, tester: int, what: str, timeout_s: float) -> NoAnswerError:
    return NoAnswerError(
        f"no answer from node 0x{target:02X} to {what} within {timeout_s:g} s (ISO-TP requests on "
        f"18DA{target:02X}{tester:02X}, answers expected on 18DA{tester:02X}{target:02X}): is a node "
        "running at that address on this bus? `ecu-sim j1939 list` with the same bus options shows "
        "the nodes there; --target sets the address")
