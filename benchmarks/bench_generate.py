"""Does a set ``ragmeter generate`` writes measure what a set people wrote does? And its near-duplicate thresholds.

``duplicates``: each embedder's near-duplicate cosine (:mod:`ragmeter.testsets.duplicates`), the cosine that at most
1 % of pairs of distinct questions people wrote about one passage reach:

- the multilingual embedder on IDK-MRC (Indonesian Wikipedia paragraphs; pairs of distinct questions on one
  paragraph), chosen on ``valid`` and reported on ``test``;
- MiniLM (ONNX) and the hashing embedder on MTRAG-UN (English; pairs of distinct user turns of one conversation),
  chosen on three collections and reported on the fourth, each in turn; the shipped value is chosen on all four.

Reported: each threshold, and on held-out data the share of distinct pairs at or above it (a question that would
be dropped as a repeat of a different one), with its 95 % Wilson interval.

    python benchmarks/bench_generate.py duplicates

Results: ``benchmarks/results/generate-duplicates.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Iterable, Sequence

import numpy as np
from _common import share_with_interval, write_result
from _indonesian_data import INDONESIAN

from ragmeter.testsets.duplicates import NEAR_DUPLICATE_COSINE
from ragmeter.models import load_embedder

#: Pairs of distinct questions a threshold may reach: 1 %.
FALSE_REPEATS = 0.01
MTRAG_UN = INDONESIAN.parent / "mtrag" / "mtragun_reference_tasks.jsonl"


def _distinct(texts: Iterable[str]) -> list[str]:
    seen: dict[str, str] = {}
    for text in texts:
        seen.setdefault(" ".join(text.split()).casefold(), text.strip())
    return list(seen.values())


def idk_mrc_groups(split: str) -> list[list[str]]:
    """The distinct questions of each IDK-MRC paragraph of ``split``."""
    paragraphs = json.loads((INDONESIAN / "idk_mrc" / f"{split}.json").read_text(encoding="utf-8"))
    return [_distinct(q["question"] for q in paragraph["qas"]) for paragraph in paragraphs]


def mtrag_un_groups() -> dict[str, list[list[str]]]:
    """The distinct user turns of each MTRAG-UN conversation, by collection."""
    groups: dict[str, list[list[str]]] = {}
    with MTRAG_UN.open(encoding="utf-8") as handle:
        for line in handle:
            task = json.loads(line)
            turns = _distinct(turn["text"] for turn in task["input"] if turn["speaker"] == "user")
            groups.setdefault(task["Collection"], []).append(turns)
    return groups


def pair_cosines(groups: Sequence[Sequence[str]], backend: str, language: str) -> np.ndarray:
    """The cosine of every pair of questions within a group."""
    embedder = load_embedder(backend, language)
    texts = [text for group in groups for text in group]
    vectors = np.asarray(embedder.encode(texts), dtype=np.float64)
    cosines: list[float] = []
    start = 0
    for group in groups:
        block = vectors[start:start + len(group)]
        start += len(group)
        cosines.extend(float(block[i] @ block[j]) for i, j in itertools.combinations(range(len(group)), 2))
    return np.array(cosines)


def threshold(cosines: np.ndarray) -> float:
    """The smallest cosine (to three decimals, rounded up) that at most :data:`FALSE_REPEATS` of ``cosines`` reach."""
    return float(np.ceil(np.quantile(cosines, 1 - FALSE_REPEATS, method="higher") * 1000 + 1e-9) / 1000)


def _reached(cosines: np.ndarray, at: float) -> dict[str, float | int]:
    return share_with_interval(int(np.sum(cosines >= at)), len(cosines))


def duplicates() -> dict[str, object]:
    out: dict[str, object] = {"false_repeats_allowed": FALSE_REPEATS}
    valid, test = (pair_cosines(idk_mrc_groups(split), "multilingual", "id") for split in ("valid", "test"))
    chosen = threshold(valid)
    out["multilingual"] = {"data": "IDK-MRC, pairs of distinct questions on one paragraph", "chosen_on": "valid",
                           "pairs": {"valid": len(valid), "test": len(test)}, "threshold": chosen,
                           "held_out": {"test": _reached(test, chosen)}}
    collections = mtrag_un_groups()
    for backend in ("onnx", "hashing"):
        cosines = {name: pair_cosines(groups, backend, "en") for name, groups in collections.items()}
        folds = {}
        for name in sorted(cosines):
            rest = np.concatenate([values for other, values in cosines.items() if other != name])
            at = threshold(rest)
            folds[name] = {"threshold": at, **_reached(cosines[name], at)}
        pooled = np.concatenate(list(cosines.values()))
        out[backend] = {"data": "MTRAG-UN, pairs of distinct user turns of one conversation",
                        "chosen_on": "three collections, reported on the fourth; shipped: all four",
                        "pairs": {name: len(values) for name, values in cosines.items()},
                        "threshold": threshold(pooled), "held_out": folds}
    out["shipped"] = dict(NEAR_DUPLICATE_COSINE)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["duplicates"])
    args = parser.parse_args()
    if args.part == "duplicates":
        out = duplicates()
        print(json.dumps(out, indent=2, ensure_ascii=False))
        print(f"written: {write_result('generate-duplicates', out)}")


if __name__ == "__main__":
    main()
