"""The registered MT-RAG metrics (ragmeter run) agree with the pipeline's lists on the same records."""

import json
import re

import numpy as np
import pytest

from ragmeter import Answerability, Chunk, Record, Settings, evaluate
from ragmeter.metrics.mtrag.algorithmic import idk_eval_from_detector
from ragmeter.models.base import TokenEmbeddings
from ragmeter.pipelines.mtrag.steps import run_step
from ragmeter.text.idk import IdkDetector


class WordTokens:
    """One-hot vectors over words; [CLS] and [SEP] share one extra dimension with weight 0."""

    token_model_id = "words"

    def encode_tokens(self, texts):
        vocabulary = {}
        out = []
        for text in texts:
            words = text.lower().split()
            index = [vocabulary.setdefault(w, len(vocabulary) + 1) for w in words]
            out.append((index, len(words)))
        dim = len(vocabulary) + 1
        result = []
        for index, n in out:
            vectors = np.zeros((n + 2, dim), dtype=np.float32)
            vectors[0, 0] = vectors[-1, 0] = 1.0
            for row, column in enumerate(index, start=1):
                vectors[row, column] = 1.0
            result.append(TokenEmbeddings(vectors, np.array([0.0] + [1.0] * n + [0.0], dtype=np.float32)))
        return result


RECORDS = [
    Record(
        id="a",
        question="q",
        answer="the pool opens at seven",
        references=("the pool opens at seven am", "it opens early"),
        contexts=(Chunk("d1", "the pool opens at seven am daily"), Chunk("d2", "fees are five dollars")),
        answerability=Answerability.ANSWERABLE,
    ),
    Record(
        id="b",
        question="q",
        answer="I don't know.",
        references=(),
        contexts=(),
        answerability=Answerability.UNANSWERABLE,
    ),
]


