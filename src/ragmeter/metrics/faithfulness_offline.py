"""``faithfulness_offline``: how far the answer stays with its passages, with no judge and no reference.

Value = ``WEIGHT_BERT`` · BertKPrec + (1 − ``WEIGHT_BERT``) · Extractiveness_RougeL, each taken at the passage
where it is highest (as the registered metrics of those names), so with BERTScore as the run's settings give
it; then conditioned on answerability and the IDK verdict as MT-RAG conditions its metrics (``RB_agg_idk``,
:func:`~ragmeter.metrics.mtrag.algorithmic.idk_condition`, the verdict from the run's IDK source):

- an unanswerable (or conversational) question: 1.0 when the answer declines, else 0.0;
- an answerable (partial, underspecified) question: 0.0 when the answer declines, else the blend; an answer
  with no passage to blend against is undefined (nothing says how far it stays with passages it lacks);
- answerability unknown: the blend; an answer that declines, or that has no passage, is undefined, since
  whether declining was right is not known;
- an empty (or blank) answer: 0.0, noted, whatever the question. It is not a refusal: it says nothing, and
  people rank such answers last (six empty responses among 280 preference pairs, all put last).

Version ``mtrag-dev-2`` replaced two rules of ``mtrag-dev-1`` that were fitted to a few special cases of the
dev split (a refusal scores 1, an answer with no passage 0): held out, they cost the metric its agreement with
people, while MT-RAG's own conditioning holds on both sets (``benchmarks/README.md``).

The weight was chosen, not guessed (``benchmarks/validity/bench_faithfulness_offline.py`` reproduces it), on MT-RAG's
dev split: the 156 answers of GPT-4o and Llama-3.1-405B to 10 conversations of four collections, each rated for
faithfulness by several annotators, scored with the packaged MiniLM and no BERTScore baseline. ``WEIGHT_BERT`` is the
grid value (steps of 0.05) with the highest Spearman ρ against mean human faithfulness: 0.5. Held out, it agrees with
people at Spearman 0.63 (the mean of four folds, each choosing the weight on three collections and measuring on the
fourth; three chose 0.5, the fourth's 0.35 did worse there than 0.5) and 0.67 [0.59, 0.76] with one conversation held
out at a time (0.665 in sample; ``benchmarks/README.md``). The packaged judge's verdicts were left out: on 24 of these
records its Faithfulness reached ρ 0.37 at best, in every form tried (``bench_verdict_probabilities.py``), at 35 s or
more a record on two cores.

Under other BERTScore settings (another model, a baseline) the value is computed the same way, but its
agreement with human ratings has been measured only for the packaged MiniLM without a baseline; the signature
names the settings and the weights' version.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ragmeter.core.records import Record
from ragmeter.metrics._registry import Aggregation, Metric, Noted, Outcome, Undefined, register
from ragmeter.metrics.mtrag.algorithmic import (
    IDK_CORRECT,
    algorithmic_texts,
    algorithmic_values,
    bertscore_settings,
    idk_condition,
    idk_verdict,
)
from ragmeter.text.languages import language_signature

if TYPE_CHECKING:
    from ragmeter.engine.context import ItemContext, RunContext

__all__ = ["VERSION", "WEIGHT_BERT", "blend"]

#: The weight of BertKPrec; Extractiveness_RougeL has the rest.
WEIGHT_BERT = 0.5
#: The weights' and rules' version, in the signature: a new choice of either gets a new one.
VERSION = "mtrag-dev-2"
EMPTY = "an empty answer says nothing: not a refusal"
NO_PASSAGE = "no passage to ground the answer in"
UNKNOWN_REFUSAL = "the answer declines and the question's answerability is unknown: right or wrong is not known"


def blend(bert_k_prec: float, extractiveness: float) -> float:
    """``WEIGHT_BERT`` · ``bert_k_prec`` + (1 − ``WEIGHT_BERT``) · ``extractiveness``.

    >>> blend(0.8, 0.4)
    0.6000000000000001
    """
    return WEIGHT_BERT * bert_k_prec + (1.0 - WEIGHT_BERT) * extractiveness


def _faithfulness_offline(record: Record, item: ItemContext, run: RunContext) -> Outcome:
    if not record.answer.strip():
        return Noted(0.0, EMPTY)
    idk_eval = idk_verdict(record, run)
    if record.answerability is not None and (record.answerability in IDK_CORRECT or idk_eval == 1):
        # the verdict alone decides: declining is right on an unanswerable question and wrong on another
        return idk_condition(math.nan, answerability=record.answerability, idk_eval=idk_eval)
    if idk_eval == 1:
        return Undefined(UNKNOWN_REFUSAL)
    if not record.contexts:
        return Undefined(NO_PASSAGE)
    values = algorithmic_values(record, item, run)
    return blend(max(values["BertKPrec"]), max(values["Extractiveness_RougeL"]))


def _signature(run: RunContext) -> Mapping[str, Any]:
    return {
        **bertscore_settings(run),
        "weights": VERSION,
        "weight_BertKPrec": WEIGHT_BERT,
        "idk": run.settings.idk.version,
        "idk_eval_source": run.settings.idk_eval_source,
        "language": language_signature(run.settings.language),
    }


register(
    Metric(
        name="faithfulness_offline",
        family="mtrag",
        description="Faithfulness with no judge: BertKPrec and Extractiveness_RougeL blended (weight "
        "chosen on MT-RAG's human ratings), conditioned on answerability and the IDK verdict "
        "as MT-RAG's RB_alg; an empty answer 0.",
        needs=("answer",),
        aggregation=Aggregation.MEAN,
        value_range=(-1.0, 1.0),
        higher_is_better=True,
        compute=_faithfulness_offline,
        signature=_signature,
        resources=frozenset({"token_encoder"}),
        prefetch=algorithmic_texts,
        agreement="agrees with people at Spearman 0.63 cross-collection on MT-RAG dev (156 answers; 0.67 "
        "[0.59, 0.76] with each conversation held out)",
    )
)
