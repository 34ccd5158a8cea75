"""No command replaces or truncates an input, a file it did not create, a symlink or a special file, and a
refused command leaves every file as it was: every command, every output flag, pointed at every kind of
place it must not write (its inputs by path, symlink and hard link, a FIFO, the null device, an unrelated
file, a place that takes no file) and at a new file, the control case. (``--summary-file`` adds to the end of
a file by design, a CI job's summary: tests/core/test_files.py and tests/cli/test_gate_cli.py check it.)"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragmeter.cli import main

N_RESAMPLES = "200"


@dataclass(frozen=True)
class Workspace:
    root: Path
    records: Path      # the demo's 45 records
    gate: Path         # the same questions, the assistant's gate on
    ana: Path          # a person's filled labels of the demo
    ben: Path
    run_a: Path        # finished run folders of records and gate
    run_b: Path
    mtrag: Path        # MT-RAG rows with RB_agg, for idk_condition


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    root = tmp_path_factory.mktemp("safety")
    assert main(["demo", str(root / "demo")]) == 0
    demo = root / "demo"
    for out, data in (("A", "demo.jsonl"), ("B", "demo-gate.jsonl")):
        assert main(["run", str(demo / data), "--out", str(root / out), "--embedder", "hashing", "--no-progress",
                     "--n-resamples", N_RESAMPLES, "--format", "json"]) == 0
    rows = [{"task_id": f"c{i}<::>1", "conversation_id": f"c{i}", "model_id": "m",
             "input": [{"speaker": "user", "text": f"question {i}?"}],
             "contexts": [{"document_id": "d", "text": "a passage"}], "targets": [{"text": "the reference"}],
             "predictions": [{"text": "I do not know." if i % 2 else "An answer."}],
             "answerability": ["ANSWERABLE"], "metrics": {"RB_agg": [0.5]}} for i in range(4)]
    mtrag = root / "mt.jsonl"
    mtrag.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return Workspace(root, demo / "demo.jsonl", demo / "demo-gate.jsonl", demo / "demo-labels-ana.csv",
                     demo / "demo-labels-ben.csv", root / "A", root / "B", mtrag)


@dataclass(frozen=True)
class Command:
    """One command with one output flag: its arguments with the output at ``x`` (other outputs in the test's
    folder ``place``), its inputs, whether the output may be a stream (the null device), and whether it is a
    folder."""

    name: str
    argv: Callable[[Workspace, Path, Path], list[str]]
    inputs: Callable[[Workspace], list[Path]]
    stream: bool = False
    folder: bool = False


def _run_folder_files(run: Path) -> list[Path]:
    return [run / "items.jsonl", run / "summary.json", run / "run.json"]


COMMANDS = [
    Command("run --html", lambda w, x, place: ["run", str(w.records), "--out", str(place / "fresh-run"), "--embedder",
                                        "hashing", "--n-resamples", N_RESAMPLES, "--no-progress", "--html", str(x)],
            lambda w: [w.records], stream=True),
    Command("run --out", lambda w, x, place: ["run", str(w.records), "--out", str(x), "--embedder", "hashing",
                                       "--n-resamples", N_RESAMPLES, "--no-progress"],
            lambda w: [w.records], folder=True),
    Command("compare --html", lambda w, x, place: ["compare", str(w.run_a), str(w.run_b), "--n-resamples", N_RESAMPLES,
                                            "--html", str(x)],
            lambda w: [*_run_folder_files(w.run_a), *_run_folder_files(w.run_b)], stream=True),
    Command("compare --junit", lambda w, x, place: ["compare", str(w.run_a), str(w.run_b), "--n-resamples",
                                             N_RESAMPLES, "--fail-on", "total_tokens", "--junit", str(x)],
            lambda w: [*_run_folder_files(w.run_a), *_run_folder_files(w.run_b)]),
    Command("run --junit", lambda w, x, place: ["run", str(w.records), "--out", str(place / "fresh-run"), "--embedder",
                                         "hashing", "--n-resamples", N_RESAMPLES, "--no-progress", "--require",
                                         "token_f1>=0.3", "--junit", str(x)],
            lambda w: [w.records]),
    Command("agree --html", lambda w, x, place: ["agree", str(w.run_a / "items.jsonl"), str(w.ana), str(w.ben), "--metric",
                                          "overlap", "--label", "support_present", "--n-resamples", N_RESAMPLES,
                                          "--html", str(x)],
            lambda w: [w.run_a / "items.jsonl", w.ana, w.ben], stream=True),
    Command("labels template -o", lambda w, x, place: ["labels", "template", str(w.records), "-o", str(x), "--labels",
                                                "helpful"],
            lambda w: [w.records]),
    Command("labels merge -o", lambda w, x, place: ["labels", "merge", str(w.records), str(w.ana), str(w.ben), "-o",
                                             str(x)],
            lambda w: [w.records, w.ana, w.ben]),
    Command("mtrag -o", lambda w, x, place: ["mtrag", "--step", "idk_condition", "-i", str(w.mtrag), "-o", str(x),
                                      "--n-resamples", N_RESAMPLES],
            lambda w: [w.mtrag]),
    Command("demo", lambda w, x, place: ["demo", str(x)], lambda w: [], folder=True),
]

#: Where an output is pointed: each returns the path, made in ``place`` (a fresh folder of the test's own).
PLACES: dict[str, Callable[[Workspace, Command, Path], Path]] = {
    "each input": lambda w, c, place: c.inputs(w)[0] if c.inputs(w) else _unrelated(place),
    "the last input": lambda w, c, place: c.inputs(w)[-1] if c.inputs(w) else _unrelated(place),
    "a symlink to an input": lambda w, c, place: _symlink(place, c.inputs(w)[0] if c.inputs(w) else w.records),
    "a hard link to an input": lambda w, c, place: _hardlink(place, c.inputs(w)[0] if c.inputs(w) else w.records),
    "a FIFO": lambda w, c, place: _fifo(place),
    "the null device": lambda w, c, place: _null_device(place),
    "an unrelated file": lambda w, c, place: _unrelated(place),
    "a place that takes no file": lambda w, c, place: Path("/proc/ragmeter-safety.csv"),
    "a new file": lambda w, c, place: place / "new" / "out.csv",
}


def _unrelated(place: Path) -> Path:
    path = place / "notes.csv"
    path.write_text("someone's notes\n", encoding="utf-8")
    return path


def _symlink(place: Path, to: Path) -> Path:
    link = place / "link.csv"
    link.symlink_to(to)
    return link


def _hardlink(place: Path, to: Path) -> Path:
    link = place / "hard.csv"
    link.hardlink_to(to)
    return link


def _null_device(place: Path) -> Path:
    """The null device by a name of the test's own (a symlink): a command that wrongly replaced the file at
    that name would replace the link, never the system's /dev/null."""
    link = place / "null.csv"
    link.symlink_to(os.devnull)
    return link


