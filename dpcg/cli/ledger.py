"""``dpcg ledger``: create, inspect, verify and export privacy ledgers; a demo.

Examples::

    dpcg ledger init runs.db --dataset-id survey-2024 --epsilon 3 --delta 1e-6
    dpcg ledger show runs.db
    dpcg ledger verify runs.db
    dpcg ledger export runs.db --out survey-2024.cert.json
    dpcg ledger verify survey-2024.cert.json --head <published head hash>
    dpcg ledger demo

Signed heads (optional extra ``dpcg[sign]``)::

    dpcg ledger keygen --out ops.key                 # ops.key (0600) + ops.key.pub
    dpcg ledger sign-init runs.db --key ops.key      # bind; or `init ... --signing-key`
    DPCG_LEDGER_KEY=ops.key dpcg discover ...        # every write signs the new head
    dpcg ledger export-head runs.db --out head.json  # give head.json to the reviewer
    dpcg ledger verify runs.db --public-key ops.key.pub --head head.json

PostgreSQL (optional extra ``dpcg[postgres]``; every LEDGER argument takes a URL)::

    dpcg ledger pg-install postgresql://admin@db/dpcg --public-key custodian.key.pub
    dpcg ledger init postgresql://dpcg_custodian@db/dpcg --dataset-id survey --epsilon 3
    dpcg ledger sign-heads postgresql://dpcg_custodian@db/dpcg --key custodian.key
    dpcg ledger policy --key custodian.key --out /etc/dpcg/policy.json \
        --govern survey=postgresql://dpcg_analyst@db/dpcg --data survey=/srv/survey.csv

``verify`` accepts a ledger (SQLite file or PostgreSQL URL) or an exported JSON certificate. It
exits 0 and prints a summary when everything verifies, 1 with a one-line reason when
the chain, a cost, a total, a head signature or the exported head does not, and 2 for
a file that is not a ledger at all, a missing/unsafe/wrong key, an unsigned ledger
checked with ``--public-key``, or a corrupt head file.
See ``docs/ledger.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from accounting.costs import Budget, Cost, round_down, round_up
from accounting.entries import JSONValue
from accounting.errors import (
    AccountingError,
    BudgetExceededError,
    ForeignLedgerError,
    LedgerError,
)
from accounting.ledger import (
    Ledger,
    LedgerBackend,
    VerificationReport,
    generate_keypair,
    is_postgres,
    open_ledger,
    session_for_run,
    verify_certificate,
)
from accounting.ledger._verify import is_hash, run_charge
from accounting.ledger.store import DatasetInfo, RunInfo, looks_like_sqlite
from accounting.relations import Relation
from accounting.session import spent_summary


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "ledger",
        help="create, show, verify and export privacy ledgers",
        description="Create, inspect, verify and export hash-chained privacy ledgers.",
    )
    sub = parser.add_subparsers(dest="ledger_command", metavar="ACTION")
    parser.set_defaults(func=lambda args: _usage(parser))

    p_init = sub.add_parser("init", help="create a ledger (if missing) and register a dataset")
    p_init.add_argument("path", type=_location, metavar="LEDGER",
                        help="ledger file (SQLite) or postgresql:// URL (installed with "
                             "`pg-install`)")
    p_init.add_argument("--dataset-id", required=True, metavar="ID",
                        help="declared dataset id (a name you choose, never a hash of rows)")
    p_init.add_argument("--epsilon", type=float, required=True, metavar="E",
                        help="lifetime epsilon of the dataset (> 0)")
    p_init.add_argument("--delta", type=float, default=0.0, metavar="D",
                        help="lifetime delta of the dataset, in [0, 1) (default 0)")
    p_init.add_argument("--relation", default=Relation.REPLACE_ONE.value,
                        choices=[r.value for r in Relation],
                        help="neighbouring relation (default replace-one)")
    p_init.add_argument("--description", default="", help="free text about the dataset")
    p_init.add_argument("--lifetime-rule", default="basic", choices=["basic", "zcdp"],
                        dest="lifetime_rule",
                        help="how the lifetime composes the mechanisms of all runs: basic "
                             "(sums of eps and delta; default) or zcdp (the lifetime kept in "
                             "rho = its zCDP conversion, every mechanism charged its rho; "
                             "needs --delta > 0; basic runs must then reserve delta 0)")
    p_init.add_argument("--signing-key", type=Path, metavar="KEY",
                        help="bind a NEW ledger to this private key (see `keygen`); every "
                             "later write must sign with it")
    p_init.set_defaults(func=_init)

    p_show = sub.add_parser("show", help="datasets, runs and budgets recorded in a ledger")
    p_show.add_argument("path", type=_location, metavar="LEDGER",
                        help="ledger file or postgresql:// URL")
    p_show.add_argument("--dataset-id", metavar="ID", help="only this dataset")
    p_show.add_argument("--json", action="store_true", help="print JSON instead of text")
    p_show.set_defaults(func=_show)

    p_verify = sub.add_parser("verify", help="verify a ledger or an exported certificate")
    p_verify.add_argument("path", type=_location, metavar="LEDGER_OR_CERTIFICATE",
                          help="ledger file, postgresql:// URL or JSON certificate")
    p_verify.add_argument("--head", metavar="HASH_OR_HEAD_FILE",
                          help="a 64-hex hash: require it to be the current head; otherwise "
                               "an exported head file (`export-head`, needs --public-key): "
                               "require the ledger to still hold that signed head (detects "
                               "truncation after it and a rewrite before it)")
    p_verify.add_argument("--public-key", type=Path, metavar="PUB",
                          help="the ledger's public key (.pub file): every head signature "
                               "must verify with it and the current head must be signed")
    p_verify.add_argument("--contains", metavar="HASH",
                          help="also require an entry with this hash (a head published "
                               "earlier: the history up to it was not rewritten)")
    p_verify.add_argument("--json", action="store_true", help="print the full report as JSON")
    p_verify.set_defaults(func=_verify)

    p_export = sub.add_parser("export", help="verify a ledger and write its JSON certificate")
    p_export.add_argument("path", type=_location, metavar="LEDGER",
                          help="ledger file or postgresql:// URL")
    p_export.add_argument("--out", type=Path, required=True, metavar="FILE",
                          help="certificate to write")
    p_export.set_defaults(func=_export)

    p_keygen = sub.add_parser("keygen", help="create an Ed25519 key pair for signed ledgers")
    p_keygen.add_argument("--out", type=Path, required=True, metavar="KEY",
                          help="private key file to create (mode 0600; KEY.pub beside it); "
                               "never overwritten")
    p_keygen.set_defaults(func=_keygen)

    p_sign = sub.add_parser("sign-init", help="bind an existing ledger to a signing key")
    p_sign.add_argument("path", type=Path, metavar="PATH", help="ledger file")
    p_sign.add_argument("--key", type=Path, required=True, metavar="KEY",
                        help="private key file (from `keygen`)")
    p_sign.set_defaults(func=_sign_init)

    p_head = sub.add_parser("export-head",
                            help="write the current signed head for a reviewer to keep")
    p_head.add_argument("path", type=_location, metavar="LEDGER",
                        help="signed ledger file or postgresql:// URL")
    p_head.add_argument("--out", type=Path, required=True, metavar="HEAD.json",
                        help="head file to write")
    p_head.set_defaults(func=_export_head)

    p_pg = sub.add_parser(
        "pg-install", help="install a PostgreSQL ledger in a database (administrator)",
        description="Create the schema dpcg, its owner role and the analyst and custodian "
                    "roles' privileges (analysts: read + reserve/charge/close_run; "
                    "custodians: read + register/sign_head/bind_key). Run once, as a role "
                    "that may create roles and schemas.")
    p_pg.add_argument("url", metavar="URL", help="postgresql:// URL of the database, as its "
                                                   "administrator")
    p_pg.add_argument("--owner", default="dpcg_owner", help="NOLOGIN owner role (created)")
    p_pg.add_argument("--analyst", action="append", metavar="ROLE",
                      help="an analyst login role (repeatable; default dpcg_analyst)")
    p_pg.add_argument("--custodian", action="append", metavar="ROLE",
                      help="a custodian login role (repeatable; default dpcg_custodian)")
    p_pg.add_argument("--public-key", type=Path, metavar="PUB",
                      help="bind the new ledger to the custodian's public key now")
    p_pg.add_argument("--analysts-register", action="store_true",
                      help="let analysts register new dataset ids on their first run (a "
                           "team without a custodian; default: only custodians register)")
    p_pg.set_defaults(func=_pg_install)

    p_sh = sub.add_parser(
        "sign-heads", help="custodian: verify a PostgreSQL ledger and sign its head",
        description="Run by the custodian (who holds the key; the analysts' processes "
                    "never do): binds the ledger to the key on first use, verifies every "
                    "earlier head signature and the whole chain, then signs the current "
                    "head. Run it before `export-head`, e.g. from cron.")
    p_sh.add_argument("url", metavar="URL", help="postgresql:// URL, as the custodian role")
    p_sh.add_argument("--key", type=Path, required=True, metavar="KEY",
                      help="the custodian's private key file (from `keygen`)")
    p_sh.set_defaults(func=_sign_heads)

    p_pol = sub.add_parser(
        "policy", help="custodian: sign the policy that governs datasets",
        description="Write a policy signed with the custodian's key: the governed dataset "
                    "ids (each registered in the named ledger, which must be bound to the "
                    "same key), the data files that are each of them, and whether "
                    "--no-ledger runs are allowed. Install it as /etc/dpcg/policy.json "
                    "(where analysts cannot write) or name it in $DPCG_POLICY.")
    p_pol.add_argument("--key", type=Path, required=True, metavar="KEY",
                       help="the custodian's private key file")
    p_pol.add_argument("--out", type=Path, required=True, metavar="POLICY.json")
    p_pol.add_argument("--govern", action="append", required=True, metavar="ID=LEDGER",
                       help="govern dataset ID, registered in LEDGER (repeatable)")
    p_pol.add_argument("--data", action="append", default=[], metavar="ID=FILE",
                       help="FILE is dataset ID: a run on it must use that id (repeatable)")
    p_pol.add_argument("--allow-no-ledger", action="store_true",
                       help="allow --no-ledger runs (default: refused)")
    p_pol.set_defaults(func=_policy)

    p_demo = sub.add_parser("demo", help="a small private analysis recorded in a ledger")
    p_demo.add_argument("--ledger", type=Path, metavar="PATH",
                        help="ledger to use (created if missing; default: a new temporary file)")
    p_demo.set_defaults(func=_demo)

    from dpcg.cli.plot import register_ledger_plot

    register_ledger_plot(sub)


def _location(text: str) -> Path | str:
    """A ledger location argument: a postgresql:// URL stays text, anything else is a
    path."""
    return text if is_postgres(text) else Path(text)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _f_down(q: Fraction) -> str:
    """A rational budget for display: its float rounded down (never overstates it)."""
    return f"{round_down(q):.6g}"


def _f(q: Fraction) -> str:
    """A rational for display: its float rounded up (never understates spending)."""
    try:
        return f"{round_up(q):.6g}"
    except OverflowError:
        return ">1.8e308"


# ---------------------------------------------------------------------------------
# init / show / export
# ---------------------------------------------------------------------------------
def _init(args: argparse.Namespace) -> int:
    lifetime = Budget(args.epsilon, args.delta)  # validates before anything is written
    with open_ledger(args.path, create=True, signing_key=args.signing_key) as ledger:
        ledger.register_dataset(args.dataset_id, lifetime, Relation.parse(args.relation),
                                args.description, lifetime_rule=args.lifetime_rule)
        print(f"ledger {args.path} (id {ledger.ledger_id})")
        key = ledger.signing_public_key
        if key is not None:
            verb = "bound to key (heads signed by the custodian)" if is_postgres(args.path) \
                else "signed with key"
            print(f"{verb} {key.fingerprint}")
        rule = ""
        if args.lifetime_rule == "zcdp":
            rho = ledger.dataset(args.dataset_id).lifetime_rho
            assert rho is not None
            rule = f", lifetime rule zcdp (rho={_f_down(rho)})"
        print(f"registered dataset {args.dataset_id!r}: lifetime epsilon={args.epsilon:g}, "
              f"delta={args.delta:g}, relation {args.relation}{rule}")
    return 0


def _dataset_json(d: DatasetInfo, runs: list[RunInfo],
                  rho_of: dict[str, Fraction]) -> dict[str, JSONValue]:
    out: dict[str, JSONValue] = {
        "dataset_id": d.dataset_id,
        "relation": d.relation.value,
        "description": d.description,
        "lifetime": {"epsilon": str(d.lifetime_epsilon), "delta": str(d.lifetime_delta)},
        "lifetime_rule": d.lifetime_rule,
        "reserved": {"epsilon": str(d.reserved_epsilon), "delta": str(d.reserved_delta)},
        "charged": {"epsilon": str(d.charged_epsilon), "delta": str(d.charged_delta)},
        "remaining": {"epsilon": str(d.remaining_epsilon), "delta": str(d.remaining_delta)},
        "runs": [_run_json(r, rho_of) for r in runs],
    }
    if d.lifetime_rule == "zcdp":
        # admission is on rho; "charged"/"remaining" above are its (eps, delta) conversions
        # at the lifetime's delta
        out["rho"] = {"lifetime": str(d.lifetime_rho), "charged": str(d.charged_rho),
                      "remaining": str(d.remaining_rho)}
    return out


def _run_json(r: RunInfo, rho_of: dict[str, Fraction]) -> dict[str, JSONValue]:
    out: dict[str, JSONValue] = {
        "run_id": r.run_id,
        "rule": r.rule,
        "budget": {"epsilon": str(r.budget_epsilon), "delta": str(r.budget_delta)},
        "status": r.status,
        "seed_explicit": r.seed_explicit,
        "description": r.description,
        "entries": r.n_entries,
        "outputs": r.n_outputs,
        "spent": _run_spent(r),
        "charged": dict(zip(("epsilon", "delta"), map(str, _charge(r)), strict=True)),
    }
    if r.run_id in rho_of:  # under a zcdp lifetime the run is charged rho
        out["charged"] = {"rho": str(rho_of[r.run_id])}
    return out


def _charge(r: RunInfo) -> tuple[Fraction, Fraction]:
    return run_charge(r.rule, r.status, r.n_entries, r.budget_epsilon, r.budget_delta,
                      r.spent_epsilon, r.spent_delta)


def _run_spent(r: RunInfo) -> dict[str, JSONValue]:
    """The run's spending under its rule (accounting.session.spent_summary): under zcdp
    spent rho and its (eps, delta) conversion, never the sum of pure epsilons."""
    try:
        spent = Cost(r.spent_epsilon, r.spent_delta, r.spent_rho)
    except AccountingError:
        return {"rule": r.rule, "error": "the run's stored totals have no bound"}
    return spent_summary(r.rule, r.budget_epsilon, r.budget_delta, spent)


def _run_line(r: RunInfo, rho_of: dict[str, Fraction]) -> str:
    summary = _run_spent(r)
    spent = []
    if r.rule == "basic":
        spent.append(f"eps={_f(r.spent_epsilon) if r.spent_epsilon is not None else '?'}")
        spent.append(f"delta={_f(r.spent_delta)}")
    else:
        spent.append(f"rho={_f(r.spent_rho) if r.spent_rho is not None else '?'}")
        converted = summary.get("epsilon_float")
        shown = f"{converted:.6g}" if isinstance(converted, float) else "?"
        spent.append(f"(eps={shown} at delta={_f(r.budget_delta)})")
    if r.run_id in rho_of:
        spent.append(f"charged rho={_f(rho_of[r.run_id])}")
    else:
        charge = _charge(r)
        spent.append(f"charged eps={_f(charge[0])} delta={_f(charge[1])}")
    seeded = ", SEEDED" if r.seed_explicit else ""
    desc = f"  {r.description}" if r.description else ""
    return (f"    run {r.run_id}  {r.rule:5s}  reserved eps={_f(r.budget_epsilon)} "
            f"delta={_f(r.budget_delta)}  {r.status}{seeded}  {r.n_entries} releases, "
            f"spent {' '.join(spent)}{desc}")


def _run_rhos(ledger: LedgerBackend) -> dict[str, Fraction]:
    """Under a zcdp lifetime: every run's charge in rho, re-derived from the chain."""
    return {r.run_id: r.charge_rho() for r in ledger.verify().runs
            if r.reserved_rho is not None}


