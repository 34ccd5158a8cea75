"""The one output module: every file ragmeter writes goes through here, and here is what it may touch.

The promise: no command replaces or truncates one of its inputs, a file it did not create, a symlink or a
special file, and a command that fails leaves every existing file as it was.

- :class:`Outputs` is one command's rule book. It knows the command's inputs (compared by device and inode,
  so another path, a symlink or a hard link to an input is recognised) and whether the user said
  ``--overwrite``; :meth:`Outputs.file` checks an output before any work and returns its :class:`Target`, or
  raises a :class:`~ragmeter.core.errors.ConfigError` naming the flag and the path.
- A :class:`Target` is where the bytes go: a symlink is followed (the link stays, its file is written), the
  command's own stdout or stderr and the null device are streamed to where the command allows it (``--html
  /dev/stdout``, whatever stdout is: a terminal, a pipe or a file), any other special file is refused, and a regular
  file is written beside its place and renamed into it when the writing succeeded (:func:`writing`), so a
  reader never sees half a file and a failed write leaves no temporary file. A new file is linked into place,
  never renamed over: a file that appeared there meanwhile is not replaced.
- :func:`complete_jsonl_rows` reads back the rows an interrupted command appended.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import math
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.core.errors import ConfigError

__all__ = [
    "RUN_FOLDER_FILES",
    "JsonlRows",
    "Outputs",
    "Target",
    "atomic_write_text",
    "cache_dir",
    "check_folder_writable",
    "complete_jsonl_rows",
    "file_sha256",
    "json_number",
    "move_into_place",
    "writing",
]

#: A run folder's own files (:mod:`ragmeter.io.run_folder`), its manifest first: in a folder that has the manifest,
#: none of them is ever another command's output (only a verdict cache is shared, used in place).
RUN_FOLDER_FILES = (
    "run.json",
    "items.jsonl",
    "summary.json",
    "judge_failures.jsonl",
    "items.parquet",
    "judge-cache.sqlite",
)


@dataclass(frozen=True)
class Target:
    """Where one output goes. ``path``: as the user gave it (messages name it); ``real``: the file written,
    symlinks followed; ``replace``: an existing regular file there may be replaced; ``stream``: ``path`` is
    this command's stdout or stderr, or the null device, appended to as it is (:func:`atomic_write_text`);
    ``append``: text is added at the end of the file (made if missing), never replacing what it holds;
    ``stdout``: the stream is this command's standard output, which then carries nothing else."""

    path: Path
    real: Path
    replace: bool = True
    stream: bool = False
    append: bool = False
    stdout: bool = False

    @classmethod
    def of(cls, path: str | Path | Target) -> Target:
        """A library caller's target: the file at ``path`` is written (replaced if there), the process's
        stdout or stderr or the null device streamed to; a folder or another special file is a
        :class:`ConfigError`."""
        if isinstance(path, Target):
            return path
        path = Path(path)
        real = Path(os.path.realpath(path))
        kind = _kind(path)
        if kind == "folder":
            raise ConfigError(f"{path} is a folder: give a file name")
        if kind not in ("missing", "file", "stream"):
            raise ConfigError(f"{path} is {kind}: give the name of a regular file")
        if kind != "stream":
            check_folder_writable(real.parent, str(path))
        return cls(path, real, replace=True, stream=kind == "stream", stdout=kind == "stream" and _is_stdout(path))


