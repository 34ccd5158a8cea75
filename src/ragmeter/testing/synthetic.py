"""Synthetic native records that look like a multi-turn RAG log, deterministic for a seed, in any number.

8 turns per conversation (so intervals use the cluster bootstrap), 5 retrieved chunks drawn from a corpus of
``n_chunks`` chunks (each 3–6 sentences of a pool of ``n_sentences`` distinct sentences), answers of 2–4
sentences of that pool, most citing a retrieved chunk (and mostly a sentence of it, so Overlap is neither 0
nor 1), some citing a chunk that was not retrieved, some with no citation, a few IDK answers and explicit
abstentions, a reference answer, token usage of 1–2 LLM calls and a latency. However many records are asked
for, the texts come from the two pools, as on a real corpus where answers and chunks repeat; small pools make
a large file cheap to score.

>>> first = next(synthetic_records(1, seed=3))
>>> sorted(first)[:4], len(first["contexts"]), first["metadata"]["conversation_id"]
(['answer', 'answerability', 'contexts', 'id'], 5, 'conv-0')
>>> [r["id"] for r in synthetic_records(3)] == ["q0", "q1", "q2"]
True
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "IDK_SENTENCES",
    "N_CHUNKS",
    "N_SENTENCES",
    "TURNS_PER_CONVERSATION",
    "synthetic_records",
    "write_synthetic_records",
]

N_SENTENCES = 3_000
N_CHUNKS = 2_000
TURNS_PER_CONVERSATION = 8
#: The answers a share of the records give instead (IDK answers).
IDK_SENTENCES = (
    "I don't know the answer to that.",
    "The provided documents do not mention this.",
    "I'm not sure about the exact figure.",
)

_WORDS = (  # noqa: SIM905  (a word list reads better as text)
    "account balance bank card charge credit debit deposit fee fund interest loan money payment rate "
    "savings tax transfer budget cost price market stock share bond insurance policy claim coverage "
    "premium deductible benefit employee employer salary wage pension retirement plan contract lease "
    "rent tenant landlord property house home car vehicle engine battery electric fuel energy power "
    "solar wind water river lake ocean island city town village country state government court law "
    "judge appeal case form library research student school college university course exam degree "
    "doctor patient hospital health disease treatment medicine vaccine virus symptom diet exercise "
    "sleep weather storm rain snow winter summer spring autumn season travel flight airport hotel "
    "ticket passport visa border customs museum history war treaty king queen empire president vote "
    "election party senate congress computer software hardware network server data file password "
    "email phone screen camera photo video music song album artist film actor director award the a "
    "an of to in on for with by from at about after before during under over between through is are "
    "was were has have had can could will would should may might must does did"
).split()


def _sentence(rng: random.Random, low: int, high: int) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(low, high))]
    return " ".join(words).capitalize()


def _pools(seed: int, n_sentences: int, n_chunks: int) -> tuple[list[str], list[tuple[str, str, list[str]]]]:
    """``n_sentences`` distinct sentences, and ``n_chunks`` chunks (doc_id, text, its sentences) made of 3–6 of
    them."""
    rng = random.Random(seed)
    sentences = [f"{_sentence(rng, 8, 20)} {i}" for i in range(n_sentences)]  # the index keeps them distinct
    chunks = []
    for i in range(n_chunks):
        parts = rng.sample(sentences, rng.randint(3, 6))
        chunks.append((f"doc-{i // 3}-{i % 3}", " ".join(f"{p}." for p in parts), parts))
    return sentences, chunks


def synthetic_records(
    n: int, seed: int = 0, *, n_sentences: int = N_SENTENCES, n_chunks: int = N_CHUNKS
) -> Iterator[dict[str, Any]]:
    """``n`` native-format records (dicts), deterministic for a seed; their texts come from pools of
    ``n_sentences`` sentences and ``n_chunks`` chunks."""
    sentences, chunks = _pools(seed, n_sentences, n_chunks)
    rng = random.Random(seed + 1)
    for i in range(n):
        contexts = rng.sample(chunks, 5)
        parts = []
        for _ in range(rng.randint(2, 4)):
            doc_id, _, chunk_sentences = rng.choice(contexts)
            # Mostly a sentence of the cited chunk (usually supported), else any sentence (usually not).
            sentence = rng.choice(chunk_sentences if rng.random() < 0.6 else sentences)
            roll = rng.random()
            if roll < 0.85:
                parts.append(f"{sentence} [CIT:{doc_id}].")
            elif roll < 0.92:
                parts.append(f"{sentence} [CIT:{rng.choice(chunks)[0]}].")  # usually a doc not retrieved
            else:
                parts.append(f"{sentence}.")
        if rng.random() < 0.05:
            parts = [rng.choice(IDK_SENTENCES)]
        record: dict[str, Any] = {
            "id": f"q{i}",
            "question": _sentence(rng, 6, 12) + "?",
            "answer": " ".join(parts),
            "contexts": [{"doc_id": d, "text": t} for d, t, _ in contexts],
            "references": [rng.choice(sentences) + "."],
            "answerability": "UNANSWERABLE" if rng.random() < 0.1 else "ANSWERABLE",
            "usage": [
                {"prompt_tokens": rng.randint(800, 3000), "completion_tokens": rng.randint(20, 300)}
                for _ in range(rng.randint(1, 2))
            ],
            "latency_ms": round(rng.lognormvariate(7.0, 0.5), 1),
            "metadata": {"conversation_id": f"conv-{i // TURNS_PER_CONVERSATION}", "run_id": "bench"},
        }
        if rng.random() < 0.02:
            record["action"] = "ABSTAIN"
        yield record


def write_synthetic_records(
    path: str | Path, n: int, seed: int = 0, *, n_sentences: int = N_SENTENCES, n_chunks: int = N_CHUNKS
) -> int:
    """Write :func:`synthetic_records` to the JSONL file ``path`` (one record a line); its size in bytes."""
    path = Path(path)
    with path.open("w", encoding="utf-8") as handle:
        for record in synthetic_records(n, seed, n_sentences=n_sentences, n_chunks=n_chunks):
            handle.write(json.dumps(record) + "\n")
    return path.stat().st_size