def _show(args: argparse.Namespace) -> int:
    with open_ledger(args.path) as ledger:
        datasets = ([ledger.dataset(args.dataset_id)] if args.dataset_id
                    else ledger.datasets())
        per = [(d, ledger.runs(d.dataset_id)) for d in datasets]
        rho_of = _run_rhos(ledger) if any(d.lifetime_rule == "zcdp" for d in datasets) \
            else {}
        head = ledger.head_hash()
        entries = ledger.entry_count()
        if args.json:
            print(json.dumps({
                "path": str(args.path), "ledger_id": ledger.ledger_id,
                "created_at": ledger.created_at, "format_version": ledger.format_version,
                "entries": entries, "head_hash": head,
                "signing_key_fingerprint": (None if ledger.signing_public_key is None
                                            else ledger.signing_public_key.fingerprint),
                "datasets": [_dataset_json(d, runs, rho_of) for d, runs in per],
            }, indent=2))
            return 0
        print(f"ledger {args.path}  id {ledger.ledger_id}  created {ledger.created_at}")
        print(f"  {entries} entries, head hash {head or '(empty)'}")
        key = ledger.signing_public_key
        if key is not None:
            print(f"  signed heads, key fingerprint {key.fingerprint}")
        if not per:
            print("  no datasets registered (use `dpcg ledger init`)")
        for d, runs in per:
            desc = f" - {d.description}" if d.description else ""
            print(f"  dataset {d.dataset_id!r} ({d.relation.value}){desc}")
            print(f"    lifetime eps={_f(d.lifetime_epsilon)} delta={_f(d.lifetime_delta)}; "
                  f"reserved eps={_f(d.reserved_epsilon)} delta={_f(d.reserved_delta)} "
                  f"by {len(runs)} run(s); charged eps={_f(d.charged_epsilon)} "
                  f"delta={_f(d.charged_delta)} (closed runs: what they spent); "
                  f"remaining eps={_f(d.remaining_epsilon)} delta={_f(d.remaining_delta)}")
            if d.lifetime_rule == "zcdp":
                assert d.lifetime_rho is not None
                assert d.remaining_rho is not None
                print(f"    lifetime rule zcdp: lifetime rho={_f_down(d.lifetime_rho)}; "
                      f"charged rho={_f(d.charged_rho)}; remaining rho="
                      f"{_f_down(d.remaining_rho)} (eps above: conversions at the "
                      f"lifetime delta)")
            for r in runs:
                print(_run_line(r, rho_of))
    return 0


