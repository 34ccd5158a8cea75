"""A new user's battery (issue 45): the command lines a new user types, each run and judged for what it did to
the user's files, the numbers it printed and the messages it gave.

    python -m benchmarks.new_user_battery [--quick] [--only TEXT,TEXT…] [--results FILE] [--keep]

Each case runs the ``ragmeter`` entry point (a few: ``python -m ragmeter.cli``) as a subprocess, one at a time,
in a fresh temporary workspace: ``ragmeter demo`` copies, hand-made bad files (missing, empty, a folder, a
malformed JSON line, wrong column names, binary garbage, Latin-1 and UTF-16 text, a JSON array, a FIFO, …), a
symlink and a hard link to the demo records, and finished runs made at the start (``runs/v1``, ``runs/gate``,
``runs/tau``, ``runs/tiny``, ``runs/big-ref``; the hashing embedder and 200 resamples wherever a case is not about
them; no judge ever starts). Every case is bounded by a timeout. Before and after it, every entry of the workspace
is recorded: files by sha256 and mode, symlinks by target, FIFOs and folders by kind. A case names the outputs it
may add or change; anything else that changed, vanished or appeared is damage (an empty folder left behind, or a
temporary file a SIGKILL left, is only flagged for review). Outputs that were written are read back (JSON, JSONL,
HTML, XML, CSV; a run folder's ``run.json``, ``items.jsonl`` and ``summary.json`` against each other). After each
case (each scenario, for the steps of a kill) the workspace is put back as it was.

Cases cover every command (run, validate, mtrag, compare, agree, estimate, calibrate-tau, metrics, demo,
labels template / merge / annotate): bad inputs in every file role, wrong flags and numbers (unknown metrics,
conflicting flags, options that do nothing without another, zero / negative / huge / NaN values, empty paths),
the same file in two roles (an output at an input, at a run folder's own files, at the records file its
``run.json`` names, at a symlink or hard link to an input, two outputs at one file, ``--html /dev/stdout`` with
stdout in a file; a FIFO, ``<(cat FILE)`` and stdin as inputs), kills (SIGINT and SIGKILL of ``ragmeter run`` on
the demo repeated 100 times with unique ids, at 1 s, 0.5 s into its work and once its first items are written,
then a plain rerun, ``--resume`` and ``--overwrite``, checked against an uninterrupted run; the same for
``mtrag``; SIGINT at 1 s and SIGINT / SIGKILL 0.3 s into the work of every other command, "into the work" read
off ``/proc/PID/status``: SIGINT caught, uncaught while ``ragmeter._entry`` loads the modules, caught again) and
printed numbers checked against an independent computation (token F1, exact match, tokens and latency quantiles of
a hand-made file; compare's paired means, differences and wins, agree's AUROC and merge's κ from the files;
estimate's labelled-only interval by hand, and its intervals with constant labels, which must not be of zero
width).

Each case gets one class, the worst of its findings: ``hang`` (no exit within its timeout, or after SIGINT),
``traceback``, ``damaged``, ``wrong_number``, ``review`` (for a person: exit 0 where an error was due, a
refusal of a request that should work, exit 0 with a warning where an error was possible, an error line with no
advice in it, Python internals in a message, a message about a kill that does not match the files) or ``ok``.
Prints a table per command and writes ``results/new_user_battery.json`` with every case (``--quick``: a subset, to
``results/new_user_battery-quick.json``).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import fnmatch
import hashlib
import io
import json
import math
import os
import platform
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
#: Classes from the mildest to the worst; a case takes the worst of its findings.
CLASSES = ("ok", "review", "wrong_number", "damaged", "traceback", "hang")
FAST = ["--embedder", "hashing", "--n-resamples", "200"]
NR = ["--n-resamples", "200"]
BIG_REPEATS = 100
Finding = tuple[str, str]


# --- cases ------------------------------------------------------------------------------------------------------


@dataclass
class Kill:
    """Send ``sig`` ``at`` seconds after the start, or ``delay`` seconds after ``when(workspace, pid)`` first
    holds (polled every 20 ms)."""

    sig: int
    at: float | None = None
    when: Callable[[Path, int], bool] | None = None
    delay: float = 0.0
    label: str = ""


@dataclass
class Case:
    """One command line, what is due from it (``expect``: an error, success, or either), the paths it may write
    (besides those its output flags name that do not exist yet) and an optional check of what it printed."""

    name: str
    command: str
    kind: str  # bad-input | wrong-flag | two-roles | kill | number | control
    argv: list[str]
    expect: str = "error"  # error | ok | either
    outputs: tuple[str, ...] = ()  # workspace paths (or globs) the case may add or change
    prepare: Callable[[Path], None] | None = None
    check: Callable[[Run], list[Finding]] | None = None
    timeout: float = 120.0
    kill: Kill | None = None
    scenario: str | None = None  # steps of one scenario share the workspace; it is restored after the last
    quick: bool = False
    python_m: bool = False
    torn_ok: bool = False  # a torn last line of items.jsonl is allowed (after SIGKILL)
    feed: str | None = None  # a workspace file written once into data/fifo when the command opens it
    pipe: str | None = None  # a workspace file behind "{pipe}" in argv, as bash's <(cat FILE) gives it
    stdin: str | None = None  # a workspace file as the command's stdin


@dataclass
class Run:
    """What one case did: its exit code, output, time, the workspace before and after, and its scenario's state
    (what an earlier step of a kill left for the later ones to check)."""

    case: Case
    ws: Path
    scratch: Path
    rc: int | None
    stdout: str
    stderr: str
    seconds: float
    hang: bool
    before: dict[str, str]
    after: dict[str, str]
    state: dict[str, Any]
    signal_note: str | None = None


# --- the workspace ----------------------------------------------------------------------------------------------

_HASHES: dict[tuple[int, int, int, int, int], str] = {}


def _sha256(path: Path, st: os.stat_result) -> str:
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if key not in _HASHES:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        _HASHES[key] = digest.hexdigest()
    return _HASHES[key]


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under ``root``: files by mode and sha256, symlinks by target, folders and FIFOs by kind and
    mode; never opens anything but regular files."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root, onerror=lambda exc: None):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            try:
                st = os.lstat(path)
            except OSError:
                continue
            mode = f"{stat.S_IMODE(st.st_mode):o}"
            if stat.S_ISLNK(st.st_mode):
                out[rel] = f"link:{os.readlink(path)}"
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = f"dir:{mode}"
            elif stat.S_ISREG(st.st_mode):
                try:
                    out[rel] = f"file:{mode}:{_sha256(path, st)}"
                except OSError as exc:
                    out[rel] = f"file:{mode}:unreadable:{exc.errno}"
            elif stat.S_ISFIFO(st.st_mode):
                out[rel] = f"fifo:{mode}"
            else:
                out[rel] = f"other:{mode}"
    return out


def copy_tree(src: Path, dst: Path) -> None:
    """Copy a tree keeping symlinks as links and FIFOs as new FIFOs (``shutil.copytree`` would open them)."""
    dst.mkdir(parents=True, exist_ok=True)
    for dirpath, dirnames, filenames in os.walk(src):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            target = dst / path.relative_to(src)
            _copy_entry(path, target)


def _copy_entry(path: Path, target: Path) -> None:
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(path), target)
    elif stat.S_ISDIR(st.st_mode):
        target.mkdir(exist_ok=True)
        os.chmod(target, stat.S_IMODE(st.st_mode))
    elif stat.S_ISFIFO(st.st_mode):
        os.mkfifo(target, stat.S_IMODE(st.st_mode))
    else:
        shutil.copy2(path, target)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        for dirpath, _, _ in os.walk(path):
            os.chmod(dirpath, 0o755)
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


@dataclass
class Workspace:
    root: Path
    backup: Path
    baseline: dict[str, str] = field(default_factory=dict)
    hardlinks: dict[str, str] = field(default_factory=dict)  # link → original

    def freeze(self) -> None:
        copy_tree(self.root, self.backup)
        self.baseline = snapshot(self.root)

    def restore(self) -> None:
        """Put the workspace back as it was after the setup."""
        now = snapshot(self.root)
        if now == self.baseline and self._links_ok():
            return
        for rel in sorted(set(now) - set(self.baseline), key=lambda r: -r.count("/")):
            _remove(self.root / rel)
        now = snapshot(self.root)
        for rel in sorted(self.baseline, key=lambda r: r.count("/")):
            want, have = self.baseline[rel], now.get(rel)
            if want == have:
                continue
            path = self.root / rel
            if want.startswith("dir:") and have is not None and have.startswith("dir:"):
                os.chmod(path, int(want.split(":")[1], 8))
                continue
            if os.path.lexists(path):
                _remove(path)
            _copy_entry(self.backup / rel, path)
            if want.startswith("dir:"):
                now = snapshot(self.root)  # its children were removed with it
        for link, original in self.hardlinks.items():
            if not self._linked(link, original):
                (self.root / link).unlink()
                os.link(self.root / original, self.root / link)
        if snapshot(self.root) != self.baseline:  # one more way back: the whole tree from the copy
            for entry in list(self.root.iterdir()):
                _remove(entry)
            copy_tree(self.backup, self.root)
            for link, original in self.hardlinks.items():
                (self.root / link).unlink()
                os.link(self.root / original, self.root / link)
        final = snapshot(self.root)
        if final != self.baseline:
            diff = sorted(set(final.items()) ^ set(self.baseline.items()))[:5]
            raise RuntimeError(f"the workspace could not be restored: {diff}")

    def _linked(self, link: str, original: str) -> bool:
        try:
            return os.stat(self.root / link).st_ino == os.stat(self.root / original).st_ino
        except OSError:
            return False

    def _links_ok(self) -> bool:
        return all(self._linked(link, original) for link, original in self.hardlinks.items())


# --- running one case -------------------------------------------------------------------------------------------


def entry_point(python_m: bool = False) -> list[str]:
    script = Path(sys.executable).parent / "ragmeter"
    if python_m or not script.exists():
        return [sys.executable, "-m", "ragmeter.cli"]
    return [str(script)]


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "COLUMNS"):
        env.pop(name, None)
    return env


def execute(case: Case, ws: Workspace, scratch: Path, state: dict[str, Any]) -> Run:
    if case.prepare is not None:
        case.prepare(ws.root)
    before = snapshot(ws.root)
    case.outputs = (*case.outputs, *declared_outputs(case.argv, before))
    out_path, err_path = scratch / "stdout", scratch / "stderr"
    note = None
    hang = False
    stop = threading.Event()
    if case.feed is not None:
        threading.Thread(
            target=_feed_fifo, args=(ws.root / "data/fifo", (ws.root / case.feed).read_bytes(), stop), daemon=True
        ).start()
    argv, pass_fds = case.argv, ()
    if case.pipe is not None:
        read_end, write_end = os.pipe()
        argv, pass_fds = [a.replace("{pipe}", f"/dev/fd/{read_end}") for a in argv], (read_end,)
        threading.Thread(target=_write_pipe, args=(write_end, (ws.root / case.pipe).read_bytes()), daemon=True).start()
    stdin = open(ws.root / case.stdin, "rb") if case.stdin else subprocess.DEVNULL  # noqa: SIM115
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        start = time.monotonic()
        proc = subprocess.Popen(
            [*entry_point(case.python_m), *argv],
            cwd=ws.root,
            stdout=out,
            stderr=err,
            stdin=stdin,
            env=child_env(),
            start_new_session=True,
            pass_fds=pass_fds,
        )
        for fd in pass_fds:
            os.close(fd)
        if case.kill is not None:
            note = _send_kill(proc, case.kill, ws.root, start, case.timeout)
        left = max(1.0, case.timeout - (time.monotonic() - start))
        if case.kill is not None and note and note.startswith("sent"):
            left = 30.0  # after the signal, the process has 30 s to end
        try:
            rc = proc.wait(timeout=left)
        except subprocess.TimeoutExpired:
            hang = True
            _kill_group(proc)
            rc = proc.wait()
        seconds = time.monotonic() - start
    if case.stdin:
        stdin.close()
    stop.set()
    _kill_group(proc)
    after = snapshot(ws.root)
    return Run(
        case,
        ws.root,
        scratch,
        rc,
        out_path.read_text("utf-8", "replace"),
        err_path.read_text("utf-8", "replace"),
        seconds,
        hang,
        before,
        after,
        state,
        note,
    )


#: Flags whose value is a path the command writes (``--write-back`` takes its path second).
OUTPUT_FLAGS = ("--out", "--html", "--junit", "--summary-file", "-o", "--output", "--judge-cache")
#: What a command writes beside ``-o OUTPUT``: the unfinished part, the summary, the agreement report, the
#: failed calls, the verdict cache.
SIDE_FILES = ".*"  # matched only where nothing was before (``new:``)


def declared_outputs(argv: list[str], before: dict[str, str]) -> tuple[str, ...]:
    """The workspace paths ``argv`` asks the command to write that do not exist yet (a path that exists, an
    input among them, may change only where the case names it), and the files a command writes beside them."""
    paths: list[tuple[str, bool]] = []
    for i, arg in enumerate(argv[:-1]):
        if arg in OUTPUT_FLAGS:
            paths.append((argv[i + 1], arg in ("-o", "--output")))
        elif arg == "--write-back" and i + 2 < len(argv):
            paths.append((argv[i + 2], False))
    if argv and argv[0] == "run" and "--out" not in argv:
        paths.append(("ragmeter-out", False))
    if argv and argv[0] == "demo" and len(argv) > 1:
        paths.append((argv[1], False))
    out: list[str] = []
    for value, beside in paths:
        norm = os.path.normpath(value) if value else "."
        if norm == "." or norm.startswith(("/", "..")) or norm in before:
            continue
        out.append(norm)
        if beside:
            out.append(f"new:{norm}{SIDE_FILES}")
    return tuple(out)


def _feed_fifo(fifo: Path, data: bytes, stop: threading.Event) -> None:
    """Write ``data`` into the FIFO once a reader opens it, as a shell's process substitution would, once."""
    while not stop.is_set():
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # no reader yet
            time.sleep(0.02)
            continue
        os.set_blocking(fd, True)
        try:
            os.write(fd, data)
        except OSError:  # the reader left
            pass
        finally:
            os.close(fd)
        return


def _write_pipe(fd: int, data: bytes) -> None:
    try:
        os.write(fd, data)
    except OSError:  # the reader left
        pass
    finally:
        os.close(fd)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _send_kill(proc: subprocess.Popen[bytes], kill: Kill, root: Path, start: float, timeout: float) -> str:
    held: float | None = None
    while True:
        elapsed = time.monotonic() - start
        if proc.poll() is not None:
            return f"the process ended ({proc.returncode}) after {elapsed:.1f} s, before the signal"
        if held is None and kill.when is not None and kill.when(root, proc.pid):
            held = elapsed
        due = (kill.at is not None and elapsed >= kill.at) or (held is not None and elapsed >= held + kill.delay)
        if due:
            os.kill(proc.pid, kill.sig)
            return f"sent {signal.Signals(kill.sig).name} after {elapsed:.2f} s ({kill.label})"
        if elapsed > timeout:
            os.kill(proc.pid, kill.sig)
            return f"sent {signal.Signals(kill.sig).name} after {elapsed:.2f} s: the trigger never came ({kill.label})"
        time.sleep(0.02)


# --- judging one case -------------------------------------------------------------------------------------------

ADVICE = re.compile(
    r"(--[a-z]|'ragmeter |\be\.g\.|\b(give|pass|add|use|leave|fix|choose|install|rerun|remove|move|rename|check|"
    r"try|expected|expects|must|should|need|needs|takes|take|instead|one of|at least|at most|between|lies in|"
    r"drop|delete|point|convert|re-?encode|save|go on|resume|overwrite|lists?|see)\b)",
    re.IGNORECASE,
)
INTERNALS = re.compile(
    r"Errno|object at 0x|<class '|NoneType|KeyError|TypeError|AttributeError|IndexError|"
    r"UnicodeDecodeError|JSONDecodeError|codec can't|invalid start byte|\bnan\b.*float|"
    r"Expecting (value|property name|',' delimiter)|Invalid control character|Unterminated string|"
    r"Extra data|unhashable"
)
TRACEBACK = "Traceback (most recent call last)"


def classify(run: Run) -> tuple[str, list[Finding]]:
    findings: list[Finding] = []
    case = run.case
    if run.hang:
        findings.append(
            (
                "hang",
                f"no exit within {case.timeout:g} s"
                if not run.signal_note
                else f"no exit within 30 s of the signal ({run.signal_note})",
            )
        )
    for stream, text in (("stderr", run.stderr), ("stdout", run.stdout)):
        if TRACEBACK in text:
            last = [line for line in text[text.index(TRACEBACK) :].splitlines() if line.strip()]
            findings.append(("traceback", f"{stream}: {last[-1][:300] if last else TRACEBACK}"))
    findings += file_findings(run)
    if case.check is not None and not run.hang:
        try:
            findings += case.check(run)
        except (KeyError, IndexError, TypeError, ValueError, OSError, StopIteration, ZeroDivisionError) as exc:
            findings.append(("review", f"the case's check failed: {type(exc).__name__}: {exc}"))
    if not run.hang:
        findings += message_findings(run)
    worst = max((f[0] for f in findings), key=CLASSES.index, default="ok")
    return worst, findings


