"""Does a set ``ragmeter generate`` writes measure what a set people wrote does? And its near-duplicate thresholds.

``duplicates``: each embedder's near-duplicate cosine (:mod:`ragmeter.testsets.duplicates`), the cosine that at most
1 % of pairs of distinct questions people wrote about one passage reach:

- the multilingual embedder on IDK-MRC (Indonesian Wikipedia paragraphs; pairs of distinct questions on one
  paragraph), chosen on ``valid`` and reported on ``test``;
- MiniLM (ONNX) and the hashing embedder on MTRAG-UN (English; pairs of distinct user turns of one conversation),
  chosen on three collections and reported on the fourth, each in turn; the shipped value is chosen on all four.

Reported: each threshold, and on held-out data the share of distinct pairs at or above it (a question that would
be dropped as a repeat of a different one), with its 95 % Wilson interval.

    python -m benchmarks.validity.bench_generate duplicates

Results: ``benchmarks/results/generate-duplicates.json``.

``retrievers``: does a generated set rank retrievers as the set people wrote does? IDK-MRC's test paragraphs (378
Indonesian Wikipedia paragraphs, each a chunk of its own) are the corpus; people's answerable questions have their
paragraph as gold (qrels grade 2); ``ragmeter.generate`` writes ``--n`` factoid and explanation questions from the
same chunk file with the packaged judge (``--cache``, so an interrupted run resumes; seed 0), their qrels being every
paragraph that holds the answer's quotes. Four retrievers rank the corpus for every question: BM25 (``bm25s``, no
stemming or stopwords: none are packaged for Indonesian), the multilingual embedder (Indonesian's own), MiniLM (an
English model, weaker here) and the hashing embedder (word counts, the weak one). Each set's ``recall@5`` and
``ndcg@5`` (ideal: the judged pool, as trec_eval) per retriever, with intervals (``ragmeter.evaluate``), Kendall's τ
between the two sets' rankings of the retrievers, and whether each generated figure falls in the human one's
interval; and pair by pair, each pair of retrievers compared on each set (``ragmeter.compare``: the mean paired
difference with its interval), counting the pairs people's questions tell apart that the generated set tells apart
the same way, leaves undecided or reverses. Also: what the generator asked, kept and dropped (and why), its judge
tokens per kept item (from the verdict cache) and kept items a minute, measured by the run that called the judge for
everything and kept beside the set for the reruns that read its verdicts from the cache.

    python -m benchmarks.validity.bench_generate retrievers --n 100

Results: ``benchmarks/results/generate-retrievers-idk-mrc.json``.

``--corpus mtrag-un``: the same in English, on MTRAG-UN (:func:`mtrag_un_corpus`): the 1,152 reference passages of
its 507 tasks are the corpus, people's 285 answerable questions (each with its conversation's earlier user turns)
have their task's passages as gold, and the generated set is written from the passages.

    python -m benchmarks.validity.bench_generate retrievers --corpus mtrag-un --n 60

Results: ``benchmarks/results/generate-retrievers-mtrag-un.json``.

``overlap``: do generated questions reuse their paragraph's words more than people's, and does leaving out those
that reuse more than people's do (a question's word overlap above the ``PEOPLE_OVERLAP`` quantile of people's
questions on IDK-MRC *valid*, fixed before the test figures were seen) bring the generated set's ranking of the
four retrievers to people's on *test*? The ``retrievers`` set is read again (generated first if absent); each
set's figures as in ``retrievers`` and Kendall's τ with people's ranking, with and without the limit.

    python -m benchmarks.validity.bench_generate overlap --n 100

Results: ``benchmarks/results/generate-overlap-idk-mrc.json``.

``wording``: the prompt round the ``overlap`` part left: does asking for the question in a user's own words
(:data:`OWN_WORDS_RULE`, one rule added to the writing prompt) bring the generated set's figures nearer people's?
Each of :data:`WORDINGS` writes ``--n`` (60) questions from IDK-MRC *valid*'s paragraphs; the one whose four
retrievers' recall@5 and nDCG@5 are nearest people's on valid (the sum of the differences; the packaged wording on a
tie) is chosen, and reported on *test* (100 questions) beside the packaged wording's ``retrievers`` set: each set's
figures, the sum of differences, Kendall's τ and the median word overlap. Each generated set has its own verdict cache
beside it (the packaged test set: ``--cache``), so judge tokens per kept item are its own.

    python -m benchmarks.validity.bench_generate wording

Results: ``benchmarks/results/generate-wording-idk-mrc.json``.

``own_chunk``: a check the generator does not make — does a kept answerable item's own chunk answer its question?
The judge's ``testset_answered`` call (the one an unanswerable item passes against its nearest chunks), asked of
``--n`` (60) answerable and ``--n`` unanswerable questions people wrote on IDK-MRC *valid* (seed 0), each with its
paragraph, and of the ``quality`` sheet's items with their gold chunks: each set's verdicts with intervals; which
verdicts an item would pass with (``answers``, or also ``partly``) chosen on people's valid questions (the share of
answerable ones kept minus the share of unanswerable ones kept); on the sheet, how passing meets its reader's
``question_ok``.

    python -m benchmarks.validity.bench_generate own_chunk

Results: ``benchmarks/results/generate-own-chunk-idk-mrc.json``.

``unanswerable``: does a system decline generated unanswerable questions as often as people's? ``--n`` of
IDK-MRC test's unanswerable questions people wrote (drawn with seed 0), ``--n`` unanswerable questions
``ragmeter.generate`` writes from the same paragraphs (and, as a control, ``--n`` answerable questions people
wrote): a small RAG system answers each — BM25's top 3 paragraphs and the packaged model, told to answer from them
or to say it does not know — and ragmeter's ``abstained`` (the Indonesian IDK patterns) says whether it declined.
Each set's decline rate with its Wilson interval, and the difference generated − people with Newcombe's interval.

    python -m benchmarks.validity.bench_generate unanswerable --n 60

Results: ``benchmarks/results/generate-unanswerable-idk-mrc.json``.

``quality``: is a kept item's reference answer supported by its gold chunks, judged by someone other than the
generator's own checks? ``--n`` (30) of the ``retrievers`` set's kept items, drawn with ``random.Random(0)``, go to
a sheet (``--sheet``, default ``benchmarks/results/generate-quality-idk-mrc.jsonl``): per item its kind, question,
reference answer and gold chunks' texts, and an empty ``supported`` for the annotator to fill: ``yes`` (the gold
chunks state the whole reference), ``partly`` (some of it, or it adds what they do not say), ``no``; ``question_ok``
(a real question the chunks answer: true or false) and ``note``; ``annotator`` says who read it. A sheet without
verdicts is written and the part stops; a filled one (the same items, in order) is counted: each verdict's share
with its 95 % Wilson interval.

    python -m benchmarks.validity.bench_generate quality --n 30

Results: ``benchmarks/results/generate-quality-idk-mrc.json`` (from the filled sheet).
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import RESULTS, share_with_interval, write_result
from benchmarks._indonesian_data import INDONESIAN
from ragmeter.models import load_embedder
from ragmeter.testsets.duplicates import NEAR_DUPLICATE_COSINE

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
        block = vectors[start : start + len(group)]
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
    out["multilingual"] = {
        "data": "IDK-MRC, pairs of distinct questions on one paragraph",
        "chosen_on": "valid",
        "pairs": {"valid": len(valid), "test": len(test)},
        "threshold": chosen,
        "held_out": {"test": _reached(test, chosen)},
    }
    collections = mtrag_un_groups()
    for backend in ("onnx", "hashing"):
        cosines = {name: pair_cosines(groups, backend, "en") for name, groups in collections.items()}
        folds = {}
        for name in sorted(cosines):
            rest = np.concatenate([values for other, values in cosines.items() if other != name])
            at = threshold(rest)
            folds[name] = {"threshold": at, **_reached(cosines[name], at)}
        pooled = np.concatenate(list(cosines.values()))
        out[backend] = {
            "data": "MTRAG-UN, pairs of distinct user turns of one conversation",
            "chosen_on": "three collections, reported on the fourth; shipped: all four",
            "pairs": {name: len(values) for name, values in cosines.items()},
            "threshold": threshold(pooled),
            "held_out": folds,
        }
    out["shipped"] = dict(NEAR_DUPLICATE_COSINE)
    return out


RETRIEVERS = ("bm25", "multilingual", "onnx", "hashing")
WORK = Path.home() / ".cache" / "ragmeter" / "bench-generate"


def idk_mrc_corpus(split: str) -> tuple[Path, list[dict[str, Any]]]:
    """IDK-MRC's ``split`` paragraphs as a chunk file (one chunk each, its own document), and people's answerable
    questions as records with their paragraph as gold."""
    paragraphs = json.loads((INDONESIAN / "idk_mrc" / f"{split}.json").read_text(encoding="utf-8"))
    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / f"idk-mrc-{split}-chunks.jsonl"
    rows = [{"id": f"p{i:03d}", "doc_id": f"p{i:03d}", "text": p["context"]} for i, p in enumerate(paragraphs)]
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    human = [
        {"id": q["id"], "question": q["question"], "qrels": {f"p{i:03d}": 2}}
        for i, p in enumerate(paragraphs)
        for q in p["qas"]
        if not q["is_impossible"]
    ]
    return path, human


def mtrag_un_corpus() -> tuple[Path, list[dict[str, Any]]]:
    """MTRAG-UN's reference passages (those of its 507 tasks, each a chunk and its own document) as a chunk file, and
    people's answerable questions as records with their task's passages as gold (grade 2). A question is the user's
    turns of its conversation joined, the last one the question: most are follow-ups ("what about the other one?")
    that name too little alone for any retriever."""
    tasks = [json.loads(line) for line in MTRAG_UN.read_text(encoding="utf-8").splitlines()]
    passages = {c["document_id"]: c["text"].strip() for task in tasks for c in task["contexts"]}
    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / "mtrag-un-chunks.jsonl"
    rows = [{"id": pid, "doc_id": pid, "text": text} for pid, text in sorted(passages.items())]
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    human = [
        {
            "id": task["task_id"],
            "question": " ".join(turn["text"].strip() for turn in task["input"] if turn["speaker"] == "user"),
            "qrels": {c["document_id"]: 2 for c in task["contexts"]},
        }
        for task in tasks
        if task["answerability"] == ["ANSWERABLE"]
    ]
    return path, human


#: The corpora of ``retrievers``: each one's chunk file and people's answerable questions with their gold.
CORPORA = {"idk-mrc": lambda: idk_mrc_corpus("test"), "mtrag-un": mtrag_un_corpus}


class Ranker:
    """The top 5 chunks of the corpus for a question, by one retriever."""

    def __init__(self, name: str, chunks: list[dict[str, str]]) -> None:
        self.name, self.chunks = name, chunks
        texts = [chunk["text"] for chunk in chunks]
        if name == "bm25":
            import bm25s

            self._tokens = lambda batch: bm25s.tokenize(batch, stopwords=[], show_progress=False)
            self._bm25 = bm25s.BM25()
            self._bm25.index(self._tokens(texts), show_progress=False)
        else:
            self._embedder = load_embedder(name, "id")
            self._matrix = np.asarray(self._embedder.encode(texts), dtype=np.float64)

    def top(self, questions: list[str], k: int = 5) -> list[list[dict[str, str]]]:
        if self.name == "bm25":
            found, _ = self._bm25.retrieve(self._tokens(questions), k=k, show_progress=False)
            return [[self.chunks[int(i)] for i in row] for row in found]
        scores = np.asarray(self._embedder.encode(questions), dtype=np.float64) @ self._matrix.T
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        return [[self.chunks[int(i)] for i in row] for row in order]


FIGURES = ("recall@5", "ndcg@5")


def evaluated(rows: list[dict[str, Any]], ranker: Ranker) -> Any:
    """A set's ``ragmeter.evaluate`` result of recall@5 and ndcg@5 (pool ideal) by one retriever."""
    from ragmeter import Settings, evaluate

    tops = ranker.top([row["question"] for row in rows])
    records = [
        {
            "id": row["id"],
            "question": row["question"],
            "answer": "",
            "qrels": row["qrels"],
            "contexts": [{"doc_id": c["id"], "text": c["text"]} for c in top],
        }
        for row, top in zip(rows, tops, strict=True)
    ]
    return evaluate(records, metrics=list(FIGURES), progress=False, settings=Settings(ndcg_ideal="pool", seed=0))


