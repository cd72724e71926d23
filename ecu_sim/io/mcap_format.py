"""``--record FILE.mcap``: the run as MCAP, with its tick journal inside; its reader and writer.

python-can writes .log/.asc/.blf but no MCAP, so this module writes it with the ``mcap`` package
(the ``mcap`` extra), JSON-encoded with JSON schemas, which Foxglove and Lichtblick open with
every signal named:

- ``/can/frames``: every frame the node received and sent, in the order the port saw them, with
  its direction and the index of the tick it belongs to (received frames: the tick they fell
  before; sent frames: the tick that sent them);
- ``/signals/MESSAGE``: each of those frames the DBC describes, decoded by cantools, one topic
  per DBC message, its signals named as in the DBC (the schema says their units);
- ``/ticks``: one message per tick: the journal's counts (``rx``, ``tx``, ``skipped``,
  ``failed``) and the tick as the live stream sends it (model state, lateness, counters);
- ``/can/labels``, in a recording of an attacked run (``simulate --attack ... --record``): one
  message per frame of ``/can/frames``, at the frame's log time, with its place there
  (``frame``, from 0), tick, direction, identifier, ``label`` (0 benign, else the attack's number)
  and ``attack`` (the kind, or ``benign``). One per frame rather than one per attacked frame, so
  the topic alone is the labelled table a dataset reader wants: no frame's label is inferred
  from an absence, and ``frame`` joins it to ``/can/frames`` where many frames share a time;
- metadata ``ecu-sim journal`` (the journal's line 1: settings, route, DBC checksum, faults) and,
  when the run stops in order, ``ecu-sim end`` (the journal's ``end RX``); ``ecu-sim control``
  for each control applied between two ticks (the journal's ``control`` lines: the CCM's release
  when it stops).

The journal lives inside the file rather than beside it because an MCAP file is a container of
channels and metadata: one file is what a viewer opens and what a person copies, and a journal
that cannot be separated from its frames cannot be paired with the wrong log. ``ecu-sim replay
FILE.mcap`` reads the same ticks and frames a .log and its .ticks give.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import IO, Any

import can
from cantools.database.can import Database

from ecu_sim.bus.listener import Direction
from ecu_sim.errors import ConfigError, needs_extra
from ecu_sim.io import journal
from ecu_sim.io.journal import TickRecord
from ecu_sim.io.signals import FrameDecoder, TickView

SUFFIX = ".mcap"
FRAMES = "/can/frames"
LABELS = "/can/labels"
TICKS = "/ticks"
SIGNALS = "/signals/"
HEAD = "ecu-sim journal"
END = "ecu-sim end"
#: a control applied before a tick (the journal's ``control`` line): ``before`` the tick, ``control``
CONTROL = "ecu-sim control"
_NUMBER = {"type": "number"}
FRAME_SCHEMA = {
    "title": "ecu_sim.CanFrame", "type": "object",
    "properties": {"tick": {"type": "integer"}, "direction": {"enum": ["rx", "tx"]},
                   "timestamp": _NUMBER, "id": {"type": "integer"}, "extended": {"type": "boolean"},
                   "fd": {"type": "boolean"}, "brs": {"type": "boolean"}, "remote": {"type": "boolean"},
                   "error": {"type": "boolean"}, "dlc": {"type": "integer"}, "data": {"type": "string"}},
}
LABEL_SCHEMA = {
    "title": "ecu_sim.FrameLabel", "type": "object",
    "properties": {"frame": {"type": "integer"}, "tick": {"type": "integer"},
                   "direction": {"enum": ["rx", "tx"]}, "id": {"type": "integer"},
                   "label": {"type": "integer"}, "attack": {"type": "string"}},
}
TICK_SCHEMA = {
    "title": "ecu_sim.Tick", "type": "object", "additionalProperties": {"type": "object"},
    "properties": {"tick": {"type": "integer"}, "rx": {"type": "integer"}, "tx": {"type": "integer"},
                   "skipped": {"type": "boolean"}, "failed": {"type": "boolean"},
                   "timestamp": _NUMBER, "loop": {"type": "object"}},
}


def _mcap_missing() -> ConfigError:
    return ConfigError(needs_extra("an .mcap recording", "the mcap package", "mcap",
                                   "or record to .log, .asc or .blf"))


class McapRecorder:
    """A listener on the node's port and an observer of its loop, like the .log recorder."""

    def __init__(self, path: str, head: dict[str, Any], database: Database, view: TickView, *,
                 now: Callable[[], float] = time.time, labels: journal.Labeller | None = None) -> None:
        """``now``: the time of sent frames and ticks (a simulation's virtual clock); ``labels``:
        an attacked run's labels of received frames, written to ``/can/labels`` with the kinds
        the head's ``attacks`` names."""
        try:
            from mcap.writer import Writer
        except ImportError:
            raise _mcap_missing() from None
        self.path = path
        try:
            self._file: IO[bytes] = open(path, "wb")  # noqa: SIM115  # closed by stop()
        except OSError as exc:
            raise ConfigError(f"cannot write the recording {path}: {exc.strerror or exc}") from None
        self._writer = Writer(self._file)
        self._writer.start(profile="", library="ecu-sim")
        self._writer.add_metadata(HEAD, {"head": json.dumps(
            {"format": journal.FORMAT, "version": journal.VERSION, **head}, separators=(",", ":"))})
        self._decoder = FrameDecoder(database)
        self._database = database
        self._view = view
        self._frames = self._channel(FRAMES, FRAME_SCHEMA)
        self._ticks = self._channel(TICKS, TICK_SCHEMA)
        self._signals: dict[str, int] = {}
        self._now = now
        self._labeller = labels
        self._labels = None if labels is None else self._channel(LABELS, LABEL_SCHEMA)
        self._kinds = {int(a["label"]): str(a["kind"]) for a in head.get("attacks", ())}
        #: this tick's frames, to be labelled at its end: place, log time, direction, identifier
        self._tick_frames: list[tuple[int, int, str, int, int]] = []
        self._sequence = 0
        self._tick = 0
        self._rx = self._tx = 0
        self._failed = False
        self._stopped = False
        #: frames written so far, received and sent
        self.frames = 0

    def _channel(self, topic: str, schema: dict[str, Any]) -> int:
        schema_id = self._writer.register_schema(str(schema["title"]), "jsonschema",
                                                 json.dumps(schema).encode())
        return self._writer.register_channel(topic, "json", schema_id)

    def _signal_channel(self, name: str) -> int:
        channel = self._signals.get(name)
        if channel is None:
            message = self._database.get_message_by_name(name)
            properties: dict[str, Any] = {"tick": {"type": "integer"}, "direction": {"enum": ["rx", "tx"]},
                                          "key": {"type": "string"}}
            for signal in message.signals:
                properties[signal.name] = {"type": "number", "description": signal.unit or ""}
            channel = self._channel(SIGNALS + name, {"title": f"dbc.{name}", "type": "object",
                                                     "properties": properties})
            self._signals[name] = channel
        return channel

    def __enter__(self) -> McapRecorder:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()

    def _write(self, channel: int, stamp_ns: int, record: dict[str, Any]) -> None:
        self._sequence += 1
        self._writer.add_message(channel, stamp_ns, json.dumps(record, separators=(",", ":")).encode(),
                                 stamp_ns, self._sequence)

    def on_frame(self, msg: can.Message, direction: Direction) -> None:
        if direction is Direction.NOT_SENT:
            self._failed = True
            return
        sent = direction is Direction.SENT
        stamp = self._now() if sent else msg.timestamp
        if sent:
            self._tx += 1
        else:
            self._rx += 1
        way = "tx" if sent else "rx"
        stamp_ns = max(0, int(stamp * 1e9))
        if self._labels is not None and self._labeller is not None:
            label = 0 if sent else self._labeller(msg)
            self._tick_frames.append((self.frames, stamp_ns, way, msg.arbitration_id, label))
        self.frames += 1
        self._write(self._frames, stamp_ns, {
            "tick": self._tick, "direction": way, "timestamp": stamp, "id": msg.arbitration_id,
            "extended": msg.is_extended_id, "fd": msg.is_fd, "brs": msg.bitrate_switch,
            "remote": msg.is_remote_frame, "error": msg.is_error_frame, "dlc": msg.dlc,
            "data": bytes(msg.data).hex()})
        message = self._decoder.message(msg)
        decoded = self._decoder.decode(msg)
        if message is not None and decoded is not None:
            self._write(self._signal_channel(message.name), stamp_ns,
                        {"tick": self._tick, "direction": way, "key": decoded[0], **decoded[1]})

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        record = {"tick": tick, "rx": self._rx, "tx": self._tx, "skipped": not transmitted,
                  "failed": self._failed, **self._view.take(tick, now, transmitted)}
        self._write(self._ticks, int(self._now() * 1e9), record)
        if self._labels is not None:
            self._label(self._labels)
        self._rx = self._tx = 0
        self._failed = False
        self._tick = tick + 1

    def _label(self, channel: int) -> None:
        """One label message per frame of the tick: its received frames' labels, its sent frames
        benign (the node's own)."""
        for place, stamp_ns, way, identifier, label in self._tick_frames:
            self._write(channel, stamp_ns, {"frame": place, "tick": self._tick, "direction": way,
                                            "id": identifier, "label": label,
                                            "attack": self._kinds.get(label, "benign")})
        self._tick_frames.clear()

    def control(self, record: dict[str, Any]) -> None:
        """A control applied before the coming tick, as the journal's ``control`` line holds it."""
        self._writer.add_metadata(CONTROL, {"before": str(self._tick),
                                            "control": json.dumps(record, separators=(",", ":"))})

    def stop(self) -> None:
        """Write the end metadata and the summary, close the file; safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        try:
            self._writer.add_metadata(END, {"rx": str(self._rx)})
            self._writer.finish()  # type: ignore[no-untyped-call]
        finally:
            self._file.close()


def read_journal(path: str) -> journal.Journal:
    """The tick journal inside the MCAP recording ``path``; ConfigError says what is wrong."""
    head: dict[str, Any] | None = None
    trailing: int | None = None
    ticks: list[TickRecord] = []
    controls: dict[int, list[dict[str, Any]]] = {}
    for name, data in _metadata(path):
        if name == HEAD:
            head = json.loads(data["head"])
        elif name == END:
            trailing = int(data["rx"])
        elif name == CONTROL:
            controls.setdefault(int(data["before"]), []).append(json.loads(data["control"]))
    if head is None or head.get("format") != journal.FORMAT:
        raise ConfigError(f"{path} holds no ecu-sim tick journal: it was not written by "
                          "ecu-sim --record FILE.mcap")
    for record in messages(path, TICKS):
        ticks.append(TickRecord(int(record["rx"]), int(record["tx"]), bool(record["skipped"]),
                                bool(record["failed"])))
    return journal.Journal(head, ticks, [], trailing, controls)


def _metadata(path: str) -> Iterator[tuple[str, dict[str, str]]]:
    try:
        from mcap.exceptions import McapError
        from mcap.reader import make_reader
    except ImportError:
        raise _mcap_missing() from None
    try:
        with open(path, "rb") as handle:
            for item in make_reader(handle).iter_metadata():
                yield item.name, dict(item.metadata)
    except (OSError, McapError, ValueError, KeyError) as exc:
        raise ConfigError(f"{path} cannot be read as MCAP ({type(exc).__name__}: {exc})") from None


def messages(path: str, topic: str) -> Iterator[dict[str, Any]]:
    """The JSON messages of one topic in the order they were written."""
    try:
        from mcap.exceptions import McapError
        from mcap.reader import make_reader
    except ImportError:
        raise _mcap_missing() from None
    try:
        with open(path, "rb") as handle:
            for _, _, message in make_reader(handle).iter_messages(topics=[topic], log_time_order=False):
                yield json.loads(message.data)
    except (OSError, McapError, ValueError, KeyError) as exc:
        raise ConfigError(f"{path} cannot be read as MCAP ({type(exc).__name__}: {exc})") from None


class FrameReader:
    """The frames of ``/can/frames`` as python-can messages, as ``can.LogReader`` gives a log's."""

    def __init__(self, path: str) -> None:
        self._path = path

    def __enter__(self) -> FrameReader:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __iter__(self) -> Iterator[can.Message]:
        for f in messages(self._path, FRAMES):
            yield can.Message(timestamp=f["timestamp"], arbitration_id=f["id"], is_extended_id=f["extended"],
                              is_fd=f["fd"], bitrate_switch=f["brs"], is_remote_frame=f["remote"],
                              is_error_frame=f["error"], dlc=f["dlc"], data=bytes.fromhex(f["data"]),
                              is_rx=f["direction"] == "rx", check=False)
