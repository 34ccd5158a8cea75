"""Seed 003's retrieval metrics (topical_precision, sufficiency_hit/rate, misleading_context_rate, mrr,
ndcg @K): the toy case of ../shared/data/ir, trec_eval (pytrec_eval) on several hundred random queries
and on MT-RAG's context_relevance, and hand-worked values and edge cases.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import ragmeter
from ragmeter import Chunk, ConfigError, EvalResult, Record, Settings, evaluate, get_metric, read_records
from ragmeter.metrics import resolve_metrics
from ragmeter.metrics.retrieval import dcg, grade, ndcg, reciprocal_rank, topical_precision

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
TOY = DATA / "ir" / "toy_case.json"
MTRAG_TASKS = DATA / "mtrag" / "human_eval_tasks.jsonl"
#: The family's metrics, in the order it lists them: seed 003's six and trec_eval's recall.
FAMILY = (
    "topical_precision",
    "sufficiency_hit",
    "sufficiency_rate",
    "misleading_context_rate",
    "mrr",
    "ndcg",
    "recall",
)
EXPONENTIAL = {0: 0, 1: 1, 2: 3}  # 2^w − 1, the relevance trec_eval must see to use seed 003's gain


def _data(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"the shared data is absent: {path} does not exist (CI has it beside the clone)")
    return path


def _pytrec_eval() -> ModuleType:
    return pytest.importorskip("pytrec_eval", reason="pytrec-eval-terrier is a test dependency")


def _settings(ideal: str = "retrieved", gain: str = "exponential") -> Settings:
    return Settings(n_resamples=100, ndcg_ideal=ideal, ndcg_gain=gain)


def _labels(w: int) -> dict[str, int]:
    """Chunk labels of a chunk graded w (2 sufficient, 1 topical only, 0 neither); never misleading."""
    return {"topically_relevant": int(w >= 1), "evidence_sufficient": int(w == 2), "misleading": 0}


def _chunk(doc_id: str, labels: dict[str, Any] | None = None) -> dict[str, Any]:
    chunk: dict[str, Any] = {"doc_id": doc_id, "text": f"text of {doc_id}"}
    return chunk if labels is None else {**chunk, "labels": labels}


def _record(contexts: list[dict[str, Any]], qrels: dict[str, int] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "question": "q",
        "answer": "a",
        "contexts": contexts,
        **({"qrels": qrels} if qrels is not None else {}),
        **extra,
    }


def _chunks(
    t: list[int | None], s: list[int | None] | None = None, m: list[int | None] | None = None
) -> list[dict[str, Any]]:
    """Chunks c1, c2, … with the labels t (topical), s (sufficient) and m (misleading), rank by rank."""
    s = s if s is not None else [0] * len(t)
    m = m if m is not None else [0] * len(t)
    return [
        _chunk(f"c{i}", {"topically_relevant": ti, "evidence_sufficient": si, "misleading": mi})
        for i, (ti, si, mi) in enumerate(zip(t, s, m, strict=True), start=1)
    ]


# ---------------------------------------------------------------------------------------------------
# 1. The toy case: trec_eval, ranx and hand values of ../shared/data/ir/toy_case.json.

#: Which ragmeter score each expected-value key of the toy case is: (metric, ndcg_ideal, ndcg_gain).
TOY_VARIANTS = {
    "trec_eval ndcg_cut_5": ("ndcg@5", "pool", "linear"),
    "ranx ndcg@5 (Jarvelin": ("ndcg@5", "pool", "linear"),
    "ranx ndcg_burges@5": ("ndcg@5", "pool", "exponential"),
    "pytrec_eval via ir_measures nDCG(gains={0:0,1:1,2:3})@5": ("ndcg@5", "pool", "exponential"),
    "hand: gain=2^w-1, IDCG over retrieved top-5 only": ("ndcg@5", "retrieved", "exponential"),
    "hand: gain=w, IDCG over retrieved top-5 only": ("ndcg@5", "retrieved", "linear"),
    "recip_rank": ("mrr@5", "retrieved", "exponential"),
    "P_5": ("topical_precision@5", "retrieved", "exponential"),
}


@pytest.fixture(scope="module")
def toy() -> dict[str, Any]:
    return json.loads(_data(TOY).read_text(encoding="utf-8"))


def _toy_records(toy: dict[str, Any]) -> list[dict[str, Any]]:
    records = []
    for query, scores in toy["run"].items():
        qrels = toy["qrels"][query]
        ranked = sorted(scores, key=lambda doc: -scores[doc])
        records.append(
            _record([_chunk(doc, _labels(qrels.get(doc, 0))) for doc in ranked], qrels=dict(qrels), id=query)
        )
    return records


def _toy_variant(key: str) -> tuple[str, str, str]:
    matches = [variant for prefix, variant in TOY_VARIANTS.items() if key.startswith(prefix)]
    assert len(matches) == 1, f"the toy case's key {key!r} matches {len(matches)} known variants"
    return matches[0]


def test_toy_case_matches_every_variant_in_the_file(toy: dict[str, Any]) -> None:
    records = _toy_records(toy)
    queries = [r["id"] for r in records]
    results: dict[tuple[str, str], EvalResult] = {}
    checked = 0
    for key, per_query in toy["expected"].items():
        metric, ideal, gain = _toy_variant(key)
        if (ideal, gain) not in results:
            results[ideal, gain] = evaluate(
                records, metrics=["ndcg@5", "mrr@5", "topical_precision@5"], settings=_settings(ideal, gain)
            )
        result = results[ideal, gain]
        assert list(result.item_ids) == queries
        for query, expected in per_query.items():
            i = queries.index(query)
            value = result.scores[metric][i]
            assert i not in result.undefined[metric], (key, query, result.undefined[metric].get(i))
            if expected == "0/0":
                # q2 retrieves only grade-0 chunks: no IDCG over the retrieved list; scored 0 and noted
                assert value == 0.0, (key, query)
                assert "ideal DCG is 0" in result.notes[metric].get(i, ""), (key, query)
            else:
                assert round(float(value), 4) == pytest.approx(expected, abs=1e-12), (key, query, value)
            checked += 1
    assert checked >= 20  # 4 NDCG variants + RR + P over three queries, plus ranx/ir_measures duplicates


def test_toy_case_pool_ndcg_notes_nothing_relevant_for_q2(toy: dict[str, Any]) -> None:
    # ideal=pool on q2: the whole judged pool is grade 0, so trec_eval's IDCG is 0 too; scored 0, noted
    result = evaluate(_toy_records(toy), metrics=["ndcg@5"], settings=_settings("pool", "linear"))
    i = list(result.item_ids).index("q2")
    assert result.scores["ndcg@5"][i] == 0.0
    assert "ideal DCG is 0: nothing relevant" in result.notes["ndcg@5"][i]
    assert set(result.notes["ndcg@5"]) == {i}


# ---------------------------------------------------------------------------------------------------
# 2. trec_eval (pytrec_eval) on 400 random queries.

N_QUERIES = 400
UNJUDGED = [f"u{j}" for j in range(8)]


def _random_queries(seed: int) -> list[dict[str, Any]]:
    """Random judged pools (grades 0/1/2 with many ties; some with nothing relevant, some empty) and
    retrieved lists of 0–12 distinct doc ids, judged and unjudged mixed."""
    rng = np.random.default_rng(seed)
    queries = []
    for q in range(N_QUERIES):
        n_judged = int(rng.integers(0, 16))
        p = rng.dirichlet([1.0, 1.0, 1.0])
        if rng.random() < 0.15:
            p = np.array([1.0, 0.0, 0.0])  # nothing relevant in the pool
        qrels = {f"d{j}": int(rng.choice(3, p=p)) for j in range(n_judged)}
        candidates = [*qrels, *UNJUDGED]
        length = int(rng.integers(0, 13))
        retrieved = [str(doc) for doc in rng.permutation(candidates)[:length]]
        # unjudged chunks: labels absent or all 0 (trec_eval counts an unjudged doc as not relevant)
        unlabelled = {doc for doc in retrieved if doc not in qrels and rng.random() < 0.5}
        queries.append({"id": f"q{q}", "qrels": qrels, "retrieved": retrieved, "unlabelled": unlabelled})
    return queries


def _random_records(queries: list[dict[str, Any]], *, complete_labels: bool) -> list[dict[str, Any]]:
    records = []
    for q in queries:
        contexts = [
            _chunk(doc)
            if doc in q["unlabelled"] and not complete_labels
            else _chunk(doc, _labels(q["qrels"].get(doc, 0)))
            for doc in q["retrieved"]
        ]
        records.append(_record(contexts, qrels=dict(q["qrels"]), id=q["id"]))
    return records


def _trec_qrels(queries: list[dict[str, Any]], gains: dict[int, int] | None) -> dict[str, dict[str, int]]:
    """qrels for trec_eval, relevance mapped through ``gains``. A query with an empty pool gets one judged
    non-relevant doc that is never retrieved (pytrec_eval drops queries with no judgment at all; a
    non-relevant judgment changes no measure)."""
    return {
        q["id"]: ({doc: (gains[w] if gains else w) for doc, w in q["qrels"].items()} or {"never-retrieved": 0})
        for q in queries
    }


def _trec_run(queries: list[dict[str, Any]], k: int | None = None) -> dict[str, dict[str, float]]:
    """Strictly decreasing scores in rank order (trec_eval breaks score ties by doc id)."""
    return {
        q["id"]: {doc: float(100 - rank) for rank, doc in enumerate(q["retrieved"][:k])}
        for q in queries
        if q["retrieved"]
    }


@pytest.mark.parametrize("seed", [20240611, 7])
def test_agrees_with_trec_eval_on_random_queries(seed: int) -> None:
    pytrec_eval = _pytrec_eval()
    queries = _random_queries(seed)
    nonempty = [q for q in queries if q["retrieved"]]
    # the generator covers the cases that matter
    assert len(queries) - len(nonempty) >= 10
    assert sum(not q["qrels"] for q in nonempty) >= 5
    assert sum(bool(q["qrels"]) and max(q["qrels"].values()) == 0 for q in nonempty) >= 20
    assert sum(bool(q["unlabelled"]) for q in nonempty) >= 100
    assert sum(0 < len(q["retrieved"]) < 5 for q in queries) >= 50

    measures = {"ndcg_cut_5", "ndcg_cut_10", "P_5", "P_10", "recip_rank"}
    linear = pytrec_eval.RelevanceEvaluator(_trec_qrels(queries, None), measures)
    exponential = pytrec_eval.RelevanceEvaluator(_trec_qrels(queries, EXPONENTIAL), {"ndcg_cut_5", "ndcg_cut_10"})
    trec = {"linear": linear.evaluate(_trec_run(queries)), "exponential": exponential.evaluate(_trec_run(queries))}
    rr = {k: linear.evaluate(_trec_run(queries, k)) for k in (5, 10)}  # RR@K = recip_rank of the top K
    ids = {q["id"] for q in nonempty}
    assert set(trec["linear"]) == set(trec["exponential"]) == set(rr[5]) == set(rr[10]) == ids

    mismatches: list[tuple[str, str, str, float, float]] = []

    def compare(result: EvalResult, metric: str, expected: dict[str, float], label: str) -> None:
        for i, q in enumerate(queries):
            if q["id"] not in expected:
                continue
            assert i not in result.undefined[metric], (label, metric, q, result.undefined[metric][i])
            value = float(result.scores[metric][i])
            if abs(value - expected[q["id"]]) > 1e-9:
                mismatches.append((label, metric, q["id"], value, expected[q["id"]]))

    # NDCG, ideal=pool: unjudged chunks without labels or with 0 labels are both non-relevant
    records = _random_records(queries, complete_labels=False)
    for gain in ("linear", "exponential"):
        result = evaluate(records, metrics=["ndcg@5", "ndcg@10"], settings=_settings("pool", gain))
        for k in (5, 10):
            compare(result, f"ndcg@{k}", {qid: v[f"ndcg_cut_{k}"] for qid, v in trec[gain].items()}, gain)
            for i, q in enumerate(queries):
                if not q["retrieved"]:  # no run entry for trec_eval; scored 0 and noted
                    assert result.scores[f"ndcg@{k}"][i] == 0.0
                    relevant = any(w > 0 for w in q["qrels"].values())
                    note = "no chunks retrieved" if relevant else "ideal DCG is 0: nothing relevant"
                    assert note in result.notes[f"ndcg@{k}"][i], (q, result.notes[f"ndcg@{k}"].get(i))
                else:  # "ideal DCG is 0" exactly where trec_eval's IDCG is 0 too (nothing relevant in the
                    # pool); otherwise a list shorter than k is noted as such, and a full one not at all
                    nothing_relevant = not any(w > 0 for w in q["qrels"].values())
                    note = result.notes[f"ndcg@{k}"].get(i)
                    if nothing_relevant:
                        assert note is not None and "ideal DCG is 0" in note, q
                    elif len(q["retrieved"]) < k:
                        assert note == f"fewer than {k} chunks retrieved", q
                    else:
                        assert note is None, q

    # P@K and RR@K read the chunks' topically_relevant labels, so every chunk carries them here
    labelled = evaluate(
        _random_records(queries, complete_labels=True),
        metrics=["topical_precision@5", "topical_precision@10", "mrr@5", "mrr@10"],
        settings=_settings(),
    )
    for k in (5, 10):
        precision = {qid: v[f"P_{k}"] for qid, v in trec["linear"].items()}
        compare(labelled, f"topical_precision@{k}", precision, "P")
        compare(labelled, f"mrr@{k}", {qid: v["recip_rank"] for qid, v in rr[k].items()}, "RR")
        for metric in (f"topical_precision@{k}", f"mrr@{k}"):
            for i, q in enumerate(queries):
                if not q["retrieved"]:
                    assert labelled.scores[metric][i] == 0.0
                    assert "no chunks retrieved" in labelled.notes[metric][i]
    assert mismatches == []

    # a label-less chunk takes its labels from its record's qrels (unjudged: not relevant, trec_eval's rule), so
    # P@K and RR@K equal trec_eval's on the records with label-less chunks too; recall@K reads the qrels alone
    derived = evaluate(
        records, metrics=["topical_precision@5", "mrr@10", "recall@5", "recall@10"], settings=_settings()
    )
    compare(derived, "topical_precision@5", {qid: v["P_5"] for qid, v in trec["linear"].items()}, "P (qrels)")
    compare(derived, "mrr@10", {qid: v["recip_rank"] for qid, v in rr[10].items()}, "RR (qrels)")
    recalls = pytrec_eval.RelevanceEvaluator(_trec_qrels(queries, None), {"recall_5", "recall_10"}).evaluate(
        _trec_run(queries)
    )
    relevant = {q["id"] for q in queries if any(w >= 1 for w in q["qrels"].values())}
    for k in (5, 10):
        compare(
            derived, f"recall@{k}", {qid: v[f"recall_{k}"] for qid, v in recalls.items() if qid in relevant}, "recall"
        )
        for i, q in enumerate(queries):
            if q["id"] not in relevant:
                assert derived.undefined[f"recall@{k}"][i] == "the qrels judge no document relevant (grade ≥ 1)"
            elif not q["retrieved"]:
                assert derived.scores[f"recall@{k}"][i] == 0.0
    assert mismatches == []
    assert len(relevant & set(recalls)) >= 100

    # without qrels, a label-less chunk in the top K leaves the label metrics undefined, saying where
    sparse = evaluate(
        [{key: value for key, value in record.items() if key != "qrels"} for record in records],
        metrics=["topical_precision@5", "recall@5"],
        settings=_settings(),
    )
    for i, q in enumerate(queries):
        ranks = [r for r, doc in enumerate(q["retrieved"][:5], start=1) if doc in q["unlabelled"]]
        if ranks:
            assert (
                sparse.undefined["topical_precision@5"][i]
                == f"chunk at rank {ranks[0]} has no topically_relevant label"
            )
        else:
            assert float(sparse.scores["topical_precision@5"][i]) == pytest.approx(
                trec["linear"][q["id"]]["P_5"] if q["retrieved"] else 0.0, abs=1e-9
            )
        assert sparse.undefined["recall@5"][i] == "recall needs the record's qrels (its judged pool); it has none"


# ---------------------------------------------------------------------------------------------------
# 3. MT-RAG's human-evaluation tasks: context_relevance as topically_relevant.


def test_mtrag_context_relevance_agrees_with_trec_eval() -> None:
    pytrec_eval = _pytrec_eval()
    path = _data(MTRAG_TASKS)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(rows) == 477
    qids = [f"{row['task_id']}|{row['model_id']}" for row in rows]
    assert len(set(qids)) == len(rows)  # task ids repeat once per model
    qrels = {
        qid: {p["document_id"]: int(k in row["context_relevance"]) for k, p in enumerate(row["contexts"])}
        for qid, row in zip(qids, rows, strict=True)
        if row["contexts"]
    }
    run = {
        qid: {p["document_id"]: float(100 - k) for k, p in enumerate(row["contexts"])}
        for qid, row in zip(qids, rows, strict=True)
        if row["contexts"]
    }
    assert all(len(run[qid]) == len(row["contexts"]) for qid, row in zip(qids, rows, strict=True) if qid in run)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"P_3", "P_5", "recip_rank"})
    trec = evaluator.evaluate(run)
    top5 = {qid: {doc: s for doc, s in docs.items() if s > 95} for qid, docs in run.items()}  # 100 … 96
    rr5 = evaluator.evaluate(top5)
    # every row with passages is in trec_eval's answer: 477 rows less the 27 without passages
    assert set(trec) == set(rr5) == set(run) and len(run) == 450

    result = evaluate(
        read_records(path, format="mtrag"),
        metrics=["topical_precision@3", "topical_precision@5", "mrr@5"],
        settings=_settings(),
    )
    assert len(result) == 477
    expected = {
        "topical_precision@3": ("P_3", trec),
        "topical_precision@5": ("P_5", trec),
        "mrr@5": ("recip_rank", rr5),
    }
    for metric, (measure, values) in expected.items():
        column = [values[qid][measure] if qid in values else 0.0 for qid in qids]
        assert result.undefined[metric] == {}
        np.testing.assert_allclose(result.scores[metric], column, rtol=0, atol=1e-12, err_msg=metric)
        empty = [i for i, row in enumerate(rows) if not row["contexts"]]
        assert len(empty) == 27
        assert all("no chunks retrieved" in result.notes[metric][i] for i in empty)
        assert result.summary(metric).value == pytest.approx(float(np.mean(column)), abs=1e-12)
        assert result.summary(metric).n == 477
    assert len({round(v, 9) for v in result.scores["topical_precision@5"]}) > 3


# ---------------------------------------------------------------------------------------------------
# 4. Hand-worked values and edge cases.


def test_pure_functions_by_hand() -> None:
    # P@5 of [1, 0, 1]: (1 + 0 + 1 + 0 + 0) / 5 = 0.4, ranks 4–5 count as 0
    assert topical_precision([1, 0, 1], 5) == 0.4
    # RR: first relevant at rank 3 → 1/3; not in the top 2 → 0
    assert reciprocal_rank([0, 0, 1], 5) == pytest.approx(1 / 3)
    assert reciprocal_rank([0, 0, 1], 2) == 0.0
    assert grade(1, 1) == 2 and grade(1, 0) == 1 and grade(0, 0) == 0 and grade(0, 1) == 2
    # DCG of [2, 0, 1]: exponential 3/1 + 0/log2(3) + 1/log2(4) = 3.5; linear 2 + 0 + 1/2 = 2.5
    assert dcg([2, 0, 1], 5) == pytest.approx(3.5)
    assert dcg([2, 0, 1], 5, gain="linear") == pytest.approx(2.5)
    # cutoff 1: only the first rank: 2^2 − 1 = 3
    assert dcg([2, 0, 1], 1) == pytest.approx(3.0)
    # NDCG@5 of [2, 0, 1] against itself sorted [2, 1, 0]: 3.5 / (3 + 1/log2(3)) = 3.5 / 3.63093 = 0.96394
    assert ndcg([2, 0, 1], 5) == pytest.approx(3.5 / (3 + 1 / math.log2(3)))
    # against a pool [2, 2, 1, 0] (linear): IDCG = 2 + 2/log2(3) + 1/2 = 3.76186; DCG = 2.5 → 0.66457
    assert ndcg([2, 0, 1], 5, ideal=[2, 2, 1, 0], gain="linear") == pytest.approx(2.5 / (2.5 + 2 / math.log2(3)))
    assert ndcg([0, 0], 5) is None and ndcg([], 5) is None and ndcg([1], 5, ideal=[0, 0]) is None
    with pytest.raises(ValueError, match="gain"):
        dcg([1], 5, gain="binary")


def test_short_list_divides_by_k_and_is_noted() -> None:
    # 3 chunks, K = 5: t = [1, 0, 1], s = [1, 0, 0], m = [0, 1, 0]
    records = [_record(_chunks([1, 0, 1], [1, 0, 0], [0, 1, 0]))]
    result = evaluate(records, metrics=["retrieval@5"], settings=_settings())
    scores = {name: float(v[0]) for name, v in result.scores.items()}
    assert scores["topical_precision@5"] == pytest.approx(2 / 5)  # (1 + 0 + 1) / 5
    assert scores["sufficiency_rate@5"] == pytest.approx(1 / 5)  # 1 / 5
    assert scores["misleading_context_rate@5"] == pytest.approx(1 / 5)  # 1 / 5
    assert scores["sufficiency_hit@5"] == 1.0  # rank 1 suffices
    assert scores["mrr@5"] == 1.0  # rank 1 is on topic
    # grades w = [2, 0, 1]: DCG = 3 + 0 + 1/2 = 3.5 over the ideal [2, 1, 0]: 3 + 1/log2(3)
    assert scores["ndcg@5"] == pytest.approx(3.5 / (3 + 1 / math.log2(3)))
    for name in ("topical_precision@5", "sufficiency_rate@5", "misleading_context_rate@5"):
        assert "fewer than 5" in result.notes[name][0]
        assert result.summary(name).notes == {result.notes[name][0]: 1}
    # NDCG notes the short list without a denominator: in retrieved mode it divides by the ideal DCG
    assert result.notes["ndcg@5"][0] == "fewer than 5 chunks retrieved"
    # a hit and a reciprocal rank do not depend on K's denominator: nothing to note
    assert result.notes["sufficiency_hit@5"] == {} and result.notes["mrr@5"] == {}
    # at K = 3 the list is not short
    exact = evaluate(records, metrics=["retrieval@3"], settings=_settings())
    assert exact.scores["topical_precision@3"][0] == pytest.approx(2 / 3)
    assert all(exact.notes[name] == {} for name in exact.metrics)


def test_empty_list_scores_zero_everywhere_and_is_noted() -> None:
    result = evaluate(
        [_record([], qrels={"c1": 1}), _record(_chunks([1]), qrels={"c1": 1})],
        metrics=["retrieval@5"],
        settings=_settings(),
    )
    for name in result.metrics:
        assert result.scores[name][0] == 0.0, name
        assert 0 not in result.undefined[name]
        assert "no chunks retrieved" in result.notes[name][0], name
    # retrieved-ideal NDCG: no retrieved grade, so no IDCG either
    assert result.notes["ndcg@5"][0].startswith("ideal DCG is 0")
    # the run figure counts the empty record as 0: mean of (0, 1/5) and (0, 1)
    assert result.summary("topical_precision@5").value == pytest.approx(0.1)
    assert result.summary("mrr@5").value == pytest.approx(0.5)
    assert result.summary("mrr@5").notes == {"no chunks retrieved (scored 0)": 1}


def test_a_missing_label_in_the_top_k_is_undefined_but_not_past_k() -> None:
    contexts = [
        _chunk("c1", {"topically_relevant": 1, "evidence_sufficient": 0, "misleading": 0}),
        _chunk("c2", {"topically_relevant": 0, "misleading": 1}),  # no evidence_sufficient
        _chunk("c3"),
    ]  # no labels at all
    names = [
        "topical_precision@2",
        "topical_precision@3",
        "sufficiency_rate@1",
        "sufficiency_rate@2",
        "sufficiency_hit@2",
        "misleading_context_rate@2",
        "mrr@2",
        "mrr@3",
        "ndcg@1",
        "ndcg@2",
    ]
    result = evaluate([_record(contexts)], metrics=names, settings=_settings())
    undefined = {name: reasons[0] for name, reasons in result.undefined.items() if 0 in reasons}
    assert undefined == {
        "topical_precision@3": "chunk at rank 3 has no topically_relevant label",
        "sufficiency_rate@2": "chunk at rank 2 has no evidence_sufficient label",
        "sufficiency_hit@2": "chunk at rank 2 has no evidence_sufficient label",
        "mrr@3": "chunk at rank 3 has no topically_relevant label",
        "ndcg@2": "chunk at rank 2 has no evidence_sufficient label",
    }
    assert all(np.isnan(result.scores[name][0]) for name in undefined)
    assert result.scores["topical_precision@2"][0] == 0.5  # (1 + 0) / 2; c3 is past K
    assert result.scores["sufficiency_rate@1"][0] == 0.0
    assert result.scores["misleading_context_rate@2"][0] == 0.5  # (0 + 1) / 2
    assert result.scores["mrr@2"][0] == 1.0
    assert result.scores["ndcg@1"][0] == 1.0  # [1] against itself
    assert dict(result.summary("mrr@3").undefined_reasons) == {"chunk at rank 3 has no topically_relevant label": 1}
    assert result.summary("mrr@3").n_undefined == 1


def test_a_tie_is_undefined_with_the_annotators_tied_reason() -> None:
    records = [_record(_chunks([1, None], [0, 0], [None, 0]))]
    names = ["topical_precision@1", "topical_precision@2", "misleading_context_rate@2", "mrr@2", "ndcg@2"]
    result = evaluate(records, metrics=names, settings=_settings())
    assert result.undefined["topical_precision@2"] == {0: "annotators tied on topically_relevant at rank 2"}
    assert result.undefined["misleading_context_rate@2"] == {0: "annotators tied on misleading at rank 1"}
    assert result.undefined["ndcg@2"] == {0: "annotators tied on topically_relevant at rank 2"}
    # RR@2 also reads rank 2's topical label (even though rank 1 already decides it): undefined
    assert result.undefined["mrr@2"] == {0: "annotators tied on topically_relevant at rank 2"}
    assert result.scores["topical_precision@1"][0] == 1.0
    assert result.summary("topical_precision@2").undefined_reasons == {
        "annotators tied on topically_relevant at rank 2": 1
    }


def test_misleading_and_sufficiency_values_by_hand() -> None:
    records = [
        _record(_chunks([1, 1, 0, 1, 0], [0, 0, 1, 0, 0], [0, 1, 0, 0, 1])),
        _record(_chunks([0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [1, 1, 1, 0, 0])),
        _record(_chunks([1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [0, 0, 0, 0, 0])),
    ]
    result = evaluate(records, metrics=["retrieval@2", "retrieval@5"], settings=_settings())
    s = {name: [float(v) for v in values] for name, values in result.scores.items()}
    # misleading m: [0,1,0,0,1] → @2 1/2, @5 2/5; [1,1,1,0,0] → @2 1, @5 3/5; none → 0
    assert s["misleading_context_rate@2"] == pytest.approx([0.5, 1.0, 0.0])
    assert s["misleading_context_rate@5"] == pytest.approx([0.4, 0.6, 0.0])
    assert result.summary("misleading_context_rate@5").value == pytest.approx((0.4 + 0.6) / 3)
    assert get_metric("misleading_context_rate@5").higher_is_better is False
    # sufficient s: [0,0,1,0,0] → hit@2 0, hit@5 1, rate@5 1/5; none → 0; [1,1,0,0,0] → rate@2 1, rate@5 2/5
    assert s["sufficiency_hit@2"] == [0.0, 0.0, 1.0]
    assert s["sufficiency_hit@5"] == [1.0, 0.0, 1.0]
    assert s["sufficiency_rate@2"] == pytest.approx([0.0, 0.0, 1.0])
    assert s["sufficiency_rate@5"] == pytest.approx([0.2, 0.0, 0.4])
    assert result.summary("sufficiency_hit@5").value == pytest.approx(2 / 3)  # a rate: 2 hits of 3
    assert result.summary("sufficiency_hit@5").statistic == "rate"
    # topical t: [1,1,0,1,0] → P@5 3/5, RR 1; none → 0, 0; all → 1, 1
    assert s["topical_precision@5"] == pytest.approx([0.6, 0.0, 1.0])
    assert s["mrr@5"] == [1.0, 0.0, 1.0]
    # w (2 if s, else 1 if t): [1,1,2,1,0]. Exponential gains [1,1,3,1,0]:
    # DCG@5 = 1 + 1/log2(3) + 3/2 + 1/log2(5); ideal [2,1,1,1,0]: 3 + 1/log2(3) + 1/2 + 1/log2(5)
    dcg1 = 1 + 1 / math.log2(3) + 3 / 2 + 1 / math.log2(5)
    idcg1 = 3 + 1 / math.log2(3) + 1 / 2 + 1 / math.log2(5)
    assert s["ndcg@5"][0] == pytest.approx(dcg1 / idcg1)
    # all grade 0 → 0/0, scored 0 and noted; [2,2,1,1,1] is sorted already → 1
    assert s["ndcg@5"][1:] == [0.0, 1.0]
    assert result.notes["ndcg@5"] == {1: "ideal DCG is 0: nothing relevant (scored 0, as trec_eval)"}


def test_pool_ndcg_needs_qrels_and_reads_them() -> None:
    with_qrels = _record([_chunk("a", _labels(0)), _chunk("b", _labels(0))], qrels={"a": 1, "b": 2, "z": 2})
    records = [_record(_chunks([1, 0])), with_qrels]
    result = evaluate(records, metrics=["ndcg@3"], settings=_settings("pool", "linear"))
    reason = result.undefined["ndcg@3"][0]
    assert "qrels" in reason and "pool" in reason
    assert np.isnan(result.scores["ndcg@3"][0])
    # the qrels grade beats the chunk labels for a judged doc: w = [1, 2] (the labels say 0)
    # linear: DCG = 1 + 2/log2(3) = 2.26186; pool [2, 2, 1]: IDCG = 2 + 2/log2(3) + 1/2 = 3.76186
    assert result.scores["ndcg@3"][1] == pytest.approx((1 + 2 / math.log2(3)) / (2.5 + 2 / math.log2(3)))
    assert result.summary("ndcg@3").undefined_reasons == {reason: 1}
    # the retrieved ideal ignores qrels and reads labels: all 0 → 0/0, noted
    retrieved = evaluate(records, metrics=["ndcg@3"], settings=_settings("retrieved", "linear"))
    assert retrieved.undefined["ndcg@3"] == {}
    assert list(retrieved.scores["ndcg@3"]) == [1.0, 0.0]  # [1, 0] is ideal already
    assert "ideal DCG is 0" in retrieved.notes["ndcg@3"][1]


def test_pool_ndcg_counts_a_doc_retrieved_twice_once() -> None:
    # qrels {a: 2, b: 1}; retrieved b, a, a → w = [1, 2, 0] (the second a gains 0, as in trec_eval)
    record = _record(
        [_chunk("b", _labels(1)), _chunk("a", _labels(2)), _chunk("a", _labels(2))], qrels={"a": 2, "b": 1}
    )
    exp = evaluate([record], metrics=["ndcg@3"], settings=_settings("pool", "exponential"))
    # exponential: DCG = 1/1 + 3/log2(3) + 0/2 = 2.89279; IDCG of [2, 1] = 3 + 1/log2(3) = 3.63093 → 0.79671
    # (counting a twice would give (2.89279 + 3/2) / 3.63093 = 1.2098 > 1)
    assert exp.scores["ndcg@3"][0] == pytest.approx((1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3)))
    assert round(float(exp.scores["ndcg@3"][0]), 4) == 0.7967
    lin = evaluate([record], metrics=["ndcg@3"], settings=_settings("pool", "linear"))
    # linear: DCG = 1 + 2/log2(3) = 2.26186; IDCG = 2 + 1/log2(3) = 2.63093 → 0.85972
    assert lin.scores["ndcg@3"][0] == pytest.approx((1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)))
    assert round(float(lin.scores["ndcg@3"][0]), 4) == 0.8597


def test_pool_ndcg_treats_an_unlabelled_unjudged_chunk_as_not_relevant() -> None:
    # qrels {a: 1}; retrieved u (unjudged, no labels), a → w = [0, 1]; linear DCG = 1/log2(3); IDCG = 1
    record = _record([_chunk("u"), _chunk("a")], qrels={"a": 1})
    result = evaluate([record], metrics=["ndcg@5"], settings=_settings("pool", "linear"))
    assert result.undefined["ndcg@5"] == {}
    assert result.scores["ndcg@5"][0] == pytest.approx(1 / math.log2(3))  # 0.63093
    assert result.notes["ndcg@5"] == {0: "fewer than 5 chunks retrieved"}  # 2 of 5 ranks filled


def test_pool_ndcg_grades_a_partly_labelled_unjudged_chunk_alike_in_dcg_and_ideal() -> None:
    # qrels {a: 1}; retrieved a, u where u is unjudged with only topically_relevant = 1.
    # _grades counts u as 0 (a label is missing) → w = [1, 0], DCG = 1; the ideal must then be [1, 0] too:
    # NDCG = 1 (trec_eval: 1 as well, u is unjudged); grading u 1 in the ideal alone would give
    # IDCG = 1 + 1/log2(3) → 0.6131.
    record = _record([_chunk("a", _labels(1)), _chunk("u", {"topically_relevant": 1})], qrels={"a": 1})
    result = evaluate([record], metrics=["ndcg@5"], settings=_settings("pool", "linear"))
    assert result.scores["ndcg@5"][0] == pytest.approx(1.0)


def test_cutoff_names_parse_or_raise_config_errors() -> None:
    for name in ("ndcg", "ndcg@0", "ndcg@x", "ndcg@-1", "ndcg@1.5", "mrr@"):
        with pytest.raises(ConfigError):
            get_metric(name)
    with pytest.raises(ConfigError, match="needs a cutoff"):
        get_metric("topical_precision")
    assert get_metric("ndcg@7").name == "ndcg@7"
    assert get_metric("mrr@1").family == "retrieval"
    assert get_metric("ndcg@5") is get_metric("ndcg@5")
    assert [m.name for m in resolve_metrics(["retrieval@5"])] == [f"{base}@5" for base in FAMILY]
    assert [m.name for m in resolve_metrics(["retrieval"])] == [f"{base}@10" for base in FAMILY]
    assert [m.name for m in resolve_metrics(["retrieval@3", "ndcg@3", "mrr@7"])] == [
        *(f"{base}@3" for base in FAMILY),
        "mrr@7",
    ]
    with pytest.raises(ConfigError):
        resolve_metrics(["retrieval@0"])
    assert ragmeter.ConfigError is ConfigError


def test_a_superscript_cutoff_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        get_metric("ndcg@²")


def test_ndcg_signatures_name_ideal_and_gain() -> None:
    record = _record(_chunks([1, 0]), qrels={"c1": 1})
    result = evaluate([record], metrics=["ndcg@5", "mrr@5"], settings=_settings("pool", "linear"))
    text = result.signatures["ndcg@5"].render()
    assert "ideal:pool" in text and "gain:linear" in text and text.startswith("ndcg@5|")
    default = evaluate([record], metrics=["ndcg@5"], settings=_settings()).signatures["ndcg@5"].render()
    assert "ideal:retrieved" in default and "gain:exponential" in default
    assert "ideal:" not in result.signatures["mrr@5"].render()


@pytest.mark.parametrize("gain", ["exponential", "linear"])
def test_batch_kernels_equal_the_per_query_definitions(gain: str) -> None:
    # The run scores batches with numpy kernels; the documented per-query functions define the values.
    from ragmeter.metrics.retrieval import misleading_context_rate, sufficiency_hit, sufficiency_rate

    rng = np.random.default_rng(3)
    labels = [
        [(int(t), int(t and s), int(m)) for t, s, m in rng.integers(0, 2, size=(rng.integers(0, 9), 3))]
        for _ in range(300)
    ]
    records = [_record(_chunks([t for t, _, _ in q], [s for _, s, _ in q], [m for _, _, m in q])) for q in labels]
    result = evaluate(records, metrics=["retrieval@5"], settings=_settings("retrieved", gain), batch_size=64)
    for i, q in enumerate(labels):
        t, s, m = ([row[j] for row in q] for j in range(3))
        w = [grade(ti, si) for ti, si in zip(t, s, strict=True)]
        expected = {
            "topical_precision@5": topical_precision(t, 5),
            "sufficiency_hit@5": sufficiency_hit(s, 5),
            "sufficiency_rate@5": sufficiency_rate(s, 5),
            "mrr@5": reciprocal_rank(t, 5),
            "misleading_context_rate@5": misleading_context_rate(m, 5),
            "ndcg@5": ndcg(w, 5, gain=gain) or 0.0,
        }
        for name, value in expected.items():
            assert result.scores[name][i] == pytest.approx(value, abs=1e-12), (name, q)


# ---------------------------------------------------------------------------------------------------
# 5. The pool-mode batch kernel against a per-record reading of the pool rule.

ABSENT = object()  # a label the chunk does not have
VOCABULARY = [f"d{j}" for j in range(9)]  # few doc ids: repeats within a list and shared pools


def _pool_reference(record: Record, k: int) -> tuple[list[int], list[int], list[int]] | str:
    """trec_eval's pool rule for one record, written out rank by rank: a judged doc_id gains its qrels
    grade at its first rank and 0 at a repeat; an unjudged chunk gains its label grade (0 when a label
    is absent) and a tied label makes the record ungradable. Ideal: the best k of the qrels grades and
    the unjudged chunks' grades, padded with 0. Returns (grades, ideal), both of length k, and the
    ideal's candidates (all those grades), or the reason."""
    if record.qrels is None:
        return "ideal=pool needs the record's qrels (its judged pool); it has none"
    grades: list[int] = []
    unjudged: list[int] = []
    seen: set[str] = set()
    for rank, chunk in enumerate(record.contexts[:k], start=1):
        if chunk.doc_id in record.qrels:
            grades.append(0 if chunk.doc_id in seen else record.qrels[chunk.doc_id])
            seen.add(chunk.doc_id)
            continue
        topical = chunk.labels.get("topically_relevant", ABSENT)
        sufficient = chunk.labels.get("evidence_sufficient", ABSENT)
        if topical is None:
            return f"annotators tied on topically_relevant at rank {rank}"
        if sufficient is None:
            return f"annotators tied on evidence_sufficient at rank {rank}"
        w = 0 if ABSENT in (topical, sufficient) else grade(topical, sufficient)
        grades.append(w)
        unjudged.append(w)
    candidates = sorted([*record.qrels.values(), *unjudged], reverse=True)
    ideal = candidates[:k]
    return grades + [0] * (k - len(grades)), ideal + [0] * (k - len(ideal)), candidates


