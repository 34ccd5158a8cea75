"""The run folder (``ragmeter run --out``): what a run writes there, and how an interrupted run goes on.

::

    run.json              the manifest: input (path, sha256), metrics, settings, judge, limit; status
    items.jsonl           per-item rows, appended batch by batch as they finish
    summary.json          run figures and signatures (at the end)
    judge_failures.jsonl  every failed judge call, with the raw reply (at the end, with a judge)
    items.parquet         the per-item table (``--parquet``, at the end)
    judge-cache.sqlite    the judge's verdict cache (its default place)
    items.parts/          --engine ray: the rows of each piece an actor finished, while the run lasts

A run is marked ``running`` in ``run.json`` only once scoring can start (the judge, if any, is open), and
``finished`` when every output is written. A folder holding a ``running`` run is refused unless the run is
resumed with the same manifest: the rows already in ``items.jsonl`` are kept (a torn last line is cut) and
only the records after them are scored.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from ragmeter._files import atomic_target, atomic_write_text, complete_jsonl_rows
from ragmeter.errors import ConfigError, MissingDependencyError
from ragmeter.io.writers import ItemsWriter
from ragmeter.result import EvalResult
from ragmeter.settings import Settings

__all__ = ["CACHE_FILE", "PIECE_SHARDS", "RunFolder", "item_settings", "read_json_object", "require_parquet"]

MANIFEST = "run.json"
ITEMS = "items.jsonl"
SUMMARY = "summary.json"
FAILURES = "judge_failures.jsonl"
PARQUET = "items.parquet"
CACHE_FILE = "judge-cache.sqlite"
PIECE_SHARDS = "items.parts"


def require_parquet() -> None:
    """Fail now, before any scoring, when Parquet output cannot be written."""
    try:
        import pyarrow  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError("pyarrow", "parquet", "--parquet (writing items.parquet)") from exc


def item_settings(settings: Settings) -> dict[str, Any]:
    """The settings that change per-item values (the interval settings only change the summary, which a
    resumed run recomputes), as plain JSON values."""
    return {"tau_sim": settings.tau_sim, "idk": settings.idk.version,
            "abstain_correct_for": sorted(a.value for a in settings.abstain_correct_for),
            "embedder": settings.embedder, "bertscore_model": settings.bertscore_model,
            "bertscore_layer": settings.bertscore_layer, "bertscore_baseline": settings.bertscore_baseline,
            "idk_eval_source": settings.idk_eval_source, "ndcg_ideal": settings.ndcg_ideal,
            "ndcg_gain": settings.ndcg_gain, "source_labels": settings.source_labels,
            "rb_llm_unparsed": settings.rb_llm_unparsed, "check_evidence": settings.check_evidence}


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def files_sha256(files: Sequence[Path]) -> str:
    """One file's sha256; for several (the shards of one input), the sha256 of their names and digests."""
    if len(files) == 1:
        return file_sha256(files[0])
    return hashlib.sha256("".join(f"{f}:{file_sha256(f)}\n" for f in files).encode()).hexdigest()


