"""``ragmeter mtrag`` as library functions: run one step of MT-RAG's pipeline on a file and write its summary.

:func:`prepare_step` checks every output before any work (the output, its unfinished part and summary, the
judges' cache); :meth:`StepJob.run` opens the judges, runs the step (going on from an unfinished part left by
an interrupted run with the same step and settings) and writes ``OUT.summary.json``. :func:`plan_step` counts
the judge calls a step would make, making none. Errors name values; the command adds its option names through
``labels``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.core.errors import ConfigError
from ragmeter.core.files import Outputs, Target
from ragmeter.core.settings import Settings
from ragmeter.engine.evaluation import JudgePlan, plan_judging
from ragmeter.io.readers import read_records
from ragmeter.judges import Judge, JudgeConfig, open_judge, planning_judge
from ragmeter.judges.cache import is_verdict_cache
from ragmeter.pipelines.mtrag.steps import (
    StepReport,
    check_step,
    partial_paths,
    run_step,
    selected_steps,
    summary_path,
)
from ragmeter.pipelines.mtrag.summary import GroupMean, write_step_summary

__all__ = ["StepJob", "StepOutcome", "plan_step", "prepare_step", "unfinished_part"]

#: What errors call each output when the caller gives no labels.
DEFAULT_LABELS = {
    "output": "the output",
    "partial": "the output's unfinished part",
    "summary": "the output's summary",
    "judge_cache": "the judge cache",
}


@dataclass(frozen=True)
class StepOutcome:
    """A finished step: what it did, its summary (as written to ``OUT.summary.json``) and the summary's means."""

    report: StepReport
    summary: dict[str, Any]
    means: list[GroupMean]


@dataclass
class StepJob:
    """A step whose outputs are checked, ready to :meth:`run`."""

    step: str
    source: Path
    output: Target
    settings: Settings
    judges: Sequence[JudgeConfig] = field(default_factory=tuple)

    def run(self) -> StepOutcome:
        """Open the judges, run the step and write its summary; the judges are closed whatever happens."""
        opened: list[Judge] = []
        try:
            for config in self.judges:
                opened.append(open_judge(config))
            report = run_step(self.step, self.source, self.output, settings=self.settings, judges=opened)
        finally:
            for judge in opened:
                judge.close()
        summary, means = write_step_summary(report, self.source, self.step, settings=self.settings)
        return StepOutcome(report, summary, means)


def prepare_step(
    step: str,
    source: str | Path,
    output: str | Path,
    *,
    settings: Settings,
    judges: Sequence[JudgeConfig] = (),
    overwrite: bool = False,
    labels: Mapping[str, str] | None = None,
) -> StepJob:
    """Check the step and every file it will write before any work: the output (never an input, never an
    existing file unless ``overwrite``), its unfinished part (kept to go on from), its summary and the judges'
    shared cache. ``labels`` name the outputs in errors (keys of :data:`DEFAULT_LABELS`)."""
    names = {**DEFAULT_LABELS, **(labels or {})}
    check_step(step, source, output, judged=bool(judges))
    baseline = settings.bertscore_baseline
    if baseline not in (None, "mtrag-deberta") and not Path(baseline).is_file():
        raise ConfigError(
            f"--bert-baseline {baseline}: no such file: give bert-score's baseline CSV for the model, "
            "or mtrag-deberta (MT-RAG's values)"
        )
    model_files = [config.model_file for config in judges]
    outputs = Outputs([source, settings.bertscore_baseline, *(model_files or [None])], overwrite=overwrite)
    target = outputs.file(output, flag=names["output"])
    for path in partial_paths(output):  # an interrupted step's own files: kept to go on from
        outputs.file(path, flag=names["partial"], reusable=lambda _: True)
    outputs.file(summary_path(output), flag=names["summary"])
    if judges and judges[0].cache is not None:  # the judges share one cache
        outputs.file(judges[0].cache, flag=names["judge_cache"], reusable=is_verdict_cache)
    return StepJob(step, Path(source), target, settings, tuple(judges))


def unfinished_part(output: str | Path) -> Path | None:
    """The records an interrupted or failed step finished, kept beside ``output`` to go on from; ``None`` when
    there are none."""
    partial, _ = partial_paths(output)
    return partial if partial.exists() and partial.stat().st_size > 0 else None


def plan_step(
    step: str, source: str | Path, judges: Sequence[JudgeConfig], *, settings: Settings
) -> list[tuple[str, JudgePlan]]:
    """The judge calls the step would make, by judge (its identity and plan), making none; records whose
    values the output already holds are counted too."""
    steps = [each for each in selected_steps(step, judged=bool(judges)) if each.judged]
    plans = []
    for k, config in enumerate(judges):
        judge = planning_judge(config)
        try:
            metrics = [name for each in steps if k == 0 or each.every_judge for name in each.metrics]
            records = read_records(source, format="mtrag", skip_invalid=True)
            plans.append((judge.identity, plan_judging(records, metrics=metrics, settings=settings, judge=judge)))
        finally:
            judge.close()
    return plans
