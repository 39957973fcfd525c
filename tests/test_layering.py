"""Contract test for the one invariant (ARCHITECTURE.md).

* ``accounting`` imports nothing from ``dpcg`` or ``audits``; ``dpcg`` imports nothing
  from ``audits``.
* Only ``accounting`` draws randomness that a privacy analysis depends on. In ``dpcg``
  no module may import ``random``/``secrets``/``numpy.random`` or call a generator's
  sampling methods, except the modules in :data:`NON_PRIVACY_RANDOMNESS`, each with
  the reason its randomness is not privacy noise.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: dpcg modules allowed to draw randomness that is not privacy noise, with the reason.
NON_PRIVACY_RANDOMNESS: dict[str, str] = {
    "dpcg/datasets": "forward sampling of synthetic benchmark data (the data, not a release)",
    "dpcg/citests/crt.py": (
        "model-X resamples of X given Z for the (Priv)CRT: the sensitivity bound holds for "
        "every realisation (docs/privacy/privcrt.md); drawn from a generator passed in or "
        "handed out by the session, never privacy noise"
    ),
}

#: Modules allowed to import a package above their own, with the reason.
UPWARD_IMPORTS: dict[str, str] = {
    "dpcg/cli/audit.py": "the `dpcg audit` entry point runs the audits package (lazily)",
}

#: Generator / RandomState methods that draw random numbers.
SAMPLING_METHODS = frozenset(
    {
        "laplace", "exponential", "gumbel", "normal", "standard_normal", "standard_exponential",
        "uniform", "random", "integers", "randint", "rand", "randn", "choice", "permutation",
        "permuted", "shuffle", "binomial", "poisson", "geometric", "multinomial",
        "multivariate_normal", "logistic", "beta", "gamma", "standard_gamma", "random_sample",
        "default_rng", "SeedSequence", "Generator", "RandomState", "PCG64", "Philox",
    }
)
FORBIDDEN_MODULES = ("random", "secrets", "numpy.random")


def _py_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _imports(tree: ast.AST) -> list[str]:
    """Modules imported statically, or dynamically with a literal module name."""
    names: list[str] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.append(node.args[0].value)
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _allowed(path: Path) -> bool:
    rel = path.relative_to(ROOT).as_posix()
    return any(rel == key or rel.startswith(key + "/") for key in NON_PRIVACY_RANDOMNESS)


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [("accounting", ("dpcg", "audits")), ("dpcg", ("audits",))],
)
def test_import_direction(package: str, forbidden: tuple[str, ...]) -> None:
    offenders = []
    for path in _py_files(package):
        if path.relative_to(ROOT).as_posix() in UPWARD_IMPORTS:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for name in _imports(tree):
            if name.split(".")[0] in forbidden:
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not offenders, "layering broken:\n" + "\n".join(offenders)


def randomness_offences(source: str) -> list[str]:
    """Lines of ``source`` that import a randomness module or call a sampling method."""
    tree = ast.parse(source)
    found: list[str] = []
    for name in _imports(tree):
        if any(name == m or name.startswith(m + ".") for m in FORBIDDEN_MODULES):
            found.append(f"imports {name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "random":
            found.append(f"line {node.lineno}: uses .random")
        if isinstance(node, ast.Call):
            func = node.func
            attr = func.attr if isinstance(func, ast.Attribute) else (
                func.id if isinstance(func, ast.Name) else None
            )
            if attr in SAMPLING_METHODS:
                found.append(f"line {node.lineno}: calls {attr}()")
    return found


def test_only_accounting_draws_noise() -> None:
    offenders = []
    for path in _py_files("dpcg"):
        if _allowed(path):
            continue
        for what in randomness_offences(path.read_text()):
            offenders.append(f"{path.relative_to(ROOT)}: {what}")
    assert not offenders, (
        "randomness drawn outside accounting (route it through an accounting primitive, or "
        "add the module to NON_PRIVACY_RANDOMNESS with a reason a reviewer accepts):\n"
        + "\n".join(offenders)
    )


def test_dynamic_imports_are_seen() -> None:
    tree = ast.parse("import importlib\nm = importlib.import_module('audits.suite')")
    assert "audits.suite" in _imports(tree)


def test_detector_catches_noise() -> None:
    """The detector itself must flag the usual ways of adding noise."""
    assert randomness_offences("import numpy as np\nx = np.random.laplace(0, 1)")
    assert randomness_offences("def f(rng):\n    return rng.laplace(0.0, 1.0)")
    assert randomness_offences("from numpy.random import default_rng")
    assert randomness_offences("import random\nrandom.gauss(0, 1)")
    assert not randomness_offences("import numpy as np\nx = np.bincount([1, 2])")
