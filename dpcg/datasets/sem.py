"""Synthetic continuous structural equation models (SEMs) with declared public bounds.

The generator plays the data owner: it draws a random DAG from a seed, fixes the
structural equations, **declares** public bounds for every variable (before any data is
drawn, from the model alone) and clips the sampled values to them. The result is a
:class:`dpcg.data.Dataset` with an all-continuous schema plus the true DAG edges.

* ``random_sem(p, kind="linear"|"nonlinear", expected_degree, seed)``:

  - ``linear``: ``X_j = sum_k w_kj X_k + e_j`` with Gaussian noise; the weights are scaled
    so that every variable has variance exactly 1 and its parents explain a fraction
    ``r2_j ~ U[r2_low, r2_high]`` of it. The exact covariance is known
    (:meth:`SEM.covariance`), so a public model-X law is available
    (:class:`dpcg.citests.crt.GaussianModelX`).
  - ``nonlinear``: ``X_j = c_j sum_k w_kj g_kj(X_k) + e_j`` with ``g`` from
    ``{tanh, sin, (x^2 - 1)/sqrt 2, x}``; the constants ``c_j`` come from a pilot sample
    drawn inside the generator (part of the model, fixed by the seed) so that every
    variable has variance close to 1.

  Bounds are ``[-bound, bound]`` (default 5, i.e. five standard deviations).
* ``unit_noise(n, d, a, beta, seed, c=1.5, noise="unit"|"hetero")``: the same with
  unit noise and declared bounds ``c sqrt(log n)``, the model of Kalemaj et al.'s
  experiments (``"hetero"``: noise sd ``sqrt(1/4 + Z_1^2)``, a misspecified law).
* ``shah_peters(n, d, a, beta, seed)``: the CI benchmark of Shah and Peters (2020), as
  used by Kalemaj et al.: ``Z ~ N(0, I_d)``, ``X = f_a(Z_1) + 0.3 e_X``,
  ``Y = f_a(Z_1) + beta X + 0.3 e_Y`` with ``f_a(z) = exp(-z^2/2) sin(a z)``. ``a`` is the
  model complexity; ``beta = 0`` is the null ``X _||_ Y | Z``. The model-X law of ``X`` given
  ``Z`` is :func:`shah_peters_sampler`.

The randomness in this module makes synthetic data, not privacy noise (``dpcg/datasets``
is allowlisted in ``tests/test_layering.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dpcg.data import Continuous, Dataset, Schema
from dpcg.errors import DpcgError

FloatArray = NDArray[np.float64]

KINDS = ("linear", "nonlinear")
#: Non-linear link functions (index -> function), all with mean ~0 for N(0,1) input.
_LINKS = ("tanh", "sin", "quad", "identity")


def _link(code: int, x: FloatArray) -> FloatArray:
    if code == 0:
        return np.tanh(x)
    if code == 1:
        return np.sin(x)
    if code == 2:
        return (x * x - 1.0) / math.sqrt(2.0)
    return x


def _rng(seed: int | np.random.Generator) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise DpcgError(f"seed must be an int or a numpy Generator, got {seed!r}")
    return np.random.default_rng(int(seed))


def _check_n(n: object) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or int(n) < 1:
        raise DpcgError(f"n must be a positive int, got {n!r}")
    return int(n)


@dataclass(frozen=True)
class SEM:
    """A continuous SEM over ``names`` in topological order.

    ``weights[k, j]`` is the weight of edge ``k -> j`` (0 = no edge, ``k < j``);
    ``links[k, j]`` the link function code (non-linear SEMs); ``scale[j]`` the
    normalising constant; ``noise_sd[j]`` the noise standard deviation.
    """

    names: tuple[str, ...]
    kind: str
    weights: FloatArray
    links: NDArray[np.int64]
    scale: FloatArray
    noise_sd: FloatArray
    bound: float

    @property
    def p(self) -> int:
        return len(self.names)

    @property
    def dag_edges(self) -> tuple[tuple[str, str], ...]:
        ks, js = np.nonzero(self.weights)
        return tuple((self.names[k], self.names[j]) for k, j in zip(ks, js, strict=True))

    @property
    def schema(self) -> Schema:
        """All-continuous schema with the declared public bounds ``[-bound, bound]``."""
        return Schema([Continuous(nm, -self.bound, self.bound) for nm in self.names])

    def covariance(self) -> FloatArray:
        """Exact covariance of the (unclipped) linear SEM: ``(I - W)^-T D (I - W)^-1``."""
        if self.kind != "linear":
            raise DpcgError("covariance() is only defined for linear SEMs")
        A = np.linalg.inv(np.eye(self.p) - self.weights)
        out: FloatArray = A.T @ np.diag(self.noise_sd**2) @ A
        return out

    def _draw(self, n: int, g: np.random.Generator) -> FloatArray:
        X = np.empty((self.p, n), dtype=np.float64)
        noise = g.standard_normal((self.p, n)) * self.noise_sd[:, None]
        for j in range(self.p):  # per variable, vectorised over rows
            parents = np.flatnonzero(self.weights[:, j])
            acc = noise[j].copy()
            if parents.size:
                if self.kind == "linear":
                    acc += self.weights[parents, j] @ X[parents]
                else:
                    s = np.zeros(n)
                    for k in parents:
                        s += self.weights[k, j] * _link(int(self.links[k, j]), X[k])
                    acc += self.scale[j] * s
            X[j] = acc
        return X

    def sample(self, n: int, seed: int | np.random.Generator) -> Dataset:
        """``n`` rows, clipped to the declared bounds, as a :class:`Dataset`."""
        rows = _check_n(n)
        X = np.clip(self._draw(rows, _rng(seed)), -self.bound, self.bound)
        return Dataset.from_numpy(X.T, self.schema)


def random_dag(p: int, expected_degree: float, g: np.random.Generator) -> NDArray[np.bool_]:
    """Erdos-Renyi DAG in topological order: edge ``k -> j`` (``k < j``) with probability
    ``expected_degree / (p - 1)``."""
    prob = min(1.0, expected_degree / max(p - 1, 1))
    upper = np.triu(np.ones((p, p), dtype=bool), k=1)
    out: NDArray[np.bool_] = upper & (g.uniform(size=(p, p)) < prob)
    return out


def random_sem(
    p: int,
    *,
    kind: str = "linear",
    expected_degree: float = 2.0,
    seed: int | np.random.Generator = 0,
    r2_low: float = 0.3,
    r2_high: float = 0.7,
    bound: float = 5.0,
) -> SEM:
    """A random SEM with ``p`` variables named ``X1..Xp`` (see the module docstring)."""
    if isinstance(p, bool) or not isinstance(p, int) or p < 2:
        raise DpcgError(f"p must be an int >= 2, got {p!r}")
    if kind not in KINDS:
        raise DpcgError(f"kind={kind!r}: choose one of {KINDS}")
    if not (0.0 < r2_low <= r2_high < 1.0):
        raise DpcgError("need 0 < r2_low <= r2_high < 1")
    if not (math.isfinite(bound) and bound > 0):
        raise DpcgError(f"bound={bound!r} must be finite and > 0")
    if not (math.isfinite(expected_degree) and expected_degree >= 0):
        raise DpcgError(f"expected_degree={expected_degree!r} must be >= 0")
    g = _rng(seed)
    adj = random_dag(p, expected_degree, g)
    raw = g.uniform(0.5, 1.5, size=(p, p)) * g.choice([-1.0, 1.0], size=(p, p)) * adj
    links = g.integers(0, len(_LINKS), size=(p, p)).astype(np.int64) * adj
    r2 = g.uniform(r2_low, r2_high, size=p)
    names = tuple(f"X{j + 1}" for j in range(p))
    W = np.zeros((p, p))
    scale = np.ones(p)
    noise_sd = np.ones(p)
    if kind == "linear":
        cov = np.zeros((p, p))
        for j in range(p):
            pa = np.flatnonzero(adj[:, j])
            if pa.size:
                w = raw[pa, j]
                explained = float(w @ cov[np.ix_(pa, pa)] @ w)
                c = math.sqrt(r2[j] / explained) if explained > 0 else 0.0
                W[pa, j] = c * w
                noise_sd[j] = math.sqrt(1.0 - r2[j]) if c > 0 else 1.0
            # covariance of X_j with X_0..X_j (exact recursion)
            cov[j, :j] = W[:j, j] @ cov[:j, :j]
            cov[:j, j] = cov[j, :j]
            cov[j, j] = 1.0
    else:
        W = raw.copy()
        pilot_n = 20_000
        pilot = np.empty((p, pilot_n))
        e = g.standard_normal((p, pilot_n))
        for j in range(p):
            pa = np.flatnonzero(adj[:, j])
            if pa.size:
                s = np.zeros(pilot_n)
                for k in pa:
                    s += W[k, j] * _link(int(links[k, j]), pilot[k])
                sd = float(s.std())
                scale[j] = math.sqrt(r2[j]) / sd if sd > 0 else 0.0
                noise_sd[j] = math.sqrt(1.0 - r2[j])
                pilot[j] = scale[j] * (s - 0.0) + noise_sd[j] * e[j]
            else:
                pilot[j] = e[j]
    return SEM(names, kind, W, links, scale, noise_sd, float(bound))


# ---------------------------------------------------------------------------------
# Shah-Peters CI benchmark
# ---------------------------------------------------------------------------------

#: Noise standard deviation of X and Y in the Shah-Peters setting.
SP_NOISE = 0.3


def f_a(z: FloatArray, a: float) -> FloatArray:
    """``exp(-z^2/2) sin(a z)``: the Shah-Peters conditional mean of complexity ``a``."""
    out: FloatArray = np.exp(-0.5 * z * z) * np.sin(a * z)
    return out


def shah_peters_bounds(d: int, beta: float) -> list[tuple[float, float]]:
    """Declared bounds (x, y, z_1..z_d): 5 sd for Z, ``1 + 5 * 0.3`` for X and the
    triangle-inequality bound for Y. Depends on the model only, never on the data."""
    bx = 1.0 + 5.0 * SP_NOISE
    by = 1.0 + abs(beta) * bx + 5.0 * SP_NOISE
    return [(-bx, bx), (-by, by)] + [(-5.0, 5.0)] * d


def shah_peters(
    n: int, d: int, a: float, beta: float, seed: int | np.random.Generator
) -> Dataset:
    """One Shah-Peters dataset with columns ``X, Y, Z1..Zd`` (clipped to the bounds)."""
    rows = _check_n(n)
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise DpcgError(f"d must be an int >= 1, got {d!r}")
    g = _rng(seed)
    Z = g.standard_normal((d, rows))
    fz = f_a(Z[0], a)
    X = fz + SP_NOISE * g.standard_normal(rows)
    Y = fz + beta * X + SP_NOISE * g.standard_normal(rows)
    bounds = shah_peters_bounds(d, beta)
    cols = [X, Y, *Z]
    clipped = [np.clip(c, lo, hi) for c, (lo, hi) in zip(cols, bounds, strict=True)]
    names = ["X", "Y", *(f"Z{i + 1}" for i in range(d))]
    schema = Schema([Continuous(nm, lo, hi) for nm, (lo, hi) in zip(names, bounds, strict=True)])
    return Dataset.from_numpy(np.stack(clipped, axis=1), schema)


@dataclass(frozen=True)
class ShahPetersSampler:
    """The model-X law ``X | Z ~ N(f_a(Z_1), 0.3^2)`` (a public model of X given Z)."""

    a: float

    def conditional_mean(self, z: FloatArray) -> FloatArray:
        return f_a(np.asarray(z, dtype=np.float64)[:, 0], self.a)

    def sample(self, z: FloatArray, m: int, rng: np.random.Generator) -> FloatArray:
        mu = self.conditional_mean(z)
        out: FloatArray = mu[None, :] + SP_NOISE * rng.standard_normal((m, mu.shape[0]))
        return out


def shah_peters_sampler(a: float) -> ShahPetersSampler:
    return ShahPetersSampler(float(a))


# ---------------------------------------------------------------------------------
# The paper's unit-noise model (Kalemaj et al., Sec. 5) with bounds c sqrt(log n)
# ---------------------------------------------------------------------------------

#: Default constant ``c`` of the unit-noise model's declared bounds ``c sqrt(log n)``.
UNIT_BOUND_C = 1.5
#: Noise kinds of :func:`unit_noise`: ``"unit"`` (N(0, 1)) or ``"hetero"``
#: (N(0, 1/4 + Z_1^2), a misspecified, heteroscedastic law for the GCM's fits).
UNIT_NOISE_KINDS = ("unit", "hetero")


def unit_noise_bound(n: int, c: float = UNIT_BOUND_C) -> float:
    """The declared bound ``c sqrt(log n)`` of every column of :func:`unit_noise` (a
    function of the public ``n`` and the model's constant ``c``; at least ``c``)."""
    rows = _check_n(n)
    if isinstance(c, bool) or not isinstance(c, int | float) or not (
            math.isfinite(c) and c > 0):
        raise DpcgError(f"c={c!r} must be a finite number > 0")
    return float(c) * math.sqrt(max(math.log(rows), 1.0))


def unit_noise_bounds(n: int, d: int, c: float = UNIT_BOUND_C) -> list[tuple[float, float]]:
    """Declared bounds ``(x, y, z_1..z_d)``: ``+-c sqrt(log n)`` for every column."""
    b = unit_noise_bound(n, c)
    return [(-b, b)] * (2 + d)


def unit_noise(
    n: int, d: int, a: float, beta: float, seed: int | np.random.Generator, *,
    c: float = UNIT_BOUND_C, noise: str = "unit",
) -> Dataset:
    """The Shah-Peters model with unit noise, as in Kalemaj et al.'s experiments:
    ``Z ~ N(0, I_d)``, ``X = f_a(Z_1) + e_X``, ``Y = f_a(Z_1) + beta X + e_Y`` with
    ``e ~ N(0, 1)`` (``noise="hetero"``: ``e ~ N(0, 1/4 + Z_1^2)``), every column clipped
    to the declared ``+-c sqrt(log n)`` (:func:`unit_noise_bound`). Clipping ``Y`` keeps
    ``X _||_ Y | Z`` at ``beta = 0`` (a function of ``Y``) and only weakens the signal
    otherwise. Columns ``X, Y, Z1..Zd``."""
    rows = _check_n(n)
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise DpcgError(f"d must be an int >= 1, got {d!r}")
    if noise not in UNIT_NOISE_KINDS:
        raise DpcgError(f"noise={noise!r}: choose one of {UNIT_NOISE_KINDS}")
    bounds = unit_noise_bounds(rows, d, c)
    g = _rng(seed)
    Z = g.standard_normal((d, rows))
    fz = f_a(Z[0], a)
    sd = 1.0 if noise == "unit" else np.sqrt(0.25 + Z[0] * Z[0])
    X = fz + sd * g.standard_normal(rows)
    Y = fz + beta * X + sd * g.standard_normal(rows)
    cols = [X, Y, *Z]
    clipped = [np.clip(col, lo, hi) for col, (lo, hi) in zip(cols, bounds, strict=True)]
    names = ["X", "Y", *(f"Z{i + 1}" for i in range(d))]
    schema = Schema([Continuous(nm, lo, hi) for nm, (lo, hi) in zip(names, bounds, strict=True)])
    return Dataset.from_numpy(np.stack(clipped, axis=1), schema)


@dataclass(frozen=True)
class UnitNoiseSampler:
    """The model-X law ``X | Z ~ N(f_a(Z_1), 1)`` of :func:`unit_noise` (unit noise),
    before clipping to the declared bounds (PrivCRT's resamples are clipped by the test)."""

    a: float

    def conditional_mean(self, z: FloatArray) -> FloatArray:
        return f_a(np.asarray(z, dtype=np.float64)[:, 0], self.a)

    def sample(self, z: FloatArray, m: int, rng: np.random.Generator) -> FloatArray:
        mu = self.conditional_mean(z)
        out: FloatArray = mu[None, :] + rng.standard_normal((m, mu.shape[0]))
        return out
