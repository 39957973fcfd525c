"""``DiscoverRequest``: one discovery run, validated once, from one constraint table.

The CLI (``dpcg discover``) and the Python API (:func:`dpcg.discover`) only build a
request; :func:`dpcg.pipeline.run.execute` runs it. Every option of a run is a field of
:class:`DiscoverRequest` and has one row in :data:`CONSTRAINTS`: its default, what values
it takes, and which runs it applies to. :meth:`DiscoverRequest.validate` checks every row
(nothing is read and nothing is charged before it passed); an option given to a run it
does not apply to is an error, never silently ignored.

Error messages name an option the way the user spelled it: ``epsilon`` in Python,
``--epsilon`` on the command line (:attr:`DiscoverRequest.spelling`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from dpcg.errors import AlgorithmError, CITestError, DataValidationError, DpcgError

__all__ = ["AUTO", "CONSTRAINTS", "DEFAULT", "NONPRIVATE", "NO_LEDGER", "Constraint",
           "DiscoverRequest", "NetworkSpec"]

#: The non-private algorithm (PC-stable).
NONPRIVATE = "pc"
#: ``algorithm="auto"``: the algorithm and test chosen from the schema, n and the budget
#: (:func:`dpcg.pipeline.choose.choose`).
AUTO = "auto"


class _Default:
    """``ledger=DEFAULT``: the policy's default ledger (``dpcg discover`` without --ledger)."""

    def __repr__(self) -> str:
        return "dpcg.DEFAULT"


#: The ledger policy's default ledger (the one ``dpcg discover`` uses without --ledger).
DEFAULT: Any = _Default()
#: ``ledger=NO_LEDGER``: keep the run's entries in memory only (a throw-away experiment;
#: nothing durable; the CLI's ``--no-ledger``).
NO_LEDGER: None = None

#: Which runs an option applies to.
Scope = Literal["any", "private", "nonprivate", "ledger", "network", "memory", "engine"]

_SCOPE_TEXT = {
    "private": "only apply to a private algorithm",
    "nonprivate": "only apply to non-private pc",
    "ledger": "only apply to a run recorded in a ledger",
    "network": "only apply to a sample of a network (--dataset / a network name)",
    "memory": "apply to data read in memory (engine numpy); a table engine reads the "
              "columns the schema declares and never clips",
    "engine": "apply to a table engine (duckdb/spark)",
}


def _show(value: object) -> str:
    """``repr(value)``, shortened (a huge object never floods an error message)."""
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            float(value)
        except OverflowError:
            return "an integer beyond the float range"
    try:
        text = repr(value)
    except ValueError:  # an int too long for str()
        return f"a {type(value).__name__}"
    return text if len(text) <= 80 else text[:77] + "..."


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        out = float(value)
    except OverflowError:
        return None
    return out if math.isfinite(out) else None


def _number_in(low: float, high: float, *, low_open: bool = True,
               what: str = "") -> Callable[[object], str | None]:
    def check(value: object) -> str | None:
        x = _finite(value)
        lo_ok = x is not None and (x > low if low_open else x >= low)
        if x is None or not lo_ok or not x < high:
            left = "(" if low_open else "["
            return f"expected a number in {left}{low:g}, {high:g}){what}, got {_show(value)}"
        return None
    return check


def _positive(value: object) -> str | None:
    x = _finite(value)
    if x is None:
        return f"expected a finite number, got {_show(value)}"
    return None if x > 0 else f"must be > 0, got {_show(value)}"


