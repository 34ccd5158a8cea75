"""The HTML report at 10,000 items: its size, the time to write it, and the time headless Chromium takes to show it.

The records are ``bench_memory``'s synthetic multi-turn RAG log (10,000 records; ``--quick``: 2,000), scored with
every default metric and the hashing embedder (the report's size and speed do not depend on the embedder). The
run report is written with ``render_html`` (its time measured), then opened from disk in Debian's ``chromium``
driven by Playwright: the figure is the time from navigation to the ``load`` event, the median of three loads,
with the console checked for errors. A screenshot of the top of the page goes to
``benchmarks/results/html_report.png``. Goals (issue 12): under 5 MB and under 5 s in the browser.

    python -m benchmarks.speed.bench_html_report [--quick]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import RESULTS, write_result
from ragmeter import Settings, evaluate, record_from_dict
from ragmeter.report.html import render_html
from ragmeter.testing import synthetic_records

GOAL_MB = 5.0
GOAL_S = 5.0


def browser_load(page_path: Path, screenshot: Path) -> dict[str, Any]:
    """Median seconds from navigation to ``load`` over three loads, and the console errors seen."""
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        return {"skipped": "no chromium on this machine (apt-get install -y chromium)"}
    errors: list[str] = []
    seconds = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        for attempt in range(3):
            page = browser.new_page(viewport={"width": 1200, "height": 1400})
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            started = time.perf_counter()
            page.goto(page_path.as_uri(), wait_until="load")
            seconds.append(time.perf_counter() - started)
            if attempt == 0:
                page.screenshot(path=str(screenshot))
            page.close()
        browser.close()
    return {
        "load_s": round(statistics.median(seconds), 3),
        "loads_s": [round(s, 3) for s in seconds],
        "console_errors": errors,
    }


def run(*, quick: bool = False) -> dict[str, Any]:
    n = 2_000 if quick else 10_000
    records = [record_from_dict(row) for row in synthetic_records(n)]
    started = time.perf_counter()
    result = evaluate(records, settings=Settings(embedder="hashing"))
    scored = time.perf_counter() - started
    started = time.perf_counter()
    page = render_html(result, title=f"bench_html_report: {n:,} synthetic records", records=records)
    rendered = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "report.html"
        path.write_text(page, encoding="utf-8")
        browser = browser_load(path, RESULTS / "html_report.png")
    size_mb = len(page.encode("utf-8")) / 1e6
    out = {
        "name": "html_report",
        "items": n,
        "score_s": round(scored, 1),
        "render_s": round(rendered, 2),
        "size_mb": round(size_mb, 3),
        "browser": browser,
        "goals": {"size_mb": GOAL_MB, "load_s": GOAL_S},
        "met": size_mb < GOAL_MB and browser.get("load_s", float("inf")) < GOAL_S and not browser.get("console_errors"),
    }
    print(json.dumps(out, indent=2))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 records instead of 10,000")
    args = parser.parse_args()
    out = run(quick=args.quick)
    if not args.quick:
        write_result("html_report", out, ensure_ascii=True)


if __name__ == "__main__":
    main()
