"""RAGChecker beside ragmeter's claim level: judge calls and tokens per answer, one judge, the same answers.

Issue 47's cost goal: at least 5× fewer judge tokens per answer than RAGChecker with the same judge, the reference's
nuggets computed once per question. Both tools compute the same matrix (the answer's claims against the reference
and the chunks, the reference's claims against the answer and the chunks) and the same eleven metrics (precision,
recall, F1; claim recall, context precision; context utilisation, the two noise sensitivities, hallucination,
self-knowledge, faithfulness): RAGChecker with a judge call for every check, ragmeter with two calls an answer
(the answer's claims and the nuggets' grades; a third, once per question, with ``--nugget-source judge``: the
reference's nuggets written by the judge instead of the reference's sentences, ragmeter's default) and the lexical
evidence check for the rest.

The answers: ``--questions`` (8; 1 with ``--quick``) questions of MT-RAG's ``human_eval_tasks.jsonl``, each with
the answers of its two models (not the reference responder), so that every question is answered twice, as in a
comparison of two systems: the eligible answers of ``bench_vs_ragas.py`` (answerable, 3 to 6 passages, a
reference), the questions both of whose answers are eligible, shuffled with ``random.Random(0)``, the first N.

The judge: one :class:`ragmeter.judges.LocalServer` start (the packaged Qwen2.5-Coder-1.5B Q4_K_M, one slot, every
core) behind ``bench_vs_ragas.py``'s counting proxy, which writes down every request with the tokens the server
counted. One tiny request warms the server up (not counted). Then, one after the other, one ``evaluate`` an answer,
each labelled at the proxy:

- ``ragchecker``: RAGChecker 0.1.9 (``RAGChecker.evaluate(..., all_metrics)``), its defaults (claims checked five a
  call, ``joint_check``; extraction up to 1,000 new tokens), its extractor and checker both the packaged model at
  the proxy through LiteLLM (``openai/<model>``, ``api_base``). It is given the question alone, no history, and the
  chunks' texts, and it extracts the reference's claims for each answer, as it does when not told otherwise.
- ``ragmeter-shared``: ``ragmeter.evaluate(metrics=["claim_level"])`` with the local judge as ``--judge local``
  builds it (``LocalBackend`` at the proxy with its saved states, the shared layout, claims ``split``), and one
  verdict cache for the whole pass (a new, empty file): the second answer to a question reads its nuggets from it
  (``--nugget-source judge``; the reference's sentences cost no call).
- ``ragmeter-calls``: the same as a remote judge (``--judge openai``) is asked: plain requests in the calls layout,
  no saved state and no prompt cache (an API bills every prompt token), claims ``split`` as above so that both
  passes make the same calls; a verdict cache of its own.

Reported per tool, per answer and as means per answer: generation requests, prompt and completion tokens (the
server's ``usage``: each call's whole prompt, a part restored from a saved state included), wall seconds (RAGChecker
sends a check's calls at once, so the seconds of its calls overlap), the states ragmeter computes and saves (a system
message once per server, an item's shared part once per answer; shown apart and "all in", although the calls that
restore a state count its tokens again in their prompt tokens); ragmeter's tokens by
prompt from its own accounting, and its tokens per answer *with the nuggets cached* (a rerun, another model's
answers, the other side of a ``compare``). The ratio RAGChecker ÷ ragmeter of the calls' judge tokens is the goal's
figure, as in ``bench_vs_ragas.py``; beside it, the tokens the server computed (prompt tokens not taken from
llama.cpp's prompt cache or a saved state, the states, the completions): RAGChecker's repeated prompts gain from
llama.cpp's prompt cache too. Also the claims each tool found, RAGChecker's verdict labels per check and both
tools' eleven values per answer (fractions, 0 to 1), so that a low cost is not bought with empty claim lists.

RAGChecker is a benchmark-only extra (``bench-ragchecker``: ragchecker 0.1.9, whose refchecker takes
transformers < 5 and accelerate 0.31, and torch pinned to the CPU build), never a dependency of ragmeter. Install
it in a virtual environment of its own:

    python3 -m venv /work/ragchecker-venv
    /work/ragchecker-venv/bin/pip install -e '.[local,bench-ragchecker]'
    /work/ragchecker-venv/bin/python -m benchmarks.judge.bench_vs_ragchecker [--questions 8] [--quick]
        [--nugget-source judge]

Offline: LiteLLM reads its bundled model price map (``LITELLM_LOCAL_MODEL_COST_MAP``), Hugging Face's libraries are
told to stay offline; RAGChecker's LLM extractor and checker load no model (spaCy's blank English sentencizer
only). Without the MT-RAG file, xllamacpp or RAGChecker the benchmark says so and exits 0. Results:
``results/vs_ragchecker.json`` (``vs_ragchecker-quick.json`` with ``--quick``, ``vs_ragchecker-judge_nuggets.json``
with ``--nugget-source judge``).
"""

