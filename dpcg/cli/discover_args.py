"""The ``dpcg discover`` parser: option groups, help text and the derived flags.

Kept light (stdlib only at import) so that ``dpcg discover --help`` answers at once: the
run itself is :mod:`dpcg.cli.discover`, imported only when a run starts.

The per-algorithm and per-test flags are derived from each registered private
algorithm's ``Params`` and each registered CI test's options (:func:`live_derived_flags`).
Deriving them imports every plugin module (numpy, scipy.stats, ...: about a second).
For ``--help`` alone, the parser is built from ``discover_flags.json`` beside this
module instead: the same derived flags written by ``python -m dpcg.cli.discover_args``
from the ``Params`` and option types. When the registries loaded in the process know an
algorithm the manifest does not, the flags are derived live instead; a command line that
names a derived flag always derives them live (with their types); and a test checks
that the committed file equals what the types give.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpcg.errors import DpcgError

DEFAULT_ROWS = 10_000
#: ``--test`` of ``--algorithm pc`` when none is given
DEFAULT_TEST = "g2"
#: The non-private algorithm.
NONPRIVATE = "pc"
#: ``delta`` of the discrete private family when ``--delta`` is not given (shown in help).
DEFAULT_DELTA_HELP = "1e-6 for the discrete family, 0 for private-ci-pc"
#: The flags file used to build ``--help`` without importing the plugins.
MANIFEST = Path(__file__).with_name("discover_flags.json")


@dataclass(frozen=True)
class DerivedFlag:
    """One flag derived from option fields: who declares it, and how to parse it."""

    flag: str
    dest: str
    help: str
    type: Callable[[str], object] | None
    metavar: str | None
    algorithms: tuple[str, ...]
    tests: tuple[str, ...]
    #: A boolean switch (``type is None``); kept apart for flags read from the manifest.
    switch: bool = False

    @property
    def owners(self) -> str:
        parts = []
        if self.algorithms:
            parts.append("--algorithm " + ", ".join(self.algorithms))
        if self.tests:
            parts.append("--test " + ", ".join(self.tests))
        return "; ".join(parts)


def live_derived_flags() -> dict[str, DerivedFlag]:
    """Every option field of every registered private algorithm's ``Params`` and every
    registered test's options, as one flag each (a flag shared by several owners must
    have the same field name and type everywhere). Imports every plugin module."""
    from dpcg.citests.registry import option_infos, tests
    from dpcg.private.registry import algorithms

    found: dict[str, DerivedFlag] = {}

    def add(owner_kind: str, owner: str, cls: type) -> None:
        for info in option_infos(cls):
            old = found.get(info.flag)
            if old is None:
                old = DerivedFlag(info.flag, info.name, info.help, info.type, info.metavar,
                                  (), (), info.type is None)
            elif old.dest != info.name or old.type != info.type:
                raise DpcgError(f"{info.flag}: declared as {old.dest} and as {info.name} "
                                f"(by {owner}) with different meanings")
            if owner_kind == "algorithm":
                old = DerivedFlag(old.flag, old.dest, old.help, old.type, old.metavar,
                                  tuple(sorted((*old.algorithms, owner))), old.tests,
                                  old.switch)
            else:
                old = DerivedFlag(old.flag, old.dest, old.help, old.type, old.metavar,
                                  old.algorithms, tuple(sorted((*old.tests, owner))),
                                  old.switch)
            found[info.flag] = old

    for algo in algorithms().values():
        add("algorithm", algo.name, algo.params)
    for spec in tests().values():
        add("test", spec.name, spec.options)
    return found


def add_engine_arguments(group: argparse._ArgumentGroup) -> None:
    """The table-engine options of ``dpcg discover`` (docs/scale.md; the engine names are
    checked when the run starts, so building the parser imports no engine)."""
    group.add_argument("--engine", metavar="NAME", default=None,
                       help="where the statistics of --data are counted (private discrete "
                            "runs): numpy (in memory), duckdb (out of core; the default for a "
                            "Parquet glob/directory, FILE.duckdb:TABLE, or a file larger than "
                            "a quarter of RAM), spark")
    group.add_argument("--spark-master", metavar="URL", default=None,
                       help="Spark master for --engine spark (default local[2])")
    group.add_argument("--memory-limit", metavar="SIZE", default=None,
                       help="DuckDB memory_limit for --engine duckdb (e.g. 2GB)")
    group.add_argument("--duckdb-table", metavar="TABLE", default=None,
                       help="read TABLE of the DuckDB database --data FILE.duckdb")


#: Flags of the privacy budget and the ledger: private algorithms only.
PRIVATE_FLAGS = {"epsilon": "--epsilon", "delta": "--delta", "noise_seed": "--noise-seed",
                 "ledger": "--ledger", "no_ledger": "--no-ledger",
                 "dataset_id": "--dataset-id", "lifetime_epsilon": "--lifetime-epsilon",
                 "lifetime_delta": "--lifetime-delta", "lifetime_rule": "--lifetime-rule",
                 "ledger_key": "--ledger-key"}


# ------------------------------------------------------------------ the help manifest


def manifest_data() -> dict[str, Any]:
    """What :data:`MANIFEST` holds, derived live (imports every plugin)."""
    from dpcg.citests.registry import option_infos, tests
    from dpcg.private.registry import algorithms

    flags = [{"flag": d.flag, "dest": d.dest, "help": d.help, "metavar": d.metavar,
              "switch": d.switch, "algorithms": list(d.algorithms), "tests": list(d.tests)}
             for d in live_derived_flags().values()]
    with_options = [name for name, spec in tests().items() if option_infos(spec.options)]
    return {"algorithms": list(algorithms()),
            "tests": with_options, "flags": flags}


def write_manifest(path: Path = MANIFEST) -> None:
    path.write_text(json.dumps(manifest_data(), indent=1) + "\n")


def _from_manifest() -> tuple[list[str], list[DerivedFlag]] | None:
    """The algorithm names and flags of the manifest, or ``None`` when they could be
    stale: an algorithm (or a test with options) the manifest does not know is
    registered in this process (derive them live). The manifest is built from the
    ``Params`` and option types (:func:`manifest_data`), and a test checks it against
    them, so an edit that changes no option (a comment, a body) never makes it stale."""
    try:
        data = json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not {"algorithms", "tests", "flags"} <= set(data):
        return None
    algos = sys.modules.get("dpcg.private.registry")
    if algos is not None and set(algos._ALGORITHMS) - set(data["algorithms"]):
        return None
    specs = sys.modules.get("dpcg.citests.registry")
    if specs is not None:
        for name, spec in specs._TESTS.items():
            if name not in data["tests"] and specs.option_infos(spec.options):
                return None
    flags = [DerivedFlag(f["flag"], f["dest"], f["help"], None, f["metavar"],
                         tuple(f["algorithms"]), tuple(f["tests"]), bool(f["switch"]))
             for f in data["flags"]]
    return list(data["algorithms"]), flags


def _live() -> tuple[list[str], list[DerivedFlag]]:
    from dpcg.private.registry import algorithms

    return list(algorithms()), list(live_derived_flags().values())


# ------------------------------------------------------------------ the parser


#: The handler of ``dpcg discover``, imported by :func:`dpcg.cli.main` only when it runs.
HANDLER = "dpcg.cli.discover:run"


def _names_derived(argv: Sequence[str], flags: list[DerivedFlag], core: set[str]) -> bool:
    """Does ``argv`` name a derived flag (or an abbreviation argparse would expand)?"""
    for word in argv:
        if not word.startswith("--"):
            continue
        name = word.split("=", 1)[0]
        if name in core:
            continue
        if any(d.flag.startswith(name) for d in flags):
            return True
    return False


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser], *,
             help_only: bool = False, argv: Sequence[str] | None = None) -> None:
    """Add ``dpcg discover``. With ``argv`` (the command line to parse) or ``help_only``,
    the derived flags come from the manifest when it is current and no derived flag is
    given (they are then never parsed, so their types are not needed); otherwise they
    are derived live with their types."""
    found = _from_manifest() if help_only or argv is not None else None
    p: argparse.ArgumentParser = subparsers.add_parser(
        "discover",
        help="learn a causal graph (CPDAG) from data",
        description="Learn a CPDAG with PC-stable (non-private, the default) or a private "
                    "variant. Each option group says what it applies to; an option of an "
                    "algorithm or test other than the chosen ones is an error.",
        epilog="examples:\n"
               "  dpcg discover --dataset asia --rows 10000 --out result.json\n"
               "  dpcg discover --data table.csv --schema schema.json --out result.json\n"
               "  dpcg discover --data table.csv --schema schema.json --algorithm laplace-pc "
               "--epsilon 1 --dataset-id my-table\n"
               "draft a schema with `dpcg schema draft table.csv`; list algorithms and tests "
               "with `dpcg discover --list`",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    src = p.add_argument_group("data (one of --dataset or --data)")
    src.add_argument("--dataset", metavar="NAME",
                     help="network to sample from: a bundled one (see `dpcg datasets "
                          "list`), a BIF file of yours (FILE.bif or FILE.bif.gz) or a "
                          "generated one (random:..., see `dpcg datasets random`)")
    src.add_argument("--data", metavar="FILE", type=Path,
                     help="your table (.csv/.tsv/.parquet/.npy); needs --schema")
    src.add_argument("--schema", metavar="FILE", type=Path,
                     help="declared schema JSON for --data (draft one with `dpcg schema "
                          "draft FILE`)")
    src.add_argument("--rows", type=int, default=None,
                     help=f"rows to sample from --dataset (default {DEFAULT_ROWS})")
    src.add_argument("--seed", type=int, default=None,
                     help="seed for sampling --dataset (default 0); the privacy noise is "
                          "seeded with --noise-seed")
    src.add_argument("--clip", action="store_true",
                     help="clip out-of-bounds continuous values to the schema bounds")
    add_engine_arguments(src)
    algo = p.add_argument_group("algorithm and CI test")
    listed = found[0] if found is not None else []
    algo_action = algo.add_argument(
        "--algorithm", default=NONPRIVATE, metavar="NAME",
        help=f"discovery algorithm: {', '.join([NONPRIVATE, *listed])} (default pc, "
             "non-private); see --list")
    algo.add_argument("--test", default=None, metavar="NAME",
                      help="conditional-independence test (default: the algorithm's own, g2 "
                           "for pc, kendall-split for the private discrete family, privgcm "
                           "for private-ci-pc); see --list")
    algo.add_argument("--alpha", type=float, default=0.05,
                      help="significance level of the CI tests (default 0.05)")
    algo.add_argument("--max-depth", type=int, default=None,
                      help="largest conditioning-set size (default: no limit)")
    algo.add_argument("--background", type=Path, metavar="FILE",
                      help="background knowledge JSON: required_edges, forbidden_edges, "
                           "required_orientations, forbidden_orientations (lists of pairs)")
    lim = p.add_argument_group("run limits (docs/memory.md)")
    lim.add_argument("--max-seconds", type=float, default=None, metavar="S",
                     help="time budget: past it the run stops with the graph so far and a "
                          "message (default 6 hours for pc; a private run decides from a "
                          "public test budget and has no default time limit)")
    lim.add_argument("--max-memory", default=None, metavar="SIZE",
                     help="memory budget (e.g. 2GB): past it the run stops with the graph "
                          "so far (default: the smaller of 4 GiB and 3/4 of the RAM; a "
                          "private run converts it to a public test budget)")
    lim.add_argument("--workers", type=int, default=None, metavar="N",
                     help="pc only: processes for a level's independent tests (the same "
                          "results as one; default: every usable core, for levels that "
                          "may ask at least 5,000 tests)")
    algo.add_argument("--list", action="store_true",
                      help="list the registered algorithms and CI tests, then exit")
    budget = p.add_argument_group("privacy budget (private algorithms only)")
    budget.add_argument("--epsilon", type=float, default=None,
                        help="TOTAL privacy budget epsilon of the run (required)")
    budget.add_argument("--delta", type=float, default=None,
                        help=f"TOTAL privacy budget delta (default {DEFAULT_DELTA_HELP}; "
                             "0 forces pure DP)")
    budget.add_argument("--noise-seed", type=int, dest="noise_seed", metavar="S",
                        default=None,
                        help="seed the privacy noise (reproducible runs; marked as seeded in "
                             "the ledger). Default: a secure random seed")
    led = p.add_argument_group("ledger (private algorithms only)")
    led.add_argument("--ledger", metavar="PATH|URL", type=str, default=None,
                     help="record the run in this ledger: a SQLite file, or a "
                          "postgresql://USER@HOST/DB URL (a team's PostgreSQL ledger; no "
                          "password in the URL: use PGPASSWORD or ~/.pgpass) (default: "
                          "$DPCG_LEDGER, else $XDG_DATA_HOME/dpcg/ledger.sqlite, else "
                          "~/.local/share/dpcg/ledger.sqlite: one file per user; see "
                          "docs/ledger.md)")
    led.add_argument("--no-ledger", action="store_true", dest="no_ledger",
                     help="keep the run's entries in memory only (experiments; nothing "
                          "durable)")
    led.add_argument("--dataset-id", metavar="ID", dest="dataset_id", default=None,
                     help="declared id of the dataset in the ledger (required for --data; "
                          "bundled data defaults to bundled:NAME:rows=N:seed=S, a BIF "
                          "file's to bif:STEM:sha256=HEX:rows=N:seed=S, HEX from its "
                          "content)")
    led.add_argument("--lifetime-epsilon", type=float, dest="lifetime_epsilon", metavar="E",
                     default=None,
                     help="lifetime epsilon of a dataset id the ledger does not know yet "
                          "(default: this run's epsilon); an error for a registered id")
    led.add_argument("--lifetime-delta", type=float, dest="lifetime_delta", metavar="D",
                     default=None,
                     help="lifetime delta for a new dataset id (default: this run's delta)")
    led.add_argument("--lifetime-rule", choices=["basic", "zcdp"], dest="lifetime_rule",
                     default=None,
                     help="how a new dataset id's lifetime composes: basic (default) or zcdp "
                          "(kept in rho, each mechanism charged its rho, every run refunded "
                          "what it did not spend; needs a lifetime delta > 0); an error for "
                          "a registered id with another rule"
                     )
    led.add_argument("--ledger-key", type=Path, metavar="PATH", dest="ledger_key",
                     default=None, help="private key file that signs the ledger's new heads "
                                        "(default: $DPCG_LEDGER_KEY for a signed ledger)")
    if found is not None and not help_only and _names_derived(
            argv or (), found[1], set(p._option_string_actions)):
        found = None
    algo_names, flags = found if found is not None else _live()
    if found is None:  # the --algorithm help lists the live names
        names = ", ".join([NONPRIVATE, *algo_names])
        algo_action.help = (f"discovery algorithm: {names} (default pc, non-private); see "
                            "--list")
    groups: dict[str, argparse._ArgumentGroup] = {}
    core = {a.dest for a in p._actions}
    for d in flags:
        if d.dest in core:
            raise DpcgError(f"{d.flag}: the option field {d.dest!r} of {d.owners} clashes "
                            "with a dpcg discover option; rename the field")
        title = f"options of {d.owners}"
        if title not in groups:
            groups[title] = p.add_argument_group(title)
        kwargs: dict[str, Any] = {"dest": d.dest, "default": argparse.SUPPRESS,
                                  "help": d.help}
        if d.switch:
            kwargs["action"] = "store_true"
        else:
            kwargs["type"] = d.type if d.type is not None else str
            if d.metavar is not None:
                kwargs["metavar"] = d.metavar
        groups[title].add_argument(d.flag, **kwargs)
    out = p.add_argument_group("output")
    out.add_argument("--out", type=Path, metavar="FILE",
                     help="write result JSON here (default: print it to stdout)")
    out.add_argument("--dot", type=Path, metavar="FILE", help="also write Graphviz DOT")
    out.add_argument("--graphml", type=Path, metavar="FILE", help="also write GraphML")
    out.add_argument("--include-tests", action="store_true",
                     help="list every CI test (x, y, S, statistic, p-value) in the JSON")
    out.add_argument("--quiet", action="store_true", help="no progress or summary on stderr")
    out.add_argument("--diagnostics", type=Path, metavar="FILE",
                     help="write the run's wall-clock timings here, marked 'not protected: "
                          "side channel' (private runs keep timings out of the result)")
    out.add_argument("--unsafe-debug-errors", action="store_true", dest="unsafe_debug_errors",
                     help="LOCAL DEBUGGING ONLY: data errors and --clip quote the offending "
                          "value, its row/line and counts (uncharged leaks of the data; "
                          "printed on stderr only, never in a result or the ledger)")
    # the dests of the derived flags THIS parser has (manifest or live): what
    # dpcg.cli.discover forwards as options, so a field is never parsed and then dropped
    p.set_defaults(handler=HANDLER, derived_dests=tuple(d.dest for d in flags))


if __name__ == "__main__":  # pragma: no cover
    write_manifest()
    print(f"wrote {MANIFEST}")
