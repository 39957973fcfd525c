"""Regenerate the pictures in ``docs/img`` (``python -m tests.viz.screenshots``).

* ``alarm-pc-100k.png``: ``dpcg plot`` of non-private PC (G^2) on 100,000 rows of alarm,
  compared with the true CPDAG;
* ``alarm-laplace-pc-report.png``: the HTML report of a Laplace-PC run on alarm
  (epsilon 1, seeded noise, its own ledger), taken with headless Chromium;
* ``ledger-spending.png``: ``dpcg ledger plot`` of that ledger after three runs.

PNGs are quantised to a 256-colour palette to keep them small.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from dpcg.cli import main as dpcg


def _small_png(path: Path) -> None:
    from PIL import Image

    with Image.open(path) as img:
        img.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(
            path, optimize=True)


def _run(*args: str) -> None:
    code = dpcg(list(args))
    if code != 0:
        raise SystemExit(f"dpcg {' '.join(args)} failed with exit code {code}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("docs/img"))
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="dpcg-screens-"))
    pc = work / "alarm-pc.json"
    _run("discover", "--dataset", "alarm", "--rows", "100000", "--algorithm", "pc", "--test",
         "g2", "--seed", "1", "--out", str(pc), "--quiet")
    _run("plot", str(pc), "--out", str(out / "alarm-pc-100k.png"))
    ledger = work / "ledger.sqlite"
    result = work / "alarm-laplace.json"
    for noise_seed in ("1", "2", "3"):
        _run("discover", "--dataset", "alarm", "--rows", "100000", "--algorithm", "laplace-pc",
             "--epsilon", "1", "--lifetime-epsilon", "5", "--lifetime-delta", "1e-5",
             "--ledger", str(ledger), "--noise-seed", noise_seed, "--seed", "1",
             "--out", str(result), "--quiet")
    report = work / "report.html"
    _run("report", str(result), "--ledger", str(ledger), "--out", str(report))
    _run("ledger", "plot", str(ledger), "--out", str(out / "ledger-spending.png"))
    from tests.viz.browser import chromium

    with chromium(1100, 1000) as driver:
        driver.get(report.as_uri())
        height = int(driver.execute_script("return document.documentElement.scrollHeight"))
        driver.set_window_size(1100, min(height + 40, 4000))
        driver.save_screenshot(str(out / "alarm-laplace-pc-report.png"))
    for name in ("alarm-pc-100k.png", "alarm-laplace-pc-report.png", "ledger-spending.png"):
        _small_png(out / name)
        print(f"wrote {out / name} ({(out / name).stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()
