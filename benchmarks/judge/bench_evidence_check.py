"""How the evidence check on the claims verdict moves judged Faithfulness, measured against people, with no judge
call: every variant re-scores the same cached claims replies, and every parameter chosen on them (the coverage,
the left-out rule) is validated as ``benchmarks/_folds.py`` says (issue 27).

Records: the answers of MT-RAG's dev split by the non-reference responders (as ``bench_judge_validity``) whose
claims reply is in the verdict cache (``--cache``; ``bench_mtrag_judged`` and ``bench_judge_validity`` fill it),
that do not abstain. Each record's value is RL_F (= ``judge_faithfulness`` there): supported claims / claims,
after the variant's check. Spearman with mean human faithfulness, 95 % interval resampling conversations; the share
of records at 0 and at 1.

**Split** (the packaged judge's default call, ``claim_split``: it splits and does not verify; the check verifies
every claim and every sentence the claims leave out, as the registered metrics do with the local judge): RL_F at
each ``COVERAGE`` (0.5–0.9, the left-out rule registered) and under each left-out rule (any content word missing,
registered; or less than a share 0.5 / 0.7 / 0.9 of the sentence's content words in the claims; the coverage
registered), each choice made by ``_folds.validate``: in sample, with each collection held out (the mean of the
four held-out folds and each fold with its choice) and with each conversation held out, each with its interval
(``_folds.held_out``).

**Verify** (the ``claims`` call, which verdicts each claim; only when its replies are cached, listing a claim at
least), variants:

- ``as given``: the judge's verdicts unchecked;
- ``evidence-2``: ragmeter's check before ``evidence-3``, kept here to compare: the quoted evidence (80 % of its
  words, in order) in a chunk the claim names, and the claim's numbers and scope words in those chunks;
- ``evidence-3``: the judge's supported claims checked (``COVERAGE`` of the claim's content words, its numbers and
  its scope words in any of the record's chunks), nothing added; and the same at other coverages, without stems,
  on the named chunks only, and required together with ``evidence-2``'s quote;
- ``evidence-4``: the registered check (:mod:`ragmeter.judges.checks.evidence`): ``evidence-3`` plus each sentence
  of the answer with a content word in none of the judge's claims, checked as a claim of its own; and the same
  at other coverages, and with a sentence left out only when the claims hold less than a share (0.5–0.9) of its
  content words;
- ``the answer's sentences, no judge``: every sentence of the answer checked as a claim, the judge's reply unread:
  what the judge's claims add to the check;
- ``split only``: the same answers' ``claim_split`` replies, verified by the check (when every row has one cached);

and the coverage and the left-out rule chosen by ``_folds.validate`` on these replies.

    python -m benchmarks.judge.bench_evidence_check [--judge local]

Results: ``benchmarks/results/evidence_check-<judge>-split.json`` (split) and
``benchmarks/results/evidence_check-<judge>.json`` (verify).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from difflib import SequenceMatcher
from typing import Any
from unittest import mock

import numpy as np

from benchmarks import _folds
from benchmarks._common import (
    add_judge_arguments,
    dev_records,
    human_means,
    judge_config,
    mtrag_rows,
    spearman_ci,
    write_result,
)
from benchmarks._folds import held_out
from ragmeter import Settings
from ragmeter.core.records import Record
from ragmeter.engine.context import RunContext
from ragmeter.judges import planning_judge
from ragmeter.judges.checks.evidence import (
    checked_claims,
    content_words,
    numbers_found,
    scope_kept,
    words_covered,
)
from ragmeter.metrics import claim_evidence
from ragmeter.metrics.judged import Claim, abstains, claims_call, faithfulness, verdict_claims
from ragmeter.text.sentences import split_sentences

COVERAGES = (0.5, 0.6, 0.7, 0.8, 0.9)
Check = Callable[[Sequence[Claim], Sequence[str], str], tuple[Claim, ...]]
SHARES = (0.5, 0.7, 0.9)


def _quote_found(evidence: str, chunk: str) -> bool:
    """``evidence-2``'s test: 80 % of the quote's words occur in ``chunk``, in order."""
    wanted, text = re.findall(r"\w+", evidence.lower()), re.findall(r"\w+", chunk.lower())
    blocks = SequenceMatcher(None, wanted, text, autojunk=False).get_matching_blocks()
    return bool(wanted) and sum(block.size for block in blocks) >= 0.8 * len(wanted)


def _demoted(claim: Claim, kept: bool) -> Claim:
    return claim if kept or claim.verdict != "supported" else replace(claim, verdict="unsupported", chunks=())


def evidence_2(claims: Sequence[Claim], chunks: Sequence[str], text: str) -> tuple[Claim, ...]:
    out = []
    for claim in claims:
        named = [chunks[n - 1] for n in claim.chunks if 1 <= n <= len(chunks)]
        out.append(
            _demoted(
                claim,
                any(_quote_found(claim.evidence, text) for text in named)
                and numbers_found(claim.text, named)
                and scope_kept(claim.text, named),
            )
        )
    return tuple(out)


def evidence_3(claims: Sequence[Claim], chunks: Sequence[str], text: str = "") -> tuple[Claim, ...]:
    """The judge's claims checked, none added: the text checked is the claims' own."""
    return checked_claims(claims, chunks, " ".join(claim.text for claim in claims))


def at_coverage(check: Check, coverage: float) -> Check:
    def checked(claims: Sequence[Claim], chunks: Sequence[str], text: str) -> tuple[Claim, ...]:
        with mock.patch.object(claim_evidence, "COVERAGE", coverage):
            return check(claims, chunks, text)

    return checked


def left_out_below_share(share: float) -> Callable[[Sequence[str], str], list[str]]:
    """The left-out rule with a sentence left out only when the claims hold less than ``share`` of its content
    words (the registered rule: any content word missing)."""

    def left_out(claims: Sequence[str], text: str) -> list[str]:
        claimed = set().union(*(content_words(claim) for claim in claims)) if claims else set()
        return [
            sentence
            for sentence in split_sentences(text)
            if len(content_words(sentence) & claimed) < share * len(content_words(sentence))
        ]

    return left_out


def left_out_below(share: float) -> Check:
    """``evidence-4`` with a sentence left out only when the claims hold less than ``share`` of its content words."""

    def checked(claims: Sequence[Claim], chunks: Sequence[str], text: str) -> tuple[Claim, ...]:
        with mock.patch.object(claim_evidence, "left_out", left_out_below_share(share)):
            return checked_claims(claims, chunks, text)

    return checked


def on_named_chunks(claims: Sequence[Claim], chunks: Sequence[str], text: str) -> tuple[Claim, ...]:
    return tuple(
        evidence_3([claim], [chunks[n - 1] for n in claim.chunks if 1 <= n <= len(chunks)])[0] for claim in claims
    )


def without_stems(claims: Sequence[Claim], chunks: Sequence[str], text: str) -> tuple[Claim, ...]:
    with mock.patch.object(claim_evidence, "_stem", lambda word: word):
        return evidence_3(claims, chunks)


def with_the_quote(claims: Sequence[Claim], chunks: Sequence[str], text: str) -> tuple[Claim, ...]:
    quoted = evidence_2(claims, chunks, text)
    return tuple(_demoted(claim, words_covered(claim.text, chunks)) for claim in quoted)


def sentences_only(claims: Sequence[Claim], chunks: Sequence[str], text: str) -> tuple[Claim, ...]:
    return checked_claims([], chunks, text)


def cached_claims(
    records: list[Record], args: argparse.Namespace, mode: str = "verify"
) -> list[tuple[Record, dict[str, Any]]]:
    """The records whose claims reply (of their own answer) is in the cache, with the reply: the ``claims`` call's
    (``verify``: those listing a claim at least) or the ``claim_split`` call's (``split``)."""
    out = []
    with planning_judge(replace(judge_config(args), claims=mode)) as judge:
        run = RunContext(Settings(), judge=judge)
        for record in records:
            call = claims_call(record, run)
            if call is None or abstains(record, run) or judge.cache is None:
                continue
            hit = judge.cache.get(judge.key(call))
            if hit is not None and hit.verdict is not None and (mode == "split" or hit.verdict["claims"]):
                out.append((record, hit.verdict))
    return out


