"""The rule of tests/conftest.py: a test that lacks MT-RAG's released data (or an optional extra) skips on a
developer's machine and fails in CI, saying what is missing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

Finder = Callable[..., Path]


@pytest.mark.parametrize("value", ["true", "TRUE", "True", "1", "yes", " true "])
def test_a_missing_file_fails_in_ci(
    shared_data: Finder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.fail.Exception) as failed:
        shared_data("mtrag", "human_eval_tasks.jsonl", root=tmp_path)
    message = str(failed.value)
    assert f"{tmp_path / 'mtrag' / 'human_eval_tasks.jsonl'} is not a file" in message
    assert "CI must have it" in message


@pytest.mark.parametrize("value", [None, "", "false", "0", "no"])
def test_a_missing_file_skips_outside_ci(
    shared_data: Finder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.skip.Exception) as skipped:
        shared_data("ir", "toy_case.json", root=tmp_path)
    message = str(skipped.value)
    assert f"{tmp_path / 'ir' / 'toy_case.json'} is not a file" in message
    assert "with CI=true it fails" in message


@pytest.mark.parametrize("value", [None, "true"])
def test_a_present_file_is_returned_in_and_out_of_ci(
    shared_data: Finder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    (tmp_path / "mtrag").mkdir()
    (tmp_path / "mtrag" / "human_eval_expected.jsonl").write_text("{}\n", encoding="utf-8")
    assert (
        shared_data("mtrag", "human_eval_expected.jsonl", root=tmp_path)
        == tmp_path / "mtrag" / "human_eval_expected.jsonl"
    )


def test_a_folder_where_the_file_should_be_counts_as_missing(
    shared_data: Finder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    (tmp_path / "mtrag" / "human_eval_tasks.jsonl").mkdir(parents=True)
    with pytest.raises(pytest.fail.Exception):
        shared_data("mtrag", "human_eval_tasks.jsonl", root=tmp_path)


def test_the_default_root_is_shared_data_beside_the_clone(
    shared_data: Finder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # tests/conftest.py → the clone (/work/main) → its parent holds shared/data
    beside = Path(__file__).resolve().parents[3] / "shared" / "data"
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        shared_data("no-such-folder", "absent.jsonl")
    assert str(beside / "no-such-folder" / "absent.jsonl") in str(skipped.value)


def test_a_missing_extra_fails_in_ci_and_skips_elsewhere(
    extra_module: Callable[[str, str], ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception) as failed:
        extra_module("ragmeter_no_such_module", "local")
    assert "pip install 'ragmeter[local]'" in str(failed.value)
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception) as skipped:
        extra_module("ragmeter_no_such_module", "torch")
    assert "pip install 'ragmeter[torch]'" in str(skipped.value)
    assert extra_module("json", "none") is __import__("json")  # an importable module is returned
