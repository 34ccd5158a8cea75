"""ragmeter: trustworthy, offline-first evaluation of RAG answers.

>>> import ragmeter
>>> result = ragmeter.evaluate(ragmeter.read_records("run.jsonl"))   # doctest: +SKIP
>>> print(ragmeter.render_report(result, title="my run"))            # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import sys
import types

from ragmeter import _moved
from ragmeter._version import __version__

#: ``typing.TYPE_CHECKING`` without importing ``typing``, which takes most of this module's start-up time: the
#: command's Ctrl-C handler (``ragmeter._entry``) is installed only once this module has loaded.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ragmeter.analysis.compare import Comparison, compare
    from ragmeter.analysis.estimate import estimate
    from ragmeter.app.generate import generate
    from ragmeter.core.errors import (
        ConfigError,
        InputError,
        MissingDependencyError,
        ModelError,
        RagmeterError,
    )
    from ragmeter.core.records import Answerability, Chunk, Record, Turn, Usage
    from ragmeter.core.settings import Settings
    from ragmeter.core.signature import Signature
    from ragmeter.engine.evaluation import evaluate
    from ragmeter.human.with_people import agreement
    from ragmeter.io import check_file, iter_records, read_records, record_from_dict
    from ragmeter.metrics import Aggregation, Metric, get_metric, list_metrics, register
    from ragmeter.metrics.bertscore import bert_score
    from ragmeter.metrics.citation import abstained, faithfulness_fallback, idk_citation_count, overlap
    from ragmeter.metrics.efficiency import completion_tokens, prompt_tokens, total_tokens
    from ragmeter.metrics.lexical import exact_match, token_f1
    from ragmeter.metrics.rouge import rouge_l
    from ragmeter.models import CachedEmbedder, Embedder, HashingEmbedder, OnnxMiniLM
    from ragmeter.report import render_report
    from ragmeter.results.aggregate import Summary
    from ragmeter.results.run_result import EvalResult
    from ragmeter.text import IdkDetector

#: Where each public name lives: imported on first use (PEP 562), so that ``import ragmeter`` and the
#: ``ragmeter`` command start at once, and a Ctrl-C while the command starts finds nothing half done.
_LAZY = {
    "Aggregation": "ragmeter.metrics",
    "Answerability": "ragmeter.core.records",
    "CachedEmbedder": "ragmeter.models",
    "Chunk": "ragmeter.core.records",
    "Comparison": "ragmeter.analysis.compare",
    "ConfigError": "ragmeter.core.errors",
    "Embedder": "ragmeter.models",
    "EvalResult": "ragmeter.results.run_result",
    "HashingEmbedder": "ragmeter.models",
    "IdkDetector": "ragmeter.text",
    "InputError": "ragmeter.core.errors",
    "Metric": "ragmeter.metrics",
    "MissingDependencyError": "ragmeter.core.errors",
    "ModelError": "ragmeter.core.errors",
    "OnnxMiniLM": "ragmeter.models",
    "RagmeterError": "ragmeter.core.errors",
    "Record": "ragmeter.core.records",
    "Settings": "ragmeter.core.settings",
    "Signature": "ragmeter.core.signature",
    "Summary": "ragmeter.results.aggregate",
    "Turn": "ragmeter.core.records",
    "Usage": "ragmeter.core.records",
    "abstained": "ragmeter.metrics.citation",
    "agreement": "ragmeter.human.with_people",
    "bert_score": "ragmeter.metrics.bertscore",
    "check_file": "ragmeter.io",
    "compare": "ragmeter.analysis.compare",
    "completion_tokens": "ragmeter.metrics.efficiency",
    "estimate": "ragmeter.analysis.estimate",
    "evaluate": "ragmeter.engine.evaluation",
    "generate": "ragmeter.app.generate",
    "exact_match": "ragmeter.metrics.lexical",
    "faithfulness_fallback": "ragmeter.metrics.citation",
    "get_metric": "ragmeter.metrics",
    "idk_citation_count": "ragmeter.metrics.citation",
    "iter_records": "ragmeter.io",
    "list_metrics": "ragmeter.metrics",
    "overlap": "ragmeter.metrics.citation",
    "prompt_tokens": "ragmeter.metrics.efficiency",
    "read_records": "ragmeter.io",
    "record_from_dict": "ragmeter.io",
    "register": "ragmeter.metrics",
    "render_report": "ragmeter.report",
    "rouge_l": "ragmeter.metrics.rouge",
    "token_f1": "ragmeter.metrics.lexical",
    "total_tokens": "ragmeter.metrics.efficiency",
}


#: Public functions named like the submodule that holds them: that submodule's loading sets the package's
#: attribute to the module, which would hide the function.
_SHADOWED = {"agreement", "compare"}


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SHADOWED and isinstance(value, types.ModuleType):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
_moved.install()


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'ragmeter' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "Aggregation",
    "Answerability",
    "CachedEmbedder",
    "Chunk",
    "Comparison",
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
    "agreement",
    "bert_score",
    "check_file",
    "compare",
    "completion_tokens",
    "estimate",
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
    "rouge_l",
    "token_f1",
    "total_tokens",
]
