"""The CI examples in ``examples/ci/`` work as written: every ragmeter command of each file runs, with bash, in a
fixture repository, and the exit codes are the ones the CI system would see.

The fixture repository holds what a team's repository would: ``baseline/``, a run folder made with ``ragmeter
run`` on the bundled demo, and ``eval/answers.jsonl``, the answers the team's own step would write: the demo's
``gate`` variant (significantly worse on token F1, so the gate fails) or the baseline's own input (so it passes).

Only ragmeter's commands are run; the test skips, and lists, what needs the CI system or the team: GitHub's
``uses:`` actions (checkout, setup-python, the test report, the artifact upload), ``pip install``, the team's step
that answers the questions, and the git commands that commit a refreshed baseline. A ``run:`` step or script line
is ragmeter's when its command's first word is ``ragmeter``; a step that mixes ragmeter's commands with others
fails the test, so that no ragmeter command goes unrun. The CI system's rules are followed as far as these files
use them: a GitHub step runs when no step before it failed, or always under ``if: ${{ !cancelled() }}``, as
``bash -e`` (GitHub's default shell on Linux); a GitLab job runs ``before_script`` then ``script`` line by line
and stops at the first failing line. The paths the files upload (artifacts, JUnit reports) must exist after the
job.

The YAML is read with PyYAML, which the ``test`` extra brings in (Ray and transformers depend on it).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragmeter.cli import main
from ragmeter.io.demo import demo_path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "ci"
ALWAYS = "${{ !cancelled() }}"
#: Keys of a .gitlab-ci.yml that are not jobs.
GITLAB_GLOBALS = {
    "stages",
    "variables",
    "default",
    "include",
    "workflow",
    "image",
    "services",
    "cache",
    "before_script",
    "after_script",
}


@dataclass
class Job:
    """What a job did: the exit code of each command it ran (by step name or command), what it skipped, and
    whether it failed."""

    ran: dict[str, int] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    failed: bool = False


def is_ragmeter(command: str) -> bool:
    return shlex.split(command)[0] == "ragmeter"


def commands(script: str) -> list[str]:
    """The commands of a ``run:`` script: its lines, without blank lines and comments."""
    return [line.strip() for line in script.splitlines() if line.strip() and not line.strip().startswith("#")]


def environment(repo: Path) -> dict[str, str]:
    """This interpreter's ``ragmeter`` first on PATH, and the step summary file GitHub provides."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["GITHUB_STEP_SUMMARY"] = str(repo / "step-summary.md")
    return env


def bash(script: str, repo: Path) -> int:
    done = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=repo,
        env=environment(repo),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode not in (0, 1):  # 2 and above: the example is wrong, not the gate
        pytest.fail(f"{script!r} exited {done.returncode}:\n{done.stderr}")
    return done.returncode


def run_github_job(workflow: dict[str, Any], name: str, repo: Path) -> Job:
    job = Job()
    for step in workflow["jobs"][name]["steps"]:
        condition = step.get("if")
        assert condition in (None, ALWAYS), f"the test knows no condition {condition!r}"
        if job.failed and condition is None:
            continue
        if "uses" in step:
            job.skipped.append(step["uses"])
            for path in uploaded(step):
                assert (repo / path).exists(), f"{step['uses']} uploads {path}, which no step wrote"
            continue
        ours = [is_ragmeter(c) for c in commands(step["run"])]
        assert all(ours) or not any(ours), f"step {step['name']!r} mixes ragmeter's commands with others"
        if not all(ours):
            job.skipped.append(step["name"])
            continue
        job.ran[step["name"]] = code = bash(step["run"], repo)
        job.failed |= code != 0
    return job


def uploaded(step: dict[str, Any]) -> list[str]:
    """The paths an upload or test-report action reads."""
    given = step.get("with", {})
    if "path" not in given:
        return []
    return [p.strip() for p in given["path"].replace(",", "\n").splitlines() if p.strip()]


def gitlab_job(pipeline: dict[str, Any], name: str) -> dict[str, Any]:
    """The job with its ``extends:`` template merged in (one level, as these files use it)."""
    job = dict(pipeline[name])
    return {**pipeline[job.pop("extends")], **job} if "extends" in job else job


