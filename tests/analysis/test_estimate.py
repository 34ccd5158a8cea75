"""``ragmeter estimate`` and ``compare --human``: a run's items and people's labels in, the prediction-powered
estimates out (the estimator itself is tested in tests/stats/test_ppi.py against ppi-python)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from ragmeter.analysis.estimate import estimate, paired_estimate
from ragmeter.cli.commands import main
from ragmeter.core.errors import ConfigError, InputError
from ragmeter.stats.ppi import labelled_mean, ppi_mean


def _items(path, scores, conversations, model="rag-a", metric="faithfulness_offline"):
    rows = [
        {
            "id": f"q{i:02d}",
            "model_id": model,
            "conversation_id": c,
            "scores": {metric: None if s is None else s},
            "undefined": {},
        }
        for i, (s, c) in enumerate(zip(scores, conversations, strict=True))
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _human(path, labels, model="rag-a", name="faithful"):
    """labels: id → list of annotators' values."""
    rows = [
        {"id": item, "model_id": model, "annotator": f"p{k}", name: v}
        for item, values in labels.items()
        for k, v in enumerate(values)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


SCORES = [0.9, 0.2, 0.8, 0.7, 0.1, 0.95, 0.5, 0.6, 0.3, 0.85, 0.4, 0.75, 0.65, 0.15, 0.55, 0.35, 0.45, 0.9, 0.05, 0.7]
CONVERSATIONS = [f"c{i // 2}" for i in range(20)]  # ten conversations of two turns
LABELS = {
    "q00": [4, 5],
    "q01": [2],
    "q02": [4],
    "q05": [5, 4],
    "q07": [3],
    "q08": [2, 2],
    "q10": [3],
    "q13": [1],
    "q15": [2],
    "q19": [4],
}


def test_the_estimates_are_those_of_the_runs_items_and_the_annotators_means(tmp_path):
    run = _items(tmp_path / "items.jsonl", SCORES, CONVERSATIONS)
    result = estimate(run, _human(tmp_path / "human.jsonl", LABELS), metric="faithfulness_offline", label="faithful")
    labelled = sorted(LABELS)
    positions = [int(item[1:]) for item in labelled]
    y = np.array([np.mean(LABELS[item]) for item in labelled])
    f = np.array([SCORES[i] for i in positions])
    rest = [i for i in range(20) if i not in positions]
    expected = ppi_mean(
        y,
        f,
        [SCORES[i] for i in rest],
        clusters=[CONVERSATIONS[i] for i in positions],
        unlabelled_clusters=[CONVERSATIONS[i] for i in rest],
    )
    assert result.ppi == expected
    assert result.labelled == labelled_mean(y, clusters=[CONVERSATIONS[i] for i in positions])
    assert result.scores.value == pytest.approx(np.mean(SCORES))
    assert (result.n_items, result.clustered, result.of) == (20, True, "mean")
    assert result.ppi.n_clusters == len({CONVERSATIONS[i] for i in positions}) == 9
    assert "resample:conversations" in result.signature and "estimator:ppi++" in result.signature
    assert result.warnings == () and result.counts == {}
    assert sum(s.items for s in result.strata) == 20 and sum(s.labelled for s in result.strata) == 10


def test_items_of_no_shared_conversation_are_each_their_own_cluster(tmp_path):
    run = _items(tmp_path / "items.jsonl", SCORES, [f"c{i}" for i in range(20)])
    result = estimate(run, _human(tmp_path / "human.jsonl", LABELS), metric="faithfulness_offline", label="faithful")
    positions = [int(item[1:]) for item in sorted(LABELS)]
    rest = [i for i in range(20) if i not in positions]
    expected = ppi_mean(
        [np.mean(LABELS[item]) for item in sorted(LABELS)],
        [SCORES[i] for i in positions],
        [SCORES[i] for i in rest],
        clusters=positions,
        unlabelled_clusters=rest,
    )
    assert result.ppi == expected and result.ppi.n_clusters == 10
    assert not result.clustered and "resample:items" in result.signature


def test_labels_of_other_items_and_undefined_scores_are_counted_and_said(tmp_path):
    scores = [None if i in (1, 4) else s for i, s in enumerate(SCORES)]
    run = _items(tmp_path / "items.jsonl", scores, CONVERSATIONS)
    result = estimate(
        run,
        _human(tmp_path / "human.jsonl", {**LABELS, "x1": [3], "x2": [4]}),
        metric="faithfulness_offline",
        label="faithful",
    )
    assert result.counts == {"labelled, not in the run": 2, "score undefined": 2, "labelled, score undefined": 1}
    assert result.n_items == 18 and result.labelled.n_labelled == 9
    assert any("2 labelled item(s) are not in" in w and "x1" in w for w in result.warnings)
    with pytest.raises(ConfigError, match="no labelled item"):
        estimate(
            run,
            _human(tmp_path / "other.jsonl", {"x1": [3], "x2": [4]}),
            metric="faithfulness_offline",
            label="faithful",
        )


def test_labels_picked_among_the_best_scored_items_are_flagged(tmp_path):
    rng = np.random.default_rng(0)
    scores = rng.uniform(size=400).round(4).tolist()
    run = _items(tmp_path / "items.jsonl", scores, [f"c{i}" for i in range(400)])
    best = {f"q{i:02d}": [3 + int(i) % 2] for i in np.argsort(scores)[-40:]}
    drawn = {f"q{i:02d}": [3 + int(i) % 2] for i in rng.choice(400, 40, replace=False)}
    flagged = estimate(run, _human(tmp_path / "best.jsonl", best), metric="faithfulness_offline", label="faithful")
    fair = estimate(run, _human(tmp_path / "drawn.jsonl", drawn), metric="faithfulness_offline", label="faithful")
    assert len(flagged.warnings) == 1 and "random sample" in flagged.warnings[0]
    assert [s.labelled for s in flagged.strata] == [0, 0, 0, 40]
    assert fair.warnings == ()


def test_a_share_is_kept_inside_zero_and_one(tmp_path):
    run = _items(tmp_path / "items.jsonl", SCORES, [f"c{i}" for i in range(20)])
    almost_all = {item: [1] for item in LABELS} | {"q13": [0]}
    result = estimate(
        run, _human(tmp_path / "human.jsonl", almost_all), metric="faithfulness_offline", label="faithful"
    )
    unclipped = labelled_mean([1.0] * 9 + [0.0], clusters=range(10))
    assert unclipped.high > 1 and result.labelled.high == 1.0 and result.ppi.high <= 1.0
    assert result.labelled.low == pytest.approx(unclipped.low)


def test_too_few_labels_is_an_error_that_says_so(tmp_path):
    run = _items(tmp_path / "items.jsonl", SCORES, CONVERSATIONS)
    with pytest.raises(ConfigError, match="only 1 item"):
        estimate(run, _human(tmp_path / "human.jsonl", {"q00": [4]}), metric="faithfulness_offline", label="faithful")
    with pytest.raises(ConfigError, match="one conversation"):
        estimate(
            run,
            _human(tmp_path / "human.jsonl", {"q00": [4], "q01": [2]}),
            metric="faithfulness_offline",
            label="faithful",
        )


def _two_runs(tmp_path):
    a = _items(tmp_path / "a.jsonl", SCORES, CONVERSATIONS, model="rag-a")
    b_scores = [min(1.0, s + 0.1) for s in SCORES]
    b = _items(tmp_path / "b.jsonl", b_scores, CONVERSATIONS, model="rag-b")
    human_a = {item: [v[0]] for item, v in LABELS.items()}
    human_b = {item: [min(5, v[0] + 1)] for item, v in LABELS.items() if item != "q19"}
    rows = [
        {"id": i, "model_id": m, "faithful": v[0]}
        for m, labels in (("rag-a", human_a), ("rag-b", human_b))
        for i, v in labels.items()
    ]
    human = tmp_path / "human.jsonl"
    human.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return a, b, b_scores, human_a, human_b, human


def test_the_paired_estimate_is_that_of_the_differences(tmp_path):
    a, b, b_scores, human_a, human_b, human = _two_runs(tmp_path)
    result = paired_estimate(a, b, human, metric="faithfulness_offline", label="faithful")
    both = sorted(set(human_a) & set(human_b))
    positions = [int(item[1:]) for item in both]
    rest = [i for i in range(20) if i not in positions]
    expected = ppi_mean(
        [human_b[i][0] - human_a[i][0] for i in both],
        [b_scores[p] - SCORES[p] for p in positions],
        [b_scores[p] - SCORES[p] for p in rest],
        clusters=[CONVERSATIONS[p] for p in positions],
        unlabelled_clusters=[CONVERSATIONS[p] for p in rest],
    )
    assert result.ppi == expected
    assert result.of == "difference b − a" and result.counts == {"labelled on one side only": 1}


def test_a_paired_estimate_needs_answers_told_apart(tmp_path):
    a, _, _, _, _, human = _two_runs(tmp_path)
    same = _items(tmp_path / "same.jsonl", SCORES, CONVERSATIONS, model="rag-a")
    with pytest.raises(ConfigError, match="model ids of their own"):
        paired_estimate(a, same, human, metric="faithfulness_offline", label="faithful")
    b = _items(tmp_path / "b2.jsonl", SCORES, CONVERSATIONS, model="rag-b")
    plain = tmp_path / "plain.csv"
    plain.write_text("id,faithful\nq00,4\nq01,3\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="no model_id column"):
        paired_estimate(a, b, plain, metric="faithfulness_offline", label="faithful")


def test_the_command_prints_writes_and_refuses(tmp_path, capsys):
    run = _items(tmp_path / "items.jsonl", SCORES, CONVERSATIONS)
    human = _human(tmp_path / "human.jsonl", LABELS)
    assert (
        main(
            [
                "estimate",
                str(run),
                str(human),
                "--metric",
                "faithfulness_offline",
                "--label",
                "faithful",
                "--format",
                "json",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    direct = estimate(run, human, metric="faithfulness_offline", label="faithful")
    assert data["ppi"]["value"] == pytest.approx(direct.ppi.value)
    assert data["labelled_only"]["n_labelled"] == 10 and data["effective_labels"] == pytest.approx(
        direct.effective_labels
    )
    assert (
        main(
            [
                "estimate",
                str(run),
                str(human),
                "--metric",
                "faithfulness_offline",
                "--label",
                "faithful",
                "--format",
                "markdown",
                "--html",
                str(tmp_path / "estimate.html"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "| PPI++ (faithfulness_offline + 10 labels) |" in out and "```text" in out and "●" in out
    page = (tmp_path / "estimate.html").read_text(encoding="utf-8")
    assert 'id="estimates-figure"' in page and "<svg" in page and "labelled items alone (10)" in page
    before = human.read_bytes()
    assert (
        main(
            [
                "estimate",
                str(run),
                str(human),
                "--metric",
                "faithfulness_offline",
                "--label",
                "faithful",
                "--html",
                str(human),
                "--overwrite",
            ]
        )
        == 2
    )
    assert human.read_bytes() == before
    assert "input" in capsys.readouterr().err


def test_compare_adds_the_estimate_of_peoples_difference(tmp_path, capsys):
    a, b, *_, human = _two_runs(tmp_path)
    assert (
        main(
            [
                "compare",
                str(a),
                str(b),
                "--allow-different-settings",
                "--human",
                str(human),
                "--label",
                "faithful",
                "--estimate",
                "faithfulness_offline",
                "--format",
                "json",
            ]
        )
        == 0
    )
    [comparison] = json.loads(capsys.readouterr().out)
    direct = paired_estimate(a, b, human, metric="faithfulness_offline", label="faithful")
    assert comparison["human_estimate"]["ppi"]["value"] == pytest.approx(direct.ppi.value)
    assert main(["compare", str(a), str(b), "--human", str(human), "--label", "faithful"]) == 2
    assert "--estimate" in capsys.readouterr().err
    assert not math.isnan(direct.ppi.se)


def _exact(successes, n):
    ci = stats.binomtest(successes, n).proportion_ci(confidence_level=0.95, method="exact")
    return ci.low, ci.high


SCORES_30 = SCORES + [0.25, 0.6, 0.8, 0.1, 0.5, 0.95, 0.3, 0.7, 0.45, 0.2]


def test_twenty_labels_of_one_get_clopper_pearsons_interval_and_say_why(tmp_path, capsys):
    run = _items(tmp_path / "items.jsonl", SCORES_30, [f"c{i}" for i in range(30)])
    human = _human(tmp_path / "human.jsonl", {f"q{i:02d}": [1] for i in range(20)})
    result = estimate(run, human, metric="faithfulness_offline", label="faithful")
    low, high = _exact(20, 20)  # 0.8316, 1
    for e in (result.ppi, result.labelled):
        assert (e.value, e.high) == (1.0, high) and e.low == pytest.approx(low, abs=1e-12)
        assert e.lam == 0.0 and math.isnan(e.se) and e.n_labelled == 20
    assert result.ppi.n_unlabelled == 10 and result.effective_labels == 20
    assert result.interval == "clopper-pearson" and "interval:clopper-pearson" in result.signature
    assert result.constant.startswith("every one of the 20 labelled items has faithful = 1")
    assert result.warnings[0] == result.constant
    assert main(["estimate", str(run), str(human), "--metric", "faithfulness_offline", "--label", "faithful"]) == 0
    out = capsys.readouterr().out
    assert "predicts the labels exactly" not in out and "[1.000, 1.000]" not in out
    assert "1.000  [0.832, 1.000]  0.168" in out and "Clopper–Pearson" in out and "do not vary" in out
    assert out.count("every one of the 20") + out.count("Every one of the 20") == 1  # said once, not twice
    assert (
        main(
            [
                "estimate",
                str(run),
                str(human),
                "--metric",
                "faithfulness_offline",
                "--label",
                "faithful",
                "--format",
                "json",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["interval"] == "clopper-pearson" and data["constant_labels"] == result.constant
    assert data["ppi"]["se"] is None and data["labelled_only"]["low"] == pytest.approx(low, abs=1e-12)
    assert (
        main(
            [
                "estimate",
                str(run),
                str(human),
                "--metric",
                "faithfulness_offline",
                "--label",
                "faithful",
                "--format",
                "markdown",
            ]
        )
        == 0
    )
    assert "| labelled items alone (20) | 1.000 | [0.832, 1.000] | 0.168 |" in capsys.readouterr().out


def test_constant_labels_in_conversations_count_the_conversations(tmp_path):
    run = _items(tmp_path / "items.jsonl", SCORES_30, [f"c{i // 2}" for i in range(30)])
    human = _human(tmp_path / "human.jsonl", {f"q{i:02d}": [0] for i in range(20)})  # 10 conversations of 2
    result = estimate(run, human, metric="faithfulness_offline", label="faithful")
    high = _exact(0, 10)[1]
    assert (result.labelled.low, result.labelled.high) == (0.0, pytest.approx(high, abs=1e-12))
    assert result.ppi.n_clusters == 10 and "conversation" in result.constant


def test_a_constant_rating_gets_no_interval_and_says_so(tmp_path, capsys):
    run = _items(tmp_path / "items.jsonl", SCORES, CONVERSATIONS)
    human = _human(tmp_path / "human.jsonl", {item: [4] for item in LABELS})
    result = estimate(run, human, metric="faithfulness_offline", label="faithful")
    for e in (result.ppi, result.labelled):
        assert e.value == 4.0 and math.isnan(e.low) and math.isnan(e.high)
    assert result.interval == "none" and "No interval can be estimated" in result.constant
    assert (
        main(
            [
                "estimate",
                str(run),
                str(human),
                "--metric",
                "faithfulness_offline",
                "--label",
                "faithful",
                "--html",
                str(tmp_path / "page.html"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "4.000  undefined  —" in out and "nan" not in out and "range of faithful is not known" in out
    assert "●" not in out  # no interval to draw
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert "Every one of the 10 labelled items" in page and "Warning: every one" not in page
    assert "nan" not in page and "<td>undefined</td><td>—</td>" in page and "Labels the metric was worth" not in page
    assert (
        main(
            [
                "estimate",
                str(run),
                str(human),
                "--metric",
                "faithfulness_offline",
                "--label",
                "faithful",
                "--format",
                "json",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert (data["ppi"]["value"], data["ppi"]["low"], data["ppi"]["high"]) == (4.0, None, None)


def test_a_paired_estimate_of_equal_differences_is_bounded_too(tmp_path):
    a = _items(tmp_path / "a.jsonl", SCORES, [f"c{i}" for i in range(20)], model="rag-a")
    b = _items(tmp_path / "b.jsonl", [min(1.0, s + 0.1) for s in SCORES], [f"c{i}" for i in range(20)], model="rag-b")
    rows = [{"id": f"q{i:02d}", "model_id": m, "faithful": 1} for m in ("rag-a", "rag-b") for i in range(12)]
    human = tmp_path / "human.jsonl"
    human.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = paired_estimate(a, b, human, metric="faithfulness_offline", label="faithful")
    u = _exact(0, 12)[1]  # no item of 12 differs: a difference in [−1, 1] moves the mean by at most u
    assert result.ppi.value == 0.0 and result.interval == "clopper-pearson"
    assert (result.ppi.low, result.ppi.high) == (pytest.approx(-u, abs=1e-12), pytest.approx(u, abs=1e-12))
    assert "12 items labelled in both runs" in result.constant


def test_a_value_outside_a_zero_one_label_is_an_error_naming_file_line_and_field(tmp_path, capsys):
    run = _items(tmp_path / "items.jsonl", SCORES, CONVERSATIONS)
    human = tmp_path / "human.csv"
    human.write_text("id,model_id,support_present\nq00,rag-a,1\nq01,rag-a,7\nq02,rag-a,0\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        estimate(run, human, metric="faithfulness_offline", label="support_present")
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(human), 3, "support_present")
    assert (
        main(["estimate", str(run), str(human), "--metric", "faithfulness_offline", "--label", "support_present"]) == 2
    )
    err = capsys.readouterr().err
    assert f"{human}:3 field 'support_present': expected 0 or 1, found '7'" in err and "labels merge" in err
    # a rating of another name has no known range: 7 is a value like any other
    human.write_text("id,model_id,faithful\nq00,rag-a,1\nq01,rag-a,7\nq02,rag-a,0\n", encoding="utf-8")
    assert estimate(run, human, metric="faithfulness_offline", label="faithful").labelled.value == pytest.approx(8 / 3)


def test_labels_of_other_model_ids_say_which_ids_differ(tmp_path):
    run = _items(tmp_path / "items.jsonl", SCORES, CONVERSATIONS, model="rag-a")
    with pytest.raises(ConfigError) as caught:
        estimate(
            run,
            _human(tmp_path / "human.jsonl", LABELS, model="rag-z"),
            metric="faithfulness_offline",
            label="faithful",
        )
    assert "model ids 'rag-z'" in str(caught.value) and "'rag-a'" in str(caught.value)


def _paired_human(path, models):
    rows = [{"id": item, "model_id": m, "faithful": v[0]} for m in models for item, v in LABELS.items()]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_paired_estimate_without_matching_model_ids_says_whose_differ(tmp_path, capsys):
    a, b, *_ = _two_runs(tmp_path)  # model ids rag-a and rag-b
    other = _paired_human(tmp_path / "other.jsonl", ("sys-1", "sys-2"))  # 2 × 10 labelled answers
    with pytest.raises(ConfigError) as caught:
        paired_estimate(a, b, other, metric="faithfulness_offline", label="faithful")
    message = str(caught.value)
    assert "0 item(s) have a human faithful of both their answers" in message
    assert "Of the 20 labelled answers" in message and "0 match an answer of a and 0 one of b" in message
    assert "'sys-1', 'sys-2'" in message and "a's 'rag-a' and b's 'rag-b'" in message
    half = _paired_human(tmp_path / "half.jsonl", ("rag-a", "rag-c"))  # b's answers labelled as rag-c
    with pytest.raises(ConfigError) as caught:
        paired_estimate(a, b, half, metric="faithfulness_offline", label="faithful")
    message = str(caught.value)
    assert "10 match an answer of a and 0 one of b; for b," in message and "b's 'rag-b'" in message
    assert (
        main(
            [
                "compare",
                str(a),
                str(b),
                "--allow-different-settings",
                "--human",
                str(other),
                "--label",
                "faithful",
                "--estimate",
                "faithfulness_offline",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "error: 0 item(s) have a human faithful" in err and "'sys-1', 'sys-2'" in err


def test_a_paired_estimate_with_ids_of_other_items_says_so(tmp_path):
    a, b, *_ = _two_runs(tmp_path)
    rows = [{"id": f"x{i}", "model_id": m, "faithful": 3} for m in ("rag-a", "rag-b") for i in range(4)]
    human = tmp_path / "x.jsonl"
    human.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"none of the human file.s.' 4 item ids is an item id of a or b"):
        paired_estimate(a, b, human, metric="faithfulness_offline", label="faithful")
