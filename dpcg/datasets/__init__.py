"""Bundled benchmark networks (bnlearn BIF files) and synthetic data generators.

``load_network(name)`` parses ``dpcg/datasets/bif/<name>.bif.gz`` with the project's
own BIF reader, reads a BIF file of the user's (a path ending in ``.bif`` or
``.bif.gz``), or generates a random network from a spec name such as
``"random:nodes=50,max_parents=3,card=2-5,seed=1,conc=1"``
(:mod:`dpcg.datasets.random_network`); ``network.sample(n, seed)`` draws a
:class:`~dpcg.data.Dataset` by vectorised forward sampling. The randomness here makes
synthetic data, not privacy noise (allowlisted in ``tests/test_layering.py``).
"""

from __future__ import annotations

import hashlib
import os
from functools import cache
from pathlib import Path

from dpcg.datasets.bif import BifModel, bif_from_bytes, bif_stem, parse_bif, read_bif
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
    "bif_file_id",
    "bif_stem",
    "is_bif_path",
    "list_networks",
    "load_bif_file",
    "load_network",
    "network_from_bif",
    "parse_bif",
    "parse_random_spec",
    "random_network",
    "read_bif",
]

#: Directory of the bundled ``.bif.gz`` files.
BIF_DIR = Path(__file__).resolve().parent / "bif"
#: Endings (any case) that make a dataset name a path to a BIF file of the user's.
BIF_SUFFIXES = (".bif", ".bif.gz")


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


def is_bif_path(name: str) -> bool:
    """Whether ``name`` names a BIF file (ends in ``.bif`` or ``.bif.gz``, any case)
    rather than a bundled network or a ``random:`` spec."""
    return name.lower().endswith(BIF_SUFFIXES)


def _bif_file(name: str) -> tuple[Path, bytes, str]:
    """``(resolved path, the file's bytes, their SHA-256 hex)``."""
    path = Path(name).expanduser()
    try:
        raw = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise DatasetNotFoundError(f"no BIF file {name!r}") from None
    except OSError as exc:
        raise DatasetNotFoundError(f"cannot read BIF file {name!r}: "
                                   f"{exc.strerror or type(exc).__name__}") from None
    return path.resolve(), raw, hashlib.sha256(raw).hexdigest()


#: Networks read from BIF files, by the SHA-256 of the file's bytes (an edited file is
#: parsed again; the same content anywhere is parsed once).
_FILES: dict[str, BayesianNetwork] = {}


def bif_file_id(name: str) -> str:
    """A content id for a BIF file: ``bif:STEM:sha256=HEX`` (the first 16 hex digits of
    the SHA-256 of its bytes), the same wherever the file lies and different once it
    is edited. ``dpcg discover --dataset FILE.bif`` records the rows it samples under
    ``ID:rows=N:seed=S`` in the ledger by default."""
    if not is_bif_path(name):
        raise DatasetNotFoundError(f"not a BIF file name (.bif or .bif.gz): {name!r}")
    path, _, digest = _bif_file(name)
    return _file_id(path, digest)


def _file_id(path: Path, digest: str) -> str:
    return f"bif:{bif_stem(path.name)}:sha256={digest[:16]}"


def load_bif_file(name: str) -> tuple[BayesianNetwork, str]:
    """The network of a BIF file and its :func:`bif_file_id`, from one read of the file
    (so the id is that of the content the network was parsed from)."""
    path, raw, digest = _bif_file(name)
    net = _FILES.get(digest)
    if net is None:
        net = _FILES[digest] = network_from_bif(bif_from_bytes(raw, path))
    return net, _file_id(path, digest)


def load_network(name: str | os.PathLike[str]) -> BayesianNetwork:
    """The bundled network called ``name`` (e.g. ``"alarm"``), the network of a BIF file
    (``name`` a path ending in ``.bif`` or ``.bif.gz``, e.g. a bnlearn repository file),
    or the random network of a ``random:...`` spec (see
    :mod:`dpcg.datasets.random_network`); built once and cached (a file by its content).

    Raises :class:`~dpcg.errors.DatasetNotFoundError` listing the available names (or
    naming the missing file), :class:`~dpcg.errors.BifParseError` for a malformed file,
    or :class:`~dpcg.errors.DataValidationError` for a malformed ``random:`` spec.
    """
    if isinstance(name, os.PathLike):
        name = os.fspath(name)
    if isinstance(name, str) and name.startswith(RANDOM_PREFIX):
        return _random(parse_random_spec(name).name)
    if isinstance(name, str) and is_bif_path(name):
        return load_bif_file(name)[0]
    if not isinstance(name, str) or not (BIF_DIR / f"{name}.bif.gz").is_file():
        available = sorted(p.name.removesuffix(".bif.gz") for p in BIF_DIR.glob("*.bif.gz"))
        raise DatasetNotFoundError(
            f"no bundled network {name!r}; available: {', '.join(available)} "
            f"(or a generated one: {RANDOM_PREFIX}nodes=P,max_parents=K,card=LO-HI,seed=S,conc=A, "
            f"or a BIF file: a path ending in .bif or .bif.gz)"
        )
    return _load(name)
