"""τ_sim calibration (ragmeter.analysis.calibration, `ragmeter calibrate-tau`): the AUROC against scikit-learn's, the
chosen τ against a brute-force search, the Overlap a run would have against `evaluate` at that τ, and bad input."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score, precision_score, roc_auc_score

from ragmeter import ConfigError, HashingEmbedder, InputError, Settings, evaluate, read_records
from ragmeter.analysis.calibration import GRID, calibrate_tau, read_labelled
from ragmeter.cli import main
from ragmeter.io.demo import demo_path
from ragmeter.text.citations import strip_citations

SETTINGS = Settings(embedder="hashing", n_resamples=300)


def _labelled(tmp_path: Path) -> Path:
    """Sentences made from the demo's chunks: a chunk's own words (labelled supported, but 1 in 5 labels flipped,
    as annotators disagree) or another chunk's (not supported), some with a citation marker."""
    chunks = list(dict.fromkeys(c.text for r in read_records(demo_path()) for c in r.contexts))[:60]
    rng = np.random.default_rng(3)
    rows = []
    for i, chunk in enumerate(chunks):
        own = rng.random() < 0.5
        words = (chunk if own else chunks[(i + 7) % len(chunks)]).split()
        start = int(rng.integers(0, max(1, len(words) - 6)))
        sentence = " ".join(words[start : start + 7]) + (" [CIT:doc]." if i % 3 == 0 else ".")
        label = own if rng.random() > 0.2 else not own
        rows.append(
            {
                "sentence": sentence,
                "chunk": chunk,
                "label": "supported" if label else "not supported",
                "conversation_id": f"c{i // 4}",
            }
        )
    path = tmp_path / "labelled.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _cosines(path: Path) -> tuple[np.ndarray, np.ndarray]:
    embedder = HashingEmbedder()
    pairs = read_labelled(path)
    cosines = np.array(
        [float(embedder.encode([strip_citations(p.sentence)])[0] @ embedder.encode([p.chunk])[0]) for p in pairs]
    )
    return cosines, np.array([int(p.supported) for p in pairs])


def test_auroc_and_the_chosen_tau_match_a_reference_search(tmp_path: Path) -> None:
    path = _labelled(tmp_path)
    result = calibrate_tau(path, precision=0.9, settings=SETTINGS)
    cosines, labels = _cosines(path)
    assert result.auroc == pytest.approx(roc_auc_score(labels, cosines), abs=1e-9)
    assert result.auroc_low <= result.auroc <= result.auroc_high
    scores = {t: balanced_accuracy_score(labels, cosines >= t) for t in sorted(set(cosines))}
    best = max(scores.values())
    assert result.best.balanced_accuracy == pytest.approx(best, abs=1e-12)
    assert result.best.tau == pytest.approx(max(t for t, s in scores.items() if abs(s - best) < 1e-12), abs=1e-9)
    assert result.for_precision is not None
    assert precision_score(labels, cosines >= result.for_precision.tau) >= 0.9
    lower = [t for t in set(cosines) if t < result.for_precision.tau - 1e-9]
    assert all(precision_score(labels, cosines >= t, zero_division=0) < 0.9 for t in lower)
    assert [p.tau for p in result.roc] == list(GRID)


def test_the_overlap_a_run_would_have_at_each_tau(tmp_path: Path) -> None:
    records = list(read_records(demo_path()))
    result = calibrate_tau(_labelled(tmp_path), records=records, settings=SETTINGS)
    for tau in (0.5, 0.65, 0.8):
        direct = evaluate(records, metrics=["overlap"], settings=replace(SETTINGS, tau_sim=tau))
        assert result.overlap_at[tau] == pytest.approx(direct.summary("overlap").value, abs=1e-12)
    values = list(result.overlap_at.values())
    assert values == sorted(values, reverse=True)  # a stricter τ never supports more sentences


def test_bad_labelled_files_say_where(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"sentence": "s", "chunk": "c", "label": 1}\n{"sentence": "s", "chunk": "c", "label": "maybe"}\n',
        encoding="utf-8",
    )
    with pytest.raises(InputError) as caught:
        read_labelled(path)
    assert (caught.value.line, caught.value.field) == (2, "label")
    assert caught.value.reason == (
        "a label is 1, 1.0, true, yes or supported for a sentence its chunk supports; 0, 0.0, false, no, not "
        "supported or unsupported for one it does not (any case); got 'maybe'"
    )
    one_class = tmp_path / "one.jsonl"
    one_class.write_text('{"sentence": "s", "chunk": "c", "label": 1}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="labelled supported and others labelled not supported"):
        calibrate_tau(one_class, settings=SETTINGS)


def test_the_command(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = _labelled(tmp_path)
    assert main(["calibrate-tau", str(path), "--embedder", "hashing", "--n-resamples", "200", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 60 and out["embedder"].startswith("hashing") and len(out["roc"]) == len(GRID)
    assert main(["calibrate-tau", str(path), "--embedder", "hashing", "--n-resamples", "200"]) == 0
    assert "AUROC of the cosine" in capsys.readouterr().out


def test_an_interval_that_cannot_be_computed_says_why(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Two labelled sentences of one conversation: AUROC is 1 (the supported one has the higher cosine, as the
    hashing embedder gives the chunk's own words cosine 1), but no bootstrap over conversations exists."""
    path = tmp_path / "two.jsonl"
    rows = [
        {"sentence": "the shop opens at nine", "chunk": "the shop opens at nine", "label": 1, "conversation_id": "c1"},
        {
            "sentence": "penguins live in the south",
            "chunk": "the shop opens at nine",
            "label": 0,
            "conversation_id": "c1",
        },
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    reason = "interval undefined: the 2 labelled pairs come from 1 conversation; resampling needs 2 or more"
    result = calibrate_tau(path, settings=SETTINGS)
    assert result.auroc == 1.0 and result.auroc_interval_undefined == reason
    assert main(["calibrate-tau", str(path), "--embedder", "hashing", "--n-resamples", "200"]) == 0
    table = capsys.readouterr().out
    assert "AUROC of the cosine: 1.000 " + reason in table and "nan" not in table
    assert main(["calibrate-tau", str(path), "--embedder", "hashing", "--n-resamples", "200", "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert "NaN" not in out
    saved = json.loads(out)
    assert saved["auroc_interval"] == [None, None] and saved["auroc_interval_undefined"] == reason


def test_every_label_the_help_names_is_read_as_it_says(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    supported = [1, 1.0, True, "1", "TRUE", "Yes", " supported "]
    not_supported = [0, 0.0, False, "0", "False", "NO", "Not Supported", "unsupported"]
    path = tmp_path / "labels.jsonl"
    path.write_text(
        "".join(
            json.dumps({"sentence": "s", "chunk": "c", "label": label}) + "\n" for label in supported + not_supported
        ),
        encoding="utf-8",
    )
    assert [pair.supported for pair in read_labelled(path)] == [True] * 7 + [False] * 8
    with pytest.raises(SystemExit):
        main(["calibrate-tau", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert (
        "label and, optionally, conversation_id; a label is 1, 1.0, true, yes or supported for a sentence its "
        "chunk supports; 0, 0.0, false, no, not supported or unsupported for one it does not (any case)"
    ) in help_text