def _fifo(place: Path) -> Path:
    path = place / "fifo.csv"
    os.mkfifo(path)
    return path


def snapshot(root: Path) -> dict[str, tuple[str, bytes | str]]:
    """Every entry under ``root``: its kind and content (a file's bytes, a link's target)."""
    found: dict[str, tuple[str, bytes | str]] = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        if path.is_symlink():
            found[key] = ("link", os.readlink(path))
        elif stat.S_ISFIFO(path.lstat().st_mode):
            found[key] = ("fifo", "")
        elif path.is_file():
            found[key] = ("file", path.read_bytes())
        else:
            found[key] = ("folder", "")
    return found


def _allowed_new(command: Command, target: Path, place: Path) -> set[Path]:
    """What a command that was not refused may add: its output and what it writes beside it."""
    if command.name in ("run --html", "run --junit"):
        return {target, place / "fresh-run"}
    if command.name == "labels merge -o":
        return {target, target.with_name(target.name + ".agreement.json")}
    if command.name == "mtrag -o":
        return {target, target.with_name(target.name + ".summary.json")}
    return {target}


@pytest.mark.parametrize("place", list(PLACES))
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_no_command_writes_where_it_must_not(workspace: Workspace, command: Command, place: str,
                                            tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = PLACES[place](workspace, command, tmp_path)
    before = snapshot(workspace.root) | {f"place/{k}": v for k, v in snapshot(tmp_path).items()}
    null_mode = os.stat(os.devnull).st_mode
    code = main(command.argv(workspace, target, tmp_path))
    err = capsys.readouterr().err
    after = snapshot(workspace.root) | {f"place/{k}": v for k, v in snapshot(tmp_path).items()}
    assert "Traceback" not in err
    assert os.stat(os.devnull).st_mode == null_mode and stat.S_ISCHR(null_mode)
    assert not Path("/proc/ragmeter-safety.csv").exists()
    changed = sorted(k for k in before if after.get(k) != before[k])
    assert not changed, f"{command.name} at {place} changed {changed}: {err}"
    written = place == "a new file" or (place == "the null device" and command.stream)
    added = {k for k in after if k not in before}
    if not written:
        assert code == 2, err
        assert any(line.startswith("error:") and (str(target) in line or "input" in line)
                   for line in err.splitlines()), err
        assert not added, f"a refused {command.name} left {sorted(added)}"
        return
    assert code == 0, err
    allowed = {str(p) for p in _allowed_new(command, target, tmp_path)}
    stray = {k for k in added if not any(_full(k, workspace, tmp_path).startswith(a) for a in allowed)
             and not any(a.startswith(_full(k, workspace, tmp_path) + os.sep) for a in allowed)}
    assert not stray, f"{command.name} wrote {sorted(stray)} besides its output"
    assert not [k for k in added if Path(k).name.endswith(".tmp") or ".ragmeter-probe-" in k]


def _full(key: str, workspace: Workspace, place: Path) -> str:
    return str(place / key.removeprefix("place/")) if key.startswith("place/") else str(workspace.root / key)
