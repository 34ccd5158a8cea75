"""What ``ragmeter generate`` reads: a folder of documents, cut into chunks, or the chunks a team's retriever
already serves, used as they are.

- A **folder**: its documents (:func:`~ragmeter.testsets.documents.read_corpus`), each in the language detected in
  its text (:func:`~ragmeter.text.languages.detect_language`), cut by
  :func:`~ragmeter.testsets.chunking.chunk_document`.
- A **JSONL or Parquet file of chunks**: one chunk a line (row), its id in ``id`` (or ``chunk_id``), its text in
  ``text``, and optionally the document it comes from in ``doc_id`` (else the chunk is its own document). The ids
  are kept as they are, so that the generated ``qrels`` name the chunks the team's index holds; a missing or
  repeated id, a chunk without text, or a line that is not UTF-8 JSON (a byte-order mark at the start is read) is
  an error naming the file, line and field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.core.errors import InputError, MissingDependencyError
from ragmeter.testsets.chunking import DEFAULT_MAX_CHARS, DEFAULT_OVERLAP, Chunk, chunk_document
from ragmeter.testsets.documents import read_corpus
from ragmeter.text.languages import LANGUAGES, detect_language

__all__ = ["CorpusChunks", "read_chunk_file", "read_chunks"]


@dataclass(frozen=True)
class CorpusChunks:
    """A corpus's chunks with each one's language code, and the files skipped with why."""

    chunks: tuple[Chunk, ...]
    languages: Mapping[str, str]  # chunk id → language code
    skipped: tuple[tuple[str, str], ...] = ()


def _rows(path: Path) -> Iterator[tuple[int, Any]]:
    if path.suffix.lower() == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise MissingDependencyError("pyarrow", "parquet", "reading a Parquet file of chunks") from exc
        yield from enumerate(pq.read_table(path).to_pylist(), start=1)
        return
    with path.open("rb") as handle:
        for line, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8-sig" if line == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"not UTF-8 text (byte {exc.start} of the line): save the file as UTF-8", path=str(path), line=line
                ) from exc
            if not text.strip():
                continue
            try:
                yield line, json.loads(text)
            except json.JSONDecodeError as exc:
                raise InputError(f"not JSON ({exc.msg})", path=str(path), line=line) from exc


def read_chunk_file(path: Path) -> CorpusChunks:
    """The chunks of a JSONL or Parquet file (see the module docstring), ids as given."""
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}
    for line, row in _rows(path):
        where = {"path": str(path), "line": line}
        if not isinstance(row, dict):
            raise InputError("a chunk is an object with an id and a text", **where)
        key = "chunk_id" if "chunk_id" in row and "id" not in row else "id"
        chunk_id, text = row.get(key), row.get("text")
        if not isinstance(chunk_id, str | int) or isinstance(chunk_id, bool) or not str(chunk_id).strip():
            raise InputError(
                "every chunk needs an id (a string or a number): name it 'id' or 'chunk_id'", field=key, **where
            )
        chunk_id = str(chunk_id)
        if chunk_id in seen:
            raise InputError(
                f"the id {chunk_id!r} is already the chunk's of line {seen[chunk_id]}: ids name one chunk each",
                field=key,
                **where,
            )
        if not isinstance(text, str) or not text.strip():
            raise InputError("a chunk needs its text, a non-empty string", field="text", **where)
        doc_id = row.get("doc_id", chunk_id)
        if not isinstance(doc_id, str | int) or isinstance(doc_id, bool):
            raise InputError("doc_id is a string or a number", field="doc_id", **where)
        seen[chunk_id] = line
        chunks.append(Chunk(chunk_id, str(doc_id), text.strip(), len(chunks)))
    if not chunks:
        raise InputError("holds no chunk: one JSON object a line, with an id and a text", path=str(path))
    return CorpusChunks(tuple(chunks), {c.chunk_id: detect_language(c.text) for c in chunks})


def read_chunks(path: Path, *, max_chars: int = DEFAULT_MAX_CHARS, overlap: int = DEFAULT_OVERLAP) -> CorpusChunks:
    """The chunks of ``path``: a folder of documents cut into chunks (in each document's language), or a file of
    chunks read as they are."""
    if not path.is_dir():
        return read_chunk_file(path)
    corpus = read_corpus(path)
    chunks: list[Chunk] = []
    languages: dict[str, str] = {}
    for document in corpus.documents:
        code = detect_language(document.text)
        for chunk in chunk_document(document, max_chars=max_chars, overlap=overlap, language=LANGUAGES[code]):
            chunks.append(chunk)
            languages[chunk.chunk_id] = code
    return CorpusChunks(tuple(chunks), languages, corpus.skipped)
