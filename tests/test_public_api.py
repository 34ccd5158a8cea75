"""The curated public API is pinned: a change here is a deliberate API change."""

import ragmeter

EXPECTED = {
    "Aggregation", "Answerability", "CachedEmbedder", "Chunk", "ConfigError", "Embedder", "EvalResult",
    "HashingEmbedder", "IdkDetector", "InputError", "Metric", "MissingDependencyError", "ModelError", "OnnxMiniLM",
    "RagmeterError", "Record", "Settings", "Signature", "Summary", "Turn", "Usage", "__version__", "abstained",
    "check_file", "completion_tokens", "evaluate", "exact_match", "faithfulness_fallback", "get_metric",
    "idk_citation_count", "iter_records", "list_metrics", "overlap", "prompt_tokens", "read_records",
    "record_from_dict", "register", "render_report", "token_f1", "total_tokens", "bert_score", "rouge_l",
    "Comparison", "compare", "agreement",
}


def test_public_api_is_pinned():
    assert set(ragmeter.__all__) == EXPECTED
    assert all(hasattr(ragmeter, name) for name in EXPECTED)


def test_every_seed_000_001_metric_is_registered_with_metadata():
    names = {m.name for m in ragmeter.list_metrics()}
    assert {"exact_match", "token_f1", "overlap", "faithfulness_fallback", "abstained", "idk_citation_count",
            "total_tokens", "prompt_tokens", "completion_tokens", "latency_ms"} <= names
    for metric in ragmeter.list_metrics():
        assert metric.description and metric.family and metric.needs


def test_error_tree():
    assert issubclass(ragmeter.InputError, ragmeter.RagmeterError) and issubclass(ragmeter.InputError, ValueError)
    assert issubclass(ragmeter.ConfigError, ValueError)
    assert issubclass(ragmeter.MissingDependencyError, ImportError)