def _export(args: argparse.Namespace) -> int:
    with open_ledger(args.path) as ledger:
        report = ledger.export(args.out)
    print(f"wrote certificate {args.out}: {report.entries} entries, "
          f"head hash {report.head_hash or '(empty)'}")
    return 0


# ---------------------------------------------------------------------------------
# verify
# ---------------------------------------------------------------------------------
def _is_sqlite(path: Path) -> bool:
    try:
        return looks_like_sqlite(path)
    except OSError as exc:
        raise LedgerError(f"cannot read {path}: {exc}") from None


def verify_path(path: Path | str, head: str | None = None, contains: str | None = None,
                public_key: Path | None = None,
                head_file: Path | None = None) -> VerificationReport:
    """Verify a ledger file, a PostgreSQL ledger or a certificate, whichever ``path`` is."""
    if head_file is not None and public_key is None:
        raise LedgerError("an exported head file is checked with the ledger's public key: "
                          "add --public-key PUB")
    if isinstance(path, str) and is_postgres(path):
        with open_ledger(path) as pg:
            return pg.verify(expected_head=head, contains=contains, public_key=public_key,
                             head=head_file)
    path = Path(path)
    if not path.is_file():
        raise LedgerError(f"{path} does not exist or is not a file")
    if _is_sqlite(path):
        with Ledger.open(path) as ledger:
            return ledger.verify(expected_head=head, contains=contains,
                                 public_key=public_key, head=head_file)
    try:
        return verify_certificate(path, expected_head=head, contains=contains,
                                  public_key=public_key, head=head_file)
    except ForeignLedgerError:
        raise ForeignLedgerError(
            f"{path} is neither a dpcg ledger (SQLite) nor a ledger certificate (JSON)") from None


