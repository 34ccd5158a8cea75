"""Every code block of the documentation site runs as shown (:mod:`site_blocks` says how each kind of block runs).

Each page's blocks run in order in an empty folder holding what the page assumes its reader has (their answers as
``answers.jsonl``: the demo's; a log as CSV; MT-RAG predictions: the first released tasks; a folder of
documents). Where a block calls the packaged judge (``--judge local``) or a remote one (``--judge openai
--judge-model gpt-4o-mini``, an Ollama URL), the scripted judge answers over HTTP instead
(:mod:`ragmeter.testing.scripted_judge` behind :class:`~ragmeter.testing.FakeOpenAIServer`): what is checked here is
that the commands, files and flags the pages show work together; the packaged judge's own verdicts are checked in
``tests/judges/test_local_judge.py``. A block no test runs is listed with its reason, and a page with blocks and no
plan fails :func:`test_every_page_with_code_blocks_has_a_plan`.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import site_blocks
from site_blocks import ROOT, PagePlan, code_blocks, command_env, pages, run_page, section, squashed

import ragmeter
from ragmeter.io.demo import demo_file, demo_path
from ragmeter.serve.store import SqliteStore
from ragmeter.testing import FakeOpenAIServer
from ragmeter.testing.scripted_judge import respond

SCRIPTED = "--judge openai --judge-model scripted"


@pytest.fixture(scope="module")
def judge_url() -> Iterator[str]:
    with FakeOpenAIServer(respond) as server:
        yield server.base_url


def judged(url: str, **plan: object) -> PagePlan:
    """A plan whose judges, packaged or remote, are the scripted one at ``url``."""
    instead = {"--judge local": SCRIPTED, 'kind="local"': 'kind="openai", model="scripted"', **plan.pop("instead", {})}
    env = {"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-scripted"}
    return PagePlan(instead=instead, env=env, **plan)  # type: ignore[arg-type]


# ---- what a page's reader has before its first block ------------------------------------------------------------


def ragmeter_command(folder: Path, *args: str) -> None:
    subprocess.run(["ragmeter", *args], cwd=folder, env=command_env(), capture_output=True, timeout=300, check=True)


def demo(folder: Path) -> None:
    ragmeter_command(folder, "demo", "demo")


#: Records of the demo a reader's own files hold: enough for every command, few enough for the suite's time.
READER_RECORDS = 12


def answers(folder: Path) -> None:
    """Their answers (``answers.jsonl``: the demo's first records), and a second file of them (``other.jsonl``);
    the demo's files in ``demo/``."""
    demo(folder)
    lines = (folder / "demo" / "demo.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    for name in ("answers.jsonl", "other.jsonl"):
        (folder / name).write_text("".join(lines[:READER_RECORDS]), encoding="utf-8")


def log_csv(folder: Path) -> None:
    """A log as CSV whose question and answer columns are named otherwise (``query``, ``response_text``)."""
    records = list(ragmeter.read_records(demo_path()))[:READER_RECORDS]
    with (folder / "log.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "query", "response_text", "references", "contexts", "latency_ms"])
        for r in records:
            contexts = [{"doc_id": c.doc_id, "text": c.text} for c in r.contexts]
            writer.writerow([r.id, r.question, r.answer, json.dumps(list(r.references)), json.dumps(contexts), 900])


def mtrag_tasks(folder: Path, shared_data: Callable[..., Path]) -> None:
    """MT-RAG predictions: the first 3 released human-evaluation tasks."""
    lines = shared_data("mtrag", "human_eval_tasks.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:3]
    for name in ("predictions.jsonl", "mtrag_predictions.jsonl"):
        (folder / name).write_text("".join(lines), encoding="utf-8")


def documents(folder: Path) -> None:
    """A folder of documents (``docs/``: Markdown and text) and chunks a retriever serves (``chunks.jsonl``)."""
    (folder / "docs").mkdir()
    (folder / "docs" / "hours.md").write_text(
        "# Opening hours\n\nThe Central Library opens at 9:00 from Monday to Saturday. It closes at 18:00 on "
        "Fridays and at 20:00 on the other weekdays.\n\nOn Sundays the reading room alone is open, from 12:00 "
        "to 17:00.\n",
        encoding="utf-8",
    )
    (folder / "docs" / "fees.txt").write_text(
        "A day pass costs 5 euros. Members borrow up to 12 books at once for three weeks. A lost card is replaced "
        "for 3 euros at the front desk.\n",
        encoding="utf-8",
    )
    (folder / "chunks.jsonl").write_bytes(demo_file("demo-chunks.jsonl"))


def annotators_fill_in(line: str, folder: Path) -> None:
    """The by-hand step "each annotator writes 0 or 1 in every empty cell": Alice's template filled in, and Bob's and
    Carol's from it, Carol disagreeing on every fifth row."""
    assert "each annotator writes 0 or 1" in line
    with (folder / "alice.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    header, body = rows[0], rows[1:]
    for name, flip in (("alice", False), ("bob", False), ("carol", True)):
        votes = ["1" if (i % 3 != 0) != (flip and i % 5 == 0) else "0" for i in range(len(body))]
        filled = [[name] + [cell or vote for cell in row[1:]] for row, vote in zip(body, votes, strict=True)]
        with (folder / f"{name}.csv").open("w", encoding="utf-8", newline="") as handle:
            csv.writer(handle).writerows([header, *filled])


def readme_reader(folder: Path) -> None:
    """A log as CSV, their answers, and the run of the main branch (``runs/main``) a pull request is gated on."""
    log_csv(folder)
    answers(folder)
    ragmeter_command(folder, "run", "answers.jsonl", "--out", "runs/main")


def getting_started_reader(folder: Path, shared_data: Callable[..., Path]) -> None:
    answers(folder)
    log_csv(folder)
    mtrag_tasks(folder, shared_data)


# ---- the pages --------------------------------------------------------------------------------------------------

INSTALLS = "installs ragmeter in a fresh virtual environment, as .ci/run does"


def plan_for(title: str, folder: Path, judge_url: str, shared_data: Callable[..., Path]) -> PagePlan:
    """The plan of the page titled ``title`` (one of :data:`PLANNED`)."""
    if title == "ragmeter":  # the README
        return judged(
            judge_url,
            given=readme_reader,
            not_run={
                0: INSTALLS + "; its command is Getting started's first, run there",
                1: "the test command itself: .ci/run runs it",
                2: "what the demo run prints: test_docs.py's test_the_readme_shows_what_the_demo_run_prints checks it",
            },
        )
    if title == "ragmeter benchmarks":
        return PagePlan(not_run={0: "the benchmarks take minutes to hours on an idle machine: run by hand"})
    if title == "Getting started":
        return judged(
            judge_url,
            given=lambda f: getting_started_reader(f, shared_data),
            not_run={0: INSTALLS},
        )
    if title == "Check the evaluator against your annotators":

        def given(f: Path) -> None:
            for name in ("human_eval_expected.jsonl", "human_eval_ratings_dev.jsonl"):
                (f / name).symlink_to(shared_data("mtrag", name))

        return PagePlan(given=given)
    if title == "Claim level: right, complete, and where it failed":
        return judged(judge_url, given=answers)
    if title == "A test set from your documents: `ragmeter generate`":
        return judged(judge_url, given=documents)
    if title == "LLM judges (seed 002)":
        return judged(judge_url, given=answers, instead={"http://localhost:11434/v1": judge_url})
    if title == "Labels: seed 003's taxonomy":
        return judged(judge_url, given=answers, by_hand=annotators_fill_in)
    if title == "MT-RAG's pipeline":
        return judged(judge_url, given=lambda f: mtrag_tasks(f, shared_data))
    if title == "Past one machine: `--engine ray`":
        return PagePlan(
            not_run={
                0: "starts Ray for one run (100 s on 2 cores); tests/engine/test_distributed.py runs `ragmeter run "
                "SHARDS --engine ray` on folders of shards against the local run's items, on a Ray of 2 CPUs",
                1: "starts a 16-CPU Ray cluster, which this machine cannot hold",
            }
        )
    if title == "Quick start: library":
        return judged(judge_url, given=answers)
    if title == "Input formats":
        return PagePlan()
    raise AssertionError(f"no plan for the page {title!r}")


#: Pages whose blocks :func:`test_the_pages_code_blocks_run_as_shown` runs by :func:`plan_for`.
PLANNED = (
    "ragmeter",
    "ragmeter benchmarks",
    "Getting started",
    "Check the evaluator against your annotators",
    "Claim level: right, complete, and where it failed",
    "A test set from your documents: `ragmeter generate`",
    "LLM judges (seed 002)",
    "Labels: seed 003's taxonomy",
    "MT-RAG's pipeline",
    "Past one machine: `--engine ray`",
    "Quick start: library",
    "Input formats",
)
#: Pages whose blocks a test of their own runs, checking more than what they print ("From your traces": in
#: ``tests/io/traces/test_traces_from_frameworks.py``, on a real LangChain pipeline's export).
OWN_TESTS = (
    "From your traces",
    "Compare two runs",
    "Use it in CI",
    "Bahasa Indonesia",
    "How many labels do I need?",
    "In production: `ragmeter serve`",
)


def test_every_page_with_code_blocks_has_a_plan() -> None:
    with_blocks = {title for title, text in pages().items() if code_blocks(text)}
    assert with_blocks == set(PLANNED) | set(OWN_TESTS)


@pytest.mark.parametrize("title", PLANNED)
def test_the_pages_code_blocks_run_as_shown(title: str, tmp_path: Path, judge_url: str, shared_data) -> None:
    run_page(title, tmp_path, plan_for(title, tmp_path, judge_url, shared_data))


def test_the_compare_sections_commands_and_prose_are_the_comparisons(tmp_path: Path) -> None:
    run_page("Compare two runs", tmp_path)
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
    run_page("Use it in CI", tmp_path)
    assert (tmp_path / "gate.xml").is_file() and (tmp_path / "summary.md").is_file()
    assert (tmp_path / "test_readme_example.py").is_file()  # the pytest example was run


def test_the_ci_section_points_to_examples_that_exist() -> None:
    paths = re.findall(r"`(examples/[^`]+)`", section("Use it in CI"))
    assert paths and all((ROOT / path).is_file() for path in paths)


def test_the_indonesian_sections_commands_run_as_shown(tmp_path: Path) -> None:
    run_page("Bahasa Indonesia", tmp_path)
    assert (tmp_path / "id-auto" / "items.jsonl").is_file() and (tmp_path / "id-fixed" / "items.jsonl").is_file()


def test_the_labels_sections_commands_run_as_shown(tmp_path: Path) -> None:
    run_page("How many labels do I need?", tmp_path)
    assert len((tmp_path / "labelled.csv").read_text(encoding="utf-8").splitlines()) == 21  # header + 20 answers


def test_the_production_sections_commands_trip_a_real_prometheus_alert(tmp_path: Path) -> None:
    for tool in ("prometheus", "promtool"):
        if shutil.which(tool) is None:
            pytest.skip(f"no {tool} on this machine (apt-get install -y prometheus; .ci/run installs it)")
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    run_page("In production: `ragmeter serve`", tmp_path)
    with SqliteStore(tmp_path / "prod.sqlite") as store:
        checks = store.checks()
    drops = [c for c in checks if c["status"] == "drop"]
    assert drops and all(c["baseline"] == "baseline" for c in checks)
    (verdict,) = drops[-1]["verdicts"]
    assert verdict["metric"] == "faithfulness_offline" and verdict["difference"] < 0
    assert (verdict["n_baseline"], verdict["n_window"]) == (45, 35)  # the 10 declining answers: undefined in traces


def test_a_page_that_shows_what_its_command_does_not_print_fails(tmp_path: Path, monkeypatch) -> None:
    """The runner is no formality: a figure the command does not print, or an exit code it does not give, fails."""
    shown = "# Probe\n\n```bash\nragmeter run --demo --out a\n```\n\n```text\nOverlap  0.999\n```\n"
    monkeypatch.setattr(site_blocks, "section", lambda title: shown)
    with pytest.raises(AssertionError, match="shown but not printed"):
        run_page("Probe", tmp_path)
    monkeypatch.setattr(site_blocks, "section", lambda title: "# Probe\n\n```bash\nragmeter run nothing.jsonl\n```\n")
    with pytest.raises(AssertionError, match=r"nothing\.jsonl"):
        run_page("Probe", tmp_path)
