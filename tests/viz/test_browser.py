"""The HTML report in a real headless Chromium (Debian's ``chromium`` + ``chromium-driver``).

It loads with no console error, makes no network request (the only resource is the file
itself), runs no script (a malicious node name opens no alert), and shows the graph (one
``<svg>`` with every node label) and the guarantee. Skipped only outside CI when the
browser is missing; with ``CI`` set a missing browser is a failure.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from dpcg.viz.report import write_report
from tests.viz import browser
from tests.viz.conftest import MALICIOUS, result_doc

pytest.importorskip("matplotlib")

_reason = browser.missing()
if _reason is not None:
    if os.environ.get("CI"):
        pytest.fail(f"browser test cannot run in CI: {_reason}", pytrace=False)
    pytest.skip(_reason, allow_module_level=True)

from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

#: Chromium's own pages (the new-tab page loads chrome://resources at start-up).
INTERNAL = ("chrome://", "chrome-untrusted://", "devtools://")


def _requests(driver: Any) -> list[tuple[str, str]]:
    """``(url, documentURL)`` of every request since the last call, from the DevTools
    performance log (browser-internal ``chrome://`` loads of the start page left out)."""
    out = []
    for item in driver.get_log("performance"):
        message = json.loads(item["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            params = message["params"]
            url = params["request"]["url"]
            if not url.startswith(INTERNAL):
                out.append((url, params.get("documentURL", "")))
    return out


def _assert_only_the_file(driver: Any, page: Path) -> None:
    requests = _requests(driver)
    uri = page.as_uri()
    # the page's document asked for nothing but itself ...
    assert [url for url, doc in requests if doc == uri] == [uri]
    # ... and nothing anywhere went to the network or another file
    assert [url for url, _ in requests if url != uri and not url.startswith("data:")] == []


def _load(driver: Any, page: Path) -> None:
    _requests(driver)  # drain what the browser did before the page was asked for
    driver.get(page.as_uri())
    assert driver.execute_script("return document.readyState") == "complete"


def test_report_in_headless_chromium(private_result: Path, ledger_path: Path,
                                     tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    write_report(private_result, out, ledger_path)
    nodes = json.loads(private_result.read_text())["nodes"]
    with browser.chromium() as driver:
        _load(driver, out)
        errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        assert errors == []
        resources = driver.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)")
        assert resources == []
        navigation = driver.execute_script(
            "return performance.getEntriesByType('navigation').map(e => e.name)")
        assert navigation == [out.as_uri()]
        _assert_only_the_file(driver, out)
        svgs = driver.find_elements(By.CSS_SELECTOR, "#graph svg")
        assert len(svgs) == 1
        assert svgs[0].size["width"] > 300
        assert svgs[0].size["height"] > 200
        labels = {t.get_attribute("textContent").strip()
                  for t in svgs[0].find_elements(By.TAG_NAME, "text")}
        assert set(nodes) <= labels
        guarantee = driver.find_element(By.ID, "guarantee")
        assert guarantee.is_displayed()
        assert "differential privacy under the replace-one" in guarantee.text
        assert "VERIFIED" in driver.find_element(By.ID, "verify").text
        rows = driver.find_elements(By.CSS_SELECTOR, "#entries tr")
        assert len(rows) == 1 + 5  # header + dataset, run-open, 2 releases, run-close


def test_malicious_names_run_nothing(ledger_path: Path, tmp_path: Path) -> None:
    doc = result_doc(None, nodes=[MALICIOUS, "b"], directed=[[MALICIOUS, "b"]],
                     undirected=[])
    doc["algorithm"] = '<img src="http://127.0.0.1:9/x.png" onerror="alert(1)">'
    res = tmp_path / "evil.json"
    res.write_text(json.dumps(doc), encoding="utf-8")
    out = tmp_path / "evil.html"
    write_report(res, out)
    with browser.chromium() as driver:
        _load(driver, out)
        with pytest.raises(NoAlertPresentException):
            _ = driver.switch_to.alert.text
        assert driver.find_elements(By.TAG_NAME, "img") == []
        assert driver.find_elements(By.TAG_NAME, "script") == []
        _assert_only_the_file(driver, out)
        text = driver.find_element(By.TAG_NAME, "h1").text
        assert "<img" in text  # shown as text
        labels = [t.get_attribute("textContent")
                  for t in driver.find_elements(By.CSS_SELECTOR, "#graph svg text")]
        assert MALICIOUS in labels
        assert [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"] == []