def _verify(args: argparse.Namespace) -> int:
    head: str | None = args.head
    head_file: Path | None = None
    if head is not None and not is_hash(head):
        head_file = Path(head)
        head = None
    report = verify_path(args.path, head, args.contains, args.public_key, head_file)
    if args.json:
        print(json.dumps(report.summary(), indent=2))
    if not report.ok:
        more = f" (and {len(report.problems) - 1} more)" if len(report.problems) > 1 else ""
        print(f"dpcg ledger verify: FAILED: {report.source}: {report.problems[0]}{more}",
              file=sys.stderr)
        return 1
    if not args.json:
        print(f"OK: {report.source} verifies: {report.entries} entries, hash chain intact, "
              f"costs re-derived from parameters, totals and budgets consistent")
        for d in report.datasets:
            print(f"  dataset {d.dataset_id!r}: charged eps={_f(d.charged_epsilon)} "
                  f"delta={_f(d.charged_delta)} (reserved eps={_f(d.reserved_epsilon)} "
                  f"delta={_f(d.reserved_delta)}) of lifetime eps={_f(d.lifetime_epsilon)} "
                  f"delta={_f(d.lifetime_delta)} by {len(d.runs)} run(s)")
            if d.lifetime_rule == "zcdp":
                assert d.lifetime_rho is not None
                print(f"    lifetime rule zcdp: charged rho={_f(d.charged_rho)} of "
                      f"{_f_down(d.lifetime_rho)} (eps above: its conversion)")
        print(f"  head hash {report.head_hash or '(empty)'}")
        if args.contains:
            print(f"  contains the pinned hash {args.contains}")
        if args.public_key is not None:
            print(f"  every head signature verifies with {args.public_key}; the head is signed")
        if head_file is not None:
            print(f"  still holds the exported head {head_file} (no truncation after it, no "
                  "rewrite before it)")
        if args.public_key is None and (is_postgres(args.path) or _is_sqlite(args.path)):
            with open_ledger(args.path) as ledger:
                key = ledger.signing_public_key
            if key is not None:
                print(f"  signed ledger (key {key.fingerprint[:16]}...): the head signatures "
                      "were NOT checked; add --public-key PUB (and --head HEAD.json)")
    return 0


