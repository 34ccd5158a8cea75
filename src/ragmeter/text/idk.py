"""Detecting "I don't know" sentences, in English and Indonesian.

A sentence is IDK when any pattern of the detector matches it (case-insensitive, citations removed,
curly apostrophes straightened). The pattern list is versioned: the default list is ``idk-en-id-1``;
any other list, however the detector was made, gets ``custom-<sha256 prefix>`` (the first 12 hex digits of
the SHA-256 of its patterns joined by newlines) so that signatures tell lists apart.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ragmeter.core.errors import ConfigError
from ragmeter.text.citations import strip_citations

__all__ = ["DEFAULT_IDK_PATTERNS", "DEFAULT_IDK_VERSION", "IdkDetector"]

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
    (r"\bthe (?:provided |given |retrieved )?(?:context|documents?|passages?|sources?) "
     r"(?:do|does) not (?:contain|provide|mention|include|say|specify)\b"),
    # Indonesian
    r"\btidak tahu\b",
    r"\btidak (?:ada|memiliki|punya|mempunyai|menemukan|ditemukan) (?:informasi|data|keterangan)\b",
    r"\b(?:informasi|data|keterangan)\b.*\btidak (?:tersedia|ditemukan|ada)\b",
    r"\btidak (?:dapat|bisa|mampu) (?:menjawab|menemukan|memastikan)\b",
    r"\bbelum ada informasi\b",
)

DEFAULT_IDK_VERSION = "idk-en-id-1"
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


@dataclass(frozen=True)
class IdkDetector:
    """Matches IDK sentences against a versioned list of regular expressions.

    ``version`` is derived from ``patterns`` (see the module docstring), never given.

    >>> IdkDetector().is_idk("I don't know the opening hours [CIT:d1].")
    True
    >>> IdkDetector().is_idk("Saya tidak tahu.")
    True
    >>> IdkDetector().is_idk("The pool opens at 7 am.")
    False
    """

    patterns: tuple[str, ...] = DEFAULT_IDK_PATTERNS
    version: str = field(init=False)
    _compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.patterns:
            raise ConfigError("the IDK pattern list is empty: give at least one regular expression")
        object.__setattr__(self, "patterns", tuple(self.patterns))  # a list would make the detector unhashable
        for number, pattern in enumerate(self.patterns, start=1):
            _compile(pattern, f"IDK pattern {number} ({pattern!r}) is not a valid regular expression")
        compiled = _compile("|".join(f"(?:{p})" for p in self.patterns),
                            "the IDK patterns do not join into one regular expression")
        object.__setattr__(self, "_compiled", compiled)
        object.__setattr__(self, "version", _version(self.patterns))

    @classmethod
    def from_patterns(cls, patterns: Iterable[str]) -> IdkDetector:
        """A detector for a list of patterns, blank ones left out."""
        return cls(patterns=tuple(p for p in patterns if p.strip()))

    @classmethod
    def from_file(cls, path: str | Path) -> IdkDetector:
        """A detector from a UTF-8 file with one regular expression per line (``#`` starts a comment); a bad
        pattern is a :class:`ConfigError` naming its file and line."""
        try:
            lines = Path(path).read_text(encoding="utf-8-sig").splitlines()
        except OSError as exc:
            raise ConfigError(f"cannot read the IDK pattern file {path}: {exc.strerror}") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start + 1} of the file): save it as UTF-8") from exc
        patterns = []
        for number, line in enumerate(lines, start=1):
            if line.strip() and not line.lstrip().startswith("#"):
                _compile(line, f"{path}:{number}: not a valid regular expression")
                patterns.append(line)
        return cls.from_patterns(patterns)

    def is_idk(self, text: str) -> bool:
        """Whether ``text`` says the system does not know."""
        plain = strip_citations(text).translate(_APOSTROPHES)
        return self._compiled.search(plain) is not None


def _compile(pattern: str, problem: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ConfigError(f"{problem}: {exc}; fix the pattern (a literal bracket or parenthesis needs a "
                          "backslash before it)") from exc


def _version(patterns: tuple[str, ...]) -> str:
    if patterns == DEFAULT_IDK_PATTERNS:
        return DEFAULT_IDK_VERSION
    return "custom-" + hashlib.sha256("\n".join(patterns).encode()).hexdigest()[:12]
