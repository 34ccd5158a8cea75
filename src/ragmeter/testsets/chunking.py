"""Documents cut into chunks: sentence-aware, bounded in length, overlapping, with ids that stay put.

:func:`chunk_document` cuts a document's text in three steps:

1. **Paragraphs** (blank-line separated) into sentences (:func:`ragmeter.text.sentences.split_sentences`, in the
   document's language); a sentence longer than ``max_chars`` is cut at the last space before the bound (at the
   bound where a piece has no space).
2. **Packing**: sentences are added to the chunk in order while it stays within ``max_chars`` (sentences of one
   paragraph joined by a space, paragraphs by a blank line). A paragraph's start also closes a chunk that has
   reached half of ``max_chars``, so chunks tend to end where the author ended a thought.
3. **Overlap**: the next chunk opens with the last ``overlap`` sentences of the one before (fewer where they would
   take more than half of ``max_chars``), so that a fact stated across a boundary is whole in one chunk.

A chunk's id is ``{doc_id}#{digest}``, the digest the first 12 hex digits of the SHA-256 of its text: the same
document cut with the same settings gives the same ids on every run and machine, and an edit elsewhere in the
document leaves a chunk's id as it was (an id by position would shift every later chunk). A text that occurs twice
in one document gets ``-2``, ``-3`` … after its digest, in order. :data:`CHUNKER` and the settings go into a
generated set's signature.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ragmeter.core.errors import ConfigError
from ragmeter.testsets.documents import Document
from ragmeter.text.languages import LANGUAGES, Language
from ragmeter.text.sentences import SPLITTER_ID, split_sentences

__all__ = ["CHUNKER", "DEFAULT_MAX_CHARS", "DEFAULT_OVERLAP", "Chunk", "chunk_document"]

CHUNKER = f"paragraph-sentence-1/{SPLITTER_ID}"
#: About 200 words: the size of the passages of MT-RAG's and most retrievers' indexes.
DEFAULT_MAX_CHARS = 1200
DEFAULT_OVERLAP = 1


@dataclass(frozen=True)
class Chunk:
    """A piece of a document: its stable id, the document's id, its text, and its place among the document's
    chunks (0-based)."""

    chunk_id: str
    doc_id: str
    text: str
    position: int


def _pieces(sentence: str, max_chars: int) -> list[str]:
    """``sentence`` cut at spaces into pieces of at most ``max_chars`` characters."""
    pieces = []
    while len(sentence) > max_chars:
        cut = sentence.rfind(" ", 0, max_chars + 1)
        cut = cut if cut > 0 else max_chars
        pieces.append(sentence[:cut].strip())
        sentence = sentence[cut:].strip()
    return [*pieces, sentence] if sentence else pieces


def _units(text: str, max_chars: int, language: Language) -> list[tuple[str, bool]]:
    """(sentence, whether it opens a paragraph) for the whole text, none longer than ``max_chars``."""
    units = []
    for paragraph in (p.strip() for p in text.split("\n\n")):
        for i, sentence in enumerate(split_sentences(paragraph.replace("\n", " "), language)):
            units += [(piece, i == 0 and j == 0) for j, piece in enumerate(_pieces(sentence, max_chars))]
    return units


def _joined(units: list[tuple[str, bool]]) -> str:
    text = ""
    for i, (sentence, opens) in enumerate(units):
        text += sentence if i == 0 else ("\n\n" if opens else " ") + sentence
    return text


def chunk_document(
    document: Document,
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    overlap: int = DEFAULT_OVERLAP,
    language: Language | None = None,
) -> list[Chunk]:
    """``document`` cut into chunks (see the module docstring); ``language``: the sentence splitter's (English
    where not given)."""
    if max_chars < 50:
        raise ConfigError(f"chunks of at most {max_chars} characters are too short to hold a fact: use 50 or more")
    if overlap < 0:
        raise ConfigError(f"the overlap is a number of sentences, 0 or more, not {overlap}")
    units = _units(document.text, max_chars, language or LANGUAGES["en"])
    groups: list[list[tuple[str, bool]]] = []
    current: list[tuple[str, bool]] = []
    for unit in units:
        longer = _joined([*current, unit])
        closes = current and (len(longer) > max_chars or (unit[1] and len(_joined(current)) >= max_chars // 2))
        if closes:
            groups.append(current)
            kept = current[-overlap:] if overlap and len(current) > overlap else []
            while kept and (len(_joined(kept)) > max_chars // 2 or len(_joined([*kept, unit])) > max_chars):
                kept = kept[1:]
            current = kept
        current.append(unit)
    if current:
        groups.append(current)
    chunks, seen = [], {}
    for position, group in enumerate(groups):
        text = _joined(group)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
        seen[digest] = seen.get(digest, 0) + 1
        suffix = "" if seen[digest] == 1 else f"-{seen[digest]}"
        chunks.append(Chunk(f"{document.doc_id}#{digest}{suffix}", document.doc_id, text, position))
    return chunks