from __future__ import annotations

from benchmarks._offline import go_offline

go_offline(LITELLM_LOCAL_MODEL_COST_MAP="True")  # before LiteLLM is imported: no price map fetched

import argparse
import random
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks._common import cell, markdown_table, missing_modules, write_result
from benchmarks._counting_proxy import (
    LOCAL_JUDGE_NEEDED,
    CountingProxy,
    counted_local_server,
    judge_at_proxy,
    summarise,
)
from benchmarks._mtrag_data import HUMAN_EVAL_TASKS, missing
from benchmarks.judge.bench_vs_ragas import describe, eligible_answers, number, per_sample

NAME = "vs_ragchecker"
FULL_QUESTIONS = 8
QUICK_QUESTIONS = 1
SEED = 0
RAGCHECKER_VERSION = "0.1.9"
GOAL_TOKENS_RATIO = 5.0
INSTALL = "pip install -e '.[local,bench-ragchecker]' (in a virtual environment of its own: see the docstring)"
#: ragmeter's claim-level metric nearest to each of RAGChecker's, in RAGChecker's order.
NEAREST = {
    "precision": "claim_precision",
    "recall": "claim_recall",
    "f1": "claim_f1",
    "claim_recall": "context_claim_recall",
    "context_precision": "claim_context_precision",
    "context_utilization": "context_utilization",
    "noise_sensitivity_in_relevant": "noise_sensitivity_relevant",
    "noise_sensitivity_in_irrelevant": "noise_sensitivity_irrelevant",
    "hallucination": "hallucination",
    "self_knowledge": "self_knowledge",
    "faithfulness": "claim_faithfulness",
}
NUGGETS_PROMPT = "nuggets"
#: ragmeter's passes: the local judge's layout, and the one a remote judge gets.
LAYOUTS = ("shared", "calls")
#: RAGChecker's four verdict lists: the answer's claims against the reference and against each chunk, the
#: reference's claims against the answer and against each chunk.
CHECKS = ("answer2response", "retrieved2response", "response2answer", "retrieved2answer")


def choose_answers(n_questions: int) -> list[Any]:
    """Both models' answers to the first ``n_questions`` questions both of whose answers are eligible (docstring)."""
    by_question: dict[str, list[Any]] = defaultdict(list)
    for record in eligible_answers():
        by_question[record.id].append(record)
    questions = sorted(q for q, answers in by_question.items() if len(answers) == 2)
    random.Random(SEED).shuffle(questions)
    if len(questions) < n_questions:
        raise SystemExit(f"only {len(questions)} questions with two eligible answers in {HUMAN_EVAL_TASKS}")
    return [answer for q in questions[:n_questions] for answer in by_question[q]]


# --- RAGChecker ------------------------------------------------------------------------------------------------


