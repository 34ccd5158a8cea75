"""``ragmeter run --engine ray``: the same run on a Ray cluster, with results equal to a local run's.

The driver cuts the input (a file, a folder or a glob of shards) into *pieces*: spans of about
:data:`PIECE_LINES` lines of a JSONL file (:func:`ragmeter.io.readers.line_spans`), or a whole CSV or Parquet
file (a quoted CSV cell may span lines). Ray Data then makes two passes over the pieces:

1. **check**: each piece's records are parsed and validated on the workers, with the local reader's errors
   (file, line, field); the driver checks ids across pieces (an id repeated for the same model) and, as a
   local run does, stops before any scoring when a record is bad, unless ``skip_invalid``;
2. **score**: ``map_batches`` on an actor pool of ``workers`` actors, each of which loads the embedder and
   the token encoder once and opens the judge once (texts already embedded by another actor come from a
   shared :class:`~ragmeter.engine.ray.shared_embeddings.EmbeddingStore`), scores one piece per call with
   :func:`ragmeter.evaluate`
   (the local engine, in its batches) and returns the piece's ``items.jsonl`` rows, its judge usage and its
   failed calls. Ray keeps the pieces in order, so the driver appends the rows to ``items.jsonl`` in input
   order as they arrive and computes the summaries from the score columns exactly as a local run does.

The embeddings of the packaged int8 ONNX model do not depend on which texts share a batch, so every item's
scores, and so every summary with the same seed, equal the local run's. Faults: an actor that dies is
restarted by Ray and its piece is scored again; each actor writes every piece it finishes to a shard of the run
folder (``items.parts/``), so a run stopped as a whole goes on with ``--resume`` from the rows in
``items.jsonl`` and those shards, scoring only the pieces found in neither. Judge calls from all actors together stay
within the judge's concurrency (each actor gets its share), and go through the one verdict cache (SQLite: on
one machine, every actor shares it; on a cluster, give each node the same path on shared storage).
"""

from __future__ import annotations

import glob
import itertools
import json
import logging
import os
import socket
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ragmeter.core.errors import ConfigError, InputError, MissingDependencyError, RagmeterError
from ragmeter.core.files import atomic_write_text
from ragmeter.core.records import Record
from ragmeter.core.settings import Settings
from ragmeter.core.signature import Signature
from ragmeter.engine.context import RunContext
from ragmeter.engine.evaluation import ItemTable, evaluate
from ragmeter.engine.ray.shared_embeddings import EmbeddingStore, SharedEmbedder
from ragmeter.io.formats import FORMATS, REGISTRY, detect_format, resolve_options
from ragmeter.io.ids import repeated_id
from ragmeter.io.readers import FileCheck, raw_records
from ragmeter.io.rows import Span, line_spans
from ragmeter.judges import JudgeConfig, open_judge, planning_judge
from ragmeter.judges.accounting import USAGE_COUNTERS, JudgeUsage, JudgingLog
from ragmeter.judges.backends import backend_kind, backend_kinds
from ragmeter.metrics import Metric, resolve_metrics
from ragmeter.models import CachedEmbedder, embedder_backend, load_embedder, load_token_encoder
from ragmeter.models.base import CachedTokenEncoder
from ragmeter.results.run_result import EvalResult

__all__ = [
    "PIECE_LINES",
    "InputCheck",
    "Piece",
    "check_judge",
    "check_pieces",
    "connect",
    "evaluate_ray",
    "input_files",
    "plan_pieces",
    "rows_in_shards",
]

#: Lines of a JSONL file per piece: the unit of work an actor takes, is retried whole, and resumes from.
PIECE_LINES = 2_000
_SUFFIXES = (".jsonl", ".json", ".csv", ".tsv", ".parquet", ".pq")
RowSink = Callable[[list[dict[str, Any]]], None]


