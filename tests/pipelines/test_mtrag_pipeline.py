"""MT-RAG's evaluation pipeline (``ragmeter.pipelines.mtrag.steps``) and its run summary
(``ragmeter.pipelines.mtrag.summary``), SPEC §5.

Every ``run_step`` here gets :class:`WordEncoder`, a deterministic token encoder whose BERTScore values
can be worked out by hand (see its docstring), so no model is loaded in this file.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import shared_data_file
from mtrag_rows import mtrag_row, read_jsonl, write_jsonl
from statsmodels.stats.proportion import proportion_confint

from ragmeter import Settings
from ragmeter.core.errors import ConfigError
from ragmeter.core.records import Answerability
from ragmeter.metrics.bertscore import MTRAG_DEBERTA_BASELINE
from ragmeter.metrics.mtrag.algorithmic import RbAgg, idk_condition, rb_agg
from ragmeter.metrics.rouge import rouge_l
from ragmeter.models.base import TokenEmbeddings
from ragmeter.pipelines.mtrag.steps import ALGORITHMIC_METRICS, partial_paths, run_step, step_made_by
from ragmeter.pipelines.mtrag.summary import summarize_rows
from ragmeter.report.mtrag import render_summary

DETECTOR = "detector:idk-en-1+id-3"
PER_REFERENCE = ("Recall", "RougeL_stemFalse", "BertscoreP", "BertscoreR", "Length", "LengthChars")
PER_PASSAGE = ("BertKPrec", "Extractiveness_RougeL")


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------


class WordEncoder:
    """One token per lowercase word (``\\w+``), one-hot, between a [CLS] and a [SEP] row of weight 0.

    The words used in hand-worked examples get their own dimension, any other word a crc32 bucket, and
    [CLS]/[SEP] two dimensions of their own, so a content token's best cosine is 1 when its word occurs
    on the other side and 0 otherwise:  BertscoreP = share of the answer's words found in the
    reference, BertscoreR = share of the reference's words found in the answer; an empty text has no
    content token and scores 0. Every call's texts are kept in ``calls``.
    """

    token_model_id = "test-onehot-words"
    VOCAB = ("the", "a", "cat", "sat", "on", "mat", "was", "dog", "rug", "hat", "blue", "sky", "is")
    BUCKETS = 1024

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.index = {word: 2 + i for i, word in enumerate(self.VOCAB)}
        self.dim = 2 + len(self.VOCAB) + self.BUCKETS

    def _dimension(self, word: str) -> int:
        return self.index.get(word, 2 + len(self.VOCAB) + zlib.crc32(word.encode()) % self.BUCKETS)

    def encode_tokens(self, texts: Sequence[str]) -> list[TokenEmbeddings]:
        self.calls.append(list(texts))
        out = []
        for text in texts:
            words = re.findall(r"\w+", text.lower())
            vectors = np.zeros((len(words) + 2, self.dim), dtype=np.float32)
            vectors[0, 0] = 1.0  # [CLS]
            vectors[-1, 1] = 1.0  # [SEP]
            for k, word in enumerate(words, start=1):
                vectors[k, self._dimension(word)] = 1.0
            weights = np.array([0.0] + [1.0] * len(words) + [0.0], dtype=np.float32)
            out.append(TokenEmbeddings(vectors, weights))
        return out

    @property
    def texts_encoded(self) -> int:
        return sum(len(call) for call in self.calls)


def run_rows(
    tmp_path: Path, rows: Sequence[dict[str, Any]], step: str = "algorithmic", **kwargs: Any
) -> tuple[list[dict[str, Any]], Any]:
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    kwargs.setdefault("token_encoder", WordEncoder())
    report = run_step(step, source, tmp_path / "out.jsonl", **kwargs)
    return read_jsonl(tmp_path / "out.jsonl"), report


def only_metrics(tmp_path: Path, row: dict[str, Any], step: str = "algorithmic", **kwargs: Any) -> dict[str, Any]:
    rows, _ = run_rows(tmp_path, [row], step, **kwargs)
    return rows[0]["metrics"]


def real_lines(n: int) -> list[str]:
    path = shared_data_file("mtrag", "human_eval_tasks.jsonl")
    with path.open(encoding="utf-8") as handle:
        return list(itertools.islice(handle, n))


# --------------------------------------------------------------------------------------------------
# 1. edge records and list shapes
# --------------------------------------------------------------------------------------------------


def test_list_shapes_follow_references_and_passages(tmp_path: Path) -> None:
    metrics = only_metrics(
        tmp_path,
        mtrag_row(
            "t<::>1",
            "The cat sat on the mat.",
            targets=["A cat was on the mat", "The dog sat on the rug"],
            contexts=["the mat", "a dog", "blue sky"],
        ),
    )
    for name in PER_REFERENCE:
        assert isinstance(metrics[name], list) and len(metrics[name]) == 2, name
    for name in PER_PASSAGE:
        assert isinstance(metrics[name], list) and len(metrics[name]) == 3, name
    assert len(metrics["RB_agg"]) == 1 and len(metrics["RB_agg_zero_denominator"]) == 1
    assert set(metrics) == set(ALGORITHMIC_METRICS)
    assert metrics["Length"] == [6, 6] and metrics["LengthChars"] == [23, 23]
    # RB_agg uses the first reference: LCS(the cat sat on the mat / a cat was on the mat) = 4 of 6 and 6
    assert metrics["RougeL_stemFalse"][0] == pytest.approx(2 / 3)


@pytest.mark.parametrize("targets", [None, []], ids=["targets-absent", "targets-empty"])
def test_record_without_targets_has_no_per_reference_lists(tmp_path: Path, targets: list[str] | None) -> None:
    metrics = only_metrics(
        tmp_path,
        mtrag_row("t<::>1", "The cat sat on the mat.", targets=targets, contexts=["the mat"], answerability=None),
    )
    for name in PER_REFERENCE:
        assert name not in metrics, f"{name} must be absent, not empty"
    assert metrics["undefined"] == dict.fromkeys(PER_REFERENCE, "no reference")  # absent, with the reason
    assert metrics["BertKPrec"] == [pytest.approx(0.5)]  # 'the', 'the', 'mat' of 6 words
    assert metrics["Extractiveness_RougeL"] == [1.0]
    assert metrics["RB_agg"] == [0.0]
    assert metrics["RB_agg_zero_denominator"] == [True]


@pytest.mark.parametrize("contexts", [[], None], ids=["contexts-empty", "contexts-absent"])
def test_record_without_passages_has_no_per_passage_lists(tmp_path: Path, contexts: list[str] | None) -> None:
    metrics = only_metrics(
        tmp_path, mtrag_row("t<::>1", "The cat sat on the mat.", targets=["A cat was on the mat"], contexts=contexts)
    )
    for name in PER_PASSAGE:
        assert name not in metrics, f"{name} must be absent, not empty"
    assert metrics["undefined"] == dict.fromkeys(PER_PASSAGE, "no passages")  # absent, with the reason
    assert metrics["Recall"] == [pytest.approx(0.75)]
    assert metrics["RB_agg"] == [0.0]
    assert metrics["RB_agg_zero_denominator"] == [True]


@pytest.mark.parametrize("prediction", ["", "   \n"], ids=["empty", "whitespace"])
def test_empty_prediction_scores_zero_without_error(tmp_path: Path, prediction: str) -> None:
    rows, report = run_rows(
        tmp_path,
        [mtrag_row("t<::>1", prediction, targets=["The cat sat", "on the mat"], contexts=["the cat sat on the mat"])],
        step="all",
    )
    metrics = rows[0]["metrics"]
    assert report.skipped == [] and report.written == 1
    assert metrics["Recall"] == [0.0, 0.0]
    assert metrics["RougeL_stemFalse"] == [0.0, 0.0]
    assert metrics["BertscoreP"] == [0.0, 0.0] and metrics["BertscoreR"] == [0.0, 0.0]
    assert metrics["Length"] == [0, 0]
    assert metrics["LengthChars"] == [len(prediction)] * 2
    assert metrics["BertKPrec"] == [0.0]
    assert metrics["Extractiveness_RougeL"] == [0.0]
    assert metrics["RB_agg"] == [0.0]
    assert metrics["RB_agg_zero_denominator"] == [True]
    # an empty answer counts as an IDK answer (no sentence that is not IDK): answerable → 0
    assert metrics["idk_eval"] == [1.0]
    assert metrics["RB_agg_idk"] == [0.0]


def test_non_ascii_text_is_scored_and_written_unchanged(tmp_path: Path) -> None:
    prediction = "Le café coûte 3 € — die Straße heißt 北京路 😀🎉, naïve façade."
    reference = "Ein Café in der Straße 北京路 😀"
    passages = ["北京路 😀 café", "Ünïcödé ß ẞ ﬁ ligature", "CAFÉ COÛTE"]
    rows, report = run_rows(
        tmp_path, [mtrag_row("t<::>é", prediction, targets=[reference], contexts=passages)], step="all"
    )
    (row,) = rows
    metrics = row["metrics"]
    assert report.skipped == []
    assert row["predictions"][0]["text"] == prediction and row["targets"][0]["text"] == reference
    assert [c["text"] for c in row["contexts"]] == passages
    assert "😀" in (tmp_path / "out.jsonl").read_text(encoding="utf-8")  # written as UTF-8, not \\u escapes
    for name in ("Recall", "RougeL_stemFalse", "Extractiveness_RougeL", "RB_agg", "RB_agg_idk"):
        assert all(0.0 <= v <= 1.0 for v in metrics[name]), name
    for name in ("BertscoreP", "BertscoreR", "BertKPrec"):
        assert all(-1.0 <= v <= 1.0 for v in metrics[name]), name
    assert metrics["Length"] == [len(prediction.split())]
    assert metrics["LengthChars"] == [len(prediction)]
    assert metrics["Recall"][0] > 0  # café, straße, 北京路 are shared
    assert len(metrics["BertKPrec"]) == 3


# --------------------------------------------------------------------------------------------------
# 2. hand-worked values
# --------------------------------------------------------------------------------------------------


def test_hand_worked_values(tmp_path: Path) -> None:
    # answer   : the cat sat on the mat            (6 words)
    # reference: a cat was on the mat              (6 words)
    # passage 0: "THE Mat!"  → "the mat" occurs in the answer once case and punctuation are dropped
    # passage 1: a dog sat on the rug
    metrics = only_metrics(
        tmp_path,
        mtrag_row(
            "t<::>1",
            "The cat sat on the mat.",
            targets=["A cat was on the mat"],
            contexts=["THE Mat!", "A dog sat on the rug"],
        ),
    )
    # BERTScore with the one-hot encoder: P = answer words found in the reference: the, cat, on, the, mat
    # = 5/6; R = reference words found in the answer: cat, on, the, mat = 4/6.
    assert metrics["BertscoreP"] == [pytest.approx(5 / 6, abs=1e-12)]
    assert metrics["BertscoreR"] == [pytest.approx(4 / 6, abs=1e-12)]
    # SQuAD: articles and punctuation go → [cat sat on mat] vs [cat was on mat]: 3 of 4
    assert metrics["Recall"] == [pytest.approx(0.75)]
    # ROUGE-L: LCS 'cat on the mat' = 4, P = R = 4/6 → F = 2/3
    assert metrics["RougeL_stemFalse"] == [pytest.approx(2 / 3)]
    assert metrics["Length"] == [6]
    assert metrics["LengthChars"] == [23]
    # BertKPrec: answer words found in 'the mat' → the, the, mat = 3/6; in passage 1 → the, sat, on, the = 4/6
    assert metrics["BertKPrec"] == [pytest.approx(3 / 6), pytest.approx(4 / 6)]
    # Extractiveness: passage 0 occurs → 1.0 (its ROUGE-L would be 0.5); passage 1 does not → its ROUGE-L:
    # LCS 'sat on the' = 3 of 6 and 6 → 0.5
    assert rouge_l("the cat sat on the mat", "the mat") == pytest.approx(0.5)
    assert metrics["Extractiveness_RougeL"] == [1.0, pytest.approx(0.5)]
    # RB_agg: r = (BertscoreR + 1)/2 = (2/3 + 1)/2 = 5/6; l = RougeL = 2/3; e = (max BertKPrec + 1)/2 = 5/6
    # harmonic mean = 3 / (1/r + 1/l + 1/e) = 3 / (6/5 + 3/2 + 6/5) = 3 / 3.9 = 10/13 ≈ 0.769231
    # (= 3rle / (rl + re + le) = (75/54) / (65/36) = 10/13)
    assert metrics["RB_agg"] == [pytest.approx(10 / 13, abs=1e-12)]
    assert metrics["RB_agg_zero_denominator"] == [False]


def test_recall_is_a_multiset_intersection_after_squad_normalisation(tmp_path: Path) -> None:
    # answer [cat cat cat], reference 'the cat cat dog' → [cat cat dog]: 2 shared of 3 (a set would give 1/3 or 1/2)
    metrics = only_metrics(
        tmp_path, mtrag_row("t<::>1", "Cat, cat; CAT!", targets=["the cat cat dog"], contexts=["blue sky"])
    )
    assert metrics["Recall"] == [pytest.approx(2 / 3)]
    # ROUGE-L: LCS 2; P = 2/3, R = 2/4 → F = 4/7
    assert metrics["RougeL_stemFalse"] == [pytest.approx(4 / 7)]
    assert metrics["BertscoreP"] == [pytest.approx(1.0)] and metrics["BertscoreR"] == [pytest.approx(0.5)]
    assert metrics["Length"] == [3] and metrics["LengthChars"] == [14]
    # no answer word in 'blue sky' → BertKPrec 0 → e = 1/2, still not 0: RB_agg = 3 / (1/0.75 + 7/4 + 2)
    assert metrics["BertKPrec"] == [0.0]
    assert metrics["RB_agg"] == [pytest.approx(3 / (4 / 3 + 7 / 4 + 2))]


def test_recall_per_reference_and_articles_only_reference(tmp_path: Path) -> None:
    metrics = only_metrics(tmp_path, mtrag_row("t<::>1", "The cat sat.", targets=["the cat", "The, a, an!", "dog"]))
    # 'the cat' → [cat]: 1/1; a reference of articles only has no token → 0; 'dog' → 0/1
    assert metrics["Recall"] == [1.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "passage, expected",
    [
        ("the MAT", 1.0),
        ("Sat-On", 1.0),  # '-' dropped → 'saton' occurs in 'thecatsatonthemat'
        ("cat,\nsat", 1.0),  # newline and comma dropped
        # longer than the answer: ROUGE-L, LCS 6 of the answer's 6 and the passage's 8 tokens → F = 6/7
        ("The cat sat on the mat. The dog", 6 / 7),
        ("rug hat", 0.0),
    ],
)
def test_extractiveness_is_one_when_the_passage_occurs(tmp_path: Path, passage: str, expected: float) -> None:
    metrics = only_metrics(tmp_path, mtrag_row("t<::>1", "The cat sat on the mat.", contexts=[passage]))
    assert metrics["Extractiveness_RougeL"] == [pytest.approx(expected)]


def test_baseline_rescaling_with_hand_values(tmp_path: Path) -> None:
    b = MTRAG_DEBERTA_BASELINE
    rows, report = run_rows(
        tmp_path,
        [mtrag_row("t<::>1", "The cat sat on the mat.", targets=["A cat was on the mat"], contexts=["a dog"])],
        settings=Settings(bertscore_baseline="mtrag-deberta"),
    )
    metrics = rows[0]["metrics"]
    assert metrics["BertscoreP"] == [pytest.approx((5 / 6 - b.precision) / (1 - b.precision))]
    assert metrics["BertscoreR"] == [pytest.approx((4 / 6 - b.recall) / (1 - b.recall))]
    # 'a dog' shares no answer word: raw 0 → rescaled −b_P/(1 − b_P) < 0, so e = (x + 1)/2 > 0
    k = -b.precision / (1 - b.precision)
    assert metrics["BertKPrec"] == [pytest.approx(k)]
    r, l, e = ((4 / 6 - b.recall) / (1 - b.recall) + 1) / 2, 2 / 3, (k + 1) / 2
    assert metrics["RB_agg"] == [pytest.approx(3 * r * l * e / (r * l + r * e + l * e))]
    assert report.signatures["bertscore"] == "test-onehot-words|baseline:deberta-xlarge-mnli@40"


def test_rb_agg_terms() -> None:
    # r = (0.5 + 1)/2 = 0.75, l = 0.5, e = (0 + 1)/2 = 0.5 → 3 / (4/3 + 2 + 2) = 9/16
    assert rb_agg(bertscore_recall=0.5, rouge_l_value=0.5, max_bert_k_prec=0.0).value == pytest.approx(9 / 16)
    # r = (−1 + 1)/2 = 0, or l = 0: a zero term makes RB_agg 0
    assert rb_agg(bertscore_recall=-1.0, rouge_l_value=0.5, max_bert_k_prec=0.5) == RbAgg(0.0, True)
    assert rb_agg(bertscore_recall=0.5, rouge_l_value=0.0, max_bert_k_prec=0.5) == RbAgg(0.0, True)
    zero = rb_agg(bertscore_recall=0.5, rouge_l_value=0.5, max_bert_k_prec=None)
    assert (zero.value, zero.zero_denominator) == (0.0, True)


# --------------------------------------------------------------------------------------------------
# 3. IDK conditioning
# --------------------------------------------------------------------------------------------------

IDK_CASES = [
    # answerability, idk_eval, expected (value = 0.6 for RB_agg, 0.7 for RB_llm, 0.8 for RL_F)
    ("UNANSWERABLE", 1.0, "one"),
    ("UNANSWERABLE", 0.5, "zero"),
    ("UNANSWERABLE", 0.0, "zero"),
    ("CONVERSATIONAL", 1.0, "one"),
    ("CONVERSATIONAL", 0.5, "zero"),
    ("CONVERSATIONAL", 0.0, "zero"),
    ("ANSWERABLE", 1.0, "zero"),
    ("ANSWERABLE", 0.5, "value"),
    ("ANSWERABLE", 0.0, "value"),
    ("PARTIAL", 1.0, "zero"),
    ("PARTIAL", 0.5, "value"),
    ("PARTIAL", 0.0, "value"),
    (None, 1.0, "zero"),
    (None, 0.5, "value"),
    (None, 0.0, "value"),
]
BASES = {"RB_agg": 0.6, "RB_llm": 0.7, "RL_F": 0.8}


@pytest.mark.parametrize("answerability, idk_eval, expected", IDK_CASES)
def test_idk_condition_function(answerability: str | None, idk_eval: float, expected: str) -> None:
    a = Answerability(answerability) if answerability else None
    want = {"one": 1.0, "zero": 0.0, "value": 0.6}[expected]
    assert idk_condition(0.6, answerability=a, idk_eval=idk_eval) == want


@pytest.mark.parametrize("answerability, idk_eval, expected", IDK_CASES)
def test_idk_condition_step_with_record_idk_eval(
    tmp_path: Path, answerability: str | None, idk_eval: float, expected: str
) -> None:
    # unknown answerability: no 'answerability' and no targets (with a reference it would default to ANSWERABLE)
    row = mtrag_row(
        "t<::>1",
        "Some answer.",
        answerability=answerability,
        targets=None if answerability is None else ["ref"],
        metrics={**{k: [v] for k, v in BASES.items()}, "idk_eval": [idk_eval]},
    )
    encoder = WordEncoder()
    rows, report = run_rows(tmp_path, [row], step="idk_condition", token_encoder=encoder)
    metrics = rows[0]["metrics"]
    for base, value in BASES.items():
        want = {"one": 1.0, "zero": 0.0, "value": value}[expected]
        assert metrics[f"{base}_idk"] == [want], base
        assert metrics[base] == [value]
    assert metrics["idk_eval"] == [idk_eval]
    assert "idk_eval_source" not in metrics
    assert report.idk_sources == {"record": 1}
    assert report.computed == 1 and encoder.texts_encoded == 0
    assert "bertscore" not in report.signatures


@pytest.mark.parametrize(
    "prediction, idk_eval",
    [
        ("I don't know.", 1.0),
        ("I don't know the exact date. The office opens at nine.", 0.5),
        ("The office opens at nine.", 0.0),
    ],
)
def test_idk_eval_from_the_detector_when_the_record_has_none(tmp_path: Path, prediction: str, idk_eval: float) -> None:
    rows, report = run_rows(
        tmp_path,
        [
            mtrag_row("t<::>1", prediction, answerability="ANSWERABLE", metrics={"RB_agg": [0.6]}),
            mtrag_row("t<::>2", prediction, answerability="UNANSWERABLE", metrics={"RB_agg": [0.6], "RB_llm": [0.7]}),
        ],
        step="idk_condition",
    )
    answerable, unanswerable = (row["metrics"] for row in rows)
    for metrics in (answerable, unanswerable):
        assert metrics["idk_eval"] == [idk_eval]
        assert metrics["idk_eval_source"] == [DETECTOR]
    assert answerable["RB_agg_idk"] == [{1.0: 0.0, 0.5: 0.6, 0.0: 0.6}[idk_eval]]
    assert unanswerable["RB_agg_idk"] == [1.0 if idk_eval == 1.0 else 0.0]
    assert unanswerable["RB_llm_idk"] == [1.0 if idk_eval == 1.0 else 0.0]
    assert report.idk_sources == {DETECTOR: 2}


def test_absent_bases_give_no_conditioned_value(tmp_path: Path) -> None:
    rows, report = run_rows(
        tmp_path,
        [
            mtrag_row("t<::>1", "Answer.", metrics={}),
            mtrag_row("t<::>2", "Answer.", metrics={"RL_F": [0.8], "idk_eval": [0.0]}),
            mtrag_row("t<::>3", "Answer."),
        ],
        step="idk_condition",
    )
    first, second, third = (row.get("metrics", {}) for row in rows)
    assert not any(name.endswith("_idk") for name in first)
    assert "idk_eval" not in first and "idk_eval" not in third  # nothing to condition: no verdict either
    assert not any(name.endswith("_idk") for name in third)
    assert second == {"RL_F": [0.8], "idk_eval": [0.0], "RL_F_idk": [0.8]}
    assert report.computed == 1
    assert report.idk_sources == {"record": 1}


def test_step_all_conditions_the_fresh_rb_agg(tmp_path: Path) -> None:
    rows, report = run_rows(
        tmp_path,
        [
            mtrag_row(
                "t<::>1",
                "The cat sat on the mat.",
                targets=["A cat was on the mat"],
                contexts=["THE Mat!", "A dog sat on the rug"],
                metrics={"RB_llm": [0.7], "idk_eval": [0.0]},
            ),
            mtrag_row("t<::>2", "I don't know.", targets=["A cat was on the mat"], contexts=["the mat"]),
        ],
        step="all",
    )
    first, second = (row["metrics"] for row in rows)
    assert first["RB_agg_idk"] == [pytest.approx(10 / 13)] and first["RB_llm_idk"] == [0.7]
    assert "idk_eval_source" not in first
    assert second["idk_eval"] == [1.0] and second["RB_agg_idk"] == [0.0]
    assert report.idk_sources == {"record": 1, DETECTOR: 1}
    assert report.computed == 2


def test_existing_conditioned_value_is_kept(tmp_path: Path) -> None:
    rows, report = run_rows(
        tmp_path,
        [
            mtrag_row(
                "t<::>1", "Answer.", metrics={"RB_agg": [0.6], "RB_agg_idk": [0.25], "RB_llm": [0.7], "idk_eval": [1.0]}
            )
        ],
        step="idk_condition",
    )
    metrics = rows[0]["metrics"]
    assert metrics["RB_agg_idk"] == [0.25]  # never recomputed
    assert metrics["RB_llm_idk"] == [0.0]  # answerable, idk 1 → 0
    assert report.computed == 1


# --------------------------------------------------------------------------------------------------
# 4. pipeline behaviour
# --------------------------------------------------------------------------------------------------


def five_rows() -> list[dict[str, Any]]:
    return [
        mtrag_row(
            f"c{i // 2}<::>{i}",
            f"The cat sat on the mat number {i}.",
            targets=["A cat was on the mat"],
            contexts=["the mat", f"a dog sat on rug {i}"],
            conversation_id=f"c{i // 2}",
        )
        for i in range(5)
    ]


def test_output_is_written_atomically(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", five_rows())
    target = tmp_path / "out.jsonl"
    partial = tmp_path / "out.jsonl.partial"
    seen: list[tuple[bool, bool, int]] = []

    class Watching(WordEncoder):
        def encode_tokens(self, texts: Sequence[str]) -> list[TokenEmbeddings]:
            lines = len(partial.read_text(encoding="utf-8").splitlines()) if partial.exists() else -1
            seen.append((target.exists(), partial.exists(), lines))
            return super().encode_tokens(texts)

    report = run_step("algorithmic", source, target, token_encoder=Watching(), batch_size=2)
    assert seen == [(False, True, 0), (False, True, 2), (False, True, 4)]
    assert target.exists() and not partial.exists()
    assert report.written == 5 and len(read_jsonl(target)) == 5


def test_a_crash_leaves_no_output_and_the_next_run_resumes(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", five_rows())
    run_step("algorithmic", source, tmp_path / "full.jsonl", token_encoder=WordEncoder(), batch_size=2)
    target, partial = tmp_path / "out.jsonl", tmp_path / "out.jsonl.partial"

    class Crashing(WordEncoder):
        def encode_tokens(self, texts: Sequence[str]) -> list[TokenEmbeddings]:
            if len(self.calls) == 2:
                raise RuntimeError("simulated crash")
            return super().encode_tokens(texts)

    with pytest.raises(RuntimeError, match="simulated crash"):
        run_step("algorithmic", source, target, token_encoder=Crashing(), batch_size=2)
    assert not target.exists()
    assert len(partial.read_text(encoding="utf-8").splitlines()) == 4
    report = run_step("algorithmic", source, target, token_encoder=WordEncoder(), batch_size=2)
    assert report.resumed == 4 and report.written == 5 and report.computed == 1
    assert target.read_bytes() == (tmp_path / "full.jsonl").read_bytes()
    assert not partial.exists()


def test_input_is_never_written(tmp_path: Path) -> None:
    rows = five_rows()
    rows[0]["metrics"] = {"RougeL_stemFalse": [0.123]}
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    before = source.read_bytes()
    run_step("all", source, tmp_path / "out.jsonl", token_encoder=WordEncoder())
    assert source.read_bytes() == before


def test_same_input_and_output_is_refused(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", five_rows())
    before = source.read_bytes()
    (tmp_path / "sub").mkdir()
    for output in (source, tmp_path / "sub" / ".." / "in.jsonl"):
        with pytest.raises(ConfigError, match="new file"):
            run_step("algorithmic", source, output, token_encoder=WordEncoder())
    assert source.read_bytes() == before
    assert not (tmp_path / "in.jsonl.partial").exists()


@pytest.mark.parametrize("step", ["idk", "ragas", "radbench"])
def test_judged_steps_without_a_judge_are_refused(tmp_path: Path, step: str) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", five_rows())
    encoder = WordEncoder()
    with pytest.raises(ConfigError, match="is one of MT-RAG's judged steps: give a judge") as error:
        run_step(step, source, tmp_path / "out.jsonl", token_encoder=encoder)
    assert f"'{step}'" in str(error.value)
    assert not (tmp_path / "out.jsonl").exists() and not (tmp_path / "out.jsonl.partial").exists()
    assert encoder.calls == []


def test_unknown_step_is_refused(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", five_rows())
    with pytest.raises(ConfigError, match="unknown step"):
        run_step("rouge", source, tmp_path / "out.jsonl", token_encoder=WordEncoder())


@pytest.mark.parametrize("step", ["algorithmic", "all", "idk_condition"])
def test_rerun_on_own_output_is_a_no_op(tmp_path: Path, step: str) -> None:
    rows = [json.loads(line) for line in real_lines(10)]
    rows += [
        mtrag_row("x<::>1", "", targets=None, contexts=[], answerability=None, metrics={"RB_llm": [0.3]}),
        mtrag_row("x<::>2", "I don't know.", answerability="UNANSWERABLE"),
    ]
    if step == "idk_condition":
        for row in rows:
            row.setdefault("metrics", {}).setdefault("RB_agg", [0.5])
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    first = tmp_path / "first.jsonl"
    run_step(step, source, first, token_encoder=WordEncoder(), batch_size=4)
    encoder = WordEncoder()
    report = run_step(step, first, tmp_path / "second.jsonl", token_encoder=encoder, batch_size=4)
    assert report.computed == 0
    assert encoder.texts_encoded == 0
    assert report.written == len(rows) and report.skipped == []
    assert report.idk_sources == {}
    assert (tmp_path / "second.jsonl").read_bytes() == first.read_bytes()


def test_step_all_on_algorithmic_output_encodes_nothing(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", five_rows())
    run_step("algorithmic", source, tmp_path / "alg.jsonl", token_encoder=WordEncoder())
    encoder = WordEncoder()
    report = run_step("all", tmp_path / "alg.jsonl", tmp_path / "all.jsonl", token_encoder=encoder)
    assert encoder.texts_encoded == 0 and report.computed == 5
    algorithmic, everything = read_jsonl(tmp_path / "alg.jsonl"), read_jsonl(tmp_path / "all.jsonl")
    for before, after in zip(algorithmic, everything, strict=True):
        assert {k: v for k, v in after["metrics"].items() if k in before["metrics"]} == before["metrics"]
        assert after["metrics"]["RB_agg_idk"] == before["metrics"]["RB_agg"]  # answerable, no IDK


def test_value_present_in_the_input_is_kept(tmp_path: Path) -> None:
    row = mtrag_row(
        "t<::>1",
        "The cat sat on the mat.",
        targets=["A cat was on the mat"],
        contexts=["THE Mat!", "A dog sat on the rug"],
        metrics={"RougeL_stemFalse": [0.123]},
    )
    metrics = only_metrics(tmp_path, row)
    assert metrics["RougeL_stemFalse"] == [0.123]
    assert metrics["BertscoreP"] == [pytest.approx(5 / 6)]  # the missing ones are computed
    assert set(metrics) == set(ALGORITHMIC_METRICS)
    # one-hot word encoder: R = 4/6 (four of the reference's six tokens incl. [CLS]/[SEP] weighted 0…), see
    # the BertscoreP line; passages: 'THE Mat!' → 1/2, 'A dog sat on the rug' → 2/3 of the answer's tokens
    assert metrics["BertscoreR"] == [pytest.approx(2 / 3)]
    assert metrics["BertKPrec"] == [pytest.approx(1 / 2), pytest.approx(2 / 3)]
    # RB_agg reads the record's own values, the kept 0.123 included: r = e = (2/3 + 1)/2 = 5/6, l = 0.123,
    # 3·r·l·e / (r·l + r·e + l·e) = 1845/6476
    assert metrics["RB_agg"] == [pytest.approx(1845 / 6476)]


def crashed_in(output: Path, step: str, source: Path, settings: Settings | None = None) -> None:
    """What a run of ``step`` killed while writing ``output`` leaves beside its partial file."""
    partial_paths(output)[1].write_text(json.dumps(step_made_by(step, source, settings or Settings())))


def test_a_partial_made_by_another_step_or_setting_is_refused(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", five_rows())
    full, target = tmp_path / "full.jsonl", tmp_path / "out.jsonl"
    run_step("algorithmic", source, full, token_encoder=WordEncoder())
    partial, sidecar = partial_paths(target)
    partial.write_bytes(b"".join(full.read_bytes().splitlines(keepends=True)[:2]))
    crashed_in(target, "algorithmic", source, Settings(bertscore_baseline="mtrag-deberta"))
    with pytest.raises(ConfigError, match="bertscore_baseline 'mtrag-deberta' \\(now None\\)"):
        run_step("algorithmic", source, target, token_encoder=WordEncoder())
    crashed_in(target, "idk_condition", source)
    with pytest.raises(ConfigError, match="step 'idk_condition' \\(now 'algorithmic'\\)"):
        run_step("algorithmic", source, target, token_encoder=WordEncoder())
    sidecar.unlink()  # a partial file that says nothing of what made it
    with pytest.raises(ConfigError, match="unknown step and settings"):
        run_step("algorithmic", source, target, token_encoder=WordEncoder())
    assert partial.exists() and not target.exists()  # nothing finished is lost
    crashed_in(target, "algorithmic", source)
    assert run_step("algorithmic", source, target, token_encoder=WordEncoder()).resumed == 2
    assert not sidecar.exists()


def test_resume_from_a_torn_partial(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text("".join(real_lines(10)), encoding="utf-8")
    full = tmp_path / "full.jsonl"
    run_step("all", source, full, token_encoder=WordEncoder(), batch_size=4)
    lines = full.read_bytes().splitlines(keepends=True)
    target, partial = tmp_path / "out.jsonl", tmp_path / "out.jsonl.partial"
    partial.write_bytes(b"".join(lines[:3]) + lines[3][: len(lines[3]) // 2])
    crashed_in(target, "all", source)
    encoder = WordEncoder()
    report = run_step("all", source, target, token_encoder=encoder, batch_size=4)
    assert report.resumed == 3
    assert report.computed == 7 and report.written == 10
    assert target.read_bytes().splitlines() == full.read_bytes().splitlines()
    assert not partial.exists()
    # the resumed records are not encoded again (their answers are not among the later ones)
    encoded = {text for call in encoder.calls for text in call}
    answers = [json.loads(line)["predictions"][0]["text"] for line in lines]
    assert not encoded & (set(answers[:3]) - set(answers[3:]))
    assert set(answers[3:]) <= encoded


def test_resume_drops_a_last_line_without_newline(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", five_rows())
    full = tmp_path / "full.jsonl"
    run_step("algorithmic", source, full, token_encoder=WordEncoder())
    lines = full.read_bytes().splitlines(keepends=True)
    partial = tmp_path / "out.jsonl.partial"
    partial.write_bytes(b"".join(lines[:2]) + lines[2].rstrip(b"\n"))  # complete JSON, but no newline
    crashed_in(tmp_path / "out.jsonl", "algorithmic", source)
    report = run_step("algorithmic", source, tmp_path / "out.jsonl", token_encoder=WordEncoder())
    assert report.resumed == 2 and report.computed == 3
    assert (tmp_path / "out.jsonl").read_bytes() == full.read_bytes()


def test_resume_from_a_line_torn_inside_a_utf8_character(tmp_path: Path) -> None:
    rows = [mtrag_row(f"t<::>{i}", f"Café numéro {i} é é é", targets=["café"], contexts=["numéro"]) for i in range(4)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    full = tmp_path / "full.jsonl"
    run_step("algorithmic", source, full, token_encoder=WordEncoder())
    lines = full.read_bytes().splitlines(keepends=True)
    cut = lines[2].index("é".encode()) + 1
    partial = tmp_path / "out.jsonl.partial"
    partial.write_bytes(b"".join(lines[:2]) + lines[2][:cut])
    crashed_in(tmp_path / "out.jsonl", "algorithmic", source)
    report = run_step("algorithmic", source, tmp_path / "out.jsonl", token_encoder=WordEncoder())
    assert report.resumed == 2
    assert (tmp_path / "out.jsonl").read_bytes() == full.read_bytes()


def test_resume_keeps_records_without_task_id(tmp_path: Path) -> None:
    rows = [
        {
            "input": [{"speaker": "user", "text": f"question {i}"}],
            "predictions": [{"text": f"the cat {i}"}],
            "targets": [{"text": "the cat"}],
            "contexts": [{"document_id": "d", "text": "the mat"}],
        }
        for i in range(5)
    ]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    full = tmp_path / "full.jsonl"
    run_step("algorithmic", source, full, token_encoder=WordEncoder())
    assert len(read_jsonl(full)) == 5
    (tmp_path / "out.jsonl.partial").write_bytes(b"".join(full.read_bytes().splitlines(keepends=True)[:2]))
    crashed_in(tmp_path / "out.jsonl", "algorithmic", source)
    report = run_step("algorithmic", source, tmp_path / "out.jsonl", token_encoder=WordEncoder())
    assert len(read_jsonl(tmp_path / "out.jsonl")) == 5
    assert report.resumed == 2


def test_invalid_rows_are_skipped_and_listed(tmp_path: Path) -> None:
    good = five_rows()
    no_predictions = mtrag_row("bad<::>1", "x")
    del no_predictions["predictions"]
    lines = [
        json.dumps(good[0]),
        '{"task_id": "broken", "input": [',
        json.dumps(good[1]),
        json.dumps(no_predictions),
        "",
        json.dumps(good[2]),
    ]
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = run_step("algorithmic", source, tmp_path / "out.jsonl", token_encoder=WordEncoder())
    assert [error.line for error in report.skipped] == [2, 4]
    assert "broken JSON" in str(report.skipped[0])
    assert report.skipped[1].field == "predictions"
    out = read_jsonl(tmp_path / "out.jsonl")
    assert [row["task_id"] for row in out] == [good[0]["task_id"], good[1]["task_id"], good[2]["task_id"]]
    assert report.written == 3 and all("RB_agg" in row["metrics"] for row in out)


# --------------------------------------------------------------------------------------------------
# 6. summary
# --------------------------------------------------------------------------------------------------

SUMMARY_SETTINGS = Settings(n_resamples=200, ci_method="percentile")


def summary_rows() -> list[dict[str, Any]]:
    return [
        {
            "model_id": "model-a",
            "conversation_id": "c1",
            "answerability": ["ANSWERABLE"],
            "metrics": {
                "Recall": [0.5, 1.0],
                "BertKPrec": [0.2, 0.9],
                "RB_agg": [0.6],
                "RB_agg_zero_denominator": [False],
                "idk_eval_source": ["detector:idk-en-1+id-3"],
                "Unknown_metric": [5.0],
            },
        },
        {
            "model_id": "model-a",
            "conversation_id": "c2",
            "Answerability": "answerable",
            "metrics": {"Recall": [1.0], "BertKPrec": [0.4], "RB_agg": [0.0], "RB_agg_zero_denominator": [True]},
        },
        {
            "model_id": "model-a",
            "conversation_id": "c3",
            "answerability": ["UNANSWERABLE"],
            "metrics": {
                "Recall": [0.0],
                "BertKPrec": [0.1, 0.3, 0.2],
                "RB_agg": [0.3],
                "RB_agg_zero_denominator": [False],
            },
        },
        {
            "model_id": "model-b",
            "conversation_id": "c4",
            "answerability": "PARTIAL",
            "metrics": {"Recall": [0.25], "RB_agg": [0.8], "RB_agg_zero_denominator": [True], "BertKPrec": []},
        },
        {
            "model_id": "model-b",
            "conversation_id": "c5",
            "metrics": {
                "Recall": [0.75],
                "RB_agg": [0.4],
                "RB_agg_zero_denominator": [False],
                "RougeL_stemFalse": [None],
            },
        },
    ]


def test_summary_means_per_model_and_class() -> None:
    means = {
        (g.model_id, g.answerability, g.metric): g for g in summarize_rows(summary_rows(), settings=SUMMARY_SETTINGS)
    }
    expected = {
        # per-reference: first value (0.5, not 0.75 or 1.0)
        ("model-a", "ALL", "Recall"): ((0.5 + 1.0 + 0.0) / 3, 3),
        ("model-a", "ANSWERABLE", "Recall"): ((0.5 + 1.0) / 2, 2),
        ("model-a", "UNANSWERABLE", "Recall"): (0.0, 1),
        # per-passage: best passage (0.9, 0.4, 0.3)
        ("model-a", "ALL", "BertKPrec"): ((0.9 + 0.4 + 0.3) / 3, 3),
        ("model-a", "ANSWERABLE", "BertKPrec"): ((0.9 + 0.4) / 2, 2),
        ("model-a", "UNANSWERABLE", "BertKPrec"): (0.3, 1),
        ("model-a", "ALL", "RB_agg"): ((0.6 + 0.0 + 0.3) / 3, 3),
        ("model-a", "ALL", "RB_agg_zero_denominator"): (1 / 3, 3),
        ("model-a", "ANSWERABLE", "RB_agg_zero_denominator"): (1 / 2, 2),
        ("model-b", "ALL", "Recall"): ((0.25 + 0.75) / 2, 2),
        ("model-b", "PARTIAL", "Recall"): (0.25, 1),
        ("model-b", "UNKNOWN", "Recall"): (0.75, 1),
        ("model-b", "ALL", "RB_agg"): ((0.8 + 0.4) / 2, 2),
        ("model-b", "ALL", "RB_agg_zero_denominator"): (0.5, 2),
    }
    for key, (mean, n) in expected.items():
        assert means[key].mean == pytest.approx(mean), key
        assert means[key].n == n, key
    metrics = {metric for _, _, metric in means}
    assert "idk_eval_source" not in metrics and "Unknown_metric" not in metrics
    assert ("model-b", "ALL", "BertKPrec") not in means  # empty list: no value
    assert ("model-b", "ALL", "RougeL_stemFalse") not in means  # [None]: no value
    assert {(m, a) for m, a, _ in means} == {
        ("model-a", "ALL"),
        ("model-a", "ANSWERABLE"),
        ("model-a", "UNANSWERABLE"),
        ("model-b", "ALL"),
        ("model-b", "PARTIAL"),
        ("model-b", "UNKNOWN"),
    }


def test_summary_rate_uses_wilson_without_repeated_clusters() -> None:
    means = {
        (g.model_id, g.answerability, g.metric): g for g in summarize_rows(summary_rows(), settings=SUMMARY_SETTINGS)
    }
    for key, (k, n) in {
        ("model-a", "ALL", "RB_agg_zero_denominator"): (1, 3),
        ("model-a", "ANSWERABLE", "RB_agg_zero_denominator"): (1, 2),
        ("model-b", "ALL", "RB_agg_zero_denominator"): (1, 2),
    }.items():
        assert (means[key].ci_low, means[key].ci_high) == pytest.approx(proportion_confint(k, n, method="wilson")), key


def test_summary_rate_takes_wilson_on_the_effective_size_when_conversations_repeat() -> None:
    pattern = [("c1", True), ("c1", False), ("c2", False), ("c3", True), ("c3", True), ("c4", False)]
    pairs = [(f"{conv}-{copy}", flag) for copy in range(3) for conv, flag in pattern]  # 12 conversations
    rows = [
        {
            "model_id": "m",
            "conversation_id": conv,
            "answerability": "ANSWERABLE",
            "metrics": {"RB_agg_zero_denominator": [flag]},
        }
        for conv, flag in pairs
    ]
    (group,) = [g for g in summarize_rows(rows, settings=SUMMARY_SETTINGS) if g.answerability == "ALL"]
    assert group.mean == pytest.approx(0.5) and group.n == 18
    # by hand: per copy the conversations' (y_i - p n_i)^2 are 0, 0.25, 1, 0.25 (sum 1.5, 4.5 over 12
    # conversations); the ratio estimator's variance 12/11 * 4.5 / 18^2 over p(1-p)/(n-1) = 0.25/17
    deff = (12 / 11 * 4.5 / 18**2) / (0.25 / 17)
    assert deff == pytest.approx(34 / 33)
    expected = proportion_confint(9 / deff, 18 / deff, method="wilson")
    assert (group.ci_low, group.ci_high) == pytest.approx(expected)
    assert (group.ci_low, group.ci_high) != pytest.approx(proportion_confint(9, 18, method="wilson"))
    assert group.warning is None


def test_summary_with_few_conversations_takes_them_as_all_alike_and_warns() -> None:
    rows = [
        {
            "model_id": "m",
            "conversation_id": conv,
            "answerability": "ANSWERABLE",
            "metrics": {"RB_agg_zero_denominator": [flag]},
        }
        for conv, flag in [("c1", True), ("c1", False), ("c2", False), ("c3", True), ("c3", True), ("c4", False)]
    ]
    (group,) = [g for g in summarize_rows(rows, settings=SUMMARY_SETTINGS) if g.answerability == "ALL"]
    deff = (2**2 + 1 + 2**2 + 1) / 6  # the worst case, sum of n_i^2 / n: 6 turns count as 3.6
    assert (group.ci_low, group.ci_high) == pytest.approx(proportion_confint(3 / deff, 6 / deff, method="wilson"))
    assert group.warning is not None and "only 4 conversation(s)" in group.warning
    assert group.to_dict()["warning"] == group.warning


def test_render_summary_names_every_model_and_class() -> None:
    means = summarize_rows(summary_rows(), settings=SUMMARY_SETTINGS)
    text = render_summary(means)
    for name in (
        "model: model-a",
        "model: model-b",
        "ALL (n=3)",
        "ANSWERABLE (n=2)",
        "UNANSWERABLE (n=1)",
        "PARTIAL (n=1)",
        "UNKNOWN (n=1)",
        "Recall",
        "BertKPrec",
        "RB_agg_zero_denominator",
    ):
        assert name in text, name
    assert "0.500" in text  # model-a's mean Recall
    model_b = text[text.index("model: model-b") :]
    assert "ANSWERABLE (n=" not in model_b.replace("UNANSWERABLE", "")  # model-b has no answerable record
    assert all(not math.isnan(g.mean) for g in means)


def test_summary_accepts_answerability_the_reader_accepts() -> None:
    from ragmeter.io.mtrag import record_from_mtrag

    row = mtrag_row("t<::>1", "Answer.", answerability=" answerable ", metrics={"RB_agg": [0.5]})
    assert record_from_mtrag(row).answerability is Answerability.ANSWERABLE
    means = summarize_rows([row], settings=SUMMARY_SETTINGS)
    assert {g.answerability for g in means} == {"ALL", "ANSWERABLE"}
