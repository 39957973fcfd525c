"""A real mixed table with blanks, end to end from the raw CSV (non-private).

The survey of Cai, de Janvry and Sadoulet (2015), shipped in the PyPI package
``causaldata`` 0.1.5 (``causaldata/social_insure/Cai_2015.csv``; see NOTICE.md): 1,410
households, binary, integer and continuous columns, blank cells in five of them.

Steps (docs/examples/social-insure.md explains each):

1. **Draft** the schema from the raw CSV (``dpcg schema draft``:
   :func:`dpcg.data.draft.draft_schema`). The draft is computed from the data and is not
   public.
2. **Owner review**, programmatic and written down in :data:`REVIEW`: drop the two
   village identifiers; replace every drafted bound with a bound known from the domain;
   keep the drafted 0/1 categories; declare the missing-value policy of every column with
   blanks (a discrete column gets the category ``missing``; a row with a blank in a
   continuous column is left out: complete cases). The result is the declared schema.
3. **Load** the raw CSV under that schema and those policies.
4. **Non-private PC** with the mixed test ``dg-lrt`` (``dpcg discover --test dg-lrt``).

Run: ``python docs/examples/social_insure/run.py --out DIR`` (``--sdist FILE`` reads the
CSV from ``causaldata-0.1.5.tar.gz`` itself, e.g. after ``pip download causaldata==0.1.5
--no-deps --no-binary :all:``). Writes ``draft.schema.json``, ``schema.json``,
``complete.csv`` (the table the run read, for ``dpcg discover --data``) and
``result.json``. The private run and the HTML report are wired by the project's front
door (see the page).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import sys
import tarfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RAW_CSV = HERE / "Cai_2015.csv"
RAW_SHA256 = "406fa993a612e5786b181a703bb90d20b7eb5c509f0a83b7a522b73307cf7f06"
SDIST_MEMBER = "causaldata-0.1.5/causaldata/social_insure/Cai_2015.csv"
MISSING = "missing"

#: The data owner's review of the draft (every entry is a decision, none read off the
#: data): columns dropped, domain bounds of the continuous columns, and the declared
#: type of every other column.
REVIEW: dict[str, Any] = {
    "drop": {
        "address": "natural-village name: an identifier, not a variable of the graph",
        "village": "administrative-village name: an identifier (44 values)",
    },
    "continuous": {
        "age": (0.0, 120.0, "age of the household head in years"),
        "agpop": (0.0, 30.0, "household size (persons)"),
        "ricearea_2010": (0.0, 1000.0, "rice area in mu; larger farms are not in the "
                          "population surveyed"),
        "disaster_prob": (0.0, 100.0, "perceived probability of a disaster, in percent"),
        "risk_averse": (0.0, 1.0, "risk-aversion score on [0, 1]"),
        "pre_takeup_rate": (0.0, 1.0, "a rate"),
    },
    "categorical": {
        "takeup_survey": ["0", "1"],
        "male": ["0", "1"],
        "default": ["0", "1"],
        "intensive": ["0", "1"],
        "literacy": ["0", "1"],
    },
    "missing": {
        "discrete": f"a blank is the category {MISSING!r} (declared for the columns that "
                    "can be blank)",
        "continuous": "a row with a blank in a continuous column is left out (complete "
                      "cases; a non-private run: a private run must use a policy whose "
                      "cost is accounted, see docs/data.md)",
    },
}


def raw_bytes(csv_path: Path | None = None, sdist: Path | None = None) -> bytes:
    """The raw CSV: from the sdist of causaldata 0.1.5 or from a file (default: the
    copy beside this script); refuses bytes that are not the package's file."""
    if sdist is not None:
        with tarfile.open(sdist, "r:gz") as tf:
            member = tf.extractfile(SDIST_MEMBER)
            if member is None:
                raise SystemExit(f"{sdist}: no {SDIST_MEMBER}")
            raw = member.read()
    else:
        raw = Path(csv_path or RAW_CSV).read_bytes()
    if hashlib.sha256(raw).hexdigest() != RAW_SHA256:
        raise SystemExit("the CSV is not causaldata 0.1.5's Cai_2015.csv (SHA-256 differs)")
    return raw


def draft(raw_path: Path) -> dict[str, Any]:
    """Step 1: the schema draft (``dpcg schema draft FILE``)."""
    from dpcg.data.draft import draft_schema

    out: dict[str, Any] = draft_schema(raw_path).to_dict()
    return out