class Outputs:
    """What one command may write: never one of its ``inputs``, never a place another of its outputs or its run
    folder holds (:meth:`reserve`), never an existing file unless ``overwrite`` (or this command made it), never
    a special file unless the output allows streaming to it."""

    def __init__(self, inputs: Iterable[str | Path | None] = (), *, overwrite: bool = False) -> None:
        self.overwrite = overwrite
        self._inputs: dict[tuple[int, int], Path] = {}
        self._made: set[Path] = set()
        #: each place an output or the run folder holds (real path, and device and inode where it exists) →
        #: what holds it, in words
        self._held: dict[Path | tuple[int, int], str] = {}
        self.add_inputs(*inputs)

    def add_inputs(self, *paths: str | Path | None) -> None:
        """Count these files as inputs of the command (a folder: every file in it); missing ones are skipped,
        the reader reports them."""
        for path in paths:
            if path is None:
                continue
            path = Path(path)
            found = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
            for file in found:
                try:
                    info = file.stat()
                except OSError:
                    continue
                self._inputs[(info.st_dev, info.st_ino)] = file

    def reserve(self, path: str | Path, holder: str) -> None:
        """No output may be written at ``path``, which ``holder`` (in words: "the run folder's own items.jsonl
        (--out runs/x)") writes or is."""
        for key in _place_keys(Path(path)):
            self._held.setdefault(key, holder)

    def held_by(self, path: str | Path) -> str | None:
        """What already holds ``path`` (another output, the run folder), in words, or ``None``."""
        return next((self._held[key] for key in _place_keys(Path(path)) if key in self._held), None)

    def input_at(self, path: str | Path) -> Path | None:
        """The input that ``path`` is (the same file by device and inode), or ``None``."""
        try:
            info = Path(path).stat()
        except OSError:
            return None
        return self._inputs.get((info.st_dev, info.st_ino))

    def file(
        self,
        path: str | Path,
        *,
        flag: str,
        stream: bool = False,
        append: bool = False,
        reusable: Callable[[Path], bool] | None = None,
    ) -> Target:
        """Check the output ``flag PATH`` before any work and return its target.

        ``stream``: the command's own stdout or stderr, or the null device, there is written to as a stream (a report
        page to ``/dev/stdout``); otherwise it is refused, as any other special file is. ``append``: the output is added
        to the end of a regular file (a CI system's job summary), which may exist and is never replaced or cut.
        ``reusable``: the output is a file used in place (a verdict cache): an existing file is kept in use when
        ``reusable`` says it may be, and refused otherwise, ``--overwrite`` or not. Raises :class:`ConfigError` naming
        ``flag`` and ``path`` for an empty name, an input, a place another output or the run folder holds, a folder, a
        special file, an existing file, or a place that cannot be written."""
        if not str(path).strip():
            raise ConfigError(f"{flag} was given an empty file name (an unset variable?): give a file name")
        path = Path(path)
        real = Path(os.path.realpath(path))
        where = f"{flag} {path}" if flag else str(path)
        same = self.input_at(path)
        if same is not None:
            shown = f" ({same})" if same != path else ""
            raise ConfigError(
                f"{where} is an input of this command{shown}: give a new file for the output; "
                "ragmeter never writes over its input"
            )
        held = self.held_by(path)
        if held is not None and held != f"the output of {where}":
            raise ConfigError(f"{where} is {held}: give this output a file of its own")
        kind = _kind(path)
        if kind == "folder":
            raise ConfigError(f"{where} is a folder: give a file name, e.g. {path / 'report.html'}")
        if kind == "stream" and stream:
            return Target(path, real, replace=False, stream=True, stdout=_is_stdout(path))
        if kind == "stream":
            raise ConfigError(
                f"{where} is a stream (the null device, or this command's stdout or stderr), not a "
                "regular file: give a file name; this output is not written to a stream"
            )
        if kind != "file" and kind != "missing":
            raise ConfigError(f"{where} is {kind}, not a regular file: give a file name")
        if append:
            check_folder_writable(real.parent, where)
            self.reserve(path, f"the output of {where}")
            return Target(path, real, replace=False, append=True)
        if kind == "file" and reusable is None and _of_a_run_folder(real):
            raise ConfigError(
                f"{where} is the run folder {real.parent}'s own {real.name}: give a file outside the "
                "run's names (--overwrite never replaces a run's own files)"
            )
        if kind == "file" and reusable is not None and not reusable(real):
            raise ConfigError(
                f"{where} exists and holds something else than this output keeps there (it is used "
                "in place, never replaced, --overwrite or not): give a new file name"
            )
        if kind == "file" and not (self.overwrite or real in self._made or reusable is not None):
            raise ConfigError(f"{where} exists: pass --overwrite to replace it, or give a new file name")
        check_folder_writable(real.parent, where)
        self._made.add(real)
        self.reserve(path, f"the output of {where}")
        return Target(path, real, replace=kind == "file")


