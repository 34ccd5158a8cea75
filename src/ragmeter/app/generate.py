"""``ragmeter generate`` as a library function (``ragmeter.generate``): a test set written from a corpus, as records
and, when asked, into a JSONL file of records."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ragmeter.core.files import Outputs, Target, atomic_write_text
from ragmeter.core.records import Record
from ragmeter.engine.evaluation import JudgePlan, plan_calls
from ragmeter.io.native import record_to_dict
from ragmeter.judges import JudgeConfig, open_judge, planning_judge
from ragmeter.judges.cache import is_verdict_cache
from ragmeter.models import Embedder, embedder_backend, load_embedder
from ragmeter.testsets import pipeline
from ragmeter.testsets.chunking import DEFAULT_MAX_CHARS, DEFAULT_OVERLAP
from ragmeter.testsets.corpus import read_chunks
from ragmeter.testsets.duplicates import near_duplicate_cosine
from ragmeter.testsets.pipeline import GenerateReport, plan, writing_calls

__all__ = ["Generated", "generate", "language_embedders", "plan_generation"]


@dataclass(frozen=True)
class Generated:
    """What a run kept (``records``) and wrote: the report, how many chunks it read, the corpus files it skipped
    (with why), and the file (``None`` when none was asked for, or no item was kept: no empty file is written)."""

    records: tuple[Record, ...]
    report: GenerateReport
    chunks: int
    skipped: tuple[tuple[str, str], ...]
    output: Path | None


def _targets(corpus: Path, output: Path | None, config: JudgeConfig, overwrite: bool) -> Target | None:
    """The output file, if any (checked, with the judge's cache, before any work)."""
    outputs = Outputs([corpus], overwrite=overwrite)
    target = outputs.file(output, flag="-o") if output is not None else None
    if config.cache is not None:
        outputs.file(config.cache, flag="--judge-cache", reusable=is_verdict_cache)
    return target


def plan_generation(
    corpus: Path,
    output: Path,
    config: JudgeConfig,
    *,
    n: int,
    kinds: Sequence[str],
    seed: int,
    max_chars: int,
    overlap: int,
    overwrite: bool,
) -> tuple[JudgePlan, str]:
    """The writing calls :func:`generate` would make at most and their tokens, calling nothing (those in the
    cache apart): the plan and the judge's identity. The checks' calls depend on what is written, and are not
    counted."""
    _targets(corpus, output, config, overwrite)
    planned = plan(read_chunks(corpus, max_chars=max_chars, overlap=overlap), n, kinds, seed=seed)
    planner = planning_judge(config)
    try:
        return plan_calls(writing_calls(planned), planner, len(planned)), planner.identity
    finally:
        planner.close()


def generate(
    corpus: str | Path,
    output: str | Path | None = None,
    *,
    judge: JudgeConfig | str = "local",
    n: int = 50,
    types: Sequence[str] = ("factoid", "explanation"),
    seed: int = 0,
    max_chars: int = DEFAULT_MAX_CHARS,
    overlap: int = DEFAULT_OVERLAP,
    embedder: str = "auto",
    overwrite: bool = False,
    on_batch: Callable[[GenerateReport], None] | None = None,
) -> Generated:
    """Up to ``n`` items of ``types`` written from ``corpus`` (a folder of documents, or a chunk file) and checked
    (:func:`ragmeter.testsets.pipeline.generate`), written to ``output`` as JSONL records when it is given.

    ``judge``: a :class:`~ragmeter.judges.JudgeConfig`, or a backend kind (``"local"``: the packaged model) whose
    verdicts are cached beside ``output`` (``OUTPUT.judge-cache.sqlite``; no cache without an output). The output
    and the judge's cache are checked before any work, and no file of the corpus is ever written. ``embedder``:
    the backend that finds the chunks an unanswerable question is checked against and the questions that nearly
    repeat a kept one (``auto``: each language's own), loaded when first needed; ``on_batch``: given the report so
    far after each batch.

    >>> import ragmeter
    >>> done = ragmeter.generate("docs/", "testset.jsonl", n=20, types=["factoid", "unanswerable"])  # doctest: +SKIP
    >>> done.report.why_short, len(done.records)                                                    # doctest: +SKIP
    (None, 20)
    """
    corpus = Path(corpus)
    output = Path(output) if output is not None else None
    config = (
        judge
        if isinstance(judge, JudgeConfig)
        else JudgeConfig(
            kind=judge, cache=output.with_name(output.name + ".judge-cache.sqlite") if output is not None else None
        )
    )
    target = _targets(corpus, output, config, overwrite)
    chunks = read_chunks(corpus, max_chars=max_chars, overlap=overlap)
    embedder_for, duplicate_cosine_for = language_embedders(embedder)
    opened = open_judge(config)
    try:
        records, report = pipeline.generate(
            chunks,
            opened,
            n=n,
            kinds=types,
            seed=seed,
            embedder_for=embedder_for,
            duplicate_cosine_for=duplicate_cosine_for,
            on_batch=on_batch,
        )
    finally:
        opened.close()
    if records and target is not None:
        atomic_write_text(target, "".join(json.dumps(record_to_dict(r), ensure_ascii=False) + "\n" for r in records))
    return Generated(
        tuple(records), report, len(chunks.chunks), chunks.skipped, output if records and target is not None else None
    )


def language_embedders(backend: str = "auto") -> tuple[Callable[[str], Embedder], Callable[[str], float]]:
    """:func:`ragmeter.testsets.pipeline.generate`'s ``embedder_for`` and ``duplicate_cosine_for`` for the embedder
    ``backend`` (``auto``: each language's own): a language's embedder is loaded once, when first needed."""
    return (
        functools.cache(lambda code: load_embedder(backend, code)),
        lambda code: near_duplicate_cosine(embedder_backend(backend, code)),
    )
