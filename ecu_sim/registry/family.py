"""One table per family of kinds, each kind defined once: its name, its parameters, its help, its builder.

A family (the attacks, the faults, a person's controls, and the diagnostic services and identifiers
that come after them) is a :class:`Family`: a builder registers itself with a decorator that names
the kind, the frozen dataclass of its parameters and its help line. The grammar that reads a spec,
the command's ``--list``, the documentation's tables and the error messages all read the family,
so adding a kind touches one entry, the way python-can names each interface once in one table.

A parameter is a dataclass field made by :func:`param`, which says how its text is read
(:class:`Reader`) and what its default is written as; the kind's ``read`` makes the whole record
from ``KEY=VALUE`` text, so a misspelt key, a value of the wrong kind or a choice not offered is
refused when the spec is read, before anything is built. Checks across parameters belong in the
record's ``__post_init__``, raising :class:`ParamError`.

This stage depends on nothing, so every stage may keep a family of its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

P = TypeVar("P")
C = TypeVar("C")
R = TypeVar("R")


class ParamError(ValueError):
    """A parameter, or a set of them, that a kind does not take; the message says what is expected."""


class UnknownKind(LookupError):
    """A name no kind of the family has; the message names the kinds it has."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Reader:
    """How a parameter's text becomes its value: ``read`` raises ValueError for text that is not
    ``meaning``; ``choices`` (when given) are the only texts taken; ``keep_case`` keeps the text's
    case (a path, a message's name), where every other value is read in lower case; ``refusal`` is
    the message of a text refused, formatted with the ``kind``, the ``key``, the ``text`` and the
    ``meaning``."""

    read: Callable[[str], Any]
    meaning: str
    choices: tuple[str, ...] = ()
    keep_case: bool = False
    refusal: str = "{key}={text} is not {meaning}"

    def value(self, key: str, text: str, kind: str = "") -> Any:
        """The value of ``text``; ParamError naming ``key`` and what is expected."""
        if self.choices and text not in self.choices:
            raise ParamError(f"{key}={text} is not one of {', '.join(self.choices)}")
        try:
            return self.read(text)
        except ValueError:
            says = self.refusal.format(kind=kind, key=key, text=text, meaning=self.meaning)
            raise ParamError(says) from None


def choice(*choices: str) -> Reader:
    """A word out of ``choices``."""
    return Reader(str, f"one of {', '.join(choices)}", choices)


def param(reader: Reader, default: str | None = None, key: str | None = None,
          missing: str | None = None) -> Any:
    """A parameter field: read by ``reader``, ``default`` written as a spec would write it (None:
    not given); ``key`` is the name a spec gives it where that is no Python name (``from``);
    ``missing``, when given, makes it required: the message of a spec without it, formatted with
    the ``kind``, the parameters given by key (empty when not) and the reader's ``meaning``."""
    value = None if default is None else reader.value("default", default)
    return dataclasses.field(default=value, metadata={"reader": reader, "default": default, "key": key,
                                                      "missing": missing})


@dataclass(frozen=True)
class KindParameter:
    """One parameter of a kind, as ``--list`` and the documentation show it."""

    key: str
    #: the record's field it fills (the key, unless that is no Python name)
    field: str
    reader: Reader
    #: the default as a spec writes it; None: not given
    default: str | None
    #: the message of a spec without it; None: it may be left out
    missing: str | None = None


def parameters(record: type[Any]) -> tuple[KindParameter, ...]:
    """The parameters of a kind's record, in the order its fields are declared."""
    return tuple(KindParameter(f.metadata["key"] or f.name, f.name, f.metadata["reader"],
                               f.metadata["default"], f.metadata["missing"])
                 for f in dataclasses.fields(record))


@dataclass(frozen=True)
class Kind(Generic[C, R]):
    """One kind of a family: its name, its parameters' record, its help line and its builder."""

    name: str
    params: type[Any]
    help: str
    build: Callable[[Any, C], R]

    def parameters(self) -> tuple[KindParameter, ...]:
        return parameters(self.params)

    def values(self, record: Any) -> tuple[tuple[str, Any], ...]:
        """The values of one of this kind's records, by key, in the order of its parameters."""
        return tuple((p.key, getattr(record, p.field)) for p in self.parameters())

    def read(self, given: Mapping[str, str]) -> Any:
        """The record of ``given`` (key -> text), the rest at their defaults; ParamError for a key
        the record has no field of, a value its reader refuses, or a combination its checks refuse."""
        known = {p.key: p for p in self.parameters()}
        for p in known.values():
            if p.missing is not None and p.key not in given:
                named = {key: given.get(key, "") for key in known}
                says = p.missing.format_map({**named, "kind": self.name, "meaning": p.reader.meaning})
                raise ParamError(says)
        values: dict[str, object] = {}
        for key, text in given.items():
            if key not in known:
                raise ParamError(f"{self.name} takes no {key!r}; it takes {', '.join(known)}")
            reader = known[key].reader
            text = text if reader.keep_case else text.lower()
            values[known[key].field] = reader.value(key, text, self.name)
        return self.params(**values)


class Family(Generic[C, R]):
    """The kinds of one family by name, in the order they were registered; a builder takes its
    kind's record and the family's context ``C`` and gives ``R``."""

    def __init__(self, noun: str) -> None:
        #: what one kind is called in a message ("attack", "fault")
        self.noun = noun
        self._kinds: dict[str, Kind[C, R]] = {}

    def register(self, name: str, params: type[P], help: str
                 ) -> Callable[[Callable[[P, C], R]], Callable[[P, C], R]]:
        """A decorator: the builder of kind ``name``, whose parameters are the dataclass ``params``."""
        def add(build: Callable[[P, C], R]) -> Callable[[P, C], R]:
            if name in self._kinds:
                raise ValueError(f"two {self.noun} kinds are called {name!r}")
            self._kinds[name] = Kind(name, params, help, build)
            return build
        return add

    def __getitem__(self, name: str) -> Kind[C, R]:
        """The kind called ``name``; UnknownKind names the ones there are."""
        try:
            return self._kinds[name]
        except KeyError:
            raise UnknownKind(f"unknown {self.noun} {name!r}; known: {', '.join(self._kinds)}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._kinds

    def __iter__(self) -> Iterator[Kind[C, R]]:
        return iter(self._kinds.values())

    def __len__(self) -> int:
        return len(self._kinds)

    def names(self) -> tuple[str, ...]:
        return tuple(self._kinds)