def _of_a_run_folder(real: Path) -> bool:
    """``real`` is one of the files of a run folder (a folder with a run manifest)."""
    return real.name in RUN_FOLDER_FILES and (real.parent / RUN_FOLDER_FILES[0]).is_file()


def _place_keys(path: Path) -> list[Path | tuple[int, int]]:
    """What names the place ``path``: its real path (symlinks followed), and its device and inode where a file
    is there (another name of the same file, a hard link, names it too)."""
    keys: list[Path | tuple[int, int]] = [Path(os.path.realpath(path))]
    try:
        info = path.stat()
    except OSError:
        return keys
    return [*keys, (info.st_dev, info.st_ino)]


def _kind(path: Path) -> str:
    """What is at ``path`` (symlinks followed): missing, file, folder, stream (this process's stdout or stderr,
    whatever they are, or the null device), or another special file, in words."""
    try:
        info = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return "missing"  # the folder check says what is in the way
    except OSError as exc:
        raise ConfigError(f"{path} cannot be inspected: {exc.strerror or exc}") from None
    if _is_own_stream(info) or _is_null_device(info):
        return "stream"
    mode = info.st_mode
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    return "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "a special file"


def _is_stdout(path: Path) -> bool:
    """``path`` is this process's standard output (``/dev/stdout``, or the file or pipe it was redirected to)."""
    try:
        return _is_own_stream(path.stat(), fds=(1,))
    except OSError:
        return False


def _is_own_stream(info: os.stat_result, fds: tuple[int, ...] = (1, 2)) -> bool:
    """``info`` is the file behind this process's stdout or stderr (a terminal, a pipe, a redirected file)."""
    for fd in fds:
        try:
            own = os.fstat(fd)
        except OSError:
            continue
        if (own.st_dev, own.st_ino) == (info.st_dev, info.st_ino):
            return True
    return False


def _is_null_device(info: os.stat_result) -> bool:
    try:
        null = os.stat(os.devnull)
    except OSError:
        return False
    return stat.S_ISCHR(info.st_mode) and info.st_rdev == null.st_rdev