# ---------------------------------------------------------------------------------
# signed heads
# ---------------------------------------------------------------------------------
def _keygen(args: argparse.Namespace) -> int:
    private, public, fp = generate_keypair(args.out)
    print(f"wrote private key {private} (mode 0600: keep it with the operator's runs, "
          f"e.g. DPCG_LEDGER_KEY={private})")
    print(f"wrote public key {public} (give it to the reviewer)")
    print(f"fingerprint {fp}")
    return 0


def _sign_init(args: argparse.Namespace) -> int:
    with Ledger.open(args.path) as ledger:
        fp = ledger.bind_signing_key(args.key)
        head = ledger.head_hash()
    print(f"ledger {args.path} is bound to key {fp}; every write now signs its new head")
    print(f"  current head {head or '(empty)'}" + (" signed" if head else ""))
    return 0


def _export_head(args: argparse.Namespace) -> int:
    with open_ledger(args.path) as ledger:
        head = ledger.export_head(args.out)
    print(f"wrote signed head {args.out}: seq {head.seq}, hash {head.hash}, "
          f"datasets {', '.join(head.datasets) or '(none)'}, key {head.public_key.fingerprint}")
    print("keep it where the operator cannot change it; check later with "
          f"`dpcg ledger verify {args.path} --head {args.out} --public-key PUB`")
    return 0


