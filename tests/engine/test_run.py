"""The library run: per-item table first, figures from it, signatures, write-as-you-go."""

import math

import numpy as np
import pytest

from ragmeter import ConfigError, HashingEmbedder, InputError, Settings, evaluate, get_metric
from ragmeter.core.errors import MissingDependencyError

RECORDS = [
    {
        "id": "a",
        "question": "q",
        "answer": "Paris [CIT:d1].",
        "references": ["Paris"],
        "contexts": [{"doc_id": "d1", "text": "Paris is the capital of France."}],
        "latency_ms": 100,
        "usage": [{"prompt_tokens": 10, "completion_tokens": 2}],
        "metadata": {"conversation_id": "c1"},
    },
    {
        "id": "b",
        "question": "q",
        "answer": "Lyon.",
        "references": ["Paris", "Lyon"],
        "latency_ms": 300,
        "metadata": {"conversation_id": "c1"},
    },
    {"id": "c", "question": "q", "answer": "Nice", "references": [], "latency_ms": 200},
]


def run(**kwargs):
    return evaluate(RECORDS, embedder=HashingEmbedder(), settings=Settings(n_resamples=200), **kwargs)


def test_per_item_table_and_undefined_reasons():
    result = run(metrics=["exact_match", "token_f1", "total_tokens"])
    assert result.item_ids == ("a", "b", "c")
    assert list(result.scores["exact_match"][:2]) == [1.0, 1.0]  # citation marker stripped before matching
    assert math.isnan(result.scores["exact_match"][2])
    assert result.undefined["exact_match"] == {2: "record has no reference answer"}
    rows = list(result.items())
    assert rows[2] == {
        "id": "c",
        "scores": {"exact_match": None, "token_f1": None, "total_tokens": None},
        "undefined": {
            "exact_match": "record has no reference answer",
            "token_f1": "record has no reference answer",
            "total_tokens": "record has no token usage",
        },
    }
    summary = result.summary("exact_match")
    assert (summary.value, summary.n, summary.n_undefined) == (1.0, 2, 1)


def test_rows_reach_the_sink_batch_by_batch():
    batches = []
    run(metrics=["token_f1"], on_items=batches.append, batch_size=2)
    assert [[row["id"] for row in batch] for batch in batches] == [["a", "b"], ["c"]]


def test_shared_conversation_ids_switch_intervals_to_cluster_resampling():
    records = [
        {
            "id": f"{c}-{t}",
            "question": "q",
            "answer": "Paris" if t else "Lyon",
            "references": ["Paris"],
            "metadata": {"conversation_id": f"conv{c}"},
        }
        for c in range(12)
        for t in range(2)
    ]
    result = evaluate(records, metrics=["token_f1"], settings=Settings(n_resamples=200))
    assert "resample:clusters" in result.summary("token_f1").signature.render()
    assert result.summary("token_f1").warning is None
    assert [row["conversation_id"] for row in result.items()][:3] == ["conv0", "conv0", "conv1"]


def test_two_conversations_resample_items_with_a_warning():
    result = run(metrics=["latency_ms", "token_f1"])
    summary = result.summary("token_f1")  # items a and b, both of conversation c1
    assert "resample:items(1<10 clusters)" in summary.signature.render()
    assert summary.warning is not None and "only 1 conversation(s)" in summary.warning


def test_same_seed_same_intervals_and_seed_in_signature():
    first, second = run(metrics=["latency_ms"]), run(metrics=["latency_ms"])
    assert first.summary("latency_ms", "p50") == second.summary("latency_ms", "p50")
    assert "seed:0" in first.summary("latency_ms", "p50").signature.render()


def test_to_pandas():
    frame = run(metrics=["exact_match"]).to_pandas()
    assert list(frame.index) == ["a", "b", "c"] and np.isnan(frame.loc["c", "exact_match"])


def test_bad_dict_record_names_its_position_and_field():
    with pytest.raises(InputError) as caught:
        evaluate([RECORDS[0], {"question": "q"}], metrics=["token_f1"])
    assert (caught.value.line, caught.value.field) == (2, "answer")


def test_unknown_metric_and_bad_settings_fail_before_scoring():
    with pytest.raises(ConfigError, match="Did you mean token_f1"):
        evaluate(RECORDS, metrics=["token_f2"])
    with pytest.raises(ConfigError):
        Settings(tau_sim=1.5)
    with pytest.raises(ConfigError):
        Settings(ci_method="normal")
    assert get_metric("overlap").expensive and not get_metric("token_f1").expensive


def test_missing_extra_names_the_pip_command():
    error = MissingDependencyError("pyarrow", "parquet", "writing Parquet")
    assert "pip install 'ragmeter[parquet]'" in str(error)