def check_folder_writable(folder: Path, where: str) -> None:
    """Raise :class:`ConfigError` (about ``where``) unless ``folder`` exists or can be made: its nearest existing
    ancestor is a folder that takes a new file. Leaves nothing behind."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        what = "a file" if existing.is_file() else "not a folder"
        raise ConfigError(f"{where} cannot be written: {existing} is {what}")
    try:  # a real try, not os.access: root passes that check on a read-only file system or in /proc
        probe, name = tempfile.mkstemp(prefix=".ragmeter-probe-", dir=existing)
    except OSError as exc:
        raise ConfigError(
            f"{where} cannot be written: {existing} does not take new files ({exc.strerror or exc}); "
            "choose a folder you can write to"
        ) from None
    os.close(probe)
    os.unlink(name)


@contextmanager
def writing(target: str | Path | Target) -> Iterator[Path]:
    """The path to write ``target``'s content to: a temporary file beside it, which becomes the target when
    the block ends normally and is removed when it raises (KeyboardInterrupt included); for a stream, the
    device or FIFO itself. Any :class:`OSError` becomes a :class:`ConfigError` naming the target."""
    target = Target.of(target)
    if target.stream:
        raise RuntimeError(f"{target.path} is a stream: write it with atomic_write_text")
    temporary = target.real.with_name(f".{target.real.name}.{os.getpid()}.tmp")
    try:
        target.real.parent.mkdir(parents=True, exist_ok=True)
        yield temporary
        move_into_place(temporary, target)
    except OSError as exc:
        raise ConfigError(f"cannot write {target.path}: {exc.strerror or exc}") from None
    finally:
        temporary.unlink(missing_ok=True)


def move_into_place(temporary: Path, target: Target) -> None:
    """Make the finished file ``temporary`` (in ``target``'s folder) the target: renamed over it where it may
    be replaced, else linked into place so that a file that appeared there meanwhile is left alone."""
    try:
        _move(temporary, target)
    except OSError as exc:
        raise ConfigError(f"cannot write {target.path}: {exc.strerror or exc}") from None


def _move(temporary: Path, target: Target) -> None:
    if target.replace:
        with contextlib.suppress(FileNotFoundError):
            os.chmod(temporary, stat.S_IMODE(target.real.stat().st_mode))  # a replaced file keeps its mode
        os.replace(temporary, target.real)
        return
    try:
        os.link(temporary, target.real)  # fails if a file appeared there: a new output never replaces one
    except FileExistsError:
        raise ConfigError(
            f"{target.path} was created by something else while ragmeter worked: it is left as "
            "it was; run again with another name"
        ) from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        if target.real.exists():  # a file system without hard links: check, then rename
            raise ConfigError(
                f"{target.path} was created by something else while ragmeter worked: it is "
                "left as it was; run again with another name"
            ) from None
        os.replace(temporary, target.real)
    else:
        temporary.unlink()


def file_sha256(path: Path) -> str:
    """The sha256 of the file at ``path``, in hex, read a block at a time."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def cache_dir() -> Path:
    """Where ragmeter keeps files it builds from what its packages ship (the joined judge model, the language
    identifier's unpacked arrays): ``$RAGMETER_CACHE``, else ``$XDG_CACHE_HOME/ragmeter``, else
    ``~/.cache/ragmeter``."""
    if os.environ.get("RAGMETER_CACHE"):
        return Path(os.environ["RAGMETER_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ragmeter"


def atomic_write_text(target: str | Path | Target, text: str) -> None:
    """Write ``text`` (UTF-8) to ``target`` through :func:`writing`; a stream target is appended to, after
    what the command printed so far, and an append target at its end."""
    target = Target.of(target)
    if not target.stream and not target.append:
        with writing(target) as path, open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        return
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        if target.append:
            target.real.parent.mkdir(parents=True, exist_ok=True)
        with open(target.real if target.append else target.path, "a", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise ConfigError(f"cannot write {target.path}: {exc.strerror or exc}") from None


def json_number(value: float | None) -> float | None:
    """``value`` for JSON: NaN (an undefined score) becomes ``None`` (null)."""
    return None if value is None or math.isnan(value) else value


@dataclass(frozen=True)
class JsonlRows:
    """The rows an interrupted command appended: ``rows`` (every line up to the first one that is not a
    complete JSON value), ``bad_line`` (1-based, that line, or ``None``), ``dropped`` (the lines from it on,
    which were cut off with it) and ``torn`` (the bad line is the last and has no newline: a crash cut it)."""

    rows: list[Any]
    bad_line: int | None = None
    dropped: int = 0
    torn: bool = False

    def describe(self, path: str | Path) -> str | None:
        """What was cut off, in words, or ``None`` when nothing was or a crash tore the last line (no word)."""
        if self.bad_line is None or self.torn:
            return None
        return (
            f"line {self.bad_line} of {path} is not a complete JSON row: the {len(self.rows)} row(s) "
            f"before it are kept, it and the {self.dropped - 1} line(s) after it are dropped and scored again"
        )


def complete_jsonl_rows(path: str | Path) -> JsonlRows:
    """The rows of a JSONL file this command appended to, that a crash may have cut short: every complete
    line, parsed, up to the first that is not (a torn last line: no newline, or JSON or UTF-8 cut off); that
    line and the ones after it are removed from the file, so appending goes on cleanly, and counted."""
    path = Path(path)
    if not path.exists():
        return JsonlRows([])
    rows: list[Any] = []
    keep = 0
    bad_line: int | None = None
    dropped = 0
    torn = False
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if bad_line is not None:
                dropped += 1
                continue
            try:
                if not line.endswith(b"\n"):
                    torn = True  # only the last line of a file lacks a newline
                    raise ValueError("no newline")
                rows.append(json.loads(line))
            except ValueError:
                bad_line, dropped = number, 1
                continue
            keep += len(line)
    if bad_line is not None:
        with path.open("r+b") as handle:
            handle.truncate(keep)
    return JsonlRows(rows, bad_line, dropped, torn)
