"""Records and template facts shared by the annotation tests (library and CLI)."""

from __future__ import annotations

from typing import Any

from ragmeter.core.records import ANSWER_LABELS, CHUNK_LABELS

# The template's columns, written out by hand (not imported), so a change to them fails a test.
TEXT_COLUMNS = ["annotator", "record_id", "model_id", "unit", "rank", "doc_id", "question", "text"]
ALL = list(CHUNK_LABELS + ANSWER_LABELS)

# Three records with 3, 2 and 3 chunks; r1's answer and first chunk (titled) hold newlines, so in a CSV
# template r1's answer row spans lines 2-3 and its first chunk row lines 4-5; each later row is one line:
# r1 rank 2 → 6, rank 3 → 7, r2 answer → 8, rank 1 → 9, rank 2 → 10, r3 answer → 11, ranks 1-3 → 12-14.
RECORDS: list[dict[str, Any]] = [
    {
        "id": "r1",
        "question": "What is the capital of France?",
        "answer": 'Paris, "the City of Light",\nis the capital.',
        "contexts": [
            {"doc_id": "fr-1", "title": "France", "text": "Paris is the capital of France."},
            {"doc_id": "fr-2", "text": 'Lyon, a city, is "big".'},
            {"doc_id": "de-1", "text": "Berlin is the capital of Germany."},
        ],
        "labels": {"unsafe_content": 0, "idk_eval": 0},
    },
    {
        "id": "r2",
        "question": "Who wrote Hamlet?",
        "answer": "Shakespeare.",
        "contexts": [
            {"doc_id": "ham-1", "text": "Hamlet is a tragedy by William Shakespeare.", "labels": {"misleading": 0}},
            {"doc_id": "mac-1", "text": "Macbeth is another play."},
        ],
    },
    {
        "id": "r3",
        "question": "How tall is Everest?",
        "answer": "About 8,849 m.",
        "contexts": [
            {"doc_id": "ev-1", "text": "Mount Everest is 8,849 metres tall."},
            {"doc_id": "k2-1", "text": "K2 is 8,611 metres tall."},
            {"doc_id": "ev-2", "text": "Everest lies in the Himalayas."},
        ],
        "labels": {"helpful": 0},
    },
]
UNITS = [
    ("r1", 0),
    ("r1", 1),
    ("r1", 2),
    ("r1", 3),
    ("r2", 0),
    ("r2", 1),
    ("r2", 2),
    ("r3", 0),
    ("r3", 1),
    ("r3", 2),
    ("r3", 3),
]
# The same question answered by two systems: one record id, two model ids.
MODEL_RECORDS: list[dict[str, Any]] = [
    {
        "id": "q1",
        "question": "Capital of Italy?",
        "answer": f"Rome ({model}).",
        "contexts": [
            {"doc_id": "it-1", "text": "Rome is the capital of Italy."},
            {"doc_id": "it-2", "text": "Milan is in Italy."},
        ],
        "metadata": {"model_id": model},
    }
    for model in ("m-a", "m-b")
]
