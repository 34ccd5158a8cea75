"""ragmeter's pytest plugin: evaluate a file of RAG answers in a test, and fail the test with a table when the
figures miss a requirement or regress against a baseline run.

::

    def test_rag_quality(ragmeter_eval):
        run = ragmeter_eval("eval/answers.jsonl", metrics=["token_f1", "overlap"])
        run.require("token_f1 >= 0.6").require_no_regression("baseline/", metrics=["token_f1"])

The fixtures (override any of them in a ``conftest.py``):

- ``ragmeter_eval``: a function ``(source, *, metrics=None, input_format="auto", name=None, worst=5)`` that
  scores the records file ``source`` (:func:`ragmeter.evaluate`), writes it as a run folder
  ``ragmeter_out/NAME`` (``NAME``: ``name``, else the file's stem; the folder is a baseline as ``ragmeter run
  --out`` writes it) and returns an :class:`EvalRun`; a ``source`` that is not a file is a
  :class:`~ragmeter.core.errors.ConfigError` that names it.
- ``ragmeter_settings`` (session): the :class:`~ragmeter.Settings`; default ``Settings()``.
- ``ragmeter_embedder`` (session): an :class:`~ragmeter.Embedder`; default ``None``, the one the settings name
  (the packaged ONNX MiniLM).
- ``ragmeter_judge`` (session): a :class:`~ragmeter.judges.Judge` for the judged metrics; default ``None`` (no
  judged metric can run), or the session's judge when ``--ragmeter-judge`` (ini ``ragmeter_judge``) names one.
- ``ragmeter_out``: the folder the runs are written to; default a folder in the test's ``tmp_path``.

**The session's judge.** ``--ragmeter-judge local`` starts the packaged llama.cpp judge once, in the process
that runs the session; under pytest-xdist (``-n``) that is the controller, which hands the server's address
to every worker (``pytest_configure_node`` → ``workerinput``), so the workers share one model instead of
loading one each. ``--ragmeter-judge URL`` with ``--ragmeter-judge-model NAME`` (and
``--ragmeter-judge-api-key-env VAR`` where the endpoint needs a key) makes every process talk to that
OpenAI-compatible endpoint.

A failed requirement or gate raises :class:`AssertionError` whose message is the table: per metric its value,
interval, threshold or baseline, p-value and verdict, the reasons, and the ids of the worst items (for a gate, the
items that got most worse, paired as :func:`~ragmeter.compare` pairs them: by id, and by id and model id where a run
holds several answers per id). Importing this module loads pytest and the standard library only; ragmeter's scoring
parts load when a fixture runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ragmeter.analysis.compare import ScoredRun
    from ragmeter.analysis.gate import Gate
    from ragmeter.core.settings import Settings
    from ragmeter.judges import Judge
    from ragmeter.models import Embedder
    from ragmeter.results.requirements import RequirementVerdict
    from ragmeter.results.run_result import EvalResult

__all__ = ["EvalRun"]

#: The key of the session judge's endpoint in ``config.stash`` and in an xdist worker's ``workerinput``.
_WORKER_KEY = "ragmeter_judge_endpoint"
_ENDPOINT = pytest.StashKey[dict[str, Any] | None]()
_SERVER = pytest.StashKey[Any]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragmeter", "ragmeter: evaluate RAG answers in tests")
    group.addoption(
        "--ragmeter-judge",
        metavar="local|URL",
        default=None,
        help="the session's judge for the ragmeter_judge fixture: 'local' starts the packaged "
        "model once (in the xdist controller under -n), a URL names an OpenAI-compatible "
        "endpoint",
    )
    group.addoption(
        "--ragmeter-judge-model", metavar="NAME", default=None, help="the model the --ragmeter-judge URL serves"
    )
    group.addoption(
        "--ragmeter-judge-api-key-env",
        metavar="VAR",
        default=None,
        help="the environment variable holding the endpoint's key (default: no key)",
    )
    parser.addini("ragmeter_judge", "as --ragmeter-judge", default="")
    parser.addini("ragmeter_judge_model", "as --ragmeter-judge-model", default="")
    parser.addini("ragmeter_judge_api_key_env", "as --ragmeter-judge-api-key-env", default="")


def _setting(config: pytest.Config, name: str) -> str | None:
    return config.getoption(name) or config.getini(name) or None


def pytest_configure(config: pytest.Config) -> None:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:  # an xdist worker: the controller decided
        config.stash[_ENDPOINT] = workerinput.get(_WORKER_KEY)
        return
    spec = _setting(config, "ragmeter_judge")
    if spec is None:
        config.stash[_ENDPOINT] = None
    elif spec == "local":
        config.stash[_ENDPOINT] = _start_local(config)
    else:
        model = _setting(config, "ragmeter_judge_model")
        if model is None:
            raise pytest.UsageError(
                f"--ragmeter-judge {spec}: name the model it serves with "
                "--ragmeter-judge-model NAME (or the ini setting ragmeter_judge_model)"
            )
        config.stash[_ENDPOINT] = {
            "base_url": spec,
            "model": model,
            "local": False,
            "api_key_env": _setting(config, "ragmeter_judge_api_key_env"),
        }


def _start_local(config: pytest.Config) -> dict[str, Any]:
    from ragmeter.core.errors import RagmeterError
    from ragmeter.judges import LocalServer

    try:
        server = LocalServer()
        base_url = server.start()
    except RagmeterError as exc:
        raise pytest.UsageError(f"--ragmeter-judge local: {exc}") from exc
    config.stash[_SERVER] = server
    return {"base_url": base_url, "model": server.model_id, "local": True, "api_key_env": None}


def pytest_unconfigure(config: pytest.Config) -> None:
    server = config.stash.get(_SERVER, None)
    if server is not None:
        del config.stash[_SERVER]
        server.stop()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist, in the controller, for each worker it starts: hand over the session judge's endpoint."""
    node.workerinput[_WORKER_KEY] = node.config.stash.get(_ENDPOINT, None)


