"""Comparing runs (ragmeter.analysis.compare and `ragmeter compare`): pairing, the figures per metric and group, the
settings check, and the command on two real runs of the demo data."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from ragmeter import ConfigError, Settings, compare, evaluate, read_records
from ragmeter.analysis.compare import ScoredRun
from ragmeter.cli import main
from ragmeter.io.demo import demo_path
from ragmeter.report.comparison import comparison_rows, render_comparison

SIGNATURES = {
    "token_f1": "token_f1|normalizer:squad-v1.1|ragmeter:0.1.0",
    "rouge_l": "rouge_l|tokenizer:rouge-score|ragmeter:0.1.0",
    "exact_match": "exact_match|normalizer:squad-v1.1|ragmeter:0.1.0",
}


def _run(
    name: str,
    scores: dict[str, np.ndarray],
    *,
    ids: list[str] | None = None,
    signatures: dict[str, str] | None = None,
    metadata: list[dict[str, str]] | None = None,
) -> ScoredRun:
    n = len(next(iter(scores.values())))
    ids = ids or [f"q{i:03d}" for i in range(n)]
    return ScoredRun(
        name,
        tuple((i, None) for i in ids),
        scores,
        signatures or SIGNATURES,
        tuple(f"c{int(i[1:]) // 4}" for i in ids),
        tuple(metadata or [{} for _ in ids]),
    )


def _known_margin_runs() -> tuple[ScoredRun, ScoredRun]:
    """200 items in 50 conversations of 4: B's token F1 is A's + 0.1 (noise sd 0.05), B's ROUGE-L is A's plus
    differences that sum to 0, and B gets 24 more exact matches than it loses (36 against 12)."""
    rng = np.random.default_rng(0)
    f1 = rng.uniform(0.2, 0.8, 200)
    rouge = rng.uniform(0.2, 0.8, 200)
    em = (rng.random(200) < 0.4).astype(float)
    em_b = em.copy()
    zeros, ones = np.flatnonzero(em == 0), np.flatnonzero(em == 1)
    em_b[zeros[:36]], em_b[ones[:12]] = 1.0, 0.0
    a = _run("A", {"token_f1": f1, "rouge_l": rouge, "exact_match": em})
    half = rng.normal(0, 0.05, 100)
    balanced = rng.permutation(np.concatenate([half, -half]))  # differences that sum to 0 exactly
    b = _run("B", {"token_f1": f1 + 0.1 + rng.normal(0, 0.05, 200), "rouge_l": rouge + balanced, "exact_match": em_b})
    return a, b


def test_a_known_margin_is_significant_after_holm_and_no_difference_is_not() -> None:
    [comparison] = compare(*_known_margin_runs(), settings=Settings(seed=1))
    figures = {m.metric: m for m in comparison.overall}
    f1, rouge, em = figures["token_f1"], figures["rouge_l"], figures["exact_match"]
    assert f1.p_holm < 0.001 and f1.ci_low <= 0.1 <= f1.ci_high
    assert rouge.p_holm > 0.05 and rouge.ci_low <= 0.0 <= rouge.ci_high
    assert (em.difference, em.mcnemar["only_a"], em.mcnemar["only_b"]) == (24 / 200, 12, 36)
    assert em.mcnemar["exact"] is False and em.p_holm < 0.05  # 48 discordant pairs: the χ² form
    # Holm over three p-values: the smallest is multiplied by 3 (here it stays above its raw value)
    smallest = min(comparison.overall, key=lambda m: m.p_value)
    assert smallest.p_holm == pytest.approx(min(1.0, 3 * smallest.p_value))
    assert f1.wins + f1.ties + f1.losses == f1.n == 200 and f1.wins > 190


def test_unpaired_items_are_listed_and_a_side_undefined_is_left_out_of_that_metric() -> None:
    a = _run("A", {"token_f1": np.array([0.5, 0.6, 0.7, 0.1])}, ids=["q001", "q002", "q003", "q009"])
    b = _run("B", {"token_f1": np.array([0.6, math.nan, 0.9, 0.2])}, ids=["q001", "q002", "q003", "q010"])
    [comparison] = compare(a, b)
    [f1] = comparison.overall
    assert comparison.n_pairs == 3
    assert comparison.only_baseline == (("q009", None),) and comparison.only_candidate == (("q010", None),)
    assert (f1.n, f1.n_left_out) == (2, 1)
    assert f1.mean_a == pytest.approx(0.6) and f1.mean_b == pytest.approx(0.75)
    assert f1.difference == pytest.approx(0.15) and (f1.wins, f1.ties, f1.losses) == (2, 0, 0)


def test_runs_with_several_answers_per_id_pair_by_model_id_too() -> None:
    keys = (("t1", "m1"), ("t1", "m2"), ("t2", "m1"))
    a = ScoredRun("A", keys, {"token_f1": np.array([0.1, 0.2, 0.3])}, SIGNATURES, (None,) * 3, ({},) * 3)
    b = ScoredRun("B", keys[::-1], {"token_f1": np.array([0.6, 0.5, 0.4])}, SIGNATURES, (None,) * 3, ({},) * 3)
    [f1] = compare(a, b)[0].overall
    # pairs: (t1,m1) 0.1→0.4, (t1,m2) 0.2→0.5, (t2,m1) 0.3→0.6
    assert f1.difference == pytest.approx(0.3) and f1.n == 3


def test_different_settings_are_refused_with_what_differs_unless_allowed() -> None:
    a, b = _known_margin_runs()
    other = dict(SIGNATURES, rouge_l="rouge_l|tokenizer:rouge-score|stemmer:porter|ragmeter:0.1.0")
    b = ScoredRun(b.name, b.keys, b.scores, other, b.conversation_ids, b.metadata)
    with pytest.raises(ConfigError, match=r"rouge_l: – against stemmer:porter.*--allow-different-settings"):
        compare(a, b)
    [comparison] = compare(a, b, allow_different_settings=True)
    assert set(comparison.different_settings) == {"rouge_l"}


def test_groups_by_answerability_and_by_a_metadata_field() -> None:
    scores = {"token_f1": np.linspace(0.1, 0.8, 8)}
    metadata = [
        {"answerability": "ANSWERABLE" if i < 6 else "UNANSWERABLE", "collection": "x" if i % 2 else "y"}
        for i in range(8)
    ]
    a = _run("A", scores, metadata=metadata)
    b = _run("B", {"token_f1": scores["token_f1"] + np.arange(8) / 10}, metadata=metadata)
    [comparison] = compare(a, b, by=["collection"])
    groups = {group: metrics[0] for group, metrics in comparison.groups.items()}
    assert groups[("answerability", "UNANSWERABLE")].difference == pytest.approx((0.6 + 0.7) / 2)
    assert groups[("collection", "x")].difference == pytest.approx((0.1 + 0.3 + 0.5 + 0.7) / 4)
    assert groups[("collection", "y")].n == 4
    with pytest.raises(ConfigError, match="no item of A or B has a metadata field 'team'"):
        compare(a, b, by=["team"])


def test_evaluate_results_compare_in_the_library() -> None:
    records = list(read_records(demo_path()))
    settings = Settings(embedder="hashing", n_resamples=200)
    a = evaluate(records, metrics=["token_f1", "exact_match"], settings=settings)
    b = evaluate(records, metrics=["token_f1", "exact_match"], settings=settings)
    [comparison] = compare(a, b, settings=settings)
    for m in comparison.overall:
        assert (m.difference, m.p_value, m.losses, m.wins) == (0.0, 1.0, 0, 0)


def _changed_demo(tmp_path: Path) -> Path:
    """The demo with ten answers replaced by a wrong one, under another model id (a second system)."""
    lines = demo_path().read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    for row in rows[:10]:
        row["answer"] = "The office is closed on Mondays."
        row["metadata"] = {**row.get("metadata", {}), "model_id": "demo-rag-2"}
    path = tmp_path / "demo-v2.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_the_command_compares_two_run_folders(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    common = ["--embedder", "hashing", "--metrics", "token_f1,exact_match,latency_ms", "--format", "json"]
    assert main(["run", "--demo", "--out", str(tmp_path / "a"), *common]) == 0
    assert main(["run", str(_changed_demo(tmp_path)), "--out", str(tmp_path / "b"), *common]) == 0
    capsys.readouterr()
    assert (
        main(
            [
                "compare",
                str(tmp_path / "a"),
                str(tmp_path / "b" / "items.jsonl"),
                "--format",
                "json",
                "--n-resamples",
                "500",
            ]
        )
        == 0
    )
    [comparison] = json.loads(capsys.readouterr().out)
    overall = {m["metric"]: m for m in comparison["groups"][0]["metrics"]}
    assert comparison["n_pairs"] == 45 and comparison["not_compared"] == {}
    assert overall["latency_ms"]["n"] == 44 and overall["latency_ms"]["difference"] == 0.0  # same latencies
    assert overall["token_f1"]["losses"] >= 9 and overall["token_f1"]["wins"] == 0
    assert overall["token_f1"]["difference"] < 0 and overall["exact_match"]["mcnemar"]["exact"] is True
    assert {(g["field"], g["value"]) for g in comparison["groups"]} >= {("answerability", "UNANSWERABLE")}

    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--format", "markdown"]) == 0
    markdown = capsys.readouterr().out
    assert "| metric | A | B | B − A |" in markdown and "### answerability = ANSWERABLE" in markdown

    assert main(["compare", str(tmp_path / "a")]) == 2
    assert "at least two runs" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "missing")]) == 2
    assert "no such run folder or items file" in capsys.readouterr().err


def test_the_gate_demo_shows_what_the_gate_saves_and_what_it_costs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for variant, folder in (([], "v1"), (["gate"], "gate")):
        assert (
            main(
                [
                    "run",
                    "--demo",
                    *variant,
                    "--embedder",
                    "hashing",
                    "--out",
                    str(tmp_path / folder),
                    "--format",
                    "json",
                ]
            )
            == 0
        )
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "v1"), str(tmp_path / "gate"), "--format", "json"]) == 0
    [comparison] = json.loads(capsys.readouterr().out)
    overall = {m["metric"]: m for m in comparison["groups"][0]["metrics"]}
    # the gate declines 15 questions before generating (v1 abstained on 11 of them): no tokens spent on them
    assert overall["total_tokens"]["difference"] < 0 and overall["total_tokens"]["p_holm"] < 0.05
    # fewer tokens is better: the 14 items the gate spent fewer tokens on are its wins
    assert (overall["total_tokens"]["wins"], overall["total_tokens"]["losses"]) == (14, 0)
    assert overall["abstained"]["mcnemar"] == {"only_a": 0, "only_b": 4, "p_value": 0.125, "exact": True}
    v1, gate = comparison["gate"]
    assert (v1["abstain_rate"], gate["abstain_rate"]) == (pytest.approx(11 / 45), pytest.approx(15 / 45))
    assert gate["tokens_per_item"] < v1["tokens_per_item"]


def test_the_gate_tables_tokens_per_item_is_over_the_pairs_the_comparison_compares() -> None:
    # q002 has no token usage in A: the gate's tokens / item leaves it out of both means, as the main table does
    nan = math.nan
    a = _run(
        "A", {"abstained": np.array([0.0, 0.0, 0.0]), "total_tokens": np.array([100.0, 200.0, nan])}, signatures={}
    )
    b = _run("B", {"abstained": np.array([0.0, 0.0, 1.0]), "total_tokens": np.array([50.0, 70.0, 0.0])}, signatures={})
    [comparison] = compare(a, b, allow_different_settings=True)
    tokens = next(m for m in comparison.overall if m.metric == "total_tokens")
    gate_a, gate_b = comparison.gate
    assert (tokens.mean_a, tokens.mean_b) == (150.0, 60.0)  # (100 + 200) / 2, (50 + 70) / 2
    assert (gate_a.tokens_per_item, gate_b.tokens_per_item) == (150.0, 60.0)
    assert gate_b.tokens_per_answered == 60.0 and gate_b.abstain_rate == pytest.approx(1 / 3)


def test_runs_without_a_readable_summary_are_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    common = ["--embedder", "hashing", "--metrics", "token_f1", "--format", "json"]
    for name in ("a", "b"):
        assert main(["run", "--demo", "--out", str(tmp_path / name), *common]) == 0
    alone = tmp_path / "alone.jsonl"
    alone.write_bytes((tmp_path / "b" / "items.jsonl").read_bytes())  # an items file with no summary beside
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a"), str(alone)]) == 2
    err = capsys.readouterr().err
    assert f"{alone} is not a run folder's items.jsonl, so it has no summary.json" in err and len(err) < 400
    assert main(["compare", str(tmp_path / "a"), str(alone), "--allow-different-settings", "--format", "json"]) == 0
    [comparison] = json.loads(capsys.readouterr().out)
    assert (comparison["baseline"], comparison["candidate"]) == ("a", "alone")
    assert list(comparison["unchecked_settings"]) == ["alone"] and comparison["different_settings"] == {}
    both = tmp_path / "both"  # two items files in one folder: labelled by their stems
    both.mkdir()
    for name in ("a", "b"):
        (both / f"{name}.jsonl").write_bytes((tmp_path / name / "items.jsonl").read_bytes())
    assert main(["compare", str(both / "a.jsonl"), str(both / "b.jsonl"), "--allow-different-settings"]) == 0
    table = capsys.readouterr().out
    assert table.startswith("b (B) against a (A): 45 paired items") and table.count("Settings not checked") == 1
    (tmp_path / "b" / "summary.json").write_text("{not json", encoding="utf-8")
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    assert "summary.json cannot be read" in capsys.readouterr().err


def test_a_bad_items_file_is_an_error_naming_its_line_and_is_never_changed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert (
        main(
            [
                "run",
                "--demo",
                "--embedder",
                "hashing",
                "--metrics",
                "token_f1",
                "--out",
                str(tmp_path / "a"),
                "--format",
                "json",
            ]
        )
        == 0
    )
    capsys.readouterr()
    lines = (tmp_path / "a" / "items.jsonl").read_text(encoding="utf-8").splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([*lines[:3], '{"id": "q04", "scores": {', *lines[4:]]) + "\n", encoding="utf-8")
    before = broken.read_bytes()
    assert main(["compare", str(tmp_path / "a"), str(broken), "--allow-different-settings"]) == 2
    assert "broken.jsonl:4: broken JSON" in capsys.readouterr().err
    assert broken.read_bytes() == before  # read, never cut short
    words = tmp_path / "words.jsonl"
    words.write_text('{"id": "q01", "scores": {"token_f1": "high"}}\n', encoding="utf-8")
    assert main(["compare", str(tmp_path / "a"), str(words), "--allow-different-settings"]) == 2
    assert "words.jsonl:1 field 'scores.token_f1': a score must be a number" in capsys.readouterr().err


def test_wins_and_losses_follow_each_metric_direction_in_the_json_as_in_the_table() -> None:
    """Six pairs worked out by hand. latency_ms (lower is better): B lower on pairs 1, 2, 4, 6 (better), equal on
    3, higher on 5 (worse); token_f1 (higher is better): B higher on 1, 2, 5, 6, equal on 4, lower on 3; a metric
    this version does not know (no direction): B above on 1, 2, 5, 6, equal on 4, below on 3."""
    latency_a, latency_b = [100, 200, 300, 400, 500, 600], [90, 150, 300, 350, 700, 100]
    f1_a, f1_b = [0.5] * 6, [0.6, 0.6, 0.4, 0.5, 0.6, 0.6]
    signatures = {
        "latency_ms": "latency_ms|ragmeter:0.1.0",
        "token_f1": SIGNATURES["token_f1"],
        "house_score": "house_score|ragmeter:0.1.0",
    }
    a = _run(
        "A",
        {
            m: np.array(v, dtype=float)
            for m, v in (("latency_ms", latency_a), ("token_f1", f1_a), ("house_score", f1_a))
        },
        signatures=signatures,
    )
    b = _run(
        "B",
        {
            m: np.array(v, dtype=float)
            for m, v in (("latency_ms", latency_b), ("token_f1", f1_b), ("house_score", f1_b))
        },
        signatures=signatures,
    )
    [comparison] = compare(a, b)
    as_json = json.loads(json.dumps(comparison.to_dict()))
    figures = {m["metric"]: m for m in as_json["groups"][0]["metrics"]}
    latency, f1, house = figures["latency_ms"], figures["token_f1"], figures["house_score"]
    assert (latency["higher_is_better"], latency["wins"], latency["ties"], latency["losses"]) == (False, 4, 1, 1)
    assert latency["difference"] == pytest.approx((-10 - 50 + 0 - 50 + 200 - 500) / 6)  # B − A, signed as is
    assert (f1["higher_is_better"], f1["wins"], f1["ties"], f1["losses"]) == (True, 4, 1, 1)
    assert (house["higher_is_better"], house["wins"], house["ties"], house["losses"]) == (None, 4, 1, 1)
    assert set(as_json["legend"]) >= {"difference", "higher_is_better", "wins", "ties", "losses"}
    assert "B − A" in as_json["legend"]["difference"] and "better" in as_json["legend"]["wins"]
    rows = {row[0]: row for row in comparison_rows(comparison.overall)}  # the table reads the same counts
    assert rows["latency_ms"][8] == "4 / 1 / 1" and rows["token_f1"][8] == "4 / 1 / 1"
    assert rows["house_score"][8] == "4 / 1 / 1 (B above / tie / below)"


def _items_file(path: Path, scores: list[float], *, summary: bool) -> Path:
    """A minimal items file (``items.jsonl`` in a run folder, or any name), with the folder's summary.json."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(json.dumps({"id": f"q{i}", "scores": {"token_f1": s}}) + "\n" for i, s in enumerate(scores)),
        encoding="utf-8",
    )
    if summary:
        (path.parent / "summary.json").write_text(
            json.dumps({"signatures": {"token_f1": SIGNATURES["token_f1"]}}), encoding="utf-8"
        )
    return path


