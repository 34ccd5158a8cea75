"""No command replaces or truncates an input, a file it did not create, a symlink or a special file, and a
refused command leaves every file as it was: every command, every output flag, pointed at every kind of
place it must not write (its inputs by path, symlink and hard link, the input a run folder's ``run.json`` names,
another output of the same command, the run folder being written and its own files, a FIFO, the null device, an
unrelated file, a place that takes no file) and at a new file, the control case. Each case is refused before
any work (exit 2, nothing added) or written, and in both cases every other file under the workspace and the
test's folder keeps its bytes. ``--summary-file`` adds to the end of a file by design (a CI job's summary): an
unrelated file there is appended to, its bytes before kept as they were."""

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
    records: Path  # the demo's 45 records
    gate: Path  # the same questions, the assistant's gate on
    ana: Path  # a person's filled labels of the demo
    ben: Path
    run_a: Path  # finished run folders of records and gate
    run_b: Path
    mtrag: Path  # MT-RAG rows with RB_agg, for idk_condition


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    root = tmp_path_factory.mktemp("safety")
    assert main(["demo", str(root / "demo")]) == 0
    demo = root / "demo"
    for out, data in (("A", "demo.jsonl"), ("B", "demo-gate.jsonl")):
        assert (
            main(
                [
                    "run",
                    str(demo / data),
                    "--out",
                    str(root / out),
                    "--embedder",
                    "hashing",
                    "--no-progress",
                    "--n-resamples",
                    N_RESAMPLES,
                    "--format",
                    "json",
                ]
            )
            == 0
        )
    rows = [
        {
            "task_id": f"c{i}<::>1",
            "conversation_id": f"c{i}",
            "model_id": "m",
            "input": [{"speaker": "user", "text": f"question {i}?"}],
            "contexts": [{"document_id": "d", "text": "a passage"}],
            "targets": [{"text": "the reference"}],
            "predictions": [{"text": "I do not know." if i % 2 else "An answer."}],
            "answerability": ["ANSWERABLE"],
            "metrics": {"RB_agg": [0.5]},
        }
        for i in range(4)
    ]
    mtrag = root / "mt.jsonl"
    mtrag.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return Workspace(
        root,
        demo / "demo.jsonl",
        demo / "demo-gate.jsonl",
        demo / "demo-labels-ana.csv",
        demo / "demo-labels-ben.csv",
        root / "A",
        root / "B",
        mtrag,
    )


@dataclass(frozen=True)
class Command:
    """One command with one output flag: its arguments with the output at ``x`` (its other outputs at their
    :data:`OTHER_OUTPUTS` names in the test's folder ``place``), the inputs named on its command line, the files
    it reads through a run folder's ``run.json``, whether the output may be a stream (the null device), whether it
    is a folder, whether it is added to the end of a file, and whether the command writes a run folder
    (``place / "fresh-run"``)."""

    name: str
    argv: Callable[[Workspace, Path, Path], list[str]]
    inputs: Callable[[Workspace], list[Path]]
    stream: bool = False
    folder: bool = False
    append: bool = False
    through_manifest: tuple[str, ...] = ()  # the Workspace fields of the files read through a run.json
    writes_run: bool = False

    @property
    def flag(self) -> str:
        return self.name.split()[-1]


def _run_folder_files(run: Path) -> list[Path]:
    return [run / "items.jsonl", run / "summary.json", run / "run.json"]


#: Where a command's other outputs go, by flag, in the test's folder.
OTHER_OUTPUTS = {"--html": "other.html", "--junit": "other.xml", "--summary-file": "other.md"}


def _others(flag: str, place: Path, flags: tuple[str, ...]) -> list[str]:
    """The command line of a command's outputs other than ``flag``, each at its :data:`OTHER_OUTPUTS` name."""
    return [part for other in flags if other != flag for part in (other, str(place / OTHER_OUTPUTS[other]))]