def _open_endpoint(endpoint: Mapping[str, Any]) -> Judge:
    from ragmeter.judges import LOCAL_TIMEOUT_S, Judge, JudgeConfig, OpenAIBackend, open_judge

    if not endpoint["local"]:
        return open_judge(
            JudgeConfig(
                kind="openai",
                model=endpoint["model"],
                base_url=endpoint["base_url"],
                api_key_env=endpoint["api_key_env"],
            )
        )
    # the settings `open_judge(JudgeConfig(kind="local"))` gives, so that verdicts are signed as a local run's,
    # but every prompt computed whole: the test processes of `pytest -n` share the server's one slot, so a
    # restored system message (the local judge's reuse) could be replaced by another process's before its call
    backend = OpenAIBackend(
        base_url=endpoint["base_url"],
        model=endpoint["model"],
        api_key_env=None,
        timeout_s=LOCAL_TIMEOUT_S,
        bounds="schema",
        cache_prompt=False,
    )
    return Judge(backend, concurrency=1, timeout_s=LOCAL_TIMEOUT_S, claims="split", layout="shared")


@pytest.fixture(scope="session")
def ragmeter_judge(pytestconfig: pytest.Config) -> Any:
    """The judge of the judged metrics: the session's (``--ragmeter-judge``), else ``None``."""
    endpoint = pytestconfig.stash.get(_ENDPOINT, None)
    if endpoint is None:
        yield None
        return
    judge = _open_endpoint(endpoint)
    try:
        yield judge
    finally:
        judge.close()


@pytest.fixture(scope="session")
def ragmeter_embedder() -> Embedder | None:
    """The embedder; ``None``: the one ``ragmeter_settings`` names (the packaged ONNX MiniLM by default)."""
    return None


@pytest.fixture(scope="session")
def ragmeter_settings() -> Settings:
    """The settings every score and interval is computed with."""
    from ragmeter.core.settings import Settings

    return Settings()


@pytest.fixture
def ragmeter_out(tmp_path: Path) -> Path:
    """The folder the test's runs are written to, one sub-folder per run."""
    return tmp_path / "ragmeter"


@pytest.fixture
def ragmeter_eval(
    ragmeter_settings: Settings, ragmeter_embedder: Embedder | None, ragmeter_judge: Judge | None, ragmeter_out: Path
) -> Callable[..., EvalRun]:
    """``ragmeter_eval(source, *, metrics=None, input_format="auto", name=None, worst=5)``: the records file
    ``source`` scored and written to ``ragmeter_out/NAME``, as an :class:`EvalRun`."""

    def run(
        source: str | Path,
        *,
        metrics: Sequence[str] | None = None,
        input_format: str = "auto",
        name: str | None = None,
        worst: int = 5,
    ) -> EvalRun:
        from ragmeter.core.errors import ConfigError

        source = Path(source)
        if not source.is_file():
            raise ConfigError(_missing_source(source))
        folder = Path(ragmeter_out) / (name or source.stem)
        result = _evaluate_to_folder(
            source,
            folder,
            metrics=metrics,
            input_format=input_format,
            settings=ragmeter_settings,
            embedder=ragmeter_embedder,
            judge=ragmeter_judge,
        )
        return EvalRun(result, folder, name or source.stem, worst)

    return run