# ---------------------------------------------------------------------------------
# PostgreSQL and custody
# ---------------------------------------------------------------------------------
def _pg_install(args: argparse.Namespace) -> int:
    from accounting.ledger import load_verify_key
    from accounting.ledger.postgres import install_schema, redact

    if not is_postgres(args.url):
        raise LedgerError(f"{args.url!r} is not a postgresql:// URL")
    analysts = args.analyst or ["dpcg_analyst"]
    custodians = args.custodian or ["dpcg_custodian"]
    key = None if args.public_key is None else load_verify_key(args.public_key)
    ledger_id = install_schema(args.url, owner=args.owner, analysts=analysts,
                               custodians=custodians, public_key=key,
                               analysts_register=args.analysts_register)
    print(f"installed ledger {ledger_id} in {redact(args.url)}: owner {args.owner}, "
          f"analysts {', '.join(analysts)}, custodians {', '.join(custodians)}")
    if key is not None:
        print(f"bound to key {key.fingerprint}")
    return 0


def _sign_heads(args: argparse.Namespace) -> int:
    from accounting.ledger.custody import sign_heads
    from accounting.ledger.postgres import redact

    signed = sign_heads(args.url, args.key)
    if signed is None:
        print(f"ledger {redact(args.url)} is empty: nothing to sign")
    else:
        print(f"ledger {redact(args.url)}: verified and signed head seq {signed[0]}, "
              f"hash {signed[1]}")
    return 0