def test_registered_values_match_the_pipeline(tmp_path):
    encoder = WordTokens()
    result = evaluate(RECORDS, metrics=["mtrag"], token_encoder=encoder, settings=Settings(n_resamples=200))
    source = tmp_path / "in.jsonl"
    source.write_text(
        "".join(
            json.dumps(
                {
                    "task_id": r.id,
                    "model_id": "m",
                    "input": [{"speaker": "user", "text": r.question}],
                    "contexts": [{"document_id": c.doc_id, "text": c.text} for c in r.contexts],
                    "targets": [{"text": t} for t in r.references],
                    "predictions": [{"text": r.answer}],
                    "answerability": [r.answerability.value],
                }
            )
            + "\n"
            for r in RECORDS
        )
    )
    run_step("all", source, tmp_path / "out.jsonl", token_encoder=encoder)
    rows = [json.loads(line)["metrics"] for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    first = rows[0]
    for name in ("Recall", "RougeL_stemFalse", "BertscoreP", "BertscoreR", "RB_agg"):
        assert result.scores[name][0] == pytest.approx(first[name][0], abs=1e-12), name
    for name in ("BertKPrec", "Extractiveness_RougeL"):
        assert result.scores[name][0] == pytest.approx(max(first[name]), abs=1e-12), name
    assert result.scores["RB_agg_idk"][1] == rows[1]["RB_agg_idk"][0] == 1.0  # right IDK on an unanswerable question
    assert np.isnan(result.scores["Recall"][1]) and result.scores["RB_agg_zero_denominator"][1] == 1.0
    # hand check of record a: answer tokens ⊂ first reference: BERTScore P = 1 (each word matched exactly),
    # R = 5/6 (the reference's 'am' has no match: cosine 0); the passage d1 holds all five words: BertKPrec 1.
    assert result.scores["BertscoreP"][0] == pytest.approx(1.0)
    assert result.scores["BertscoreR"][0] == pytest.approx(5 / 6)
    assert result.scores["BertKPrec"][0] == pytest.approx(1.0)
    # ROUGE-L against the first reference: LCS 5 of 5 answer and 6 reference tokens, F = 2·1·(5/6)/(1 + 5/6) = 10/11
    assert result.scores["RougeL_stemFalse"][0] == pytest.approx(10 / 11)
    # RB_agg: r = (5/6 + 1)/2 = 11/12, l = 10/11, e = (1 + 1)/2 = 1; 3·r·l·e / (r·l + r·e + l·e)
    # = 3·(5/6) / (5/6 + 11/12 + 10/11) = 2.5 / (351/132) = 110/117
    assert result.scores["RB_agg"][0] == pytest.approx(110 / 117)
    assert "bertscore_model:words" in result.signatures["RB_agg"].render()


@pytest.mark.parametrize(
    ("answer", "expected"),
    [("I don't know.", 1.0), ("", 1.0), ("I don't know. The pool opens at 7.", 0.5), ("The pool opens at 7.", 0.0)],
)
def test_detector_stand_in_for_the_idk_judge(answer, expected):
    assert idk_eval_from_detector(answer, IdkDetector()) == expected


class NoTokens:
    token_model_id = "must-not-load"

    def encode_tokens(self, texts):
        raise AssertionError("a lexical MT-RAG metric asked for token embeddings")


def test_lexical_mtrag_metrics_never_encode_tokens():
    result = evaluate(
        RECORDS[:1],
        metrics=["Recall", "RougeL_stemFalse", "Extractiveness_RougeL", "Length"],
        token_encoder=NoTokens(),
        settings=Settings(n_resamples=200),
    )
    # Recall: answer tokens [pool, opens, at, seven] ("the" dropped) vs reference [pool, opens, at, seven, am]: 4/5
    assert result.scores["Recall"][0] == pytest.approx(4 / 5)
    assert result.scores["Extractiveness_RougeL"][0] < 1.0 and result.scores["Length"][0] == 5.0


def _mtrag_row(idk_eval):
    row = {
        "task_id": "t",
        "input": [{"speaker": "user", "text": "When does the pool open?"}],
        "contexts": [{"document_id": "d1", "text": "the pool opens at seven am daily"}],
        "targets": [{"text": "the pool opens at seven am"}],
        "predictions": [{"text": "the pool opens at seven"}],
        "answerability": ["ANSWERABLE"],
        "metrics": {"idk_eval": [idk_eval]},
    }
    return row


def test_idk_eval_from_an_mtrag_row_is_used_when_the_source_is_record():
    from ragmeter.io.formats.mtrag import record_from_mtrag

    record = record_from_mtrag(_mtrag_row(1))
    assert record.labels == {"idk_eval": 1.0}
    own = evaluate(
        [record],
        metrics=["RB_agg_idk"],
        token_encoder=WordTokens(),
        settings=Settings(n_resamples=200, idk_eval_source="record"),
    )
    detector = evaluate(
        [record], metrics=["RB_agg_idk"], token_encoder=WordTokens(), settings=Settings(n_resamples=200)
    )
    assert own.scores["RB_agg_idk"][0] == 0.0  # the judge said IDK on an answerable question
    assert detector.scores["RB_agg_idk"][0] > 0.5  # the detector sees a real answer
    assert "idk_eval_source:record" in own.signatures["RB_agg_idk"].render()


def test_an_idk_eval_outside_0_half_1_is_an_input_error():
    from ragmeter.core.errors import InputError
    from ragmeter.io.formats.mtrag import record_from_mtrag

    with pytest.raises(InputError, match=re.escape("0, 0.5 or 1")) as caught:
        record_from_mtrag(_mtrag_row(0.7), path="f.jsonl", line=3)
    assert caught.value.field == "metrics.idk_eval[0]"


def test_faithfulness_offline_blends_its_parts_conditioned_as_mtrag_conditions_its_metrics():
    from ragmeter.metrics.faithfulness_offline import EMPTY, NO_PASSAGE, UNKNOWN_REFUSAL

    chunks = RECORDS[0].contexts
    answerable, unanswerable = Answerability.ANSWERABLE, Answerability.UNANSWERABLE
    records = [
        RECORDS[0],
        RECORDS[1],
        Record(id="c", question="q", answer="The pool opens at 7.", answerability=answerable),
        Record(id="d", question="q", answer="I don't know.", contexts=chunks, answerability=answerable),
        Record(id="e", question="q", answer="The pool opens at 7.", contexts=chunks, answerability=unanswerable),
        Record(id="f", question="q", answer="I don't know.", contexts=chunks),
        Record(id="g", question="q", answer="the pool opens at seven", contexts=chunks),
        Record(id="h", question="q", answer="The pool opens at 7."),
        Record(id="i", question="q", answer="  ", contexts=chunks, answerability=unanswerable),
    ]
    result = evaluate(
        records, metrics=["faithfulness_offline"], token_encoder=WordTokens(), settings=Settings(n_resamples=200)
    )
    values, notes = result.scores["faithfulness_offline"], result.notes["faithfulness_offline"]
    undefined = result.undefined["faithfulness_offline"]
    # record a: BertKPrec 1 (every answer word is in d1); Extractiveness_RougeL: d1 does not occur in the answer,
    # ROUGE-L F with d1 = LCS 5 of 5 and 7 tokens: 2·1·(5/7)/(1 + 5/7) = 5/6 (d2 shares nothing): ½·1 + ½·5/6
    assert values[0] == pytest.approx(11 / 12) and 0 not in notes
    assert values[1] == 1.0 and 1 not in notes  # rightly declined an unanswerable question
    assert 2 in undefined and undefined[2] == NO_PASSAGE  # answered, with nothing to ground it in
    assert values[3] == 0.0  # declined an answerable question
    assert values[4] == 0.0  # answered an unanswerable question, passages or not
    assert undefined[5] == UNKNOWN_REFUSAL  # declined, answerability unknown: right or wrong?
    assert values[6] == pytest.approx(11 / 12)  # answerability unknown: the blend
    assert undefined[7] == NO_PASSAGE
    assert (values[8], notes[8]) == (0.0, EMPTY)  # an empty answer is not a refusal, even here
    signature = result.signatures["faithfulness_offline"].render()
    assert "bertscore_model:words" in signature and "mtrag-dev-2" in signature and "idk_eval_source" in signature
