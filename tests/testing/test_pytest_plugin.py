"""The pytest plugin (``ragmeter.testing.pytest_plugin``), run with ``pytester`` on suites of users' tests:
a passing and a failing suite, in one process and under pytest-xdist, a judge fixture overridden with the fake
judge server, and the session judge shared by the xdist workers (started once, in the controller)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import UNUSED_PLUGINS

from ragmeter.cli.commands import main as ragmeter_command
from ragmeter.testing import FakeOpenAIServer, scripted_judge

pytest_plugins = ["pytester"]

N_ITEMS = 12
#: The items the bad run answers wrongly; the failure lists the first five of them as the worst.
BAD = [f"q{i:02d}" for i in range(4, 13)]

HASHING = """
import pytest
from ragmeter import Settings

@pytest.fixture(scope="session")
def ragmeter_settings():
    return Settings(embedder="hashing")
"""


def _records(bad: list[str]) -> list[dict]:
    out = []
    for i in range(1, N_ITEMS + 1):
        item = f"q{i:02d}"
        fact = f"The museum {i} opens at {i} o'clock."
        answer = "Bananas grow on tall plants [CIT:fruit]." if item in bad else f"{fact[:-1]} [CIT:m{i}]."
        out.append(
            {
                "id": item,
                "question": f"When does museum {i} open?",
                "answer": answer,
                "references": [fact],
                "contexts": [
                    {"doc_id": f"m{i}", "text": fact},
                    {"doc_id": "fruit", "text": "Bananas grow on tall plants."},
                ],
            }
        )
    return out


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture(autouse=True)
def _unused_plugins_blocked(pytester: pytest.Pytester) -> None:
    """The suites' own pytest (and its xdist workers) skip the plugins ours skips: pytester clears
    PYTEST_ADDOPTS, so they go in the suite's ini file."""
    pytester.makeini(f"[pytest]\naddopts = {UNUSED_PLUGINS}\n")


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Good and bad answer files, a judged file, and a baseline run of the good answers (by the command)."""
    folder = tmp_path_factory.mktemp("plugin-data")
    good = _write(folder / "good.jsonl", _records([]))
    bad = _write(folder / "bad.jsonl", _records(BAD))
    judged = _write(folder / "judged.jsonl", scripted_judge.records(10))
    baseline = folder / "baseline"
    code = ragmeter_command(
        [
            "run",
            str(good),
            "--metrics",
            "token_f1,overlap",
            "--embedder",
            "hashing",
            "--out",
            str(baseline),
            "--no-progress",
            "--format",
            "json",
        ]
    )
    assert code == 0
    return {"good": good, "bad": bad, "judged": judged, "baseline": baseline}


def _passing_suite(pytester: pytest.Pytester, data: dict[str, Path], module: str = "test_quality") -> None:
    pytester.makeconftest(HASHING)
    pytester.makepyfile(
        **{
            module: f"""
        import json

        def test_quality(ragmeter_eval):
            run = ragmeter_eval({str(data["good"])!r}, metrics=["token_f1", "overlap"])
            run.require("token_f1 >= 0.6", "overlap >= 0.5").require_no_regression(
                {str(data["baseline"])!r}, metrics=["token_f1", "overlap"])
            summary = json.loads((run.folder / "summary.json").read_text())
            assert {{s["metric"] for s in summary["summaries"]}} == {{"token_f1", "overlap"}}

        def test_non_inferior(ragmeter_eval):
            run = ragmeter_eval({str(data["good"])!r}, metrics=["token_f1"], name="again")
            run.require_no_regression({str(data["baseline"])!r}, metrics=["token_f1"], margin=0.05)
            assert run.folder.name == "again"

        def test_a_run_folder_is_a_baseline(ragmeter_eval):
            first = ragmeter_eval({str(data["good"])!r}, metrics=["token_f1"], name="base")
            ragmeter_eval({str(data["good"])!r}, metrics=["token_f1"]).require_no_regression(first.folder)
    """
        }
    )


def _failing_suite(pytester: pytest.Pytester, data: dict[str, Path], module: str = "test_quality") -> None:
    pytester.makeconftest(HASHING)
    pytester.makepyfile(
        **{
            module: f"""
        def test_threshold(ragmeter_eval):
            ragmeter_eval({str(data["bad"])!r}, metrics=["token_f1", "overlap"]).require("token_f1 >= 0.6")

        def test_regression(ragmeter_eval):
            run = ragmeter_eval({str(data["bad"])!r}, metrics=["token_f1", "overlap"])
            run.require_no_regression({str(data["baseline"])!r}, metrics=["token_f1"])

        def test_a_ceiling_that_holds(ragmeter_eval):
            ragmeter_eval({str(data["bad"])!r}, metrics=["token_f1"]).require("token_f1 <= 0.9")
    """
        }
    )


def _check_passing(result: pytest.RunResult) -> None:
    result.assert_outcomes(passed=3)


def _check_failing(result: pytest.RunResult, passed: int = 1) -> None:
    result.assert_outcomes(passed=passed, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: ragmeter: 1 of 1 requirements not met by bad (12 items; run folder *)",
            "*metric*value*interval*threshold*p*verdict",
            "*token_f1*0.25*[[]*]*>= 0.6*–*FAIL",
            "*token_f1>=0.6: not shown: the interval's low end is *",
            "*worst items by token_f1: q04 (0), q05 (0), q06 (0), q07 (0), q08 (0)",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: ragmeter: 1 of 1 metrics regressed against the baseline *baseline (candidate bad,*",
            "*metric*value*difference [[]interval]*baseline*rule*p*verdict",
            "*token_f1*0.25*-0.75 [[]*]*1*no regression*FAIL",
            "*token_f1: worse by 0.75, Holm-adjusted p = *",
            (
                "*worst items by token_f1 (baseline → candidate): q04 (1 → 0), q05 (1 → 0), q06 (1 → 0), "
                "q07 (1 → 0), q08 (1 → 0)"
            ),
        ]
    )


def test_a_passing_suite_passes(pytester: pytest.Pytester, data: dict[str, Path]) -> None:
    _passing_suite(pytester, data)
    _check_passing(pytester.runpytest())


def test_a_failing_suite_fails_with_the_table_and_the_worst_items(
    pytester: pytest.Pytester, data: dict[str, Path]
) -> None:
    _failing_suite(pytester, data)
    _check_failing(pytester.runpytest())


def test_the_suites_under_xdist(pytester: pytest.Pytester, data: dict[str, Path]) -> None:
    _passing_suite(pytester, data, "test_good")
    _failing_suite(pytester, data, "test_bad")
    _check_failing(pytester.runpytest_subprocess("-n", "2"), passed=1 + 3)  # one run of both: 3 + 1 pass, 2 fail


def test_the_judge_fixture_is_overridden_with_the_fake_server(pytester: pytest.Pytester, data: dict[str, Path]) -> None:
    pytester.makeconftest("""
        import pytest
        from ragmeter.judges import JudgeConfig, open_judge
        from ragmeter.testing import FakeOpenAIServer, scripted_judge

        @pytest.fixture(scope="session")
        def ragmeter_judge():
            with FakeOpenAIServer(scripted_judge.respond) as server:
                judge = open_judge(JudgeConfig(kind="openai", model="fake-judge", base_url=server.base_url,
                                               api_key_env=None))
                yield judge
                judge.close()
    """)
    pytester.makepyfile(
        test_judged=f"""
        def test_scores(ragmeter_eval):
            run = ragmeter_eval({str(data["judged"])!r}, metrics=["judge_correctness"])
            assert [float(v) for v in run.result.scores["judge_correctness"]] == [2, 2, 2, 2, 5] * 2
            run.require("judge_correctness >= 1.5")

        def test_fails(ragmeter_eval):
            ragmeter_eval({str(data["judged"])!r}, metrics=["judge_correctness"]).require(
                "judge_correctness >= 4", point=True)

        def test_claim_level(ragmeter_eval):
            # one vital nugget a reference; stated by shapes 0, 1 and 4, not by 2 (parking) nor 3 (abstains)
            run = ragmeter_eval({str(data["judged"])!r}, metrics=["nugget_recall_vital"])
            assert [float(v) for v in run.result.scores["nugget_recall_vital"]] == [1, 1, 0, 0, 1] * 2
            run.require("nugget_recall_vital >= 0.2")
    """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*judge_correctness*2.6*>= 4*FAIL",
            "*judge_correctness>=4: misses it: the estimate is 2.6",
            "*worst items by judge_correctness: r0 (2), r1 (2), r2 (2), r3 (2), r5 (2)",
        ]
    )


def test_without_a_judge_the_judged_metrics_say_what_to_do(pytester: pytest.Pytester, data: dict[str, Path]) -> None:
    pytester.makepyfile(
        test_judged=f"""
        def test_scores(ragmeter_eval, ragmeter_judge):
            assert ragmeter_judge is None
            ragmeter_eval({str(data["judged"])!r}, metrics=["judge_correctness"])
    """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ConfigError: the judged metrics need a judge*"])


JUDGED_TESTS = """
    import os
    import pytest

    @pytest.mark.parametrize("k", range(4))
    def test_judged(ragmeter_eval, ragmeter_judge, k):
        run = ragmeter_eval({judged!r}, metrics=["judge_correctness"])
        assert [float(v) for v in run.result.scores["judge_correctness"]] == [2, 2, 2, 2, 5] * 2
        with open({seen!r}, "a") as f:
            f.write(f"{{os.environ['PYTEST_XDIST_WORKER']}} {{ragmeter_judge.backend.model}} "
                    f"{{ragmeter_judge.claims}}\\n")
