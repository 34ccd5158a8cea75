"""Sentence splitting that needs no download.

Sentences come from nupunkt's pre-trained Punkt model, which ships inside its wheel; for a language with
abbreviations of its own (:attr:`~ragmeter.text.languages.Language.abbreviations`: Indonesian's *Jl.*, *Kec.*,
*tgl.*) a copy of the model that knows them too, and two rules Punkt's model misses there: a piece that ends with
one of those abbreviations after a slash or a dash (``RT. 04/RW. 07``, ``Kab. Batang–Kab. Kendal``) does not end a
sentence, nor does one followed by a lowercase letter or a year in parentheses (``Santoso dkk. pada 2021``,
``Wulandari dkk. (2022)``). English keeps the model's splits as they are. Punkt splits
``… members.[CIT:d1] Next …`` after the period, which would hand the citation to the next sentence; a
citation that opens a sentence is therefore moved back to the sentence before it.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib.metadata import version
from typing import Any

import nupunkt
from nupunkt.models import load_default_model

from ragmeter.text.languages import Language

__all__ = ["SPLITTER_ID", "split_sentences"]

SPLITTER_ID = f"nupunkt-{version('nupunkt')}"
_LEADING_CITATIONS = re.compile(r"^(?:\s*\[CIT:[^\]]*\])+")
_LAST_WORD = re.compile(r"([\w.]+)\.$")
_GOES_ON = re.compile(r"^(?:[a-z]|\(\d)")


@lru_cache(maxsize=8)
def _splitter(abbreviations: tuple[str, ...]) -> Any:
    tokenizer = load_default_model()  # a copy of its own: the shared default model is left as it is
    tokenizer.add_abbreviations(list(abbreviations))
    return tokenizer


def split_sentences(text: str, language: Language | None = None) -> list[str]:
    """Split ``text`` into sentences, keeping each citation with the sentence it follows; ``language`` adds its
    abbreviations to the model's.

    Empty and whitespace-only input gives ``[]``.

    >>> split_sentences("Paris is in France.[CIT:d1] It is large [CIT:d2].")
    ['Paris is in France.[CIT:d1]', 'It is large [CIT:d2].']
    """
    if language is None or not language.abbreviations:
        raw_sentences = [str(raw) for raw in nupunkt.sent_tokenize(text)]
    else:
        raw_sentences = _joined(_splitter(language.abbreviations).tokenize(text), text, language)
    sentences: list[str] = []
    for raw in raw_sentences:
        sentence = str(raw).strip()
        leading = _LEADING_CITATIONS.match(sentence)
        if leading and sentences:
            sentences[-1] = f"{sentences[-1]}{leading.group(0).strip()}"
            sentence = sentence[leading.end() :].strip()
        if sentence:
            sentences.append(sentence)
    return sentences


def _joined(pieces: list[str], text: str, language: Language) -> list[str]:
    """Punkt's ``pieces`` of ``text``, each joined to the next where the sentence goes on (see the module
    docstring); the text between two joined pieces is kept as it was."""
    out: list[str] = []
    end = 0  # where the last piece of ``out`` ends in ``text``
    for piece in pieces:
        start = text.find(piece, end)
        last = _LAST_WORD.search(out[-1]) if out else None
        ends_abbreviated = last is not None and re.split(r"[/–—-]", last.group(1))[-1].lower() in language.abbreviations
        if out and start >= 0 and (ends_abbreviated or _GOES_ON.match(piece)):
            out[-1] = out[-1] + text[end:start] + piece
        else:
            out.append(piece)
        end = start + len(piece) if start >= 0 else end
    return out
