"""MT-RAG's algorithmic metrics and IDK conditioning (seed 004, as the released code and data behave:
SPEC §5).

Per record, :func:`mtrag_algorithmic` returns MT-RAG's ``metrics`` object: every value a list, one per
reference (``Recall``, ``RougeL_stemFalse``, ``BertscoreP``, ``BertscoreR``, ``Length``,
``LengthChars``) or one per passage (``BertKPrec``, ``Extractiveness_RougeL``); a list is absent, not
empty, when there is no reference or no passage. ``RB_agg`` and ``RB_agg_zero_denominator`` are
one-element lists. The registered metrics expose one number per item for ``ragmeter run``: the first
reference's value (as RB_agg uses it) or the best passage's.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragmeter.core.records import Answerability, Record
from ragmeter.metrics._registry import Aggregation, Metric, no_settings, register
from ragmeter.metrics.bertscore import Baseline, greedy_match, load_baseline
from ragmeter.metrics.rouge import rouge_l
from ragmeter.models.base import TokenEmbeddings
from ragmeter.models.onnx_minilm import MINILM_LAYER
from ragmeter.text.idk import IdkDetector
from ragmeter.text.languages import Language, language_signature
from ragmeter.text.normalize import answer_tokens
from ragmeter.text.sentences import split_sentences

if TYPE_CHECKING:
    from ragmeter.engine.context import ItemContext, RunContext

__all__ = [
    "IDK_CORRECT",
    "RbAgg",
    "algorithmic_texts",
    "algorithmic_values",
    "bertscore_baseline",
    "bertscore_settings",
    "extractiveness_rouge_l",
    "idk_condition",
    "idk_eval_from_detector",
    "idk_verdict",
    "mtrag_algorithmic",
    "mtrag_recall",
    "rb_agg",
]

_NON_WORD = re.compile(r"[^\w\s]")
IDK_CORRECT = frozenset({Answerability.UNANSWERABLE, Answerability.CONVERSATIONAL})


def mtrag_recall(prediction: str, reference: str) -> float:
    """MT-RAG's ``Recall``: |tokens(prediction) ∩ tokens(reference)| / |tokens(reference)|, multiset
    intersection of SQuAD-normalised tokens; 0.0 when nothing is shared (or the reference is empty).

    >>> mtrag_recall("The cat sat on the mat", "a cat on a hat")
    0.6666666666666666
    """
    reference_tokens = answer_tokens(reference)
    common = sum((Counter(answer_tokens(prediction)) & Counter(reference_tokens)).values())
    return common / len(reference_tokens) if common else 0.0


def _extractive_form(text: str) -> str:
    return _NON_WORD.sub("", text.replace("\n", " ")).lower()


def extractiveness_rouge_l(prediction: str, passage: str) -> float:
    """How much the answer copies from a passage, in [0, 1]: 1.0 when the whole passage occurs in the
    answer, else ROUGE-L F between them.

    Both texts first lose newlines and every character that is neither a word character nor
    whitespace, and are lowercased; "occurs" compares them with all spaces removed (so an empty
    passage occurs in any answer). MT-RAG also strips HTML, which cannot remain after that step.
    """
    answer, source = _extractive_form(prediction), _extractive_form(passage)
    if source.replace(" ", "") in answer.replace(" ", ""):
        return 1.0
    return rouge_l(answer, source)


@dataclass(frozen=True)
class RbAgg:
    value: float
    zero_denominator: bool


def rb_agg(*, bertscore_recall: float | None, rouge_l_value: float | None, max_bert_k_prec: float | None) -> RbAgg:
    """MT-RAG's RB_agg: the harmonic mean of r = (BertscoreR + 1)/2, ROUGE-L, and
    e = (max BertKPrec + 1)/2; 3·r·l·e / (r·l + r·e + l·e).

    A missing term (no reference, no passage) counts as 0, and any term equal to 0 makes RB_agg 0 with
    ``zero_denominator`` set, as MT-RAG does.

    >>> rb_agg(bertscore_recall=1.0, rouge_l_value=1.0, max_bert_k_prec=1.0)
    RbAgg(value=1.0, zero_denominator=False)
    """
    recall = 0.0 if bertscore_recall is None else (bertscore_recall + 1) / 2
    rouge = rouge_l_value or 0.0
    extractive = 0.0 if max_bert_k_prec is None else (max_bert_k_prec + 1) / 2
    if recall == 0 or rouge == 0 or extractive == 0:
        return RbAgg(0.0, True)
    value = 3 * recall * rouge * extractive / (recall * rouge + recall * extractive + rouge * extractive)
    return RbAgg(value, False)


def idk_condition(value: float, *, answerability: Answerability | None, idk_eval: float) -> float:
    """Condition a metric on answerability and the IDK verdict (SPEC §5).

    Unanswerable or conversational questions: 1.0 if ``idk_eval`` is 1 (the system rightly declined),
    else 0.0. Answerable, partial or unknown: 0.0 if ``idk_eval`` is 1 (a wrong IDK), else ``value``.
    """
    if answerability in IDK_CORRECT:
        return 1.0 if idk_eval == 1 else 0.0
    return 0.0 if idk_eval == 1 else value


def idk_eval_from_detector(prediction: str, idk: IdkDetector, language: Language | None = None) -> float:
    """ragmeter's offline stand-in for MT-RAG's IDK judge: 1.0 when every sentence is IDK (or the
    answer is empty), 0.5 when some are, 0.0 when none is; sentences and patterns of ``language`` (English
    sentences and every language's patterns when ``None``)."""
    flags = [idk.is_idk(sentence, language) for sentence in split_sentences(prediction, language)]
    if all(flags):
        return 1.0
    return 0.5 if any(flags) else 0.0


def mtrag_algorithmic(
    prediction: str,
    references: Sequence[str],
    passages: Sequence[str],
    *,
    tokens: Mapping[str, TokenEmbeddings],
    baseline: Baseline | None,
) -> dict[str, list[Any]]:
    """Every algorithmic metric of one record, shaped as MT-RAG writes it.

    ``tokens`` maps the prediction, each reference and each passage to its token embeddings
    (:meth:`~ragmeter.models.TokenEncoder.encode_tokens`); ``baseline`` rescales BERTScore.
    """

    def bert(candidate: str, target: str) -> tuple[float, float]:
        score = greedy_match(tokens[candidate], tokens[target])
        score = baseline.rescale(score) if baseline else score
        return score.precision, score.recall

    out: dict[str, list[Any]] = {}
    if references:
        berts = [bert(prediction, reference) for reference in references]
        out["Recall"] = [mtrag_recall(prediction, reference) for reference in references]
        out["RougeL_stemFalse"] = [rouge_l(prediction, reference) for reference in references]
        out["BertscoreP"] = [p for p, _ in berts]
        out["BertscoreR"] = [r for _, r in berts]
        out["Length"] = [len(prediction.split())] * len(references)
        out["LengthChars"] = [len(prediction)] * len(references)
    if passages:
        out["BertKPrec"] = [bert(prediction, passage)[0] for passage in passages]
        out["Extractiveness_RougeL"] = [extractiveness_rouge_l(prediction, passage) for passage in passages]
    aggregate = rb_agg(
        bertscore_recall=out["BertscoreR"][0] if references else None,
        rouge_l_value=out["RougeL_stemFalse"][0] if references else None,
        max_bert_k_prec=max(out["BertKPrec"]) if passages else None,
    )
    out["RB_agg"] = [aggregate.value]
    out["RB_agg_zero_denominator"] = [aggregate.zero_denominator]
    return out


# --- run-loop adapters: one computation per record, shared by every registered MT-RAG metric ---


def bertscore_baseline(run: RunContext) -> Baseline | None:
    """The run's BERTScore rescaling baseline (``settings.bertscore_baseline``), loaded once per run."""

    def load() -> Baseline | None:
        s = run.settings
        layer = MINILM_LAYER if s.bertscore_model == "minilm" else s.bertscore_layer
        return load_baseline(s.bertscore_baseline, layer)

    return run.memo("mtrag.bertscore_baseline", load)


def bertscore_settings(run: RunContext) -> dict[str, Any]:
    """What BERTScore values depend on: the token model (with its layer) and the baseline."""
    baseline = bertscore_baseline(run)
    return {
        "bertscore_model": run.token_encoder.token_model_id,
        "bertscore_baseline": baseline.name if baseline else "none",
    }


def algorithmic_texts(record: Record, item: ItemContext, run: RunContext) -> Iterator[str]:
    """The texts whose token embeddings :func:`algorithmic_values` reads (a metric's ``prefetch``)."""
    yield record.answer
    yield from record.references
    yield from (chunk.text for chunk in record.contexts)


def algorithmic_values(record: Record, item: ItemContext, run: RunContext) -> dict[str, list[Any]]:
    """:func:`mtrag_algorithmic` of ``record``, computed once per item for every metric that reads it."""

    def make() -> dict[str, list[Any]]:
        return mtrag_algorithmic(
            record.answer,
            record.references,
            [c.text for c in record.contexts],
            tokens=run.token_embeddings(list(algorithmic_texts(record, item, run))),
            baseline=bertscore_baseline(run),
        )

    return item.memo("mtrag.algorithmic", make)


def _first(name: str) -> Any:
    return lambda record, item, run: float(algorithmic_values(record, item, run)[name][0])


def _best(name: str) -> Any:
    return lambda record, item, run: float(max(algorithmic_values(record, item, run)[name]))


def idk_verdict(record: Record, run: RunContext) -> float:
    """The IDK verdict the run's settings say to use: the record's ``idk_eval`` (``idk_eval_source='record'``,
    where it has one), else the IDK detector's (:func:`idk_eval_from_detector`)."""
    idk_eval = record.labels.get("idk_eval") if run.settings.idk_eval_source == "record" else None
    return float(
        idk_eval_from_detector(record.answer, run.settings.idk, run.language(record)) if idk_eval is None else idk_eval
    )


def _rb_agg_idk(record: Record, item: ItemContext, run: RunContext) -> float:
    return idk_condition(
        algorithmic_values(record, item, run)["RB_agg"][0],
        answerability=record.answerability,
        idk_eval=idk_verdict(record, run),
    )


SignatureValues = Callable[["RunContext"], Mapping[str, Any]]


def _register(
    name: str,
    description: str,
    needs: tuple[str, ...],
    compute: Any,
    *,
    bert: bool,
    aggregation: Aggregation = Aggregation.MEAN,
    value_range: tuple[float, float | None] = (0.0, 1.0),
    higher_is_better: bool | None = True,
    signature: SignatureValues = no_settings,
) -> None:
    def values(run: RunContext) -> Mapping[str, Any]:
        return {**(bertscore_settings(run) if bert else {}), **signature(run)}

    register(
        Metric(
            name=name,
            family="mtrag",
            description=description,
            needs=needs,
            aggregation=aggregation,
            value_range=value_range,
            higher_is_better=higher_is_better,
            compute=compute,
            signature=values,
            resources=frozenset({"token_encoder"}) if bert else frozenset(),
            prefetch=algorithmic_texts if bert else None,
        )
    )


def _idk_eval_settings(run: RunContext) -> Mapping[str, Any]:
    return {
        "idk_eval_source": run.settings.idk_eval_source,
        "idk": run.settings.idk.version,
        "language": language_signature(run.settings.language),
    }


_register(
    "Recall",
    "Share of the first reference's normalised tokens found in the answer.",
    ("answer", "references"),
    lambda record, item, run: mtrag_recall(record.answer, record.references[0]),
    bert=False,
    signature=lambda run: {"normalizer": "squad-v1.1"},
)
_register(
    "RougeL_stemFalse",
    "ROUGE-L F, no stemmer, against the first reference.",
    ("answer", "references"),
    lambda record, item, run: rouge_l(record.answer, record.references[0]),
    bert=False,
)
_register(
    "BertscoreP",
    "BERTScore precision against the first reference.",
    ("answer", "references"),
    _first("BertscoreP"),
    bert=True,
    value_range=(-1.0, 1.0),
)
_register(
    "BertscoreR",
    "BERTScore recall against the first reference.",
    ("answer", "references"),
    _first("BertscoreR"),
    bert=True,
    value_range=(-1.0, 1.0),
)
_register(
    "BertKPrec",
    "BERTScore precision of the answer against its best passage.",
    ("answer", "contexts"),
    _best("BertKPrec"),
    bert=True,
    value_range=(-1.0, 1.0),
)
_register(
    "Extractiveness_RougeL",
    "How much the answer copies its most-copied passage (1 = a whole passage).",
    ("answer", "contexts"),
    lambda record, item, run: max(extractiveness_rouge_l(record.answer, c.text) for c in record.contexts),
    bert=False,
)
_register(
    "Length",
    "Answer length in words.",
    ("answer",),
    lambda record, item, run: float(len(record.answer.split())),
    bert=False,
    value_range=(0.0, None),
    higher_is_better=None,
)
_register(
    "LengthChars",
    "Answer length in characters.",
    ("answer",),
    lambda record, item, run: float(len(record.answer)),
    bert=False,
    value_range=(0.0, None),
    higher_is_better=None,
)
_register(
    "RB_agg",
    "Harmonic mean of (BertscoreR+1)/2, ROUGE-L and (max BertKPrec+1)/2; 0 if a term is 0.",
    ("answer",),
    _first("RB_agg"),
    bert=True,
)
_register(
    "RB_agg_zero_denominator",
    "RB_agg was set to 0 because a term was 0 (no reference, no passage, no overlap).",
    ("answer",),
    _first("RB_agg_zero_denominator"),
    bert=True,
    aggregation=Aggregation.RATE,
    higher_is_better=False,
)
_register(
    "RB_agg_idk",
    "RB_agg conditioned on answerability and the IDK verdict (MT-RAG's RB_alg).",
    ("answer", "answerability"),
    _rb_agg_idk,
    bert=True,
    signature=_idk_eval_settings,
)