def blank_columns(raw: bytes) -> set[str]:
    """The columns with a blank cell (the owner's own look at the data; the draft lists
    the same columns)."""
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8"))))
    header = rows[0]
    return {name for j, name in enumerate(header) if any(r[j] == "" for r in rows[1:])}


def owner_review(draft_doc: dict[str, Any], blanks: set[str]) -> dict[str, Any]:
    """Step 2: the declared schema (a JSON document without ``_draft``) from the draft
    and :data:`REVIEW`. Refuses a draft whose columns or proposed types differ from the
    ones reviewed (a new file needs a new review)."""
    cols = [c["name"] for c in draft_doc["columns"]]
    reviewed = set(REVIEW["drop"]) | set(REVIEW["continuous"]) | set(REVIEW["categorical"])
    if set(cols) != reviewed:
        raise SystemExit(f"the draft's columns {sorted(cols)} are not the reviewed ones")
    out = []
    for col in draft_doc["columns"]:
        name = col["name"]
        if name in REVIEW["drop"]:
            continue
        if name in REVIEW["continuous"]:
            lo, hi, _ = REVIEW["continuous"][name]
            out.append({"name": name, "type": "continuous", "lower": lo, "upper": hi})
            continue
        categories = list(REVIEW["categorical"][name])
        if col.get("type") != "categorical" or list(col.get("categories", [])) != categories:
            raise SystemExit(f"column {name!r}: the draft proposes {col.get('type')!r} with "
                             "other categories than the review declares")
        if name in blanks:
            categories.append(MISSING)
        out.append({"name": name, "type": "categorical", "categories": categories})
    return {"columns": out}


def load(raw: bytes, schema_doc: dict[str, Any]) -> Any:
    """Step 3: the raw CSV under the declared schema and the missing-value policies."""
    import numpy as np

    from dpcg.data import Dataset, Schema

    schema = Schema.from_dict(schema_doc)
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8"))))
    header, body = rows[0], rows[1:]
    pos = {name: j for j, name in enumerate(header)}
    columns = [[r[pos[c.name]] for r in body] for c in schema]
    keep = np.ones(len(body), dtype=bool)
    for col, values in zip(schema, columns, strict=True):
        if not col.is_discrete:
            keep &= np.array([v != "" for v in values])
    kept = np.flatnonzero(keep)
    out: list[list[str]] = []
    for col, values in zip(schema, columns, strict=True):
        vals = [values[i] for i in kept]
        if col.is_discrete:
            vals = [MISSING if v == "" else v for v in vals]
        out.append(vals)
    return Dataset.from_columns(out, schema)


def run(out_dir: Path, csv_path: Path | None = None, sdist: Path | None = None,
        alpha: float = 0.05) -> dict[str, Any]:
    """Steps 1-4; returns the result document (also written to ``out_dir``)."""
    from dpcg.api import discover

    out_dir.mkdir(parents=True, exist_ok=True)
    raw = raw_bytes(csv_path, sdist)
    raw_path = out_dir / "Cai_2015.csv"
    raw_path.write_bytes(raw)
    draft_doc = draft(raw_path)
    (out_dir / "draft.schema.json").write_text(json.dumps(draft_doc, indent=2) + "\n")
    schema_doc = owner_review(draft_doc, blank_columns(raw))
    (out_dir / "schema.json").write_text(json.dumps(schema_doc, indent=2) + "\n")
    dataset = load(raw, schema_doc)
    dataset.to_csv(out_dir / "complete.csv")
    result = discover(dataset, test="dg-lrt", alpha=alpha)
    result.save(out_dir / "result.json")
    doc: dict[str, Any] = result.to_json()
    return doc


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="output directory")
    ap.add_argument("--csv", type=Path, default=None, help="the raw CSV (default: beside "
                                                           "this script)")
    ap.add_argument("--sdist", type=Path, default=None,
                    help="read the CSV from causaldata-0.1.5.tar.gz instead")
    ap.add_argument("--alpha", type=float, default=0.05)
    args = ap.parse_args(argv)
    doc = run(args.out, args.csv, args.sdist, args.alpha)
    print(json.dumps(doc["edges"], indent=1))
    print(f"wrote {args.out}/draft.schema.json, schema.json, complete.csv, result.json "
          f"(dpcg discover --data {args.out}/complete.csv --schema {args.out}/schema.json "
          "--test dg-lrt gives the same graph)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