def ragchecker_pass(records: list[Any], proxy: CountingProxy, model: str) -> dict[str, Any]:
    from ragchecker import RAGChecker, RAGResults
    from ragchecker.container import RAGResult, RetrievedDoc
    from ragchecker.metrics import all_metrics

    checker = RAGChecker(
        extractor_name=f"openai/{model}",
        checker_name=f"openai/{model}",
        extractor_api_base=proxy.base_url,
        checker_api_base=proxy.base_url,
        openai_api_key="sk-local-no-key",
    )
    samples = []
    for i, record in enumerate(records):
        result = RAGResult(
            query_id=f"{record.id}/{record.model_id}",
            query=record.question,
            gt_answer=record.references[0],
            response=record.answer,
            retrieved_context=[RetrievedDoc(doc_id=c.doc_id, text=c.text) for c in record.contexts],
        )
        label = f"ragchecker/{result.query_id}"
        proxy.label = label
        started = time.perf_counter()
        try:
            checker.evaluate(RAGResults(results=[result]), all_metrics)
            error = None
        except Exception as exc:  # noqa: BLE001  (a crash on one answer is a finding: reported, the run goes on)
            error = f"{type(exc).__name__}: {str(exc)[:500]}"
        wall = time.perf_counter() - started
        proxy.label = ""
        samples.append(
            {
                "id": result.query_id,
                "wall_s": wall,
                "error": error,
                "answer_claims": len(result.response_claims or []),
                "reference_claims": len(result.gt_answer_claims or []),
                "values": {name: number(result.metrics.get(name)) for name in NEAREST},
                "verdicts": {check: verdict_counts(getattr(result, check)) for check in CHECKS},
                **summarise(proxy.records_for(label)),
            }
        )
        print(
            f"[{NAME}] ragchecker {i + 1}/{len(records)}: {wall:.0f} s, {samples[-1]['calls']} calls, "
            f"{samples[-1]['answer_claims']}/{samples[-1]['reference_claims']} claims{' ' + error if error else ''}",
            flush=True,
        )
    return {"samples": samples}


def verdict_counts(verdicts: Any) -> dict[str, int]:
    """How often each label occurs in one of RAGChecker's verdict lists (flat, or one list per chunk)."""
    flat = [v for row in verdicts or [] for v in (row if isinstance(row, list) else [row])]
    return {label: flat.count(label) for label in sorted(set(map(str, flat)))}


# --- ragmeter --------------------------------------------------------------------------------------------------


def ragmeter_pass(
    records: list[Any], proxy: CountingProxy, server: Any, layout: str, nugget_source: str
) -> dict[str, Any]:
    """ragmeter's claim level on ``records``: as ``--judge local`` asks (``layout`` "shared", the server's saved
    states) or as ``--judge openai`` asks a remote judge ("calls": plain requests, no state, no prompt cache), the
    nuggets from ``nugget_source``."""
    import ragmeter
    from ragmeter.judges import JudgeCache

    samples = []
    settings = ragmeter.Settings(nugget_source=nugget_source)
    with tempfile.TemporaryDirectory() as folder:
        judge = judge_at_proxy(server, proxy, layout=layout, cache=JudgeCache(Path(folder) / "verdicts.sqlite"))
        try:
            for i, record in enumerate(records):
                label = f"ragmeter-{layout}/{record.id}/{record.model_id}"
                proxy.label = label
                started = time.perf_counter()
                result = ragmeter.evaluate([record], metrics=["claim_level"], judge=judge, settings=settings)
                wall = time.perf_counter() - started
                proxy.label = ""
                assert result.judging is not None
                made = {
                    prompt: usage.prompt_tokens + usage.completion_tokens
                    for prompt, usage in result.judging.usage.items()
                }
                samples.append(
                    {
                        "id": f"{record.id}/{record.model_id}",
                        "wall_s": wall,
                        "values": {ours: number(result.scores[ours][0]) for ours in NEAREST.values()},
                        "undefined": {m: reasons[0] for m, reasons in result.undefined.items() if 0 in reasons},
                        "judge_failures": [
                            {"prompt": f["prompt"], "reason": f["reason"]} for f in result.judging.failures
                        ],
                        "tokens_by_prompt": made,
                        **summarise(proxy.records_for(label)),
                    }
                )
                print(
                    f"[{NAME}] ragmeter-{layout} {i + 1}/{len(records)}: {wall:.0f} s, {samples[-1]['calls']} calls, "
                    + ", ".join(f"{p} {t}" for p, t in made.items()),
                    flush=True,
                )
        finally:
            proxy.label = ""
            judge.close()
    return {"samples": samples}


