"""Child process of ``dpcg bench utility --instructions`` (run under callgrind).

It builds the benchmark's table for one ``(c, strata)`` and then runs, ``repeats``
times each, building the table alone, building it plus the G-test, plus the G^2 decision
distance and plus ``kendall-split``. Each batch runs inside a different C function of
the standard library (``itertools.starmap``, ``itertools.filterfalse``,
``functools.reduce``, ``itertools.dropwhile``), which nothing measured calls, so the
parent reads each batch's instruction count as that function's inclusive cost in
callgrind's output. Not part of the library's API.
"""

from __future__ import annotations

import functools
import itertools
import sys


def main(argv: list[str]) -> None:
    from dpcg.datasets.random_network import random_pair_codes
    from dpcg.stats.contingency import StrataTable, table_from_codes
    from dpcg.stats.discrete import g2_test
    from dpcg.stats.g2_distance import g2_distance
    from dpcg.stats.kendall import split_kendall_z

    card, strata, rows, seed, repeats = (int(v) for v in argv)
    x, y, s = random_pair_codes(rows, card, strata, seed, dependence=0.05)

    def table() -> StrataTable:
        return table_from_codes(x, y, s, card, card, strata)

    # warm the caches every run shares (tabulated g, quantiles, imports)
    g2_test(table())
    g2_distance(table(), 0.05)
    split_kendall_z(table())
    list(itertools.starmap(table, [()] * repeats))
    list(itertools.filterfalse(lambda _: (g2_test(table()), True)[1], range(repeats)))
    functools.reduce(lambda acc, _: (g2_distance(table(), 0.05), acc)[1], range(repeats), 0)
    list(itertools.dropwhile(lambda _: (split_kendall_z(table()), True)[1], range(repeats)))


if __name__ == "__main__":
    main(sys.argv[1:])
