"""What the benchmarks share: where they read and write, MT-RAG's human evaluation of the dev split, the judge
options and their verdict cache, and Spearman's ρ with a conversation-bootstrap interval.

Benchmarks are modules of the ``benchmarks`` package, run from the repository's root (``python -m
benchmarks.GROUP.bench_NAME``), and import ``benchmarks._common``, ``benchmarks._folds`` and the data modules.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from importlib import util
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from benchmarks._mtrag_data import DATA_DIR as DATA
from ragmeter import read_records
from ragmeter.core.records import Record
from ragmeter.judges import CLAIM_MODES, LAYOUTS, JudgeConfig
from ragmeter.stats.correlation import cluster_bootstrap, spearman
from ragmeter.stats.intervals import wilson_interval
from ragmeter.testing import write_synthetic_records

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
#: The answerability of the tasks where declining to answer is the right behaviour.
IDK_RIGHT = {"UNANSWERABLE", "CONVERSATIONAL"}
#: MT-RAG's released judge values (``human_eval_expected.jsonl``): row label → field.
RELEASED = {
    "released rl_f (GPT-4o-mini, IDK-conditioned)": "rl_f",
    "released rb_llm (IDK-conditioned)": "rb_llm",
    "released rb_agg": "rb_agg",
    "released BertKPrec (DeBERTa)": "Bert-KPrec",
}
N_BOOT = 2000


# --- MT-RAG's human evaluation ------------------------------------------------------------------------------


def dev_records(limit: int | None) -> list[Record]:
    """The answers of MT-RAG's dev split by the non-reference responders, in a fixed shuffled order (seed 0);
    ``limit``: the first N, so that a short run still spans many conversations."""
    tasks = DATA / "human_eval_tasks.jsonl"
    if not tasks.is_file():
        sys.exit(f"MT-RAG's data is missing: {tasks}")
    records = [
        r for r in read_records(tasks, format="mtrag") if r.metadata.get("split") == "dev" and r.model_id != "reference"
    ]
    random.Random(0).shuffle(records)
    return records[:limit] if limit else records


def mtrag_rows(name: str) -> dict[tuple[str, str], dict[str, Any]]:
    """The rows of MT-RAG's file ``name`` (``human_eval_ratings_dev.jsonl``, ``human_eval_expected.jsonl``) by
    (task id, model id)."""
    with (DATA / name).open(encoding="utf-8") as handle:
        return {(row["task_id"], row["model_id"]): row for row in map(json.loads, handle)}


def human_means(ratings: dict[str, str]) -> float:
    """The mean of the annotators' ratings of one dimension."""
    return float(np.mean([float(v) for v in ratings.values()]))


def released_idk(answerability: str, conditional_idk: int) -> int:
    """MT-RAG's IDK verdict, recovered from its ``conditional_idk`` (1 = the right IDK behaviour)."""
    return conditional_idk if answerability in IDK_RIGHT else 1 - conditional_idk


# --- agreement with people ----------------------------------------------------------------------------------


def cluster_interval(
    statistic: Callable[[np.ndarray, np.ndarray], float],
    x: np.ndarray,
    y: np.ndarray,
    clusters: Sequence[str],
    *,
    n_resamples: int = N_BOOT,
    seed: int = 0,
) -> tuple[float, float]:
    """The 95 % percentile interval of ``statistic(x, y)`` from resampling clusters with replacement
    (:func:`ragmeter.stats.correlation.cluster_bootstrap`; resamples where it is NaN are left out)."""
    # Clusters numbered in order of first appearance: the draws, and so the interval, are those of the figures
    # already published, which resampled the clusters in that order.
    order = {cluster: f"{i:09d}" for i, cluster in enumerate(dict.fromkeys(clusters))}
    low, high, _ = cluster_bootstrap(
        statistic, x, y, clusters=[order[c] for c in clusters], n_resamples=n_resamples, seed=seed
    )
    return low, high


def spearman_ci(x: np.ndarray, y: np.ndarray, clusters: list[str], seed: int = 0) -> tuple[float, float, float]:
    """ρ and its 95 % percentile interval from resampling clusters with replacement (``N_BOOT`` draws)."""
    return float(spearmanr(x, y).statistic), *cluster_interval(spearman, x, y, clusters, seed=seed)


