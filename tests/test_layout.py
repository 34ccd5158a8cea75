"""The package's layering: which part may import which (the README's Development section draws the same
map). Imports under ``TYPE_CHECKING`` are for annotations only and are not counted."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "ragmeter"

#: part → the parts it may import at run time. A part is a top-level module or subpackage of ragmeter.
BASE = {"_version", "errors", "_iter", "_files", "signature", "records"}
ALLOWED: dict[str, set[str]] = {
    "_version": set(), "errors": set(), "_iter": set(), "_files": {"errors"}, "records": set(),
    "signature": {"_version"},
    "text": {"errors"},
    "stats": set(),
    "models": {"errors"},
    "io": {"errors", "records", "_files", "text"},
    "judges": {"errors", "records", "_files", "text"},
    "settings": {"errors", "records", "text"},
    "aggregate": {"_files", "settings", "signature", "stats"},
    "context": {"errors", "settings", "models", "judges"},
    "metrics": BASE | {"text", "models", "judges", "settings", "aggregate"},
    "paired_analysis": BASE,
    "result": BASE | {"aggregate", "judges", "settings", "paired_analysis"},
    "labels": BASE | {"io", "stats"},
    "run": BASE | {"io", "judges", "metrics", "models", "context", "aggregate", "result", "settings"},
    "pipelines": BASE | {"io", "judges", "metrics", "models", "context", "aggregate", "settings"},
    "run_folder": BASE | {"io", "result", "settings"},
    "agreement": BASE | {"io", "metrics", "settings", "stats"},
    "annotator": BASE | {"io", "judges", "metrics", "settings"},
    "calibration": BASE | {"agreement", "io", "models", "run", "settings", "stats", "text"},
    "compare": BASE | {"aggregate", "io", "metrics", "paired_analysis", "result", "run_folder", "settings", "stats"},
    "_shared_embeddings": {"models"},
    "distributed": BASE | {"_shared_embeddings", "context", "io", "judges", "metrics", "models", "result", "run",
                           "settings"},
    "report": BASE | {"aggregate", "judges", "result", "stats", "compare", "paired_analysis", "metrics", "text",
                      "agreement", "calibration"},
}
#: The top: the command line and the public API may import anything.
TOP = {"cli", "_cli_judge", "__init__", "_entry"}


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _runtime_imports() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {id(sub) for node in ast.walk(tree)
                       if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                       for sub in ast.walk(node)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "ragmeter":
                targets = ([_part(f"ragmeter.{alias.name}") for alias in node.names] if node.module == "ragmeter"
                           else [_part(node.module)])
            elif isinstance(node, ast.Import):
                targets = [_part(alias.name) for alias in node.names if alias.name.split(".")[0] == "ragmeter"]
            else:
                continue
            graph[_part(module)].update(t for t in targets if t != _part(module))
    return graph


def test_every_part_imports_only_the_parts_below_it() -> None:
    graph = _runtime_imports()
    unknown = set(graph) - set(ALLOWED) - TOP
    assert not unknown, f"parts missing from the layering map: {unknown}"
    wrong = {part: sorted(imports - ALLOWED[part]) for part, imports in graph.items()
             if part not in TOP and imports - ALLOWED[part]}
    assert not wrong, f"imports that break the layering: {wrong}"


def test_the_layering_has_no_cycle() -> None:
    done: set[str] = set()

    def visit(part: str, path: tuple[str, ...]) -> None:
        assert part not in path, f"import cycle: {' → '.join((*path, part))}"
        if part in done:
            return
        for below in ALLOWED.get(part, set()):
            visit(below, (*path, part))
        done.add(part)

    for part in ALLOWED:
        visit(part, ())


def test_io_knows_nothing_of_results_or_metrics() -> None:
    assert not _runtime_imports()["io"] & {"result", "metrics", "run", "context"}


@pytest.mark.parametrize("module", ["ragmeter.context", "ragmeter.settings", "ragmeter.metrics.citation",
                                    "ragmeter.metrics.judged", "ragmeter.aggregate", "ragmeter.result",
                                    "ragmeter.run_folder", "ragmeter.pipelines.mtrag_summary",
                                    "ragmeter.report.terminal", "ragmeter.judges.accounting"])
def test_each_module_imports_first_in_a_fresh_interpreter(module: str) -> None:
    # A cycle that "works" only by import order fails when the wrong module is imported first.
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
