"""What a test may lack, and the one rule for it: skip on a developer's machine, fail in CI.

Two things live outside the repository: MT-RAG's released data in ``../shared/data`` beside the clone
(the human-evaluation files and the IR toy case), and the optional extras (``torch``, ``local``). CI
installs every extra and has the data beside the clone (``.ci/run``), so there a test that finds one
missing fails: a checkout without them would otherwise pass with the conformance tests silently skipped.
Elsewhere the test skips and says what it looked for. CI is recognised by the environment variable ``CI``
set to ``true``, ``1`` or ``yes`` (any case), as GitHub Actions and GitLab CI set it.

Tests use the fixtures ``shared_data`` and ``extra_module``, which return the functions below; reference
libraries the tests compare against (rouge-score, bert-score, …) are in the ``test`` extra and are imported
plainly, so a missing one is an error everywhere.
"""

from __future__ import annotations

import importlib
import json
import os
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
        pytest.fail(f"{what}. CI must have it, so this test fails instead of skipping (CI={os.environ['CI']!r})",
                    pytrace=False)
    pytest.skip(f"{what} (outside CI this test skips; with CI=true it fails)")


def shared_data_file(*parts: str, root: Path = SHARED_DATA) -> Path:
    """The path of ``root/parts…`` when that file exists (``shared_data_file("mtrag", "human_eval_tasks.jsonl")``);
    otherwise :func:`missing` (skip, or fail in CI)."""
    path = root.joinpath(*parts)
    if not path.is_file():
        missing(f"MT-RAG's released data is missing: {path} is not a file; put the shared data folder at "
                f"{root} (../shared/data beside the clone)")
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
    rows = [{"id": f"q{i}", "question": f"question {i}?", "answer": f"the answer is {i % 7}",
             "references": [f"the answer is {i % 5}"], "usage": {"prompt_tokens": 100 + i, "completion_tokens": 9},
             "latency_ms": 1000 + 10 * i} for i in range(n)]
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def run_args(path: Path, out: Path, *extra: str) -> list[str]:
    return ["run", str(path), "--metrics", "lexical,efficiency", "--out", str(out), "--n-resamples", "200",
            "--no-progress", "--format", "json", *extra]