def _nonneg_int(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return f"expected an integer >= 0, got {_show(value)}"
    return None


def _positive_int(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return f"must be a positive integer, got {_show(value)}"
    return None


def _int(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"expected an integer, got {_show(value)}"
    return None


def _text(value: object) -> str | None:
    return None if isinstance(value, str) else f"expected a string, got {_show(value)}"


def _path(value: object) -> str | None:
    if isinstance(value, str | os.PathLike):
        return None
    return f"expected a file path, got a {type(value).__name__}"


def _lifetime_rule(value: object) -> str | None:
    return None if value in ("basic", "zcdp") else \
        f"expected 'basic' or 'zcdp', got {_show(value)}"


def _ledger(value: object) -> str | None:
    if value is None or value is DEFAULT or isinstance(value, str | os.PathLike):
        return None
    return ("expected the path of a ledger file (str or os.PathLike) or a postgresql:// "
            "URL, dpcg.DEFAULT or "
            f"dpcg.NO_LEDGER (None), got a {type(value).__name__}")


def _anything(value: object) -> str | None:
    return None


_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def parse_size(value: object) -> int | None:
    """Bytes of ``value``: a positive int, or a string such as ``"2GB"``, ``"512MiB"``;
    ``None`` when it is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if not isinstance(value, str):
        return None
    text = value.strip().upper().replace(" ", "")
    number = text.rstrip("KMGTIB")
    unit = text[len(number):]
    if unit not in _UNITS:
        return None
    try:
        amount = float(number)
    except ValueError:
        return None
    size = int(amount * _UNITS[unit])
    return size if math.isfinite(amount) and size > 0 else None


def _size(value: object) -> str | None:
    if parse_size(value) is None:
        return f"expected a size such as 2GB, 512MiB or a number of bytes, got {_show(value)}"
    return None


@dataclass(frozen=True)
class Constraint:
    """One option of a run: its values, the runs it applies to, the error type."""

    name: str
    scope: Scope
    check: Callable[[object], str | None]
    error: type[DpcgError] = AlgorithmError
    #: The value that means "not given" (``None`` for most options).
    unset: object = None


#: THE table of a run's options (the only place they are validated).
CONSTRAINTS: tuple[Constraint, ...] = (
    Constraint("algorithm", "any", _text),
    Constraint("test", "any", _text),
    Constraint("alpha", "any", _number_in(0.0, 1.0), CITestError),
    Constraint("max_depth", "any", _nonneg_int),
    Constraint("background", "any", _anything),
    Constraint("epsilon", "private", _positive),
    Constraint("delta", "private", _number_in(0.0, 1.0, low_open=False)),
    Constraint("noise_seed", "private", _int),
    Constraint("ledger", "private", _ledger, unset=DEFAULT),
    Constraint("dataset_id", "ledger", _text),
    Constraint("lifetime_epsilon", "ledger", _positive),
    Constraint("lifetime_delta", "ledger", _number_in(0.0, 1.0, low_open=False)),
    Constraint("lifetime_rule", "ledger", _lifetime_rule),
    Constraint("signing_key", "ledger", _path),
    Constraint("rows", "network", _positive_int, DataValidationError),
    Constraint("seed", "network", _int, DataValidationError),
    Constraint("columns", "memory", _anything),
    Constraint("clip", "memory", _anything, unset=False),
    Constraint("max_seconds", "any", _positive),
    Constraint("max_memory", "any", _size),
    Constraint("workers", "nonprivate", _positive_int),
    Constraint("engine", "any", _anything),
    Constraint("table", "engine", _text),
    Constraint("spark_master", "engine", _text),
    Constraint("memory_limit", "engine", _text),
)


@dataclass(frozen=True)
class NetworkSpec:
    """A sample of a network: a bundled name, a BIF file or ``random:...`` (public recipe)."""

    name: str
    rows: int = 10_000
    seed: int = 0


@dataclass(frozen=True)
class DiscoverRequest:
    """One discovery run (see the module docstring). Build it with :meth:`create`."""

    #: What to learn from: a DataFrame, an array, a path, a Dataset, a table engine, a
    #: DuckDB relation/connection, a Spark DataFrame, or a :class:`NetworkSpec`.
    data: object
    schema: object = None
    algorithm: str = NONPRIVATE
    test: str | None = None
    alpha: float = 0.05
    max_depth: int | None = None
    background: object = None
    epsilon: float | None = None
    delta: float | None = None
    noise_seed: int | None = None
    ledger: object = DEFAULT
    dataset_id: str | None = None
    lifetime_epsilon: float | None = None
    lifetime_delta: float | None = None
    #: how a NEW dataset id's lifetime composes (``basic`` or ``zcdp``; None: basic)
    lifetime_rule: str | None = None
    signing_key: str | os.PathLike[str] | None = None
    rows: int | None = None
    seed: int | None = None
    columns: tuple[str, ...] | None = None
    clip: bool = False
    engine: object = None
    table: str | None = None
    spark_master: str | None = None
    memory_limit: str | None = None
    #: The run's time budget (seconds) and memory budget (bytes or "2GB"); ``None``: the
    #: documented defaults of :func:`dpcg.pc.limits.default_limits` (docs/memory.md).
    max_seconds: float | None = None
    max_memory: int | str | None = None
    #: Processes for a non-private level's independent tests (results identical);
    #: ``None``: every usable core, for levels of at least ``AUTO_PARALLEL_TESTS`` tests
    #: (``dpcg.pipeline.run.auto_workers``).
    workers: int | None = None
    #: The algorithm's ``Params`` fields and the test's option fields, by field name.
    options: Mapping[str, object] = field(default_factory=dict)
    #: How error messages name options: ``"python"`` (``epsilon``) or ``"cli"``
    #: (``--epsilon``).
    spelling: Literal["python", "cli"] = "python"

    # ------------------------------------------------------------------ building

    @classmethod
    def create(cls, data: object, **kwargs: Any) -> DiscoverRequest:
        """A validated request (:meth:`validate`)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise AlgorithmError(f"{', '.join(unknown)}: not an option of a discovery run")
        if kwargs.get("columns") is not None and not isinstance(kwargs["columns"], tuple):
            kwargs["columns"] = tuple(kwargs["columns"])
        request = cls(data, **kwargs)
        request.validate()
        return request

    def with_(self, **changes: Any) -> DiscoverRequest:
        return replace(self, **changes)

    def name(self, option: str) -> str:
        """``option`` as the user spelled it."""
        if self.spelling == "cli":
            return {"table": "--duckdb-table", "signing_key": "--ledger-key",
                    "network": "--dataset"}.get(option, "--" + option.replace("_", "-"))
        return option

    @property
    def private(self) -> bool:
        return self.algorithm != NONPRIVATE

    @property
    def recorded(self) -> bool:
        """Recorded in a durable ledger (not ``NO_LEDGER``)."""
        return self.ledger is not None

    # ------------------------------------------------------------------ validation

    def given(self, option: str) -> bool:
        constraint = _BY_NAME[option]
        value = getattr(self, option)
        if option == "ledger" and value is None and not self.private:
            return False  # NO_LEDGER is what non-private pc does anyway
        unset = constraint.unset
        return not (value is unset or (unset is not DEFAULT and value == unset))

    def validate(self) -> None:
        """Check every row of :data:`CONSTRAINTS` (values, then applicability)."""
        for c in CONSTRAINTS:
            if not self.given(c.name):
                continue
            problem = c.check(getattr(self, c.name))
            if problem is not None:
                raise c.error(f"{self.name(c.name)}: {problem}")
        if not isinstance(self.options, Mapping):
            raise AlgorithmError(f"options: expected a mapping, got {_show(self.options)}")
        network = isinstance(self.data, NetworkSpec)
        misplaced: dict[str, list[str]] = {}
        for c in CONSTRAINTS:
            if not self.given(c.name):
                continue
            applies = {
                "any": True,
                "private": self.private,
                "nonprivate": not self.private,
                "ledger": self.private and self.recorded,
                "network": network,
                "memory": True,  # checked where the data are resolved
                "engine": True,  # idem
            }[c.scope]
            if not applies:
                misplaced.setdefault(c.scope, []).append(c.name)
        if "private" in misplaced:
            names = misplaced["private"] + misplaced.pop("ledger", [])
            raise AlgorithmError(f"{', '.join(self.name(n) for n in names)}: "
                                 f"{_SCOPE_TEXT['private']}, not to pc")
        if "nonprivate" in misplaced:
            names = misplaced["nonprivate"]
            raise AlgorithmError(f"{', '.join(self.name(n) for n in names)}: "
                                 f"{_SCOPE_TEXT['nonprivate']}")
        if "ledger" in misplaced:
            names = misplaced["ledger"]
            nl = "--no-ledger" if self.spelling == "cli" else "ledger=NO_LEDGER"
            raise AlgorithmError(f"{nl}: {', '.join(self.name(n) for n in names)} "
                                 f"{_SCOPE_TEXT['ledger']}")
        if "network" in misplaced:
            names = misplaced["network"]
            raise DataValidationError(f"{', '.join(self.name(n) for n in names)}: "
                                      f"{_SCOPE_TEXT['network']}")
        if self.private and self.algorithm != AUTO:
            from dpcg.private.registry import algorithms, get_algorithm

            try:
                get_algorithm(self.algorithm)
            except AlgorithmError:
                raise AlgorithmError(
                    f"unknown {self.name('algorithm')} {self.algorithm!r}; choose from "
                    f"{[NONPRIVATE, AUTO, *sorted(algorithms())]}") from None
        if self.private and self.epsilon is None:
            raise AlgorithmError(
                f"{self.name('epsilon')}: algorithm {self.algorithm!r} is private and needs "
                f"{self.name('epsilon')} (the run's TOTAL privacy budget)")


_BY_NAME = {c.name: c for c in CONSTRAINTS}


def as_path(value: object) -> Path | None:
    return None if value is None else Path(str(value))