def _run(flag: str) -> Command:
    """``ragmeter run`` with the gate's outputs and the HTML page, ``flag`` the one under test."""
    flags = ("--html", "--junit", "--summary-file")
    return Command(
        f"run {flag}",
        lambda w, x, place: [
            "run",
            str(w.records),
            "--out",
            str(place / "fresh-run"),
            "--embedder",
            "hashing",
            "--n-resamples",
            N_RESAMPLES,
            "--no-progress",
            "--require",
            "token_f1>=0",
            flag,
            str(x),
            *_others(flag, place, flags),
        ],
        lambda w: [w.records],
        stream=flag == "--html",
        append=flag == "--summary-file",
        writes_run=True,
    )


def _compare(flag: str) -> Command:
    """``ragmeter compare`` with the gate's outputs and the HTML page, ``flag`` the one under test."""
    flags = ("--html", "--junit", "--summary-file")
    return Command(
        f"compare {flag}",
        lambda w, x, place: [
            "compare",
            str(w.run_a),
            str(w.run_b),
            "--n-resamples",
            N_RESAMPLES,
            "--fail-on",
            "total_tokens",
            flag,
            str(x),
            *_others(flag, place, flags),
        ],
        lambda w: [*_run_folder_files(w.run_a), *_run_folder_files(w.run_b)],
        stream=flag == "--html",
        append=flag == "--summary-file",
        through_manifest=("records", "gate"),
    )


COMMANDS = [
    _run("--html"),
    _run("--junit"),
    _run("--summary-file"),
    Command(
        "run --out",
        lambda w, x, place: [
            "run",
            str(w.records),
            "--out",
            str(x),
            "--embedder",
            "hashing",
            "--n-resamples",
            N_RESAMPLES,
            "--no-progress",
        ],
        lambda w: [w.records],
        folder=True,
    ),
    _compare("--html"),
    _compare("--junit"),
    _compare("--summary-file"),
    Command(
        "agree --html",
        lambda w, x, place: [
            "agree",
            str(w.run_a / "items.jsonl"),
            str(w.ana),
            str(w.ben),
            "--metric",
            "overlap",
            "--label",
            "support_present",
            "--n-resamples",
            N_RESAMPLES,
            "--html",
            str(x),
        ],
        lambda w: [w.run_a / "items.jsonl", w.ana, w.ben],
        stream=True,
        through_manifest=("records",),
    ),
    Command(
        "estimate --html",
        lambda w, x, place: [
            "estimate",
            str(w.run_a),
            str(w.ana),
            "--metric",
            "overlap",
            "--label",
            "support_present",
            "--html",
            str(x),
        ],
        lambda w: [*_run_folder_files(w.run_a), w.ana],
        stream=True,
        through_manifest=("records",),
    ),
    Command(
        "labels template -o",
        lambda w, x, place: ["labels", "template", str(w.records), "-o", str(x), "--labels", "helpful"],
        lambda w: [w.records],
    ),
    Command(
        "labels merge -o",
        lambda w, x, place: ["labels", "merge", str(w.records), str(w.ana), str(w.ben), "-o", str(x)],
        lambda w: [w.records, w.ana, w.ben],
    ),
    Command(
        "mtrag -o",
        lambda w, x, place: [
            "mtrag",
            "--step",
            "idk_condition",
            "-i",
            str(w.mtrag),
            "-o",
            str(x),
            "--n-resamples",
            N_RESAMPLES,
        ],
        lambda w: [w.mtrag],
    ),
    Command("demo", lambda w, x, place: ["demo", str(x)], lambda w: [], folder=True),
]