def run_gitlab_job(pipeline: dict[str, Any], name: str, repo: Path) -> Job:
    spec, job = gitlab_job(pipeline, name), Job()
    for line in [*spec.get("before_script", []), *spec["script"]]:
        assert isinstance(line, str), f"{name}: a script line YAML reads as {line!r} (quote a line holding ': ')"
        if not is_ragmeter(line):
            job.skipped.append(line)
            continue
        job.ran[line] = code = bash(line, repo)
        if code != 0:
            job.failed = True
            break
    artifacts = spec.get("artifacts", {})
    if job.failed:
        assert artifacts.get("when") == "always", "a failed gate's reports must still be kept"
    for path in [*artifacts.get("paths", []), *artifacts.get("reports", {}).get("junit", [])]:
        assert (repo / path).exists(), f"{name} keeps {path}, which no command wrote"
    return job


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``ragmeter run --out baseline`` folder of the demo, made once."""
    folder = tmp_path_factory.mktemp("baseline") / "baseline"
    assert main(["run", str(demo_path("v1")), "--out", str(folder)]) == 0
    assert {p.name for p in folder.iterdir()} >= {"items.jsonl", "summary.json", "run.json"}
    return folder


def fixture_repo(tmp_path: Path, baseline: Path, candidate: str) -> Path:
    """A team's repository: the committed baseline and the answers of the demo's ``candidate`` variant."""
    repo = tmp_path / "repo"
    shutil.copytree(baseline, repo / "baseline")
    (repo / "eval").mkdir()
    shutil.copyfile(demo_path(candidate), repo / "eval" / "answers.jsonl")
    return repo


def junit_failures(path: Path) -> dict[str, bool]:
    """test case name → failed, from a JUnit XML file."""
    return {case.get("name"): case.find("failure") is not None for case in ET.parse(path).iter("testcase")}


def headings(summary: Path) -> list[str]:
    return [line for line in summary.read_text(encoding="utf-8").splitlines() if line.startswith("#")]


GITHUB_SKIPPED = [
    "actions/checkout@v4",
    "actions/setup-python@v5",
    "Install ragmeter",
    "Answer the evaluation questions",
    "dorny/test-reporter@v1",
    "actions/upload-artifact@v4",
]


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    return yaml.safe_load((EXAMPLES / "github-actions.yml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def pipeline() -> dict[str, Any]:
    return yaml.safe_load((EXAMPLES / "gitlab-ci.yml").read_text(encoding="utf-8"))


def test_the_github_workflow_fails_a_worse_candidate(tmp_path: Path, baseline: Path, workflow: dict[str, Any]) -> None:
    repo = fixture_repo(tmp_path, baseline, "gate")
    job = run_github_job(workflow, "gate", repo)
    assert job.skipped == GITHUB_SKIPPED
    assert job.ran == {"Score the answers": 0, "Compare with the baseline": 1}
    assert junit_failures(repo / "requirements.xml") == {"token_f1>=0.25": False, "p95_latency_ms<=10000": False}
    assert junit_failures(repo / "gate.xml") == {"token_f1 (regression)": True, "overlap (non-inferiority 0.02)": True}
    summary = headings(repo / "step-summary.md")
    assert summary[0].startswith("### Requirements") and summary[0].endswith("pass")
    assert summary[1].startswith("### Gate: ") and summary[1].endswith("FAIL")


def test_the_github_workflow_passes_the_baselines_own_answers(
    tmp_path: Path, baseline: Path, workflow: dict[str, Any]
) -> None:
    repo = fixture_repo(tmp_path, baseline, "v1")
    job = run_github_job(workflow, "gate", repo)
    assert job.skipped == GITHUB_SKIPPED
    assert job.ran == {"Score the answers": 0, "Compare with the baseline": 0}
    assert not any(junit_failures(repo / "gate.xml").values())
    assert headings(repo / "step-summary.md")[1].endswith("pass")


def test_the_refreshed_baseline_is_what_main_answers(tmp_path: Path, baseline: Path, workflow: dict[str, Any]) -> None:
    repo = fixture_repo(tmp_path, baseline, "gate")
    job = run_github_job(workflow, "refresh-baseline", repo)
    assert job.skipped == [
        "actions/checkout@v4",
        "actions/setup-python@v5",
        "Install ragmeter",
        "Answer the evaluation questions",
        "Commit the baseline",
    ]
    assert job.ran == {"Score main's answers as the new baseline": 0}
    assert run_github_job(workflow, "gate", repo).ran == {"Score the answers": 0, "Compare with the baseline": 0}


GITLAB_SKIPPED = ["pip install ragmeter", "python -m your_rag_app.answer_eval_set --out eval/answers.jsonl"]


@pytest.mark.parametrize(("candidate", "gate_exit"), [("gate", 1), ("v1", 0)])
def test_the_gitlab_job_gates_the_candidate(
    tmp_path: Path, baseline: Path, pipeline: dict[str, Any], candidate: str, gate_exit: int
) -> None:
    repo = fixture_repo(tmp_path, baseline, candidate)
    job = run_gitlab_job(pipeline, "ragmeter-gate", repo)
    assert job.skipped == GITLAB_SKIPPED
    assert [(command.split()[1], code) for command, code in job.ran.items()] == [("run", 0), ("compare", gate_exit)]
    assert any(junit_failures(repo / "gate.xml").values()) == bool(gate_exit)
    summary = headings(repo / "gate-summary.md")
    assert summary[0].startswith("### Requirements")
    assert summary[1].startswith("### Gate: ") and summary[1].endswith("FAIL" if gate_exit else "pass")


def test_the_gitlab_refresh_job_rescores_the_baseline(tmp_path: Path, baseline: Path, pipeline: dict[str, Any]) -> None:
    repo = fixture_repo(tmp_path, baseline, "gate")
    job = run_gitlab_job(pipeline, "ragmeter-refresh-baseline", repo)
    assert job.skipped[:2] == GITLAB_SKIPPED
    assert [line.split()[0] for line in job.skipped[2:]] == ["git"] * 5
    assert list(job.ran.values()) == [0]
    assert run_gitlab_job(pipeline, "ragmeter-gate", repo).ran.popitem()[1] == 0


def test_every_job_of_the_examples_is_exercised(workflow: dict[str, Any], pipeline: dict[str, Any]) -> None:
    assert set(workflow["jobs"]) == {"gate", "refresh-baseline"}
    assert {k for k in pipeline if not k.startswith(".") and k not in GITLAB_GLOBALS} == {
        "ragmeter-gate",
        "ragmeter-refresh-baseline",
    }