def split_choices(rows: list[tuple[Record, dict[str, Any]]], human: np.ndarray) -> dict[str, Any]:
    """RL_F from the ``claim_split`` replies (the packaged judge's default: the check verifies every claim and
    left-out sentence) at each coverage and under each left-out rule, the other kept registered, each choice
    validated by ``_folds.validate`` (cross-collection, leave one conversation out, in sample)."""

    def values(check: Callable[[], Any]) -> np.ndarray:
        with check():
            return np.array(
                [
                    faithfulness(verdict_claims(verdict, record, record.answer, check_evidence=True, split=True))
                    for record, verdict in rows
                ]
            )

    coverages = [claim_evidence.COVERAGE, *(c for c in COVERAGES if c != claim_evidence.COVERAGE)]
    by_coverage = {c: values(lambda c=c: mock.patch.object(claim_evidence, "COVERAGE", c)) for c in coverages}
    by_rule = {
        "any word": by_coverage[claim_evidence.COVERAGE],
        **{
            f"below {share}": values(
                lambda share=share: mock.patch.object(claim_evidence, "left_out", left_out_below_share(share))
            )
            for share in SHARES
        },
    }
    collections = [_folds.collection_of(record) for record, _ in rows]
    conversations = [str(record.conversation_id) for record, _ in rows]
    out: dict[str, Any] = {
        "records": len(rows),
        "conversations": len(set(conversations)),
        "collections": {c: collections.count(c) for c in sorted(set(collections))},
        "human_at_ceiling": round(float(np.mean(human == 4)), 3),
    }
    for name, options in (("coverage", by_coverage), ("left_out_rule", by_rule)):
        out[name] = {
            "candidates": {str(o): round(_folds.spearman(v, human), 3) for o, v in options.items()},
            **held_out(list(options), options.__getitem__, human, collections, conversations, _folds.spearman),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_judge_arguments(parser)
    args = parser.parse_args()
    ratings = mtrag_rows("human_eval_ratings_dev.jsonl")
    with planning_judge(judge_config(args)) as judge:
        identity = judge.identity

    def faithfulness_of(rows: list[tuple[Record, dict[str, Any]]]) -> np.ndarray:
        return np.array([human_means(ratings[(r.id, str(r.model_id))]["faithfulness"]) for r, _ in rows])

    split_rows = cached_claims(dev_records(None), args, "split")
    if len(split_rows) >= 12:
        split = {
            "judge": identity,
            "check_version": claim_evidence.VERSION,
            **split_choices(split_rows, faithfulness_of(split_rows)),
        }
        for name in ("coverage", "left_out_rule"):
            report = split[name]
            folds = ", ".join(
                f"{c}: {f['chosen']} {f['value']:.2f}" for c, f in report["cross_collection"]["folds"].items()
            )
            print(
                f"split, {name}: in sample {report['in_sample']['chosen']} {report['in_sample']['value']:.2f}; "
                f"cross-collection {report['cross_collection']['mean']:.2f} ({folds}); leave one conversation "
                f"out {report['leave_one_conversation_out']['value']:.2f} "
                f"{report['leave_one_conversation_out']['chosen']}; every candidate {report['candidates']}"
            )
        target = write_result(f"evidence_check-{args.judge}-split", split, indent=1, ensure_ascii=True)
        print(f"{len(split_rows)} answers with a claim_split reply; written: {target}")
    else:
        print(f"only {len(split_rows)} dev answers have a cached claim_split reply: the split choices are left out")

    rows = cached_claims(dev_records(None), args)
    if len(rows) < 12:
        print(f"only {len(rows)} dev answers have a cached (verifying) claims reply: the variants are left out")
        return
    human = faithfulness_of(rows)
    clusters = [str(r.conversation_id) for r, _ in rows]

    def values(check: Check | None) -> np.ndarray:
        with mock.patch("ragmeter.metrics.judged.checked_claims", check or checked_claims):
            return np.array(
                [
                    faithfulness(verdict_claims(verdict, record, record.answer, check_evidence=check is not None))
                    for record, verdict in rows
                ]
            )

    by_coverage = {c: values(at_coverage(checked_claims, c)) for c in COVERAGES}
    by_rule: dict[Any, np.ndarray] = {
        "any word": by_coverage[claim_evidence.COVERAGE],
        **{f"below {share}": values(left_out_below(share)) for share in SHARES},
    }
    variants: dict[str, np.ndarray] = {
        "as given": values(None),
        "evidence-2 (quote in a named chunk)": values(evidence_2),
        "evidence-3 (claims checked, none added)": values(evidence_3),
        **{
            f"evidence-3 at coverage {c}": values(at_coverage(evidence_3, c))
            for c in COVERAGES
            if c != claim_evidence.COVERAGE
        },
        "evidence-3 without stems": values(without_stems),
        "evidence-3 on the named chunks only": values(on_named_chunks),
        "evidence-3 and evidence-2's quote": values(with_the_quote),
        "evidence-4 (= the registered evidence-5 here: no [CIT] markers)": by_rule["any word"],
        **{f"evidence-4 at coverage {c}": by_coverage[c] for c in COVERAGES if c != claim_evidence.COVERAGE},
        **{f"evidence-4, left out {rule}": by_rule[rule] for rule in by_rule if rule != "any word"},
        "the answer's sentences, no judge": values(sentences_only),
    }
    split = {(r.id, r.model_id): verdict for r, verdict in split_rows}
    if all((r.id, r.model_id) in split for r, _ in rows):
        variants["split only (claim_split call), the check verifies"] = np.array(
            [
                faithfulness(verdict_claims(split[(r.id, r.model_id)], r, r.answer, check_evidence=True, split=True))
                for r, _ in rows
            ]
        )
    else:
        print(
            f"{sum((r.id, r.model_id) not in split for r, _ in rows)} of these answers have no cached claim_split "
            "reply: run bench_judge_validity.py (claims=split) first; that row is left out"
        )

    table = []
    for name, x in variants.items():
        rho, low, high = spearman_ci(x, human, clusters)
        table.append(
            {
                "variant": name,
                "rho": round(rho, 3),
                "low": round(low, 3),
                "high": round(high, 3),
                "at_0": round(float(np.mean(x == 0)), 3),
                "at_1": round(float(np.mean(x == 1)), 3),
            }
        )
        print(
            f"{name:42s} ρ {rho:5.2f} [{low:5.2f}, {high:5.2f}]  "
            f"at 0 {np.mean(x == 0):4.0%}  at 1 {np.mean(x == 1):4.0%}"
        )
    collections = [_folds.collection_of(r) for r, _ in rows]
    coverages = [claim_evidence.COVERAGE, *(c for c in COVERAGES if c != claim_evidence.COVERAGE)]
    out = {
        "judge": identity,
        "records": len(rows),
        "conversations": len(set(clusters)),
        "check_version": claim_evidence.VERSION,
        "human_at_ceiling": round(float(np.mean(human == 4)), 3),
        "variants": table,
        "coverage_chosen": held_out(coverages, by_coverage.__getitem__, human, collections, clusters, _folds.spearman),
        "left_out_rule_chosen": held_out(
            list(by_rule), by_rule.__getitem__, human, collections, clusters, _folds.spearman
        ),
    }
    print(f"written: {write_result(f'evidence_check-{args.judge}', out, indent=1, ensure_ascii=True)}")


if __name__ == "__main__":
    main()
