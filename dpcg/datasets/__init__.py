"""Bundled benchmark networks (bnlearn BIF files) and synthetic data generators.

``load_network(name)`` parses ``dpcg/datasets/bif/<name>.bif.gz`` with the project's
own BIF reader, or generates a random network from a spec name such as
``"random:nodes=50,max_parents=3,card=2-5,seed=1,conc=1"``
(:mod:`dpcg.datasets.random_network`); ``network.sample(n, seed)`` draws a
:class:`~dpcg.data.Dataset` by vectorised forward sampling. The randomness here makes
synthetic data, not privacy noise (allowlisted in ``tests/test_layering.py``).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from dpcg.datasets.bif import BifModel, parse_bif, read_bif
from dpcg.datasets.network import BayesianNetwork
from dpcg.datasets.random_network import (
    RANDOM_PREFIX,
    RandomSpec,
    parse_random_spec,
    random_network,
)
from dpcg.errors import DatasetNotFoundError

__all__ = [
    "BIF_DIR",
    "BayesianNetwork",
    "BifModel",
    "RandomSpec",
    "list_networks",
    "load_network",
    "network_from_bif",
    "parse_bif",
    "parse_random_spec",
    "random_network",
    "read_bif",
]

#: Directory of the bundled ``.bif.gz`` files.
BIF_DIR = Path(__file__).resolve().parent / "bif"


def list_networks() -> tuple[str, ...]:
    """Names of the bundled networks, sorted by number of nodes then name."""
    names = [p.name.removesuffix(".bif.gz") for p in BIF_DIR.glob("*.bif.gz")]
    return tuple(sorted(names, key=lambda name: (_node_count(name), name)))


def network_from_bif(model: BifModel) -> BayesianNetwork:
    """A :class:`BayesianNetwork` from a parsed BIF model."""
    return BayesianNetwork(model.name, model.variables, model.parents, model.cpts)


@cache
def _load(name: str) -> BayesianNetwork:
    return network_from_bif(read_bif(BIF_DIR / f"{name}.bif.gz"))


@cache
def _node_count(name: str) -> int:
    return _load(name).n_nodes


@cache
def _random(canonical: str) -> BayesianNetwork:
    return random_network(canonical)


def load_network(name: str) -> BayesianNetwork:
    """The bundled network called ``name`` (e.g. ``"alarm"``), or the random network of a
    ``random:...`` spec (see :mod:`dpcg.datasets.random_network`); built once and cached.

    Raises :class:`~dpcg.errors.DatasetNotFoundError` listing the available names, or
    :class:`~dpcg.errors.DataValidationError` for a malformed ``random:`` spec.
    """
    if isinstance(name, str) and name.startswith(RANDOM_PREFIX):
        return _random(parse_random_spec(name).name)
    if not isinstance(name, str) or not (BIF_DIR / f"{name}.bif.gz").is_file():
        available = sorted(p.name.removesuffix(".bif.gz") for p in BIF_DIR.glob("*.bif.gz"))
        raise DatasetNotFoundError(
            f"no bundled network {name!r}; available: {', '.join(available)} "
            f"(or a generated one: {RANDOM_PREFIX}nodes=P,max_parents=K,card=LO-HI,seed=S,conc=A)"
        )
    return _load(name)