def test_items_files_without_summary_are_refused_once_with_what_is_missing(tmp_path: Path) -> None:
    a = _items_file(tmp_path / "both" / "a.jsonl", [0.1, 0.2, 0.3], summary=False)
    b = _items_file(tmp_path / "both" / "b.jsonl", [0.2, 0.2, 0.4], summary=False)
    with pytest.raises(ConfigError) as refused:
        compare(a, b)
    message = str(refused.value)
    assert message.startswith("cannot check the settings of a and b (a finished run's summary.json records them)")
    assert len(message) - len(str(a)) - len(str(b)) < 350  # short, whatever the paths
    for path in (a, b):
        assert message.count(f"{path} is not a run folder's items.jsonl, so it has no summary.json") == 1
    assert message.count("Compare the run folders that `ragmeter run --out` wrote") == 1  # said once for both
    assert message.count("--allow-different-settings") == 1 and "other settings" not in message
    [comparison] = compare(a, b, allow_different_settings=True)
    assert (comparison.baseline, comparison.candidate) == ("a", "b")  # the file stems, not '.'
    assert set(comparison.unchecked_settings) == {"a", "b"} and comparison.different_settings == {}
    assert sum("Settings not checked" in note for note in comparison.notes) == 1
    assert comparison.to_dict()["unchecked_settings"]["a"] == comparison.unchecked_settings["a"]
    rendered = render_comparison(comparison)
    assert rendered.count("Settings not checked") == 1 and "Settings differ" not in rendered
    assert "Metric signatures: unknown (settings not checked)" in rendered


