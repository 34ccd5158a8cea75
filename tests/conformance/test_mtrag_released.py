"""Conformance with MT-RAG's released scores (../shared/data/mtrag/human_eval_expected.jsonl, 477 rows).

The shipped `conditional_idk` is MT-RAG's "right IDK behaviour" flag, not the IDK judge's verdict: it
is 1 when an unanswerable or conversational question got an IDK answer, or when an answerable or
partial question got a real one. The judge's `idk_eval` is therefore `conditional_idk` on the first
kind of question and `1 - conditional_idk` on the second.
"""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragmeter import Settings
from ragmeter.core.records import Answerability
from ragmeter.metrics.mtrag.algorithmic import idk_condition, rb_agg
from ragmeter.metrics.rouge import rouge_l
from ragmeter.models.base import TokenEmbeddings
from ragmeter.pipelines.mtrag.steps import run_step
from ragmeter.pipelines.mtrag.summary import summarize_rows

IDK_RIGHT = {"UNANSWERABLE", "CONVERSATIONAL"}


@pytest.fixture(scope="module")
def rows(shared_data: Callable[..., Path]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(task, expected) pairs; without the released files the tests skip, or fail in CI (tests/conftest.py)."""
    tasks_path = shared_data("mtrag", "human_eval_tasks.jsonl")
    expected_path = shared_data("mtrag", "human_eval_expected.jsonl")
    with tasks_path.open(encoding="utf-8") as handle:
        tasks = {(r["task_id"], r["model_id"]): r for r in map(json.loads, handle)}
    with expected_path.open(encoding="utf-8") as handle:
        expected = [json.loads(line) for line in handle]
    assert len(expected) == 477
    return [(tasks[(e["task_id"], e["model_id"])], e) for e in expected]


def _idk_eval(task, expected):
    answerability = task["answerability"][0]
    return expected["conditional_idk"] if answerability in IDK_RIGHT else 1 - expected["conditional_idk"]


def _rb_agg(task, expected):
    rouge = rouge_l(task["predictions"][0]["text"], task["targets"][0]["text"])
    return rb_agg(bertscore_recall=expected["Bert-Rec"], rouge_l_value=rouge, max_bert_k_prec=expected["Bert-KPrec"])


def test_rouge_l_equals_the_shipped_rouge_l_on_all_477_records(rows):
    worst = max(abs(rouge_l(t["predictions"][0]["text"], t["targets"][0]["text"]) - e["RougeL"]) for t, e in rows)
    assert worst <= 1e-12


def _answered(task, expected):
    """An answerable or partial question that got a real answer (no IDK)."""
    return task["answerability"][0] in ("ANSWERABLE", "PARTIAL") and expected["conditional_idk"] == 1


def test_rb_agg_from_shipped_bert_values_equals_shipped_rb_agg_on_445_answered_records(rows):
    answered = [(t, e) for t, e in rows if _answered(t, e)]
    assert len(answered) == 445
    assert max(abs(_rb_agg(t, e).value - e["rb_agg"]) for t, e in answered) <= 1e-12


def test_idk_conditioning_reproduces_shipped_rb_agg_on_the_other_32_records(rows):
    others = [(t, e) for t, e in rows if not _answered(t, e)]
    assert len(others) == 32
    for task, expected in others:
        value = idk_condition(
            _rb_agg(task, expected).value,
            answerability=Answerability(task["answerability"][0]),
            idk_eval=_idk_eval(task, expected),
        )
        assert value == expected["rb_agg"], task["task_id"]


class _Unused:
    """The idk_condition step needs no token encoder; this one fails loudly if called."""

    token_model_id = "unused"

    def encode_tokens(self, texts):
        raise AssertionError("idk_condition must not encode anything")


def test_pipeline_summary_reproduces_table_6_rb_alg_on_answerable_questions(rows, tmp_path):
    source = tmp_path / "in.jsonl"
    with source.open("w") as handle:
        for task, expected in rows:
            row = {
                **task,
                "metrics": {"RB_agg": [_rb_agg(task, expected).value], "idk_eval": [_idk_eval(task, expected)]},
            }
            handle.write(json.dumps(row) + "\n")
    report = run_step("idk_condition", source, tmp_path / "out.jsonl", token_encoder=_Unused())
    assert report.written == 477 and report.idk_sources == {"record": 477}
    out = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["metrics"]["RB_agg_idk"][0] for r in out] == pytest.approx([e["rb_agg"] for _, e in rows], abs=1e-12)
    means = {
        (m.model_id, m.answerability): m
        for m in summarize_rows(out, settings=Settings(n_resamples=200))
        if m.metric == "RB_agg_idk"
    }
    table_6 = {"reference": 0.87, "gpt-4o": 0.46, "llama-3.1-405b-instruct": 0.49}
    for model, value in table_6.items():
        summary = means[(model, "ANSWERABLE")]
        assert summary.n == 135 and round(summary.mean, 2) == value
        assert summary.ci_low < summary.mean < summary.ci_high


class _ConstantTokens:
    """Every token the same unit vector: BERTScore 1 everywhere, so only the lexical values vary."""

    token_model_id = "constant"

    def encode_tokens(self, texts):
        return [
            TokenEmbeddings(np.ones((3, 1), dtype=np.float32), np.array([0.0, 1.0, 0.0], dtype=np.float32))
            for _ in texts
        ]


def test_pipeline_algorithmic_step_writes_the_shipped_rouge_l(rows, tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(t) + "\n" for t, _ in rows))
    run_step("algorithmic", source, tmp_path / "out.jsonl", token_encoder=_ConstantTokens())
    out = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert (
        max(abs(r["metrics"]["RougeL_stemFalse"][0] - e["RougeL"]) for r, (_, e) in zip(out, rows, strict=True))
        <= 1e-12
    )
    assert sum("BertKPrec" not in r["metrics"] for r in out) == sum(not t["contexts"] for t, _ in rows) == 27
