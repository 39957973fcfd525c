"""Registry of CI tests by the names the CLI uses (``dpcg discover --test NAME``).

A test is registered by the module that defines it, with one call at import time::

    from dpcg.citests.registry import TestSpec, register_test

    register_test(TestSpec(name="g2", build=build_g2, description="G^2 test",
                           options=NoOptions, data="discrete"))

``options`` is a frozen dataclass whose fields are the test's own options: each field
is declared with :func:`option` (default, help text, argparse type), validates itself in
``__post_init__`` (raising :class:`dpcg.errors.CITestError` naming the field) and becomes
a ``dpcg discover`` flag (``--field-name``) derived by the CLI. ``build`` gets a
:class:`TestContext` (the dataset, ``alpha`` and the options instance) and returns a
:class:`Tester` (e.g. a :class:`~dpcg.citests.base.CITest`). Private tests
(``private=True``) have no ``build``: their private algorithm builds them with the run's
session (:mod:`dpcg.private.private_ci_pc`).

:func:`tests` imports every module of :mod:`dpcg.citests` once (package scan, so a new
test module registers itself without any other file being edited); :func:`get_test`
imports only the usual module first and scans when the name is not there.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

from dpcg.data.dataset import Dataset
from dpcg.errors import CITestError, DpcgError

__all__ = [
    "NoOptions",
    "OptionInfo",
    "Outcome",
    "TestContext",
    "TestSpec",
    "Tester",
    "Truth",
    "get_test",
    "make_options",
    "option",
    "option_infos",
    "register_test",
    "tests",
]

#: The true DAG ``(nodes, edges)`` of a bundled network.
Truth = tuple[tuple[str, ...], tuple[tuple[str, str], ...]]

OptT = TypeVar("OptT")


class Outcome(Protocol):
    """What one test answers (:class:`~dpcg.citests.base.CIResult` or alike)."""

    @property
    def independent(self) -> bool: ...

    @property
    def statistic(self) -> float | None: ...

    @property
    def pvalue(self) -> float | None: ...


class Tester(Protocol):
    """What ``build`` returns: anything answering ``test(x, y, S)``."""

    def test(self, x: int, y: int, S: tuple[int, ...]) -> Outcome: ...


def option(default: Any, *, help: str, type: Callable[[str], object] | None = None,
           flag: str | None = None, metavar: str | None = None) -> Any:
    """A typed option field: ``default``, ``help`` text, the argparse ``type`` used to
    parse its flag (``None`` for a boolean switch) and the flag (default
    ``--field-name``). Returns a :func:`dataclasses.field`."""
    return field(default=default, metadata={"help": help, "type": type, "flag": flag,
                                            "metavar": metavar})


@dataclass(frozen=True)
class OptionInfo:
    """One option field as the CLI sees it."""

    name: str
    flag: str
    help: str
    type: Callable[[str], object] | None
    metavar: str | None
    default: object


def option_infos(cls: type) -> tuple[OptionInfo, ...]:
    """The :func:`option` fields of the dataclass ``cls`` (fields without ``help``
    metadata are not options and are skipped)."""
    if not is_dataclass(cls):
        raise DpcgError(f"{cls.__name__}: options must be a dataclass")
    out = []
    for f in fields(cls):
        meta = f.metadata
        if "help" not in meta:
            continue
        flag = meta.get("flag") or "--" + f.name.replace("_", "-")
        default = None if f.default is MISSING else f.default
        out.append(OptionInfo(f.name, str(flag), str(meta["help"]), meta.get("type"),
                              meta.get("metavar"), default))
    return tuple(out)


def make_options(cls: type[OptT], given: Mapping[str, object],
                 error: type[DpcgError] = CITestError) -> OptT:
    """``cls(**given)``: an unknown name is an ``error`` naming it (never ignored)."""
    if not is_dataclass(cls):
        raise DpcgError(f"{cls.__name__}: options must be a dataclass")
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(given) - known)
    if unknown:
        raise error(f"{', '.join(unknown)}: not an option of {cls.__name__} "
                        f"(options: {sorted(known) or 'none'})")
    return cls(**given)


@dataclass(frozen=True)
class NoOptions:
    """A test (or algorithm) without options of its own."""


@dataclass(frozen=True)
class TestContext(Generic[OptT]):
    """What a non-private CI test is built from."""

    __test__ = False  # not a pytest test class

    dataset: Dataset
    alpha: float
    options: OptT
    #: The true DAG when known (bundled networks), else ``None``.
    truth_dag: Truth | None = None


@dataclass(frozen=True)
class TestSpec(Generic[OptT]):
    """A registered CI test."""

    __test__ = False  # not a pytest test class

    name: str
    description: str
    options: type[OptT]
    #: Builds the non-private tester; ``None`` for a private test (built by its algorithm).
    build: Callable[[TestContext[OptT]], Tester] | None = None
    private: bool = False
    #: The data the test accepts.
    data: Literal["discrete", "continuous", "mixed", "any"] = "any"

    def make(self, ctx: TestContext[OptT]) -> Tester:
        """Build the non-private tester (a private test refuses: it needs a session)."""
        if self.build is None:
            raise CITestError(
                f"--test {self.name} is a private test; use it with a private --algorithm"
            )
        return self.build(ctx)


_TESTS: dict[str, TestSpec[Any]] = {}
_scanned: list[bool] = []


def register_test(spec: TestSpec[OptT]) -> TestSpec[OptT]:
    """Add a CI test; a different spec under an existing name is an error."""
    old = _TESTS.get(spec.name)
    if old is not None and old != spec:
        raise CITestError(f"CI test {spec.name!r} is already registered")
    _TESTS[spec.name] = spec
    return spec


def unregister_test(name: str) -> None:
    """Remove a test (tests of the registry use it to clean up)."""
    _TESTS.pop(name, None)


def _scan() -> None:
    """Import every module of :mod:`dpcg.citests` once, so each can register its tests."""
    if _scanned:
        return
    _scanned.append(True)
    package = importlib.import_module("dpcg.citests")
    for info in pkgutil.iter_modules(package.__path__, prefix="dpcg.citests."):
        importlib.import_module(info.name)


def tests() -> dict[str, TestSpec[Any]]:
    """Every registered test, by name."""
    _scan()
    return dict(sorted(_TESTS.items()))


#: Modules :func:`get_test` imports before scanning the whole package (the common
#: non-private tests: a G^2 run then loads neither scipy.stats nor the kernel tests).
_FIRST = ("dpcg.citests.nonprivate",)


def get_test(name: str) -> TestSpec[Any]:
    """The test ``name``: its usual module is imported first, the whole package only
    when the name is not found there (lazy discovery)."""
    if name in _TESTS:
        return _TESTS[name]
    if not _scanned:
        for module in _FIRST:
            importlib.import_module(module)
        if name in _TESTS:
            return _TESTS[name]
    specs = tests()
    if name not in specs:
        raise CITestError(f"unknown --test {name!r}; choose from {sorted(specs)}")
    return specs[name]