def test_an_items_file_takes_no_signatures_from_a_summary_that_is_not_its_own(tmp_path: Path) -> None:
    """summary.json belongs to the folder's items.jsonl; another items file copied beside it has none."""
    own = _items_file(tmp_path / "run" / "items.jsonl", [0.1, 0.2, 0.3], summary=True)
    copied = _items_file(tmp_path / "run" / "other.jsonl", [0.2, 0.2, 0.4], summary=False)
    with pytest.raises(
        ConfigError, match=re.escape("other.jsonl is not a run folder's items.jsonl, so it has no summary")
    ):
        compare(own, copied)


def _finished_run(tmp_path: Path, name: str, scores: list[float]) -> Path:
    folder = _items_file(tmp_path / name / "items.jsonl", scores, summary=True).parent
    (folder / "run.json").write_text(
        json.dumps({"input": str(tmp_path / "gone.jsonl"), "status": "finished"}), encoding="utf-8"
    )
    return folder


def test_an_unfinished_run_is_named_as_unfinished(tmp_path: Path) -> None:
    a = _finished_run(tmp_path, "a", [0.1, 0.2, 0.3])
    b = _finished_run(tmp_path, "b", [0.2, 0.2])
    (b / "run.json").write_text(json.dumps({"input": "x.jsonl", "status": "running"}), encoding="utf-8")
    # a summary.json left by an earlier run in that folder does not sign the items of the unfinished one
    with pytest.raises(
        ConfigError,
        match=r"unfinished run \(run.json status 'running', 2 items scored so far\)"
        r".*--resume.*--allow-different-settings",
    ) as refused:
        compare(a, b)
    assert "has no summary.json" not in str(refused.value) and "--out " + str(b) + " --resume" in str(refused.value)
    (b / "summary.json").unlink()
    with pytest.raises(ConfigError, match="unfinished run"):
        compare(a, b)
    [comparison] = compare(a, b, allow_different_settings=True)
    assert comparison.n_pairs == 2 and list(comparison.unchecked_settings) == ["b"]


