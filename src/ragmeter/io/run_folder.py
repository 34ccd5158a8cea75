"""The run folder (``ragmeter run --out``): what a run writes there, and how an interrupted run goes on.

::

    run.json              the manifest: input (path, sha256), metrics, settings, judge, limit; status
    items.jsonl           per-item rows, appended batch by batch as they finish
    summary.json          run figures and signatures (at the end)
    judge_failures.jsonl  every failed judge call, with the raw reply (at the end, with a judge)
    items.parquet         the per-item table (``--parquet``, at the end)
    judge-cache.sqlite    the judge's verdict cache (its default place)
    items.parts/          --engine ray: the rows of each piece an actor finished, while the run lasts

Nothing is written until the first items are ready: a run that fails before (a judge that refuses the key)
leaves the folder as it was. Then the run is marked ``running`` in ``run.json``, and ``finished`` when every
output is written. A folder holding a ``running`` run is refused unless the run is resumed with the same
manifest: the rows already in ``items.jsonl`` are kept (a torn last line is cut; a bad line in the middle is
cut with the rows after it, and :attr:`RunFolder.notes` says so) and only the records after them are scored.
A folder holding a finished run, or files of these names that no run wrote, is replaced only with
``overwrite``; an input of the run may not be one of these files (:meth:`RunFolder.check`).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.core.errors import ConfigError, MissingDependencyError
from ragmeter.core.files import (
    RUN_FOLDER_FILES,
    Outputs,
    atomic_write_text,
    check_folder_writable,
    complete_jsonl_rows,
    file_sha256,
    json_number,
    writing,
)
from ragmeter.core.settings import Settings
from ragmeter.io.writers import ItemsWriter

__all__ = [
    "CACHE_FILE",
    "FOLDER_FILES",
    "PIECE_SHARDS",
    "Manifest",
    "RunFolder",
    "files_read",
    "input_candidates",
    "item_row",
    "item_settings",
    "read_json_object",
    "require_parquet",
]

#: Every file a run folder owns: an input must not be one of them, none may be a symlink or a device, and none is
#: another command's output.
FOLDER_FILES = RUN_FOLDER_FILES
MANIFEST, ITEMS, SUMMARY, FAILURES, PARQUET, CACHE_FILE = FOLDER_FILES
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
    return {
        "language": settings.language,
        "tau_sim": settings.tau_sim,
        "idk": settings.idk.version,
        "abstain_correct_for": sorted(a.value for a in settings.abstain_correct_for),
        "embedder": settings.embedder,
        "bertscore_model": settings.bertscore_model,
        "bertscore_layer": settings.bertscore_layer,
        "bertscore_baseline": settings.bertscore_baseline,
        "idk_eval_source": settings.idk_eval_source,
        "ndcg_ideal": settings.ndcg_ideal,
        "ndcg_gain": settings.ndcg_gain,
        "source_labels": settings.source_labels,
        "rb_llm_unparsed": settings.rb_llm_unparsed,
        "check_evidence": settings.check_evidence,
        "normalization": settings.normalization,
        "nugget_source": settings.nugget_source,
    }


def files_sha256(files: Sequence[Path]) -> str:
    """One file's sha256; for several (the shards of one input), the sha256 of their names and digests."""
    if len(files) == 1:
        return file_sha256(files[0])
    return hashlib.sha256("".join(f"{f}:{file_sha256(f)}\n" for f in files).encode()).hexdigest()


def _named_change(key: str, before: Any, now: Any) -> str:
    """A manifest key that changed, with the settings that did where it is ``settings`` (a run folder of an older
    ragmeter lacks a newer setting: it is named too)."""
    if key != "settings" or not isinstance(before, dict) or not isinstance(now, dict):
        return key
    return f"settings ({', '.join(sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k)))})"