@dataclass(frozen=True)
class Piece:
    """One unit of work: ``path`` read as ``kind`` (with its reader's ``options``), the lines of ``span`` only
    (JSONL) or the whole file."""

    index: int
    path: str
    kind: str
    span: Span | None
    options: tuple[tuple[str, str], ...] = ()

    def records(self, column_map: Mapping[str, str]) -> Iterator[tuple[int, Record | InputError]]:
        return raw_records(Path(self.path), self.kind, column_map, self.span, options=dict(self.options))


def input_files(source: str | Path) -> list[Path]:
    """The files of ``source``: a file, a folder (its record files, by name) or a glob pattern (sorted)."""
    path = Path(source)
    if path.is_file():
        return [path]
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in _SUFFIXES)
        if not files:
            raise InputError(f"the folder holds no record files ({', '.join(_SUFFIXES)})", path=str(path))
        return files
    matches = sorted(Path(p) for p in glob.glob(str(source)) if Path(p).is_file())
    if not matches:
        raise InputError("no such file, folder or glob match", path=str(source))
    return matches


def plan_pieces(
    files: Sequence[Path],
    input_format: str = "auto",
    lines: int = PIECE_LINES,
    *,
    options: Mapping[str, str] | None = None,
) -> list[Piece]:
    """The pieces of ``files``, in input order (the format of each file detected unless given; ``options``: the
    formats' reader options, keyed as :func:`~ragmeter.io.formats.resolve_options` takes them). A file of a format
    that cannot be cut at line ends (CSV, Parquet, traces) is one piece."""
    if input_format not in FORMATS:
        raise ConfigError(f"unknown input format {input_format!r}: choose one of {', '.join(FORMATS)}")
    pieces: list[Piece] = []
    for path in files:
        kind = detect_format(path) if input_format == "auto" else input_format
        resolved = tuple(resolve_options(kind, options or {}).items())
        if not REGISTRY[kind].spans:
            pieces.append(Piece(len(pieces), str(path), kind, None, resolved))
            continue
        spans = list(line_spans(path, lines)) or [Span(0, 0, 1)]  # an empty file: one piece, which says so
        pieces.extend([Piece(len(pieces) + i, str(path), kind, span, resolved) for i, span in enumerate(spans)])
    return pieces


# ---------------------------------------------------------------- the check pass


def _error_dict(error: InputError) -> dict[str, Any]:
    return {"reason": error.reason, "path": error.path, "line": error.line, "field": error.field}


def _check_piece(row: dict[str, Any], column_map: Mapping[str, str]) -> dict[str, Any]:
    """A piece's valid records as (id, model id, line), and every error (a file-wide one apart)."""
    piece = _piece(row)
    ids: list[list[Any]] = []
    errors: list[dict[str, Any]] = []
    file_error = None
    for line, item in piece.records(column_map):
        if isinstance(item, InputError):
            if item.line is None:
                file_error = _error_dict(item)
            else:
                errors.append(_error_dict(item))
        else:
            ids.append([item.id, item.model_id, line])
    return {
        "index": piece.index,
        "ids": json.dumps(ids),
        "errors": json.dumps(errors),
        "file_error": json.dumps(file_error),
    }


@dataclass
class InputCheck(FileCheck):
    """:class:`FileCheck` of every piece, with the lines to leave out of scoring (bad records) by piece, and the
    valid records of each piece with their ids in input order."""

    skip: dict[int, list[int]] = field(default_factory=dict)
    counts: list[int] = field(default_factory=list)
    keys: list[tuple[str, str | None]] = field(default_factory=list)


