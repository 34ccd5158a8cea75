"""Overhead of the Overlap metric over the raw embedding work it needs.

Records come from MT-RAG's reference tasks (``shared/data/mtrag/mtragun_reference_tasks.jsonl``): the
answer is the reference answer with ``[CIT:<doc_id of the first passage>]`` put into every sentence, the
contexts are the task's passages, the question is the last user turn. Tasks without passages are left
out (there is no doc_id to cite, so they would add parsing but no embedding work).

Two timings, each with a fresh :class:`ragmeter.OnnxMiniLM` (built outside the timer, so the model
load and its sha256 check are not counted and no vector is cached):

- ``evaluate``: ``ragmeter.evaluate(records, metrics=["overlap"], embedder=model)`` with
  ``Settings(n_resamples=100)``: sentence splitting, citation parsing, IDK detection, the run-wide
  embedding cache, per-batch encoding, cosines, and a (cheap) 100-resample bootstrap of one mean;
- ``encode``: ``model.encode(texts)`` over exactly the distinct texts Overlap embeds (each checkable
  claim sentence with its citations stripped, plus every chunk it cites), computed here independently
  and checked against the texts ``evaluate`` actually sent to the embedder.

The sides alternate (evaluate, encode, evaluate, encode, …; three rounds, two with ``--quick``) and the
minimum of each is reported: on a shared 2-core machine the minimum is the least disturbed run.
Goal: evaluate / encode ≤ 1.15.
"""

from __future__ import annotations

import gc
import json
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._mtrag_data import REFERENCE_TASKS as TASKS_FILE
from benchmarks._mtrag_data import missing

GOAL_RATIO = 1.15
_FINAL_PUNCT = re.compile(r"([.!?。]+[\"'”’)\]]*)\s*$")


def cite_every_sentence(text: str, doc_id: str) -> str:
    """``text`` with `` [CIT:doc_id]`` before each sentence's final punctuation (or at its end)."""
    from ragmeter.text import split_sentences

    marker = f" [CIT:{doc_id}]"
    cited = []
    for sentence in split_sentences(text):
        match = _FINAL_PUNCT.search(sentence)
        cited.append(sentence[: match.start()] + marker + match.group(1) if match else sentence + marker)
    return " ".join(cited)


def load_records(path: Path = TASKS_FILE) -> tuple[list[Any], int]:
    """The benchmark records, and the number of tasks left out for having no passage."""
    from ragmeter import Chunk, Record

    records, skipped = [], 0
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            task = json.loads(line)
            passages = task.get("contexts") or []
            if not passages:
                skipped += 1
                continue
            question = [turn["text"] for turn in task["input"] if turn["speaker"] == "user"][-1]
            contexts = tuple(
                Chunk(doc_id=str(p["document_id"]), text=p["text"], title=p.get("title")) for p in passages
            )
            answer = cite_every_sentence(task["targets"][0]["text"], contexts[0].doc_id)
            records.append(
                Record(
                    id=str(task["task_id"]),
                    question=question,
                    answer=answer,
                    contexts=contexts,
                    metadata={"conversation_id": task.get("conversation_id")},
                )
            )
    return records, skipped


def texts_overlap_embeds(records: Sequence[Any]) -> list[str]:
    """The distinct texts Overlap embeds, by the rule of SPEC §2, in first-seen order.

    A claim sentence (not IDK) with exactly one citation whose doc_id is retrieved is checked: its text
    without citations and every retrieved chunk with that doc_id are embedded.
    """
    from ragmeter import Settings
    from ragmeter.text import find_citations, split_sentences, strip_citations

    idk = Settings().idk
    texts: dict[str, None] = {}
    for record in records:
        for sentence in split_sentences(record.answer):
            cited = find_citations(sentence)
            if idk.is_idk(sentence) or len(cited) != 1:
                continue
            chunks = [chunk.text for chunk in record.contexts if chunk.doc_id == cited[0]]
            if chunks:
                texts.setdefault(strip_citations(sentence))
                texts.update(dict.fromkeys(chunks))
    return list(texts)


class _Recording:
    """An embedder proxy that remembers every text it was asked to encode (negligible cost)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seen: list[str] = []

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        return self.inner.encode(texts)


def run(*, quick: bool = False, repeats: int = 3) -> dict[str, Any]:
    skipped = missing("overlap_overhead", "overlap overhead", TASKS_FILE)
    if skipped:
        return skipped

    import ragmeter
    from ragmeter import OnnxMiniLM, Settings
    from ragmeter.engine.context import ItemContext, RunContext
    from ragmeter.metrics.citation import _texts_to_embed
    from ragmeter.text import split_sentences

    records, skipped = load_records()
    if quick:
        records, repeats = records[:120], min(repeats, 2)
    texts = texts_overlap_embeds(records)
    # Cross-check with the metric's own prefetch list (ragmeter.metrics.citation internals).
    run_context = RunContext(Settings(embedder="hashing"))
    prefetched = {t for r in records for t in _texts_to_embed(r, ItemContext(), run_context)}
    if prefetched != set(texts):
        raise AssertionError(
            f"independent text list ({len(texts)}) differs from Overlap's prefetch ({len(prefetched)})"
        )
    settings = Settings(n_resamples=100)

    evaluate_times, encode_times, overlap_value, sent = [], [], None, None
    for _ in range(repeats):
        model = _Recording(OnnxMiniLM())
        start = time.perf_counter()
        result = ragmeter.evaluate(records, metrics=["overlap"], settings=settings, embedder=model)
        evaluate_times.append(time.perf_counter() - start)
        overlap_value = result.summary("overlap").value
        sent = model.seen
        del model, result
        gc.collect()  # no idle onnxruntime session from the previous timing stays around

        encoder = OnnxMiniLM()
        start = time.perf_counter()
        vectors = encoder.encode(texts)
        encode_times.append(time.perf_counter() - start)
        assert vectors.shape == (len(texts), 384)
        del encoder
        gc.collect()

    assert sent is not None
    if len(sent) != len(set(sent)) or set(sent) != set(texts):
        raise AssertionError(
            f"evaluate embedded {len(sent)} texts ({len(set(sent))} distinct); "
            f"expected the {len(texts)} distinct texts computed here"
        )
    claims = sum(len(split_sentences(r.answer)) for r in records)
    t_eval, t_encode = min(evaluate_times), min(encode_times)
    out = {
        "name": "overlap_overhead",
        "records": len(records),
        "tasks_without_passages_skipped": skipped,
        "answer_sentences": claims,
        "texts_embedded": len(texts),
        "texts_embedded_by_evaluate": len(sent),
        "overlap_mean": overlap_value,
        "settings": ("evaluate(metrics=['overlap'], settings=Settings(n_resamples=100)); fresh OnnxMiniLM per timing"),
        "evaluate_s": evaluate_times,
        "encode_s": encode_times,
        "evaluate_min_s": t_eval,
        "encode_min_s": t_encode,
        "ratio": t_eval / t_encode,
        "goal_ratio": GOAL_RATIO,
        "meets_goal": t_eval / t_encode <= GOAL_RATIO,
        "quick": quick,
    }
    print(
        f"[overlap overhead] {len(records)} records, {len(texts)} distinct texts embedded: "
        f"evaluate {t_eval:.2f} s vs encode {t_encode:.2f} s → ratio {out['ratio']:.3f} "
        f"(goal ≤ {GOAL_RATIO}: {'met' if out['meets_goal'] else 'NOT met'})"
    )
    return out


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
