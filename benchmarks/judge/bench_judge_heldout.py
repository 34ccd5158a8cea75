"""The packaged judge's agreement with people on MT-RAG's dev split, held out (issue 27): each figure measured with
each document collection held out and with each conversation held out (``benchmarks/_folds.py``), and whether the
IDK refusal check (:mod:`ragmeter.judges.checks.refusal_cues`) wins where it was not chosen. No judge call: every value
comes from the verdict cache (``--cache``; ``bench_judge_validity`` fills it, as does any run of these metrics on
the dev answers with the same judge).

Records: the dev split's non-reference answers (as ``bench_judge_validity``) whose IDK verdict and claims reply
(``--judge-claims``, the judge's default: ``split`` for the packaged judge) are both cached; the results say how
many of the 156. Values: RL_F_idk, judge_faithfulness_idk, judge_faithfulness (seed 002's, unconditioned), RL_F
and idk_judge, through the library with ``Settings()`` (evidence check on).

- **agreement**: Spearman of each metric with mean human faithfulness; cross-collection: per collection, and their
  mean; nothing is chosen, so leave-one-conversation-out is the in-sample figure. Intervals (95 %, 2,000 draws):
  in sample, conversations resampled; cross-collection, conversations resampled within each collection and the
  mean of the four taken again (2–3 conversations a collection: a coarse interval).
- **refusal check**: candidates ``on`` (registered, listed first) and ``off`` (the judge's ``declines`` and
  ``partly`` stand without words that decline), chosen by ``_folds.validate`` for RL_F_idk's Spearman with human
  faithfulness, and for idk_judge's agreement with MT-RAG's released IDK verdicts (Cohen's κ, accuracy beside;
  ``declines`` = 1, ``partly`` counts as answering, as ``bench_judge_validity``). Intervals as above, of the
  held-out values given each fold's choice.

    python -m benchmarks.judge.bench_judge_heldout [--judge local]

Results: ``benchmarks/results/judge_heldout-<judge>.json``.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext
from typing import Any
from unittest import mock

import numpy as np

from benchmarks import _common, _folds
from ragmeter import Settings, evaluate
from ragmeter.core.records import Record
from ragmeter.engine.context import RunContext
from ragmeter.judges import planning_judge
from ragmeter.judges.engine import JudgeCall
from ragmeter.judges.prompts import IDK, idk_request
from ragmeter.metrics.judged import claims_call
from ragmeter.stats.inter_annotator import cohen_kappa

METRICS = ("RL_F_idk", "judge_faithfulness_idk", "judge_faithfulness", "RL_F", "idk_judge")


def kappa(x: np.ndarray, y: np.ndarray) -> float:
    """Cohen's κ of two 0/1 columns (NaN where a value is missing or κ is undefined)."""
    keep = ~(np.isnan(x) | np.isnan(y))
    return cohen_kappa(x[keep].astype(int).tolist(), y[keep].astype(int).tolist()) if keep.any() else float("nan")


def accuracy(x: np.ndarray, y: np.ndarray) -> float:
    keep = ~(np.isnan(x) | np.isnan(y))
    return float(np.mean(x[keep] == y[keep])) if keep.any() else float("nan")


def cached_records(records: list[Record], args: argparse.Namespace) -> list[Record]:
    """The records whose IDK verdict and claims reply (where they need one) are in the cache."""
    out = []
    with planning_judge(_common.judge_config(args)) as judge:
        run = RunContext(Settings(), judge=judge)
        for record in records:
            calls = [JudgeCall(IDK, idk_request(record)), claims_call(record, run)]
            if judge.cache is not None and all(
                judge.cache.get(judge.key(call)) is not None for call in calls if call is not None
            ):
                out.append(record)
    return out