def _allowed(rel: str, outputs: tuple[str, ...], before: dict[str, str]) -> bool:
    """``rel`` is one of the outputs: a path, a path under one, or a glob (``new:`` globs: only paths that did
    not exist before the case)."""
    for pattern in outputs:
        if pattern.startswith("new:"):
            if rel not in before and fnmatch.fnmatch(rel, pattern[4:]):
                return True
        elif rel == pattern or rel.startswith(pattern.rstrip("/") + "/") or fnmatch.fnmatch(rel, pattern):
            return True
    return False


def file_findings(run: Run) -> list[Finding]:
    before, after, case = run.before, run.after, run.case
    killed = case.kill is not None and case.kill.sig == signal.SIGKILL
    signalled = (run.signal_note or "").startswith("sent")
    findings: list[Finding] = []

    def allowed(rel: str) -> bool:
        return _allowed(rel, case.outputs, before)

    new = set(after) - set(before)
    for rel in sorted(set(before) | set(after)):
        if before.get(rel) == after.get(rel):
            continue
        if allowed(rel):
            if run.rc not in (0, 1) and not signalled and not any(rel.startswith(p + "/") for p in new if p != rel):
                findings.append(("review", f"refused (exit {run.rc}) yet wrote {rel}"))
            continue
        if rel not in after:
            findings.append(("damaged", f"removed {rel} ({before[rel].split(':')[0]})"))
        elif rel in before:
            findings.append(("damaged", f"changed {rel}: {_kind_change(before[rel], after[rel])}"))
        elif not any(rel.startswith(parent + "/") for parent in new if parent != rel and not allowed(parent)):
            inside = [r for r in after if r.startswith(rel + "/")]
            if after[rel].startswith("dir:") and not inside:
                findings.append(("review", f"left an empty folder {rel}"))
            elif killed:
                findings.append(
                    (
                        "review",
                        f"after SIGKILL, {rel} was left behind"
                        + (f" ({len(inside)} entries inside)" if inside else ""),
                    )
                )
            else:
                findings.append(
                    (
                        "damaged",
                        f"wrote {rel}, which the case did not ask for"
                        + (f" ({len(inside)} entries inside)" if inside else ""),
                    )
                )
    for rel in sorted(after):
        if before.get(rel) != after[rel] and allowed(rel) and after[rel].startswith("file:"):
            problem = output_problem(run.ws / rel, torn_ok=case.torn_ok)
            if problem:
                findings.append(("damaged", f"output {rel}: {problem}"))
    for rel in sorted(after):
        if rel.endswith("run.json") and allowed(rel) and before.get(rel) != after[rel]:
            findings += run_folder_findings(run.ws / rel.rsplit("/", 1)[0] if "/" in rel else run.ws, rel)
    return findings


def _kind_change(old: str, new: str) -> str:
    a, b = old.split(":"), new.split(":")
    if a[0] != b[0]:
        return f"{a[0]} became {b[0]}"
    if a[0] == "file" and a[1] != b[1]:
        return f"mode {a[1]} became {b[1]}" + (" and its content changed" if a[2:] != b[2:] else "")
    if a[0] == "link":
        return f"link to {a[1]} now points to {b[1]}"
    return "its content changed"


def output_problem(path: Path, *, torn_ok: bool = False) -> str | None:
    """Why an output file cannot be read back as what its name says, or ``None``."""
    name = path.name
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None if name.endswith((".sqlite", ".parquet")) else "not UTF-8"
    if text.lstrip().startswith("<!DOCTYPE html"):  # a page, whatever its name (--html x.json --overwrite)
        return html_problem(text)
    if text.lstrip().startswith(("<?xml", "<testsuite")):
        try:
            ET.fromstring(text)
        except ET.ParseError as exc:
            return f"not XML ({exc})"
        return None
    if name.endswith(".json"):
        try:
            json.loads(text)
        except ValueError as exc:
            return f"not JSON ({exc})"
    elif name.endswith((".jsonl", ".partial")):
        lines = text.split("\n")
        for i, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                json.loads(line)
            except ValueError:
                if torn_ok and i == len(lines) and not text.endswith("\n"):
                    continue
                return f"line {i} is not JSON" + (" (a torn last line)" if i == len(lines) else "")
    elif name.endswith(".html"):
        return html_problem(text)
    elif name.endswith(".xml"):
        try:
            ET.fromstring(text)
        except ET.ParseError as exc:
            return f"not XML ({exc})"
    elif name.endswith((".csv", ".tsv")):
        try:
            rows = list(csv.reader(io.StringIO(text), delimiter="\t" if name.endswith(".tsv") else ","))
        except csv.Error as exc:
            return f"not CSV ({exc})"
        if not rows:
            return "empty"
    return None


def html_problem(text: str) -> str | None:
    if text.count("<!DOCTYPE html") != 1 or not text.lstrip().startswith("<!DOCTYPE html"):
        return "does not start with exactly one <!DOCTYPE html>"
    if text.count("</html>") != 1 or text.rstrip()[-7:] != "</html>":
        return "does not end with exactly one </html>"
    return None


def run_folder_findings(folder: Path, rel: str) -> list[Finding]:
    """A run folder's files against each other: a finished run has a summary of as many items as its rows."""
    try:
        manifest = json.loads((folder / "run.json").read_text("utf-8"))
    except (OSError, ValueError):
        return []  # reported by output_problem
    status = manifest.get("status")
    items = folder / "items.jsonl"
    rows = _complete_rows(items)
    summary = folder / "summary.json"
    if status == "finished":
        if not summary.exists():
            return [("damaged", f"{rel} says finished but there is no summary.json")]
        try:
            n_items = json.loads(summary.read_text("utf-8")).get("n_items")
        except ValueError:
            return []
        if n_items != len(rows):
            return [("damaged", f"{rel} says finished, summary.json has {n_items} items, items.jsonl {len(rows)}")]
        ids = [(r.get("id"), r.get("model_id")) for r in rows]
        if len(set(ids)) != len(ids):
            return [("damaged", f"items.jsonl beside {rel} repeats {len(ids) - len(set(ids))} item(s)")]
    elif status == "running" and summary.exists():
        return [("review", f"{rel} says running while a summary.json is beside it (from an earlier run?)")]
    return []


def _complete_rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    try:
        text = path.read_text("utf-8")
    except OSError:
        return rows
    for line in text.split("\n")[:-1] if not text.endswith("\n") else text.split("\n"):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except ValueError:
                break
    return rows


def message_findings(run: Run) -> list[Finding]:
    """The heuristics a person has to judge: the exit code against what was due, and the error line's words."""
    case, rc, err = run.case, run.rc, run.stderr
    findings: list[Finding] = []
    killed = case.kill is not None and (run.signal_note or "").startswith("sent")
    errors = [line.strip() for line in err.splitlines() if re.match(r"\s*(error|ragmeter[\w -]*: error)\b", line)]
    warnings = [line.strip() for line in err.splitlines() if line.lower().lstrip().startswith("warning")]
    first_error = errors[0] if errors else (err.strip().splitlines() or [""])[-1]
    if killed:
        return findings
    if case.expect == "error" and rc == 0:
        findings.append(
            (
                "review",
                "exit 0 where an error was due"
                + (f"; it warned: {warnings[0][:200]}" if warnings else "; no warning either"),
            )
        )
    elif case.expect == "ok" and rc != 0:
        findings.append(("review", f"exit {rc} on a request that should work: {first_error[:300]}"))
    elif case.expect == "either" and rc == 0 and warnings:
        findings.append(("review", f"exit 0 with a warning: {warnings[0][:300]}"))
    if rc not in (0, 1, 2):
        findings.append(("review", f"exit code {rc}"))
    elif rc == 1 and case.expect == "error":
        findings.append(("review", "exit 1 (a failed gate's code) for a usage or input error"))
    if rc not in (0, None) and not (rc == 1 and case.expect != "error"):  # 1: a gate that failed, on stdout
        if not err.strip() and not run.stdout.strip():
            findings.append(("review", f"exit {rc} with no message at all"))
        elif "usage: ragmeter" in err:
            pass  # argparse's own message names the argument and, for choices, the choices
        else:
            message = " ".join(errors) or err.strip() or run.stdout.strip()[-600:]
            first_error = first_error or message.splitlines()[-1]
            if not ADVICE.search(message):
                findings.append(("review", f"error without advice: {first_error[:300]}"))
            if INTERNALS.search(message):
                findings.append(("review", f"Python internals in the message: {first_error[:300]}"))
    return findings


# --- independent numbers ----------------------------------------------------------------------------------------

ARTICLES = re.compile(r"\b(a|an|the)\b")
CITATION = re.compile(r"\[CIT:[^\]]*\]")
PUNCTUATION = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def squad_tokens(text: str) -> list[str]:
    text = CITATION.sub(" ", text).lower()
    text = "".join(ch for ch in text if ch not in PUNCTUATION)
    return ARTICLES.sub(" ", text).split()


def token_f1(answer: str, references: list[str]) -> float:
    best = 0.0
    for ref in references:
        a, r = squad_tokens(answer), squad_tokens(ref)
        common = sum((Counter(a) & Counter(r)).values())
        if common:
            p, q = common / len(a), common / len(r)
            best = max(best, 2 * p * q / (p + q))
    return best


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    pos = (len(values) - 1) * q
    low = math.floor(pos)
    high = min(low + 1, len(values) - 1)
    return values[low] + (pos - low) * (values[high] - values[low])


#: The hand-made file: five records whose token F1 is worked out by hand (after SQuAD's normalisation).
TINY = [
    {
        "id": "t1",
        "question": "Where did the cat sit?",
        "answer": "The cat sat on the mat.",
        "references": ["a cat sat on a mat"],
        "latency_ms": 100,
        "usage": [{"prompt_tokens": 10, "completion_tokens": 5}],
    },
    {
        "id": "t2",
        "question": "What is the capital of France?",
        "answer": "Paris is the capital [CIT:d1].",
        "references": ["Paris"],
        "contexts": [{"doc_id": "d1", "text": "Paris is the capital of France."}],
        "latency_ms": 200,
        "usage": [{"prompt_tokens": 20, "completion_tokens": 5}],
    },
    {
        "id": "t3",
        "question": "Which colour is the flag?",
        "answer": "blue green",
        "references": ["red", "green yellow"],
        "latency_ms": 300,
        "usage": [{"prompt_tokens": 30, "completion_tokens": 10}],
    },
    {
        "id": "t4",
        "question": "Which river runs through the town?",
        "answer": "no overlap here",
        "references": ["completely different"],
        "latency_ms": 400,
        "usage": [{"prompt_tokens": 40, "completion_tokens": 0}],
    },
    {
        "id": "t5",
        "question": "How many steps are there?",
        "answer": "one two three four",
        "references": ["one two"],
        "latency_ms": 1000,
        "usage": [{"prompt_tokens": 50, "completion_tokens": 30}],
    },
]
# by hand: "cat sat on mat" = "cat sat on mat" → 1; "paris is capital" ∩ "paris" → P 1/3, R 1 → 0.5;
# "blue green" ∩ "green yellow" → 1/2, 1/2 → 0.5; nothing shared → 0;
# "one two three four" ∩ "one two" → P 1/2, R 1 → 2/3
TINY_F1 = [1.0, 0.5, 0.5, 0.0, 2 / 3]
TINY_EM = [1.0, 0.0, 0.0, 0.0, 0.0]
TINY_TOKENS = [15.0, 25.0, 40.0, 40.0, 80.0]
TINY_LATENCY = [100.0, 200.0, 300.0, 400.0, 1000.0]
assert all(abs(token_f1(r["answer"], r["references"]) - f) < 1e-12 for r, f in zip(TINY, TINY_F1, strict=True))


def _close(a: Any, b: float, tol: float = 1e-9) -> bool:
    return isinstance(a, (int, float)) and not isinstance(a, bool) and abs(a - b) <= tol * max(1.0, abs(b))


def _json_stdout(run: Run) -> Any:
    return json.loads(run.stdout)


def _summary(doc: dict[str, Any], metric: str, statistic: str | None = None) -> dict[str, Any]:
    for s in doc["summaries"]:
        if s["metric"] == metric and (statistic is None or s["statistic"] == statistic):
            return s
    raise KeyError(f"{metric} {statistic or ''} not in the report")


def check_tiny(n: int) -> Callable[[Run], list[Finding]]:
    """The first ``n`` tiny records' figures against the hand-worked values."""

    def check(run: Run) -> list[Finding]:
        if run.rc != 0:
            return []
        doc = _json_stdout(run)
        out: list[Finding] = []
        want = {
            ("token_f1", None): sum(TINY_F1[:n]) / n,
            ("exact_match", None): sum(TINY_EM[:n]) / n,
            ("total_tokens", None): sum(TINY_TOKENS[:n]) / n,
            ("latency_ms", "p50"): percentile(TINY_LATENCY[:n], 0.5),
            ("latency_ms", "p95"): percentile(TINY_LATENCY[:n], 0.95),
        }
        for (metric, statistic), value in want.items():
            s = _summary(doc, metric, statistic)
            if not _close(s["value"], value) or s["n"] != n:
                out.append(
                    (
                        "wrong_number",
                        (
                            f"{metric} {statistic or s['statistic']}: printed {s['value']} "
                            f"(n {s['n']}), by hand {value:.6g} (n {n})"
                        ),
                    )
                )
            low, high = s.get("ci_low"), s.get("ci_high")
            if low is not None and high is not None and not low - 1e-12 <= s["value"] <= high + 1e-12:
                out.append(
                    ("wrong_number", (f"{metric}: the estimate {s['value']} lies outside its interval [{low}, {high}]"))
                )
        return out

    return check


def check_pipe(then: Callable[[Run], list[Finding]] | None) -> Callable[[Run], list[Finding]]:
    """A pipe as the input (bash's <(cat FILE), or stdin): read it, or refuse it as a pipe; an error that
    blames the content of a file that was fine is untrue."""

    def check(run: Run) -> list[Finding]:
        if run.rc == 0:
            return then(run) if then is not None else []
        said = next((line for line in run.stderr.splitlines() if line.startswith("error")), run.stderr.strip())
        if re.search(
            r"no records?|empty|no value|holds no|no rows|no header|missing|broken|not JSON", said, re.IGNORECASE
        ):
            return [("review", f"the pipe held a good file, the error blames its content: {said[:200]}")]
        return []

    return check


def check_validate_count(n: int) -> Callable[[Run], list[Finding]]:
    def check(run: Run) -> list[Finding]:
        found = re.search(r"(\d+) valid record", run.stdout)
        if run.rc == 0 and (found is None or int(found.group(1)) != n):
            return [("wrong_number", f"validate printed {found.group(0) if found else 'no count'}; the file has {n}")]
        return []

    return check


def _items(ws: Path, folder: str) -> dict[str, dict[str, Any]]:
    """A run's item rows by id (the demo's runs answer each id once; their model ids differ)."""
    return {r["id"]: r for r in _complete_rows(ws / folder / "items.jsonl")}


def check_compare_pairs(metric: str) -> Callable[[Run], list[Finding]]:
    """compare runs/v1 runs/gate: the means, difference and wins of ``metric`` from the two items files."""

    def check(run: Run) -> list[Finding]:
        if run.rc != 0:
            return []
        a, b = _items(run.ws, "runs/v1"), _items(run.ws, "runs/gate")
        pairs = [(a[k]["scores"].get(metric), b[k]["scores"].get(metric)) for k in a if k in b]
        pairs = [(x, y) for x, y in pairs if x is not None and y is not None]
        row = next(m for m in _json_stdout(run)[0]["groups"][0]["metrics"] if m["metric"] == metric)
        mean_a = sum(x for x, _ in pairs) / len(pairs)
        mean_b = sum(y for _, y in pairs) / len(pairs)
        sign = -1 if row.get("higher_is_better") is False else 1  # fewer tokens is a win
        wins = sum(sign * (y - x) > 0 for x, y in pairs)
        losses = sum(sign * (y - x) < 0 for x, y in pairs)
        out: list[Finding] = []
        for name, got, want in (
            ("n", row["n"], len(pairs)),
            ("mean_a", row["mean_a"], mean_a),
            ("mean_b", row["mean_b"], mean_b),
            ("difference", row["difference"], mean_b - mean_a),
            ("wins", row["wins"], wins),
            ("losses", row["losses"], losses),
        ):
            if not _close(got, want):
                out.append(("wrong_number", f"compare {metric} {name}: printed {got}, from the items {want:.6g}"))
        if not row["ci_low"] - 1e-12 <= row["difference"] <= row["ci_high"] + 1e-12:
            out.append(("wrong_number", f"compare {metric}: the difference lies outside its interval"))
        return out

    return check


def check_compare_self(run: Run) -> list[Finding]:
    if run.rc != 0:
        return []
    out: list[Finding] = []
    for row in _json_stdout(run)[0]["groups"][0]["metrics"]:
        if row["difference"] not in (0, 0.0) or (row["p_value"] is not None and row["p_value"] < 1 - 1e-12):
            out.append(
                (
                    "wrong_number",
                    (f"a run against itself: {row['metric']} difference {row['difference']}, p {row['p_value']}"),
                )
            )
    return out


def _answer_labels(path: Path, label: str) -> dict[str, float]:
    with open(path, newline="", encoding="utf-8") as handle:
        return {r["record_id"]: float(r[label]) for r in csv.DictReader(handle) if r["unit"] == "answer"}