def _random_label(rng: np.random.Generator) -> object:
    draw = rng.random()
    return ABSENT if draw < 0.04 else None if draw < 0.07 else int(draw < 0.5)


def _random_pool_records(seed: int, n: int = 500) -> list[Record]:
    """Lists of 0–8 chunks drawn with replacement from a few doc ids (repeats, short lists); each label
    0/1, tied (None) or absent, some chunks with no labels at all, some records fully labelled; qrels
    of grades 0/1/2 (a few records with grades −3…40), or none."""
    rng = np.random.default_rng(seed)
    records = []
    for i in range(n):
        clean = rng.random() < 0.3
        contexts = []
        for doc_id in rng.choice(VOCABULARY, size=int(rng.integers(0, 9))):
            if clean:
                labels = {
                    name: int(rng.random() < 0.5)
                    for name in ("topically_relevant", "evidence_sufficient", "misleading")
                }
            elif rng.random() < 0.1:
                labels = {}
            else:
                drawn = {
                    name: _random_label(rng) for name in ("topically_relevant", "evidence_sufficient", "misleading")
                }
                labels = {name: value for name, value in drawn.items() if value is not ABSENT}
            contexts.append(Chunk(str(doc_id), f"text of {doc_id}", labels=labels))
        wide = rng.random() < 0.05
        judged = rng.choice(VOCABULARY, size=int(rng.integers(0, 7)), replace=False)
        qrels = (
            None
            if rng.random() < 0.05
            else {str(doc_id): int(rng.integers(-3, 41) if wide else rng.integers(0, 3)) for doc_id in judged}
        )
        records.append(Record(id=f"r{i}", question="q", answer="a", contexts=tuple(contexts), qrels=qrels))
    return records