"""


def test_a_judge_url_is_used_by_every_worker(pytester: pytest.Pytester, data: dict[str, Path]) -> None:
    seen = pytester.path / "seen.txt"
    pytester.makepyfile(test_judged=JUDGED_TESTS.format(judged=str(data["judged"]), seen=str(seen)))
    with FakeOpenAIServer(scripted_judge.respond) as server:
        result = pytester.runpytest_subprocess(
            "-n", "2", "--ragmeter-judge", server.base_url, "--ragmeter-judge-model", "fake-judge"
        )
    result.assert_outcomes(passed=4)
    lines = seen.read_text().splitlines()
    assert {line.split()[0] for line in lines} == {"gw0", "gw1"}
    assert {tuple(line.split()[1:]) for line in lines} == {("fake-judge", "verify")}
    assert server.statuses["ok"] >= 10


def test_the_local_judge_starts_once_in_the_xdist_controller(
    pytester: pytest.Pytester, data: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # where this suite itself runs under xdist, its worker's name must not reach the suite's controller
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    starts = pytester.path / "starts.txt"
    seen = pytester.path / "seen.txt"
    # the packaged model stands in for the fake server: what matters is where and how often it is started
    pytester.makeconftest(f"""
        import os
        import ragmeter.judges
        from ragmeter.judges.backends.local import local_model_id
        from ragmeter.testing import FakeOpenAIServer, scripted_judge

        class FakeLocalServer:
            model_id = local_model_id(None)

            def start(self):
                with open({str(starts)!r}, "a") as f:
                    f.write(os.environ.get("PYTEST_XDIST_WORKER", "controller") + "\\n")
                self.server = FakeOpenAIServer(scripted_judge.respond).__enter__()
                return self.server.base_url

            def stop(self):
                self.server.__exit__(None, None, None)

        ragmeter.judges.LocalServer = FakeLocalServer
    """)
    pytester.makepyfile(test_judged=JUDGED_TESTS.format(judged=str(data["judged"]), seen=str(seen)))
    result = pytester.runpytest_subprocess("-n", "2", "--ragmeter-judge", "local")
    result.assert_outcomes(passed=4)
    assert starts.read_text().splitlines() == ["controller"]
    lines = seen.read_text().splitlines()
    assert {line.split()[0] for line in lines} == {"gw0", "gw1"}
    assert {tuple(line.split()[1:]) for line in lines} == {("qwen2.5-coder-1.5b-instruct-q4_k_m:cc324af0", "split")}


def test_a_judge_url_needs_its_model(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("--ragmeter-judge", "http://127.0.0.1:9/v1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ragmeter-judge http://127.0.0.1:9/v1: name the model it serves with*"])


def test_the_worst_items_are_those_compare_pairs_across_model_ids(pytester: pytest.Pytester, tmp_path: Path) -> None:
    # the baseline's answers come from model "a", the candidate's from model "b": compare pairs the items by id
    # (ids are unique in each run), so the 7 items the candidate answers wrongly, q04 to q10, are the worse ones
    worse = [f"q{i:02d}" for i in range(4, 11)]
    baseline_rows = [{**row, "model_id": "a"} for row in _records([])]
    candidate_rows = [{**row, "model_id": "b"} for row in _records(worse)]
    baseline = tmp_path / "baseline"
    assert (
        ragmeter_command(
            [
                "run",
                str(_write(tmp_path / "base.jsonl", baseline_rows)),
                "--metrics",
                "token_f1",
                "--embedder",
                "hashing",
                "--out",
                str(baseline),
                "--no-progress",
                "--format",
                "json",
            ]
        )
        == 0
    )
    candidate = _write(tmp_path / "cand.jsonl", candidate_rows)
    pytester.makeconftest(HASHING)
    pytester.makepyfile(
        test_models=f"""
        def test_regression(ragmeter_eval):
            run = ragmeter_eval({str(candidate)!r}, metrics=["token_f1"], worst=10)
            run.require_no_regression({str(baseline)!r}, metrics=["token_f1"])
    """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    # 7 of 12 items drop from 1 to 0: a difference of -7/12 = -0.5833
    result.stdout.fnmatch_lines(
        ["*token_f1*0.4167*-0.5833 [[]*]*1*no regression*FAIL", "*worst items by token_f1 (baseline → candidate): *"]
    )
    # the message is printed in the failure and, depending on the terminal's width, again in the short summary
    listed = {
        line.partition("(baseline → candidate): ")[2] for line in result.outlines if "worst items by token_f1" in line
    }
    assert listed == {", ".join(f"{item} (1 → 0)" for item in worse)}


def test_a_missing_records_file_says_which_and_what_to_do(pytester: pytest.Pytester, tmp_path: Path) -> None:
    missing = tmp_path / "eval" / "answers.jsonl"
    pytester.makepyfile(
        test_missing=f"""
        def test_missing(ragmeter_eval):
            ragmeter_eval({str(missing)!r})

        def test_a_folder(ragmeter_eval):
            ragmeter_eval({str(tmp_path)!r})
    """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [(f"*ConfigError: ragmeter_eval('{missing}'): {missing} does not exist: give the path of a file of answers*")]
    )
    result.stdout.fnmatch_lines(
        [(f"*ConfigError: ragmeter_eval('{tmp_path}'): {tmp_path} is a folder, not a records file: give the path*")]
    )
    assert "FileNotFoundError" not in result.stdout.str()