def _missing_source(source: Path) -> str:
    """Why ``ragmeter_eval`` cannot read ``source``, and what to do."""
    what = "is a folder, not a records file" if source.is_dir() else "does not exist"
    relative = "" if source.is_absolute() else f" (a relative path is read from {Path.cwd()}, where pytest runs)"
    return (
        f"ragmeter_eval({str(source)!r}): {source.resolve()} {what}{relative}: give the path of a file of "
        "answers (JSONL, CSV, Parquet, an MT-RAG or a RAGAS file), e.g. built from the test's own folder with "
        "Path(__file__).parent / 'answers.jsonl'"
    )


def _evaluate_to_folder(
    source: Path,
    out: Path,
    *,
    metrics: Sequence[str] | None,
    input_format: str,
    settings: Settings,
    embedder: Embedder | None,
    judge: Judge | None,
) -> EvalResult:
    """Score ``source`` into the run folder ``out`` as ``ragmeter run --out`` does (replacing what is
    there)."""
    from ragmeter.core.files import file_sha256
    from ragmeter.engine.evaluation import evaluate
    from ragmeter.io.readers import read_records
    from ragmeter.io.run_folder import Manifest, RunFolder, item_settings
    from ragmeter.metrics import resolve_metrics

    chosen = resolve_metrics(metrics)
    folder = RunFolder(out)
    identity = None if judge is None else judge.description
    folder.prepare(
        Manifest(
            input=str(source.resolve()),
            input_sha256=file_sha256(source),
            input_format=input_format,
            map=[],
            qrels=None,
            metrics=[m.name for m in chosen],
            settings=item_settings(settings),
            judge=identity,
            limit=None,
        ),
        resume=False,
        overwrite=True,
    )
    with folder.items_writer(resume=False) as writer:
        result = evaluate(
            read_records(source, format=input_format),
            metrics=metrics,
            settings=settings,
            embedder=embedder,
            judge=judge,
            on_items=writer,
        )
    result.write_to(folder, extra={"input": str(source)}, parquet=False)
    return result


