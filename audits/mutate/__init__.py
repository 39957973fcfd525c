"""Mutation testing of the REAL code.

Each :class:`Mutant` is one single-line change to the real source of ``accounting/``
or of the registered bounds in ``dpcg/stats/registry.py`` (a halved sensitivity, a
halved noise scale, a skipped charge, a flipped filter comparison, ...). The runner
(:mod:`audits.mutate.runner`, ``python -m audits.mutate``) copies the repository tree
to a temporary directory once, writes each mutant into the copy (never into the
working tree), and runs the checks relevant to the mutated file against the copy (a
subprocess with ``PYTHONPATH`` pointing at the copy): first the audit sections of the
quick profile (:mod:`audits.mutate.checks`), then the property tests (pytest ``-x``).
A mutant is *killed* when some check fails; the first failing check is recorded.

A mutant's anchor is the exact text of the original line (surrounding whitespace
ignored), optionally searched only after a unique ``after`` line. An anchor that is
not found, or found more than once, raises :class:`AnchorError`: a refactor cannot
silently disable a mutant (``audits/tests/test_mutate.py`` checks every anchor).
"""

from __future__ import annotations

from audits.mutate.catalogue import MUTANTS, AnchorError, Mutant, apply, locate

__all__ = ["MUTANTS", "AnchorError", "Mutant", "apply", "locate"]