# --- figures ---------------------------------------------------------------------------------------------------


def per_answer(samples: list[dict[str, Any]]) -> dict[str, float]:
    """``bench_vs_ragas.per_sample``'s means per answer, with ``tokens_computed`` (the prompt tokens not taken from
    a cache or a state, the states computed, the completions), ragmeter's tokens by prompt and with the nuggets
    cached, and RAGChecker's claims found."""
    n = len(samples)
    out: dict[str, Any] = per_sample(samples)
    out["tokens_computed"] = out["prompt_tokens_computed"] + out["prompt_computes_tokens"] + out["completion_tokens"]
    if samples and "tokens_by_prompt" in samples[0]:
        by_prompt: dict[str, float] = defaultdict(float)
        for sample in samples:
            for prompt, tokens in sample["tokens_by_prompt"].items():
                by_prompt[prompt] += tokens / n
        out["tokens_by_prompt"] = dict(by_prompt)
        out["judge_tokens_nuggets_cached"] = out["judge_tokens"] - by_prompt.get(NUGGETS_PROMPT, 0.0)
    if samples and "answer_claims" in samples[0]:
        out["answer_claims"] = sum(s["answer_claims"] for s in samples) / n
        out["reference_claims"] = sum(s["reference_claims"] for s in samples) / n
    return out


def ratios(theirs: dict[str, float], ours: dict[str, float]) -> dict[str, float | None]:
    def ratio(a: float, b: float) -> float | None:
        return a / b if b else None

    return {
        "judge_tokens": ratio(theirs["judge_tokens"], ours["judge_tokens"]),
        "judge_tokens_all_in": ratio(theirs["judge_tokens"], ours["judge_tokens_all_in"]),
        "judge_tokens_nuggets_cached": ratio(theirs["judge_tokens"], ours["judge_tokens_nuggets_cached"]),
        "tokens_computed": ratio(theirs["tokens_computed"], ours["tokens_computed"]),
        "calls": ratio(theirs["calls"], ours["calls"]),
    }


def markdown(
    means: dict[str, dict[str, float]], ratio_rows: dict[str, dict[str, float | None]], passes: dict[str, Any]
) -> str:
    tools = list(means)
    rows = [
        ("judge calls", "calls", 1),
        ("prompt tokens", "prompt_tokens", 0),
        ("completion tokens", "completion_tokens", 0),
        ("judge tokens (calls)", "judge_tokens", 0),
        ("judge tokens, nuggets cached", "judge_tokens_nuggets_cached", 0),
        ("system messages and items computed for states: tokens", "prompt_computes_tokens", 0),
        ("judge tokens + states computed", "judge_tokens_all_in", 0),
        ("tokens the server computed (prompt not from a cache or state, states, completion)", "tokens_computed", 0),
        ("wall seconds", "wall_s", 1),
    ]
    lines = markdown_table(
        "per answer", tools, ((title, [cell(means[t].get(key), d) for t in tools]) for title, key, d in rows)
    )
    ratios_shown = (
        (f"judge tokens (goal ≥ {GOAL_TOKENS_RATIO:g})", "judge_tokens"),
        ("judge tokens, ragmeter's nuggets cached", "judge_tokens_nuggets_cached"),
        ("judge tokens, ragmeter's states computed added", "judge_tokens_all_in"),
        ("tokens the server computed", "tokens_computed"),
        ("judge calls", "calls"),
    )
    lines += [
        "",
        *markdown_table(
            "RAGChecker ÷",
            list(ratio_rows),
            ((title, [cell(r[key], 2) for r in ratio_rows.values()]) for title, key in ratios_shown),
        ),
    ]
    ours = [t for t in tools if t != "ragchecker"]
    per_answer_rows = (
        (
            f"{theirs['id']} | {name} / {our_name}",
            [cell(theirs["values"][name], 3), *(cell(passes[t]["samples"][i]["values"][our_name], 3) for t in ours)],
        )
        for i, theirs in enumerate(passes["ragchecker"]["samples"])
        for name, our_name in NEAREST.items()
    )
    lines += ["", *markdown_table("answer | RAGChecker / ragmeter", ["RAGChecker", *ours], per_answer_rows)]
    return "\n".join(lines)


