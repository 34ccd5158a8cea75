"""The documentation (the README and the site in ``docs/``): the site builds strictly; the README is a front door
(under 200 lines, its links into the site alive, its example output what ``ragmeter run --demo`` prints); the
Python API page documents every public name; the Metrics page's table agrees with the registry, with what each
metric needs. The site's code blocks run in ``tests/test_site_blocks.py``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from site_blocks import DOCS, ROOT, unshown

import ragmeter
from ragmeter.metrics import DEFAULT_CUTOFF, get_metric, list_metrics

README = ROOT / "README.md"


def table_rows() -> dict[str, str]:
    """metric name (rank metrics at the default cutoff) → its 'needs' cell of the Metrics page's table."""
    rows = {}
    for line in (DOCS / "metrics.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("| `") and line.count(" | ") == 4:
            cells = [cell.strip(" |") for cell in line.split(" | ")]
            for name in re.findall(r"`([^`]+)`", cells[0]):
                rows[name.replace("@K", f"@{DEFAULT_CUTOFF}")] = cells[-1]
    return rows


def test_the_site_builds_strictly_with_the_registry_and_the_readme_in_it(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="the site needs the docs extra: pip install -e '.[docs]'")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    registry = (tmp_path / "reference" / "metric-registry" / "index.html").read_text(encoding="utf-8")
    assert [m.name for m in list_metrics() if f"<code>{m.name}</code>" not in registry] == []
    home = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert "What it prints" in home and 'href="guides/ci/"' in home  # the README, its links into the site


def test_the_api_page_documents_every_public_name() -> None:
    documented = re.findall(
        r"^::: ragmeter\.(\w+)$", (DOCS / "reference" / "api.md").read_text(encoding="utf-8"), re.MULTILINE
    )
    assert sorted(documented) == sorted(set(ragmeter.__all__) - {"__version__"})


def test_the_readme_is_a_front_door_whose_links_lead_into_the_site() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 200
    links = re.findall(r"\]\((docs/[^)#]+)", text)
    assert len(links) >= 15 and [link for link in links if not (ROOT / link).is_file()] == []


def test_the_readme_shows_what_the_demo_run_prints(tmp_path: Path) -> None:
    shown = re.search(r"\n## What it prints\n.*?```text\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    done = subprocess.run(
        [str(Path(sys.executable).parent / "ragmeter"), "run", "--demo", "--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert shown is not None and unshown(shown.group(1), done.stdout) == []


def test_every_registered_metric_is_in_the_table() -> None:
    assert set(table_rows()) == {m.name for m in list_metrics()}


def test_the_needs_column_is_what_the_registry_requires() -> None:
    wrong = {
        name: (cell, ", ".join(get_metric(name).requirements))
        for name, cell in table_rows().items()
        if cell != ", ".join(get_metric(name).requirements)
    }
    assert not wrong
