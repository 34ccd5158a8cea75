"""What a test may lack, and the one rule for it: skip on a developer's machine, fail in CI.

Two things live outside the repository: MT-RAG's released data in ``../shared/data`` beside the clone
(the human-evaluation files and the IR toy case), and the optional extras (``torch``, ``local``). CI
installs every extra and has the data beside the clone (``.ci/run``), so there a test that finds one
missing fails: a checkout without them would otherwise pass with the conformance tests silently skipped.
Elsewhere the test skips and says what it looked for. CI is recognised by the environment variable ``CI``
set to ``true``, ``1`` or ``yes`` (any case), as GitHub Actions and GitLab CI set it.

Tests use the fixtures ``shared_data`` and ``extra_module``, which return the functions below; reference
libraries the tests compare against (rouge-score, bert-score, …) are in the ``test`` extra and are imported
plainly, so a missing one is an error everywhere. Two whose dependencies are too heavy to install (RAGChecker's
claim metrics, TREC's nuggetizer scores) are downloaded as wheels and their metric modules imported alone
(:func:`reference_module`); a registry that cannot be reached is missing data as above.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

#: The plugins pyproject.toml's addopts block, blocked as well in every pytest process the tests start (xdist
#: workers, pytester subprocesses), which inherit the environment but not the repository's configuration.
UNUSED_PLUGINS = "-p no:phoenix -p no:langsmith_plugin"
os.environ["PYTEST_ADDOPTS"] = f"{os.environ.get('PYTEST_ADDOPTS', '')} {UNUSED_PLUGINS}".strip()

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
CI_VALUES = ("true", "1", "yes")


def in_ci() -> bool:
    """True when the environment variable ``CI`` is ``true``, ``1`` or ``yes`` (any case, spaces ignored)."""
    return os.environ.get("CI", "").strip().lower() in CI_VALUES


def missing(what: str) -> NoReturn:
    """Fail (in CI) or skip (elsewhere) the running test because ``what`` is missing."""
    if in_ci():
        pytest.fail(
            f"{what}. CI must have it, so this test fails instead of skipping (CI={os.environ['CI']!r})", pytrace=False
        )
    pytest.skip(f"{what} (outside CI this test skips; with CI=true it fails)")


def shared_data_file(*parts: str, root: Path = SHARED_DATA) -> Path:
    """The path of ``root/parts…`` when that file exists (``shared_data_file("mtrag", "human_eval_tasks.jsonl")``);
    otherwise :func:`missing` (skip, or fail in CI)."""
    path = root.joinpath(*parts)
    if not path.is_file():
        missing(
            f"MT-RAG's released data is missing: {path} is not a file; put the shared data folder at "
            f"{root} (../shared/data beside the clone)"
        )
    return path


def extra_module(name: str, extra: str) -> ModuleType:
    """The module ``name`` of the optional extra ``extra``; when it cannot be imported, :func:`missing`."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        missing(f"{name} cannot be imported ({exc}): install the extra with pip install 'ragmeter[{extra}]'")


@pytest.fixture(scope="session")
def shared_data() -> Callable[..., Path]:
    """``shared_data("mtrag", "human_eval_tasks.jsonl")``: the path, or a skip (a failure in CI)."""
    return shared_data_file


@pytest.fixture(scope="session", name="extra_module")
def extra_module_fixture() -> Callable[[str, str], ModuleType]:
    """``extra_module("torch", "torch")``: the module, or a skip (a failure in CI)."""
    return extra_module


#: A records file for the command's tests: n records with references, token usage and latency.
def records_file(tmp_path: Path, n: int = 40) -> Path:
    rows = [
        {
            "id": f"q{i}",
            "question": f"question {i}?",
            "answer": f"the answer is {i % 7}",
            "references": [f"the answer is {i % 5}"],
            "usage": {"prompt_tokens": 100 + i, "completion_tokens": 9},
            "latency_ms": 1000 + 10 * i,
        }
        for i in range(n)
    ]
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def run_args(path: Path, out: Path, *extra: str) -> list[str]:
    return [
        "run",
        str(path),
        "--metrics",
        "lexical,efficiency",
        "--out",
        str(out),
        "--n-resamples",
        "200",
        "--no-progress",
        "--format",
        "json",
        *extra,
    ]


#: Where reference implementations that are not installed (their dependencies are too heavy or conflict with
#: ours) are unpacked from their wheels, downloaded once from the package registry.
REFERENCE_WHEELS = Path.home() / ".cache" / "ragmeter-tests" / "wheels"


def reference_module(requirement: str, dotted: str) -> ModuleType:
    """The module ``dotted`` of the wheel ``requirement`` (``"ragchecker==0.1.9"``), downloaded without its
    dependencies and imported without running its packages' ``__init__`` (which import them): a reference
    implementation's metric code, run as its authors wrote it. When the registry cannot be reached,
    :func:`missing`."""
    unpacked = REFERENCE_WHEELS / requirement.replace("==", "-")
    if not unpacked.is_dir():
        download = REFERENCE_WHEELS / "downloads"
        download.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--dest",
            str(download),
            requirement,
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
        name = requirement.split("==")[0].replace("-", "_")
        wheels = sorted(download.glob(f"{name}-{requirement.split('==')[1]}-*.whl"))
        if done.returncode or not wheels:
            missing(
                f"the reference implementation {requirement} could not be downloaded from the package "
                f"registry: {done.stderr.strip()[-300:]}"
            )
        staging = Path(tempfile.mkdtemp(dir=REFERENCE_WHEELS))
        with zipfile.ZipFile(wheels[0]) as wheel:
            wheel.extractall(staging)
        try:
            staging.rename(unpacked)
        except OSError:  # another test process unpacked it first
            shutil.rmtree(staging)
    parts = dotted.split(".")
    for depth in range(1, len(parts)):
        package = ".".join(parts[:depth])
        if package not in sys.modules:
            module = ModuleType(package)
            module.__path__ = [str(unpacked.joinpath(*parts[:depth]))]
            sys.modules[package] = module
    return importlib.import_module(dotted)
