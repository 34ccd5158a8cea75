"""The documentation (the README and the site in ``docs/``): the site builds strictly; the README is a front door
(under 200 lines, its links into the site alive, its example output what ``ragmeter run --demo`` prints); the
Python API page documents every public name; the Metrics page's table agrees with the registry, with what each
metric needs. The commands of the guides "Compare two runs", "Use it in CI" (its pytest example too), "How many
labels do I need?", "Bahasa Indonesia" and "In production" (an app's traces to ``ragmeter serve``, a real
Prometheus scraping it, its alert firing on the drop) run as shown, with the exit codes and the output they
state."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import ragmeter
from ragmeter.metrics import DEFAULT_CUTOFF, get_metric, list_metrics
from ragmeter.serve.store import SqliteStore

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


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


def section(title: str) -> str:
    """The text of the documentation page titled ``# title``."""
    (page,) = [
        text for path in DOCS.rglob("*.md") if (text := path.read_text(encoding="utf-8")).startswith(f"# {title}\n")
    ]
    return page


def shell_commands(block: str) -> list[tuple[str, int]]:
    """A bash block's commands (``\\`` continuations joined), each with the exit code its comment states
    (``# exit 1: …``; 0 when it states none)."""
    commands = [line for line in block.replace("\\\n", " ").splitlines() if line.strip()]
    return [(line, int(m.group(1)) if (m := re.search(r"#\s*exit (\d+)", line)) else 0) for line in commands]


def squashed(line: str) -> str:
    return " ".join(line.split())


def unshown(shown: str, printed: str) -> list[str]:
    """The lines of the text block ``shown`` (but "…" lines) that are not lines of ``printed`` in the same order,
    spaces aside; "…" within a line stands for any text (a path that differs from one machine to another)."""

    def from_start() -> Iterator[str]:
        return iter([squashed(line) for line in printed.splitlines()])

    lines = from_start()
    missing = []
    for line in (squashed(line) for line in shown.splitlines() if line.strip() not in ("", "…")):
        pattern = re.compile(".*".join(map(re.escape, line.split("…"))))
        if not any(pattern.fullmatch(candidate) for candidate in lines):  # consumes the lines up to the match
            missing.append(line)
            lines = from_start()  # the lines after a missing one are looked for on their own
    return missing


