"""Do the judge's nugget grades follow the nuggets or their places? The probe issue 47 asks for before any agreement
figure.

On the first N answers of MT-RAG's dev split (``--limit``; the shuffled order of ``bench_judge_validity.py``), each
answer's nuggets are those a run of ``--nugget-source`` grades (the reference's sentences, the default; or the
judge's, written once per question), and the judge grades the answer on them twice: in their order and reversed.
Reported:

- **order-dependent grades**: the share of nuggets whose grade differs between the two orders (a judge grading by
  content gives 0), with the share of *positions* whose grade is the same in both orders (grading by place, as
  the issue's probe found, makes this high while nuggets change);
- **what it does to a score**: the answers whose ``nugget_recall`` (the grades after the quote check, as a run
  counts them) changes with the order, and the mean absolute change;
- **quotes**: the share of support/partial grades whose quote is words of the answer (``quote_found``);
- **nuggets**: per question, how many, how many vital, their length in words, and the share of nuggets longer
  than 15 words (the judge prompt's bound) or with more than one sentence.

    python -m benchmarks.judge.bench_nugget_order --limit 40 [--nugget-source judge]
        [--judge openai --judge-model M --judge-base-url URL]

Verdicts are cached (``--cache``, default ``~/.cache/ragmeter/nuggets.sqlite``): an interrupted run goes on where it
stopped. Result: ``benchmarks/results/nugget_order-<judge kind>.json`` (``…-judge_nuggets.json`` for the judge's).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

from benchmarks._common import add_judge_arguments, dev_records, judge_config, write_result
from ragmeter.cli.common import choice_values
from ragmeter.core.records import Nugget, Record
from ragmeter.core.settings import NuggetSource, Settings
from ragmeter.engine.context import RunContext
from ragmeter.judges import JudgeCall, open_judge
from ragmeter.judges.nugget_prompts import NUGGET_GRADES, grades_requests, quote_found, quoted_grades
from ragmeter.metrics.claim_level import item_nuggets
from ragmeter.metrics.nuggets import nugget_recall
from ragmeter.text.sentences import split_sentences


def grades(run: RunContext, record: Record, nuggets: list[Nugget]) -> list[dict[str, Any]] | None:
    """The judge's grade of each of ``nuggets`` in ``record``'s answer, in their order (``None``: a call failed)."""
    calls = [JudgeCall(NUGGET_GRADES, request, n) for request, n in grades_requests(record, nuggets)]
    outcomes = run.judge.run(calls)
    if any(outcome.verdict is None for outcome in outcomes):
        return None
    return [grade for outcome in outcomes for grade in outcome.verdict["grades"]]


def _recall(grades: list[dict[str, Any]], nuggets: list[Nugget], record: Record, run: RunContext) -> float:
    counted = quoted_grades(grades, record.answer, language=run.language(record))
    return nugget_recall([grade for grade, _ in counted], [nugget.vital for nugget in nuggets])


def measure(run: RunContext, records: list[Record]) -> dict[str, Any]:
    """The figures of the module docstring for ``records``, on ``run``'s judge and nugget source."""
    changed = same_place = compared = quoted = quotable = 0
    counts, vital, words, long, failed, recall_changes = [], [], [], 0, 0, []
    for record in records:
        found = item_nuggets(record, run)
        if not isinstance(found, tuple):
            failed += found is not None
            continue
        nuggets = list(found)
        counts.append(len(nuggets))
        vital.append(sum(n.vital for n in nuggets))
        for nugget in nuggets:
            length = len(nugget.text.split())
            words.append(length)
            long += length > 15 or len(split_sentences(nugget.text, run.language(record))) > 1
        if len(nuggets) < 2:
            continue
        forward, backward = grades(run, record, nuggets), grades(run, record, nuggets[::-1])
        if forward is None or backward is None:
            failed += 1
            continue
        backward_by_nugget = backward[::-1]
        for i, grade in enumerate(forward):
            compared += 1
            changed += grade["grade"] != backward_by_nugget[i]["grade"]
            same_place += grade["grade"] == backward[i]["grade"]
        for grade in forward + backward:
            if grade["grade"] != "none":
                quotable += 1
                quoted += quote_found(grade["quote"], record.answer, language=run.language(record))
        recall_changes.append(
            abs(_recall(forward, nuggets, record, run) - _recall(backward_by_nugget, nuggets, record, run))
        )
    n_nuggets = len(words)
    return {
        "answers": len(records),
        "with_nuggets": len(counts),
        "failed": failed,
        "nuggets": {
            "per_question_mean": round(statistics.mean(counts), 2) if counts else None,
            "vital_per_question_mean": round(statistics.mean(vital), 2) if vital else None,
            "words_median": statistics.median(words) if words else None,
            "share_over_15_words_or_two_sentences": round(long / n_nuggets, 3) if n_nuggets else None,
        },
        "order": {
            "nuggets_compared": compared,
            "share_grade_changed_with_order": round(changed / compared, 3) if compared else None,
            "share_same_grade_at_same_position": round(same_place / compared, 3) if compared else None,
        },
        "nugget_recall": {
            "answers_compared": len(recall_changes),
            "share_changed_with_order": (
                round(sum(change > 0 for change in recall_changes) / len(recall_changes), 3) if recall_changes else None
            ),
            "mean_absolute_change": round(statistics.mean(recall_changes), 3) if recall_changes else None,
        },
        "quotes": {
            "graded_support_or_partial": quotable,
            "share_found_in_answer": round(quoted / quotable, 3) if quotable else None,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=40, help="the first N answers of the shuffled dev split")
    parser.add_argument(
        "--nugget-source",
        choices=choice_values(NuggetSource),
        default=Settings.nugget_source,
        help="where the nuggets come from (ragmeter run's option)",
    )
    add_judge_arguments(parser)
    parser.set_defaults(cache=Path.home() / ".cache" / "ragmeter" / "nuggets.sqlite")
    args = parser.parse_args()
    source = NuggetSource(args.nugget_source)
    judge = open_judge(judge_config(args))
    try:
        run = RunContext(Settings(nugget_source=source), judge=judge)
        figures = measure(run, dev_records(args.limit))
        out = {"judge": judge.description, "limit": args.limit, "nugget_source": str(source), **figures}
    finally:
        judge.close()
    print(out)
    other_source = "" if source is Settings.nugget_source else f"-{source}_nuggets"
    print(f"written: {write_result(f'nugget_order-{args.judge}{other_source}', out)}")


if __name__ == "__main__":
    main()
