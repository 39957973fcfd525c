"""Exact Gumbel-max keys: NumPy's float Gumbel keys, each with a rigorous enclosure of
the ideal key it stands for, refined where the order a release reads is not certain.

The exponential mechanism, top-``k``, grouped top-``k`` and report-noisy-max with
Gumbel noise release an order of keys ``l_r + G_r`` (``l_r = c u_r`` the logit, ``c``
an exact positive rational, ``G_r`` iid standard Gumbel). NumPy's Gumbel sampler reads
53 bits ``b = j 2^-53`` of a uniform and returns ``-ln(-ln(1 - b))``: a float with a
bounded support, so a candidate trailing by more than about 40 logits could never win
(``docs/privacy/floating-point.md``). Here the 53 bits are the leading bits of an
ideal uniform ``U = b + V 2^-53`` (``V`` uniform on ``[0, 1)``, its bits drawn only
when needed), so that ``G = -ln(-ln(1 - U))`` is an exact standard Gumbel and the
53 bits place it in a known interval. Each key's interval is computed in floats with
a wide pad; where two intervals that the release's order depends on overlap, the keys
involved are recomputed in decimal arithmetic (``decimal``'s correctly rounded ``ln``)
from the same bits, and if still undecided, from 62 more bits each, until the order
is certain. The released order is therefore the order of the exact keys: the
exponential mechanism's law, exactly (given uniform random bits). In the common case
nothing is refined, no extra bits are drawn, and the keys are NumPy's: the releases
equal the float sampler's. Proof note: ``docs/privacy/exact-gumbel.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Context, Decimal
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from accounting.noise import FloatArray

IntArray = npt.NDArray[np.int64]

#: Bits of the uniform that NumPy's Gumbel sampler reads.
LEAD_BITS = 53
#: Fresh bits revealed per refinement of one key.
STEP_BITS = 62
#: Relative pad of the float enclosures: ``PAD (1 + |logit| + |G|)`` on each side. The
#: float error of a key is below ``1e-15 (1 + |logit| + |G|)`` (a few roundings and two
#: logarithms, each within a few ulp); the pad is 1,000 times that.
PAD = 1e-12
#: Decimal digits between the working precision of a decimal enclosure and its pad
#: (each rounding there is within one unit in the last digit).
GUARD_DIGITS = 6

_UNIT = 2.0 ** -LEAD_BITS


def draw(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[FloatArray, FloatArray]:
    """``(b, g)``: the 53-bit uniforms ``b`` that ``rng.gumbel`` reads, and its standard
    Gumbel values ``g = -ln(-ln(1 - b))`` from those same bits (the generator advances
    exactly as one ``rng.gumbel(size=shape)`` call would). NumPy redraws when ``b = 0``
    (``1 - b = 1``); so that the stream stays one uniform per key, a ``b = 0`` keeps its
    key (``g = +inf``, the interval's upper end; its refinement draws the rest)."""
    state = rng.bit_generator.state
    b = np.asarray(rng.random(shape), dtype=np.float64)
    if np.any(b == 0.0):
        with np.errstate(divide="ignore"):
            g = -np.log(-np.log(1.0 - b))
        return b, np.asarray(g, dtype=np.float64)
    rng.bit_generator.state = state
    return b, np.asarray(rng.gumbel(0.0, 1.0, size=shape), dtype=np.float64)


def _g_lo(b: FloatArray) -> FloatArray:
    """``G(1 - b - 2^-53)`` in floats: the lower end of the Gumbel interval of ``b``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out: FloatArray = -np.log(-np.log((1.0 - b) - _UNIT))
    return out


def _pad(*parts: FloatArray) -> FloatArray:
    """``PAD (1 + sum |parts|)``: infinite when a part is (the enclosure is then
    unbounded on that side, which is still an enclosure)."""
    size: FloatArray = np.ones_like(parts[0])
    for x in parts:
        size = size + np.abs(x)
    out: FloatArray = PAD * size
    return out


def float_bounds(logits: FloatArray, b: FloatArray, g: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Float enclosure ``[lo, hi]`` of each exact key ``c u_r + G_r`` given its 53 bits.

    ``U`` lies in ``[b, b + 2^-53)``, so ``1 - U`` in ``(1 - b - 2^-53, 1 - b]`` (both
    ends are exact floats) and ``G`` in ``(G(1 - b - 2^-53), G(1 - b)]`` with
    ``G(w) = -ln(-ln w)`` increasing (``-inf`` at ``w = 0``, ``+inf`` at ``w = 1``);
    ``g`` is the upper end. ``logits`` approximates ``c u_r`` to a relative ``1e-15``.
    """
    return _lower(logits, b, g), _upper(logits, g)


def _lower(logits: FloatArray, b: FloatArray, g: FloatArray) -> FloatArray:
    """Lower ends of the enclosures (:func:`float_bounds`)."""
    g_lo = _g_lo(b)
    out: FloatArray = logits + g_lo - _pad(logits, g_lo, g)
    return out


def _upper(logits: FloatArray, g: FloatArray) -> FloatArray:
    """Upper ends of the enclosures (no logarithm: ``g`` is the upper Gumbel)."""
    out: FloatArray = logits + g + _pad(logits, g)
    return out


@dataclass
class Refiner:
    """Exact enclosures of the keys of one row, from their leading bits and, where
    needed, fresh bits of ``rng``. ``coef`` is the exact logit per unit of ``values``."""

    values: FloatArray
    b: FloatArray
    coef: Fraction
    rng: np.random.Generator

    def __post_init__(self) -> None:
        self._num: dict[int, int] = {}
        self._bits: dict[int, int] = {}

    def state(self, r: int) -> tuple[int, int]:
        """``(N, T)``: ``U`` of key ``r`` lies in ``[N 2^-T, (N + 1) 2^-T)``."""
        if r not in self._num:
            self._num[r] = int(float(self.b[r]) * 2.0**LEAD_BITS)
            self._bits[r] = LEAD_BITS
        return self._num[r], self._bits[r]

    def reveal(self, r: int) -> None:
        """Draw ``STEP_BITS`` more bits of key ``r``'s uniform."""
        num, bits = self.state(r)
        fresh = int(self.rng.integers(0, 1 << STEP_BITS, dtype=np.int64))
        self._num[r] = (num << STEP_BITS) | fresh
        self._bits[r] = bits + STEP_BITS

    def bounds(self, r: int) -> tuple[Decimal, Decimal]:
        """Decimal enclosure of key ``r`` at its bits so far. The ends of ``1 - U`` are
        held exactly (``2^-T`` has ``T`` significant digits at most); the logarithms and
        the logit are rounded to a working precision of about ``0.3 T + 30`` digits,
        which the pad exceeds by ``10^GUARD_DIGITS`` ulps."""
        num, bits = self.state(r)
        exact = Context(prec=bits + 2)
        unit = exact.power(Decimal(2), -bits)
        w_hi = exact.subtract(Decimal(1), exact.multiply(Decimal(num), unit))
        w_lo = exact.subtract(w_hi, unit)
        work = Context(prec=bits * 3 // 10 + 30)
        g_lo, g_hi = _gumbel(work, w_lo), _gumbel(work, w_hi)
        frac = self.coef * Fraction(float(self.values[r]))
        logit = work.divide(Decimal(frac.numerator), Decimal(frac.denominator))
        size = abs(logit) + sum((abs(g) for g in (g_lo, g_hi) if g.is_finite()), Decimal(0))
        pad = work.multiply(work.add(Decimal(1), size),
                            Decimal(10) ** (GUARD_DIGITS - work.prec))
        return work.subtract(work.add(logit, g_lo), pad), work.add(work.add(logit, g_hi), pad)


def _gumbel(ctx: Context, w: Decimal) -> Decimal:
    """``-ln(-ln w)`` for ``0 <= w <= 1`` (``-inf`` at 0, ``+inf`` at 1), each ``ln``
    correctly rounded at ``ctx``'s precision."""
    if w <= 0:
        return Decimal("-Infinity")
    if w >= 1:
        return Decimal("Infinity")
    return ctx.minus(ctx.ln(ctx.minus(ctx.ln(w))))


def _separated(bounds: list[tuple[Decimal, Decimal]]) -> bool:
    """Whether the intervals are pairwise disjoint."""
    ordered = sorted(bounds, key=lambda lh: lh[0], reverse=True)
    return all(ordered[i][0] > ordered[i + 1][1] for i in range(len(ordered) - 1))


def resolve_cluster(members: list[int], refiner: Refiner) -> list[int]:
    """``members`` in the exact decreasing order of their keys: first from their 53
    bits in decimal arithmetic, then with fresh bits for every member until all the
    intervals are disjoint (which happens with probability 1)."""
    bounds = {r: refiner.bounds(r) for r in members}
    while not _separated(list(bounds.values())):
        for r in members:
            refiner.reveal(r)
        bounds = {r: refiner.bounds(r) for r in members}
    return sorted(members, key=lambda r: bounds[r][0], reverse=True)


def uncertain(order: IntArray, lo: FloatArray, hi: FloatArray) -> npt.NDArray[np.bool_]:
    """Per row and position ``i < m - 1`` of ``order`` (rows of key indices sorted by
    decreasing float key): whether key ``order[i]`` is not certainly above every key
    after it (its lower end does not exceed the largest upper end after it)."""
    lo_s = np.take_along_axis(lo, order, axis=-1)
    hi_s = np.take_along_axis(hi, order, axis=-1)
    after = np.maximum.accumulate(hi_s[..., ::-1], axis=-1)[..., ::-1]
    out: npt.NDArray[np.bool_] = lo_s[..., :-1] <= after[..., 1:]
    return out


def certain_order(order: IntArray, lo: FloatArray, hi: FloatArray, refiner: Refiner,
                  prefix: Callable[[IntArray], int]) -> IntArray:
    """One row's full order (``order``: the key indices by decreasing float key), with
    positions ``0 .. prefix(order) - 1`` made certain: each of those keys is above every
    key after it exactly. An uncertain position starts a cluster: the keys from it on
    whose upper end reaches the lowest lower end in the cluster, grown until closed;
    every key outside it is then certainly below all of it (and, being at a certain
    position, every key before it above), so its members are contiguous and are put in
    their exact order by :func:`resolve_cluster`."""
    order = order.copy()
    m = order.size
    bad = uncertain(order, lo, hi)
    lo_s, hi_s = lo[order], hi[order]
    i = 0
    while i < min(prefix(order), m - 1):
        if not bad[i]:
            i += 1
            continue
        low = lo_s[i]
        end = i
        while True:
            reach = i + int(np.flatnonzero(hi_s[i:] >= low).max())
            new_low = min(low, float(lo_s[i:reach + 1].min()))
            if reach == end and new_low == low:
                break
            end, low = reach, new_low
        members = [int(r) for r in order[i:end + 1]]
        order[i:end + 1] = resolve_cluster(members, refiner)
        i = end + 1
    return order


@dataclass
class Keys:
    """Gumbel keys of ``rows`` independent releases over the same candidates.

    ``keys``: the float keys in the caller's units (what NumPy's sampler gives: the
    order of a release is the order of these wherever it is certain); ``logits``,
    ``b``, ``g``: the float logits, leading bits and float Gumbel values, from which
    :meth:`upper`, :meth:`lower_at` and :meth:`resolve` enclose the exact keys
    ``eps values/(2 Delta) + G`` (logit units); shape ``(rows, m)``."""

    keys: FloatArray
    logits: FloatArray
    b: FloatArray
    g: FloatArray
    values: FloatArray
    epsilon: float
    sensitivity: float
    rng: np.random.Generator

    def upper(self) -> FloatArray:
        """Upper ends of the enclosures."""
        return _upper(self.logits, self.g)

    def lower_at(self, rows: IntArray, cols: IntArray) -> FloatArray:
        """Lower ends of the enclosures at ``(rows, cols)``."""
        return _lower(self.logits[rows, cols], self.b[rows, cols], self.g[rows, cols])

    def resolve(self, row: int, order: IntArray, prefix: Callable[[IntArray], int]) -> IntArray:
        """Row ``row``'s full order (from ``order``, any order of its indices by
        decreasing float key) made certain up to ``prefix``."""
        lo, hi = float_bounds(self.logits[row], self.b[row], self.g[row])
        coef = Fraction(self.epsilon) / (2 * Fraction(self.sensitivity))
        refiner = Refiner(self.values, self.b[row], coef, self.rng)
        return certain_order(order, lo, hi, refiner, prefix)


def gumbel_keys(values: FloatArray, logits: FloatArray, epsilon: float, sensitivity: float,
                rng: np.random.Generator, size: int | None,
                scale: float | None = None) -> Keys:
    """Draw the keys of ``size`` releases (one if ``None``) over ``values``.

    ``logits`` approximates the exact logits ``eps values/(2 Delta)`` in floats. The
    float keys are ``logits + G`` or, with ``scale`` (report-noisy-max's
    ``2 Delta/eps``), ``values + scale G``: the same order up to rounding, which the
    enclosures absorb."""
    rows = 1 if size is None else size
    shape = (rows, values.size)
    b, g = draw(rng, shape)
    keys = logits + g if scale is None else values + scale * g
    return Keys(np.asarray(keys, dtype=np.float64),
                np.ascontiguousarray(np.broadcast_to(logits, shape)), b, g, values,
                epsilon, sensitivity, rng)


def winners(keys: Keys) -> IntArray:
    """Per row, the index of the largest exact key. The float argmax stands where its
    lower end exceeds every other upper end."""
    win = np.asarray(np.argmax(keys.keys, axis=-1), dtype=np.int64)
    rows, m = keys.keys.shape
    if m < 2:
        return win
    hi = keys.upper()
    idx = np.arange(rows, dtype=np.int64)
    hi[idx, win] = -np.inf
    bad = keys.lower_at(idx, win) <= hi.max(axis=-1)
    for row in np.flatnonzero(bad):
        order = np.argsort(-keys.keys[row], kind="stable")
        win[row] = keys.resolve(int(row), order, lambda _o: 1)[0]
    return win


def top(keys: Keys, k: int) -> IntArray:
    """Per row, the indices of the ``k`` largest exact keys (``k <= m``), in decreasing
    order. The float top ``k`` (a partition, then a stable sort) stands where each of
    its keys' lower end exceeds every upper end after it."""
    m = keys.keys.shape[1]
    noisy = keys.keys
    if k < m:
        part = np.argpartition(-noisy, k - 1, axis=-1)[:, :k]
    else:
        part = np.broadcast_to(np.arange(k), noisy.shape).copy()
    vals = np.take_along_axis(noisy, part, axis=-1)
    out = np.take_along_axis(part, np.argsort(-vals, axis=-1, kind="stable"), axis=-1)
    out = np.asarray(out, dtype=np.int64)
    if m < 2:
        return out
    rows = np.arange(keys.keys.shape[0], dtype=np.int64)
    hi = keys.upper()
    hi_top = np.take_along_axis(hi, out, axis=-1)
    np.put_along_axis(hi, out, -np.inf, axis=-1)
    rest = hi.max(axis=-1)  # -inf when k = m
    after = np.maximum.accumulate(
        np.concatenate([rest[:, None], hi_top[:, ::-1]], axis=-1), axis=-1)[:, ::-1]
    lo_top = keys.lower_at(np.repeat(rows, out.shape[1]), out.ravel()).reshape(out.shape)
    need = min(k, m - 1)
    bad = (lo_top[:, :need] <= after[:, 1:need + 1]).any(axis=-1)
    for row in np.flatnonzero(bad):
        order = np.argsort(-noisy[row], kind="stable")
        out[row] = keys.resolve(int(row), order, lambda _o: need)[:k]
    return out


def orders(keys: Keys, prefix: Callable[[IntArray], IntArray]) -> IntArray:
    """Each row's key indices in decreasing order of the exact keys, certain at
    positions ``0 .. prefix(order)[row] - 1`` (``prefix`` maps rows of orders to their
    prefix lengths). Rows whose prefix is certain in floats keep the float order."""
    order = np.argsort(-keys.keys, axis=-1, kind="stable")
    m = order.shape[-1]
    if m < 2:
        return np.asarray(order, dtype=np.int64)
    lo, hi = float_bounds(keys.logits, keys.b, keys.g)
    bad = uncertain(order, lo, hi)
    need = np.arange(m - 1)[None, :] < np.minimum(prefix(order), m - 1)[:, None]

    def one(row_order: IntArray) -> int:
        return int(prefix(row_order[None, :])[0])

    for row in np.flatnonzero((bad & need).any(axis=-1)):
        order[row] = keys.resolve(int(row), order[row], one)
    return np.asarray(order, dtype=np.int64)
