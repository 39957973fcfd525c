"""Seeded fingerprints of every discovery algorithm: ``python -m tests.fingerprints``.

Each run goes through the ``dpcg discover`` CLI (the stable interface) with a fixed data
seed and a fixed noise seed, records into a fresh SQLite ledger, and is reduced to a
SHA-256 of what it released: the graph, the sepsets, every CI test with its (noisy)
statistic, the spent budget, the guarantee and the mechanism counts, plus every ledger
entry's mechanism, parameters, sensitivity, cost and output (run ids, timestamps and
hashes left out: they are not the algorithm's behaviour). A refactoring that claims
"behaviour unchanged" prints the same table before and after.

``--json FILE`` writes the table; ``--check FILE`` compares against a saved table and
exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

from dpcg.cli import main as cli_main

#: (label, argv after ``discover``); ``{data}``/``{schema}`` name the continuous sample.
RUNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    *(
        (f"{algo}/{net}/eps{eps}/s{seed}",
         ("--dataset", net, "--rows", "20000", "--algorithm", algo, "--epsilon", eps,
          "--noise-seed", str(seed)))
        for algo in ("laplace-pc", "svt-pc", "priv-pc", "em-pc", "curate")
        for net in ("asia", "sachs")
        for eps in ("1", "5")
        for seed in (0, 1)
    ),
    ("laplace-pc/alarm/eps1/s0",
     ("--dataset", "alarm", "--rows", "50000", "--algorithm", "laplace-pc", "--epsilon", "1",
      "--noise-seed", "0")),
    ("priv-pc/alarm/eps1/s0",
     ("--dataset", "alarm", "--rows", "50000", "--algorithm", "priv-pc", "--epsilon", "1",
      "--noise-seed", "0")),
    ("laplace-pc[cmi]/sachs/eps5/s0",
     ("--dataset", "sachs", "--rows", "20000", "--algorithm", "laplace-pc", "--test", "cmi",
      "--epsilon", "5", "--noise-seed", "0")),
    ("laplace-pc[kendall-z]/sachs/eps5/s0",
     ("--dataset", "sachs", "--rows", "20000", "--algorithm", "laplace-pc", "--test",
      "kendall-z", "--epsilon", "5", "--noise-seed", "0")),
    ("pc[g2]/alarm", ("--dataset", "alarm", "--rows", "20000", "--algorithm", "pc",
                      "--test", "g2")),
    ("pc[kendall-split]/alarm", ("--dataset", "alarm", "--rows", "20000", "--algorithm", "pc",
                                 "--test", "kendall-split")),
    ("private-ci-pc[privgcm]/sem4",
     ("--data", "{data}", "--schema", "{schema}", "--algorithm", "private-ci-pc", "--test",
      "privgcm", "--epsilon", "3", "--plan-size", "6", "{noise-seed}", "2")),
)

#: How the noise seed of private-ci-pc is spelled (``--seed`` before the redesign).
PRIVATE_CI_SEED_FLAG = "--noise-seed"

_RESULT_KEYS = ("nodes", "edges", "sepsets", "tests", "budget_exhausted")
_ENTRY_COLUMNS = ("kind", "mechanism", "params", "sensitivity", "relation", "cost", "purpose",
                  "seed_explicit", "data")


def _strip_timing(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_timing(v) for k, v in value.items()
                if k not in ("seconds", "timing", "run_id", "path", "ledger")}
    if isinstance(value, list):
        return [_strip_timing(v) for v in value]
    return value


def _privacy(doc: dict[str, Any]) -> dict[str, Any]:
    """The guarantee and the spent budget as numbers, whatever the JSON shape holding
    them (the private-ci-pc shape nested them under ``privacy`` before the redesign)."""
    raw = doc.get("privacy")
    nested: dict[str, Any] = raw if isinstance(raw, dict) else {}
    guarantee = doc.get("guarantee") or nested.get("guarantee")
    spent = doc.get("spent") or nested.get("spent")
    if guarantee is None:
        return {}
    out: dict[str, Any] = {"guarantee": {k: guarantee[k] for k in
                                         ("epsilon", "delta", "relation", "rule")}}
    if spent is not None:
        # ``spent.rho`` is derived from the declared costs (not released content) and
        # matters to the guarantee only through the zCDP conversion, i.e. when delta > 0;
        # the pure-epsilon private-ci-pc shape before the redesign did not report it.
        keys = ("epsilon", "delta", "rho") if guarantee["delta"] > 0 else ("epsilon", "delta")
        out["spent"] = {k: spent.get(k) for k in keys if spent.get(k) not in (None, 0, 0.0)}
    return out


def _ledger_rows(path: Path) -> list[list[Any]]:
    if not path.exists():
        return []
    con = sqlite3.connect(path)
    try:
        cols = ", ".join(_ENTRY_COLUMNS)
        return [list(r) for r in con.execute(f"SELECT {cols} FROM entries ORDER BY seq")]
    finally:
        con.close()


def _continuous_sample(tmp: Path) -> tuple[Path, Path]:
    from dpcg.datasets.sem import random_sem

    ds = random_sem(4, seed=7).sample(200, 0)
    data, schema = tmp / "sem4.csv", tmp / "sem4.schema.json"
    ds.to_csv(data)
    schema.write_text(ds.schema.to_json())
    return data, schema


def fingerprint(label: str, argv: tuple[str, ...], tmp: Path, data: Path,
                schema: Path) -> tuple[str, str]:
    out = tmp / f"{abs(hash(label))}.json"
    ledger = tmp / f"{abs(hash(label))}.sqlite"
    args = [a.replace("{data}", str(data)).replace("{schema}", str(schema))
            .replace("{noise-seed}", PRIVATE_CI_SEED_FLAG) for a in argv]
    private = "--epsilon" in args
    full = ["discover", *args, "--quiet", "--include-tests", "--out", str(out)]
    if private:
        full += ["--ledger", str(ledger), "--dataset-id", f"fp:{label}"]
    with contextlib.redirect_stderr(io.StringIO()) as err:
        code = cli_main(full)
    if code != 0:
        raise SystemExit(f"{label}: exit {code}: {err.getvalue().strip()}")
    doc = json.loads(out.read_text())
    kept = {k: _strip_timing(doc[k]) for k in _RESULT_KEYS if k in doc}
    kept.update(_privacy(doc))
    payload = json.dumps({"result": kept, "ledger": _ledger_rows(ledger)}, sort_keys=True)
    digest = hashlib.sha256(payload.encode()).hexdigest()[:16]
    n_edges = len(doc["edges"]["directed"]) + len(doc["edges"]["undirected"])
    return digest, f"{n_edges} edges, {doc['tests']['count']} tests"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="write the table here")
    ap.add_argument("--check", type=Path, help="compare with a saved table")
    ap.add_argument("--only", help="run only labels containing this text")
    a = ap.parse_args(argv)
    table: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        data, schema = _continuous_sample(tmp)
        for label, run in RUNS:
            if a.only and a.only not in label:
                continue
            digest, what = fingerprint(label, run, tmp, data, schema)
            table[label] = digest
            print(f"{label:40s} {digest}  ({what})", flush=True)
    if a.json:
        a.json.write_text(json.dumps(table, indent=1) + "\n")
    if a.check:
        saved = json.loads(a.check.read_text())
        bad = [k for k in table if saved.get(k) != table[k]]
        for k in bad:
            print(f"DIFFERENT: {k}: {saved.get(k)} -> {table[k]}")
        print(f"{len(table) - len(bad)} of {len(table)} fingerprints identical")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