class RunFolder:
    """The ``--out`` folder of one run."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._manifest: dict[str, Any] | None = None

    @property
    def items_path(self) -> Path:
        return self.path / ITEMS

    def check_writable(self) -> None:
        """Make sure the folder can be made and written to, before any scoring (nothing is created yet)."""
        if self.path.exists() and not self.path.is_dir():
            raise ConfigError(f"--out {self.path} is a file: give a folder (it is created if missing)")
        existing = self.path
        while not existing.exists():
            existing = existing.parent
        if not existing.is_dir():
            raise ConfigError(f"--out {self.path} cannot be created: {existing} is a file")
        if not os.access(existing, os.W_OK | os.X_OK):
            raise ConfigError(f"--out {self.path}: cannot write in {existing}; choose a folder you can write to")

    def prepare(self, manifest: Mapping[str, Any], *, resume: bool) -> list[dict[str, Any]]:
        """Check ``manifest`` (what this run is: input, metrics, settings, judge, limit) against the folder;
        return the rows of the interrupted run to keep (``resume``), else ``[]``. Writes nothing, except
        that a torn last line of ``items.jsonl`` is cut.

        A folder holding an unfinished run with finished items is only continued with ``resume``, and only
        with an equal manifest; ``resume`` with nothing to resume is an error too."""
        previous = self._read_manifest()
        unfinished = previous is not None and previous.get("status") == "running"
        self._manifest = dict(manifest)
        if not resume:
            if unfinished and (complete_jsonl_rows(self.items_path) or any((self.path / PIECE_SHARDS).glob("*"))):
                raise ConfigError(f"{self.path} holds an interrupted run: pass --resume to finish it (its "
                                  "finished items are kept), or choose another --out")
            return []  # nothing finished to lose (a run that stopped before its first item): start afresh
        if not unfinished:
            raise ConfigError(f"--resume: {self.path} holds no interrupted run to finish")
        changed = [key for key in manifest if previous.get(key) != manifest[key]]  # type: ignore[union-attr]
        if changed:
            raise ConfigError(f"--resume: the interrupted run in {self.path} had other {', '.join(changed)}; "
                              "rerun it with the same input and options, or choose another --out")
        rows = complete_jsonl_rows(self.items_path)
        if not all(isinstance(row, dict) for row in rows):
            raise ConfigError(f"--resume: {self.items_path} is not a ragmeter items file; choose another --out")
        return rows

    def start(self) -> None:
        """Mark the run ``running`` (call once nothing can fail before scoring starts)."""
        if self._manifest is None:
            raise RuntimeError("RunFolder.prepare() must come before start()")
        self._manifest.update(status="running", started=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create the --out folder {self.path}: {exc.strerror or exc}") from None
        atomic_write_text(self.path / MANIFEST, json.dumps(self._manifest, indent=2))

    def items_writer(self, *, resume: bool) -> ItemsWriter:
        return ItemsWriter(self.items_path, append=resume)

    def finish(self, result: EvalResult, *, extra: Mapping[str, Any], parquet: bool) -> None:
        """Write the summary, the judge's failures and (``parquet``) the items table, then mark the run
        finished."""
        atomic_write_text(self.path / SUMMARY, json.dumps({**result.to_dict(), **extra}, indent=2,
                                                          ensure_ascii=False))
        if result.judging is not None:
            write_failures(self.path / FAILURES, result.judging.failures)
        if parquet:
            write_parquet(result, self.path / PARQUET)
        if self._manifest is not None:
            self._manifest["status"] = "finished"
            atomic_write_text(self.path / MANIFEST, json.dumps(self._manifest, indent=2))

    def _read_manifest(self) -> dict[str, Any] | None:
        return read_json_object(self.path / MANIFEST, "delete it or choose another --out")


def read_json_object(path: Path, advice: str) -> dict[str, Any] | None:
    """The JSON object in a run folder's file (``run.json``, ``summary.json``): ``None`` when the file is not
    there or holds something else than an object; a file that cannot be read or parsed is a
    :class:`ConfigError` ending with ``advice``."""
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} cannot be read ({exc}); {advice}") from None
    return data if isinstance(data, dict) else None


def write_failures(path: Path, failures: Sequence[Mapping[str, Any]]) -> None:
    """Every failed judge call with its reason and raw reply, one JSON line each."""
    atomic_write_text(path, "".join(json.dumps(dict(f), ensure_ascii=False) + "\n" for f in failures))


def write_parquet(result: EvalResult, path: Path) -> None:
    """The per-item table (one column per metric, plus ``id``, ``model_id`` and the ``undefined`` reasons)."""
    require_parquet()
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns: dict[str, Any] = {"id": pa.array(result.item_ids, type=pa.string())}
    if any(m is not None for m in result.model_ids):
        columns["model_id"] = pa.array(result.model_ids, type=pa.string())
    for metric, values in result.scores.items():
        columns[metric] = pa.array(values, type=pa.float64(), from_pandas=True)
    reasons = [json.dumps({m: r[i] for m, r in result.undefined.items() if i in r}) for i in range(len(result))]
    columns["undefined"] = pa.array(reasons, type=pa.string())
    with atomic_target(path) as temporary:
        pq.write_table(pa.table(columns), temporary)
