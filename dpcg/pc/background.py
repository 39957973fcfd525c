"""Background knowledge for PC: required / forbidden adjacencies and orientations.

* ``required_edges``: pairs that stay adjacent. PC never tests them and never removes
  them (so no privacy budget is spent on them).
* ``forbidden_edges``: pairs that are never adjacent. They are removed before the first
  level and never tested. They get no separating set, so they never form a v-structure.
* ``required_orientations``: arcs ``(a, b)`` meaning "if a and b are adjacent, then
  a -> b". They do not make the pair adjacent (add it to ``required_edges`` for that).
* ``forbidden_orientations``: arcs ``(a, b)`` meaning "a -> b is impossible"; if a and b
  end up adjacent the edge is oriented ``b -> a``.

Orientations are applied after the v-structures and before Meek's rules, and they
override a v-structure orientation that contradicts them; Meek's rules never orient an
edge against them. All pairs are given by node name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dpcg.errors import AlgorithmError

Pair = tuple[str, str]


def _pairs(value: Iterable[Sequence[str]], what: str) -> frozenset[Pair]:
    out: set[Pair] = set()
    for item in value:
        if isinstance(item, str) or len(item) != 2:
            raise AlgorithmError(f"background {what}: expected pairs of node names, got {item!r}")
        a, b = item
        if not isinstance(a, str) or not isinstance(b, str):
            raise AlgorithmError(f"background {what}: node names must be strings, got {item!r}")
        if a == b:
            raise AlgorithmError(f"background {what}: self-pair {a!r}")
        out.add((a, b))
    return frozenset(out)


@dataclass(frozen=True)
class BackgroundKnowledge:
    """Constraints known before seeing the data (public information)."""

    required_edges: frozenset[Pair] = frozenset()
    forbidden_edges: frozenset[Pair] = frozenset()
    required_orientations: frozenset[Pair] = frozenset()
    forbidden_orientations: frozenset[Pair] = frozenset()

    @classmethod
    def build(
        cls,
        *,
        required_edges: Iterable[Sequence[str]] = (),
        forbidden_edges: Iterable[Sequence[str]] = (),
        required_orientations: Iterable[Sequence[str]] = (),
        forbidden_orientations: Iterable[Sequence[str]] = (),
    ) -> BackgroundKnowledge:
        """Build from any iterables of name pairs, validating their shape."""
        return cls(
            _pairs(required_edges, "required_edges"),
            _pairs(forbidden_edges, "forbidden_edges"),
            _pairs(required_orientations, "required_orientations"),
            _pairs(forbidden_orientations, "forbidden_orientations"),
        )

    def resolve(self, names: Sequence[str]) -> ResolvedKnowledge:
        """Map names to indices and check consistency; raises :class:`AlgorithmError`."""
        pos = {n: i for i, n in enumerate(names)}

        def idx(pairs: frozenset[Pair], what: str) -> set[tuple[int, int]]:
            out: set[tuple[int, int]] = set()
            for a, b in sorted(pairs):
                for end in (a, b):
                    if end not in pos:
                        raise AlgorithmError(f"background {what}: unknown variable {end!r}")
                out.add((pos[a], pos[b]))
            return out

        req = {(min(p), max(p)) for p in idx(self.required_edges, "required_edges")}
        forb = {(min(p), max(p)) for p in idx(self.forbidden_edges, "forbidden_edges")}
        both = req & forb
        if both:
            a, b = min(both)
            raise AlgorithmError(
                f"background: the pair {names[a]!r}, {names[b]!r} is both required and forbidden"
            )
        req_arcs = idx(self.required_orientations, "required_orientations")
        forb_arcs = idx(self.forbidden_orientations, "forbidden_orientations")
        for a, b in sorted(req_arcs):
            if (b, a) in req_arcs:
                raise AlgorithmError(
                    f"background: both {names[a]!r}->{names[b]!r} and the reverse are required"
                )
            if (a, b) in forb_arcs:
                raise AlgorithmError(
                    f"background: {names[a]!r}->{names[b]!r} is both required and forbidden"
                )
        # A forbidden arc forces the reverse orientation on an adjacent pair.
        forced = set(req_arcs) | {(b, a) for a, b in forb_arcs}
        for a, b in sorted(forced):
            if (b, a) in forced:
                raise AlgorithmError(
                    f"background: the orientations of {names[a]!r}-{names[b]!r} contradict "
                    "each other (both directions forced or forbidden)"
                )
        return ResolvedKnowledge(
            required=frozenset(req),
            forbidden=frozenset(forb),
            arcs=frozenset(forced),
        )


@dataclass(frozen=True)
class ResolvedKnowledge:
    """Background knowledge on node indices: pairs are ``(min, max)``; ``arcs`` are forced."""

    required: frozenset[tuple[int, int]]
    forbidden: frozenset[tuple[int, int]]
    arcs: frozenset[tuple[int, int]]