def _policy(args: argparse.Namespace) -> int:
    from accounting.ledger.custody import governed, write_policy

    def pairs(values: list[str], flag: str) -> list[tuple[str, str]]:
        out = []
        for v in values:
            name, sep, rest = v.partition("=")
            if not sep or not name or not rest:
                raise LedgerError(f"{flag}: expected ID=VALUE, got {v!r}")
            out.append((name, rest))
        return out

    data: dict[str, list[str]] = {}
    for ds, f in pairs(args.data, "--data"):
        data.setdefault(ds, []).append(f)
    entries = []
    for ds, where in pairs(args.govern, "--govern"):
        with open_ledger(_location(where)) as ledger:
            entries.append(governed(ds, ledger, data=data.pop(ds, [])))
    if data:
        raise LedgerError(f"--data names dataset ids not governed: {', '.join(sorted(data))}")
    for g in entries:
        print(f"  {g.dataset_id}: ledger {g.ledger} (id {g.ledger_id}), lifetime "
              f"eps={_f(g.lifetime_epsilon)} delta={_f(g.lifetime_delta)} as registered "
              f"there, relation {g.relation}, data {', '.join(g.data) or '(none)'}")
    policy = write_policy(args.out, args.key, entries, allow_no_ledger=args.allow_no_ledger)
    print(f"wrote policy {args.out} signed by {policy.public_key.fingerprint}: governs "
          f"{', '.join(sorted(policy.datasets))}; --no-ledger "
          f"{'allowed' if policy.allow_no_ledger else 'refused'}")
    return 0


# ---------------------------------------------------------------------------------
# demo
# ---------------------------------------------------------------------------------
#: The demo's private table: 40 survey respondents, columns (age in [18, 90], smoker 0/1).
#: Fixed literal data (nothing random); the bounds and n are public.
DEMO_TABLE = np.array([
    [23, 0], [35, 1], [47, 0], [52, 1], [61, 0], [29, 0], [44, 1], [38, 0], [71, 0], [19, 1],
    [33, 0], [58, 1], [66, 0], [27, 0], [49, 1], [40, 0], [55, 0], [31, 1], [62, 0], [24, 0],
    [45, 1], [37, 0], [68, 0], [53, 1], [21, 0], [42, 0], [59, 1], [34, 0], [77, 0], [26, 1],
    [48, 0], [39, 0], [64, 1], [30, 0], [51, 0], [36, 1], [57, 0], [28, 0], [73, 0], [43, 1],
], dtype=np.float64)
DEMO_DATASET = "demo-survey"
AGE_BOUNDS = (18.0, 90.0)


