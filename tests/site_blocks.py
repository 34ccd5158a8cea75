"""The documentation site's code blocks, run as a reader would run them.

A page is a Markdown file of ``docs/`` (one that only includes another file, as the home page includes the README,
stands for that file), named by its ``# title``. :func:`run_page` runs its blocks in order in one folder:

- ``bash``: each command (``\\`` continuations joined; a plain ``ragmeter …`` one run by ``ragmeter.cli.main`` in this
  process, in the page's folder and environment, any other by bash) exits as its comment says (``# exit 1: …``, else 0)
  and prints the figures its comment quotes (numbers with two decimals or more: ``# exit 1: the low end is 0.2757``);
  one ending in ``&`` runs in the background until the page is done. A line that is only a comment (``# … each annotator
  writes …``) is a step people do by hand: the page's plan does it.
- ``text``: the output of the block before it holds its lines, in order, spaces aside ("…" stands for any text and a
  line of "…" for any lines). A text block of ``$ COMMAND`` lines is a transcript: each command runs, and the lines
  after it are in its output.
- ``python``: tests (``def test_``) pass under pytest, or fail with the message of the text block after them; other
  code runs as a script (with the blocks of the page before it that are not tests), and prints what a text block
  after it shows.
- ``json``: a record of ragmeter's own format, which ``ragmeter validate`` accepts.

A page's :class:`PagePlan` says what the reader has before the first block (their own ``answers.jsonl``, a log,
a trace file), which commands run otherwise here and why (the packaged judge is the scripted one, served over HTTP),
what the by-hand steps are, and which blocks no test runs, each with its reason.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ragmeter.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
INCLUDE = re.compile(r"<!-- include (\S+) -->")
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.DOTALL | re.MULTILINE)
#: What makes a command bash's to run: operators, redirections, substitutions, globs, a variable set before it.
SHELL_SYNTAX = re.compile(r"[|&;<>`$*?(){}]|^\s*\w+=")


def pages() -> dict[str, str]:
    """Every page of the site: its title → its Markdown, an included file in place of the page that includes it."""
    found = {}
    for path in sorted(DOCS.rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        text = INCLUDE.sub(lambda m: (ROOT / m.group(1)).read_text(encoding="utf-8"), text)
        title = re.match(r"# (.+)\n", text)
        assert title is not None, f"{path} has no '# title' line first"
        found[title.group(1)] = text
    return found


def section(title: str) -> str:
    """The Markdown of the page titled ``# title``."""
    return pages()[title]


def code_blocks(text: str) -> list[tuple[str, str]]:
    """The fenced code blocks of ``text``: (language, body), in order."""
    return BLOCK.findall(text)


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


@dataclass(frozen=True)
class PagePlan:
    """How a page's blocks run here; see the module docstring.

    ``given``: writes into the folder what the reader has before the first block. ``instead``: text of a command →
    what runs in its place, and ``env``: variables set for every command (with ``instead``, the packaged judge's
    place taken by the scripted one). ``by_hand``: does the step a comment-only line names. ``not_run``: block
    index → why no test runs that block."""

    given: Callable[[Path], None] | None = None
    instead: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    by_hand: Callable[[str, Path], None] | None = None
    not_run: Mapping[int, str] = field(default_factory=dict)


def command_env(extra: Mapping[str, str] = {}) -> dict[str, str]:
    """The environment the commands run in: this interpreter's ``ragmeter`` first on the PATH."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path, **extra}


def run_page(title: str, folder: Path, plan: PagePlan = PagePlan()) -> int:
    """Run the blocks of the page titled ``title`` in ``folder`` as the plan says; the number of blocks run, which
    with the plan's ``not_run`` is every block of the page."""
    blocks = code_blocks(section(title))
    assert set(plan.not_run) <= set(range(len(blocks))), f"{title}: not_run names a block the page does not have"
    if plan.given is not None:
        plan.given(folder)
    runner = _Runner(folder, plan)
    try:
        for number, (kind, body) in enumerate(blocks):
            if number in plan.not_run:
                runner.output = ""
                continue
            following = blocks[number + 1] if number + 1 < len(blocks) else None
            runner.run(kind, body, following if following and number + 1 not in plan.not_run else None)
    finally:
        runner.stop_background()
    return len(blocks) - len(plan.not_run)


