"""The outcome of a run: the per-item table first, and run figures computed from it."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragmeter.core.errors import ConfigError, MissingDependencyError
from ragmeter.core.settings import Settings
from ragmeter.core.signature import Signature
from ragmeter.io.run_folder import RunFolder, item_row
from ragmeter.judges.accounting import JudgingReport
from ragmeter.results.aggregate import Summary
from ragmeter.results.paired import Quadrant, Threshold, default_thresholds, grounding_quadrant

__all__ = ["EvalResult", "Summary"]


@dataclass(frozen=True)
class EvalResult:
    """Per-item scores (``scores[metric][i]`` for ``item_ids[i]``, NaN where undefined, with the
    reason in ``undefined[metric][i]``) and the run figures computed from them. ``model_ids[i]`` names
    the answering system when the input mixes several (MT-RAG files do), else ``None``. ``notes[metric][i]``
    is the note that came with a defined value, where there was one. ``judging`` tells what the judge
    did, when the run had one. ``conversation_ids[i]`` is the item's conversation, when it has one;
    ``languages[i]`` the code of the language its text tools took (:mod:`ragmeter.text.languages`), where a metric
    of the run read it."""

    item_ids: tuple[str, ...]
    model_ids: tuple[str | None, ...]
    scores: Mapping[str, np.ndarray]
    undefined: Mapping[str, Mapping[int, str]]
    summaries: tuple[Summary, ...]
    signatures: Mapping[str, Signature]
    settings: Settings
    notes: Mapping[str, Mapping[int, str]] = field(default_factory=dict)
    judging: JudgingReport | None = None
    conversation_ids: tuple[str | None, ...] = ()
    languages: tuple[str | None, ...] = ()

    @property
    def metrics(self) -> list[str]:
        return list(self.scores)

    @property
    def language_counts(self) -> dict[str, int]:
        """How many items each language's text tools scored, most first."""
        return dict(Counter(code for code in self.languages if code is not None).most_common())

    def __len__(self) -> int:
        return len(self.item_ids)

    def summary(self, metric: str, statistic: str | None = None) -> Summary:
        """The run figure of ``metric`` (``statistic`` picks ``p50``/``p95`` for quantile metrics)."""
        for s in self.summaries:
            if s.metric == metric and (statistic is None or s.statistic == statistic):
                return s
        raise ConfigError(
            f"no summary for metric {metric!r}"
            + (f" with statistic {statistic!r}" if statistic else "")
            + f"; this result has {', '.join(self.metrics)}"
        )

    def items(self) -> Iterator[dict[str, Any]]:
        """One dict per item: ``id``, each metric's value (``None`` if undefined), ``undefined`` and,
        where a value came with one, ``notes``."""
        conversations = self.conversation_ids or (None,) * len(self)
        languages = self.languages or (None,) * len(self)
        for i, (item_id, model_id) in enumerate(zip(self.item_ids, self.model_ids, strict=True)):
            yield item_row(
                item_id,
                model_id,
                {m: float(v[i]) for m, v in self.scores.items()},
                {m: r[i] for m, r in self.undefined.items() if i in r},
                {m: n[i] for m, n in self.notes.items() if i in n},
                conversation_id=conversations[i],
                judge=None if self.judging is None else self.judging.item(i, item_id).to_dict(),
                language=languages[i],
            )

    def paired_analysis(self, grounded: Threshold | None = None, correct: Threshold | None = None) -> Quadrant | None:
        """Seeds 000/001's grounded × correct table (:mod:`ragmeter.results.paired`) at the given thresholds,
        else at the defaults for the metrics this run has; ``None`` when it lacks a grounding or a correctness
        metric."""
        if grounded is None or correct is None:
            defaults = default_thresholds(self.metrics)
            if defaults is None:
                return None
            grounded, correct = grounded or defaults[0], correct or defaults[1]
        return grounding_quadrant(self.item_ids, self.scores, grounded, correct)

    def to_pandas(self) -> Any:
        """The per-item table as a ``pandas.DataFrame`` indexed by item id (NaN where undefined; a
        ``model_id`` column when the input mixes systems)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise MissingDependencyError("pandas", "pandas", "EvalResult.to_pandas()") from exc
        columns: dict[str, Any] = {}
        if any(m is not None for m in self.model_ids):
            columns["model_id"] = list(self.model_ids)
        columns.update({m: np.asarray(v) for m, v in self.scores.items()})
        return pd.DataFrame(columns, index=pd.Index(self.item_ids, name="id"))

    def item_table(self) -> dict[str, Any]:
        """The per-item table of ``--parquet``, by column: ``id``, ``model_id`` (when the input mixes systems),
        one float array per metric (NaN where undefined) and the ``undefined`` reasons as a JSON object each."""
        table: dict[str, Any] = {"id": list(self.item_ids)}
        if any(m is not None for m in self.model_ids):
            table["model_id"] = list(self.model_ids)
        table.update({m: np.asarray(v, dtype=float) for m, v in self.scores.items()})
        table["undefined"] = [
            json.dumps({m: r[i] for m, r in self.undefined.items() if i in r}) for i in range(len(self))
        ]
        return table

    def write_to(self, folder: RunFolder, *, extra: Mapping[str, Any], parquet: bool) -> None:
        """Write this result into ``folder`` (its summary with ``extra``, the judge's failures, ``parquet``: the
        items table) and mark the run finished."""
        folder.finish(
            {**self.to_dict(), **extra},
            failures=None if self.judging is None else self.judging.failures,
            table=self.item_table() if parquet else None,
        )

    def to_dict(self) -> dict[str, Any]:
        """The run figures and signatures as plain JSON-ready data (items are written separately)."""
        data = {
            "n_items": len(self),
            "summaries": [s.to_dict() for s in self.summaries],
            "signatures": {m: s.render() for m, s in self.signatures.items()},
        }
        if self.languages:
            data["languages"] = self.language_counts
        if self.judging is not None:
            data["judging"] = self.judging.to_dict()
        return data