def _demo(args: argparse.Namespace) -> int:
    from accounting.mechanisms import Laplace

    if args.ledger is None:
        path = Path(tempfile.mkdtemp(prefix="dpcg-demo-")) / "demo-ledger.db"
    else:
        path = args.ledger
    n = DEMO_TABLE.shape[0]  # public: the survey's size is published
    lo, hi = AGE_BOUNDS  # public bounds, declared, never read off the data
    with Ledger.open(path, create=True) as ledger:
        ledger.ensure_dataset(DEMO_DATASET, Budget(3.0), Relation.REPLACE_ONE,
                              f"built-in demo table: {n} respondents (age, smoker)")
        print(f"ledger {path}: dataset {DEMO_DATASET!r}, {n} rows, lifetime epsilon 3")
        try:
            session = session_for_run(ledger, DEMO_DATASET, Budget(1.0), "basic",
                                      description="dpcg ledger demo", store_outputs=True)
        except BudgetExceededError as exc:
            print(f"dpcg ledger demo: {exc}", file=sys.stderr)
            return 2
        age = np.clip(DEMO_TABLE[:, 0], lo, hi)
        smoker = DEMO_TABLE[:, 1]
        band_edges = np.array([40.0, 60.0])  # public: bands 18-39, 40-59, 60-90
        releases: list[tuple[str, Any, Callable[[], Any]]] = [
            ("number of smokers", Laplace(sensitivity=1.0, epsilon=0.25),
             lambda: float(smoker.sum())),
            # replace-one: one row changes the sum by at most (hi - lo), the mean by that / n
            ("mean age", Laplace(sensitivity=(hi - lo) / n, epsilon=0.5),
             lambda: float(age.mean())),
            # replace-one: moving one row between bands changes two counts by 1 (L1 = 2)
            ("respondents per age band (18-39, 40-59, 60-90)",
             Laplace(sensitivity=2.0, epsilon=0.25),
             lambda: np.bincount(np.searchsorted(band_edges, age, side="right"),
                                 minlength=3).astype(np.float64)),
        ]
        for purpose, mech, compute in releases:
            value = np.round(np.asarray(session.release(mech, compute, purpose=purpose)), 3)
            print(f"  released {purpose}: {value.tolist()}  "
                  f"(Laplace, sensitivity {mech.sensitivity:.4g}, epsilon {mech.epsilon:g})")
        spent = session.spent()
        eps = "n/a" if spent.epsilon is None else _f(spent.epsilon)
        print(f"  spent epsilon={eps} delta={_f(spent.delta)} of the run's 1.0")
        touched: list[bool] = []

        def one_more() -> float:
            touched.append(True)
            return float(smoker.sum())

        try:
            session.release(Laplace(sensitivity=1.0, epsilon=0.25), one_more,
                            purpose="one release too many")
        except BudgetExceededError as exc:
            print(f"  a further release with epsilon 0.25 is refused before the data is "
                  f"touched (data read: {bool(touched)}): {exc}")
        session.close("budget-exhausted" if session.halted else "completed")
        info = ledger.dataset(DEMO_DATASET)
        print(f"  dataset lifetime: {_f(info.charged_epsilon)} of "
              f"{_f(info.lifetime_epsilon)} charged by {info.n_runs} run(s) (closed runs: "
              "what they spent)")
        report = ledger.verify()
    if not report.ok:
        print(f"dpcg ledger demo: ledger does not verify: {report.problems[0]}", file=sys.stderr)
        return 1
    print(f"verified: {report.entries} entries, head hash {report.head_hash}")
    print(f"inspect it with: dpcg ledger show {path}")
    return 0
