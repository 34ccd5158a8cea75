"""Agreement of a score with human judgements (ragmeter.human.with_people, `ragmeter agree`): the statistics against
scipy and scikit-learn on random data, constructed files with known answers, the file formats and joins."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from scipy.stats import kendalltau, pearsonr, spearmanr
from sklearn.metrics import balanced_accuracy_score, cohen_kappa_score, roc_auc_score

from ragmeter import ConfigError, Settings
from ragmeter.cli import main
from ragmeter.human.with_people import agreement
from ragmeter.stats.correlation import auroc, balanced_accuracy, decision_kappa, kendall, pearson, spearman

SETTINGS = Settings(n_resamples=300)


@pytest.mark.parametrize("seed", range(4))
def test_statistics_equal_scipy_and_scikit_learn_on_random_data(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=120).round(1)  # rounded: ties in both columns
    y = (x + rng.normal(size=120)).round(0)
    assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    assert kendall(x, y) == pytest.approx(kendalltau(x, y).statistic, abs=1e-12)
    assert pearson(x, y) == pytest.approx(pearsonr(x, y).statistic, abs=1e-12)
    labels = (y > 0).astype(int)
    assert auroc(x, labels) == pytest.approx(roc_auc_score(labels, x), abs=1e-12)
    decisions = (x >= 0.2).astype(int)
    assert balanced_accuracy(x, labels, 0.2) == pytest.approx(balanced_accuracy_score(labels, decisions), abs=1e-12)
    assert decision_kappa(x, labels, 0.2) == pytest.approx(cohen_kappa_score(labels, decisions), abs=1e-12)


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_a_score_that_is_a_monotone_function_of_the_label_agrees_perfectly(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    ratings = rng.integers(1, 6, 60)
    scores = _write(
        tmp_path / "items.jsonl",
        [
            {"id": f"q{i}", "conversation_id": f"c{i // 3}", "scores": {"m": float(np.exp(r))}}
            for i, r in enumerate(ratings)
        ],
    )
    human = _write(
        tmp_path / "human.jsonl",
        [{"id": f"q{i}", "annotator": a, "rating": int(r)} for i, r in enumerate(ratings) for a in ("ann1", "ann2")],
    )
    result = agreement(scores, human, metric="m", label="rating", settings=SETTINGS)
    assert result.kind == "scale" and result.n == 60
    assert {f.name: f.value for f in result.figures}["Spearman"] == pytest.approx(1.0)
    assert result.ceiling is not None and result.ceiling.value == pytest.approx(1.0)  # the annotators agree
    labels = _write(tmp_path / "labels.jsonl", [{"id": f"q{i}", "good": int(r >= 3)} for i, r in enumerate(ratings)])
    binary = agreement(scores, labels, metric="m", label="good", threshold=float(np.exp(2.5)), settings=SETTINGS)
    figures = {f.name: f.value for f in binary.figures}
    assert binary.kind == "binary" and figures["AUROC"] == 1.0 and figures["balanced accuracy"] == 1.0
    assert figures["Cohen's kappa"] == pytest.approx(1.0)


def test_independent_columns_give_intervals_around_no_agreement(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    scores = _write(
        tmp_path / "s.jsonl",
        [{"id": f"q{i}", "conversation_id": f"c{i // 2}", "m": float(v)} for i, v in enumerate(rng.random(300))],
    )
    rated = _write(tmp_path / "r.jsonl", [{"id": f"q{i}", "r": int(v)} for i, v in enumerate(rng.integers(1, 5, 300))])
    labelled = _write(
        tmp_path / "l.jsonl", [{"id": f"q{i}", "l": int(v)} for i, v in enumerate(rng.integers(0, 2, 300))]
    )
    scale = {f.name: f for f in agreement(scores, rated, metric="m", label="r", settings=SETTINGS).figures}
    binary = {f.name: f for f in agreement(scores, labelled, metric="m", label="l", settings=SETTINGS).figures}
    for figure in scale.values():
        assert figure.low < 0 < figure.high, figure
    assert binary["AUROC"].low < 0.5 < binary["AUROC"].high


def test_mtrag_files_join_on_task_and_model_and_read_annotator_objects(tmp_path: Path) -> None:
    scored = _write(
        tmp_path / "out.jsonl",
        [
            {"task_id": "c1<::>1", "model_id": "a", "metrics": {"RL_F": [0.2]}},
            {"task_id": "c1<::>1", "model_id": "b", "metrics": {"RL_F": [0.9]}},
            {"task_id": "c2<::>1", "model_id": "a", "metrics": {"RL_F": [0.5]}},
            {"task_id": "c2<::>2", "model_id": "a", "metrics": {"RL_F": [0.6]}},
            {"task_id": "c3<::>1", "model_id": "a", "metrics": {"RL_F": []}},
        ],
    )
    ratings = _write(
        tmp_path / "ratings.jsonl",
        [
            {"task_id": "c1<::>1", "model_id": "a", "faithfulness": {"x": "1", "y": "2"}},
            {"task_id": "c1<::>1", "model_id": "b", "faithfulness": {"x": "4", "y": "4"}},
            {"task_id": "c2<::>1", "model_id": "a", "faithfulness": {"x": "3", "y": "2"}},
            {"task_id": "c2<::>2", "model_id": "a", "faithfulness": {"x": "3"}},
            {"task_id": "c3<::>1", "model_id": "a", "faithfulness": {"x": "3"}},
            {"task_id": "c9<::>1", "model_id": "a", "faithfulness": {"x": "3"}},
        ],
    )
    result = agreement(scored, ratings, metric="RL_F", label="faithfulness", per_annotator=True, settings=SETTINGS)
    # scores 0.2, 0.9, 0.5, 0.6 against means 1.5, 4, 2.5, 3: the same order, ρ = 1
    assert result.n == 4 and {f.name: f.value for f in result.figures}["Spearman"] == pytest.approx(1.0)
    assert result.counts == {"scored only": 0, "labelled only": 1, "score undefined": 1}
    assert {a: n for a, (n, _) in result.per_annotator.items()} == {"x": 4, "y": 3}


def test_csv_labels_with_ties_and_clear_errors(tmp_path: Path) -> None:
    scores = _write(tmp_path / "s.jsonl", [{"id": f"q{i}", "m": i / 10} for i in range(8)])
    path = tmp_path / "labels.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "annotator", "ok"])
        for i in range(8):
            writer.writerow([f"q{i}", "ann1", int(i >= 4)])
            writer.writerow([f"q{i}", "ann2", int(i >= 4) if i != 0 else 1])  # q0: a tie
    result = agreement(scores, path, metric="m", label="ok", settings=SETTINGS)
    assert result.counts["annotators tied"] == 1 and result.n == 7
    assert {f.name: f.value for f in result.figures}["AUROC"] == 1.0
    # the ceiling counts the tied item too: on the items kept, two annotators always agree
    expected_alpha = krippendorff.alpha(
        reliability_data=[[int(i >= 4) for i in range(8)], [1] + [int(i >= 4) for i in range(1, 8)]],
        level_of_measurement="nominal",
    )
    assert result.ceiling is not None and result.ceiling.value == pytest.approx(expected_alpha)
    with pytest.raises(ConfigError, match=r"has no value of 'missing'.*: give --metric one of m$"):
        agreement(scores, path, metric="missing", label="ok")
    with pytest.raises(ConfigError, match=r"has no value of the label 'okay': give --label one of ok$"):
        agreement(scores, path, metric="m", label="okay")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "q1", "m": "high"}\n', encoding="utf-8")
    from ragmeter.core.errors import InputError

    with pytest.raises(InputError, match="not a number") as caught:
        agreement(bad, path, metric="m", label="ok")
    assert caught.value.line == 1 and caught.value.field == "m"


def test_the_command_prints_the_figures_and_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    scores = _write(tmp_path / "s.jsonl", [{"id": f"q{i}", "m": i} for i in range(10)])
    human = _write(tmp_path / "h.jsonl", [{"id": f"q{i}", "r": i % 5} for i in range(10)])
    assert main(["agree", str(scores), str(human), "--metric", "m", "--label", "r", "--n-resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert "m against human r (rating scale" in out and "Spearman" in out and "Signature: agree|" in out
    assert (
        main(
            [
                "agree",
                str(scores),
                str(human),
                "--metric",
                "m",
                "--label",
                "r",
                "--format",
                "json",
                "--html",
                str(tmp_path / "agree.html"),
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["n"] == 10
    page = (tmp_path / "agree.html").read_text(encoding="utf-8")
    assert '<table id="agreement">' in page and '<figure id="agreement-figure"><svg' in page
    assert main(["agree", str(scores), str(tmp_path / "none.jsonl"), "--metric", "m", "--label", "r"]) == 2
    assert f"error: {tmp_path / 'none.jsonl'}: no such file: check the path" in capsys.readouterr().err


def test_files_saved_by_a_spreadsheet(tmp_path: Path) -> None:
    scores = _write(tmp_path / "s.jsonl", [{"id": f"q{i}", "m": i / 10} for i in range(5)])
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbfid,r\r\n" + b"".join(f"q{i},{i % 3}\r\n".encode() for i in range(5)))
    assert agreement(scores, bom, metric="m", label="r", settings=SETTINGS).n == 5  # the BOM is not in "id"
    latin = tmp_path / "cp1252.csv"
    latin.write_bytes(b"id,r\r\nq0,1\r\nq\xe91,2\r\nq2,3\r\n")
    from ragmeter.core.errors import InputError

    with pytest.raises(InputError, match="not UTF-8") as caught:
        agreement(scores, latin, metric="m", label="r")
    assert caught.value.line == 3


def test_filled_annotation_templates_are_read_as_human_labels(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The bundled demo labels (two annotators' filled templates): their answer rows, each file's annotator."""
    assert main(["demo", str(tmp_path)]) == 0
    files = [tmp_path / "demo-labels-ana.csv", tmp_path / "demo-labels-ben.csv"]
    votes: dict[str, list[int]] = {}
    for path in files:
        with path.open(newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                if row["unit"] == "answer":
                    votes.setdefault(row["record_id"], []).append(int(row["proper_action"]))
    rng = np.random.default_rng(3)
    ids = sorted(votes)
    values = rng.random(len(ids)).round(2)
    scores = _write(tmp_path / "s.jsonl", [{"id": i, "m": float(v)} for i, v in zip(ids, values, strict=True)])
    result = agreement(scores, files, metric="m", label="proper_action", per_annotator=True, settings=SETTINGS)
    kept = [(v, sum(votes[i]) // 2) for i, v in zip(ids, values, strict=True) if len(set(votes[i])) == 1]
    assert result.n == len(kept) and result.counts["annotators tied"] == len(ids) - len(kept) > 0
    assert {f.name: f.value for f in result.figures}["AUROC"] == pytest.approx(
        roc_auc_score([label for _, label in kept], [v for v, _ in kept])
    )
    assert set(result.per_annotator) == {"ana", "ben"}
    with pytest.raises(ConfigError, match="'misleading' is a chunk label"):
        agreement(scores, files, metric="m", label="misleading")
    # an annotator's file as the scores (as 'labels annotate' writes one): Ana's labels against Ben's
    ana, ben = ([v[k] for k in ids] for v in ({i: votes[i][0] for i in ids}, {i: votes[i][1] for i in ids}))
    against = agreement(files[0], files[1], metric="proper_action", label="proper_action", settings=SETTINGS)
    figures = {f.name: f.value for f in against.figures}
    assert against.n == 45 and figures["Cohen's kappa"] == pytest.approx(cohen_kappa_score(ben, ana))


def test_undefined_figures_and_intervals_say_why(tmp_path: Path) -> None:
    """One conversation: every interval is undefined, and says so; ratings that are all equal: Spearman, Kendall
    and Pearson are undefined, and say so; in the table and as null with a reason in JSON, never NaN."""
    from ragmeter.report.people import render_agreement_figures

    scores = _write(tmp_path / "s.jsonl", [{"id": f"q{i}", "conversation_id": "c1", "m": i / 10} for i in range(6)])
    labels = _write(tmp_path / "l.jsonl", [{"id": f"q{i}", "ok": int(i >= 3)} for i in range(6)])
    result = agreement(scores, labels, metric="m", label="ok", settings=SETTINGS)
    reason = "interval undefined: the 6 items come from 1 conversation; resampling needs 2 or more"
    auroc_figure = {f.name: f for f in result.figures}["AUROC"]
    assert auroc_figure.value == 1.0 and auroc_figure.undefined == reason
    saved = auroc_figure.to_dict()
    assert (saved["value"], saved["low"], saved["high"], saved["undefined"]) == (1.0, None, None, reason)
    table = render_agreement_figures(result)
    assert f"AUROC{' ' * 35}   1.000  {reason}" in table and "nan" not in table
    rated = _write(tmp_path / "r.jsonl", [{"id": f"q{i}", "r": 3} for i in range(6)])
    flat = agreement(scores, rated, metric="m", label="r", settings=SETTINGS)
    assert {f.name: f.undefined for f in flat.figures} == dict.fromkeys(
        ("Spearman", "Kendall tau-b", "Pearson"), "undefined: every rating is 3"
    )
    assert "–  undefined: every rating is 3" in render_agreement_figures(flat)
    assert "NaN" not in json.dumps(flat.to_dict())


def test_a_threshold_that_splits_nothing_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Scores 0 to 0.5 of token_f1 (a 0–1 metric): a threshold of 5 decides every item negative, one of −1 every item
    positive, so balanced accuracy and κ would measure nothing; on a rating scale a threshold is never read."""
    scores = _write(tmp_path / "s.jsonl", [{"id": f"q{i}", "token_f1": i / 10, "m": i + 1} for i in range(6)])
    labels = _write(tmp_path / "l.jsonl", [{"id": f"q{i}", "ok": int(i >= 3)} for i in range(6)])
    with pytest.raises(ConfigError) as caught:
        agreement(scores, labels, metric="token_f1", label="ok", threshold=5, settings=SETTINGS)
    assert str(caught.value) == (
        "--threshold 5 puts all 6 items below it (decided negative): the scores range from 0 to 0.5, and token_f1 "
        "ranges over [0, 1]; choose a threshold above the lowest score and at most the highest"
    )
    with pytest.raises(ConfigError, match=r"^--threshold -1 puts all 6 items at or above it \(decided positive\)"):
        agreement(scores, labels, metric="token_f1", label="ok", threshold=-1, settings=SETTINGS)
    # the default 0.5 on scores 1 to 6 (a metric the registry does not know: no range to name)
    with pytest.raises(ConfigError) as caught:
        agreement(scores, labels, metric="m", label="ok", settings=SETTINGS)
    assert str(caught.value) == (
        "--threshold 0.5 (the default) puts all 6 items at or above it (decided positive): the scores range from 1 "
        "to 6; choose a threshold above the lowest score and at most the highest"
    )
    assert agreement(scores, labels, metric="token_f1", label="ok", threshold=0.3, settings=SETTINGS).n == 6
    rated = _write(tmp_path / "r.jsonl", [{"id": f"q{i}", "r": i % 4 + 1} for i in range(6)])
    with pytest.raises(ConfigError, match=r"^--threshold applies to 0/1 labels; 'r' is a rating scale"):
        agreement(scores, rated, metric="token_f1", label="r", threshold=0.3, settings=SETTINGS)
    assert main(["agree", str(scores), str(labels), "--metric", "token_f1", "--label", "ok", "--threshold", "5"]) == 2
    assert "--threshold 5 puts all 6 items below it" in capsys.readouterr().err