def test_a_finished_run_without_its_summary_says_how_to_get_it_back(tmp_path: Path) -> None:
    a, b = _finished_run(tmp_path, "a", [0.1, 0.2, 0.3]), _finished_run(tmp_path, "b", [0.2, 0.2, 0.4])
    (b / "summary.json").unlink()
    with pytest.raises(
        ConfigError,
        match=rf"{re.escape(str(b))} has no summary.json\. Rerun `ragmeter run … --out "
        rf"{re.escape(str(b))} --overwrite` to write its summary.json again",
    ):
        compare(a, b)
    (b / "summary.json").write_text(json.dumps({"n_items": 3}), encoding="utf-8")  # a summary of no signatures
    with pytest.raises(ConfigError, match=re.escape("summary.json holds no signatures. Rerun")):
        compare(a, b)


def test_runs_are_labelled_by_folder_or_file_stem_and_made_unique(tmp_path: Path) -> None:
    x, y = _finished_run(tmp_path / "x", "v1", [0.1, 0.2]), _finished_run(tmp_path / "y", "v1", [0.3, 0.2])
    z = _finished_run(tmp_path / "runs", "v2", [0.2, 0.2])
    labels = [(c.baseline, c.candidate) for c in compare(x, y / "items.jsonl", z)]
    assert labels == [("x/v1", "y/v1"), ("x/v1", "v2")]
    [itself] = compare(z, z)
    assert (itself.baseline, itself.candidate) == ("v2", "v2 (2)")
    bare = _items_file(tmp_path / "c" / "v2.jsonl", [0.2, 0.3], summary=False)
    [stem] = compare(z, bare, allow_different_settings=True)
    assert (stem.baseline, stem.candidate) == ("runs/v2", "c/v2")  # both lengthened, alike


def test_names_label_the_runs_one_each(tmp_path: Path) -> None:
    a, b = _finished_run(tmp_path, "a", [0.1, 0.2, 0.3]), _finished_run(tmp_path, "b", [0.2, 0.2, 0.4])
    [comparison] = compare(a, b, names=["baseline", "gate"])
    assert (comparison.baseline, comparison.candidate) == ("baseline", "gate")
    with pytest.raises(ConfigError, match="2 runs but 1 name"):
        compare(a, b, names=["baseline"])
    with pytest.raises(ConfigError, match="'same' is given twice"):
        compare(a, b, names=["same", "same"])
    with pytest.raises(ConfigError, match="empty"):
        compare(a, b, names=["", "gate"])
