"""The README's metric table agrees with the registry: every metric is there, with what it needs. The commands
of "Use it in CI", "How many labels do I need?" and "Bahasa Indonesia" run as shown, with the exit codes and the output the sections state."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from ragmeter.metrics import DEFAULT_CUTOFF, get_metric, list_metrics

README = Path(__file__).resolve().parents[1] / "README.md"


def table_rows() -> dict[str, str]:
    """metric name (rank metrics at the default cutoff) → its 'needs' cell."""
    rows = {}
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("| `") and line.count(" | ") == 4:
            cells = [cell.strip(" |") for cell in line.split(" | ")]
            for name in re.findall(r"`([^`]+)`", cells[0]):
                rows[name.replace("@K", f"@{DEFAULT_CUTOFF}")] = cells[-1]
    return rows


def test_every_registered_metric_is_in_the_table() -> None:
    assert set(table_rows()) == {m.name for m in list_metrics()}


def test_the_needs_column_is_what_the_registry_requires() -> None:
    wrong = {name: (cell, ", ".join(get_metric(name).requirements)) for name, cell in table_rows().items()
             if cell != ", ".join(get_metric(name).requirements)}
    assert not wrong


def section(title: str) -> str:
    """The README's text under ``## title``, up to the next ``## `` heading."""
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def shell_commands(block: str) -> list[tuple[str, int]]:
    """A bash block's commands (``\\`` continuations joined), each with the exit code its comment states
    (``# exit 1: …``; 0 when it states none)."""
    commands = [line for line in block.replace("\\\n", " ").splitlines() if line.strip()]
    return [(line, int(m.group(1)) if (m := re.search(r"#\s*exit (\d+)", line)) else 0) for line in commands]


def squashed(line: str) -> str:
    return " ".join(line.split())


def run_section(title: str, folder: Path) -> int:
    """Each command of the section's bash blocks runs in one empty folder, in order, and exits as its comment
    says, printing the numbers its comment quotes; each line of a text block (but "…") is a line of the output of
    the bash block before it, spaces aside. The number of bash blocks."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    blocks = re.findall(r"```(bash|text)\n(.*?)```", section(title), re.DOTALL)
    output = ""
    for kind, body in blocks:
        if kind == "text":
            printed = {squashed(line) for line in output.splitlines()}
            shown = [squashed(line) for line in body.splitlines() if line.strip() not in ("", "…")]
            assert [line for line in shown if line not in printed] == []
            continue
        output = ""
        for command, expected in shell_commands(body):
            done = subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True,
                                  timeout=300, check=False)
            assert done.returncode == expected, f"{command}\n{done.stderr[-3000:]}"
            comment = command.partition("#")[2]
            assert [n for n in re.findall(r"\d+\.\d+", comment) if n not in done.stdout] == [], command
            output += done.stdout
    return [kind for kind, _ in blocks].count("bash")


def test_the_ci_sections_commands_run_as_shown(tmp_path: Path) -> None:
    assert run_section("Use it in CI", tmp_path) >= 3
    assert (tmp_path / "gate.xml").is_file() and (tmp_path / "summary.md").is_file()


def test_the_indonesian_sections_commands_run_as_shown(tmp_path: Path) -> None:
    assert run_section("Bahasa Indonesia", tmp_path) == 1
    assert (tmp_path / "id-auto" / "items.jsonl").is_file() and (tmp_path / "id-fixed" / "items.jsonl").is_file()


def test_the_labels_sections_commands_run_as_shown(tmp_path: Path) -> None:
    assert run_section("How many labels do I need?", tmp_path) == 1
    assert len((tmp_path / "labelled.csv").read_text(encoding="utf-8").splitlines()) == 21  # header + 20 answers


def test_the_ci_section_points_to_examples_that_exist() -> None:
    links = re.findall(r"\]\((examples/[^)]+)\)", section("Use it in CI"))
    assert links and all((README.parent / link).is_file() for link in links)
