"""ragmeter: trustworthy, offline-first evaluation of RAG answers.

>>> import ragmeter
>>> result = ragmeter.evaluate(ragmeter.read_records("run.jsonl"))   # doctest: +SKIP
>>> print(ragmeter.render_report(result, title="my run"))            # doctest: +SKIP
"""

from ragmeter._version import __version__
from ragmeter.aggregate import Summary
from ragmeter.agreement import agreement
from ragmeter.compare import Comparison, compare
from ragmeter.errors import ConfigError, InputError, MissingDependencyError, ModelError, RagmeterError
from ragmeter.io import check_file, iter_records, read_records, record_from_dict
from ragmeter.metrics import Aggregation, Metric, get_metric, list_metrics, register
from ragmeter.metrics.bertscore import bert_score
from ragmeter.metrics.citation import abstained, faithfulness_fallback, idk_citation_count, overlap
from ragmeter.metrics.efficiency import completion_tokens, prompt_tokens, total_tokens
from ragmeter.metrics.lexical import exact_match, token_f1
from ragmeter.metrics.rouge import rouge_l
from ragmeter.models import CachedEmbedder, Embedder, HashingEmbedder, OnnxMiniLM
from ragmeter.records import Answerability, Chunk, Record, Turn, Usage
from ragmeter.report import render_report
from ragmeter.result import EvalResult
from ragmeter.run import evaluate
from ragmeter.settings import Settings
from ragmeter.signature import Signature
from ragmeter.text import IdkDetector

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
    "evaluate",
    "exact_match",
    "faithfulness_fallback",
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
