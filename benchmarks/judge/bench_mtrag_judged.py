"""MT-RAG's judged steps on the 477 records of ``human_eval_tasks.jsonl``: agreement with MT-RAG's released
GPT-4o-mini values and with the human ratings, records per minute and judge tokens per record per step.

The pipeline runs in a work folder (``--work``, default ``~/.cache/ragmeter/mtrag-judged/<judge>``), through the
library (:func:`ragmeter.pipelines.mtrag.steps.run_step`), in two steps:

1. ``idk``: ``human_eval_tasks.jsonl`` → ``idk.jsonl`` (the IDK judge on every record);
2. ``all``: ``idk.jsonl`` → ``all.jsonl`` (algorithmic, ragas, radbench, idk_condition; the IDK values already
   there are kept). Its input is ``all-input.jsonl``, the rows of ``idk.jsonl`` in the order that brings the
   human comparison soonest: the records ``all`` has already done, in their order (so its ``.partial`` goes on),
   then the dev split's non-reference answers, then the rest, each in file order.

Each step goes on from its ``.partial`` file, and verdicts are cached (``--cache``), so the whole run (many
hours for the packaged judge on 2 cores) can be spread over several sittings: ``--minutes N`` stops the
sitting after N minutes (as does Ctrl-C), keeping every finished batch. Each sitting's records, wall time,
load average and judge tokens are added to the results file; ``--report-only`` runs nothing and measures
what is there (finished or ``.partial`` outputs).

Agreement, on the records that have a value:

- IDK: accuracy and Cohen's κ of ``idk_eval`` (``declines`` = 1; ``partly`` counts as not declining) against the
  released verdict, recovered from ``conditional_idk`` and answerability as the conformance test explains;
  by answerability, with the confusion counts and the first disagreements as examples; the same for the
  judge's verdicts before the refusal check (:mod:`ragmeter.judges.checks.refusal_cues`) and for the IDK detector
  (no judge);
- RL_F_idk and RB_llm_idk (and the unconditioned RL_F, RB_llm): Spearman with the released ``rl_f`` / ``rb_llm``
  (released values are IDK-conditioned);
- on the dev split (non-reference answers): Spearman, with a 95 % interval resampling conversations, of each of
  ours with mean human faithfulness and completeness on the rows where it is defined, beside the released value
  it reproduces on the same rows; and, as examples of where the judge fails, the answers RL_F_idk and the people
  judge most differently.

    python -m benchmarks.judge.bench_mtrag_judged --judge local --minutes 120
    python -m benchmarks.judge.bench_mtrag_judged --judge openai --judge-model gpt-4o-mini
    python -m benchmarks.judge.bench_mtrag_judged --judge local --report-only

Results: ``benchmarks/results/mtrag_judged-<judge>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from benchmarks._common import (
    DATA,
    RESULTS,
    add_judge_arguments,
    dev_records,
    human_means,
    judge_config,
    released_idk,
    spearman_ci,
    write_result,
)
from ragmeter.judges import open_judge
from ragmeter.metrics.citation import abstained
from ragmeter.metrics.mtrag.judged import IDK_OVERRULED
from ragmeter.stats.inter_annotator import cohen_kappa

TASKS = DATA / "human_eval_tasks.jsonl"
STEPS = (("idk", TASKS, "idk.jsonl"), ("all", "all-input.jsonl", "all.jsonl"))
STEP_PROMPTS = {"idk": ("idk",), "all": ("claims", "claim_split", "radbench")}
OURS_VS_RELEASED = (("RL_F_idk", "rl_f"), ("RB_llm_idk", "rb_llm"), ("RL_F", "rl_f"), ("RB_llm", "rb_llm"))
EXAMPLES = 8


class _TimeUp(Exception):
    """The sitting's ``--minutes`` are over."""


def _key(row: dict[str, Any]) -> tuple[str, str]:
    return str(row["task_id"]), str(row["model_id"])