def check_pieces(pieces: Sequence[Piece], column_map: Mapping[str, str], *, max_errors: int = 50) -> InputCheck:
    """The check pass (see the module docstring): run on the cluster, gathered on the driver."""
    ray_data = _ray_data()
    check = InputCheck(counts=[0] * len(pieces))
    seen: dict[tuple[str, str | None], tuple[str, int]] = {}
    records_in: dict[str, int] = {}
    dataset = ray_data.from_items([_piece_row(p) for p in pieces], override_num_blocks=len(pieces)).map(
        _check_piece, fn_kwargs={"column_map": dict(column_map)}
    )
    for row in _worker_errors_raised_as_ours(dataset.iter_rows()):  # in input order: ids are checked in it
        piece = pieces[row["index"]]
        skip = check.skip.setdefault(piece.index, [])
        problems = [InputError(e.pop("reason"), **e) for e in json.loads(row["errors"])]
        valid = 0
        for item_id, model_id, line in json.loads(row["ids"]):
            key = (item_id, model_id)
            first = seen.setdefault(key, (piece.path, line))
            if first != (piece.path, line):
                where = f"line {first[1]}" if first[0] == piece.path else f"{first[0]}:{first[1]}"
                problems.append(repeated_id(item_id, model_id, where, path=piece.path, line=line))
                continue
            valid += 1
            check.keys.append(key)
        for problem in sorted(problems, key=lambda e: e.line or 0):
            check.n_invalid += 1
            skip.append(int(problem.line or 0))
            if len(check.errors) < max_errors:
                check.errors.append(problem)
        file_error = json.loads(row["file_error"])
        if file_error is not None and check.file_error is None:
            check.file_error = InputError(file_error.pop("reason"), **file_error)
        records_in[piece.path] = records_in.get(piece.path, 0) + valid + len(problems)
        check.n_valid += valid
        check.counts[piece.index] = valid
    if check.file_error is None:
        empty = next((path for path in dict.fromkeys(p.path for p in pieces) if not records_in.get(path)), None)
        if empty is not None:
            check.file_error = InputError("the file holds no records", path=empty)
    return check


# ---------------------------------------------------------------- the score pass


class _Scorer:
    """A Ray actor: the models loaded and the judge opened once; one piece scored per call."""

    def __init__(
        self,
        metrics: list[str] | None,
        settings: Settings,
        column_map: dict[str, str],
        judge: JudgeConfig | None,
        skip: dict[int, list[int]],
        batch_size: int,
        store: Any,
        shards: str | None,
    ) -> None:
        chosen = resolve_metrics(metrics)
        resources = {r for m in chosen for r in m.resources}
        self.metrics, self.settings, self.column_map = metrics, settings, column_map
        self.skip = {index: set(lines) for index, lines in skip.items()}
        self.batch_size = batch_size
        self.shards = Path(shards) if shards is not None else None
        # cached here, so that an actor asks for a text once, not once per piece; and the store shares what
        # the actors embed, so that the cluster embeds each text once. English records' backend is shared; a run
        # that meets another language loads that one's into the dict, which the actor keeps for its next piece
        self.embedder = (
            {
                embedder_backend(settings.embedder): CachedEmbedder(
                    SharedEmbedder(load_embedder(settings.embedder), store)
                )
            }
            if "embedder" in resources
            else None
        )
        self.token_encoder = (
            CachedTokenEncoder(load_token_encoder(settings.bertscore_model, settings.bertscore_layer))
            if "token_encoder" in resources
            else None
        )
        self.judge = open_judge(judge) if judge is not None else None

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, list[Any]] = {"index": [], "rows": [], "usage": [], "failures": []}
        for values in zip(*batch.values(), strict=True):
            piece = _piece(dict(zip(batch, values, strict=True)))
            skip = self.skip.get(piece.index, set())
            records = (
                item for line, item in piece.records(self.column_map) if isinstance(item, Record) and line not in skip
            )
            rows: list[dict[str, Any]] = []
            result = evaluate(
                records,
                metrics=self.metrics,
                settings=self.settings,
                embedder=self.embedder,
                token_encoder=self.token_encoder,
                judge=self.judge,
                on_items=rows.extend,
                batch_size=self.batch_size,
            )
            text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
            if self.shards is not None:  # the piece's rows, kept should the run stop before the driver has them
                atomic_write_text(shard_path(self.shards, piece.index), text)
            out["index"].append(piece.index)
            out["rows"].append(text)
            judging = result.judging
            out["usage"].append(
                json.dumps({} if judging is None else {name: u.to_dict() for name, u in judging.usage.items()})
            )
            out["failures"].append(json.dumps([] if judging is None else list(judging.failures), ensure_ascii=False))
        return out

    def __del__(self) -> None:
        if getattr(self, "judge", None) is not None:
            self.judge.close()  # type: ignore[union-attr]


