"""The package's layering (defined once, in ``tests/layering.py``): which part may import which, and the
documentation's layout table drawn from the same definition. Imports under ``TYPE_CHECKING`` are for annotations
only and are not counted."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from layering import ALLOWED, DEVELOPMENT, SPLIT, layout_section, layout_table, part_of

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "ragmeter"


def _runtime_imports() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {
            id(sub)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for sub in ast.walk(node)
        }
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "ragmeter":
                targets = (
                    [part_of(f"{node.module}.{alias.name}") for alias in node.names]
                    if node.module in ("ragmeter", "ragmeter.core")
                    else [part_of(node.module)]
                )
            elif isinstance(node, ast.Import):
                targets = [part_of(alias.name) for alias in node.names if alias.name.split(".")[0] == "ragmeter"]
            else:
                continue
            graph[part_of(module)].update(t for t in targets if t != part_of(module))
    return graph


def test_every_part_imports_only_the_parts_below_it() -> None:
    graph = _runtime_imports()
    unknown = set(graph) - set(ALLOWED)
    assert not unknown, f"parts missing from the layering map: {unknown}"
    wrong = {
        part: sorted(imports - ALLOWED[part])
        for part, imports in graph.items()
        if "*" not in ALLOWED[part] and imports - ALLOWED[part]
    }
    assert not wrong, f"imports that break the layering: {wrong}"


def test_the_layering_has_no_cycle() -> None:
    done: set[str] = set()

    def visit(part: str, path: tuple[str, ...]) -> None:
        assert part not in path, f"import cycle: {' → '.join((*path, part))}"
        if part in done:
            return
        for below in ALLOWED.get(part, set()) - {"*"}:
            visit(below, (*path, part))
        done.add(part)

    for part in ALLOWED:
        visit(part, ())


def test_io_knows_nothing_of_results_or_metrics() -> None:
    assert not _runtime_imports()["io"] & {"results", "metrics", "engine"}


def test_every_part_of_the_package_is_in_the_layering() -> None:
    parts = {
        part_of(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"))
        for path in PACKAGE.rglob("*.py")
    } - SPLIT  # a split package's __init__ holds its docstring only
    assert parts == set(ALLOWED), (
        f"in the package only: {parts - set(ALLOWED)}; in the map only: {set(ALLOWED) - parts}"
    )


def test_the_documented_layout_table_is_the_layering() -> None:
    assert layout_section(DEVELOPMENT.read_text(encoding="utf-8")) == layout_table(), (
        "the layout table of docs/development.md differs from tests/layering.py: run `python tests/layering.py`"
    )


@pytest.mark.parametrize(
    "module",
    [
        "ragmeter.engine.context",
        "ragmeter.core.settings",
        "ragmeter.metrics.citation",
        "ragmeter.metrics.judged",
        "ragmeter.results.aggregate",
        "ragmeter.results.run_result",
        "ragmeter.io.run_folder",
        "ragmeter.pipelines.mtrag.summary",
        "ragmeter.report.terminal",
        "ragmeter.judges.accounting",
        "ragmeter.engine.evaluation",
        "ragmeter.analysis.compare",
        "ragmeter.human.with_people",
        "ragmeter.judges.backends.local",
    ],
)
def test_each_module_imports_first_in_a_fresh_interpreter(module: str) -> None:
    # A cycle that "works" only by import order fails when the wrong module is imported first.
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


BENCHMARKS = PACKAGE.parents[1] / "benchmarks"


def test_every_benchmark_is_in_the_index_and_every_result_comes_from_one() -> None:
    """``benchmarks/README.md``'s table has a row for each ``GROUP/bench_NAME.py`` (none lies outside a group), and
    each file of ``results/`` is ``NAME.…`` or ``NAME-VARIANT.…`` of a benchmark (``latest``: ``run_all.py``'s)."""
    readme = (BENCHMARKS / "README.md").read_text(encoding="utf-8")
    modules = sorted(path.relative_to(BENCHMARKS).as_posix() for path in BENCHMARKS.glob("*/bench_*.py"))
    assert len(modules) > 30 and not list(BENCHMARKS.glob("bench_*.py"))
    assert [module for module in modules if f"| `{module}` |" not in readme] == []
    names = [Path(module).stem.removeprefix("bench_") for module in modules] + ["latest", "new_user_battery"]
    results = [path.name for path in (BENCHMARKS / "results").iterdir()]
    assert [
        result
        for result in results
        if not any(result.split(".")[0] == name or result.startswith(f"{name}-") for name in names)
    ] == []