def run_tests(body: str, folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A python block of pytest tests, run by pytest (with the plugin ``pip install ragmeter`` registers) in
    ``folder``; failures are printed as Python prints an exception, so that their message reads as shown."""
    path = folder / "test_readme_example.py"
    path.write_text(body, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--tb=native", "-p", "no:cacheprovider", "-p", "no:randomly", path.name],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def run_section(title: str, folder: Path) -> int:
    """Each command of the section's bash blocks runs in one empty folder, in order, and exits as its comment
    says, printing the numbers its comment quotes (a command ending in ``&`` runs in the background until the
    section is done, then is stopped); each python block of tests passes under pytest, or fails with the message
    of the text block after it; the lines of a text block (but "…") are lines of the output of the block before
    it, in order, spaces aside. The number of bash blocks."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    blocks = re.findall(r"```(bash|text|python)\n(.*?)```", section(title), re.DOTALL)
    background: list[subprocess.Popen[bytes]] = []
    try:
        return _run_blocks(blocks, folder, env, background)
    finally:
        for process in background:
            process.terminate()
            process.wait(timeout=60)


def _run_blocks(
    blocks: list[tuple[str, str]], folder: Path, env: dict[str, str], background: list[subprocess.Popen[bytes]]
) -> int:
    output = ""
    for number, (kind, body) in enumerate(blocks):
        if kind == "text":
            assert unshown(body, output) == []
            continue
        if kind == "python":
            if "def test_" not in body:
                continue  # a library snippet, not a test
            done = run_tests(body, folder, env)
            shows_failure = number + 1 < len(blocks) and blocks[number + 1][0] == "text"
            assert done.returncode == (1 if shows_failure else 0), done.stdout[-3000:]
            output = done.stdout
            continue
        output = ""
        for command, expected in shell_commands(body):
            if command.partition("#")[0].rstrip().endswith("&"):
                background.append(
                    subprocess.Popen(
                        ["bash", "-c", command.partition("#")[0].rstrip()[:-1]],
                        cwd=folder,
                        env=env,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        start_new_session=True,
                    )
                )
                continue
            done = subprocess.run(
                ["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True, timeout=300, check=False
            )
            assert done.returncode == expected, f"{command}\n{done.stderr[-3000:]}"
            comment = command.partition("#")[2]
            assert [n for n in re.findall(r"\d+\.\d+", comment) if n not in done.stdout] == [], command
            output += done.stdout
    return [kind for kind, _ in blocks].count("bash")


def test_the_compare_sections_commands_and_prose_are_the_comparisons(tmp_path: Path) -> None:
    assert run_section("Compare two runs", tmp_path) == 1
    assert (tmp_path / "compare.html").is_file()
    # the prose's "Holm's correction across the N metrics" and "F1 (p P": the comparison's
    done = subprocess.run(
        [str(Path(sys.executable).parent / "ragmeter"), "compare", "runs/v1", "runs/gate", "--format", "json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    (overall,) = [group["metrics"] for group in json.loads(done.stdout)[0]["groups"] if group["field"] == "all"]
    text = squashed(section("Compare two runs"))
    assert re.search(r"Holm's correction across the (\d+) metrics", text).group(1) == str(len(overall))
    figures = {m["metric"]: m for m in overall}
    assert "saves a quarter of the tokens (significant after Holm's" in text
    assert figures["total_tokens"]["p_holm"] < 0.05
    assert 0.2 <= -figures["total_tokens"]["difference"] / figures["total_tokens"]["mean_a"] < 0.3
    token_f1 = figures["token_f1"]
    assert token_f1["p_holm"] > 0.05
    assert re.search(r"F1 \(p (\d\.\d+), not significant after Holm\)", text).group(1) == f"{token_f1['p_value']:.2g}"


def test_the_ci_sections_commands_and_pytest_example_run_as_shown(tmp_path: Path) -> None:
    assert run_section("Use it in CI", tmp_path) >= 4
    assert (tmp_path / "gate.xml").is_file() and (tmp_path / "summary.md").is_file()
    assert (tmp_path / "test_readme_example.py").is_file()  # the pytest example was run


def test_the_indonesian_sections_commands_run_as_shown(tmp_path: Path) -> None:
    assert run_section("Bahasa Indonesia", tmp_path) == 1
    assert (tmp_path / "id-auto" / "items.jsonl").is_file() and (tmp_path / "id-fixed" / "items.jsonl").is_file()


def test_the_labels_sections_commands_run_as_shown(tmp_path: Path) -> None:
    assert run_section("How many labels do I need?", tmp_path) == 1
    assert len((tmp_path / "labelled.csv").read_text(encoding="utf-8").splitlines()) == 21  # header + 20 answers


def test_the_production_sections_commands_trip_a_real_prometheus_alert(tmp_path: Path) -> None:
    for tool in ("prometheus", "promtool"):
        if shutil.which(tool) is None:
            pytest.skip(f"no {tool} on this machine (apt-get install -y prometheus; .ci/run installs it)")
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    assert run_section("In production: `ragmeter serve`", tmp_path) == 1
    with SqliteStore(tmp_path / "prod.sqlite") as store:
        checks = store.checks()
    drops = [c for c in checks if c["status"] == "drop"]
    assert drops and all(c["baseline"] == "baseline" for c in checks)
    (verdict,) = drops[-1]["verdicts"]
    assert verdict["metric"] == "faithfulness_offline" and verdict["difference"] < 0
    assert (verdict["n_baseline"], verdict["n_window"]) == (45, 35)  # the 10 declining answers: undefined in traces


def test_the_ci_section_points_to_examples_that_exist() -> None:
    paths = re.findall(r"`(examples/[^`]+)`", section("Use it in CI"))
    assert paths and all((ROOT / path).is_file() for path in paths)