def check_agree_auroc(run: Run) -> list[Finding]:
    """agree overlap against Ana's support_present: AUROC as the Mann–Whitney share, from the files."""
    if run.rc != 0:
        return []
    labels = _answer_labels(run.ws / "demo/demo-labels-ana.csv", "support_present")
    scores = {k: r["scores"].get("overlap") for k, r in _items(run.ws, "runs/v1").items()}
    pos = [scores[i] for i, v in labels.items() if v == 1 and scores.get(i) is not None]
    neg = [scores[i] for i, v in labels.items() if v == 0 and scores.get(i) is not None]
    auc = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg) / (len(pos) * len(neg))
    figure = next(f for f in _json_stdout(run)["figures"] if f["name"] == "AUROC")
    if not _close(figure["value"], auc):
        return [("wrong_number", f"agree AUROC printed {figure['value']}, Mann–Whitney from the files {auc:.6g}")]
    return []


def check_merge_kappa(run: Run) -> list[Finding]:
    """labels merge of Ana and Ben: raw agreement and Cohen's κ of support_present, from the two files."""
    if run.rc != 0:
        return []
    a = _answer_labels(run.ws / "demo/demo-labels-ana.csv", "support_present")
    b = _answer_labels(run.ws / "demo/demo-labels-ben.csv", "support_present")
    shared = [k for k in a if k in b]
    po = sum(a[k] == b[k] for k in shared) / len(shared)
    pa, pb = sum(a[k] for k in shared) / len(shared), sum(b[k] for k in shared) / len(shared)
    pe = pa * pb + (1 - pa) * (1 - pb)
    kappa = (po - pe) / (1 - pe)
    row = next(r for r in _json_stdout(run)["agreement"] if r["label"] == "support_present")
    out: list[Finding] = []
    if not _close(row["raw_agreement"], po):
        out.append(("wrong_number", f"merge raw agreement printed {row['raw_agreement']}, from the files {po:.6g}"))
    if not _close(row["cohen_kappa"], kappa):
        out.append(("wrong_number", f"merge Cohen's kappa printed {row['cohen_kappa']}, from the files {kappa:.6g}"))
    return out


def check_estimate_constant(value: float) -> Callable[[Run], list[Finding]]:
    """estimate with every label equal to ``value``: no interval of zero width; for 0/1, the exact bound."""

    def check(run: Run) -> list[Finding]:
        if run.rc != 0:
            return []
        doc = _json_stdout(run)
        out: list[Finding] = []
        for name in ("ppi", "labelled_only"):
            e = doc[name]
            if e["low"] is None or e["high"] is None:
                if value in (0, 1):
                    out.append(("review", f"{name}: no interval for {e['n_labelled']} 0/1 labels all {value:g}"))
                continue  # undefined, said so: no claim of a zero width
            if e["high"] - e["low"] <= 1e-12:
                out.append(
                    (
                        "wrong_number",
                        (
                            f"{name}: a zero-width interval [{e['low']}, {e['high']}] from "
                            f"{e['n_labelled']} labels that are all {value:g}"
                        ),
                    )
                )
                continue
            if value in (0, 1):
                bound = 0.025 ** (1 / e["n_clusters"])  # Clopper–Pearson, none of n the other way
                want = (bound, 1.0) if value == 1 else (0.0, 1 - bound)
                if not (_close(e["low"], want[0], 1e-6) and _close(e["high"], want[1], 1e-6)):
                    out.append(
                        (
                            "wrong_number",
                            (
                                f"{name}: [{e['low']:.6g}, {e['high']:.6g}], the exact bound for "
                                f"{e['n_clusters']} clusters all {value:g} is "
                                f"[{want[0]:.6g}, {want[1]:.6g}]"
                            ),
                        )
                    )
            if not e["low"] - 1e-12 <= e["value"] <= e["high"] + 1e-12:
                out.append(("wrong_number", f"{name}: the estimate lies outside its interval"))
        return out

    return check


#: 20 ratings 1–5 of the demo's first 20 answers (20 conversations), and Student's t_0.975 with 19 degrees of freedom.
RATINGS = [1, 2, 3, 4, 5] * 4
T_975_19 = 2.093024054408263


def check_estimate_ratings(run: Run) -> list[Finding]:
    """The labelled items alone: their mean, ± t · sd / √n (one item per conversation, so the jackknife over
    conversations is the classic standard error)."""
    if run.rc != 0:
        return []
    e = _json_stdout(run)["labelled_only"]
    n = len(RATINGS)
    mean = sum(RATINGS) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in RATINGS) / (n - 1))
    half = T_975_19 * sd / math.sqrt(n)
    if e["n_clusters"] != n:
        return [("review", f"labelled items alone: {e['n_clusters']} clusters, the file's 20 are 20 conversations")]
    out: list[Finding] = []
    for key, want in (("value", mean), ("low", mean - half), ("high", mean + half)):
        if not _close(e[key], want, 1e-6):
            out.append(("wrong_number", f"labelled items alone {key}: printed {e[key]}, by hand {want:.6g}"))
    return out


def check_template_sample(n: int, output: str) -> Callable[[Run], list[Finding]]:
    def check(run: Run) -> list[Finding]:
        if run.rc != 0:
            return []
        with open(run.ws / output, newline="", encoding="utf-8") as handle:
            ids = {r["record_id"] for r in csv.DictReader(handle)}
        return [] if len(ids) == n else [("wrong_number", f"--sample {n} gave {len(ids)} records in {output}")]

    return check


def check_same_as_v1(run: Run) -> list[Finding]:
    """``run --demo`` with runs/v1's options: the same figures as runs/v1/summary.json."""
    if run.rc != 0:
        return []
    ref = json.loads((run.ws / "runs/v1/summary.json").read_text("utf-8"))
    doc = _json_stdout(run)
    out: list[Finding] = []
    for s, r in zip(doc["summaries"], ref["summaries"], strict=False):
        if (s["metric"], s["value"], s["ci_low"], s["ci_high"], s["n"]) != (
            r["metric"],
            r["value"],
            r["ci_low"],
            r["ci_high"],
            r["n"],
        ):
            out.append(("wrong_number", f"{s['metric']} {s['statistic']}: {s['value']} against runs/v1's {r['value']}"))
    return out


# --- the page on stdout -----------------------------------------------------------------------------------------

_REFERENCE_PAGES: dict[str, str | None] = {}


def check_page_on_stdout(reference_argv: list[str]) -> Callable[[Run], list[Finding]]:
    """``--html /dev/stdout`` with stdout in a file: the page is whole, is the page the same command writes to a
    file, and nothing else is inside it; other text beside it is for review."""

    def check(run: Run) -> list[Finding]:
        if run.rc != 0:
            return []
        text = run.stdout
        start, end = text.find("<!DOCTYPE html"), text.rfind("</html>")
        if start < 0 or end < 0:
            return [("damaged", "stdout holds no whole HTML page")]
        page = text[start : end + len("</html>")]
        out: list[Finding] = []
        problem = html_problem(page)
        if problem:
            out.append(("damaged", f"the page on stdout {problem}"))
        reference = _reference_page(run, reference_argv)
        if reference is not None and page != reference:
            at = next(
                (i for i, (x, y) in enumerate(zip(page, reference, strict=False)) if x != y),
                min(len(page), len(reference)),
            )
            out.append(
                (
                    "damaged",
                    (
                        f"the page on stdout differs from the page written to a file from character {at}:"
                        f" {page[at : at + 60]!r} against {reference[at : at + 60]!r}"
                    ),
                )
            )
        before, after = text[:start], text[end + len("</html>") :]
        if before.strip() or after.strip():
            out.append(
                (
                    "review",
                    (
                        f"stdout holds other text beside the page ({len(before.strip())} characters before,"
                        f" {len(after.strip())} after, starting {after.strip()[:60]!r}): "
                        "'> page.html' gives a file that is not only the page"
                    ),
                )
            )
        return out

    return check


def _reference_page(run: Run, argv: list[str]) -> str | None:
    key = " ".join(argv)
    if key not in _REFERENCE_PAGES:
        folder = Path(tempfile.mkdtemp(dir=run.scratch))
        page = folder / "reference.html"
        filled = [a.replace("{page}", str(page)).replace("{scratch}", str(folder)) for a in argv]
        done = subprocess.run(
            [*entry_point(), *filled], cwd=run.ws, capture_output=True, env=child_env(), timeout=180, check=False
        )
        _REFERENCE_PAGES[key] = page.read_text("utf-8") if done.returncode == 0 and page.exists() else None
    return _REFERENCE_PAGES[key]


# --- kills: what the messages claim against the files -----------------------------------------------------------


def _sigint_caught(pid: int) -> bool | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    caught = re.search(r"SigCgt:\s*([0-9a-f]+)", status)
    return caught is not None and bool(int(caught.group(1), 16) & (1 << (signal.SIGINT - 1)))


def _at_work() -> Callable[[Path, int], bool]:
    """The command has put Python's SIGINT handler back after loading its modules with the default action
    (``ragmeter._entry``): caught (Python's start), then uncaught (modules loading), then caught (at work)."""
    seen: list[bool] = []

    def at_work(root: Path, pid: int) -> bool:
        caught = _sigint_caught(pid)
        if caught is not None and (not seen or seen[-1] != caught):
            seen.append(caught)
        return seen[-3:] == [True, False, True]

    return at_work


def _lines_in(rel: str) -> Callable[[Path, int], bool]:
    def has_line(root: Path, pid: int) -> bool:
        try:
            with open(root / rel, "rb") as handle:
                return b"\n" in handle.read(1 << 16)
        except OSError:
            return False

    return has_line


def _running(rel: str) -> Callable[[Path, int], bool]:
    def running(root: Path, pid: int) -> bool:
        try:
            return json.loads((root / rel).read_text("utf-8")).get("status") == "running"
        except (OSError, ValueError):
            return False

    return running


def check_after_kill(out: str, *, sigint: bool) -> Callable[[Run], list[Finding]]:
    """A run killed: remember the rows it kept; what it said about them must match the folder."""

    def check(run: Run) -> list[Finding]:
        folder = run.ws / out
        rows = _complete_rows(folder / "items.jsonl")
        run.state["kept"] = len(rows)
        run.state["signal"] = run.signal_note
        findings: list[Finding] = []
        if not (run.signal_note or "").startswith("sent"):
            findings.append(("review", f"inconclusive: {run.signal_note}"))
            return findings
        if sigint:
            said = [line for line in run.stderr.splitlines() if line.startswith("interrupted")]
            if run.rc in (-signal.SIGINT, 128 + signal.SIGINT) and not said:
                if folder.exists():
                    findings.append(("review", f"SIGINT ended it silently (exit {run.rc}) though {out} was written"))
            elif run.rc != 130:
                findings.append(("review", f"SIGINT: exit {run.rc}, not 130"))
            claims_none = bool(said) and re.search(r"nothing was kept|no item was finished", said[0]) is not None
            if said and not claims_none and "kept" in said[0] and not rows:
                findings.append(
                    (
                        "review",
                        f"says {said[0][:160]!r} but {out}/items.jsonl holds no finished item"
                        + ("" if folder.exists() else f" ({out} does not exist)"),
                    )
                )
            elif claims_none and rows:
                findings.append(("review", f"says {said[0][:160]!r} but {out}/items.jsonl holds {len(rows)} rows"))
        manifest = folder / "run.json"
        if manifest.exists() and rows:
            try:
                status = json.loads(manifest.read_text("utf-8")).get("status")
            except ValueError:
                status = "unreadable"
            if status == "finished" and len(rows) < run.state.get("n_big", 0):
                findings.append(("damaged", f"run.json says finished with {len(rows)} of {run.state['n_big']} rows"))
        return findings

    return check


def check_rerun_refused(out: str) -> Callable[[Run], list[Finding]]:
    def check(run: Run) -> list[Finding]:
        if run.state.get("kept", 0) and run.rc == 2 and "--resume" not in run.stderr:
            return [
                (
                    "review",
                    (
                        f"the refusal of a rerun over the interrupted run does not mention --resume: "
                        f"{run.stderr.strip()[:200]}"
                    ),
                )
            ]
        return []

    return check


def check_finished_like_reference(out: str, reference: str, *, resumed: bool) -> Callable[[Run], list[Finding]]:
    """After --resume or --overwrite: every input row once, in order, and the reference run's figures; the
    'resuming: K kept' line equal to the rows the kill left."""

    def check(run: Run) -> list[Finding]:
        if run.rc != 0:
            return []
        findings: list[Finding] = []
        rows = _complete_rows(run.ws / out / "items.jsonl")
        ref_rows = _complete_rows(run.ws / reference / "items.jsonl")
        if [r["id"] for r in rows] != [r["id"] for r in ref_rows]:
            findings.append(
                (
                    "damaged",
                    (
                        f"{out}/items.jsonl has {len(rows)} rows ({len({r['id'] for r in rows})} ids),"
                        f" the uninterrupted run {len(ref_rows)}, or another order"
                    ),
                )
            )
        elif [r["scores"] for r in rows] != [r["scores"] for r in ref_rows]:
            findings.append(("wrong_number", f"{out}/items.jsonl's scores differ from the uninterrupted run's"))
        got = json.loads((run.ws / out / "summary.json").read_text("utf-8"))["summaries"]
        want = json.loads((run.ws / reference / "summary.json").read_text("utf-8"))["summaries"]
        keys = ("metric", "statistic", "value", "ci_low", "ci_high", "n", "n_undefined")
        for g, w in zip(got, want, strict=False):
            if [g.get(k) for k in keys] != [w.get(k) for k in keys]:
                findings.append(
                    (
                        "wrong_number",
                        (
                            f"{g['metric']} {g['statistic']}: {g['value']} [{g['ci_low']}, "
                            f"{g['ci_high']}] n {g['n']}, uninterrupted {w['value']} "
                            f"[{w['ci_low']}, {w['ci_high']}] n {w['n']}"
                        ),
                    )
                )
        if len(got) != len(want):
            findings.append(("wrong_number", f"{len(got)} summaries against {len(want)} uninterrupted"))
        if resumed:
            said = re.search(r"resuming: (\d+) finished item", run.stderr)
            kept = run.state.get("kept", 0)
            if kept and said is None:
                findings.append(("review", f"--resume kept {kept} rows but did not say so"))
            elif said and int(said.group(1)) != kept:
                findings.append(
                    (
                        "wrong_number",
                        (f"--resume says {said.group(1)} item(s) kept; the killed run left {kept} complete rows"),
                    )
                )
        return findings

    return check


def check_mtrag_like_reference(output: str, reference: str) -> Callable[[Run], list[Finding]]:
    def check(run: Run) -> list[Finding]:
        if run.rc != 0:
            return []
        got = [json.loads(line) for line in (run.ws / output).read_text("utf-8").splitlines() if line.strip()]
        want = [json.loads(line) for line in (run.ws / reference).read_text("utf-8").splitlines() if line.strip()]
        findings: list[Finding] = []
        if [r.get("task_id") for r in got] != [r.get("task_id") for r in want]:
            findings.append(
                (
                    "damaged",
                    (f"{output} has {len(got)} records, the uninterrupted output {len(want)}, or another order"),
                )
            )
        elif [r.get("metrics") for r in got] != [r.get("metrics") for r in want]:
            findings.append(("wrong_number", f"{output}'s metrics differ from the uninterrupted output's"))
        if (run.ws / (output + ".partial")).exists():
            findings.append(("damaged", f"{output}.partial is still there after the run finished"))
        return findings

    return check


def check_mtrag_killed(output: str, *, sigint: bool) -> Callable[[Run], list[Finding]]:
    def check(run: Run) -> list[Finding]:
        if not (run.signal_note or "").startswith("sent"):
            return [("review", f"inconclusive: {run.signal_note}")]
        partial = run.ws / (output + ".partial")
        rows = _complete_rows(partial)
        run.state["kept"] = len(rows)
        findings: list[Finding] = []
        if (run.ws / output).exists():
            findings.append(("damaged", f"{output} exists after the kill (only {output}.partial should)"))
        if sigint:
            said = next((line for line in run.stderr.splitlines() if line.startswith("interrupted")), "")
            if run.rc != 130:
                findings.append(("review", f"SIGINT: exit {run.rc}, not 130"))
            if "kept" in said and "nothing" not in said and not rows:
                findings.append(("review", f"says {said[:160]!r} but {output}.partial holds no record"))
        return findings

    return check


def check_append_kept(rel: str, old: str) -> Callable[[Run], list[Finding]]:
    def check(run: Run) -> list[Finding]:
        text = (run.ws / rel).read_text("utf-8")
        if not text.startswith(old):
            return [("damaged", f"{rel} lost what it held before (--summary-file appends)")]
        return []

    return check


def check_link_kept(link: str, target: str) -> Callable[[Run], list[Finding]]:
    def check(run: Run) -> list[Finding]:
        if run.rc != 0:
            return []
        path = run.ws / link
        if not path.is_symlink():
            return [("damaged", f"{link} is no longer a symlink")]
        problem = output_problem(run.ws / target)
        return [("damaged", f"{target} (the link's file): {problem}")] if problem else []

    return check


def check_no_outputs_claimed(run: Run) -> list[Finding]:
    """A command SIGINTed: 'nothing was written' must be true."""
    said = next((line for line in run.stderr.splitlines() if line.startswith("interrupted")), "")
    added = set(run.after) - set(run.before)
    if "nothing was written" in said and added:
        return [("review", f"says nothing was written, but {sorted(added)[:3]} appeared")]
    return []