def figures_of(result: Any) -> dict[str, dict[str, float]]:
    """Each figure of an :func:`evaluated` result with its interval."""
    return {
        name: {
            "value": result.summary(name).value,
            "ci_low": result.summary(name).ci_low,
            "ci_high": result.summary(name).ci_high,
            "n": result.summary(name).n,
        }
        for name in FIGURES
    }


def scored(rows: list[dict[str, Any]], ranker: Ranker) -> dict[str, dict[str, float]]:
    """Each set's recall@5 and ndcg@5 (pool ideal) by one retriever, with their intervals."""
    return figures_of(evaluated(rows, ranker))


def pairwise(results: dict[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
    """Every pair of retrievers on one set, paired over its questions (``ragmeter.compare``): per figure, the mean
    difference (second − first) with its 95 % interval and the sign-flip test's p."""
    from ragmeter import compare

    out = {}
    for first, second in itertools.combinations(RETRIEVERS, 2):
        (comparison,) = compare(results[first], results[second], names=[first, second])
        out[f"{second} - {first}"] = {
            row.metric: {"difference": row.difference, "ci_low": row.ci_low, "ci_high": row.ci_high, "p": row.p_value}
            for row in comparison.overall
        }
    return out


def _sign(row: dict[str, float]) -> int:
    """+1 or −1 where a paired difference's interval lies above or below 0, else 0."""
    return 1 if row["ci_low"] > 0 else -1 if row["ci_high"] < 0 else 0


def pair_agreement(human: dict[str, Any], generated: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Per figure, over the pairs of retrievers: those people's questions tell apart (interval off 0), and of them
    those the generated set tells apart the same way, leaves undecided, or reverses; and the pairs people's questions
    leave undecided that the generated set tells apart."""
    out = {}
    for metric in FIGURES:
        signs = [(_sign(human[pair][metric]), _sign(generated[pair][metric])) for pair in human]
        out[metric] = {
            "pairs": len(signs),
            "people_tell_apart": sum(h != 0 for h, _ in signs),
            "generated_same": sum(h != 0 and g == h for h, g in signs),
            "generated_undecided": sum(h != 0 and g == 0 for h, g in signs),
            "generated_reversed": sum(h != 0 and g == -h for h, g in signs),
            "generated_only": sum(h == 0 and g != 0 for h, g in signs),
        }
    return out


def _gap(figures: dict[str, dict[str, dict[str, dict[str, float]]]], label: str) -> float:
    """How far the ``label`` set's figures are from people's: the sum over the retrievers of |generated − people|
    of recall@5 and of nDCG@5."""
    return sum(
        abs(figures[r][label][metric]["value"] - figures[r]["human"][metric]["value"])
        for r in RETRIEVERS
        for metric in FIGURES
    )


def _kendall(figures: dict[str, dict[str, dict[str, dict[str, float]]]], label: str, metric: str) -> Any:
    """Kendall's τ (scipy's result: statistic and p) between people's ranking of the retrievers by ``metric`` and the
    ``label`` set's."""
    from scipy.stats import kendalltau

    return kendalltau(
        [figures[r]["human"][metric]["value"] for r in RETRIEVERS],
        [figures[r][label][metric]["value"] for r in RETRIEVERS],
    )


def _taus(figures: dict[str, dict[str, dict[str, dict[str, float]]]], label: str) -> dict[str, float]:
    """Kendall's τ between people's ranking of the retrievers and the ``label`` set's, per figure."""
    return {metric: float(_kendall(figures, label, metric).statistic) for metric in FIGURES}


#: The writing prompt's wordings of the prompt round (``wording``): ``packaged``, the instructions as shipped, and
#: ``own_words``, which adds one rule asking for the question in the words a user would use rather than the chunk's.
WORDINGS = ("packaged", "own_words")
OWN_WORDS_RULE = (
    "Ask the question as a user who has not read the chunks would ask it, in your own words: do not copy a phrase "
    "of the chunks into the question, and name what it asks about as a user would."
)


@contextmanager
def question_wording(wording: str) -> Iterator[None]:
    """The generator's writing prompts under ``wording`` (one of :data:`WORDINGS`) while the block runs."""
    if wording == "packaged":
        yield
        return
    from ragmeter.judges import testset_prompts
    from ragmeter.judges.prompts import instructions

    shipped = instructions("testset_question")
    varied = shipped.replace("\nRules: the question", f"\nRules: {OWN_WORDS_RULE} The question", 1)
    if varied == shipped:
        raise RuntimeError("the writing prompt's rules do not start as they did: add the own-words rule anew")
    saved = dict(testset_prompts.QUESTION_PROMPTS)
    testset_prompts.QUESTION_PROMPTS.update({k: replace(p, instructions=varied) for k, p in saved.items()})
    try:
        yield
    finally:
        testset_prompts.QUESTION_PROMPTS.update(saved)


def generated_path(chunks: Path, n: int, wording: str = "packaged") -> Path:
    """Where :func:`generated_set` writes the set of ``n`` questions from ``chunks`` under ``wording``."""
    variant = "" if wording == "packaged" else f"{wording}-"
    return WORK / f"{chunks.stem.removesuffix('-chunks')}-generated-{variant}{n}.jsonl"


def generated_records(chunks: Path, n: int, cache: Path, wording: str = "packaged") -> list[dict[str, Any]]:
    """The records of the generated set of ``n`` questions from ``chunks``, as written (generated first if absent)."""
    path = generated_path(chunks, n, wording)
    if not path.exists():
        generated_set(chunks, n, cache, wording)
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _kept_per_minute(output: Path, measured: float | None) -> float | None:
    """Kept items a minute of the run that wrote ``output`` calling the judge for everything: ``measured`` by this
    run, kept beside the set (``….speed.json``), or read from there when this run read verdicts from the cache."""
    speed = output.with_suffix(".speed.json")
    if measured is not None:
        speed.write_text(json.dumps({"kept_per_minute": measured}), encoding="utf-8")
        return measured
    return json.loads(speed.read_text(encoding="utf-8"))["kept_per_minute"] if speed.exists() else None


def generated_set(
    chunks: Path, n: int, cache: Path, wording: str = "packaged"
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The generated set (written once, read again after), and what its run asked, kept, dropped and cost. Its
    verdicts go to ``cache``, which holds no other set's (judge tokens per kept item are counted from it)."""
    import sqlite3

    from ragmeter import generate
    from ragmeter.judges import JudgeConfig

    output = generated_path(chunks, n, wording)
    fresh = not cache.exists()
    started = time.perf_counter()
    with question_wording(wording):
        done = generate(
            chunks,
            output,
            judge=JudgeConfig(kind="local", cache=cache),
            n=n,
            types=("factoid", "explanation"),
            seed=0,
            overwrite=True,
        )
    minutes = (time.perf_counter() - started) / 60
    with sqlite3.connect(cache) as db:
        tokens = db.execute("SELECT SUM(prompt_tokens + completion_tokens) FROM verdicts").fetchone()[0] or 0
    kept = len(done.records)
    report = done.report
    run = {
        "asked": dict(report.asked),
        "kept": dict(report.kept),
        "dropped": {f"{kind}: {reason}": count for (kind, reason), count in sorted(report.dropped.items())},
        "why_short": report.why_short,
        "signature": report.signature,
        "judge_tokens_per_kept_item": tokens / kept if kept else None,
        "kept_per_minute": _kept_per_minute(output, kept / minutes if fresh and kept else None),
    }
    rows = [{"id": r.id, "question": r.question, "qrels": dict(r.qrels or {})} for r in done.records]
    return rows, run


def retrievers(n: int, cache: Path, corpus: str = "idk-mrc") -> dict[str, Any]:
    chunk_file, human = CORPORA[corpus]()
    chunks = [json.loads(line) for line in chunk_file.read_text(encoding="utf-8").splitlines()]
    generated, run = generated_set(chunk_file, n, cache)
    results = {
        name: {"human": evaluated(human, ranker), "generated": evaluated(generated, ranker)}
        for name in RETRIEVERS
        for ranker in [Ranker(name, chunks)]
    }
    figures = {name: {label: figures_of(r) for label, r in by_set.items()} for name, by_set in results.items()}
    pairs = {label: pairwise({name: results[name][label] for name in RETRIEVERS}) for label in ("human", "generated")}
    agreement = {}
    for metric in FIGURES:
        tau = _kendall(figures, "generated", metric)
        inside = {
            name: figures[name]["human"][metric]["ci_low"]
            <= figures[name]["generated"][metric]["value"]
            <= figures[name]["human"][metric]["ci_high"]
            for name in RETRIEVERS
        }
        agreement[metric] = {
            "kendall_tau": float(tau.statistic),
            "p": float(tau.pvalue),
            "order_human": sorted(RETRIEVERS, key=lambda r: -figures[r]["human"][metric]["value"]),
            "order_generated": sorted(RETRIEVERS, key=lambda r: -figures[r]["generated"][metric]["value"]),
            "generated_inside_human_interval": inside,
        }
    return {
        "corpus": f"IDK-MRC test, {len(chunks)} paragraphs"
        if corpus == "idk-mrc"
        else f"MTRAG-UN's reference passages, {len(chunks)}",
        "human_questions": len(human),
        "generated_questions": len(generated),
        "generator": run,
        "figures": figures,
        "agreement": agreement,
        "pairs": pairs,
        "pair_agreement": pair_agreement(pairs["human"], pairs["generated"]),
    }


#: The share of people's questions (IDK-MRC valid) whose word overlap with their paragraph a kept generated
#: question may reach, set before the test figures were seen.
PEOPLE_OVERLAP = 0.95


def word_overlap(question: str, passage: str) -> float:
    """The share of ``question``'s words (letters and digits, case aside) that are words of ``passage``."""
    words = re.findall(r"\w+", question.casefold())
    held = set(re.findall(r"\w+", passage.casefold()))
    return sum(word in held for word in words) / len(words) if words else 0.0


def _overlaps(rows: list[dict[str, Any]], texts: dict[str, str]) -> list[float | None]:
    """Each row's question's word overlap with its best-graded gold chunk (None without qrels)."""
    return [
        word_overlap(row["question"], texts[max(row["qrels"], key=row["qrels"].get)]) if row["qrels"] else None
        for row in rows
    ]


def overlap(n: int, cache: Path) -> dict[str, Any]:
    """Do generated questions copy their paragraph's words more than people's, and does leaving out those that copy
    more than people's do bring the generated set's ranking of retrievers to people's? The limit is the
    ``PEOPLE_OVERLAP`` quantile of people's questions' overlap on IDK-MRC *valid*; the figures are on *test*."""

    valid_file, valid_human = idk_mrc_corpus("valid")
    valid_texts = {
        row["id"]: row["text"] for row in map(json.loads, valid_file.read_text(encoding="utf-8").splitlines())
    }
    limit = float(np.quantile([v for v in _overlaps(valid_human, valid_texts) if v is not None], PEOPLE_OVERLAP))
    chunk_file, human = idk_mrc_corpus("test")
    chunks = [json.loads(line) for line in chunk_file.read_text(encoding="utf-8").splitlines()]
    texts = {chunk["id"]: chunk["text"] for chunk in chunks}
    generated = generated_records(chunk_file, n, cache)
    rows = [{"id": r["id"], "question": r["question"], "qrels": r.get("qrels") or {}} for r in generated]
    generated_overlap = _overlaps(rows, texts)
    kept = [row for row, o in zip(rows, generated_overlap, strict=True) if o is not None and o <= limit]
    sets = {"human": human, "generated": rows, "generated_within_limit": kept}
    figures = {
        name: {label: scored(rows_, ranker) for label, rows_ in sets.items()}
        for name in RETRIEVERS
        for ranker in [Ranker(name, chunks)]
    }
    quantiles = (0.1, 0.25, 0.5, 0.75, 0.9)
    spread = {"people, test": _overlaps(human, texts), "generated, test": generated_overlap}
    return {
        "limit": {"quantile_of_people_valid": PEOPLE_OVERLAP, "overlap": round(limit, 4)},
        "overlap_quantiles": {
            label: dict(
                zip(
                    map(str, quantiles),
                    np.quantile([v for v in values if v is not None], quantiles).round(3),
                    strict=True,
                )
            )
            for label, values in spread.items()
        },
        "questions": {label: len(rows_) for label, rows_ in sets.items()},
        "figures": figures,
        "kendall_tau": {
            metric: {label: _taus(figures, label)[metric] for label in ("generated", "generated_within_limit")}
            for metric in FIGURES
        },
    }


def _round_split(split: str, sets: dict[str, tuple[int, Path | None]]) -> dict[str, Any]:
    """One split of the prompt round: each wording's set (``sets``: wording → (n, its verdict cache; ``None``: a
    cache of its own beside the set)) and people's answerable questions scored by the four retrievers, each set's gap
    and τ, and the questions' word overlap."""
    chunk_file, human = idk_mrc_corpus(split)
    chunks = [json.loads(line) for line in chunk_file.read_text(encoding="utf-8").splitlines()]
    texts = {chunk["id"]: chunk["text"] for chunk in chunks}
    generated, runs = {}, {}
    for wording, (n, set_cache) in sets.items():
        set_cache = set_cache or generated_path(chunk_file, n, wording).with_suffix(".judge.sqlite")
        generated[wording], runs[wording] = generated_set(chunk_file, n, set_cache, wording)
    rankers = [Ranker(name, chunks) for name in RETRIEVERS]
    figures = {
        ranker.name: {"human": scored(human, ranker)} | {w: scored(rows, ranker) for w, rows in generated.items()}
        for ranker in rankers
    }
    median = {
        label: float(np.median([v for v in _overlaps(rows, texts) if v is not None]))
        for label, rows in {"human": human, **generated}.items()
    }
    return {
        "corpus": f"IDK-MRC {split}, {len(chunks)} paragraphs; people's answerable questions: {len(human)}",
        "generator": runs,
        "figures": figures,
        "gap": {w: _gap(figures, w) for w in generated},
        "kendall_tau": {w: _taus(figures, w) for w in generated},
        "median_word_overlap": median,
    }


def wording(n: int, cache: Path) -> dict[str, Any]:
    """The question-wording prompt round: each of :data:`WORDINGS` writes ``n`` questions from IDK-MRC *valid*; the
    one whose figures are nearest people's (:func:`_gap`; the packaged wording on a tie) is chosen, and reported on
    *test* beside the packaged wording's ``retrievers`` set (``--cache``)."""
    valid = _round_split("valid", dict.fromkeys(WORDINGS, (n, None)))
    chosen = min(WORDINGS, key=lambda w: valid["gap"][w])
    test_sets: dict[str, tuple[int, Path | None]] = {"packaged": (100, cache)}
    if chosen != "packaged":
        test_sets[chosen] = (100, None)
    return {
        "wordings": {"packaged": "the writing prompt as shipped", "own_words": OWN_WORDS_RULE},
        "rule": "chosen on valid: the smallest sum over the four retrievers of |generated − people| of recall@5 and "
        "nDCG@5 (the packaged wording on a tie); reported on test",
        "chosen": chosen,
        "valid": valid,
        "test": _round_split("test", test_sets),
    }


QUALITY_SHEET = RESULTS / "generate-quality-idk-mrc.jsonl"
SUPPORT_VERDICTS = ("yes", "partly", "no")


def quality(n: int, cache: Path, sheet: Path) -> dict[str, Any] | None:
    """The quality sheet of ``n`` kept items (module docstring): written when absent, counted when filled; None
    when it was written for an annotator."""
    import random

    chunk_file, _ = idk_mrc_corpus("test")
    texts = {row["id"]: row["text"] for row in map(json.loads, chunk_file.read_text(encoding="utf-8").splitlines())}
    kept = generated_records(chunk_file, 100, cache)
    sample = random.Random(0).sample(kept, n)
    if not sheet.exists():
        rows = [
            {
                "id": record["id"],
                "kind": record["metadata"]["question_type"],
                "question": record["question"],
                "reference": record["references"][0],
                "gold": {chunk: texts[chunk] for chunk in record["qrels"]},
                "supported": None,
                "question_ok": None,
                "note": "",
                "annotator": "",
            }
            for record in sample
        ]
        sheet.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        print(f"written for an annotator: {sheet} ({n} items); fill 'supported', 'question_ok' and 'annotator'")
        return None
    rows = [json.loads(line) for line in sheet.read_text(encoding="utf-8").splitlines()]
    if [r["id"] for r in rows] != [r["id"] for r in sample]:
        raise SystemExit(f"{sheet} holds other items than the seed-0 sample of {n}: write it again (remove it)")
    unfilled = [
        r["id"] for r in rows if r["supported"] not in SUPPORT_VERDICTS or not isinstance(r["question_ok"], bool)
    ]
    if unfilled:
        raise SystemExit(f"{sheet}: {len(unfilled)} items without a verdict, the first {unfilled[0]}")
    return {
        "sample": f"{n} of the {len(kept)} kept items of the retrievers set, random.Random(0).sample",
        "annotators": sorted({r["annotator"] for r in rows}),
        "supported": {v: share_with_interval(sum(r["supported"] == v for r in rows), n) for v in SUPPORT_VERDICTS},
        "question_ok": share_with_interval(sum(r["question_ok"] for r in rows), n),
        "by_kind": {
            kind: {
                **{v: sum(r["supported"] == v for r in rows if r["kind"] == kind) for v in SUPPORT_VERDICTS},
                "question_ok": sum(r["question_ok"] for r in rows if r["kind"] == kind),
            }
            for kind in sorted({r["kind"] for r in rows})
        },
        "notes": {r["id"]: r["note"] for r in rows if r["note"]},
    }


#: The verdicts of the own-chunk check an item may pass with (``own_chunk``): ``answers`` alone, or also ``partly``.
PASSING = {"answers": ("answers",), "answers or partly": ("answers", "partly")}


def own_chunk(n: int) -> dict[str, Any]:
    """Does a question's own paragraph answer it, by the judge's ``testset_answered`` check (the one an unanswerable
    item passes against its nearest chunks)? Asked of ``n`` answerable and ``n`` unanswerable questions people wrote
    on IDK-MRC *valid* (seed 0), each with its paragraph — which verdicts to pass with (:data:`PASSING`) is chosen
    there, by the share of answerable kept minus the share of unanswerable kept — and of the quality sheet's kept
    items with their gold chunks, reported beside its reader's ``question_ok``."""
    import random

    from ragmeter.judges import JudgeConfig, open_judge
    from ragmeter.judges.engine import JudgeCall
    from ragmeter.judges.testset_prompts import ANSWERED, ANSWERED_VERDICTS, answered_request

    paragraphs = json.loads((INDONESIAN / "idk_mrc" / "valid.json").read_text(encoding="utf-8"))
    by_kind: dict[bool, list[tuple[str, list[str]]]] = {True: [], False: []}
    for paragraph in paragraphs:
        for qa in paragraph["qas"]:
            by_kind[not qa["is_impossible"]].append((qa["question"], [paragraph["context"]]))
    rng = random.Random(0)
    sheet = [json.loads(line) for line in QUALITY_SHEET.read_text(encoding="utf-8").splitlines()]
    asked = {
        "people, answerable": rng.sample(by_kind[True], n),
        "people, unanswerable": rng.sample(by_kind[False], n),
        "generated, quality sheet": [(row["question"], list(row["gold"].values())) for row in sheet],
    }
    verdicts: dict[str, list[str | None]] = {}
    with open_judge(JudgeConfig(kind="local", cache=WORK / "idk-mrc-own-chunk.judge.sqlite")) as judge:
        for label, rows in asked.items():
            calls = [JudgeCall(ANSWERED, answered_request(q, chunks), len(chunks)) for q, chunks in rows]
            verdicts[label] = [o.verdict["verdict"] if o.verdict else None for o in judge.run(calls)]
    shares = {
        label: {
            str(v or "judge failed"): share_with_interval(found.count(v), len(found))
            for v in (*ANSWERED_VERDICTS, None)
        }
        for label, found in verdicts.items()
    }

    def kept(label: str, passing: tuple[str, ...]) -> float:
        return sum(v in passing for v in verdicts[label]) / len(verdicts[label])

    margin = {
        name: kept("people, answerable", passing) - kept("people, unanswerable", passing)
        for name, passing in PASSING.items()
    }
    chosen = max(PASSING, key=lambda name: margin[name])
    passed = [v in PASSING[chosen] for v in verdicts["generated, quality sheet"]]
    return {
        "questions": {label: len(rows) for label, rows in asked.items()},
        "verdicts": shares,
        "chosen_on_people_valid": {"passing": chosen, "answerable_minus_unanswerable_kept": margin},
        "quality_sheet": {
            f"question_ok={ok}, passes={ok_pass}": sum(
                row["question_ok"] == ok and p == ok_pass for row, p in zip(sheet, passed, strict=True)
            )
            for ok in (True, False)
            for ok_pass in (True, False)
        },
        "quality_sheet_verdicts": {
            row["id"]: v for row, v in zip(sheet, verdicts["generated, quality sheet"], strict=True)
        },
    }


SYSTEM_PROMPT = (
    "Jawab pertanyaan hanya dari bagian teks yang diberikan, dalam satu atau dua kalimat bahasa "
    "Indonesia. Jika bagian teks tidak menjawab pertanyaan, katakan bahwa Anda tidak tahu."
)


def _answers(questions: list[str], ranker: Ranker, answers_cache: Path) -> list[str]:
    """The small RAG system's answer to each question (BM25's top 3 and the packaged model at temperature 0),
    kept in ``answers_cache`` (JSON by question) so that a rerun asks only what it has not."""
    import openai

    from ragmeter.judges import LocalServer

    done: dict[str, str] = json.loads(answers_cache.read_text(encoding="utf-8")) if answers_cache.exists() else {}
    missing = [q for q in dict.fromkeys(questions) if q not in done]
    if missing:
        with LocalServer() as server:
            assert server.base_url is not None
            client = openai.OpenAI(base_url=server.base_url, api_key="none")
            for question, top in zip(missing, ranker.top(missing, k=3), strict=True):
                passages = "\n\n".join(chunk["text"] for chunk in top)
                reply = client.chat.completions.create(
                    model=server.model_id,
                    temperature=0.0,
                    seed=0,
                    max_tokens=150,
                    messages=[
                        {"role": "system", "content": SYSTEM_PROMPT},
                        {"role": "user", "content": f"Teks:\n{passages}\n\nPertanyaan: {question}"},
                    ],
                )
                done[question] = (reply.choices[0].message.content or "").strip()
                answers_cache.write_text(json.dumps(done, ensure_ascii=False, indent=0), encoding="utf-8")
    return [done[q] for q in questions]


def _newcombe(a: int, n_a: int, b: int, n_b: int) -> tuple[float, float, float]:
    """b/n_b − a/n_a with Newcombe's hybrid score interval (method 10) from the two Wilson intervals."""
    from ragmeter.stats.intervals import wilson_interval

    p_a, p_b = a / n_a, b / n_b
    low_a, high_a = wilson_interval(a, n_a)
    low_b, high_b = wilson_interval(b, n_b)
    difference = p_b - p_a
    return (
        difference,
        difference - float(np.hypot(p_b - low_b, high_a - p_a)),
        difference + float(np.hypot(high_b - p_b, p_a - low_a)),
    )


def unanswerable(n: int, cache: Path) -> dict[str, Any]:
    import random

    from ragmeter import generate
    from ragmeter.judges import JudgeConfig
    from ragmeter.metrics.citation import abstained
    from ragmeter.text.languages import LANGUAGES

    chunk_file, _ = idk_mrc_corpus("test")
    chunks = [json.loads(line) for line in chunk_file.read_text(encoding="utf-8").splitlines()]
    paragraphs = json.loads((INDONESIAN / "idk_mrc" / "test.json").read_text(encoding="utf-8"))
    rng = random.Random(0)
    people = {
        kind: rng.sample([q["question"] for p in paragraphs for q in p["qas"] if q["is_impossible"] == impossible], n)
        for kind, impossible in (("unanswerable", True), ("answerable", False))
    }
    written = generate(
        chunk_file,
        WORK / f"idk-mrc-test-unanswerable-{n}.jsonl",
        judge=JudgeConfig(kind="local", cache=cache),
        n=n,
        types=("unanswerable",),
        seed=0,
        overwrite=True,
    )
    sets = {
        "people, unanswerable": people["unanswerable"],
        "generated, unanswerable": [r.question for r in written.records],
        "people, answerable (control)": people["answerable"],
    }
    ranker = Ranker("bm25", chunks)
    answers_cache = WORK / "idk-mrc-test-answers.json"
    out: dict[str, Any] = {
        "system": "BM25 top 3 of IDK-MRC test's 378 paragraphs, the packaged model, temperature 0",
        "prompt": SYSTEM_PROMPT,
        "generator": {
            "asked": dict(written.report.asked),
            "kept": dict(written.report.kept),
            "dropped": {f"{kind}: {why}": count for (kind, why), count in sorted(written.report.dropped.items())},
        },
        "declined": {},
    }
    counts = {}
    for name, questions in sets.items():
        answers = _answers(questions, ranker, answers_cache)
        declined = sum(abstained(a, language=LANGUAGES["id"]) == 1.0 for a in answers)
        counts[name] = (declined, len(answers))
        out["declined"][name] = {
            **share_with_interval(declined, len(answers)),
            "examples": [{"question": q, "answer": a} for q, a in zip(questions[:3], answers[:3], strict=True)],
        }
    difference, low, high = _newcombe(*counts["people, unanswerable"], *counts["generated, unanswerable"])
    out["generated_minus_people"] = {"difference": difference, "ci_low": low, "ci_high": high}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "part", choices=["duplicates", "retrievers", "overlap", "wording", "unanswerable", "quality", "own_chunk"]
    )
    parser.add_argument(
        "--n",
        type=int,
        help="retrievers, overlap: questions to generate (100); wording: per wording on valid (60); unanswerable: "
        "per set (60); quality: items (30); own_chunk: people's questions of each kind (60)",
    )
    parser.add_argument("--sheet", type=Path, default=QUALITY_SHEET, help="quality: the annotators' sheet")
    parser.add_argument(
        "--corpus", choices=sorted(CORPORA), default="idk-mrc", help="retrievers: the corpus and people's questions"
    )
    parser.add_argument(
        "--cache",
        type=Path,
        help="the packaged judge's verdict cache of the test set written with the packaged wording (retrievers, "
        "overlap, quality, wording) and of unanswerable's (a rerun reads it again); default: "
        f"{WORK}/CORPUS-judge.sqlite",
    )
    args = parser.parse_args()
    corpus = args.corpus if args.part == "retrievers" else "idk-mrc"
    args.cache = args.cache or WORK / f"{corpus}-judge.sqlite"
    if args.part == "duplicates":
        out, name = duplicates(), "generate-duplicates"
    elif args.part == "retrievers":
        out, name = retrievers(args.n or 100, args.cache, corpus), f"generate-retrievers-{corpus}"
    elif args.part == "overlap":
        out, name = overlap(args.n or 100, args.cache), "generate-overlap-idk-mrc"
    elif args.part == "wording":
        out, name = wording(args.n or 60, args.cache), "generate-wording-idk-mrc"
    elif args.part == "unanswerable":
        out, name = unanswerable(args.n or 60, args.cache), "generate-unanswerable-idk-mrc"
    elif args.part == "own_chunk":
        out, name = own_chunk(args.n or 60), "generate-own-chunk-idk-mrc"
    else:
        found = quality(args.n or 30, args.cache, args.sheet)
        if found is None:
            return
        out, name = found, "generate-quality-idk-mrc"
    print(json.dumps(out, indent=2, ensure_ascii=False))
    print(f"written: {write_result(name, out)}")


if __name__ == "__main__":
    main()
