"""Detecting "I don't know" sentences, in each language ragmeter knows.

A sentence is IDK when a pattern of its language matches it (case-insensitive, citations removed, curly
apostrophes straightened). The default detector takes each language's own patterns
(:attr:`~ragmeter.text.languages.Language.idk_patterns`), and, asked without a language, those of every language;
its version is ``idk-`` and the languages' versions (``idk-en-1+id-3``). A detector made from a list of patterns
uses that list for every language, and its version is ``custom-<sha256 prefix>`` (the first 12 hex digits of the
SHA-256 of its patterns joined by newlines), so that signatures tell lists apart.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ragmeter.core.errors import ConfigError
from ragmeter.text.citations import strip_citations
from ragmeter.text.languages import LANGUAGES, Language

__all__ = ["DEFAULT_IDK_VERSION", "IdkDetector"]

DEFAULT_IDK_VERSION = "idk-" + "+".join(language.version for language in LANGUAGES.values())
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


@dataclass(frozen=True)
class IdkDetector:
    """Matches IDK sentences against versioned lists of regular expressions: each language's own
    (``patterns=None``, the default) or one list for every language.

    ``version`` is derived from ``patterns`` (see the module docstring), never given.

    >>> IdkDetector().is_idk("I don't know the opening hours [CIT:d1].")
    True
    >>> IdkDetector().is_idk("Saya tidak tahu.", LANGUAGES["id"])
    True
    >>> IdkDetector().is_idk("Warga tidak tahu bahwa jalan itu ditutup.", LANGUAGES["id"])
    False
    >>> IdkDetector().is_idk("The pool opens at 7 am.")
    False
    """

    patterns: tuple[str, ...] | None = None
    version: str = field(init=False)
    _compiled: dict[str | None, re.Pattern[str]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.patterns is None:
            lists: dict[str | None, tuple[str, ...]] = {
                code: language.idk_patterns for code, language in LANGUAGES.items()
            }
            lists[None] = tuple(p for language in LANGUAGES.values() for p in language.idk_patterns)
            version = DEFAULT_IDK_VERSION
        else:
            if not self.patterns:
                raise ConfigError("the IDK pattern list is empty: give at least one regular expression")
            object.__setattr__(self, "patterns", tuple(self.patterns))  # a list would make the detector unhashable
            lists = {None: self.patterns}
            version = "custom-" + hashlib.sha256("\n".join(self.patterns).encode()).hexdigest()[:12]
        for number, pattern in enumerate(lists[None], start=1):
            _compile(pattern, f"IDK pattern {number} ({pattern!r}) is not a valid regular expression")
        compiled = {
            key: _compile(
                "|".join(f"(?:{p})" for p in patterns), "the IDK patterns do not join into one regular expression"
            )
            for key, patterns in lists.items()
        }
        object.__setattr__(self, "_compiled", compiled)
        object.__setattr__(self, "version", version)

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

    def is_idk(self, text: str, language: Language | None = None) -> bool:
        """Whether ``text`` says the system does not know, in ``language`` (any language when ``None``)."""
        plain = strip_citations(text).translate(_APOSTROPHES)
        pattern = self._compiled.get(None if language is None else language.code, self._compiled[None])
        return pattern.search(plain) is not None


def _compile(pattern: str, problem: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ConfigError(
            f"{problem}: {exc}; fix the pattern (a literal bracket or parenthesis needs a backslash before it)"
        ) from exc
