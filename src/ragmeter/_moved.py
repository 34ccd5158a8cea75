"""Module paths that moved when the package was re-housed into layers (after 0.1.0): importing an old path still
works, warns with a :class:`DeprecationWarning` that names the new one, and gives the very same module object.
Public names imported from ``ragmeter`` itself did not move."""

from __future__ import annotations

import importlib
import sys
import types
import warnings
from importlib.machinery import ModuleSpec

__all__ = ["MOVED", "install"]

#: old module path → new module path.
MOVED = {
    "ragmeter.errors": "ragmeter.core.errors",
    "ragmeter.records": "ragmeter.core.records",
    "ragmeter.settings": "ragmeter.core.settings",
    "ragmeter.signature": "ragmeter.core.signature",
    "ragmeter.aggregate": "ragmeter.results.aggregate",
    "ragmeter.paired_analysis": "ragmeter.results.paired",
    "ragmeter.result": "ragmeter.results.run_result",
    "ragmeter.context": "ragmeter.engine.context",
    "ragmeter.run": "ragmeter.engine.evaluation",
    "ragmeter.distributed": "ragmeter.engine.ray.distributed",
    "ragmeter.run_folder": "ragmeter.io.run_folder",
    "ragmeter.compare": "ragmeter.analysis.compare",
    "ragmeter.calibration": "ragmeter.analysis.calibration",
    "ragmeter.agreement": "ragmeter.human.with_people",
    "ragmeter.labels": "ragmeter.human.merge",
    "ragmeter.annotator": "ragmeter.human.annotator",
    "ragmeter.io.annotations": "ragmeter.human.annotation_files",
    "ragmeter.stats.agreement": "ragmeter.stats.inter_annotator",
    "ragmeter.pipelines.mtrag_summary": "ragmeter.pipelines.mtrag.summary",
    "ragmeter.metrics.mtrag_judged": "ragmeter.metrics.mtrag.judged",
    "ragmeter.metrics.claim_evidence": "ragmeter.judges.checks.evidence",
    "ragmeter.metrics.refusal_cues": "ragmeter.judges.checks.refusal_cues",
    "ragmeter.judges.openai_backend": "ragmeter.judges.backends.openai",
    "ragmeter.judges.local": "ragmeter.judges.backends.local",
    "ragmeter.report.agreement": "ragmeter.report.people",
}


class _MovedModules:
    """A meta path finder and loader (importlib's protocols, without importing ``importlib.abc``, which
    costs ``import ragmeter`` a third of its time): finds an old path and loads it as the module at the new one."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        return ModuleSpec(fullname, self) if fullname in MOVED else None

    def create_module(self, spec: ModuleSpec) -> types.ModuleType:
        new = MOVED[spec.name]
        warnings.warn(
            f"{spec.name} moved to {new}: import it from there (the old path goes in a later release)",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(new)

    def exec_module(self, module: types.ModuleType) -> None:
        """The module at the new path is already executed."""


def install() -> None:
    """Make the old paths importable (once per interpreter)."""
    if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(_MovedModules())