def _scorer_class(**config: Any) -> type[_Scorer]:
    """:class:`_Scorer` with its arguments bound in the class, which Ray ships with the code: arguments kept in
    the object store instead could be gone when Ray restarts a lost actor."""

    class Scorer(_Scorer):
        def __init__(self) -> None:
            super().__init__(**config)

    return Scorer


def shard_path(folder: Path, index: int) -> Path:
    """Where an actor writes the rows of piece ``index``."""
    return folder / f"piece-{index:06d}.jsonl"


def evaluate_ray(
    pieces: Sequence[Piece],
    check: InputCheck,
    *,
    metrics: Sequence[str] | None = None,
    settings: Settings | None = None,
    column_map: Mapping[str, str] | None = None,
    judge: JudgeConfig | None = None,
    workers: int | None = None,
    on_items: RowSink | None = None,
    finished: Sequence[Mapping[str, Any]] = (),
    shards: Path | None = None,
    batch_size: int = 256,
) -> EvalResult:
    """Score the valid records of ``pieces`` (checked by :func:`check_pieces`) on the Ray cluster the process
    is connected to (:func:`connect`); ``on_items`` gets the rows in input order, as :func:`ragmeter.evaluate`
    gives them. ``judge`` is opened on every actor, each with its share of the judge's concurrency.

    An interrupted run goes on from what it kept: ``finished``, the rows it had written in order (the pieces
    wholly in them are not scored again), and ``shards``, a folder (readable by every node) where each actor
    writes the rows of every piece it finishes: a piece found there is read back, not scored again, whatever
    order the actors finished in."""
    settings = settings or Settings()
    chosen = resolve_metrics(metrics)
    workers = workers or _cluster_cpus()
    judged = any("judge" in m.resources for m in chosen)
    if judged and judge is None:
        raise ConfigError(
            f"the judged metrics need a judge: pass judge=JudgeConfig(...) of a kind every actor can "
            f"open ({', '.join(_shareable_kinds())})"
        )
    check_judge(judge)
    actor_judge = None
    if judge is not None:
        concurrency = judge.concurrency or backend_kind(judge.kind).concurrency
        actor_judge = replace(judge, concurrency=max(1, concurrency // workers))
        if actor_judge.cache is not None:
            actor_judge.cache.parent.mkdir(parents=True, exist_ok=True)
    table = ItemTable(chosen)
    judging = JudgingLog() if judged else None
    _take_finished(table, finished, check, judging)
    starts = list(itertools.accumulate(check.counts, initial=0))  # each piece's first row in items.jsonl
    done = len(finished)
    left = _pieces_left(pieces, check, done)
    kept = _kept_shards(left, check, shards)
    todo = [p for p in left if p.index not in kept]
    usage: dict[str, JudgeUsage] = {}
    if shards is not None:
        shards.mkdir(parents=True, exist_ok=True)
    outputs: Iterator[dict[str, Any]] = iter(())
    if todo:
        ray_data = _ray_data()
        store = _ray().remote(EmbeddingStore).options(num_cpus=0).remote()
        scorer = _scorer_class(
            metrics=list(metrics) if metrics is not None else None,
            settings=settings,
            column_map=dict(column_map or {}),
            judge=actor_judge,
            skip=check.skip,
            batch_size=batch_size,
            store=store,
            shards=str(shards) if shards is not None else None,
        )
        dataset = ray_data.from_items([_piece_row(p) for p in todo], override_num_blocks=len(todo)).map_batches(
            scorer, batch_size=1, num_cpus=1, compute=ray_data.ActorPoolStrategy(size=min(workers, len(todo)))
        )
        outputs = _worker_errors_raised_as_ours(dataset.iter_rows())
    for piece in left:  # in input order: the scored pieces come from Ray in it, the kept ones from their shards
        out: Mapping[str, Any] = (
            {"rows": kept[piece.index], "usage": "{}", "failures": "[]"} if piece.index in kept else next(outputs)
        )
        already = max(0, done - starts[piece.index])  # rows of a piece that a torn write left in items.jsonl
        # split at "\n" only: a row may hold U+2028 and its kin unescaped, which splitlines() would cut at
        rows = [json.loads(line) for line in out["rows"].split("\n")[:-1]][already:]
        logged = len(judging.failures) if judging is not None else 0
        for row in rows:
            table.add_row(row, judging)
        if judging is not None:
            _add_usage(usage, json.loads(out["usage"]))
            with_raw = json.loads(out["failures"])  # the same failed calls, with the judge's raw replies
            if not already and len(with_raw) == len(judging.failures) - logged:
                judging.failures[logged:] = with_raw
        if on_items is not None and rows:
            on_items(rows)
    identity, signatures = _signatures(chosen, settings, judge)
    report = judging.report(identity, usage) if judging is not None and identity is not None else None
    return table.result(chosen, signatures, settings, report)


def rows_in_shards(pieces: Sequence[Piece], check: InputCheck, done: int, shards: Path) -> int:
    """How many rows a resumed run reads back from the piece shards in ``shards`` (beyond the ``done`` rows it
    kept in order), as :func:`evaluate_ray` would read them."""
    kept = _kept_shards(_pieces_left(pieces, check, done), check, shards)
    return sum(check.counts[index] for index in kept)


def _pieces_left(pieces: Sequence[Piece], check: InputCheck, done: int) -> list[Piece]:
    """The pieces with valid rows beyond the first ``done`` rows of the run's output."""
    ends = list(itertools.accumulate(check.counts))
    return [p for p in pieces if ends[p.index] > done and check.counts[p.index] > 0]


def _kept_shards(left: Sequence[Piece], check: InputCheck, shards: Path | None) -> dict[int, str]:
    """The rows of the pieces of ``left`` that an interrupted run finished and left whole in ``shards``."""
    if shards is None:
        return {}
    kept = {}
    for piece in left:
        text = _read_shard(shards, piece.index, check.counts[piece.index])
        if text is not None:
            kept[piece.index] = text
    return kept


def _read_shard(folder: Path, index: int, rows: int) -> str | None:
    """The rows a finished piece left in its shard, or ``None`` when there is none or it is not whole."""
    path = shard_path(folder, index)
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    return text if text.endswith("\n") and text.count("\n") == rows else None


def check_judge(judge: JudgeConfig | None) -> None:
    """Refuse a judge the actors cannot share: one whose backend starts a server (the packaged llama.cpp one)
    would start one per actor."""
    if judge is not None and backend_kind(judge.kind).capabilities.starts_server:
        raise ConfigError(
            f"the Ray engine cannot start the server of a {judge.kind!r} judge on every actor: serve "
            "the model once (llama-server, vLLM, …) and give a judge of a kind that talks to it "
            f"({', '.join(_shareable_kinds())})"
        )


def _shareable_kinds() -> list[str]:
    """The judge kinds whose backends start nothing, so every actor can open one."""
    return [kind for kind in backend_kinds() if not backend_kind(kind).capabilities.starts_server]


def _take_finished(
    table: ItemTable, finished: Sequence[Mapping[str, Any]], check: InputCheck, judging: JudgingLog | None
) -> None:
    keys = check.keys
    for position, row in enumerate(finished):
        if position >= len(keys) or (row.get("id"), row.get("model_id")) != keys[position]:
            raise ConfigError(
                f"the finished item {position + 1} ({row.get('id')!r}) is not record "
                f"{position + 1} of the input: the interrupted run scored other records"
            )
        table.add_row(row, judging)


def _add_usage(total: dict[str, JudgeUsage], piece: Mapping[str, Mapping[str, Any]]) -> None:
    for prompt, counters in piece.items():
        usage = total.setdefault(prompt, JudgeUsage())
        for name in USAGE_COUNTERS:
            setattr(usage, name, getattr(usage, name) + int(counters.get(name, 0)))
        usage.failure_reasons.update(counters.get("failure_reasons", {}))


def _signatures(
    chosen: list[Metric], settings: Settings, judge: JudgeConfig | None
) -> tuple[str | None, dict[str, Signature]]:
    """The judge's identity and every metric's signature, as a local run gives them."""
    planned = planning_judge(judge) if judge is not None else None
    try:
        run = RunContext(settings, judge=planned)
        return (
            planned.identity if planned is not None else None,
            {m.name: Signature(m.name, m.signature(run)) for m in chosen},
        )
    finally:
        if planned is not None:
            planned.close()


# ---------------------------------------------------------------- Ray itself


def _worker_errors_raised_as_ours(rows: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """``rows``, with an error raised on a worker re-raised as the :class:`RagmeterError` it wraps (a bad
    option, a judge that failed for good), else as a :class:`RagmeterError` naming it: no Ray traceback."""
    try:
        yield from rows
    except RagmeterError:
        raise
    except Exception as exc:  # Ray wraps a worker's error in its own exception types
        cause: BaseException | None = exc
        while cause is not None and not isinstance(cause, RagmeterError):
            cause = getattr(cause, "cause", None) or cause.__cause__
        if cause is not None:
            raise cause from None
        raise RagmeterError(f"a Ray worker failed: {type(exc).__name__}: {str(exc).splitlines()[0]}") from exc


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise MissingDependencyError("ray", "ray", "--engine ray") from exc
    return ray


def _ray_data() -> Any:
    """``ray.data``, set to hand rows back in input order (the driver writes and checks them in it)."""
    _ray()
    import ray.data

    ray.data.DataContext.get_current().execution_options.preserve_order = True
    return ray.data


def connect(address: str | None = None, *, cpus: int | None = None) -> None:
    """Join the Ray cluster at ``address`` (``auto``: the one ``ray start`` began on this machine), or start a
    local one with ``cpus`` CPUs; nothing when this process is already connected."""
    ray = _ray()
    if ray.is_initialized():
        return
    # Ray's own start-up, progress and scheduling lines stay in its log files: the report is ragmeter's
    os.environ.setdefault("RAY_DATA_LOG_LEVEL", "ERROR")
    logging.getLogger("ray").setLevel(logging.ERROR)
    options: dict[str, Any] = {"log_to_driver": False, "include_dashboard": False, "logging_level": logging.ERROR}
    if address and address != "auto":
        _check_reachable(address)
    try:
        if address:
            ray.init(address=address, **options)
        else:
            ray.init(num_cpus=cpus, **options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        raise ConfigError(
            f"cannot start or join {where}: {str(exc).rstrip('.')}. Start a cluster with 'ray start "
            "--head' (then --ray-address auto), or leave --ray-address out to start one for this run"
        ) from None
    ray.data.DataContext.get_current().enable_progress_bars = False


def _check_reachable(address: str) -> None:
    """Fail in seconds, with what to do, where nothing listens at ``address`` (Ray itself retries for minutes)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not port.isdigit():
        raise ConfigError(f"--ray-address {address}: expected HOST:PORT, ray://HOST:PORT or auto")
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=5).close()
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise ConfigError(
            f"--ray-address {address}: nothing answers there ({reason}). Give HOST:PORT of a "
            "running Ray head (ray start --head prints it), ray://HOST:10001, or auto"
        ) from None


def _cluster_cpus() -> int:
    return max(1, int(_ray().cluster_resources().get("CPU", 1)))


def _piece_row(piece: Piece) -> dict[str, Any]:
    return {
        "index": piece.index,
        "path": piece.path,
        "kind": piece.kind,
        "span": json.dumps(asdict(piece.span) if piece.span is not None else None),
        "options": json.dumps(piece.options),
    }


def _piece(row: Mapping[str, Any]) -> Piece:
    span = json.loads(row["span"])
    return Piece(
        int(row["index"]),
        str(row["path"]),
        str(row["kind"]),
        Span(**span) if span else None,
        tuple((str(k), str(v)) for k, v in json.loads(row["options"])),
    )
