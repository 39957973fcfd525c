"""``dpcg report``: the self-contained HTML page (content, escaping, ledger status)."""

from __future__ import annotations

import html
import json
import re
import sqlite3
from pathlib import Path

import pytest

from dpcg.cli import main
from dpcg.viz import ResultFileError
from dpcg.viz.report import write_report
from tests.viz.conftest import DATASET, MALICIOUS, result_doc

pytest.importorskip("matplotlib")


def _external_refs(page: str) -> list[str]:
    """Every src/href/url() that would load something (links to local notes excluded)."""
    loads = re.findall(r"""\bsrc\s*=\s*["']([^"']*)""", page)
    loads += re.findall(r"""url\(\s*["']?([^"')]*)""", page)
    loads += re.findall(r"""<link\b[^>]*href\s*=\s*["']([^"']*)""", page)
    loads += re.findall(r"@import", page)
    return [ref for ref in loads if not ref.startswith("#")]  # same-document fragments


def test_report_contents(private_result: Path, ledger_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    assert main(["report", str(private_result), "--ledger", str(ledger_path),
                 "--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    doc = json.loads(private_result.read_text())
    run_id = doc["ledger"]["run_id"]
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page.lower()
    assert _external_refs(page) == []
    assert "Content-Security-Policy" in page
    assert "default-src 'none'" in html.unescape(page)
    assert "(0.5, 0)-differential privacy under the replace-one" in page
    assert 'id="plan"' in page
    assert "epsilon_per_test" in page
    assert "VERIFIED" in page
    assert run_id in page
    # every entry of that run, and only that run (plus the dataset's registration)
    rows = re.findall(r"<tr><td class='num'>(\d+)</td><td>([a-z-]+)</td>", page)
    kinds = [k for _, k in rows]
    assert kinds == ["dataset", "run-open", "mechanism", "mechanism", "run-close"]
    assert page.count("<svg") == 1
    for name in ("a", "b", "c", "d"):
        assert f">{name}</text>" in page
    # proof notes: the mechanism's and the algorithm's, as relative links that exist
    hrefs = dict(re.findall(r'<a href="([^"]+)">([^<]+)</a>', page))
    targets = {v: k for k, v in hrefs.items()}
    assert {"laplace", "algorithm-laplace-pc", "ledger-composition"} <= set(targets)
    for name, href in targets.items():
        assert not href.startswith(("/", "http")), href
        assert (out.parent / href).resolve().is_file(), name


def test_report_escapes_everything(tmp_path: Path, ledger_path: Path) -> None:
    from accounting.ledger import Ledger

    with Ledger.open(ledger_path) as ledger:
        run_id = ledger.runs(DATASET)[0].run_id
    doc = result_doc(run_id, nodes=[MALICIOUS, "b"], directed=[[MALICIOUS, "b"]],
                     undirected=[], ledger=ledger_path)
    doc["algorithm"] = '<img src=x onerror="alert(1)">'
    doc["plan"]["note"] = "</table><script>alert(2)</script>"
    res = tmp_path / "evil.json"
    res.write_text(json.dumps(doc), encoding="utf-8")
    page = write_report(res, tmp_path / "evil.html", ledger_path)
    assert "<script" not in page.lower()
    assert "<img" not in page.lower()
    assert "<b>" not in page  # ledger purposes are escaped too
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert _external_refs(page) == []


def test_non_private_result_says_so(tmp_path: Path) -> None:
    res = tmp_path / "pc.json"
    doc = result_doc()
    doc["algorithm"] = "pc"
    res.write_text(json.dumps(doc), encoding="utf-8")
    page = write_report(res, tmp_path / "pc.html")
    assert "No privacy guarantee" in page
    assert "not recorded in a ledger" in page


def test_default_ledger_from_result(private_result: Path, tmp_path: Path) -> None:
    page = write_report(private_result, tmp_path / "r.html")
    assert "VERIFIED" in page


def test_corrupt_ledger_shown_loudly(private_result: Path, ledger_path: Path,
                                     tmp_path: Path) -> None:
    conn = sqlite3.connect(ledger_path)
    conn.execute("UPDATE entries SET purpose='edited' WHERE seq=4")
    conn.commit()
    conn.close()
    page = write_report(private_result, tmp_path / "r.html", ledger_path)
    assert "DOES NOT VERIFY" in page
    assert "VERIFIED</span>" not in page


def test_errors(tmp_path: Path, private_result: Path,
                capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ResultFileError, match="does not exist"):
        write_report(tmp_path / "missing.json", tmp_path / "r.html")
    assert main(["report", str(tmp_path / "missing.json"), "--out",
                 str(tmp_path / "r.html")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["report", str(private_result), "--ledger", str(tmp_path / "nope.db"),
                 "--out", str(tmp_path / "r.html")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_end_to_end_from_dpcg_discover(tmp_path: Path) -> None:
    """A real private run through the CLI: its result.json and ledger feed plot and report."""
    res, db = tmp_path / "result.json", tmp_path / "ledger.sqlite"
    assert main(["discover", "--dataset", "asia", "--rows", "2000", "--algorithm",
                 "laplace-pc", "--epsilon", "1", "--ledger", str(db), "--noise-seed", "1",
                 "--out", str(res), "--quiet"]) == 0
    assert main(["plot", str(res), "--out", str(tmp_path / "g.svg")]) == 0
    page = write_report(res, tmp_path / "r.html")  # ledger path taken from the result
    doc = json.loads(res.read_text())
    assert "VERIFIED" in page
    assert doc["ledger"]["run_id"] in page
    releases = len(re.findall(r"<td>mechanism</td>", page))
    assert releases == doc["tests"]["count"] > 0
    assert "differential privacy under the replace-one" in page
    hrefs = re.findall(r'<a href="([^"]+)">', page)
    assert any(h.endswith("algorithm-laplace-pc.md") for h in hrefs)
    assert all((tmp_path / h).resolve().is_file() for h in hrefs)