class _Runner:
    def __init__(self, folder: Path, plan: PagePlan) -> None:
        self.folder, self.plan = folder, plan
        self.env = command_env(plan.env)
        self.output = ""  # what the block before printed
        self.scripts: list[str] = []  # the page's python code blocks so far, run before the next one
        self.background: list[subprocess.Popen[bytes]] = []

    def run(self, kind: str, body: str, following: tuple[str, str] | None) -> None:
        if kind == "text":
            if body.lstrip().startswith("$ "):
                self.transcript(body)
            else:
                assert unshown(body, self.output) == [], f"shown but not printed:\n{self.output[-3000:]}"
        elif kind == "bash":
            self.output = "".join(self.command(line, code) for line, code in shell_commands(body))
        elif kind == "python":
            self.python(body, shows_failure=following is not None and following[0] == "text" and "def test_" in body)
        elif kind == "json":
            (self.folder / "record.jsonl").write_text(squashed(body) + "\n", encoding="utf-8")
            self.output = self.command("ragmeter validate record.jsonl", 0)
        else:
            raise AssertionError(f"a {kind} block: say how it runs, or why it does not (PagePlan.not_run)")

    def command(self, line: str, expected: int) -> str:
        if line.lstrip().startswith("#"):
            assert self.plan.by_hand is not None, f"a step done by hand, and no plan for it: {line}"
            self.plan.by_hand(line, self.folder)
            return ""
        shown = line.partition("#")[0].rstrip()
        runs = self.instead(shown)
        if shown.endswith("&"):
            self.background.append(
                subprocess.Popen(
                    ["bash", "-c", runs[:-1]],
                    cwd=self.folder,
                    env=self.env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
            return ""
        done = self.in_process(runs) or subprocess.run(
            ["bash", "-c", runs],
            cwd=self.folder,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == expected, f"{line}\n(ran: {runs})\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        comment = line.partition("#")[2]
        assert [n for n in re.findall(r"\d+\.\d{2,}", comment) if n not in done.stdout] == [], line
        return done.stdout

    def in_process(self, command: str) -> subprocess.CompletedProcess[str] | None:
        """A plain ``ragmeter …`` command (no shell syntax) run by ``ragmeter.cli.main`` in this process, in the
        folder and environment it would have, so that the suite does not pay a second of start-up and a model load
        for each of the site's commands; ``None`` for any other command, which bash runs."""
        if SHELL_SYNTAX.search(command):
            return None
        argv = shlex.split(command)
        if not argv or argv[0] != "ragmeter":
            return None
        out, err = io.StringIO(), io.StringIO()
        saved_env, saved_cwd = dict(os.environ), Path.cwd()
        os.environ.update(self.plan.env)
        os.chdir(self.folder)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = main(argv[1:])
                except SystemExit as exit:  # argparse's refusals
                    code = exit.code if isinstance(exit.code, int) else 0 if exit.code is None else 1
        finally:
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
        return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())

    def instead(self, code: str) -> str:
        for text, replacement in self.plan.instead.items():
            code = code.replace(text, replacement)
        return code

    def transcript(self, body: str) -> None:
        steps = re.split(r"^\$ ", body.replace("\\\n", " "), flags=re.MULTILINE)[1:]
        for step in steps:
            line, _, shown = step.partition("\n")
            printed = self.command(line, 0)
            assert unshown(shown, printed) == [], f"{line}: shown but not printed:\n{printed[-3000:]}"

    def python(self, body: str, *, shows_failure: bool) -> None:
        body = self.instead(body)
        if "def test_" in body:
            path = self.folder / "test_readme_example.py"
            path.write_text(body, encoding="utf-8")
            command = [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "--tb=native",
                "-p",
                "no:cacheprovider",
                "-p",
                "no:randomly",
                path.name,
            ]
            expected = 1 if shows_failure else 0
        else:
            self.scripts.append(body)
            path = self.folder / "example.py"
            path.write_text("\n\n".join(self.scripts), encoding="utf-8")
            command, expected = [sys.executable, path.name], 0
        done = subprocess.run(
            command, cwd=self.folder, env=self.env, capture_output=True, text=True, timeout=600, check=False
        )
        assert done.returncode == expected, f"{body[:200]}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        self.output = done.stdout

    def stop_background(self) -> None:
        for process in self.background:
            process.terminate()
            process.wait(timeout=60)