def scores(records: list[Record], args: argparse.Namespace, *, refusal_check: bool) -> dict[str, np.ndarray]:
    """Every metric's per-record values from the cache; ``refusal_check=False`` lets the judge's IDK verdicts stand
    whatever the response's words."""
    unchecked = mock.patch("ragmeter.metrics.mtrag.judged.declines_in_words", return_value=True)
    with planning_judge(_common.judge_config(args)) as judge, nullcontext() if refusal_check else unchecked:
        result = evaluate(records, metrics=list(METRICS), settings=Settings(), judge=judge)
    return {name: np.asarray(result.scores[name], dtype=float) for name in METRICS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _common.add_judge_arguments(parser)
    args = parser.parse_args()
    every = _common.dev_records(None)
    records = cached_records(every, args)
    if len(records) < 12:
        sys.exit(f"only {len(records)} dev answers have both verdicts cached: run bench_judge_validity.py first")
    ratings = _common.mtrag_rows("human_eval_ratings_dev.jsonl")
    expected = _common.mtrag_rows("human_eval_expected.jsonl")
    keys = [(r.id, str(r.model_id)) for r in records]
    human = np.array([_common.human_means(ratings[k]["faithfulness"]) for k in keys])
    released = np.array(
        [
            _common.released_idk(str(r.answerability.value if r.answerability else ""), expected[k]["conditional_idk"])
            for r, k in zip(records, keys, strict=True)
        ],
        dtype=float,
    )
    collections = [_folds.collection_of(r) for r in records]
    conversations = [str(r.conversation_id) for r in records]
    by_check = {"on": scores(records, args, refusal_check=True), "off": scores(records, args, refusal_check=False)}
    registered = by_check["on"]

    def fixed(name: str) -> dict[str, Any]:
        defined = ~np.isnan(registered[name])
        report = _folds.held_out(
            ["registered"],
            lambda _: registered[name][defined],
            human[defined],
            [c for c, d in zip(collections, defined, strict=True) if d],
            [c for c, d in zip(conversations, defined, strict=True) if d],
            _folds.spearman,
        )
        return {
            "n": int(defined.sum()),
            "in_sample": report["in_sample"],
            "cross_collection": report["cross_collection"],
        }

    agreement = {name: fixed(name) for name in METRICS if name != "idk_judge"}
    declines = {check: (values["idk_judge"] == 1.0).astype(float) for check, values in by_check.items()}
    checks = ["on", "off"]
    refusal = {
        "RL_F_idk vs human faithfulness (Spearman)": _folds.held_out(
            checks, lambda c: by_check[c]["RL_F_idk"], human, collections, conversations, _folds.spearman
        ),
        "idk_judge vs released IDK verdicts (Cohen's kappa)": _folds.held_out(
            checks, lambda c: declines[c], released, collections, conversations, kappa
        ),
        "idk_judge vs released IDK verdicts (accuracy)": _folds.held_out(
            checks, lambda c: declines[c], released, collections, conversations, accuracy
        ),
        "declines": {check: int(d.sum()) for check, d in declines.items()},
        "released_declines": int(released.sum()),
    }

    with planning_judge(_common.judge_config(args)) as judge:
        identity, claims = judge.identity, judge.claims
    out = {
        "judge": identity,
        "claims": claims,
        "records": len(records),
        "of": len(every),
        "collections": {c: collections.count(c) for c in sorted(set(collections))},
        "conversations": len(set(conversations)),
        "agreement_with_human_faithfulness": agreement,
        "refusal_check": refusal,
    }
    for name, figures in agreement.items():
        cross, inside = figures["cross_collection"], figures["in_sample"]
        folds = ", ".join(f"{c} {fold['value']:.2f}" for c, fold in cross["folds"].items())
        print(
            f"{name:24s} n {figures['n']:3d}  cross-collection {cross['mean']:5.2f} {cross['interval']} ({folds}); "
            f"in sample = LOCO {inside['value']:5.2f} {inside['interval']}"
        )
    for name, report in refusal.items():
        if isinstance(report, dict) and "in_sample" in report:
            folds = ", ".join(
                f"{c}: {fold['chosen']} {fold['value']}" for c, fold in report["cross_collection"]["folds"].items()
            )
            loco = report["leave_one_conversation_out"]
            print(
                f"refusal check, {name}: in sample {report['in_sample']['chosen']} {report['in_sample']['value']}; "
                f"cross-collection {report['cross_collection']['mean']} ({folds}); "
                f"LOCO {loco['value']} {loco['chosen']}"
            )
    print(f"written: {_common.write_result(f'judge_heldout-{args.judge}', out, indent=1)}")


if __name__ == "__main__":
    main()