@dataclass(frozen=True)
class EvalRun:
    """A run scored by ``ragmeter_eval``: ``result`` (the :class:`~ragmeter.EvalResult`), the run ``folder``
    it was written to, its ``name``; ``worst``: how many of the worst items a failure lists."""

    result: EvalResult
    folder: Path
    name: str
    worst: int = 5

    def require(self, *requirements: str, point: bool = False) -> EvalRun:
        """Fail unless every requirement (``"token_f1 >= 0.6"``, ``"p95_latency_ms <= 2000"``) holds on the
        whole interval (``point``: on the estimate); see :mod:`ragmeter.results.requirements`. Returns
        ``self``."""
        __tracebackhide__ = True
        from ragmeter.results.requirements import check_requirements, parse_requirement

        parsed = [parse_requirement(text) for text in requirements]
        verdicts = check_requirements(self.result.summaries, parsed, point=point)
        if not all(v.passed for v in verdicts):
            raise AssertionError(self._requirements_message(verdicts))
        return self

    def require_no_regression(
        self,
        baseline: str | Path,
        *,
        metrics: Sequence[str] | None = None,
        margin: float | Mapping[str, float | None] | None = None,
        alpha: float = 0.05,
        max_undefined: float = 0.2,
        allow_different_settings: bool = False,
    ) -> EvalRun:
        """Fail when this run (the candidate) is worse than the ``baseline`` run (a run folder, or an items
        file with ``allow_different_settings``) on ``metrics`` (default: every metric of this run), by the
        gate of :mod:`ragmeter.analysis.gate`: ``margin`` ``None`` tests for a significant drop (Holm over
        the metrics, at ``alpha``); a margin (one for all, or per metric) asks that the drop be shown to be
        at most the margin. Returns ``self``."""
        __tracebackhide__ = True
        from ragmeter.analysis.compare import compare, load_run
        from ragmeter.analysis.gate import GateRule, apply_gate
        from ragmeter.core.errors import ConfigError

        names = list(metrics) if metrics is not None else self.result.metrics
        margins = dict(margin) if isinstance(margin, Mapping) else dict.fromkeys(names, margin)
        unknown = sorted(set(margins) - set(names))
        if unknown:
            raise ConfigError(f"a margin for {', '.join(unknown)}, which the gate does not check: name it in metrics")
        for metric, value in margins.items():
            if value is not None and not (0 <= value < math.inf):
                raise ConfigError(f"margin {value!r} for {metric}: a margin is a number at least 0")
        rules = [GateRule(m, margins.get(m)) for m in names]
        base = load_run(baseline)
        comparison = compare(
            base,
            self.result,
            names=["baseline", self.name if self.name != "baseline" else "candidate"],
            allow_different_settings=allow_different_settings,
        )[0]
        gate = apply_gate(comparison, rules, alpha=alpha, max_undefined=max_undefined)
        if not gate.passed:
            raise AssertionError(self._gate_message(gate, base, baseline))
        return self

    def _requirements_message(self, verdicts: Sequence[RequirementVerdict]) -> str:
        failed = [v for v in verdicts if not v.passed]
        rows = [
            [
                _figure(v),
                _num(v.summary.value) if v.summary else "–",
                _interval(v.summary.ci_low, v.summary.ci_high) if v.summary else "–",
                f"{v.requirement.op} {v.requirement.value:g}",
                "–",
                "pass" if v.passed else "FAIL",
            ]
            for v in verdicts
        ]
        title = (
            f"ragmeter: {len(failed)} of {len(verdicts)} requirements not met by {self.name} "
            f"({len(self.result)} items; run folder {self.folder})"
        )
        lines = [title, *_table(["metric", "value", "interval", "threshold", "p", "verdict"], rows), ""]
        for v in failed:
            lines.append(f"{v.requirement}: {v.reason}")
            metric = v.requirement.metric
            if metric in self.result.scores:
                worst = _worst(
                    self.result.item_ids,
                    self.result.scores[metric],
                    higher_is_better=v.requirement.op in (">=", ">"),
                    k=self.worst,
                )
                lines.append(f"  worst items by {metric}: {worst}")
        return "\n".join(lines)

    def _gate_message(self, gate: Gate, base: ScoredRun, baseline: str | Path) -> str:
        failed = [v for v in gate.verdicts if not v.passed]
        rows = []
        for v in gate.verdicts:
            m = v.comparison
            rule = "no regression" if v.rule.margin is None else f"within {v.rule.margin:g}"
            rows.append(
                [
                    v.rule.metric,
                    _num(m.mean_b) if m else "–",
                    _interval(m.ci_low, m.ci_high, m.difference) if m else "–",
                    _num(m.mean_a) if m else "–",
                    rule,
                    _num(v.p_gate, "–"),
                    "pass" if v.passed else "FAIL",
                ]
            )
        title = (
            f"ragmeter: {len(failed)} of {len(gate.verdicts)} metrics regressed against the baseline "
            f"{baseline} (candidate {self.name}, run folder {self.folder}; alpha {gate.alpha:g}, "
            "Holm-adjusted p)"
        )
        header = ["metric", "value", "difference [interval]", "baseline", "rule", "p", "verdict"]
        lines = [title, *_table(header, rows), ""]
        from ragmeter.analysis.compare import ScoredRun, pair_items

        # compare's own pairing, so that the worst items listed are those of the comparison the gate judged
        pairs = pair_items(base, ScoredRun.from_result(self.result, name="candidate"))
        for v in failed:
            lines.append(f"{v.rule.metric}: {v.reason}")
            m = v.comparison
            if m is None or m.higher_is_better is None or v.rule.metric not in base.scores:
                continue
            drops = []
            for j, i in pairs:
                a, b = base.scores[v.rule.metric][j], self.result.scores[v.rule.metric][i]
                worse = (a - b) if m.higher_is_better else (b - a)
                if worse > 0:
                    drops.append((-worse, base.keys[j][0], a, b))
            shown = ", ".join(f"{item} ({a:.3g} → {b:.3g})" for _, item, a, b in sorted(drops)[: self.worst])
            lines.append(f"  worst items by {v.rule.metric} (baseline → candidate): {shown or 'none worse'}")
        return "\n".join(lines)


def _figure(verdict: RequirementVerdict) -> str:
    req = verdict.requirement
    return f"{req.statistic}_{req.metric}" if req.statistic else req.metric


def _num(value: float | None, missing: str = "undefined") -> str:
    return missing if value is None or math.isnan(value) else f"{value:.4g}"


def _interval(low: float | None, high: float | None, point: float | None = None) -> str:
    defined = low is not None and high is not None and not (math.isnan(low) or math.isnan(high))
    bounds = f"[{low:.4g}, {high:.4g}]" if defined else "–"
    return bounds if point is None else f"{point:+.4g} {bounds}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[c]) for row in [header, *rows]) for c in range(len(header))]
    return [
        "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in [header, *rows]
    ]


def _worst(ids: Sequence[str], values: Any, *, higher_is_better: bool, k: int) -> str:
    """The ``k`` worst items as ``id (value)``, and how many are undefined."""
    scored = [(float(v), item) for item, v in zip(ids, values, strict=True) if not math.isnan(v)]
    scored.sort(key=lambda pair: pair[0] if higher_is_better else -pair[0])
    undefined = len(ids) - len(scored)
    shown = ", ".join(f"{item} ({value:.3g})" for value, item in scored[:k]) or "none defined"
    return shown + (f"; {undefined} undefined" if undefined else "")
