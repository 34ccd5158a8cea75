"""``faithfulness_offline``: how far the answer stays with its passages, with no judge and no reference.

Value = ``WEIGHT_BERT`` · BertKPrec + (1 − ``WEIGHT_BERT``) · Extractiveness_RougeL, each taken at the passage
where it is highest (as the registered metrics of those names), so with BERTScore as the run's settings give
it. Rules before the blend:

- no passages, the answer declines (the run's IDK detector, as ``abstained``): 1.0, noted; nothing is claimed;
- no passages, the answer answers: 0.0, noted. It comes from the model's own knowledge, and MT-RAG's annotators
  rated such answers the least faithful of all (on the dev split, faithfulness rated 1–4: a mean of 1.5 for the
  8 such answers, 3.7 for the 4 that declined); seed 002's "no context → 1.0" rule would rank them first;
- passages, the answer declines: 1.0, noted, as ``judge_faithfulness`` does.

The weight was chosen, not guessed (``benchmarks/bench_faithfulness_offline.py`` reproduces it), on MT-RAG's
dev split: the 156 answers of GPT-4o and Llama-3.1-405B to 10 conversations, each rated for faithfulness by
several annotators, scored with the packaged MiniLM and no BERTScore baseline. ``WEIGHT_BERT`` is the grid value
(steps of 0.05) with the highest Spearman ρ against mean human faithfulness: 0.5, ρ 0.665 (95 % interval over
conversations 0.56–0.76). Chosen again with one conversation held out at a time, it was 0.5 in 9 of 10 folds
(0.35 in one), and the held-out records' values reach ρ 0.67 (0.59–0.76). With the same rules, BertKPrec alone
reaches 0.61 and Extractiveness_RougeL alone 0.62; MT-RAG's released GPT-4o-mini RL_F 0.56 and DeBERTa BertKPrec
0.62 on the same records. Least squares on the human scale did worse (0.60 held out): what matters is the
order, which the equal blend keeps best. The packaged judge's verdicts were left out: on 24 of these records
its Faithfulness reached ρ 0.37 at best, in every form tried (``bench_verdict_probabilities.py``), at 35 s or
more a record on two cores.

Under other BERTScore settings (another model, a baseline) the value is computed the same way, but its
agreement with human ratings has been measured only for the packaged MiniLM without a baseline; the signature
names the settings and the weights' version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ragmeter.metrics._registry import Aggregation, Metric, Noted, Outcome, register
from ragmeter.metrics.judged import abstains
from ragmeter.metrics.mtrag import algorithmic_texts, algorithmic_values, bertscore_settings
from ragmeter.records import Record

if TYPE_CHECKING:
    from ragmeter.context import ItemContext, RunContext

__all__ = ["VERSION", "WEIGHT_BERT", "blend"]

#: The weight of BertKPrec; Extractiveness_RougeL has the rest.
WEIGHT_BERT = 0.5
#: The weights' version, in the signature: a new choice of weights gets a new one.
VERSION = "mtrag-dev-1"
NO_PASSAGE_ANSWERED = "answered with no passage to ground it"
NO_PASSAGE_DECLINED = "no passage, and the answer declines"
DECLINED = "the answer declines: nothing to ground"


def blend(bert_k_prec: float, extractiveness: float) -> float:
    """``WEIGHT_BERT`` · ``bert_k_prec`` + (1 − ``WEIGHT_BERT``) · ``extractiveness``.

    >>> blend(0.8, 0.4)
    0.6000000000000001
    """
    return WEIGHT_BERT * bert_k_prec + (1.0 - WEIGHT_BERT) * extractiveness


def _faithfulness_offline(record: Record, item: ItemContext, run: RunContext) -> Outcome:
    declines = abstains(record, run)
    if not record.contexts:
        return Noted(1.0, NO_PASSAGE_DECLINED) if declines else Noted(0.0, NO_PASSAGE_ANSWERED)
    if declines:
        return Noted(1.0, DECLINED)
    values = algorithmic_values(record, item, run)
    return blend(max(values["BertKPrec"]), max(values["Extractiveness_RougeL"]))


def _signature(run: RunContext) -> Mapping[str, Any]:
    return {**bertscore_settings(run), "weights": VERSION, "weight_BertKPrec": WEIGHT_BERT,
            "idk": run.settings.idk.version}


register(Metric(name="faithfulness_offline", family="mtrag",
                description="Faithfulness with no judge: BertKPrec and Extractiveness_RougeL blended (weights "
                            "chosen on MT-RAG's human ratings); an answer with no passage 0, a refusal 1.",
                needs=("answer",), aggregation=Aggregation.MEAN, value_range=(-1.0, 1.0), higher_is_better=True,
                compute=_faithfulness_offline, signature=_signature, resources=frozenset({"token_encoder"}),
                prefetch=algorithmic_texts))