def _kernel_pool(records: list[Record], k: int) -> list[tuple[list[int], list[int]] | str]:
    """What the batch kernel gives each record: (grades, ideal) or the reason it cannot be graded."""
    from ragmeter.metrics._retrieval_kernels import graded, ranked_labels

    grades, ideal, problems = graded(records, ranked_labels(records, k), pool=True)
    assert ideal is not None
    return [
        problem if problem is not None else (grades[i].tolist(), ideal[i].tolist())
        for i, problem in enumerate(problems)
    ]


@pytest.mark.parametrize("k", [1, 3, 5, 10])
def test_pool_kernel_equals_a_per_record_reading(k: int) -> None:
    records = _random_pool_records(11 + k)
    expected = [e if isinstance(e, str) else e[:2] for e in (_pool_reference(record, k) for record in records)]
    # the data hold every case the rule distinguishes
    tops = [record.contexts[:k] for record in records]
    labels = [chunk.labels for top in tops for chunk in top]
    assert sum(len({c.doc_id for c in top}) < len(top) for top in tops) >= (5 if k > 1 else 0)
    assert sum(any(v is None for v in lab.values()) for lab in labels) >= 10
    assert sum(len(lab) < 3 for lab in labels) >= 10
    assert sum(record.qrels is None for record in records) >= 5
    assert sum(isinstance(e, str) and "tied" in e for e in expected) >= 5
    assert sum(not isinstance(e, str) for e in expected) >= 200
    assert (
        sum(
            record.qrels is not None and any(c.doc_id not in record.qrels for c in top)
            for record, top in zip(records, tops, strict=True)
        )
        >= 100
    )
    assert sum(len(top) < k for top in tops) >= (50 if k > 1 else 20)
    # one batch (grades −3…40 in it), each record alone, and batches of 64 (labels read per batch)
    assert _kernel_pool(records, k) == expected
    assert [_kernel_pool([record], k)[0] for record in records] == expected
    assert [
        got for start in range(0, len(records), 64) for got in _kernel_pool(records[start : start + 64], k)
    ] == expected


