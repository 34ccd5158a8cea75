"""``ragmeter labels`` as library functions: annotation templates, the LLM annotator's file, and merging people's
filled templates into labelled records with an agreement report.

Each function checks its outputs before any work, then the records (``checked`` is told of the check and says
whether to go on; the functions return ``None`` when it says stop) and returns what the command prints.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.core.errors import ConfigError
from ragmeter.core.files import Outputs, Target, atomic_write_text
from ragmeter.core.records import Record
from ragmeter.engine.evaluation import JudgePlan, plan_calls
from ragmeter.human.annotation_files import check_template_path, read_annotations, write_rows, write_template
from ragmeter.human.annotator import Annotation, annotate, planned_calls
from ragmeter.human.merge import agreement_by_label, agreement_path, write_agreement, write_merged
from ragmeter.io.readers import FileCheck, InputFile
from ragmeter.judges import JudgeConfig, JudgeUsage, open_judge, planning_judge
from ragmeter.judges.cache import is_verdict_cache
from ragmeter.stats.inter_annotator import LabelAgreement

__all__ = [
    "Annotated",
    "Merged",
    "RecordSource",
    "annotate_file",
    "merge_labels",
    "plan_annotation",
    "write_label_template",
]


@dataclass(frozen=True)
class RecordSource:
    """Where records come from: a file, its format and column map, and what to do with bad records."""

    path: Path
    input_format: str = "auto"
    column_map: Mapping[str, str] | None = None
    max_errors: int = 50
    options: Mapping[str, str] | None = None  # the format's reader options, as ``--otel-retrieval`` gives them

    def read(self, checked: Callable[[FileCheck], bool]) -> list[Record] | None:
        """The valid records, or ``None`` when ``checked`` stops at the check."""
        source = InputFile(self.path, self.input_format, self.column_map or {}, self.options or {})
        if not checked(source.check(self.max_errors)):
            return None
        return list(source.records(skip_invalid=True))


def write_label_template(
    source: RecordSource,
    output: Path,
    labels: Sequence[str],
    *,
    annotator: str | None,
    overwrite: bool,
    checked: Callable[[FileCheck], bool],
    sample: int | None = None,
    seed: int = 0,
) -> int | None:
    """A template for people to fill in: one row per record and label; the number of rows written. ``sample``:
    only that many records, drawn uniformly at random with ``seed`` (all of them when the file has fewer),
    in the file's order."""
    if sample is not None and sample < 1:
        raise ConfigError(f"--sample {sample}: give the number of records to draw, 1 or more")
    check_template_path(output)
    target = Outputs([source.path], overwrite=overwrite).file(output, flag="-o")
    records = source.read(checked)
    if records is None:
        return None
    if sample is not None:
        records = list(records)
        chosen = sorted(random.Random(seed).sample(range(len(records)), min(sample, len(records))))
        records = [records[i] for i in chosen]
    return write_template(records, target, labels, annotator=annotator)


@dataclass(frozen=True)
class Annotated:
    """The LLM annotator's work: the rows written (0: the file was not written), the annotator's name, the
    failed calls and where they are, and what the judge used."""

    rows: int
    annotation: Annotation
    failures: Path
    judge: str
    usage: JudgeUsage


def _annotation_outputs(
    source: RecordSource, output: Path, config: JudgeConfig, inputs: Sequence[Path | None], overwrite: bool
) -> tuple[Target, Target]:
    """The annotator's file and its failures file, checked with the judge's cache before any work."""
    check_template_path(output)
    outputs = Outputs([source.path, *inputs], overwrite=overwrite)
    target = outputs.file(output, flag="-o")
    failures = outputs.file(output.with_name(output.name + ".failures.jsonl"), flag="-o (its failures)")
    if config.cache is not None:
        outputs.file(config.cache, flag="--judge-cache", reusable=is_verdict_cache)
    return target, failures


def plan_annotation(
    source: RecordSource,
    output: Path,
    labels: Sequence[str],
    config: JudgeConfig,
    *,
    inputs: Sequence[Path | None] = (),
    overwrite: bool,
    checked: Callable[[FileCheck], bool],
) -> tuple[JudgePlan, str] | None:
    """The judge calls :func:`annotate_file` would make and their tokens, without calling the judge: the plan
    and the judge's identity."""
    _annotation_outputs(source, output, config, inputs, overwrite)
    records = source.read(checked)
    if records is None:
        return None
    planner = planning_judge(config)
    try:
        return plan_calls(planned_calls(records, labels), planner, len(records)), planner.identity
    finally:
        planner.close()


def annotate_file(
    source: RecordSource,
    output: Path,
    labels: Sequence[str],
    config: JudgeConfig,
    *,
    inputs: Sequence[Path | None] = (),
    overwrite: bool,
    checked: Callable[[FileCheck], bool],
) -> Annotated | None:
    """Label ``source``'s records with the judge into ``output`` (a filled template), its failed calls in
    ``output.failures.jsonl``; ``output`` is not written when every call failed."""
    target, failures = _annotation_outputs(source, output, config, inputs, overwrite)
    records = source.read(checked)
    if records is None:
        return None
    judge = open_judge(config)
    try:
        annotation = annotate(records, judge, labels=labels)
        identity, usage = judge.identity, judge.usage
    finally:
        judge.close()
    atomic_write_text(failures, "".join(json.dumps(f, ensure_ascii=False) + "\n" for f in annotation.failures))
    rows = write_rows(annotation.rows, target, labels) if annotation.rows else 0
    return Annotated(rows, annotation, failures.path, identity, usage)


@dataclass(frozen=True)
class Merged:
    """Merged labels: how many records, the annotators, the problems in their files (``skipped``: how many of
    them were left out), agreement per label, and the report as written."""

    n_records: int
    annotators: tuple[str, ...]
    problems: tuple[str, ...]
    agreement: tuple[LabelAgreement, ...]
    report: dict[str, Any]
    report_path: Path


def merge_labels(
    source: RecordSource,
    filled: Sequence[Path],
    output: Path,
    *,
    ties: str,
    skip_invalid: bool,
    overwrite: bool,
    checked: Callable[[FileCheck], bool],
) -> Merged | None:
    """Merge people's filled templates into ``output`` (the records with majority labels) and write the
    agreement report beside it. With problems in the files and not ``skip_invalid``, nothing is written and
    the problems are returned (``report_path`` empty)."""
    outputs = Outputs([source.path, *filled], overwrite=overwrite)
    merged = outputs.file(output, flag="-o")
    agreement_file = outputs.file(agreement_path(output), flag="-o (its agreement report)")
    records = source.read(checked)
    if records is None:
        return None
    read = read_annotations(filled, records)
    problems = tuple(str(error) for error in read.errors)
    if problems and not skip_invalid:
        return Merged(len(records), tuple(sorted(read.annotators)), problems, (), {}, Path())
    if not read.votes:
        raise ConfigError("the annotation files hold no label to merge: fill in the templates and save them")
    write_merged(records, read.votes, merged, ties=ties)
    agreement = tuple(agreement_by_label(read.votes))
    report = {
        "records": str(source.path),
        "filled": [str(p) for p in filled],
        "output": str(output),
        "annotators": sorted(read.annotators),
        "ties": ties,
        "problems_skipped": len(problems),
        "agreement": [a.to_dict() for a in agreement],
    }
    return Merged(
        len(records),
        tuple(sorted(read.annotators)),
        problems,
        agreement,
        report,
        write_agreement(agreement_file, report),
    )
