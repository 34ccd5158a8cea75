"""The curated public API is pinned: a change here is a deliberate API change."""

import ragmeter

EXPECTED = {
    "Aggregation",
    "Answerability",
    "CachedEmbedder",
    "Chunk",
    "ConfigError",
    "Embedder",
    "EvalResult",
    "HashingEmbedder",
    "IdkDetector",
    "InputError",
    "Metric",
    "MissingDependencyError",
    "ModelError",
    "OnnxMiniLM",
    "RagmeterError",
    "Record",
    "Settings",
    "Signature",
    "Summary",
    "Turn",
    "Usage",
    "__version__",
    "abstained",
    "check_file",
    "completion_tokens",
    "evaluate",
    "exact_match",
    "faithfulness_fallback",
    "generate",
    "get_metric",
    "idk_citation_count",
    "iter_records",
    "list_metrics",
    "overlap",
    "prompt_tokens",
    "read_records",
    "record_from_dict",
    "register",
    "render_report",
    "token_f1",
    "total_tokens",
    "bert_score",
    "rouge_l",
    "Comparison",
    "compare",
    "agreement",
    "estimate",
}


def test_public_api_is_pinned():
    assert set(ragmeter.__all__) == EXPECTED
    assert all(hasattr(ragmeter, name) for name in EXPECTED)


def test_every_seed_000_001_metric_is_registered_with_metadata():
    names = {m.name for m in ragmeter.list_metrics()}
    assert {
        "exact_match",
        "token_f1",
        "overlap",
        "faithfulness_fallback",
        "abstained",
        "idk_citation_count",
        "total_tokens",
        "prompt_tokens",
        "completion_tokens",
        "latency_ms",
    } <= names
    for metric in ragmeter.list_metrics():
        assert metric.description and metric.family and metric.needs


def test_error_tree():
    assert issubclass(ragmeter.InputError, ragmeter.RagmeterError) and issubclass(ragmeter.InputError, ValueError)
    assert issubclass(ragmeter.ConfigError, ValueError)
    assert issubclass(ragmeter.MissingDependencyError, ImportError)


def test_a_module_path_that_moved_still_imports_with_a_warning_naming_the_new_one():
    import importlib
    import sys
    import warnings

    from ragmeter.core import records

    sys.modules.pop("ragmeter.records", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = importlib.import_module("ragmeter.records")
    assert old is records
    assert [str(w.message).split(":")[0] for w in caught if w.category is DeprecationWarning] == [
        "ragmeter.records moved to ragmeter.core.records"
    ]
    from ragmeter.records import Record  # the form users wrote

    assert Record is ragmeter.Record


def test_a_moved_module_named_like_a_public_function_leaves_the_function_in_place():
    import importlib
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        importlib.import_module("ragmeter.compare")
    assert callable(ragmeter.compare) and ragmeter.compare.__module__ == "ragmeter.analysis.compare"