def _read(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return {_key(row): row for row in map(json.loads, handle) if row}


def _output(work: Path, name: str) -> dict[tuple[str, str], dict[str, Any]]:
    """The rows of a step's output, finished or ``.partial`` (empty when neither exists)."""
    for path in (work / name, work / f"{name}.partial"):
        if path.is_file():
            return _read(path)
    return {}


def _first(metrics: dict[str, Any], name: str) -> float | None:
    values = metrics.get(name)
    if isinstance(values, list):
        values = values[0] if values else None
    return None if values is None else float(values)


def _order_for_humans(work: Path, idk_output: Path, target: Path) -> None:
    """Write ``idk_output``'s rows to ``target``: those ``all`` has done first (their order kept), then the dev
    split's non-reference answers (the rows the human comparison needs), then the rest, each in file order.
    An existing ``target`` is kept: its order must not change while ``all`` goes on from it."""
    if target.is_file():
        return
    with idk_output.open(encoding="utf-8") as handle:
        rows = [row for row in map(json.loads, handle) if row]
    done = {key: rank for rank, key in enumerate(_output(work, "all.jsonl"))}
    dev = {key for key, task in _read(TASKS).items() if task["split"] == "dev" and key[1] != "reference"}
    rows.sort(key=lambda row: (0, done[_key(row)]) if _key(row) in done else (1 if _key(row) in dev else 2, 0))
    target.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


def run_sitting(args: argparse.Namespace, work: Path) -> list[dict[str, Any]]:
    """Run (or go on with) the steps until they are done or ``--minutes`` are over; what each step did."""
    from ragmeter.pipelines.mtrag.steps import run_step

    def time_up(*_: object) -> None:
        raise _TimeUp

    if args.minutes:
        signal.signal(signal.SIGALRM, time_up)
        signal.alarm(int(args.minutes * 60))
    sittings = []
    judge = open_judge(judge_config(args))
    try:
        for step, source_name, name in STEPS:
            if (work / name).is_file():
                continue
            source = work / source_name if step == "all" else source_name
            if step == "all":
                _order_for_humans(work, work / "idk.jsonl", source)
            before = len(_output(work, name))
            load = os.getloadavg()[0]
            started = time.perf_counter()
            judge.usage.clear()
            finished = True
            try:
                run_step(step, source, work / name, judges=[judge])
            except (_TimeUp, KeyboardInterrupt):  # the finished batches are kept; report on them
                finished = False
            wall = time.perf_counter() - started
            done = len(_output(work, name)) - before
            usage = {prompt: judge.usage[prompt].to_dict() for prompt in STEP_PROMPTS[step] if prompt in judge.usage}
            sittings.append(
                {
                    "date": datetime.now(UTC).isoformat(timespec="seconds"),
                    "step": step,
                    "judge": judge.identity,
                    "claims": judge.claims,
                    "records": done,
                    "wall_s": round(wall, 1),
                    "records_per_min": round(60 * done / wall, 2) if wall else None,
                    "load_average_at_start": round(load, 2),
                    "finished": finished,
                    "usage": usage,
                }
            )
            print(f"[{step}] {done} records in {wall:.0f} s{'' if finished else ' (time up)'}", file=sys.stderr)
            if not finished:
                break
    finally:
        signal.alarm(0)
        judge.close()
    return sittings


def idk_agreement(
    rows: dict[tuple[str, str], dict[str, Any]],
    tasks: dict[tuple[str, str], dict[str, Any]],
    expected: dict[tuple[str, str], dict[str, Any]],
) -> dict[str, Any]:
    pairs, unchecked, detector, by_class, examples = [], [], [], Counter(), []
    for key, row in rows.items():
        value = _first(row["metrics"], "idk_eval")
        source = (row["metrics"].get("idk_eval_source") or [""])[0]
        if value is None or not str(source).startswith("judge:"):
            continue
        answerability = tasks[key]["answerability"][0]
        theirs = released_idk(answerability, expected[key]["conditional_idk"])
        ours = int(value == 1.0)
        pairs.append((ours, theirs))
        # the refusal check notes the verdict it overruled: the judge's own verdict, for the unchecked figure
        overruled = row["metrics"].get("notes", {}).get("idk_eval") == IDK_OVERRULED.format(verdict="declines")
        unchecked.append(int(ours or overruled))
        detector.append(int(abstained(tasks[key]["predictions"][0]["text"])))
        by_class[(answerability, ours == theirs)] += 1
        if ours != theirs and len(examples) < EXAMPLES:
            response = tasks[key]["predictions"][0]["text"]
            examples.append(
                {
                    "task_id": key[0],
                    "model_id": key[1],
                    "answerability": answerability,
                    "judge": value,
                    "released": theirs,
                    "response": response[:240],
                }
            )
    if not pairs:
        return {}
    ours, theirs = [p[0] for p in pairs], [p[1] for p in pairs]
    classes = sorted({c for c, _ in by_class})
    return {
        "n": len(pairs),
        "accuracy": round(float(np.mean([a == b for a, b in pairs])), 3),
        "kappa": round(cohen_kappa(ours, theirs), 3),
        "judge_unchecked": {
            "accuracy": round(float(np.mean([a == b for a, b in zip(unchecked, theirs, strict=True)])), 3),
            "kappa": round(cohen_kappa(unchecked, theirs), 3),
        },
        "detector_same_rows": {
            "accuracy": round(float(np.mean([a == b for a, b in zip(detector, theirs, strict=True)])), 3),
            "kappa": round(cohen_kappa(detector, theirs), 3),
        },
        "confusion": {
            "both_idk": sum(a and b for a, b in pairs),
            "judge_only": sum(a and not b for a, b in pairs),
            "released_only": sum(b and not a for a, b in pairs),
            "neither": sum(not a and not b for a, b in pairs),
        },
        "accuracy_by_answerability": {
            c: {
                "n": by_class[(c, True)] + by_class[(c, False)],
                "accuracy": round(by_class[(c, True)] / (by_class[(c, True)] + by_class[(c, False)]), 3),
            }
            for c in classes
        },
        "disagreements": examples,
    }


def versus_released(
    rows: dict[tuple[str, str], dict[str, Any]], expected: dict[tuple[str, str], dict[str, Any]]
) -> dict[str, Any]:
    out = {}
    for ours, field in OURS_VS_RELEASED:
        pairs = [
            (v, float(expected[k][field]))
            for k, row in rows.items()
            if (v := _first(row["metrics"], ours)) is not None and expected[k].get(field) is not None
        ]
        x, y = np.array([a for a, _ in pairs]), np.array([b for _, b in pairs])
        rho = float(spearmanr(x, y).statistic) if len(pairs) > 2 and np.ptp(x) > 0 and np.ptp(y) > 0 else None
        out[f"{ours} vs released {field}"] = {"n": len(pairs), "rho": None if rho is None else round(rho, 3)}
    return out


def versus_humans(
    rows: dict[tuple[str, str], dict[str, Any]], expected: dict[tuple[str, str], dict[str, Any]]
) -> list[dict[str, Any]]:
    """Spearman with mean human ratings on the dev split's non-reference answers: for each of ours, on the rows
    where it is defined, beside the released value it reproduces on the same rows (ragmeter's offline RB_agg_idk
    too, for scale)."""
    ratings = _read(DATA / "human_eval_ratings_dev.jsonl")
    dev = [k for k in rows if k in ratings and k[1] != "reference"]
    table = []
    for name, field in (*OURS_VS_RELEASED, ("RB_agg_idk", "rb_agg")):
        keys = [k for k in dev if _first(rows[k]["metrics"], name) is not None and expected[k].get(field) is not None]
        if len(keys) < 3:
            continue
        clusters = [k[0].split("<::>")[0] for k in keys]
        row: dict[str, Any] = {"metric": name, "released": field, "n": len(keys)}
        for dim in ("faithfulness", "completeness"):
            human = np.array([human_means(ratings[k][dim]) for k in keys])
            for side, values in (
                ("ours", [_first(rows[k]["metrics"], name) for k in keys]),
                ("released", [float(expected[k][field]) for k in keys]),
            ):
                x = np.array(values, dtype=float)
                if np.ptp(x) == 0:
                    row[f"{dim} {side}"] = None
                    continue
                rho, low, high = spearman_ci(x, human, clusters)
                row[f"{dim} {side}"] = {"rho": round(rho, 3), "low": round(low, 3), "high": round(high, 3)}
        table.append(row)
    return table


def judge_with_offline(rows: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    """Does the judge add to the offline signal? On the dev rows with RL_F_idk: ``faithfulness_offline`` (through
    the library), RL_F_idk, and their blend w · RL_F_idk + (1 − w) · faithfulness_offline with w chosen on a grid
    of 0.1 for the highest Spearman with human faithfulness without the record's conversation (each held-out
    record's value comes from the weight its fold chose); Spearman with mean human faithfulness of each."""
    from ragmeter import evaluate

    ratings = _read(DATA / "human_eval_ratings_dev.jsonl")
    records = {(r.id, str(r.model_id)): r for r in dev_records(None)}
    keys = [k for k in records if k in rows and _first(rows[k]["metrics"], "RL_F_idk") is not None]
    if len(keys) < 10:
        return {}
    offline = np.array(
        evaluate([records[k] for k in keys], metrics=["faithfulness_offline"]).scores["faithfulness_offline"],
        dtype=float,
    )
    judge = np.array([_first(rows[k]["metrics"], "RL_F_idk") for k in keys], dtype=float)
    human = np.array([human_means(ratings[k]["faithfulness"]) for k in keys])
    clusters = [str(records[k].conversation_id) for k in keys]
    grid = np.round(np.arange(0.0, 1.0001, 0.1), 1)
    held_out, chosen = np.empty(len(keys)), []
    for cluster in sorted(set(clusters)):
        inside = np.array([c != cluster for c in clusters])
        weight = max(
            grid, key=lambda w: spearmanr(w * judge[inside] + (1 - w) * offline[inside], human[inside]).statistic
        )
        held_out[~inside] = weight * judge[~inside] + (1 - weight) * offline[~inside]
        chosen.append(float(weight))
    out: dict[str, Any] = {"n": len(keys), "weights_chosen_by_fold": chosen}
    for name, values in (("faithfulness_offline", offline), ("RL_F_idk", judge), ("blend, held out", held_out)):
        rho, low, high = spearman_ci(values, human, clusters)
        out[name] = {"rho": round(rho, 3), "low": round(low, 3), "high": round(high, 3)}
    return out


def human_disagreements(
    rows: dict[tuple[str, str], dict[str, Any]],
    tasks: dict[tuple[str, str], dict[str, Any]],
    expected: dict[tuple[str, str], dict[str, Any]],
) -> dict[str, list[dict[str, Any]]]:
    """Where RL_F_idk and the people part most, as examples: answers it scores ≥ 0.9 that people rate ≤ 2.5 of 4
    for faithfulness, and answers it scores ≤ 0.3 that people rate ≥ 3.5."""
    ratings = _read(DATA / "human_eval_ratings_dev.jsonl")
    out: dict[str, list[dict[str, Any]]] = {"judge_high_people_low": [], "judge_low_people_high": []}
    for key, row in rows.items():
        ours = _first(row["metrics"], "RL_F_idk")
        if key not in ratings or key[1] == "reference" or ours is None:
            continue
        human = human_means(ratings[key]["faithfulness"])
        kind = (
            "judge_high_people_low"
            if ours >= 0.9 and human <= 2.5
            else "judge_low_people_high"
            if ours <= 0.3 and human >= 3.5
            else None
        )
        if kind and len(out[kind]) < EXAMPLES:
            out[kind].append(
                {
                    "task_id": key[0],
                    "model_id": key[1],
                    "RL_F_idk": round(ours, 3),
                    "released_rl_f": expected[key].get("rl_f"),
                    "human_faithfulness": round(human, 2),
                    "question": tasks[key]["input"][-1]["text"][:200],
                    "response": tasks[key]["predictions"][0]["text"][:400],
                }
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_judge_arguments(parser)
    parser.add_argument("--work", type=Path, help="work folder (default ~/.cache/ragmeter/mtrag-judged/<judge>)")
    parser.add_argument("--minutes", type=float, help="stop this sitting after N minutes")
    parser.add_argument("--report-only", action="store_true", help="run nothing; measure the outputs there")
    args = parser.parse_args()
    if not TASKS.is_file():
        sys.exit(f"MT-RAG's data is missing: {TASKS}")
    tag = args.judge if args.judge == "local" else f"openai-{args.judge_model}"
    work = args.work or Path.home() / ".cache" / "ragmeter" / "mtrag-judged" / tag
    work.mkdir(parents=True, exist_ok=True)
    results = RESULTS / f"mtrag_judged-{tag}.json"
    previous = json.loads(results.read_text(encoding="utf-8")) if results.is_file() else {}
    sittings = previous.get("sittings", [])
    if not args.report_only:
        sittings += run_sitting(args, work)

    tasks, expected = _read(TASKS), _read(DATA / "human_eval_expected.jsonl")
    rows = _output(work, "idk.jsonl")
    for key, row in _output(work, "all.jsonl").items():
        rows[key] = row
    out = {
        "records": len(tasks),
        "with_idk": sum(_first(r["metrics"], "idk_eval") is not None for r in rows.values()),
        "with_RL_F": sum(_first(r["metrics"], "RL_F") is not None for r in rows.values()),
        "idk": idk_agreement(rows, tasks, expected),
        "versus_released": versus_released(rows, expected),
        "versus_humans_dev": versus_humans(rows, expected),
        "human_disagreements_dev": human_disagreements(rows, tasks, expected),
        "judge_with_offline_dev": judge_with_offline(rows),
        "speed": _speed(sittings),
        "sittings": sittings,
    }
    write_result(f"mtrag_judged-{tag}", out)
    _print(out)
    print(f"written: {results}")


def _speed(sittings: list[dict[str, Any]]) -> dict[str, Any]:
    """Per step and claims mode over all sittings: records per minute and judge tokens per call (cached calls left
    out). The sittings before the ``split`` mode have no ``claims``: they verified."""

    def kind(sitting: dict[str, Any]) -> str:
        mode = sitting.get("claims", "verify")
        return sitting["step"] if sitting["step"] == "idk" else f"{sitting['step']}, claims={mode}"

    out = {}
    for name in dict.fromkeys(map(kind, sittings)):
        mine = [s for s in sittings if kind(s) == name and s["records"]]
        step = mine[0]["step"] if mine else name.split(",")[0]
        records, wall = sum(s["records"] for s in mine), sum(s["wall_s"] for s in mine)
        tokens: dict[str, dict[str, float]] = {}
        for prompt in STEP_PROMPTS[step]:
            made = [s["usage"][prompt] for s in mine if prompt in s["usage"]]
            calls = sum(u["calls"] - u["cached"] for u in made)
            if calls:
                tokens[prompt] = {
                    "prompt_per_call": round(sum(u["prompt_tokens"] for u in made) / calls),
                    "completion_per_call": round(sum(u["completion_tokens"] for u in made) / calls),
                    "calls": calls,
                }
        out[name] = {
            "records": records,
            "wall_s": round(wall, 1),
            "records_per_min": round(60 * records / wall, 2) if wall else None,
            "max_load_average_at_start": max((s["load_average_at_start"] for s in mine), default=None),
            "tokens": tokens,
        }
    return out


def _print(out: dict[str, Any]) -> None:
    print(f"{out['with_idk']} of {out['records']} records have idk_eval, {out['with_RL_F']} have RL_F")
    idk = out["idk"]
    if idk:
        print(
            f"IDK vs released: accuracy {idk['accuracy']}, κ {idk['kappa']} (n={idk['n']}); {idk['confusion']}; "
            f"the judge's verdicts unchecked: {idk['judge_unchecked']}; the detector on the same rows: "
            f"{idk['detector_same_rows']}"
        )
        for name, figures in idk["accuracy_by_answerability"].items():
            print(f"  {name:<16} accuracy {figures['accuracy']:.3f} (n={figures['n']})")
    for pair, figures in out["versus_released"].items():
        print(f"Spearman {pair}: {figures['rho']} (n={figures['n']})")
    if out["versus_humans_dev"]:
        print("Spearman with mean human ratings, dev split (ours | released on the same rows):")
    for row in out["versus_humans_dev"]:
        cells = "  ".join(
            f"{dim} "
            + " | ".join(
                f"{c['rho']:.2f} [{c['low']:.2f}, {c['high']:.2f}]" if (c := row[f"{dim} {side}"]) else "–"
                for side in ("ours", "released")
            )
            for dim in ("faithfulness", "completeness")
        )
        print(f"  {row['metric']:<11} vs {row['released']:<7} n={row['n']:<4} {cells}")
    blend = out["judge_with_offline_dev"]
    if blend:
        print(
            f"human faithfulness, dev rows with RL_F_idk (n={blend['n']}): "
            + ", ".join(
                f"{name} {blend[name]['rho']:.2f} [{blend[name]['low']:.2f}, {blend[name]['high']:.2f}]"
                for name in ("faithfulness_offline", "RL_F_idk", "blend, held out")
            )
            + f"; the folds' weights of RL_F_idk: {blend['weights_chosen_by_fold']}"
        )
    for step, figures in out["speed"].items():
        print(
            f"[{step}] {figures['records']} records, {figures['records_per_min']} records/min; tokens per call "
            f"{figures['tokens']}"
        )


if __name__ == "__main__":
    main()
