"""Benchmark suites behind ``dpcg bench`` (not part of the pass/fail test suite; outside
the installed package: this folder of the source checkout).

One module per suite (``pc``, ``process``, ``private``, ``continuous``, ``utility``,
``engines``, ``real``, ``scale``, ``ledger``, ``advise``), each with
``register(subparsers)``; results go to ``docs/benchmarks/<suite>.md`` through
:func:`benchmarks.report.write_section`, which regenerates ``docs/benchmarks.md``.
"""

#: Benchmark suites, in the order they appear in ``dpcg bench --help`` and in
#: ``docs/benchmarks.md``.
SUITES = ("pc", "process", "private", "continuous", "utility", "engines", "real", "scale",
          "ledger", "advise")