# --- the workspace's files --------------------------------------------------------------------------------------


def _write_jsonl(path: Path, rows: list[dict[str, Any]], *, encoding: str = "utf-8", newline: str = "\n") -> None:
    path.write_bytes(
        newline.join(json.dumps(r, ensure_ascii=False) for r in rows).encode(encoding) + newline.encode(encoding)
    )


def _mtrag_row(r: dict[str, Any], suffix: str, i: int) -> dict[str, Any]:
    conv = (r.get("metadata") or {}).get("conversation_id", r["id"]) + suffix
    return {
        "conversation_id": conv,
        "task_id": f"{conv}::{i}",
        "turn": 1,
        "input": [{"speaker": "user", "text": r["question"]}],
        "contexts": [{"document_id": c["doc_id"], "text": c["text"]} for c in r.get("contexts", [])],
        "targets": [{"speaker": "agent", "text": x} for x in r.get("references") or []],
        "predictions": [{"text": r["answer"]}],
        "answerability": [r.get("answerability") or "ANSWERABLE"],
    }


def make_files(ws: Path) -> None:
    data = ws / "data"
    data.mkdir()
    demo = [json.loads(line) for line in (ws / "demo/demo.jsonl").read_text("utf-8").splitlines() if line.strip()]
    _write_jsonl(data / "tiny.jsonl", TINY)
    _write_jsonl(data / "tiny-plus-bad.jsonl", [*TINY[:3], {"id": "t6", "question": "Where?"}, *TINY[3:]])
    (data / "empty.jsonl").write_bytes(b"")
    (data / "blank.jsonl").write_bytes(b"\n   \n\t\n")
    (data / "adir").mkdir()
    lines = (
        [json.dumps(r) for r in TINY[:3]]
        + ['{"id": "x9", "question": "Cut?", "answer": "It was cut']
        + [json.dumps(TINY[3])]
    )
    (data / "malformed.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    _write_jsonl(
        data / "wrongcols.jsonl",
        [{"query": r["question"], "response": r["answer"], "gold": r["references"]} for r in TINY],
    )
    (data / "wrongcols.csv").write_text(
        "query,response,gold\n" + "".join(f'"{r["question"]}","{r["answer"]}","{r["references"][0]}"\n' for r in TINY),
        encoding="utf-8",
    )
    (data / "garbage.bin").write_bytes(random.Random(0).randbytes(4096) + b"\x00" * 64)
    latin = [dict(r, answer=r["answer"] + " café crème") for r in TINY]
    _write_jsonl(data / "latin1.jsonl", latin, encoding="latin-1")
    _write_jsonl(data / "utf16.jsonl", TINY, encoding="utf-16")
    (data / "array.json").write_text(json.dumps(TINY, indent=1), encoding="utf-8")
    os.mkfifo(data / "fifo")
    (data / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + (data / "tiny.jsonl").read_bytes())
    _write_jsonl(data / "crlf.jsonl", TINY, newline="\r\n")
    _write_jsonl(data / "dupids.jsonl", [TINY[0], dict(TINY[1], id="t1")])
    _write_jsonl(data / "huge.jsonl", [dict(TINY[0], answer="word " * 200_001)])
    _write_jsonl(
        data / "negative.jsonl", [dict(TINY[0], latency_ms=-5, usage=[{"prompt_tokens": -3, "completion_tokens": 1}])]
    )
    (data / "nan.jsonl").write_text(json.dumps(dict(TINY[0], latency_ms=float("nan"))) + "\n", encoding="utf-8")
    big = []
    for k in range(BIG_REPEATS):
        for r in demo:
            md = dict(r.get("metadata") or {})
            md["conversation_id"] = f"{md.get('conversation_id', r['id'])}-{k:03d}"
            big.append(dict(r, id=f"{r['id']}-{k:03d}", metadata=md))
    _write_jsonl(data / "big.jsonl", big)
    _write_jsonl(data / "mt.jsonl", [_mtrag_row(r, "", i) for i, r in enumerate(demo[:12])])
    _write_jsonl(data / "mtbig.jsonl", [_mtrag_row(r, f"-{k}", i) for k in range(2) for i, r in enumerate(demo)])
    # people's labels
    with open(ws / "demo/demo-labels-ana.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    header, body = rows[0], rows[1:]
    col = header.index("support_present")
    answers = [r for r in body if r[3] == "answer"]

    def labels_file(
        name: str, value: str | None, rows_: list[list[str]], head: list[str] = header, encoding: str = "utf-8"
    ) -> None:
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(head)
        writer.writerows([r[:col] + [value] + r[col + 1 :] if value is not None else r for r in rows_])
        (data / name).write_bytes(buffer.getvalue().encode(encoding))

    labels_file("ones.csv", "1", answers[:20])
    labels_file("zeros.csv", "0", answers[:20])
    ids = [r["id"] for r in demo[:20]]
    (data / "threes.csv").write_text("id,rating\n" + "".join(f"{i},3\n" for i in ids), encoding="utf-8")
    (data / "ratings.csv").write_text(
        "id,rating\n" + "".join(f"{i},{RATINGS[k]}\n" for k, i in enumerate(ids)), encoding="utf-8"
    )
    labels_file("labels-ana-20.csv", None, answers[:20])
    labels_file("labels-wrongcols.csv", None, answers[:20], head=[h.upper() for h in header])
    labels_file("labels-badvalues.csv", "maybe", answers[:20])
    labels_file("labels-unknown-ids.csv", None, [[r[0], "zz" + r[1], *r[2:]] for r in answers[:20]])
    latin_rows = [r[:7] + [r[7] + " café"] + r[8:] for r in answers[:20]]
    labels_file("labels-latin1.csv", None, latin_rows, encoding="latin-1")
    (data / "labels-malformed.csv").write_text(
        ",".join(header) + "\n" + ",".join(answers[0]).replace(",", ',"', 3) + "\n", encoding="utf-8"
    )
    # cited sentences labelled supported or not
    calib = []
    for r in demo:
        for c in r.get("contexts", [])[:2]:
            calib.append(
                {
                    "sentence": r["answer"][:200],
                    "chunk": c["text"],
                    "label": int(c["doc_id"] in r["answer"]),
                    "conversation_id": (r.get("metadata") or {}).get("conversation_id", r["id"]),
                }
            )
    with open(data / "calib.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["sentence", "chunk", "label", "conversation_id"])
        writer.writeheader()
        writer.writerows(calib)
    with open(data / "calib-oneclass.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["sentence", "chunk", "label"])
        writer.writeheader()
        writer.writerows({"sentence": c["sentence"], "chunk": c["chunk"], "label": 1} for c in calib)
    (data / "calib-wrongcols.csv").write_text(
        "text,passage,gold\n"
        + "".join(f'"{c["sentence"][:40]}","{c["chunk"][:40]}",{c["label"]}\n' for c in calib[:20]),
        encoding="utf-8",
    )
    (data / "calib-badlabel.csv").write_text(
        "sentence,chunk,label\n" + "".join(f'"{c["sentence"][:40]}","{c["chunk"][:40]}",perhaps\n' for c in calib[:20]),
        encoding="utf-8",
    )
    (data / "calib-latin1.csv").write_bytes(
        (
            "sentence,chunk,label\n"
            + "".join(f'"{c["sentence"][:40]} café","{c["chunk"][:40]}",{c["label"]}\n' for c in calib[:20])
        ).encode("latin-1", "replace")
    )
    (data / "calib-malformed.jsonl").write_text(
        json.dumps({"sentence": "a", "chunk": "b", "label": 1}) + '\n{"sentence": "cut\n', encoding="utf-8"
    )
    (data / "idk.txt").write_text("\\bI (do not|don't) know\\b\n", encoding="utf-8")
    (data / "idk-bad.txt").write_text("(unclosed\n[z-a]\n", encoding="utf-8")
    (data / "qrels.txt").write_text(
        "".join(f"{r['id']} 0 {c['doc_id']} 1\n" for r in TINY for c in r.get("contexts", [])), encoding="utf-8"
    )
    (data / "summary.md").write_text("# earlier job summary\n\nkept line\n", encoding="utf-8")
    (data / "existing.html").write_text("<p>a page the user keeps</p>\n", encoding="utf-8")
    os.symlink("../demo/demo.jsonl", data / "link-to-demo.jsonl")
    os.symlink("no-such-page.html", data / "dangling.html")
    os.link(ws / "demo/demo.jsonl", data / "hardlink-demo.jsonl")
    (ws / "o").mkdir()


def make_runs(ws: Path, scratch: Path) -> None:
    runs = ws / "runs"
    steps = [
        ["run", "demo/demo.jsonl", "--out", "runs/v1", *FAST],
        ["run", "demo/demo-gate.jsonl", "--out", "runs/gate", *FAST],
        ["run", "demo/demo-gate.jsonl", "--out", "runs/tau", "--tau-sim", "0.7", *FAST],
        ["run", "data/tiny.jsonl", "--out", "runs/tiny", *FAST],
        ["run", "data/big.jsonl", "--out", "runs/big-ref", *FAST],
        ["mtrag", "--step", "algorithmic", "-i", "data/mtbig.jsonl", "-o", "refs/mtbig-ref.jsonl", *NR],
    ]
    (ws / "refs").mkdir()
    for argv in steps:
        done = subprocess.run(
            [*entry_point(), *argv], cwd=ws, capture_output=True, env=child_env(), timeout=600, check=False
        )
        if done.returncode != 0:
            raise SystemExit(f"setup failed: ragmeter {' '.join(argv)}\n{done.stderr.decode()[-2000:]}")
    shutil.copytree(runs / "v1", runs / "broken-items")
    items = (runs / "v1/items.jsonl").read_text("utf-8").splitlines()
    (runs / "broken-items/items.jsonl").write_text(
        "\n".join(items[:5] + ['{"id": "q06", "scores": {'] + items[6:]) + "\n", encoding="utf-8"
    )
    shutil.copytree(runs / "v1", runs / "broken-summary")
    (runs / "broken-summary/summary.json").write_text('{"n_items": 45, "summaries": [', encoding="utf-8")
    shutil.copytree(runs / "v1", runs / "no-summary")
    (runs / "no-summary/summary.json").unlink()
    shutil.copytree(runs / "v1", runs / "running")
    (runs / "running/summary.json").unlink()
    manifest = json.loads((runs / "running/run.json").read_text("utf-8"))
    (runs / "running/run.json").write_text(json.dumps(dict(manifest, status="running"), indent=2), encoding="utf-8")
    (runs / "running/items.jsonl").write_text("\n".join(items[:20]) + "\n", encoding="utf-8")
    (runs / "empty-folder").mkdir()
    shutil.copy(runs / "v1/items.jsonl", ws / "data/v1-items.jsonl")
    os.symlink("v1", runs / "link-to-v1")


def build_workspace(root: Path, scratch: Path) -> Workspace:
    done = subprocess.run(
        [*entry_point(), "demo", "demo"], cwd=root, capture_output=True, env=child_env(), timeout=300, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"setup failed: ragmeter demo demo\n{done.stderr.decode()}")
    make_files(root)
    make_runs(root, scratch)
    ws = Workspace(root, scratch / "backup", hardlinks={"data/hardlink-demo.jsonl": "demo/demo.jsonl"})
    ws.freeze()
    return ws


# --- the catalogue ----------------------------------------------------------------------------------------------

BAD = {
    "missing": "data/nope.jsonl",
    "empty": "data/empty.jsonl",
    "blank-lines": "data/blank.jsonl",
    "folder": "data/adir",
    "malformed-json-line": "data/malformed.jsonl",
    "wrong-columns-jsonl": "data/wrongcols.jsonl",
    "wrong-columns-csv": "data/wrongcols.csv",
    "binary-garbage": "data/garbage.bin",
    "latin-1": "data/latin1.jsonl",
    "utf-16": "data/utf16.jsonl",
    "json-array": "data/array.json",
    "fifo": "data/fifo",
}
BAD_LABELS = {
    "missing": "data/nope.csv",
    "empty": "data/empty.jsonl",
    "folder": "data/adir",
    "binary-garbage": "data/garbage.bin",
    "malformed-csv": "data/labels-malformed.csv",
    "wrong-columns": "data/labels-wrongcols.csv",
    "latin-1": "data/labels-latin1.csv",
    "values-not-0-1": "data/labels-badvalues.csv",
    "fifo": "data/fifo",
}
QUICK_BAD = {"missing", "empty", "folder", "malformed-json-line", "binary-garbage", "fifo", "wrong-columns"}


def _fifo(path: str, feed: str) -> dict[str, Any]:
    """A FIFO as an input: fed once with ``feed``'s bytes, as ``<(cat FILE)`` would; either outcome may do."""
    return {"feed": feed, "expect": "either", "timeout": 30.0} if path.endswith("fifo") else {}


def catalogue() -> list[Case]:
    cases: list[Case] = []

    def add(name: str, command: str, kind: str, argv: list[str], expect: str = "error", **kw: Any) -> None:
        cases.append(Case(f"{command}/{kind}/{name}", command, kind, argv, expect, **kw))

    # ---- bad inputs, every file role ------------------------------------------------------------------------
    for label, path in BAD.items():
        quick = label in QUICK_BAD
        add(
            label,
            "run",
            "bad-input",
            ["run", path, "--out", "o/r", *FAST],
            **_fifo(path, "data/tiny.jsonl"),
            quick=quick,
            outputs=(),
        )
        add(label, "validate", "bad-input", ["validate", path], **_fifo(path, "data/tiny.jsonl"), quick=quick)
    for label, path, expect, outputs, check in (
        ("utf-8-bom", "data/bom.jsonl", "ok", ("o/r",), check_tiny(5)),
        ("crlf-lines", "data/crlf.jsonl", "ok", ("o/r",), check_tiny(5)),
        ("duplicate-ids", "data/dupids.jsonl", "error", (), None),
        ("text-over-limit", "data/huge.jsonl", "error", (), None),
        ("negative-latency-and-tokens", "data/negative.jsonl", "error", (), None),
        ("nan-latency", "data/nan.jsonl", "error", (), None),
        ("symlink-to-records", "data/link-to-demo.jsonl", "ok", ("o/r",), None),
        ("items-file-as-records", "runs/v1/items.jsonl", "error", (), None),
    ):
        add(
            label,
            "run",
            "bad-input",
            ["run", path, "--out", "o/r", "--format", "json", *FAST],
            expect,
            outputs=outputs,
            check=check,
        )
        add(label, "validate", "bad-input", ["validate", path], expect)
    add(
        "process-substitution",
        "run",
        "bad-input",
        ["run", "{pipe}", "--out", "o/r", "--format", "json", *FAST],
        "either",
        pipe="data/tiny.jsonl",
        check=check_pipe(check_tiny(5)),
        timeout=60,
        quick=True,
    )
    add(
        "process-substitution",
        "validate",
        "bad-input",
        ["validate", "{pipe}"],
        "either",
        pipe="data/tiny.jsonl",
        check=check_pipe(check_validate_count(5)),
        timeout=60,
    )
    add(
        "stdin",
        "run",
        "bad-input",
        ["run", "/dev/stdin", "--out", "o/r", "--format", "json", *FAST],
        "either",
        stdin="data/tiny.jsonl",
        check=check_pipe(check_tiny(5)),
        timeout=60,
    )
    add(
        "stdin",
        "validate",
        "bad-input",
        ["validate", "/dev/stdin"],
        "either",
        stdin="data/tiny.jsonl",
        check=check_pipe(check_validate_count(5)),
        timeout=60,
    )
    add(
        "process-substitution",
        "mtrag",
        "bad-input",
        ["mtrag", "--step", "algorithmic", "-i", "{pipe}", "-o", "o/mt.jsonl", *NR],
        "either",
        pipe="data/mt.jsonl",
        check=check_pipe(None),
        timeout=90,
    )
    add(
        "process-substitution-items",
        "compare",
        "bad-input",
        ["compare", "runs/v1", "{pipe}", *NR],
        "either",
        pipe="runs/v1/items.jsonl",
        check=check_pipe(None),
        timeout=60,
    )
    add(
        "process-substitution-human",
        "agree",
        "bad-input",
        ["agree", "runs/v1/items.jsonl", "{pipe}", "--metric", "overlap", "--label", "support_present", *NR],
        "either",
        pipe="demo/demo-labels-ana.csv",
        check=check_pipe(None),
        timeout=60,
    )
    add(
        "process-substitution-human",
        "estimate",
        "bad-input",
        ["estimate", "runs/v1", "{pipe}", "--metric", "overlap", "--label", "support_present"],
        "either",
        pipe="data/labels-ana-20.csv",
        check=check_pipe(None),
        timeout=60,
    )
    add(
        "process-substitution",
        "calibrate-tau",
        "bad-input",
        ["calibrate-tau", "{pipe}", "--embedder", "hashing", *NR],
        "either",
        pipe="data/calib.csv",
        check=check_pipe(None),
        timeout=60,
    )
    add(
        "process-substitution-template",
        "labels",
        "bad-input",
        ["labels", "template", "{pipe}", "-o", "o/t.csv"],
        "either",
        pipe="data/tiny.jsonl",
        check=check_pipe(None),
        timeout=60,
    )
    add(
        "skip-invalid-counts",
        "run",
        "number",
        ["run", "data/tiny-plus-bad.jsonl", "--skip-invalid", "--out", "o/r", "--format", "json", *FAST],
        "ok",
        outputs=("o/r",),
        check=check_tiny(5),
        quick=True,
    )
    add(
        "skip-invalid-counts",
        "validate",
        "number",
        ["validate", "data/tiny-plus-bad.jsonl", "--skip-invalid"],
        "ok",
        check=check_validate_count(5),
    )
    add(
        "tiny-count",
        "validate",
        "number",
        ["validate", "data/tiny.jsonl"],
        "ok",
        check=check_validate_count(5),
        quick=True,
    )
    add("max-errors-0", "validate", "wrong-flag", ["validate", "data/malformed.jsonl", "--max-errors", "0"])
    add("max-errors-negative", "validate", "wrong-flag", ["validate", "data/malformed.jsonl", "--max-errors", "-1"])
    add("csv-without-map", "validate", "wrong-flag", ["validate", "data/wrongcols.csv", "--input-format", "csv"])
    add(
        "csv-with-map",
        "validate",
        "control",
        [
            "validate",
            "data/wrongcols.csv",
            "--map",
            "question=query",
            "--map",
            "answer=response",
            "--map",
            "references=gold",
        ],
        "ok",
    )
    add("map-unknown-field", "validate", "wrong-flag", ["validate", "data/wrongcols.csv", "--map", "colour=query"])
    add("map-without-equals", "validate", "wrong-flag", ["validate", "data/wrongcols.csv", "--map", "question"])
    add(
        "map-on-native-jsonl",
        "validate",
        "wrong-flag",
        ["validate", "data/tiny.jsonl", "--map", "question=query"],
        "either",
    )
    add(
        "input-format-mtrag-on-native",
        "validate",
        "wrong-flag",
        ["validate", "data/tiny.jsonl", "--input-format", "mtrag"],
    )
    add(
        "otel-option-on-native",
        "validate",
        "wrong-flag",
        ["validate", "data/tiny.jsonl", "--otel-retrieval", "all"],
        "either",
    )
    add("extra-argument", "validate", "wrong-flag", ["validate", "data/tiny.jsonl", "data/tiny.jsonl"])

    for label in (
        "missing",
        "empty",
        "folder",
        "malformed-json-line",
        "wrong-columns-jsonl",
        "binary-garbage",
        "latin-1",
        "fifo",
    ):
        add(
            label,
            "mtrag",
            "bad-input",
            ["mtrag", "--step", "algorithmic", "-i", BAD[label], "-o", "o/mt.jsonl", *NR],
            **_fifo(BAD[label], "data/mt.jsonl"),
            quick=label in QUICK_BAD,
        )
    add(
        "native-records",
        "mtrag",
        "bad-input",
        ["mtrag", "--step", "algorithmic", "-i", "demo/demo.jsonl", "-o", "o/mt.jsonl", *NR],
    )

    for label, path in (
        ("missing", "runs/nope"),
        ("empty-file", "data/empty.jsonl"),
        ("empty-folder", "runs/empty-folder"),
        ("binary-garbage", "data/garbage.bin"),
        ("malformed-json-line", "data/malformed.jsonl"),
        ("latin-1", "data/latin1.jsonl"),
        ("fifo", "data/fifo"),
        ("items-with-bad-line", "runs/broken-items"),
        ("summary-cut", "runs/broken-summary"),
        ("records-not-items", "demo/demo.jsonl"),
    ):
        add(
            label,
            "compare",
            "bad-input",
            ["compare", "runs/v1", path, *NR],
            **_fifo(path, "runs/v1/items.jsonl"),
            quick=label in ("missing", "items-with-bad-line"),
        )
    add("no-summary", "compare", "bad-input", ["compare", "runs/v1", "runs/no-summary", *NR])
    add(
        "no-summary-allowed",
        "compare",
        "control",
        ["compare", "runs/v1", "runs/no-summary", "--allow-different-settings", *NR],
        "ok",
    )
    add("unfinished-run", "compare", "bad-input", ["compare", "runs/v1", "runs/running", *NR])
    add("items-file-copied-out", "compare", "control", ["compare", "runs/v1", "data/v1-items.jsonl", *NR], "either")

    agree = ["--metric", "overlap", "--label", "support_present", *NR]
    for label in (
        "missing",
        "empty",
        "folder",
        "binary-garbage",
        "malformed-json-line",
        "wrong-columns-jsonl",
        "latin-1",
        "fifo",
    ):
        add(
            f"scored-{label}",
            "agree",
            "bad-input",
            ["agree", BAD[label], "demo/demo-labels-ana.csv", *agree],
            **_fifo(BAD[label], "runs/v1/items.jsonl"),
            quick=label in ("missing", "fifo"),
        )
    for label, path in BAD_LABELS.items():
        add(
            f"human-{label}",
            "agree",
            "bad-input",
            ["agree", "runs/v1/items.jsonl", path, *agree],
            **_fifo(path, "demo/demo-labels-ana.csv"),
            quick=label in ("wrong-columns",),
        )
    add(
        "human-unknown-ids",
        "agree",
        "bad-input",
        ["agree", "runs/v1/items.jsonl", "data/labels-unknown-ids.csv", *agree],
    )

    estimate = ["--metric", "overlap", "--label", "support_present"]
    for label in ("missing", "empty", "folder", "binary-garbage", "malformed-json-line", "fifo"):
        add(
            f"run-{label}",
            "estimate",
            "bad-input",
            ["estimate", BAD[label], "data/labels-ana-20.csv", *estimate],
            **_fifo(BAD[label], "runs/v1/items.jsonl"),
            quick=label == "empty",
        )
    add(
        "run-unfinished",
        "estimate",
        "bad-input",
        ["estimate", "runs/running", "data/labels-ana-20.csv", *estimate],
        "either",
    )
    for label in ("missing", "empty", "binary-garbage", "wrong-columns", "latin-1", "values-not-0-1", "fifo"):
        add(
            f"human-{label}",
            "estimate",
            "bad-input",
            ["estimate", "runs/v1", BAD_LABELS[label], *estimate],
            **_fifo(BAD_LABELS[label], "data/labels-ana-20.csv"),
            quick=label == "wrong-columns",
        )
    add("human-unknown-ids", "estimate", "bad-input", ["estimate", "runs/v1", "data/labels-unknown-ids.csv", *estimate])

    calib = ["--embedder", "hashing", *NR]
    for label, path in (
        ("missing", "data/nope.csv"),
        ("empty", "data/empty.jsonl"),
        ("folder", "data/adir"),
        ("binary-garbage", "data/garbage.bin"),
        ("malformed-json-line", "data/calib-malformed.jsonl"),
        ("wrong-columns", "data/calib-wrongcols.csv"),
        ("latin-1", "data/calib-latin1.csv"),
        ("fifo", "data/fifo"),
        ("one-class", "data/calib-oneclass.csv"),
        ("labels-not-0-1", "data/calib-badlabel.csv"),
        ("records-not-sentences", "demo/demo.jsonl"),
    ):
        add(
            label,
            "calibrate-tau",
            "bad-input",
            ["calibrate-tau", path, *calib],
            **_fifo(path, "data/calib.csv"),
            quick=label in ("one-class", "wrong-columns"),
        )
    for label in ("missing", "folder", "binary-garbage", "malformed-json-line"):
        add(
            f"run-{label}",
            "calibrate-tau",
            "bad-input",
            ["calibrate-tau", "data/calib.csv", "--run", BAD[label], *calib],
        )
    add(
        "run-is-the-labelled-file",
        "calibrate-tau",
        "two-roles",
        ["calibrate-tau", "data/calib.csv", "--run", "data/calib.csv", *calib],
    )

    for label in (
        "missing",
        "empty",
        "folder",
        "binary-garbage",
        "malformed-json-line",
        "wrong-columns-jsonl",
        "latin-1",
    ):
        add(
            f"template-{label}",
            "labels",
            "bad-input",
            ["labels", "template", BAD[label], "-o", "o/t.csv"],
            quick=label == "malformed-json-line",
        )
    for label in ("missing", "empty", "binary-garbage"):
        add(
            f"merge-records-{label}",
            "labels",
            "bad-input",
            ["labels", "merge", BAD[label], "demo/demo-labels-ana.csv", "-o", "o/m.jsonl"],
        )
    for label, path in BAD_LABELS.items():
        if label != "fifo":
            add(
                f"merge-filled-{label}",
                "labels",
                "bad-input",
                ["labels", "merge", "demo/demo.jsonl", path, "-o", "o/m.jsonl"],
                quick=label == "values-not-0-1",
            )

    for label, path in (
        ("missing", "data/nope.txt"),
        ("empty", "data/empty.jsonl"),
        ("binary-garbage", "data/garbage.bin"),
        ("folder", "data/adir"),
    ):
        add(
            f"qrels-{label}",
            "run",
            "bad-input",
            [
                "run",
                "data/tiny.jsonl",
                "--metrics",
                "ndcg@5",
                "--ndcg-ideal",
                "pool",
                "--qrels",
                path,
                "--out",
                "o/r",
                *FAST,
            ],
        )
    for label, path, expect in (
        ("missing", "data/nope.txt", "error"),
        ("empty", "data/empty.jsonl", "either"),
        ("binary-garbage", "data/garbage.bin", "error"),
        ("folder", "data/adir", "error"),
        ("bad-regex", "data/idk-bad.txt", "error"),
    ):
        add(
            f"idk-patterns-{label}",
            "run",
            "bad-input",
            ["run", "data/tiny.jsonl", "--idk-patterns", path, "--out", "o/r", *FAST],
            expect,
            outputs=("o/r",) if expect != "error" else (),
        )

    add("folder-is-a-file", "demo", "bad-input", ["demo", "data/tiny.jsonl"], quick=True)
    add("folder-has-the-demo", "demo", "bad-input", ["demo", "demo"])
    add("empty-path", "demo", "bad-input", ["demo", ""])
    add("dev-null", "demo", "bad-input", ["demo", "/dev/null"])
    add("fifo", "demo", "bad-input", ["demo", "data/fifo"], timeout=20)
    add("dangling-symlink", "demo", "bad-input", ["demo", "data/dangling.html"], "error")
    add("new-nested-folder", "demo", "control", ["demo", "o/a/b"], "ok", outputs=("o/a",))
    add(
        "into-a-run-folder",
        "demo",
        "two-roles",
        ["demo", "runs/v1"],
        "either",
        outputs=("runs/v1/demo*", "runs/v1/DEMO*"),
    )
    add("no-folder", "demo", "wrong-flag", ["demo"])
    add("extra-argument", "metrics", "wrong-flag", ["metrics", "extra"])
    add("unknown-flag", "metrics", "wrong-flag", ["metrics", "--format", "json"])
    add("plain", "metrics", "control", ["metrics"], "ok", quick=True)

    # ---- wrong flags and numbers: run --------------------------------------------------------------------------
    tiny = ["run", "data/tiny.jsonl", "--out", "o/r"]
    for label, value, expect in (
        ("unknown", "foo", "error"),
        ("empty", "", "error"),
        ("only-comma", ",", "error"),
        ("twice", "token_f1,token_f1", "either"),
        ("cutoff-0", "ndcg@0", "error"),
        ("cutoff-negative", "ndcg@-1", "error"),
        ("cutoff-word", "ndcg@abc", "error"),
        ("cutoff-huge", "ndcg@99999999999999999999", "error"),
        ("upper-case", "TOKEN_F1", "either"),
        ("judged-without-judge", "judged", "error"),
        ("family-and-member", "lexical,token_f1", "either"),
        ("trailing-comma", "token_f1,", "either"),
    ):
        add(
            f"metrics-{label}",
            "run",
            "wrong-flag",
            [*tiny, "--metrics", value, *FAST],
            expect,
            outputs=("o/r",) if expect != "error" else (),
            quick=label in ("unknown", "empty"),
        )
    numbers = [
        ("n-resamples", "0", "error"),
        ("n-resamples", "-5", "error"),
        ("n-resamples", "1", "either"),
        ("n-resamples", "1000000000000", "error"),
        ("confidence", "0", "error"),
        ("confidence", "1", "error"),
        ("confidence", "1.5", "error"),
        ("confidence", "-0.1", "error"),
        ("confidence", "nan", "error"),
        ("confidence", "inf", "error"),
        ("tau-sim", "-1", "error"),
        ("tau-sim", "2", "error"),
        ("tau-sim", "nan", "error"),
        ("seed", "-1", "either"),
        ("seed", str(2**70), "either"),
        ("limit", "0", "error"),
        ("limit", "-1", "error"),
        ("limit", str(10**30), "either"),
        ("max-errors", "-1", "either"),
    ]
    for flag, value, expect in numbers:
        argv = (
            [*tiny, *FAST, f"--{flag}", value]
            if flag != "n-resamples"
            else [*tiny, "--embedder", "hashing", "--n-resamples", value]
        )
        add(
            f"{flag}={value}",
            "run",
            "wrong-flag",
            argv,
            expect,
            outputs=("o/r",) if expect != "error" else (),
            timeout=90,
            quick=value in ("nan", "1000000000000"),
        )
    add(
        "limit-2-counts",
        "run",
        "number",
        [*tiny, "--limit", "2", "--format", "json", *FAST],
        "ok",
        outputs=("o/r",),
        check=check_tiny(2),
    )
    add(
        "tiny-figures",
        "run",
        "number",
        [*tiny, "--format", "json", *FAST],
        "ok",
        outputs=("o/r",),
        check=check_tiny(5),
        quick=True,
    )
    add(
        "demo-flag-same-as-file",
        "run",
        "number",
        ["run", "--demo", "--out", "o/r", "--format", "json", *FAST],
        "ok",
        outputs=("o/r",),
        check=check_same_as_v1,
    )
    conflicts = [
        ("resume-and-overwrite", [*tiny, "--resume", "--overwrite"], "error"),
        ("demo-and-file", ["run", "data/tiny.jsonl", "--demo", "--out", "o/r"], "error"),
        ("no-input", ["run", "--out", "o/r"], "error"),
        ("require-unscored-metric", [*tiny, "--metrics", "overlap", "--require", "token_f1>=0.5"], "error"),
        ("require-malformed", [*tiny, "--require", "token_f1>>0.5"], "error"),
        ("require-unknown", [*tiny, "--require", "nosuch>=1"], "error"),
        ("require-nan", [*tiny, "--require", "token_f1>=nan"], "error"),
        ("junit-without-require", [*tiny, "--junit", "o/g.xml"], "error"),
        ("summary-file-without-require", [*tiny, "--summary-file", "o/s.md"], "error"),
        ("require-point-alone", [*tiny, "--require-point"], "error"),
        ("grounded-unscored", [*tiny, "--metrics", "token_f1", "--grounded", "overlap:0.5"], "error"),
        ("grounded-not-a-number", [*tiny, "--grounded", "overlap:abc"], "error"),
        ("correct-out-of-range", [*tiny, "--correct", "token_f1:2"], "error"),
        ("ray-address-without-ray", [*tiny, "--ray-address", "auto"], "error"),
        ("workers-without-ray", [*tiny, "--workers", "2"], "error"),
        ("ray-with-html", [*tiny, "--engine", "ray", "--html", "o/x.html"], "error"),
        ("ray-with-limit", [*tiny, "--engine", "ray", "--limit", "2"], "error"),
        ("ray-workers-0", [*tiny, "--engine", "ray", "--workers", "0"], "error"),
        ("dry-run-without-judge", [*tiny, "--dry-run"], "error"),
        ("judge-model-without-judge", [*tiny, "--judge-model", "gpt-4o-mini"], "error"),
        ("judge-timeout-without-judge", [*tiny, "--judge-timeout", "5"], "error"),
        ("price-without-judge", [*tiny, "--price-prompt", "1"], "error"),
        (
            "judge-openai-without-model",
            [*tiny, "--judge", "openai", "--judge-base-url", "http://127.0.0.1:9/v1"],
            "error",
        ),
        (
            "judge-base-url-not-http",
            [*tiny, "--judge", "openai", "--judge-model", "m", "--judge-base-url", "ftp://127.0.0.1:9/v1"],
            "error",
        ),
        ("rb-llm-unparsed-without-judge", [*tiny, "--rb-llm-unparsed", "0.5"], "error"),
        ("write-back-unknown-kind", [*tiny, "--write-back", "json", "o/wb.json"], "error"),
        ("write-back-on-native", [*tiny, "--write-back", "otel", "o/wb.json"], "error"),
        ("qrels-without-pool", [*tiny, "--metrics", "ndcg@5", "--qrels", "data/qrels.txt"], "error"),
        ("pool-without-retrieval-metric", [*tiny, "--ndcg-ideal", "pool", "--metrics", "token_f1"], "error"),
        ("ndcg-gain-without-ndcg", [*tiny, "--ndcg-gain", "linear", "--metrics", "token_f1"], "error"),
        ("tau-sim-without-overlap", [*tiny, "--tau-sim", "0.7", "--metrics", "token_f1"], "error"),
        ("idk-eval-source-without-mtrag", [*tiny, "--idk-eval-source", "record", "--metrics", "token_f1"], "error"),
        ("input-format-csv-on-jsonl", [*tiny, "--input-format", "csv"], "error"),
        ("format-xml", [*tiny, "--format", "xml"], "error"),
        ("language-xx", [*tiny, "--language", "xx"], "error"),
        ("embedder-unknown", [*tiny, "--embedder", "bert"], "error"),
        ("unknown-flag", [*tiny, "--fast"], "error"),
        ("resume-nothing-there", [*tiny, "--resume"], "either"),
        ("resume-a-finished-run", ["run", "demo/demo.jsonl", "--out", "runs/v1", "--resume", *FAST], "either"),
        (
            "resume-other-metrics",
            ["run", "demo/demo.jsonl", "--out", "runs/running", "--resume", "--metrics", "token_f1", *FAST],
            "error",
        ),
        ("resume-other-input", ["run", "demo/demo-gate.jsonl", "--out", "runs/running", "--resume", *FAST], "error"),
        ("out-finished-run", ["run", "demo/demo.jsonl", "--out", "runs/v1", *FAST], "error"),
        ("out-unfinished-run", ["run", "demo/demo.jsonl", "--out", "runs/running", *FAST], "error"),
    ]
    for label, argv, expect in conflicts:
        if argv[:4] == tiny and "--embedder" not in argv:
            argv = [*argv, *FAST]
        outputs: tuple[str, ...] = ("o/r",) if expect != "error" else ()
        if label == "resume-a-finished-run":
            outputs = ("runs/v1",)
        add(
            label,
            "run",
            "wrong-flag",
            argv,
            expect,
            outputs=outputs,
            quick=label in ("resume-and-overwrite", "qrels-without-pool", "judge-openai-without-model"),
        )
    add(
        "resume-unfinished-same",
        "run",
        "control",
        ["run", "demo/demo.jsonl", "--out", "runs/running", "--resume", "--format", "json", *FAST],
        "ok",
        outputs=("runs/running",),
        check=check_same_as_v1,
    )
    add(
        "overwrite-a-finished-run",
        "run",
        "control",
        ["run", "demo/demo-gate.jsonl", "--out", "runs/tiny", "--overwrite", *FAST],
        "ok",
        outputs=("runs/tiny",),
    )
    add(
        "out-empty-existing-folder",
        "run",
        "control",
        ["run", "data/tiny.jsonl", "--out", "data/adir", *FAST],
        "ok",
        outputs=("data/adir",),
    )
    add(
        "require-pass",
        "run",
        "control",
        [*tiny, "--require", "token_f1>=0.1", "--require-point", *FAST],
        "ok",
        outputs=("o/r",),
    )
    add(
        "require-fail-exit-1",
        "run",
        "control",
        [*tiny, "--require", "token_f1>=0.9", "--junit", "o/g.xml", "--summary-file", "data/summary.md", *FAST],
        "either",
        outputs=("o/r", "o/g.xml", "data/summary.md"),
        check=check_append_kept("data/summary.md", "# earlier job summary\n\nkept line\n"),
    )

    # paths: empty, special files, folders
    for label, argv, expect, outputs in (
        ("out-empty", ["run", "data/tiny.jsonl", "--out", "", *FAST], "error", ()),
        ("html-empty", [*tiny, "--html", "", *FAST], "error", ()),
        ("junit-empty", [*tiny, "--require", "token_f1>=0.1", "--junit", "", *FAST], "error", ()),
        ("summary-file-empty", [*tiny, "--require", "token_f1>=0.1", "--summary-file", "", *FAST], "error", ()),
        ("write-back-empty", [*tiny, "--write-back", "otel", "", *FAST], "error", ()),
        ("idk-patterns-empty-path", [*tiny, "--idk-patterns", "", *FAST], "error", ()),
        ("qrels-empty-path", [*tiny, "--metrics", "ndcg@5", "--ndcg-ideal", "pool", "--qrels", "", *FAST], "error", ()),
        ("out-is-a-file", ["run", "data/tiny.jsonl", "--out", "data/tiny.jsonl", *FAST], "error", ()),
        ("out-dev-null", ["run", "data/tiny.jsonl", "--out", "/dev/null", *FAST], "error", ()),
        ("out-fifo", ["run", "data/tiny.jsonl", "--out", "data/fifo", *FAST], "error", ()),
        ("html-folder", [*tiny, "--html", "data/adir", *FAST], "error", ()),
        ("html-existing-file", [*tiny, "--html", "data/existing.html", *FAST], "error", ()),
        (
            "html-existing-overwrite",
            [*tiny, "--html", "data/existing.html", "--overwrite", *FAST],
            "ok",
            ("o/r", "data/existing.html"),
        ),
        ("html-fifo", [*tiny, "--html", "data/fifo", *FAST], "error", ()),
        ("html-dev-null", [*tiny, "--html", "/dev/null", *FAST], "ok", ("o/r",)),
        ("html-dev-full", [*tiny, "--html", "/dev/full", *FAST], "error", ()),
        ("html-missing-parent", [*tiny, "--html", "o/no/such/x.html", *FAST], "either", ("o/r", "o/no")),
        (
            "html-dangling-symlink",
            [*tiny, "--html", "data/dangling.html", *FAST],
            "ok",
            ("o/r", "data/no-such-page.html"),
        ),
        ("html-dev-stderr", [*tiny, "--html", "/dev/stderr", *FAST], "either", ("o/r",)),
    ):
        add(
            label,
            "run",
            "wrong-flag",
            argv,
            expect,
            outputs=outputs,
            timeout=30 if "fifo" in label else 120,
            check=check_link_kept("data/dangling.html", "data/no-such-page.html") if "dangling" in label else None,
            quick=label in ("out-empty", "html-empty", "html-fifo"),
        )

    # ---- the same file in two roles: run ------------------------------------------------------------------------
    demo_run = ["run", "demo/demo.jsonl"]
    for label, argv in (
        ("out-at-input", [*demo_run, "--out", "demo/demo.jsonl"]),
        ("html-at-input", [*demo_run, "--out", "o/r", "--html", "demo/demo.jsonl"]),
        ("html-at-input-overwrite", [*demo_run, "--out", "o/r", "--html", "demo/demo.jsonl", "--overwrite"]),
        ("html-at-symlink-to-input", [*demo_run, "--out", "o/r", "--html", "data/link-to-demo.jsonl", "--overwrite"]),
        (
            "html-at-hard-link-to-input",
            [*demo_run, "--out", "o/r", "--html", "data/hardlink-demo.jsonl", "--overwrite"],
        ),
        (
            "junit-at-input",
            [*demo_run, "--out", "o/r", "--require", "token_f1>=0.1", "--junit", "demo/demo.jsonl", "--overwrite"],
        ),
        (
            "summary-file-at-input",
            [*demo_run, "--out", "o/r", "--require", "token_f1>=0.1", "--summary-file", "demo/demo.jsonl"],
        ),
        (
            "junit-and-summary-file-same",
            [
                *demo_run,
                "--out",
                "o/r",
                "--require",
                "token_f1>=0.1",
                "--junit",
                "o/g.xml",
                "--summary-file",
                "o/g.xml",
            ],
        ),
        (
            "html-and-junit-same",
            [*demo_run, "--out", "o/r", "--require", "token_f1>=0.1", "--junit", "o/x", "--html", "o/x"],
        ),
        ("html-and-write-back-same", [*demo_run, "--out", "o/r", "--html", "o/x", "--write-back", "otel", "o/x"]),
        ("html-at-own-items", [*demo_run, "--out", "o/r", "--html", "o/r/items.jsonl"]),
        ("html-at-own-summary", [*demo_run, "--out", "o/r", "--html", "o/r/summary.json"]),
        ("html-at-own-run-json", [*demo_run, "--out", "o/r", "--html", "o/r/run.json"]),
        ("html-is-the-out-folder", [*demo_run, "--out", "o/r", "--html", "o/r"]),
        ("html-at-finished-run-items", [*demo_run, "--out", "runs/v1", "--overwrite", "--html", "runs/v1/items.jsonl"]),
        (
            "html-at-other-runs-items-overwrite",
            [*demo_run, "--out", "o/r", "--html", "runs/v1/summary.json", "--overwrite"],
        ),
        ("input-inside-out", ["run", "runs/v1/items.jsonl", "--out", "runs/v1", "--overwrite"]),
        ("idk-patterns-is-input", [*demo_run, "--out", "o/r", "--idk-patterns", "demo/demo.jsonl"]),
        (
            "qrels-is-input",
            [*demo_run, "--out", "o/r", "--metrics", "ndcg@5", "--ndcg-ideal", "pool", "--qrels", "demo/demo.jsonl"],
        ),
        ("write-back-at-input", [*demo_run, "--out", "o/r", "--write-back", "otel", "demo/demo.jsonl"]),
        ("out-at-symlinked-run", [*demo_run, "--out", "runs/link-to-v1", "--overwrite"]),
        ("parquet-at-html", [*demo_run, "--out", "o/r", "--parquet", "--html", "o/r/items.parquet"]),
    ):
        expect = "either" if label in ("out-at-symlinked-run", "html-at-other-runs-items-overwrite") else "error"
        outputs = {
            "out-at-symlinked-run": ("runs/v1",),
            "html-at-other-runs-items-overwrite": ("o/r", "runs/v1/summary.json"),
        }.get(label, ())
        add(
            label,
            "run",
            "two-roles",
            [*argv, *FAST],
            expect,
            outputs=outputs,
            quick=label
            in ("html-at-input-overwrite", "summary-file-at-input", "junit-and-summary-file-same", "html-at-own-items"),
        )
    add(
        "html-dev-stdout",
        "run",
        "two-roles",
        [*demo_run, "--out", "o/r", "--html", "/dev/stdout", *FAST],
        "ok",
        outputs=("o/r",),
        check=check_page_on_stdout([*demo_run, "--out", "{scratch}/out", "--html", "{page}", *FAST]),
        quick=True,
    )
    add(
        "html-dev-stdout-json",
        "run",
        "two-roles",
        [*demo_run, "--out", "o/r", "--html", "/dev/stdout", "--format", "json", *FAST],
        "ok",
        outputs=("o/r",),
        check=check_page_on_stdout([*demo_run, "--out", "{scratch}/out", "--html", "{page}", *FAST]),
    )
    add(
        "html-dev-stdout-markdown",
        "run",
        "two-roles",
        [*demo_run, "--out", "o/r", "--html", "/dev/stdout", "--format", "markdown", *FAST],
        "ok",
        outputs=("o/r",),
        check=check_page_on_stdout([*demo_run, "--out", "{scratch}/out", "--html", "{page}", *FAST]),
    )

    # ---- compare -----------------------------------------------------------------------------------------------
    pair = ["compare", "runs/v1", "runs/gate"]
    gate = ["--fail-on", "token_f1"]
    for label, argv, expect, outputs in (
        ("one-run", ["compare", "runs/v1", *NR], "error", ()),
        ("fail-on-unknown", [*pair, "--fail-on", "foo", *NR], "error", ()),
        ("fail-on-no-direction", [*pair, "--fail-on", "abstained", *NR], "error", ()),
        ("fail-on-negative-margin", [*pair, "--fail-on", "token_f1:-0.1", *NR], "error", ()),
        ("fail-on-word-margin", [*pair, "--fail-on", "token_f1:abc", *NR], "error", ()),
        ("fail-on-nan-margin", [*pair, "--fail-on", "token_f1:nan", *NR], "error", ()),
        ("alpha-0", [*pair, *gate, "--alpha", "0", *NR], "error", ()),
        ("alpha-1.5", [*pair, *gate, "--alpha", "1.5", *NR], "error", ()),
        ("alpha-nan", [*pair, *gate, "--alpha", "nan", *NR], "error", ()),
        ("alpha-without-fail-on", [*pair, "--alpha", "0.01", *NR], "error", ()),
        ("max-undefined-negative", [*pair, *gate, "--max-undefined", "-1", *NR], "error", ()),
        ("max-undefined-2", [*pair, *gate, "--max-undefined", "2", *NR], "error", ()),
        ("junit-without-fail-on", [*pair, "--junit", "o/g.xml", *NR], "error", ()),
        ("junit-empty", [*pair, *gate, "--junit", "", *NR], "error", ()),
        ("summary-file-empty", [*pair, *gate, "--summary-file", "", *NR], "error", ()),
        ("html-empty", [*pair, "--html", "", *NR], "error", ()),
        ("html-fifo", [*pair, "--html", "data/fifo", *NR], "error", ()),
        ("html-existing", [*pair, "--html", "data/existing.html", *NR], "error", ()),
        ("one-name-two-runs", [*pair, "--name", "a", *NR], "error", ()),
        ("same-name-twice", [*pair, "--name", "a", "--name", "a", *NR], "either", ()),
        ("by-unknown-field", [*pair, "--by", "nosuch", *NR], "either", ()),
        ("human-without-label", [*pair, "--human", "data/labels-ana-20.csv", *NR], "error", ()),
        ("estimate-without-human", [*pair, "--estimate", "overlap", *NR], "error", ()),
        ("n-resamples-0", [*pair, "--n-resamples", "0"], "error", ()),
        ("n-resamples-negative", [*pair, "--n-resamples", "-3"], "error", ()),
        ("confidence-2", [*pair, "--confidence", "2", *NR], "error", ()),
        ("confidence-nan", [*pair, "--confidence", "nan", *NR], "error", ()),
        ("settings-differ", ["compare", "runs/v1", "runs/tau", *NR], "error", ()),
        ("settings-differ-allowed", ["compare", "runs/v1", "runs/tau", "--allow-different-settings", *NR], "ok", ()),
        ("format-xml", [*pair, "--format", "xml", *NR], "error", ()),
        (
            "gate-fails-exit-1",
            [*pair, *gate, "--junit", "o/g.xml", "--summary-file", "data/summary.md", *NR],
            "either",
            ("o/g.xml", "data/summary.md"),
        ),
        ("three-runs", ["compare", "runs/v1", "runs/gate", "runs/tau", "--allow-different-settings", *NR], "ok", ()),
    ):
        add(
            label,
            "compare",
            "wrong-flag",
            argv,
            expect,
            outputs=outputs,
            timeout=30 if "fifo" in label else 120,
            check=check_append_kept("data/summary.md", "# earlier job summary\n\nkept line\n")
            if "summary.md" in argv
            else None,
            quick=label in ("one-run", "settings-differ", "alpha-nan"),
        )
    add(
        "paired-token-f1",
        "compare",
        "number",
        [*pair, "--format", "json", *NR],
        "ok",
        check=check_compare_pairs("token_f1"),
        quick=True,
    )
    add(
        "paired-total-tokens",
        "compare",
        "number",
        [*pair, "--format", "json", *NR],
        "ok",
        check=check_compare_pairs("total_tokens"),
    )
    add(
        "run-against-itself",
        "compare",
        "two-roles",
        ["compare", "runs/v1", "runs/v1", "--format", "json", *NR],
        "either",
        check=check_compare_self,
    )
    add(
        "run-against-its-items",
        "compare",
        "two-roles",
        ["compare", "runs/v1", "runs/v1/items.jsonl", "--format", "json", "--allow-different-settings", *NR],
        "either",
        check=check_compare_self,
    )
    add(
        "run-against-symlink-to-it",
        "compare",
        "two-roles",
        ["compare", "runs/v1", "runs/link-to-v1", "--format", "json", *NR],
        "either",
        check=check_compare_self,
    )
    for label, argv, outputs in (
        ("html-at-items", [*pair, "--html", "runs/v1/items.jsonl"], ()),
        ("html-at-items-overwrite", [*pair, "--html", "runs/v1/items.jsonl", "--overwrite"], ()),
        ("html-at-summary-overwrite", [*pair, "--html", "runs/v1/summary.json", "--overwrite"], ()),
        ("html-at-run-json-overwrite", [*pair, "--html", "runs/gate/run.json", "--overwrite"], ()),
        ("html-at-records-of-run-json", [*pair, "--html", "demo/demo.jsonl", "--overwrite"], ()),
        ("html-at-records-of-run-json-2", [*pair, "--html", "demo/demo-gate.jsonl", "--overwrite"], ()),
        ("html-at-hard-link-to-records", [*pair, "--html", "data/hardlink-demo.jsonl", "--overwrite"], ()),
        ("junit-at-items", [*pair, *gate, "--junit", "runs/v1/items.jsonl", "--overwrite"], ()),
        ("summary-file-at-items", [*pair, *gate, "--summary-file", "runs/v1/items.jsonl"], ()),
        ("summary-file-at-records-of-run-json", [*pair, *gate, "--summary-file", "demo/demo.jsonl"], ()),
        ("summary-file-at-run-json", [*pair, *gate, "--summary-file", "runs/gate/run.json"], ()),
        ("junit-and-summary-file-same", [*pair, *gate, "--junit", "o/x", "--summary-file", "o/x"], ()),
        ("html-and-junit-same", [*pair, *gate, "--junit", "o/y", "--html", "o/y"], ()),
        (
            "human-is-items",
            [*pair, "--human", "runs/v1/items.jsonl", "--label", "support_present", "--estimate", "overlap"],
            (),
        ),
        (
            "html-at-human-file",
            [
                *pair,
                "--human",
                "data/labels-ana-20.csv",
                "--label",
                "support_present",
                "--estimate",
                "overlap",
                "--html",
                "data/labels-ana-20.csv",
                "--overwrite",
            ],
            (),
        ),
    ):
        add(
            label,
            "compare",
            "two-roles",
            [*argv, *NR],
            outputs=outputs,
            quick=label in ("html-at-records-of-run-json", "summary-file-at-items", "junit-and-summary-file-same"),
        )
    add(
        "html-dev-stdout",
        "compare",
        "two-roles",
        [*pair, "--html", "/dev/stdout", *NR],
        "ok",
        check=check_page_on_stdout([*pair, "--html", "{page}", *NR]),
        quick=True,
    )
    add(
        "html-dev-stdout-json",
        "compare",
        "two-roles",
        [*pair, "--html", "/dev/stdout", "--format", "json", *NR],
        "ok",
        check=check_page_on_stdout([*pair, "--html", "{page}", *NR]),
    )

    # ---- agree -------------------------------------------------------------------------------------------------
    scored_human = ["agree", "runs/v1/items.jsonl", "demo/demo-labels-ana.csv"]
    for label, argv, expect in (
        ("metric-unknown", [*scored_human, "--metric", "nosuch", "--label", "support_present", *NR], "error"),
        ("label-unknown", [*scored_human, "--metric", "overlap", "--label", "nosuch", *NR], "error"),
        ("no-metric", [*scored_human, "--label", "support_present", *NR], "error"),
        ("threshold-nan", [*scored_human, *agree, "--threshold", "nan"], "error"),
        ("threshold-2", [*scored_human, *agree, "--threshold", "2"], "either"),
        ("threshold-negative", [*scored_human, *agree, "--threshold", "-1"], "either"),
        (
            "n-resamples-0",
            [*scored_human, "--metric", "overlap", "--label", "support_present", "--n-resamples", "0"],
            "error",
        ),
        ("confidence-1", [*scored_human, *agree, "--confidence", "1"], "error"),
        ("ties-unknown", [*scored_human, *agree, "--ties", "coin"], "error"),
        ("ties-on-one-annotator", [*scored_human, *agree, "--ties", "positive"], "error"),
        ("format-markdown", [*scored_human, *agree, "--format", "markdown"], "error"),
        ("html-empty", [*scored_human, *agree, "--html", ""], "error"),
        ("html-fifo", [*scored_human, *agree, "--html", "data/fifo"], "error"),
        (
            "metric-is-a-label",
            [*scored_human, "--metric", "support_present", "--label", "support_present", *NR],
            "error",
        ),
        ("two-annotators", [*scored_human, "demo/demo-labels-ben.csv", *agree, "--per-annotator"], "ok"),
    ):
        add(
            label,
            "agree",
            "wrong-flag",
            argv,
            expect,
            timeout=30 if "fifo" in label else 120,
            quick=label in ("label-unknown", "threshold-nan"),
        )
    add(
        "auroc",
        "agree",
        "number",
        [*scored_human, *agree, "--format", "json"],
        "ok",
        check=check_agree_auroc,
        quick=True,
    )
    for label, argv, expect in (
        ("same-human-file-twice", [*scored_human, "demo/demo-labels-ana.csv", *agree], "either"),
        (
            "scored-is-human",
            [
                "agree",
                "demo/demo-labels-ana.csv",
                "demo/demo-labels-ana.csv",
                "--metric",
                "support_present",
                "--label",
                "support_present",
                *NR,
            ],
            "either",
        ),
        ("html-at-scored", [*scored_human, *agree, "--html", "runs/v1/items.jsonl", "--overwrite"], "error"),
        ("html-at-human", [*scored_human, *agree, "--html", "demo/demo-labels-ana.csv", "--overwrite"], "error"),
        ("scored-is-run-folder", ["agree", "runs/v1", "demo/demo-labels-ana.csv", *agree], "either"),
    ):
        add(label, "agree", "two-roles", argv, expect)
    add(
        "html-dev-stdout",
        "agree",
        "two-roles",
        [*scored_human, *agree, "--html", "/dev/stdout"],
        "ok",
        check=check_page_on_stdout([*scored_human, *agree, "--html", "{page}"]),
    )

    # ---- estimate ----------------------------------------------------------------------------------------------
    est = ["estimate", "runs/v1", "data/labels-ana-20.csv"]
    for label, argv, expect in (
        ("metric-unknown", [*est, "--metric", "nosuch", "--label", "support_present"], "error"),
        ("label-unknown", [*est, "--metric", "overlap", "--label", "nosuch"], "error"),
        ("confidence-0", [*est, *estimate, "--confidence", "0"], "error"),
        ("confidence-1", [*est, *estimate, "--confidence", "1"], "error"),
        ("confidence-1.5", [*est, *estimate, "--confidence", "1.5"], "error"),
        ("confidence-nan", [*est, *estimate, "--confidence", "nan"], "error"),
        ("html-empty", [*est, *estimate, "--html", ""], "error"),
        ("format-xml", [*est, *estimate, "--format", "xml"], "error"),
        ("n-resamples-not-an-option", [*est, *estimate, "--n-resamples", "200"], "error"),
        ("all-labelled", ["estimate", "runs/v1", "demo/demo-labels-ana.csv", *estimate], "ok"),
    ):
        add(label, "estimate", "wrong-flag", argv, expect, quick=label == "confidence-nan")
    add(
        "all-labels-1",
        "estimate",
        "number",
        ["estimate", "runs/v1", "data/ones.csv", *estimate, "--format", "json"],
        "ok",
        check=check_estimate_constant(1),
        quick=True,
    )
    add(
        "all-labels-0",
        "estimate",
        "number",
        ["estimate", "runs/v1", "data/zeros.csv", *estimate, "--format", "json"],
        "ok",
        check=check_estimate_constant(0),
    )
    add(
        "all-ratings-3",
        "estimate",
        "number",
        ["estimate", "runs/v1", "data/threes.csv", "--metric", "overlap", "--label", "rating", "--format", "json"],
        "either",
        check=check_estimate_constant(3),
    )
    add(
        "ratings-labelled-mean",
        "estimate",
        "number",
        ["estimate", "runs/v1", "data/ratings.csv", "--metric", "overlap", "--label", "rating", "--format", "json"],
        "ok",
        check=check_estimate_ratings,
    )
    for label, argv, expect, outputs in (
        ("human-is-run-items", ["estimate", "runs/v1", "runs/v1/items.jsonl", *estimate], "error", ()),
        ("html-at-items", [*est, *estimate, "--html", "runs/v1/items.jsonl", "--overwrite"], "error", ()),
        ("html-at-summary", [*est, *estimate, "--html", "runs/v1/summary.json", "--overwrite"], "error", ()),
        ("html-at-run-json", [*est, *estimate, "--html", "runs/v1/run.json", "--overwrite"], "error", ()),
        ("html-at-records-of-run-json", [*est, *estimate, "--html", "demo/demo.jsonl", "--overwrite"], "error", ()),
        ("html-at-human", [*est, *estimate, "--html", "data/labels-ana-20.csv", "--overwrite"], "error", ()),
        ("same-human-file-twice", [*est, "data/labels-ana-20.csv", *estimate], "either", ()),
    ):
        add(
            label,
            "estimate",
            "two-roles",
            argv,
            expect,
            outputs=outputs,
            quick=label in ("html-at-summary", "html-at-records-of-run-json"),
        )
    add(
        "html-dev-stdout",
        "estimate",
        "two-roles",
        [*est, *estimate, "--html", "/dev/stdout"],
        "ok",
        check=check_page_on_stdout([*est, *estimate, "--html", "{page}"]),
        quick=True,
    )

    # ---- calibrate-tau -----------------------------------------------------------------------------------------
    cal = ["calibrate-tau", "data/calib.csv", *calib]
    for label, argv, expect in (
        ("precision-0", [*cal, "--precision", "0"], "error"),
        ("precision-1.5", [*cal, "--precision", "1.5"], "error"),
        ("precision-nan", [*cal, "--precision", "nan"], "error"),
        ("precision-negative", [*cal, "--precision", "-1"], "error"),
        ("embedder-unknown", ["calibrate-tau", "data/calib.csv", "--embedder", "bert"], "error"),
        ("language-xx", [*cal, "--language", "xx"], "error"),
        ("n-resamples-0", ["calibrate-tau", "data/calib.csv", "--embedder", "hashing", "--n-resamples", "0"], "error"),
        ("confidence-1", [*cal, "--confidence", "1"], "error"),
        ("ci-bca-not-an-option", [*cal, "--ci", "bca"], "error"),
        ("plain", [*cal, "--format", "json"], "ok"),
        ("with-run", [*cal, "--run", "demo/demo.jsonl"], "ok"),
    ):
        add(label, "calibrate-tau", "wrong-flag", argv, expect, quick=label in ("precision-nan", "plain"))

    # ---- labels ------------------------------------------------------------------------------------------------
    tmpl = ["labels", "template", "demo/demo.jsonl"]
    for label, argv, expect, outputs in (
        ("labels-unknown", [*tmpl, "-o", "o/t.csv", "--labels", "foo"], "error", ()),
        ("labels-empty", [*tmpl, "-o", "o/t.csv", "--labels", ""], "error", ()),
        ("sample-0", [*tmpl, "-o", "o/t.csv", "--sample", "0"], "error", ()),
        ("sample-negative", [*tmpl, "-o", "o/t.csv", "--sample", "-1"], "error", ()),
        ("sample-more-than-records", [*tmpl, "-o", "o/t.csv", "--sample", "1000000000"], "either", ("o/t.csv",)),
        ("seed-without-sample", [*tmpl, "-o", "o/t.csv", "--seed", "3"], "error", ()),
        ("output-suffix-txt", [*tmpl, "-o", "o/t.txt"], "error", ()),
        ("output-empty", [*tmpl, "-o", ""], "error", ()),
        ("output-folder", [*tmpl, "-o", "data/adir"], "error", ()),
        ("output-fifo", [*tmpl, "-o", "data/fifo"], "error", ()),
        ("output-existing", [*tmpl, "-o", "data/labels-ana-20.csv"], "error", ()),
        ("no-output", [*tmpl], "error", ()),
        (
            "merge-ties-unknown",
            ["labels", "merge", "demo/demo.jsonl", "demo/demo-labels-ana.csv", "-o", "o/m.jsonl", "--ties", "coin"],
            "error",
            (),
        ),
        (
            "merge-output-empty",
            ["labels", "merge", "demo/demo.jsonl", "demo/demo-labels-ana.csv", "-o", ""],
            "error",
            (),
        ),
        ("merge-no-filled", ["labels", "merge", "demo/demo.jsonl", "-o", "o/m.jsonl"], "error", ()),
        ("annotate-without-judge", ["labels", "annotate", "demo/demo.jsonl", "-o", "o/llm.csv"], "error", ()),
        (
            "annotate-openai-without-model",
            [
                "labels",
                "annotate",
                "demo/demo.jsonl",
                "-o",
                "o/llm.csv",
                "--judge",
                "openai",
                "--judge-base-url",
                "http://127.0.0.1:9/v1",
            ],
            "error",
            (),
        ),
        (
            "annotate-dry-run-without-judge",
            ["labels", "annotate", "demo/demo.jsonl", "-o", "o/llm.csv", "--dry-run"],
            "error",
            (),
        ),
        (
            "annotate-labels-unknown",
            ["labels", "annotate", "demo/demo.jsonl", "-o", "o/llm.csv", "--labels", "foo"],
            "error",
            (),
        ),
        ("annotate-output-suffix", ["labels", "annotate", "demo/demo.jsonl", "-o", "o/llm.txt"], "error", ()),
        ("no-subcommand", ["labels"], "error", ()),
        ("unknown-subcommand", ["labels", "split", "demo/demo.jsonl"], "error", ()),
    ):
        add(
            label,
            "labels",
            "wrong-flag",
            argv,
            expect,
            outputs=outputs,
            timeout=30 if "fifo" in label else 120,
            quick=label in ("seed-without-sample", "annotate-without-judge"),
        )
    add(
        "template-sample-5",
        "labels",
        "number",
        [*tmpl, "-o", "o/t.csv", "--sample", "5", "--seed", "1"],
        "ok",
        outputs=("o/t.csv",),
        check=check_template_sample(5, "o/t.csv"),
    )
    add(
        "merge-kappa",
        "labels",
        "number",
        [
            "labels",
            "merge",
            "demo/demo.jsonl",
            "demo/demo-labels-ana.csv",
            "demo/demo-labels-ben.csv",
            "-o",
            "o/m.jsonl",
            "--format",
            "json",
        ],
        "ok",
        outputs=("o/m.jsonl", "o/m.jsonl.agreement.json"),
        check=check_merge_kappa,
        quick=True,
    )
    for label, argv, expect in (
        ("template-output-is-input", [*tmpl, "-o", "demo/demo.jsonl"], "error"),
        ("template-output-is-input-overwrite", [*tmpl, "-o", "demo/demo.jsonl", "--overwrite"], "error"),
        ("template-output-symlink-to-input", [*tmpl, "-o", "data/link-to-demo.jsonl", "--overwrite"], "error"),
        ("template-output-hard-link-to-input", [*tmpl, "-o", "data/hardlink-demo.jsonl", "--overwrite"], "error"),
        (
            "merge-output-is-records",
            ["labels", "merge", "demo/demo.jsonl", "demo/demo-labels-ana.csv", "-o", "demo/demo.jsonl", "--overwrite"],
            "error",
        ),
        (
            "merge-output-is-filled",
            [
                "labels",
                "merge",
                "demo/demo.jsonl",
                "demo/demo-labels-ana.csv",
                "-o",
                "demo/demo-labels-ana.csv",
                "--overwrite",
            ],
            "error",
        ),
        (
            "merge-records-as-filled",
            ["labels", "merge", "demo/demo.jsonl", "demo/demo.jsonl", "-o", "o/m.jsonl"],
            "error",
        ),
        (
            "merge-same-filled-twice",
            [
                "labels",
                "merge",
                "demo/demo.jsonl",
                "demo/demo-labels-ana.csv",
                "demo/demo-labels-ana.csv",
                "-o",
                "o/m.jsonl",
            ],
            "error",
        ),
        (
            "merge-agreement-report-exists",
            ["labels", "merge", "demo/demo.jsonl", "demo/demo-labels-ana.csv", "-o", "o/m.jsonl"],
            "error",
        ),
        (
            "merge-output-hard-link-to-records",
            [
                "labels",
                "merge",
                "demo/demo.jsonl",
                "demo/demo-labels-ana.csv",
                "-o",
                "data/hardlink-demo.jsonl",
                "--overwrite",
            ],
            "error",
        ),
        (
            "merge-output-is-a-run-items",
            [
                "labels",
                "merge",
                "demo/demo.jsonl",
                "demo/demo-labels-ana.csv",
                "-o",
                "runs/v1/items.jsonl",
                "--overwrite",
            ],
            "error",
        ),
        (
            "annotate-output-is-input",
            [
                "labels",
                "annotate",
                "demo/demo.jsonl",
                "-o",
                "demo/demo.jsonl",
                "--overwrite",
                "--judge",
                "openai",
                "--judge-base-url",
                "http://127.0.0.1:9/v1",
            ],
            "error",
        ),
    ):
        prepare = None
        if label == "merge-agreement-report-exists":

            def prepare(root: Path) -> None:
                (root / "o/m.jsonl.agreement.json").write_text('{"kept": true}\n', encoding="utf-8")

        add(
            label,
            "labels",
            "two-roles",
            argv,
            expect,
            prepare=prepare,
            quick=label in ("merge-output-is-filled", "template-output-is-input-overwrite"),
        )

    # ---- mtrag -------------------------------------------------------------------------------------------------
    mt = ["mtrag", "--step", "algorithmic", "-i", "data/mt.jsonl"]
    for label, argv, expect, outputs in (
        ("step-unknown", ["mtrag", "--step", "foo", "-i", "data/mt.jsonl", "-o", "o/mt.jsonl"], "error", ()),
        (
            "step-idk-without-judge",
            ["mtrag", "--step", "idk", "-i", "data/mt.jsonl", "-o", "o/mt.jsonl", *NR],
            "error",
            (),
        ),
        (
            "judge-openai-without-model",
            [*mt, "-o", "o/mt.jsonl", "--judge", "openai", "--judge-base-url", "http://127.0.0.1:9/v1", *NR],
            "error",
            (),
        ),
        ("bert-layer-negative", [*mt, "-o", "o/mt.jsonl", "--bert-layer", "-1", *NR], "error", ()),
        ("bert-model-missing", [*mt, "-o", "o/mt.jsonl", "--bert-model", "data/no-model", *NR], "error", ()),
        ("bert-baseline-unknown", [*mt, "-o", "o/mt.jsonl", "--bert-baseline", "foo", *NR], "error", ()),
        ("n-resamples-0", [*mt, "-o", "o/mt.jsonl", "--n-resamples", "0"], "error", ()),
        ("confidence-nan", [*mt, "-o", "o/mt.jsonl", "--confidence", "nan", *NR], "error", ()),
        ("rb-llm-unparsed-without-judge", [*mt, "-o", "o/mt.jsonl", "--rb-llm-unparsed", "0.5", *NR], "error", ()),
        ("dry-run-without-judge", [*mt, "-o", "o/mt.jsonl", "--dry-run", *NR], "error", ()),
        ("output-empty", [*mt, "-o", "", *NR], "error", ()),
        ("output-folder", [*mt, "-o", "data/adir", *NR], "error", ()),
        ("output-fifo", [*mt, "-o", "data/fifo", *NR], "error", ()),
        ("no-output", [*mt, *NR], "error", ()),
        (
            "step-all-without-judge",
            ["mtrag", "--step", "all", "-i", "data/mt.jsonl", "-o", "o/mt.jsonl", *NR],
            "ok",
            ("o/mt.jsonl*",),
        ),
        (
            "idk-condition-on-fresh-input",
            ["mtrag", "--step", "idk_condition", "-i", "data/mt.jsonl", "-o", "o/mt.jsonl", *NR],
            "either",
            ("o/mt.jsonl*",),
        ),
    ):
        add(
            label,
            "mtrag",
            "wrong-flag",
            argv,
            expect,
            outputs=outputs,
            timeout=30 if "fifo" in label else 180,
            quick=label in ("step-idk-without-judge", "output-empty"),
        )
    for label, argv, expect, outputs, prepare in (
        ("output-is-input", [*mt, "-o", "data/mt.jsonl", *NR], "error", (), None),
        ("output-is-input-overwrite", [*mt, "-o", "data/mt.jsonl", "--overwrite", *NR], "error", (), None),
        (
            "output-symlink-to-records",
            [*mt, "-o", "data/link-to-demo.jsonl", "--overwrite", *NR],
            "either",
            ("demo/demo.jsonl", "data/link-to-demo.jsonl.*"),
            None,
        ),
        (
            "output-at-reference-summary",
            [
                "mtrag",
                "--step",
                "algorithmic",
                "-i",
                "data/mtbig.jsonl",
                "-o",
                "refs/mtbig-ref.jsonl.summary.json",
                *NR,
            ],
            "error",
            (),
            None,
        ),
        (
            "summary-beside-output-exists",
            [*mt, "-o", "o/mt.jsonl", *NR],
            "error",
            (),
            lambda root: (root / "o/mt.jsonl.summary.json").write_text('{"kept": true}\n', encoding="utf-8"),
        ),
        (
            "rerun-on-own-output",
            ["mtrag", "--step", "algorithmic", "-i", "refs/mtbig-ref.jsonl", "-o", "o/mt2.jsonl", *NR],
            "ok",
            ("o/mt2.jsonl*",),
            None,
        ),
        ("judge-cache-at-input", [*mt, "-o", "o/mt.jsonl", "--judge-cache", "data/mt.jsonl", *NR], "error", (), None),
    ):
        add(
            label,
            "mtrag",
            "two-roles",
            argv,
            expect,
            outputs=outputs,
            prepare=prepare,
            timeout=180,
            quick=label == "output-is-input-overwrite",
        )

    cases += kill_cases()
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), [n for n, k in Counter(names).items() if k > 1]
    return cases


def kill_cases() -> list[Case]:
    cases: list[Case] = []
    big = ["run", "data/big.jsonl", *FAST]

    def step(
        scenario: str,
        name: str,
        argv: list[str],
        expect: str,
        *,
        outputs: tuple[str, ...],
        quick: bool = False,
        **kw: Any,
    ) -> None:
        cases.append(
            Case(
                f"run/kill/{scenario}/{name}",
                "run",
                "kill",
                argv,
                expect,
                outputs=outputs,
                scenario=scenario,
                quick=quick,
                timeout=300,
                **kw,
            )
        )

    for scenario, sig, trigger in (
        ("sigint-mid", signal.SIGINT, "items"),
        ("sigkill-mid", signal.SIGKILL, "items"),
        ("sigint-1s", signal.SIGINT, 1.0),
        ("sigkill-1s", signal.SIGKILL, 1.0),
        ("sigint-before-items", signal.SIGINT, "work"),
    ):
        out = f"o/{scenario}"
        if trigger == "items":
            kill = Kill(sig, when=_lines_in(f"{out}/items.jsonl"), label="first items written")
        elif trigger == "work":
            kill = Kill(sig, when=_at_work(), delay=0.5, label="0.5 s into its work, before any item")
        else:
            kill = Kill(sig, at=float(trigger), label=f"{trigger:g} s")
        quick = scenario in ("sigint-mid", "sigkill-mid")
        step(
            scenario,
            "1-kill",
            [*big, "--out", out],
            "either",
            outputs=(out,),
            kill=kill,
            torn_ok=True,
            check=check_after_kill(out, sigint=sig == signal.SIGINT),
            quick=quick,
        )
        if trigger == "items":
            step(
                scenario,
                "2-plain-rerun",
                [*big, "--out", out],
                "error",
                outputs=(),
                check=check_rerun_refused(out),
                quick=quick,
            )
            step(
                scenario,
                "3-resume",
                [*big, "--out", out, "--resume"],
                "ok",
                outputs=(out,),
                check=check_finished_like_reference(out, "runs/big-ref", resumed=True),
                quick=quick,
            )
            if sig == signal.SIGINT:
                step(
                    scenario,
                    "4-overwrite",
                    [*big, "--out", out, "--overwrite"],
                    "ok",
                    outputs=(out,),
                    check=check_finished_like_reference(out, "runs/big-ref", resumed=False),
                )
                step(scenario, "5-resume-finished", [*big, "--out", out, "--resume"], "either", outputs=(out,))
        elif sig == signal.SIGINT:
            step(
                scenario,
                "2-plain-rerun",
                [*big, "--out", out],
                "ok",
                outputs=(out,),
                check=check_finished_like_reference(out, "runs/big-ref", resumed=False),
            )
        else:
            step(scenario, "2-resume", [*big, "--out", out, "--resume"], "either", outputs=(out,))

    def copy_reference(root: Path) -> None:
        shutil.copytree(root / "runs/big-ref", root / "o/over")

    out = "o/over"
    step(
        "overwrite-killed",
        "1-kill",
        [*big, "--out", out, "--overwrite"],
        "either",
        outputs=(out,),
        prepare=copy_reference,
        kill=Kill(signal.SIGKILL, when=_items_rewritten(out), label="new items written"),
        torn_ok=True,
        check=check_after_kill(out, sigint=False),
    )
    step(
        "overwrite-killed",
        "2-resume",
        [*big, "--out", out, "--resume"],
        "ok",
        outputs=(out,),
        check=check_finished_like_reference(out, "runs/big-ref", resumed=True),
    )

    # python -m ragmeter.cli has no quiet Ctrl-C while its modules load
    cases.append(
        Case(
            "run/kill/python-m-sigint-0.5s",
            "run",
            "kill",
            [*big, "--out", "o/pm"],
            "either",
            outputs=("o/pm",),
            kill=Kill(signal.SIGINT, at=0.5, label="0.5 s"),
            python_m=True,
            timeout=120,
        )
    )

    mt_out = "o/mtk.jsonl"
    mt_argv = ["mtrag", "--step", "algorithmic", "-i", "data/mtbig.jsonl", "-o", mt_out, *NR]
    for scenario, sig in (("mtrag-sigkill-mid", signal.SIGKILL), ("mtrag-sigint-mid", signal.SIGINT)):
        cases.append(
            Case(
                f"mtrag/kill/{scenario}/1-kill",
                "mtrag",
                "kill",
                mt_argv,
                "either",
                outputs=(mt_out + "*",),
                scenario=scenario,
                timeout=300,
                torn_ok=True,
                kill=Kill(sig, when=_lines_in(mt_out + ".partial"), label="first records written"),
                check=check_mtrag_killed(mt_out, sigint=sig == signal.SIGINT),
                quick=sig == signal.SIGKILL,
            )
        )
        cases.append(
            Case(
                f"mtrag/kill/{scenario}/2-rerun",
                "mtrag",
                "kill",
                mt_argv,
                "ok",
                outputs=(mt_out + "*",),
                scenario=scenario,
                timeout=300,
                check=check_mtrag_like_reference(mt_out, "refs/mtbig-ref.jsonl"),
                quick=sig == signal.SIGKILL,
            )
        )

    # the other commands, interrupted at 1 s (modules loading) and 0.3 s into their work
    others = [
        ("compare", ["compare", "runs/v1", "runs/gate", "--html", "o/c.html", *NR], ("o/c.html",)),
        (
            "agree",
            [
                "agree",
                "runs/v1/items.jsonl",
                "demo/demo-labels-ana.csv",
                "--metric",
                "overlap",
                "--label",
                "support_present",
                "--html",
                "o/a.html",
                *NR,
            ],
            ("o/a.html",),
        ),
        (
            "estimate",
            [
                "estimate",
                "runs/v1",
                "data/labels-ana-20.csv",
                "--metric",
                "overlap",
                "--label",
                "support_present",
                "--html",
                "o/e.html",
            ],
            ("o/e.html",),
        ),
        (
            "labels",
            [
                "labels",
                "merge",
                "demo/demo.jsonl",
                "demo/demo-labels-ana.csv",
                "demo/demo-labels-ben.csv",
                "-o",
                "o/m.jsonl",
            ],
            ("o/m.jsonl", "o/m.jsonl.agreement.json"),
        ),
        ("calibrate-tau", ["calibrate-tau", "data/calib.csv", "--embedder", "hashing", *NR], ()),
        ("validate", ["validate", "data/big.jsonl"], ()),
        ("demo", ["demo", "o/d"], ("o/d",)),
        ("metrics", ["metrics"], ()),
        ("mtrag", ["mtrag", "--step", "algorithmic", "-i", "data/mt.jsonl", "-o", "o/mt.jsonl", *NR], ("o/mt.jsonl*",)),
    ]
    for command, argv, outputs in others:
        for sig, when in ((signal.SIGINT, "1s"), (signal.SIGINT, "at-work"), (signal.SIGKILL, "at-work")):
            kill = (
                Kill(sig, at=1.0, label="1 s")
                if when == "1s"
                else Kill(sig, when=_at_work(), delay=0.3, label="0.3 s into its work")
            )
            cases.append(
                Case(
                    f"{command}/kill/{signal.Signals(sig).name.lower()}-{when}",
                    command,
                    "kill",
                    argv,
                    "either",
                    outputs=outputs,
                    timeout=120,
                    kill=kill,
                    torn_ok=sig == signal.SIGKILL,
                    check=check_no_outputs_claimed,
                    quick=command == "compare" and when == "at-work",
                )
            )
    return cases


def _items_rewritten(out: str) -> Callable[[Path, int], bool]:
    """The overwriting run has marked the folder running and written items in it."""
    running, lines = _running(f"{out}/run.json"), _lines_in(f"{out}/items.jsonl")

    def rewritten(root: Path, pid: int) -> bool:
        return running(root, pid) and lines(root, pid)

    return rewritten


# --- the whole battery ------------------------------------------------------------------------------------------


def shown_argv(case: Case) -> list[str]:
    """The command line as a user types it: <(cat FILE) for a pipe, < FILE for stdin."""
    argv = [a.replace("{pipe}", f"<(cat {case.pipe})") for a in case.argv]
    head = ["python", "-m", "ragmeter.cli"] if case.python_m else ["ragmeter"]
    return [*head, *argv, *(["<", case.stdin] if case.stdin else [])]


def _tail(text: str, n: int) -> str:
    return text if len(text) <= n else "…" + text[-n:]


def run_battery(cases: list[Case], ws: Workspace, scratch: Path) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    states: dict[str, dict[str, Any]] = {}
    previous: str | None = None
    n_big = sum(1 for _ in (ws.root / "data/big.jsonl").open())
    for i, case in enumerate(cases, 1):
        if case.scenario is None or case.scenario != previous:
            ws.restore()
        previous = case.scenario
        state = states.setdefault(case.scenario or case.name, {"n_big": n_big})
        run = execute(case, ws, scratch, state)
        klass, findings = classify(run)
        changed = sorted(r for r in set(run.before) | set(run.after) if run.before.get(r) != run.after.get(r))
        worth_reading = klass != "ok" or case.kind == "number"
        results.append(
            {
                "name": case.name,
                "command": case.command,
                "kind": case.kind,
                "argv": shown_argv(case),
                "expect": case.expect,
                "outputs_allowed": list(case.outputs),
                "exit_code": run.rc,
                "seconds": round(run.seconds, 2),
                "class": klass,
                "findings": [{"class": c, "reason": r} for c, r in findings],
                "traceback": any(c == "traceback" for c, _ in findings),
                "hang": run.hang,
                "signal": run.signal_note,
                "files_changed": changed[:40],
                "stderr_tail": _tail(run.stderr, 600 if worth_reading else 240),
                **({"stdout_tail": _tail(run.stdout, 300)} if worth_reading else {}),
            }
        )
        first = next((r for c, r in findings if c == klass), "")
        mark = "" if klass == "ok" else f"  ← {klass}: {first[:110]}"
        print(f"[{i:3d}/{len(cases)}] {run.seconds:6.1f}s exit {run.rc!s:>4}  {case.name}{mark}", flush=True)
    ws.restore()
    return results


def reason_kind(reason: str) -> str:
    """A finding's reason without its particulars, to group the findings for review."""
    head = re.split(r":|;| \(| but | yet ", reason, maxsplit=1)[0]
    return re.sub(r"\d+", "N", head).strip()[:70]


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    counts = Counter(r["class"] for r in results)
    by_command: dict[str, Counter[str]] = {}
    by_kind: dict[str, Counter[str]] = {}
    for r in results:
        by_command.setdefault(r["command"], Counter())[r["class"]] += 1
        by_kind.setdefault(r["kind"], Counter())[r["class"]] += 1
    reviews: dict[str, list[str]] = {}
    for r in results:
        for f in r["findings"]:
            if f["class"] == "review":
                reviews.setdefault(reason_kind(f["reason"]), []).append(r["name"])
    return {
        "counts": {k: counts.get(k, 0) for k in CLASSES},
        "by_command": {c: {k: n.get(k, 0) for k in CLASSES} for c, n in sorted(by_command.items())},
        "by_kind": {c: {k: n.get(k, 0) for k in CLASSES} for c, n in sorted(by_kind.items())},
        "review_findings_by_kind": {
            k: {"n": len(v), "cases": v} for k, v in sorted(reviews.items(), key=lambda kv: -len(kv[1]))
        },
    }


def print_summary(summary: dict[str, Any], results: list[dict[str, Any]]) -> None:
    header = f"{'command':<15}" + "".join(f"{k:>14}" for k in CLASSES) + f"{'cases':>8}"
    print("\n" + header + "\n" + "─" * len(header))
    for command, counts in summary["by_command"].items():
        print(f"{command:<15}" + "".join(f"{counts[k]:>14}" for k in CLASSES) + f"{sum(counts.values()):>8}")
    total = summary["counts"]
    print(
        "─" * len(header) + f"\n{'all':<15}" + "".join(f"{total[k]:>14}" for k in CLASSES) + f"{sum(total.values()):>8}"
    )
    for klass in ("hang", "traceback", "damaged", "wrong_number"):
        hits = [r for r in results if r["class"] == klass]
        if hits:
            print(f"\n{klass} ({len(hits)}):")
            for r in hits:
                reasons = "; ".join(f["reason"] for f in r["findings"] if f["class"] == klass)
                print(f"  {' '.join(r['argv'])}\n      exit {r['exit_code']}: {reasons[:400]}")
    reviews = [r for r in results if r["class"] == "review"]
    if reviews:
        print(f"\nreview ({len(reviews)}), first lines:")
        for r in reviews:
            reasons = "; ".join(f["reason"] for f in r["findings"] if f["class"] == "review")
            print(f"  {r['name']}: {reasons[:200]}")


def _version() -> str:
    done = subprocess.run([*entry_point(), "--version"], capture_output=True, text=True, check=False, env=child_env())
    return done.stdout.strip()


def _commit() -> str | None:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True, text=True, check=False)
    return done.stdout.strip() or None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a subset of the cases (about 70)")
    parser.add_argument("--only", help="only the cases whose name holds one of these texts (comma-separated)")
    parser.add_argument(
        "--results",
        type=Path,
        help="where to write the results (default: results/new_user_battery.json, -quick with --quick)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary workspace, and say where")
    args = parser.parse_args()
    cases = catalogue()
    if args.quick:
        cases = [c for c in cases if c.quick]
    if args.only:
        cases = [c for c in cases if any(text in c.name for text in args.only.split(","))]
    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="ragmeter-battery-"))
    root = scratch / "ws"
    root.mkdir()
    try:
        ws = build_workspace(root, scratch)
        setup_s = time.monotonic() - started
        print(
            f"workspace {root}: {len(ws.baseline)} entries, set up in {setup_s:.0f} s; {len(cases)} cases", flush=True
        )
        results = run_battery(cases, ws, scratch)
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
        else:
            print(f"kept: {scratch}")
    summary = summarise(results)
    print_summary(summary, results)
    out = {
        "benchmark": "new_user_battery",
        "issue": 45,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "ragmeter": _version(),
        "commit": _commit(),
        "quick": args.quick,
        "only": args.only,
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average_at_end": os.getloadavg(),
        },
        "seconds": round(time.monotonic() - started, 1),
        "setup_seconds": round(setup_s, 1),
        "n_cases": len(results),
        **summary,
        "classes": {
            "ok": "nothing wrong found",
            "review": "a person should judge: see each case's findings",
            "wrong_number": "a printed number differs from an independent computation",
            "damaged": "a file changed that the case did not name, or an output is corrupt",
            "traceback": "a Python traceback was printed",
            "hang": "no exit within the case's timeout",
        },
        "cases": results,
    }
    path = args.results or RESULTS / f"new_user_battery{'-quick' if args.quick else ''}.json"
    path.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\n{len(results)} cases in {out['seconds']:.0f} s; results: {path}")


if __name__ == "__main__":
    main()
