"""The registry's contracts with the run loop: a rate's values are 0 or 1, a batch kernel sees only the
records that have its fields, cutoffs are bounded, and each metric's signature names its own settings."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ragmeter import ConfigError, HashingEmbedder, Settings, evaluate, get_metric
from ragmeter.metrics import _registry
from ragmeter.metrics._registry import MAX_CUTOFF, BatchOutcomes, Metric
from ragmeter.results.aggregate import Aggregation

RECORDS = [
    {"id": "a", "question": "q", "answer": "x", "references": ["x"]},
    {"id": "b", "question": "q", "answer": "y"},
    {"id": "c", "question": "q", "answer": "z", "references": ["z"]},
]


def registered(monkeypatch: pytest.MonkeyPatch, metric: Metric) -> None:
    monkeypatch.setitem(_registry._REGISTRY, metric.name, metric)


def test_a_rate_that_gives_another_value_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    registered(
        monkeypatch,
        Metric(
            name="test_bad_rate",
            family="test",
            description="",
            needs=("answer",),
            aggregation=Aggregation.RATE,
            value_range=(0.0, 1.0),
            higher_is_better=True,
            compute=lambda record, item, run: 0.5,
        ),
    )
    with pytest.raises(ConfigError, match=re.escape("'test_bad_rate' is a rate but gave 0.5 for item 'a'")):
        evaluate(RECORDS, metrics=["test_bad_rate"])


def test_a_batch_kernel_is_handed_only_records_with_its_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def kernel(records, items, run):  # type: ignore[no-untyped-def]
        seen.append([r.id for r in records])
        return BatchOutcomes(np.array([float(len(r.references)) for r in records]), notes={1: "second"})

    registered(
        monkeypatch,
        Metric(
            name="test_kernel",
            family="test",
            description="",
            needs=("references",),
            aggregation=Aggregation.MEAN,
            value_range=(0.0, None),
            higher_is_better=None,
            compute=lambda record, item, run: 0.0,
            compute_batch=kernel,
        ),
    )
    result = evaluate(RECORDS, metrics=["test_kernel"])
    assert seen == [["a", "c"]]
    assert result.undefined["test_kernel"] == {1: "record has no reference answer"}
    assert result.summary("test_kernel").value == 1.0
    assert result.notes["test_kernel"] == {2: "second"}  # the kernel's position 1 is the batch's item 2


def test_rank_cutoffs_are_bounded() -> None:
    assert get_metric(f"ndcg@{MAX_CUTOFF}").name == f"ndcg@{MAX_CUTOFF}"
    with pytest.raises(ConfigError, match=f"from 1 to {MAX_CUTOFF}"):
        get_metric(f"ndcg@{MAX_CUTOFF + 1}")
    with pytest.raises(ConfigError, match=f"from 1 to {MAX_CUTOFF}"):
        get_metric("mrr@100000000")


def test_each_metric_signs_with_its_own_settings() -> None:
    records = [
        {
            "id": "a",
            "question": "q",
            "answer": "It is 9 [CIT:d].",
            "references": ["9"],
            "contexts": [{"doc_id": "d", "text": "It is 9."}],
        }
    ]
    result = evaluate(
        records,
        metrics=["overlap", "token_f1", "ndcg@3", "citation_presence_rate"],
        embedder=HashingEmbedder(),
        settings=Settings(tau_sim=0.7, ndcg_gain="linear"),
    )
    assert dict(result.signatures["overlap"].settings) == {
        "tau_sim": 0.7,
        "embedder": "hashing-bow/dim:256",
        "splitter": "nupunkt-0.8.0",
        "idk": "idk-en-1+id-3",
        "language": "auto/py3langid-0.4.0/en-1+id-3",
    }
    assert dict(result.signatures["token_f1"].settings) == {"normalizer": "squad-v1.1", "citations": "stripped"}
    assert dict(result.signatures["ndcg@3"].settings) == {"ideal": "retrieved", "gain": "linear"}
    assert dict(result.signatures["citation_presence_rate"].settings) == {"source_labels": "auto"}
