"""``ragmeter estimate`` and ``compare --human``: a run's items and people's labels in, the prediction-powered
estimates out (the estimator itself is tested in tests/stats/test_ppi.py against ppi-python)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ragmeter.analysis.estimate import estimate, paired_estimate
from ragmeter.cli.commands import main
from ragmeter.core.errors import ConfigError
from ragmeter.stats.ppi import labelled_mean, ppi_mean


def _items(path, scores, conversations, model="rag-a", metric="faithfulness_offline"):
    rows = [{"id": f"q{i:02d}", "model_id": model, "conversation_id": c,
             "scores": {metric: None if s is None else s}, "undefined": {}}
            for i, (s, c) in enumerate(zip(scores, conversations, strict=True))]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _human(path, labels, model="rag-a", name="faithful"):
    """labels: id → list of annotators' values."""
    rows = [{"id": item, "model_id": model, "annotator": f"p{k}", name: v}
            for item, values in labels.items() for k, v in enumerate(values)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


SCORES = [0.9, 0.2, 0.8, 0.7, 0.1, 0.95, 0.5, 0.6, 0.3, 0.85, 0.4, 0.75, 0.65, 0.15, 0.55, 0.35, 0.45, 0.9,
          0.05, 0.7]
CONVERSATIONS = [f"c{i // 2}" for i in range(20)]  # ten conversations of two turns
LABELS = {"q00": [4, 5], "q01": [2], "q02": [4], "q05": [5, 4], "q07": [3], "q08": [2, 2], "q10": [3],
          "q13": [1], "q15": [2], "q19": [4]}


def test_the_estimates_are_those_of_the_runs_items_and_the_annotators_means(tmp_path):
    run = _items(tmp_path / "items.jsonl", SCORES, CONVERSATIONS)
    result = estimate(run, _human(tmp_path / "human.jsonl", LABELS), metric="faithfulness_offline",
                      label="faithful")
    labelled = sorted(LABELS)
    positions = [int(item[1:]) for item in labelled]
    y = np.array([np.mean(LABELS[item]) for item in labelled])
    f = np.array([SCORES[i] for i in positions])
    rest = [i for i in range(20) if i not in positions]
    expected = ppi_mean(y, f, [SCORES[i] for i in rest], clusters=[CONVERSATIONS[i] for i in positions],
                        unlabelled_clusters=[CONVERSATIONS[i] for i in rest])
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
    result = estimate(run, _human(tmp_path / "human.jsonl", LABELS), metric="faithfulness_offline",
                      label="faithful")
    positions = [int(item[1:]) for item in sorted(LABELS)]
    rest = [i for i in range(20) if i not in positions]
    expected = ppi_mean([np.mean(LABELS[item]) for item in sorted(LABELS)], [SCORES[i] for i in positions],
                        [SCORES[i] for i in rest], clusters=positions, unlabelled_clusters=rest)
    assert result.ppi == expected and result.ppi.n_clusters == 10
    assert not result.clustered and "resample:items" in result.signature


def test_labels_of_other_items_and_undefined_scores_are_counted_and_said(tmp_path):
    scores = [None if i in (1, 4) else s for i, s in enumerate(SCORES)]
    run = _items(tmp_path / "items.jsonl", scores, CONVERSATIONS)
    result = estimate(run, _human(tmp_path / "human.jsonl", {**LABELS, "x1": [3], "x2": [4]}),
                      metric="faithfulness_offline", label="faithful")
    assert result.counts == {"labelled, not in the run": 2, "score undefined": 2, "labelled, score undefined": 1}
    assert result.n_items == 18 and result.labelled.n_labelled == 9
    assert any("2 labelled item(s) are not in" in w and "x1" in w for w in result.warnings)
    with pytest.raises(ConfigError, match="no labelled item"):
        estimate(run, _human(tmp_path / "other.jsonl", {"x1": [3], "x2": [4]}), metric="faithfulness_offline",
                 label="faithful")


def test_labels_picked_among_the_best_scored_items_are_flagged(tmp_path):
    rng = np.random.default_rng(0)
    scores = rng.uniform(size=400).round(4).tolist()
    run = _items(tmp_path / "items.jsonl", scores, [f"c{i}" for i in range(400)])
    best = {f"q{i:02d}": [4] for i in np.argsort(scores)[-40:]}
    drawn = {f"q{i:02d}": [4] for i in rng.choice(400, 40, replace=False)}
    flagged = estimate(run, _human(tmp_path / "best.jsonl", best), metric="faithfulness_offline", label="faithful")
    fair = estimate(run, _human(tmp_path / "drawn.jsonl", drawn), metric="faithfulness_offline", label="faithful")
    assert len(flagged.warnings) == 1 and "random sample" in flagged.warnings[0]
    assert [s.labelled for s in flagged.strata] == [0, 0, 0, 40]
    assert fair.warnings == ()


def test_a_share_is_kept_inside_zero_and_one(tmp_path):
    run = _items(tmp_path / "items.jsonl", SCORES, [f"c{i}" for i in range(20)])
    almost_all = {item: [1] for item in LABELS} | {"q13": [0]}
    result = estimate(run, _human(tmp_path / "human.jsonl", almost_all), metric="faithfulness_offline",
                      label="faithful")
    unclipped = labelled_mean([1.0] * 9 + [0.0], clusters=range(10))
    assert unclipped.high > 1 and result.labelled.high == 1.0 and result.ppi.high <= 1.0
    assert result.labelled.low == pytest.approx(unclipped.low)


def test_too_few_labels_is_an_error_that_says_so(tmp_path):
    run = _items(tmp_path / "items.jsonl", SCORES, CONVERSATIONS)
    with pytest.raises(ConfigError, match="only 1 item"):
        estimate(run, _human(tmp_path / "human.jsonl", {"q00": [4]}), metric="faithfulness_offline",
                 label="faithful")
    with pytest.raises(ConfigError, match="one conversation"):
        estimate(run, _human(tmp_path / "human.jsonl", {"q00": [4], "q01": [2]}), metric="faithfulness_offline",
                 label="faithful")


def _two_runs(tmp_path):
    a = _items(tmp_path / "a.jsonl", SCORES, CONVERSATIONS, model="rag-a")
    b_scores = [min(1.0, s + 0.1) for s in SCORES]
    b = _items(tmp_path / "b.jsonl", b_scores, CONVERSATIONS, model="rag-b")
    human_a = {item: [v[0]] for item, v in LABELS.items()}
    human_b = {item: [min(5, v[0] + 1)] for item, v in LABELS.items() if item != "q19"}
    rows = [{"id": i, "model_id": m, "faithful": v[0]}
            for m, labels in (("rag-a", human_a), ("rag-b", human_b)) for i, v in labels.items()]
    human = tmp_path / "human.jsonl"
    human.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return a, b, b_scores, human_a, human_b, human


def test_the_paired_estimate_is_that_of_the_differences(tmp_path):
    a, b, b_scores, human_a, human_b, human = _two_runs(tmp_path)
    result = paired_estimate(a, b, human, metric="faithfulness_offline", label="faithful")
    both = sorted(set(human_a) & set(human_b))
    positions = [int(item[1:]) for item in both]
    rest = [i for i in range(20) if i not in positions]
    expected = ppi_mean([human_b[i][0] - human_a[i][0] for i in both],
                        [b_scores[p] - SCORES[p] for p in positions], [b_scores[p] - SCORES[p] for p in rest],
                        clusters=[CONVERSATIONS[p] for p in positions],
                        unlabelled_clusters=[CONVERSATIONS[p] for p in rest])
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
    assert main(["estimate", str(run), str(human), "--metric", "faithfulness_offline", "--label", "faithful",
                 "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    direct = estimate(run, human, metric="faithfulness_offline", label="faithful")
    assert data["ppi"]["value"] == pytest.approx(direct.ppi.value)
    assert data["labelled_only"]["n_labelled"] == 10 and data["effective_labels"] == pytest.approx(
        direct.effective_labels)
    assert main(["estimate", str(run), str(human), "--metric", "faithfulness_offline", "--label", "faithful",
                 "--format", "markdown", "--html", str(tmp_path / "estimate.html")]) == 0
    out = capsys.readouterr().out
    assert "| PPI++ (faithfulness_offline + 10 labels) |" in out and "```text" in out and "●" in out
    page = (tmp_path / "estimate.html").read_text(encoding="utf-8")
    assert 'id="estimates-figure"' in page and "<svg" in page and "labelled items alone (10)" in page
    before = human.read_bytes()
    assert main(["estimate", str(run), str(human), "--metric", "faithfulness_offline", "--label", "faithful",
                 "--html", str(human), "--overwrite"]) == 2
    assert human.read_bytes() == before
    assert "input" in capsys.readouterr().err


def test_compare_adds_the_estimate_of_peoples_difference(tmp_path, capsys):
    a, b, *_, human = _two_runs(tmp_path)
    assert main(["compare", str(a), str(b), "--allow-different-settings", "--human", str(human), "--label",
                 "faithful", "--estimate", "faithfulness_offline", "--format", "json"]) == 0
    [comparison] = json.loads(capsys.readouterr().out)
    direct = paired_estimate(a, b, human, metric="faithfulness_offline", label="faithful")
    assert comparison["human_estimate"]["ppi"]["value"] == pytest.approx(direct.ppi.value)
    assert main(["compare", str(a), str(b), "--human", str(human), "--label", "faithful"]) == 2
    assert "--estimate" in capsys.readouterr().err
    assert not math.isnan(direct.ppi.se)