#: Where an output is pointed: each returns the path, made in ``place`` (a fresh folder of the test's own).
PLACES: dict[str, Callable[[Workspace, Command, Path], Path]] = {
    "each input": lambda w, c, place: c.inputs(w)[0] if c.inputs(w) else _unrelated(place),
    "the last input": lambda w, c, place: c.inputs(w)[-1] if c.inputs(w) else _unrelated(place),
    "the input a run's manifest names": lambda w, c, place: getattr(w, c.through_manifest[0]),
    "the last input a manifest names": lambda w, c, place: getattr(w, c.through_manifest[-1]),
    "another output of the command": lambda w, c, place: (
        place / next(name for flag, name in OTHER_OUTPUTS.items() if flag != c.flag)
    ),
    "the run folder being written": lambda w, c, place: place / "fresh-run",
    "that run folder's items.jsonl": lambda w, c, place: place / "fresh-run" / "items.jsonl",
    "that run folder's summary.json": lambda w, c, place: place / "fresh-run" / "summary.json",
    "that run folder's run.json": lambda w, c, place: place / "fresh-run" / "run.json",
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
    """What a command that was not refused may add: its outputs and what it writes beside them."""
    others = {place / name for name in OTHER_OUTPUTS.values()}
    if command.writes_run:
        return {target, place / "fresh-run", *others}
    if command.name.startswith("compare"):
        return {target, *others}
    if command.name == "labels merge -o":
        return {target, target.with_name(target.name + ".agreement.json")}
    if command.name == "mtrag -o":
        return {target, target.with_name(target.name + ".summary.json")}
    return {target}


def _has(command: Command, place: str) -> bool:
    """Whether ``command`` has such a place: files read through a manifest, other outputs, a run folder."""
    if place == "the input a run's manifest names":
        return bool(command.through_manifest)
    if place == "the last input a manifest names":
        return len(command.through_manifest) > 1
    if place == "another output of the command":
        return command.name.split()[0] in ("run", "compare") and command.flag in OTHER_OUTPUTS
    if place.startswith(("the run folder being written", "that run folder")):
        return command.writes_run
    return True


CASES = [(command, place) for command in COMMANDS for place in PLACES if _has(command, place)]


@pytest.mark.parametrize(("command", "place"), CASES, ids=[f"{c.name}-{p}" for c, p in CASES])
def test_no_command_writes_where_it_must_not(
    workspace: Workspace, command: Command, place: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = PLACES[place](workspace, command, tmp_path)
    before = snapshot(workspace.root) | {f"place/{k}": v for k, v in snapshot(tmp_path).items()}
    null_mode = os.stat(os.devnull).st_mode
    code = main(command.argv(workspace, target, tmp_path))
    err = capsys.readouterr().err
    after = snapshot(workspace.root) | {f"place/{k}": v for k, v in snapshot(tmp_path).items()}
    assert "Traceback" not in err
    assert os.stat(os.devnull).st_mode == null_mode and stat.S_ISCHR(null_mode)
    assert not Path("/proc/ragmeter-safety.csv").exists()
    written = (
        place == "a new file"
        or (place == "the null device" and command.stream)
        or (place == "an unrelated file" and command.append)
    )
    appended = f"place/{target.relative_to(tmp_path)}" if written and place == "an unrelated file" else None
    changed = sorted(k for k in before if after.get(k) != before[k] and k != appended)
    assert not changed, f"{command.name} at {place} changed {changed}: {err}"
    if appended is not None:  # a job summary adds to the end of the file, keeping what it held
        assert after[appended][1][: len(before[appended][1])] == before[appended][1]
        assert len(after[appended][1]) > len(before[appended][1])
    added = {k for k in after if k not in before}
    if not written:
        assert code == 2, err
        assert any(
            line.startswith("error:") and (str(target) in line or "input" in line) for line in err.splitlines()
        ), err
        assert not added, f"a refused {command.name} left {sorted(added)}"
        return
    assert code == 0, err
    allowed = {str(p) for p in _allowed_new(command, target, tmp_path)}
    stray = {
        k
        for k in added
        if not any(_full(k, workspace, tmp_path).startswith(a) for a in allowed)
        and not any(a.startswith(_full(k, workspace, tmp_path) + os.sep) for a in allowed)
    }
    assert not stray, f"{command.name} wrote {sorted(stray)} besides its output"
    assert not [k for k in added if Path(k).name.endswith(".tmp") or ".ragmeter-probe-" in k]


def _full(key: str, workspace: Workspace, place: Path) -> str:
    return str(place / key.removeprefix("place/")) if key.startswith("place/") else str(workspace.root / key)
