"""Contract test for the one invariant and the layers (ARCHITECTURE.md).

* ``accounting`` imports nothing from ``dpcg`` or ``audits``; ``dpcg`` imports nothing
  from ``audits``.
* Inside ``dpcg`` the sub-packages point one way, data -> stats -> citests -> pc ->
  private -> cli (a lower one never imports a higher one), and there are no import
  circles: neither between units (the sub-packages and the root-level modules such as
  ``dpcg/graph.py``) nor between modules. Every import counts, at module top or inside a
  function.
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
    "dpcg/citests/crt_law.py": (
        "model-X resamples of PrivCRT with a released law: each resample from the released "
        "moment vector re-noised at the release's PUBLIC Laplace scale (a parametric "
        "bootstrap for the test's level), from the session's resampling generator; the "
        "sensitivity bound holds for every realisation (docs/privacy/"
        "privcrt-released-law.md, Lemma L2), never privacy noise (the release itself is "
        "accounting's Laplace mechanism)"
    ),
    "dpcg/citests/noisy_g2.py": (
        "Monte-Carlo null of the G-test on released noisy tables: draws from the fitted "
        "model of released (post-processed) counts and the public noise variance, from a "
        "public seed (docs/privacy/algorithm-marginal-pc.md); never privacy noise"
    ),
    "dpcg/citests/noisy_gaussian.py": (
        "Monte-Carlo null of cov-pc's test: replicates of the PUBLIC release noise scale "
        "added to the released (post-processed) matrix, from the session's auxiliary "
        "generator (docs/privacy/algorithm-cov-pc.md); never privacy noise"
    ),
    "dpcg/testing.py": (
        "random test data and neighbouring tables for the exported conformance checks "
        "(check_algorithm / check_statistic / check_engine); nothing is released"
    ),
    "dpcg/regression.py": (
        "public random Fourier frequencies of the RFF ridge, drawn from a public seed that "
        "is a hyper-parameter (never from the data); the sensitivity bound holds for every "
        "realisation (docs/privacy/privgcm.md), never privacy noise"
    ),
}

#: Modules allowed to import a package above their own, with the reason.
UPWARD_IMPORTS: dict[str, str] = {
    "dpcg/cli/audit.py": "the `dpcg audit` entry point runs the audits package (lazily)",
    "dpcg/testing.py": ("check_statistic reuses the audits' sensitivity searches (imported "
                        "lazily inside it; the rest of dpcg.testing needs no audits)"),
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


#: The layers inside dpcg, lowest first: a unit may import only units at or below it.
LAYERS = ("data", "stats", "engines", "citests", "pc", "private", "cli")


def _module_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _module_imports(path: Path, modules: set[str]) -> set[str]:
    """The dpcg modules ``path`` imports (relative imports resolved; ``from pkg import
    sub`` counts as importing the submodule ``pkg.sub``)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    me = _module_of(path)
    package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            names.append(base)
            names.extend(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        else:
            names.extend(n for n in _imports(node) if isinstance(node, ast.Call))
        for name in names:
            if name in modules and name != me:
                found.add(name)
    # importing pkg.sub also runs pkg/__init__: keep the most specific targets only,
    # and never count a module's own ancestor packages (Python initialises them first)
    ancestors = {".".join(me.split(".")[:i]) for i in range(1, me.count(".") + 1)}
    return {m for m in found if m not in ancestors
            and not any(o.startswith(m + ".") for o in found)}


def _dpcg_graph() -> dict[str, set[str]]:
    files = _py_files("dpcg")
    modules = {_module_of(f) for f in files}
    return {_module_of(f): _module_imports(f, modules) for f in files}


def _unit(module: str) -> str:
    """``dpcg.pc.engine`` -> ``pc``; root-level modules are their own unit."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(package)"


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, todo = work[-1]
            if todo:
                w = todo.pop()
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, sorted(graph.get(w, ()))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_dpcg_layers_point_one_way() -> None:
    offenders = []
    for module, targets in sorted(_dpcg_graph().items()):
        a = _unit(module)
        for target in sorted(targets):
            b = _unit(target)
            if a in LAYERS and b in LAYERS and LAYERS.index(a) < LAYERS.index(b):
                offenders.append(f"{module} ({a}) imports {target} ({b})")
    assert not offenders, ("an import against data -> stats -> citests -> pc -> private -> "
                           "cli:\n" + "\n".join(offenders))


def test_no_import_circles_between_dpcg_units() -> None:
    units: dict[str, set[str]] = {}
    for module, targets in _dpcg_graph().items():
        a = _unit(module)
        units.setdefault(a, set()).update(_unit(t) for t in targets if _unit(t) != a)
    assert not _circles(units), f"import circles between dpcg units: {_circles(units)}"


def test_no_import_circles_between_dpcg_modules() -> None:
    circles = _circles(_dpcg_graph())
    assert not circles, f"import circles between dpcg modules: {circles}"


def test_circle_detector() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert not _circles({"a": {"b"}, "b": set()})


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
