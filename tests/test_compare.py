"""Comparing runs (ragmeter.compare and `ragmeter compare`): pairing, the figures per metric and group, the
settings check, and the command on two real runs of the demo data."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from ragmeter import ConfigError, Settings, compare, evaluate, read_records
from ragmeter.cli import demo_path, main
from ragmeter.compare import ScoredRun

SIGNATURES = {"token_f1": "token_f1|normalizer:squad-v1.1|ragmeter:0.1.0",
              "rouge_l": "rouge_l|tokenizer:rouge-score|ragmeter:0.1.0",
              "exact_match": "exact_match|normalizer:squad-v1.1|ragmeter:0.1.0"}


def _run(name: str, scores: dict[str, np.ndarray], *, ids: list[str] | None = None,
         signatures: dict[str, str] | None = None, metadata: list[dict[str, str]] | None = None) -> ScoredRun:
    n = len(next(iter(scores.values())))
    ids = ids or [f"q{i:03d}" for i in range(n)]
    return ScoredRun(name, tuple((i, None) for i in ids), scores, signatures or SIGNATURES,
                     tuple(f"c{int(i[1:]) // 4}" for i in ids), tuple(metadata or [{} for _ in ids]))


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
    b = _run("B", {"token_f1": f1 + 0.1 + rng.normal(0, 0.05, 200), "rouge_l": rouge + balanced,
                   "exact_match": em_b})
    return a, b


def test_a_known_margin_is_significant_after_holm_and_no_difference_is_not() -> None:
    [comparison] = compare(*_known_margin_runs(), settings=Settings(seed=1))
    figures = {m.metric: m for m in comparison.overall}
    f1, rouge, em = figures["token_f1"], figures["rouge_l"], figures["exact_match"]
    assert f1.p_holm < 0.001 and f1.ci_low <= 0.1 <= f1.ci_high
    assert rouge.p_holm > 0.05 and rouge.ci_low <= 0.0 <= rouge.ci_high
    assert (em.difference, em.mcnemar["only_a"], em.mcnemar["only_b"]) == (24 / 200, 12, 36)
    assert em.mcnemar["exact"] is False and em.p_holm < 0.05          # 48 discordant pairs: the χ² form
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
    metadata = [{"answerability": "ANSWERABLE" if i < 6 else "UNANSWERABLE", "collection": "x" if i % 2 else "y"}
                for i in range(8)]
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
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b" / "items.jsonl"), "--format", "json",
                 "--n-resamples", "500"]) == 0
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


def test_the_gate_demo_shows_what_the_gate_saves_and_what_it_costs(capsys: pytest.CaptureFixture[str],
                                                                   tmp_path: Path) -> None:
    for variant, folder in (([], "v1"), (["gate"], "gate")):
        assert main(["run", "--demo", *variant, "--embedder", "hashing", "--out", str(tmp_path / folder),
                     "--format", "json"]) == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "v1"), str(tmp_path / "gate"), "--format", "json"]) == 0
    [comparison] = json.loads(capsys.readouterr().out)
    overall = {m["metric"]: m for m in comparison["groups"][0]["metrics"]}
    # the gate declines 15 questions before generating (v1 abstained on 11 of them): no tokens spent on them
    assert overall["total_tokens"]["difference"] < 0 and overall["total_tokens"]["p_holm"] < 0.05
    assert overall["abstained"]["mcnemar"] == {"only_a": 0, "only_b": 4, "p_value": 0.125, "exact": True}
    v1, gate = comparison["gate"]
    assert (v1["abstain_rate"], gate["abstain_rate"]) == (pytest.approx(11 / 45), pytest.approx(15 / 45))
    assert gate["tokens_per_item"] < v1["tokens_per_item"]


def test_runs_without_a_readable_summary_are_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    common = ["--embedder", "hashing", "--metrics", "token_f1", "--format", "json"]
    for name in ("a", "b"):
        assert main(["run", "--demo", "--out", str(tmp_path / name), *common]) == 0
    alone = tmp_path / "alone.jsonl"
    alone.write_bytes((tmp_path / "b" / "items.jsonl").read_bytes())     # an items file with no summary beside
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a"), str(alone)]) == 2
    assert "has no signature to check" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "a"), str(alone), "--allow-different-settings", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["different_settings"]["token_f1"][1] == "unknown"
    (tmp_path / "b" / "summary.json").write_text("{not json", encoding="utf-8")
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    assert "summary.json cannot be read" in capsys.readouterr().err


def test_a_bad_items_file_is_an_error_naming_its_line_and_is_never_changed(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["run", "--demo", "--embedder", "hashing", "--metrics", "token_f1", "--out", str(tmp_path / "a"),
                 "--format", "json"]) == 0
    capsys.readouterr()
    lines = (tmp_path / "a" / "items.jsonl").read_text(encoding="utf-8").splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([*lines[:3], '{"id": "q04", "scores": {', *lines[4:]]) + "\n", encoding="utf-8")
    before = broken.read_bytes()
    assert main(["compare", str(tmp_path / "a"), str(broken), "--allow-different-settings"]) == 2
    assert "broken.jsonl:4: broken JSON" in capsys.readouterr().err
    assert broken.read_bytes() == before                     # read, never cut short
    words = tmp_path / "words.jsonl"
    words.write_text('{"id": "q01", "scores": {"token_f1": "high"}}\n', encoding="utf-8")
    assert main(["compare", str(tmp_path / "a"), str(words), "--allow-different-settings"]) == 2
    assert "words.jsonl:1 field 'scores.token_f1': a score must be a number" in capsys.readouterr().err