@pytest.mark.parametrize("gain", ["exponential", "linear"])
def test_pool_ndcg_equals_the_per_query_definition_on_random_records(gain: str) -> None:
    records = _random_pool_records(5)
    result = evaluate(records, metrics=["ndcg@5"], settings=_settings("pool", gain), batch_size=64)
    for i, record in enumerate(records):
        expected = _pool_reference(record, 5)
        if isinstance(expected, str):
            assert result.undefined["ndcg@5"][i] == expected
            continue
        w, _, candidates = expected
        value = ndcg(w, 5, ideal=candidates, gain=gain) or 0.0
        # relative: a grade of 40 gains 2^40 − 1
        assert result.scores["ndcg@5"][i] == pytest.approx(value, rel=1e-12, abs=1e-12), (i, w, candidates)


def test_pool_kernel_refuses_the_grade_it_reserves_for_unjudged() -> None:
    from ragmeter.metrics._retrieval_kernels import graded, ranked_labels

    reserved = -(2**63)
    records = [
        Record(
            id="r7", question="q", answer="a", contexts=(Chunk("a", "text", labels=_labels(1)),), qrels={"a": reserved}
        )
    ]
    with pytest.raises(ValueError, match=r"'r7'.*out of range"):
        graded(records, ranked_labels(records, 5), pool=True)