@dataclass(frozen=True)
class Manifest:
    """What a run is, as ``run.json`` holds it (with the run's status and start time): the input (path as given,
    path from the run folder, sha256, format, ``--map`` as given, the format's reader options), the qrels file,
    the metrics, the settings that change an item's values, the judge (identity and claims mode) and the limit.
    A resumed run must have an equal one, but for ``input_from_run``, which only says where the input is."""

    input: str
    input_sha256: str
    input_format: str
    map: list[str]
    qrels: str | None
    metrics: list[str]
    settings: dict[str, Any]
    judge: str | None
    limit: int | None
    format_options: dict[str, str] = field(default_factory=dict)
    #: the input's path from the run folder, so that a run folder committed with its input beside it finds it
    #: from any working directory (``input`` is as given, from the working directory of the run)
    input_from_run: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The manifest as ``run.json`` holds it; ``format_options`` only when some were given, so that a folder
        written before they existed still resumes."""
        data = asdict(self)
        if not self.format_options:
            del data["format_options"]
        return data


#: The manifest's keys that say where a file is, not what the run is: a resumed run may differ there.
_LOCATION_KEYS = ("input_from_run",)


def input_candidates(folder: Path, manifest: Mapping[str, Any]) -> list[Path]:
    """Where the input that a run folder's ``run.json`` names may be, in the order to try: its path from the run
    folder, then its path as given (from the working directory); only the files that are there."""
    found = []
    if isinstance(manifest.get("input_from_run"), str):
        found.append(folder / manifest["input_from_run"])
    if isinstance(manifest.get("input"), str) and manifest["input"]:
        found.append(Path(manifest["input"]))
    return [path for path in dict.fromkeys(found) if path.is_file()]


def files_read(run: str | Path) -> list[Path]:
    """Every file a command that reads the run ``run`` may read, so that none of its outputs is one of them: for
    a run folder, or a file in one, the folder's own files and the files its ``run.json`` names (the input records
    wherever they may be found, the qrels file); for any other file, the file itself. A ``run.json`` that cannot
    be read adds nothing (the command that reads it reports it)."""
    run = Path(run)
    folder = run if run.is_dir() else run.parent
    if not (folder / MANIFEST).is_file() and not run.is_dir():
        return [run]
    files = [run, *(folder / name for name in FOLDER_FILES)]
    try:
        manifest = read_json_object(folder / MANIFEST, "")
    except ConfigError:
        manifest = None
    if manifest is not None:
        files += input_candidates(folder, manifest)
        if isinstance(manifest.get("qrels"), str):
            files.append(Path(manifest["qrels"]))
    return files


class RunFolder:
    """The ``--out`` folder of one run: what it may hold, and when it is written.

    Nothing is written there until the first items are ready (:meth:`items_writer` starts the run then, or
    :meth:`finish` does): a run that fails before (a judge that refuses the key, a server that is not there)
    leaves the folder as it was, or absent."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._manifest: dict[str, Any] | None = None
        self._started = False
        #: what the folder's preparation had to do that the user should hear of (rows dropped on resuming)
        self.notes: list[str] = []

    @property
    def items_path(self) -> Path:
        return self.path / ITEMS

    def check(self, outputs: Outputs) -> None:
        """Before any work: the folder can be made and written to, none of the command's inputs is one of the
        folder's own files (``--out DIR`` with ``DIR/items.jsonl`` as the input), and every file the folder owns
        is a regular file or absent (a symlink or device there is never written through). Creates nothing."""
        if self.path.exists() and not self.path.is_dir():
            what = "a file" if self.path.is_file() else "not a folder"
            raise ConfigError(f"--out {self.path} is {what}: give a folder (it is created if missing)")
        check_folder_writable(self.path, f"--out {self.path}")
        outputs.reserve(self.path, f"the run folder (--out {self.path})")
        for name in (*FOLDER_FILES, PIECE_SHARDS):
            outputs.reserve(self.path / name, f"the run folder's own {name} (--out {self.path})")
        if not self.path.is_dir():
            return
        for path in self._owned_files():
            same = outputs.input_at(path)
            if same is not None:
                raise ConfigError(
                    f"the input {same} is the run folder's own {path.relative_to(self.path)}, which "
                    f"a run in --out {self.path} writes: copy it elsewhere, or choose another --out"
                )
            if path.is_symlink() or (path.exists() and not path.is_file()):
                raise ConfigError(
                    f"{path} is not a regular file (a symlink or a special file): a run folder's "
                    "files are its own; move it away, or choose another --out"
                )

    def unfinished_rows(self) -> bool:
        """The folder holds an unfinished run with finished items, which ``--resume`` goes on from."""
        try:
            manifest = self._read_manifest()
        except ConfigError:
            return False
        return manifest is not None and manifest.get("status") == "running" and _has_rows(self.items_path)

    @property
    def started(self) -> bool:
        """Whether the run has written anything in the folder yet."""
        return self._started

    def _owned_files(self) -> list[Path]:
        parts = self.path / PIECE_SHARDS
        shards = sorted(parts.iterdir()) if parts.is_dir() and not parts.is_symlink() else []
        return [self.path / name for name in FOLDER_FILES] + shards

    def prepare(
        self, manifest: Manifest | Mapping[str, Any], *, resume: bool, overwrite: bool = False
    ) -> list[dict[str, Any]]:
        """Check ``manifest`` (what this run is: input, metrics, settings, judge, limit) against the folder;
        return the rows of the interrupted run to keep (``resume``), else ``[]``. Writes nothing, except
        that a torn last line of ``items.jsonl`` is cut when resuming.

        A folder holding a finished run, or files of a run's names that no run manifest accounts for, is only
        replaced with ``overwrite``. A folder holding an unfinished run with finished items is only continued
        with ``resume``, and only with an equal manifest (or started afresh with ``overwrite``); ``resume``
        with nothing to resume is an error too."""
        if isinstance(manifest, Manifest):
            manifest = manifest.to_dict()
        previous = self._read_manifest()
        status = None if previous is None else previous.get("status")
        self._manifest = dict(manifest)
        if not resume:
            self._check_replaceable(previous, status, overwrite)
            return []
        if status == "finished":
            raise ConfigError(
                f"--resume: {self.path} holds a finished run, nothing to resume: leave --resume out "
                "and add --overwrite to replace it"
            )
        if status != "running":
            cache = self.path / CACHE_FILE
            reuse = f"; the judge's verdicts in {cache} are reused by a plain rerun" if cache.is_file() else ""
            raise ConfigError(
                f"--resume: {self.path} holds no interrupted run with finished items to go on from: "
                f"leave --resume out to start the run{reuse}"
            )
        changed = [
            _named_change(key, previous.get(key), manifest[key])  # type: ignore[union-attr]
            for key in manifest
            if key not in _LOCATION_KEYS and previous.get(key) != manifest[key]  # type: ignore[union-attr]
        ]
        if changed:
            raise ConfigError(
                f"--resume: the interrupted run in {self.path} had other {', '.join(changed)}; "
                "rerun it with the same input and options, or choose another --out"
            )
        kept = complete_jsonl_rows(self.items_path)
        if not all(isinstance(row, dict) for row in kept.rows):
            raise ConfigError(f"--resume: {self.items_path} is not a ragmeter items file; choose another --out")
        note = kept.describe(self.items_path)
        if note:
            self.notes.append(note)
        self._started = True
        return kept.rows

    def _check_replaceable(self, previous: dict[str, Any] | None, status: Any, overwrite: bool) -> None:
        if overwrite:
            return
        if status == "running":
            if _has_rows(self.items_path) or any((self.path / PIECE_SHARDS).glob("*")):
                raise ConfigError(
                    f"{self.path} holds an interrupted run: pass --resume to finish it (its "
                    "finished items are kept), --overwrite to start it afresh, or choose another "
                    "--out"
                )
            return  # a run that stopped before its first item: nothing finished to lose
        if status is not None:
            raise ConfigError(
                f"{self.path} holds a finished run (of {previous.get('input')}): pass --overwrite "  # type: ignore[union-attr]
                "to replace it, or choose another --out"
            )
        taken = [path.name for path in self._owned_files() if path.exists() and path.name != CACHE_FILE]
        if taken:
            raise ConfigError(
                f"{self.path} already has {', '.join(taken)}, which no ragmeter run there wrote "
                "(no run.json): pass --overwrite to replace them, or choose another --out"
            )

    def start(self) -> None:
        """Mark the run ``running``: the folder is made, what an earlier run left there (summary, failures,
        Parquet table, items, piece shards) is removed, and ``run.json`` written. Called once, when the first
        items are ready (or at :meth:`finish`)."""
        if self._manifest is None:
            raise RuntimeError("RunFolder.prepare() must come before start()")
        if self._started:
            return
        self._manifest.update(status="running", started=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            for name in (SUMMARY, FAILURES, PARQUET, ITEMS):
                (self.path / name).unlink(missing_ok=True)
            shutil.rmtree(self.path / PIECE_SHARDS, ignore_errors=True)
        except OSError as exc:
            raise ConfigError(f"cannot write the --out folder {self.path}: {exc.strerror or exc}") from None
        atomic_write_text(self.path / MANIFEST, json.dumps(self._manifest, indent=2))
        self._started = True

    def items_writer(self, *, resume: bool) -> ItemsWriter:
        """The writer of ``items.jsonl``; its first rows start the run (:meth:`start`)."""
        return ItemsWriter(self.items_path, append=resume, before_first=self.start)

    def finish(
        self,
        summary: Mapping[str, Any],
        *,
        failures: Sequence[Mapping[str, Any]] | None = None,
        table: Mapping[str, Any] | None = None,
    ) -> None:
        """Write the ``summary``, the judge's ``failures`` (a judged run's, even none) and the items ``table``
        (``--parquet``; :func:`write_parquet`), then mark the run finished."""
        self.start()
        if not self.items_path.exists():
            ItemsWriter(self.items_path).touch()  # a run of no new item still has its items file
        atomic_write_text(self.path / SUMMARY, json.dumps(summary, indent=2, ensure_ascii=False))
        if failures is not None:
            write_failures(self.path / FAILURES, failures)
        if table is not None:
            write_parquet(table, self.path / PARQUET)
        if self._manifest is not None:
            self._manifest["status"] = "finished"
            atomic_write_text(self.path / MANIFEST, json.dumps(self._manifest, indent=2))

    def _read_manifest(self) -> dict[str, Any] | None:
        return read_json_object(self.path / MANIFEST, "delete it or choose another --out")


def _has_rows(path: Path) -> bool:
    """``path`` holds at least one complete line (read only, unlike :func:`complete_jsonl_rows`)."""
    try:
        with path.open("rb") as handle:
            return handle.readline().endswith(b"\n")
    except OSError:
        return False


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


def write_parquet(table: Mapping[str, Any], path: Path) -> None:
    """The per-item table as Parquet, its columns in order: a NumPy array is a column of floats (NaN written as
    null), anything else a column of strings (``id``, ``model_id``, the ``undefined`` reasons)."""
    require_parquet()
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {
        name: pa.array(values, type=pa.float64(), from_pandas=True)
        if isinstance(values, np.ndarray)
        else pa.array(values, type=pa.string())
        for name, values in table.items()
    }
    with writing(path) as temporary:
        pq.write_table(pa.table(columns), temporary)


def item_row(
    item_id: str,
    model_id: str | None,
    values: Mapping[str, float],
    undefined: Mapping[str, str],
    notes: Mapping[str, str] | None = None,
    *,
    conversation_id: str | None = None,
    judge: Mapping[str, Any] | None = None,
    language: str | None = None,
) -> dict[str, Any]:
    """The JSON shape of one item's scores, as written to ``items.jsonl`` (the one encoder of its rows);
    ``judge``: the item's judge tokens this run and its failed calls (prompt and reason; the raw replies go to the
    failure log), as :meth:`~ragmeter.judges.accounting.ItemJudging.to_dict` gives them; ``language``: the code of
    the language its text tools took, where a metric read it."""
    row: dict[str, Any] = {"id": item_id}
    if model_id is not None:
        row["model_id"] = model_id
    if conversation_id is not None:
        row["conversation_id"] = conversation_id
    if language is not None:
        row["language"] = language
    row.update(scores={m: json_number(v) for m, v in values.items()}, undefined=dict(undefined))
    if notes:
        row["notes"] = dict(notes)
    if judge is not None:
        row["judge"] = dict(judge)
    return row