# --- run -------------------------------------------------------------------------------------------------------


def skipped() -> dict[str, Any] | None:
    absent = missing(NAME, NAME, HUMAN_EVAL_TASKS)
    if absent is not None:
        return absent
    absent = missing_modules(
        NAME,
        (
            LOCAL_JUDGE_NEEDED,
            ("ragchecker", f"RAGChecker is not installed ({INSTALL})"),
        ),
    )
    if absent is not None:
        return absent
    from importlib.metadata import version

    if version("ragchecker") != RAGCHECKER_VERSION:
        print(f"[{NAME}] note: RAGChecker {version('ragchecker')} installed, the figures are for {RAGCHECKER_VERSION}")
    return None


def run(*, nugget_source: str, quick: bool = False, n_questions: int | None = None) -> dict[str, Any]:
    reason = skipped()
    if reason is not None:
        return reason
    from importlib.metadata import version

    n = n_questions or (QUICK_QUESTIONS if quick else FULL_QUESTIONS)
    records = choose_answers(n)
    shown = ", ".join(f"{r.id} ({r.model_id})" for r in records)
    print(f"[{NAME}] {len(records)} answers to {n} question(s): {shown}", flush=True)
    passes: dict[str, dict[str, Any]] = {}
    with counted_local_server() as (server, proxy):
        passes["ragchecker"] = ragchecker_pass(records, proxy, server.model_id)
        for layout in LAYOUTS:
            passes[f"ragmeter-{layout}"] = ragmeter_pass(records, proxy, server, layout, nugget_source)
        unlabelled = [r for r in proxy.records if not r["label"]]

    means = {tool: per_answer(p["samples"]) for tool, p in passes.items()}
    ratio_rows = {tool: ratios(means["ragchecker"], means[tool]) for tool in means if tool != "ragchecker"}
    table = markdown(means, ratio_rows, passes)
    print(table, flush=True)
    return {
        "name": NAME,
        "quick": quick,
        "questions": n,
        "answers": len(records),
        "seed": SEED,
        "choice": (
            f"questions of {HUMAN_EVAL_TASKS.name} both of whose model answers are eligible (answerable, 3–6 "
            f"passages, a reference), shuffled with random.Random({SEED}), the first {n}, both answers each"
        ),
        "sample_shapes": [describe(r) for r in records],
        "judge": {"model": server.model_id, "slots": server.parallel, "threads": server.threads},
        "ragchecker": {
            "version": version("ragchecker"),
            "settings": "RAGChecker defaults (joint_check, 5 claims a call); extractor and checker openai/<model>",
        },
        "nugget_source": nugget_source,
        "nearest": NEAREST,
        "per_answer": means,
        "ratios": ratio_rows,
        "goal": {"judge_tokens_ratio": GOAL_TOKENS_RATIO},
        "meets_goal": {tool: (r["judge_tokens"] or 0) >= GOAL_TOKENS_RATIO for tool, r in ratio_rows.items()},
        "passes": passes,
        "requests_outside_passes": len(unlabelled),  # the warm-up has its label: should be 0
        "markdown": table,
    }


def main() -> None:
    from ragmeter.cli.common import choice_values
    from ragmeter.core.settings import NuggetSource, Settings

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=None, help=f"questions (default {FULL_QUESTIONS})")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_QUESTIONS} question")
    parser.add_argument(
        "--nugget-source",
        choices=choice_values(NuggetSource),
        default=Settings.nugget_source,
        help="ragmeter's nuggets: the reference's sentences (its default) or the judge's",
    )
    args = parser.parse_args()
    out = run(quick=args.quick, n_questions=args.questions, nugget_source=args.nugget_source)
    if "skipped" in out:
        return
    name = (f"{NAME}-quick" if args.quick else NAME) + (
        "" if args.nugget_source == Settings.nugget_source else "-judge_nuggets"
    )
    print(f"written: {write_result(name, out)}")


if __name__ == "__main__":
    sys.exit(main())
