"""The languages ragmeter's text tools know, and which one a record is written in.

A language is data (:class:`Language`): its IDK patterns and refusal cues, the abbreviations its sentences keep,
its stemmer, function and scope words, and how it writes numbers. Adding one is adding a module beside
``english.py`` and ``indonesian.py`` and naming it in :data:`LANGUAGES`.

A record's language (:func:`record_language`) is its ``language`` field where it has one, else the run's
``--language`` setting (a record's field wins over ``--language en`` too, and the report counts the records it
overrode: :func:`overridden_note`); ``auto`` detects it from the question and the answer with py3langid
(:mod:`~ragmeter.text.languages.detection`), told to choose between the languages ragmeter knows: a text in
another language gets the nearest of them, and a tie (``OK``) gets English.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING

from ragmeter.core.errors import ConfigError, InputError
from ragmeter.text.languages.base import Language
from ragmeter.text.languages.detection import DETECTOR_ID, identifier
from ragmeter.text.languages.english import ENGLISH
from ragmeter.text.languages.indonesian import INDONESIAN

if TYPE_CHECKING:
    from ragmeter.core.records import Record

__all__ = [
    "AUTO",
    "DETECTOR_ID",
    "LANGUAGES",
    "LANGUAGE_CHOICES",
    "Language",
    "detect_language",
    "language",
    "language_code",
    "language_signature",
    "overridden_note",
    "record_language",
]

#: Every language by code; the first is the one a tie goes to.
LANGUAGES: dict[str, Language] = {ENGLISH.code: ENGLISH, INDONESIAN.code: INDONESIAN}
AUTO = "auto"
#: The values of ``--language``.
LANGUAGE_CHOICES = (AUTO, *LANGUAGES)
#: Spellings of a record's ``language`` field read as a code (a region, ``id-ID``, is dropped).
_NAMES = {"english": "en", "eng": "en", "indonesian": "id", "bahasa indonesia": "id", "ind": "id", "in": "id"}


def language(code: str) -> Language:
    """The language of ``code``; a :class:`ConfigError` for one ragmeter does not know."""
    try:
        return LANGUAGES[code]
    except KeyError:
        raise ConfigError(
            f"unknown language {code!r}: ragmeter knows {', '.join(LANGUAGES)} (or {AUTO}, to detect it per record)"
        ) from None


def language_signature(setting: str) -> str:
    """What a signature says of the language ``setting``: the setting, for ``auto`` the detector, and the version of
    every language, since a record's ``language`` field may pick any of them (``en/en-1+id-3``,
    ``auto/py3langid-0.4.0/en-1+id-3``)."""
    versions = "+".join(each.version for each in LANGUAGES.values())
    if setting == AUTO:
        return f"{AUTO}/{DETECTOR_ID}/{versions}"
    return f"{language(setting).code}/{versions}"


def overridden_note(setting: str, counts: Mapping[str, int]) -> str | None:
    """What a report says of the records whose own ``language`` field overrode a language ``setting`` (``en`` or
    ``id``; ``None`` under ``auto``, or when none did). ``counts``: the scored items by language; under a code,
    only a record's field gives another.

    >>> print(overridden_note("en", {"en": 7, "id": 3}))
    3 records' own language field (id) overrode --language en: a record's field wins
    """
    if setting == AUTO:
        return None
    others = [code for code in counts if code != setting]
    overridden = sum(counts[code] for code in others)
    if not overridden:
        return None
    records = "1 record's" if overridden == 1 else f"{overridden} records'"
    return f"{records} own language field ({', '.join(others)}) overrode --language {setting}: a record's field wins"


@lru_cache(maxsize=4096)
def detect_language(text: str) -> str:
    """The code of the language ``text`` is written in, among :data:`LANGUAGES` (the first on a tie or for text
    without letters).

    >>> detect_language("Saya tidak tahu."), detect_language("I don't know.")
    ('id', 'en')
    """
    if not any(character.isalpha() for character in text):
        return next(iter(LANGUAGES))
    code, probability = identifier(tuple(LANGUAGES)).classify(text)
    return str(code) if probability > 1 / len(LANGUAGES) else next(iter(LANGUAGES))


def language_code(given: object) -> str | None:
    """The code a record's ``language`` field names (a code such as ``id``, ``id-ID``, or a name such as
    ``Indonesian``); ``None`` for a blank one. An :class:`InputError` for a language ragmeter does not know.

    >>> language_code("id-ID"), language_code("Indonesian"), language_code(" ")
    ('id', 'id', None)
    """
    raw = str(given).strip().lower()
    if not raw:
        return None
    code = _NAMES.get(raw, raw.replace("_", "-").split("-")[0])
    if code not in LANGUAGES:
        raise InputError(
            f"the language {given!r} is not one ragmeter knows: write one of {', '.join(LANGUAGES)}, "
            "or leave the field out",
            field="language",
        )
    return code


def record_language(record: Record, setting: str) -> Language:
    """The language of ``record``: its ``language`` field (:func:`language_code`), else ``setting`` (a code, or
    ``auto`` to detect it from the question and the answer).

    A ``language`` field naming a language ragmeter does not know is an :class:`InputError` naming the record (the
    native reader refuses it before any scoring, with its file and line).
    """
    given = record.metadata.get("language")
    if given is not None:
        try:
            code = language_code(given)
        except InputError as error:
            raise InputError(f"record {record.id}: {error.reason}", field="language") from None
        if code is not None:
            return LANGUAGES[code]
    if setting == AUTO:
        return LANGUAGES[detect_language(f"{record.question}\n{record.answer}")]
    return language(setting)
