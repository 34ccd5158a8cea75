"""Do the judge's nugget grades follow the nuggets or their places? The probe issue 47 asks for before any agreement
figure.

On the first N answers of MT-RAG's dev split (``--limit``; the shuffled order of ``bench_judge_validity.py``), the
judge writes each question's nuggets (``nuggets``, once per question), then grades the answer on them twice: in
the order written and reversed. Reported:

- **order-dependent grades**: the share of nuggets whose grade differs between the two orders (a judge grading by
  content gives 0), with the share of *positions* whose grade is the same in both orders (grading by place, as
  the issue's probe found, makes this high while nuggets change);
- **quotes**: the share of support/partial grades whose quote is words of the answer (``quote_found``);
- **nuggets**: per question, how many, how many vital, their length in words, and the share of nuggets longer
  than 15 words (the instructions' bound) or with more than one sentence.

    python -m benchmarks.judge.bench_nugget_order --limit 40 [--judge openai --judge-model M --judge-base-url URL]

Verdicts are cached (``--cache``, default ``~/.cache/ragmeter/nuggets.sqlite``): an interrupted run goes on where it
stopped. Result: ``benchmarks/results/nugget_order-<judge kind>.json``.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

from benchmarks._common import add_judge_arguments, dev_records, judge_config, write_result
from ragmeter.core.records import Nugget, Record
from ragmeter.judges import JudgeCall, open_judge
from ragmeter.judges.nugget_prompts import (
    NUGGET_GRADES,
    NUGGETS,
    grades_requests,
    nugget_sources,
    nuggets_request,
    quote_found,
)
from ragmeter.text.sentences import split_sentences


def _grades(judge: Any, record: Record, nuggets: list[Nugget]) -> list[dict[str, Any]] | None:
    calls = [JudgeCall(NUGGET_GRADES, request, n) for request, n in grades_requests(record, nuggets)]
    outcomes = judge.run(calls)
    if any(outcome.verdict is None for outcome in outcomes):
        return None
    return [grade for outcome in outcomes for grade in outcome.verdict["grades"]]


def measure(judge: Any, records: list[Record]) -> dict[str, Any]:
    """The figures of the module docstring for ``records`` on ``judge``."""
    asked = [r for r in records if nugget_sources(r)]
    written = judge.run([JudgeCall(NUGGETS, nuggets_request(r.question, nugget_sources(r))) for r in asked])
    changed = same_place = compared = quoted = quotable = 0
    counts, vital, words, long, failed = [], [], [], 0, 0
    for record, outcome in zip(asked, written, strict=True):
        if outcome.verdict is None:
            failed += 1
            continue
        nuggets = [Nugget(n["text"], n["vital"]) for n in outcome.verdict["nuggets"]]
        counts.append(len(nuggets))
        vital.append(sum(n.vital for n in nuggets))
        for nugget in nuggets:
            length = len(nugget.text.split())
            words.append(length)
            long += length > 15 or len(split_sentences(nugget.text)) > 1
        if len(nuggets) < 2:
            continue
        forward, backward = _grades(judge, record, nuggets), _grades(judge, record, nuggets[::-1])
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
                quoted += quote_found(grade["quote"], record.answer)
    n_nuggets = len(words)
    return {
        "answers": len(records),
        "with_a_source": len(asked),
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
        "quotes": {
            "graded_support_or_partial": quotable,
            "share_found_in_answer": round(quoted / quotable, 3) if quotable else None,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=40, help="the first N answers of the shuffled dev split")
    add_judge_arguments(parser)
    parser.set_defaults(cache=Path.home() / ".cache" / "ragmeter" / "nuggets.sqlite")
    args = parser.parse_args()
    judge = open_judge(judge_config(args))
    try:
        figures = measure(judge, dev_records(args.limit))
        out = {"judge": judge.description, "limit": args.limit, **figures}
    finally:
        judge.close()
    print(out)
    print(f"written: {write_result(f'nugget_order-{args.judge}', out)}")


if __name__ == "__main__":
    main()
