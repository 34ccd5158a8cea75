"""Detecting "I don't know" sentences, in English and Indonesian.

A sentence is IDK when any pattern of the detector matches it (case-insensitive, citations removed,
curly apostrophes straightened). The pattern list is versioned: the default list is ``idk-en-id-1``;
a custom list gets the id ``custom-<sha256 prefix>`` so that signatures tell lists apart.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from ragmeter.errors import ConfigError
from ragmeter.text.citations import strip_citations

__all__ = ["DEFAULT_IDK_PATTERNS", "IdkDetector"]

_HAVE_NO_INFO = (r"(?:specific |enough |sufficient |any |the |relevant )?"
                 r"(?:information|details|data|knowledge)")

DEFAULT_IDK_PATTERNS: tuple[str, ...] = (
    # English
    r"\bi (?:do not|don't|dont) know\b",
    rf"\bi (?:do not|don't|dont) have {_HAVE_NO_INFO}\b",
    rf"\bi have no {_HAVE_NO_INFO}\b",
    r"\bi(?:'m| am) (?:not sure|unsure|unable to (?:answer|find|determine|say))\b",
    r"\bi (?:cannot|can't|can not|could not|couldn't) (?:answer|find|determine|say|tell)\b",
    r"\b(?:there is|there's) no (?:information|mention|data)\b",
    r"\bno (?:information|relevant information|details) (?:is |are )?(?:available|provided|given)\b",
    r"\bthe (?:provided |given |retrieved )?(?:context|documents?|passages?|sources?) "
    r"(?:do|does) not (?:contain|provide|mention|include|say|specify)\b",
    # Indonesian
    r"\btidak tahu\b",
    r"\btidak (?:ada|memiliki|punya|mempunyai|menemukan|ditemukan) (?:informasi|data|keterangan)\b",
    r"\b(?:informasi|data|keterangan)\b.*\btidak (?:tersedia|ditemukan|ada)\b",
    r"\btidak (?:dapat|bisa|mampu) (?:menjawab|menemukan|memastikan)\b",
    r"\bbelum ada informasi\b",
)

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


@dataclass(frozen=True)
class IdkDetector:
    """Matches IDK sentences against a versioned list of regular expressions.

    >>> IdkDetector().is_idk("I don't know the opening hours [CIT:d1].")
    True
    >>> IdkDetector().is_idk("Saya tidak tahu.")
    True
    >>> IdkDetector().is_idk("The pool opens at 7 am.")
    False
    """

    patterns: tuple[str, ...] = DEFAULT_IDK_PATTERNS
    version: str = "idk-en-id-1"
    _compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.patterns:
            raise ConfigError("the IDK pattern list is empty: give at least one regular expression")
        try:
            compiled = re.compile("|".join(f"(?:{p})" for p in self.patterns), re.IGNORECASE)
        except re.error as exc:
            raise ConfigError(f"an IDK pattern is not a valid regular expression: {exc}") from exc
        object.__setattr__(self, "_compiled", compiled)

    @classmethod
    def from_patterns(cls, patterns: Iterable[str]) -> IdkDetector:
        """A detector for a custom list, versioned by the list's content."""
        patterns = tuple(p for p in patterns if p.strip())
        digest = hashlib.sha256("\n".join(patterns).encode()).hexdigest()[:12]
        return cls(patterns=patterns, version=f"custom-{digest}")

    @classmethod
    def from_file(cls, path: str | Path) -> IdkDetector:
        """A detector from a file with one regular expression per line (``#`` starts a comment)."""
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ConfigError(f"cannot read the IDK pattern file {path}: {exc.strerror}") from exc
        return cls.from_patterns(line for line in lines if not line.lstrip().startswith("#"))

    def is_idk(self, text: str) -> bool:
        """Whether ``text`` says the system does not know."""
        plain = strip_citations(text).translate(_APOSTROPHES)
        return self._compiled.search(plain) is not None
