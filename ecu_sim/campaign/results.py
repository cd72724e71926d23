"""The results table: rows appended as cases finish, read back to resume, sorted when complete.

A row is one ``write()`` of a whole line to a file opened for appending, so a campaign killed at
any moment leaves every finished row and at most a torn last line (a full disk, a power cut),
which resuming drops and runs again. When the campaign is complete the table is rewritten in the
campaign's case order, under a temporary name and renamed over the old one, so the final file is
the same whatever the executor and the number of workers, and is never half written. Parquet, with
the ``parquet`` extra, is written from the finished CSV the same way.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from ecu_sim.campaign.row import Row
from ecu_sim.errors import ConfigError, needs_extra

FILE_NAME = "results.csv"
#: columns that are text whatever they look like
TEXT_COLUMNS = ("id", "status", "frame_hash", "error")


class Results:
    """``folder/results.csv``: the rows so far, by case id, as the table's text, and the file rows
    are appended to. A row becomes text here (:meth:`Row.cells`), as it is appended."""

    def __init__(self, folder: Path, columns: Sequence[str], resume: bool, overwrite: bool) -> None:
        self.folder = folder
        self.path = folder / FILE_NAME
        self.columns = list(columns)
        self.rows: dict[str, dict[str, str]] = {}
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create the results folder {folder}: {exc.strerror}") from None
        if self.path.exists() and not overwrite:
            if not resume:
                raise ConfigError(f"{self.path} exists: add --resume to finish that campaign, or "
                                  "--overwrite to start again")
            self._read_back()
        else:
            self._write_all([])
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)

    def _read_back(self) -> None:
        with open(self.path, "rb+") as handle:
            data = handle.read()
            whole = data.rfind(b"\n") + 1
            if whole < len(data):
                handle.truncate(whole)  # a torn last line: that case runs again
        reader = csv.DictReader(io.StringIO(data[:whole].decode("utf-8")))
        if reader.fieldnames is not None and list(reader.fieldnames) != self.columns:
            raise ConfigError(f"{self.path} has other columns than this campaign's: it holds another "
                              "campaign's results; choose another --out, or --overwrite")
        if reader.fieldnames is None:
            self._write_all([])
        for row in reader:
            self.rows[row["id"]] = row

    def append(self, row: Row) -> None:
        """Add a finished case's row to the file at once, in one write."""
        cells = row.cells()
        os.write(self._fd, self._line(cells).encode("utf-8"))
        self.rows[row.id] = cells

    def _line(self, row: dict[str, str]) -> str:
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerow([row.get(c, "") for c in self.columns])
        return buffer.getvalue()

    def close(self) -> None:
        os.close(self._fd)

    def finish(self, order: Sequence[str], parquet: bool) -> None:
        """Rewrite the table in ``order`` (ids), rows of cases no longer in the campaign last."""
        known = set(order)
        rows = [self.rows[i] for i in order if i in self.rows]
        rows += [row for i, row in self.rows.items() if i not in known]
        self._write_all(rows)
        if parquet:
            write_parquet(self.path, self.path.with_suffix(".parquet"))

    def _write_all(self, rows: Iterable[dict[str, str]]) -> None:
        temporary = self.path.with_name(f".{FILE_NAME}.tmp")
        with open(temporary, "w", encoding="utf-8", newline="") as out:
            out.write(",".join(self.columns) + "\n")
            for row in rows:
                out.write(self._line(row))
        os.replace(temporary, self.path)


def write_parquet(source: Path, target: Path) -> None:
    """The CSV table as Parquet (pyarrow infers the column types); atomic like the CSV."""
    try:
        import pyarrow
        from pyarrow import csv as pa_csv
        from pyarrow import parquet
    except ImportError:
        raise ConfigError(needs_extra("--parquet", "pyarrow", "parquet")) from None
    # hex ids and hashes of digits only (or like 1e5) would otherwise be read as numbers
    text = dict.fromkeys(TEXT_COLUMNS, pyarrow.string())
    table = pa_csv.read_csv(source, convert_options=pa_csv.ConvertOptions(column_types=text))
    temporary = target.with_name(f".{target.name}.tmp")
    parquet.write_table(table, temporary)
    os.replace(temporary, target)


def read_table(path: str) -> list[Row]:
    """A results table written by a campaign, its rows read back, for ``campaign compare``."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            rows = list(reader)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ConfigError(f"{path} is not a campaign's results table: {exc}") from None
    if reader.fieldnames is None or "id" not in reader.fieldnames or "status" not in reader.fieldnames:
        raise ConfigError(f"{path} is not a campaign's results table: it has no id and status columns")
    return [Row.parse(row) for row in rows]