def correlations(
    name: str, values: dict[int, float], human: dict[str, np.ndarray], clusters: list[str], ceiling: float
) -> dict[str, Any]:
    """A metric's row: n, its share at ``ceiling``, and its ρ with each human dimension (record ``i``:
    ``values[i]``, ``human[dimension][i]``, ``clusters[i]``)."""
    rows = sorted(values)
    x = np.array([values[i] for i in rows])
    out: dict[str, Any] = {"metric": name, "n": len(rows), "at_ceiling": round(float(np.mean(x >= ceiling)), 3)}
    for dimension, ratings in human.items():
        y = ratings[rows]
        if len(rows) < 3 or np.ptp(x) == 0:
            out[dimension] = {"rho": float("nan"), "low": float("nan"), "high": float("nan")}
            continue
        rho, low, high = spearman_ci(x, y, [clusters[i] for i in rows])
        out[dimension] = {"rho": round(rho, 3), "low": round(low, 3), "high": round(high, 3)}
    return out


# --- the judge ----------------------------------------------------------------------------------------------


def add_judge_arguments(parser: argparse.ArgumentParser) -> None:
    """The judge options of the judge benchmarks, and their verdict cache."""
    parser.add_argument("--judge", choices=("local", "openai"), default="local")
    parser.add_argument("--judge-model", help="model at the endpoint (--judge openai)")
    parser.add_argument("--judge-base-url", help="OpenAI-compatible base URL (--judge openai)")
    parser.add_argument("--judge-api-key-env", default="OPENAI_API_KEY")
    parser.add_argument(
        "--judge-claims",
        choices=CLAIM_MODES,
        help="how the judge is asked for claims (default: split for local, verify for openai)",
    )
    parser.add_argument(
        "--judge-layout",
        choices=LAYOUTS,
        help="how an item's calls are laid out (default: shared for local, calls for openai)",
    )
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "ragmeter" / "validity.sqlite")


def judge_config(args: argparse.Namespace) -> JudgeConfig:
    """The judge of ``add_judge_arguments``' options."""
    return JudgeConfig(
        kind=args.judge,
        model=args.judge_model,
        base_url=args.judge_base_url,
        api_key_env=args.judge_api_key_env or None,
        cache=args.cache,
        claims=args.judge_claims,
        layout=args.judge_layout,
    )


# --- inputs and results -------------------------------------------------------------------------------------


def synthetic_inputs(prefix: str, sizes: Iterable[int], *, keep: bool = False) -> Iterator[tuple[int, Path, Path]]:
    """For each size ``n``: ``(n, file, folder)``, a JSONL file of ``n`` synthetic records
    (:func:`ragmeter.testing.synthetic_records`) in a temporary folder; the file is removed once its turn is
    over, the folder (and what was written beside it) at the end, unless ``keep``."""
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        for n in sizes:
            path = workdir / f"records-{n}.jsonl"
            write_synthetic_records(path, n)
            yield n, path, workdir
            path.unlink()
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


def write_result(name: str, out: Any, **dump: Any) -> Path:
    """Write ``out`` as ``results/<name>.json`` (``json.dumps`` with ``indent=2, ensure_ascii=False`` unless
    ``dump`` says otherwise, and a final newline); its path."""
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(out, **{"indent": 2, "ensure_ascii": False, **dump}) + "\n", encoding="utf-8")
    return path


def share_with_interval(count: int, n: int) -> dict[str, float | int]:
    """``count`` of ``n`` as a share with its 95 % Wilson interval
    (:func:`ragmeter.stats.intervals.wilson_interval`)."""
    low, high = wilson_interval(count, n)
    return {"count": count, "n": n, "rate": count / n if n else float("nan"), "ci_low": low, "ci_high": high}


def cell(value: Any, digits: int = 0) -> str:
    """A Markdown table's figure: "–" for None, a float with ``digits`` decimals, thousands with commas."""
    if value is None:
        return "–"
    return f"{value:,.{digits}f}" if isinstance(value, float) else f"{value:,}"


def markdown_table(corner: str, columns: Sequence[str], rows: Iterable[tuple[str, Sequence[str]]]) -> list[str]:
    """The lines of a Markdown table: a header of ``corner`` (one or more left-aligned columns, ``" | "`` between
    them, as in each row's title) and ``columns`` (right-aligned), then each row's title and cells."""
    left = corner.count(" | ") + 1
    lines = [f"| {corner} | " + " | ".join(columns) + " |", "|" + "---|" * left + "---:|" * len(columns)]
    lines += [f"| {title} | " + " | ".join(cells) + " |" for title, cells in rows]
    return lines


def missing_modules(name: str, needs: Sequence[tuple[str, str]]) -> dict[str, Any] | None:
    """Benchmark ``name``'s skip result (printed) for the first of ``needs`` (module, why it is needed and how to
    install it) that is not installed, or None when all are."""
    for module, why in needs:
        if util.find_spec(module) is None:
            print(f"[{name}] skipped: {why}")
            return {"name": name, "skipped": why}
    return None
