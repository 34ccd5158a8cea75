"""Pairwise human preferences between two answers to one question: a JSONL format and its reader.

A meta-evaluation set: does a metric prefer the answer people prefer? Score both records of every pair and
correlate metric(A) − metric(B) with :attr:`PreferencePair.preference` (the repository's
``benchmarks/validity/bench_preferences.py`` does, with a conversation bootstrap).

One JSON object per line, one pair per line (blank lines are skipped)::

    id               string or integer, unique in the file                                   required
    question         string                                                                   required
    reference        string, or ``references``: a list of strings (not both); at least one
                     non-empty: the metrics read compare each response with it               required
    response_a       string (may be empty): the first answer                                  required
    response_b       string (may be empty): the second answer                                 required
    preferences      the human preference, one value per annotator: an object
                     {annotator id: value} or a list of values (annotators unnamed)           required
    aspects          {aspect name: values per annotator, the shape of ``preferences``}:
                     preferences on single dimensions (faithfulness, completeness, ...)      optional
    model_a, model_b ids of the systems that wrote the responses                              optional
    conversation_id  pairs of one conversation are resampled together in the bootstrap      optional
    history, contexts, answerability, metadata
                     as ragmeter's native record fields, shared by both responses            optional

A preference value is a number in [−1, 1] or a label: **positive means A is better**; ``"A"`` = +1 (A
better), ``"B"`` = −1 (B better), ``"tie"`` = 0. Numbers grade the strength (e.g. a difference of 1–4
ratings divided by 3). The pair's preference is the mean of its annotators' values; an aspect's likewise.
Any other key is an error (extra information goes in ``metadata``), and so is ``answer``: a pair has two.

Each pair becomes two :class:`ragmeter.Record` objects, built by :func:`ragmeter.record_from_dict` from the
shared fields and one response (ids ``<id>/A`` and ``<id>/B``, ``model_id`` and ``conversation_id`` in their
metadata), so they are validated as native records are. The first problem raises
:class:`ragmeter.core.errors.InputError` naming the file, the line and the field (``preferences.ann2``,
``aspects.faithfulness[0]``, ``response_b``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.core.errors import InputError
from ragmeter.core.records import Record
from ragmeter.io.fields import FieldReader
from ragmeter.io.formats.native import record_from_dict

__all__ = ["LABELS", "PreferencePair", "pair_from_dict", "read_preferences"]

#: The labels a preference may be given as, and their numbers (+1: A better).
LABELS = {"A": 1.0, "B": -1.0, "tie": 0.0}
SHARED = ("question", "reference", "references", "history", "contexts", "answerability")
PAIR_FIELDS = (
    "id",
    "response_a",
    "response_b",
    "model_a",
    "model_b",
    "preferences",
    "aspects",
    "conversation_id",
    "metadata",
)
_EXPECTED = "a number in [-1, 1] (+1: A better, -1: B better) or a label 'A', 'B' or 'tie'"


@dataclass(frozen=True, slots=True)
class PreferencePair:
    """One line of a preference file: the two responses as records, and the humans' preferences.

    ``values`` are the annotators' preferences in the file's order (+1: ``a`` better), ``preference`` their
    mean; ``aspects`` holds each aspect's mean; ``cluster`` is the conversation (or, without one, the pair's
    id) for the bootstrap.
    """

    id: str
    a: Record
    b: Record
    values: tuple[float, ...]
    aspects: Mapping[str, float]
    cluster: str

    @property
    def preference(self) -> float:
        return _mean(list(self.values))

    @property
    def annotators(self) -> int:
        return len(self.values)


def read_preferences(path: str | Path) -> list[PreferencePair]:
    """Every pair of the JSONL file ``path``, validated; the first problem raises :class:`InputError`."""
    name = str(path)
    pairs: list[PreferencePair] = []
    first_line: dict[str, int] = {}
    with Path(path).open(encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as error:
                raise InputError(
                    f"not valid JSON: {error.msg} (column {error.colno})", path=name, line=number
                ) from None
            pair = pair_from_dict(obj, path=name, line=number)
            if pair.id in first_line:
                raise InputError(
                    f"duplicate id {pair.id!r}, first on line {first_line[pair.id]}", path=name, line=number, field="id"
                )
            first_line[pair.id] = number
            pairs.append(pair)
    if not pairs:
        raise InputError("no pair in the file: expected one JSON object per line", path=name)
    return pairs


def pair_from_dict(obj: Any, *, path: str | None = None, line: int | None = None) -> PreferencePair:
    """One validated pair (the fields of the module's docstring)."""
    f = FieldReader(obj, path=path, line=line)
    if "answer" in f.obj:
        raise f.error("answer", "a pair has two answers: give them as 'response_a' and 'response_b'")
    unknown = sorted(set(f.obj) - set(SHARED) - set(PAIR_FIELDS))
    if unknown:
        raise f.error(
            unknown[0], f"unknown field; a pair has {', '.join(SHARED + PAIR_FIELDS)} (put anything else in 'metadata')"
        )
    pair_id = str(f.identifier("id"))
    conversation = f.identifier("conversation_id", required=False)
    metadata = f.mapping("metadata")
    shared = {key: f.obj[key] for key in SHARED if key in f.obj}
    sides = []
    for side in ("a", "b"):
        model = f.identifier(f"model_{side}", required=False)
        extra = {"model_id": model, "conversation_id": conversation, "pair_id": pair_id, "side": side.upper()}
        record = record_from_dict(
            {
                **shared,
                "id": f"{pair_id}/{side.upper()}",
                "answer": f.obj.get(f"response_{side}"),
                "metadata": {**metadata, **{k: v for k, v in extra.items() if v is not None}},
            },
            path=path,
            line=line,
            names={"answer": f"response_{side}"},
        )
        sides.append(record)
    if not sides[0].references:
        raise f.error(
            "references" if "references" in f.obj else "reference",
            "missing: expected a non-empty reference (the metrics compare each response with it)",
        )
    preference = _annotator_values(f, f.obj.get("preferences"), "preferences")
    aspects = {
        name: _mean(_annotator_values(f, values, f"aspects.{name}")) for name, values in f.mapping("aspects").items()
    }
    return PreferencePair(
        id=pair_id, a=sides[0], b=sides[1], values=tuple(preference), aspects=aspects, cluster=conversation or pair_id
    )


def _annotator_values(f: FieldReader, value: Any, field: str) -> list[float]:
    if value is None:
        raise f.error(field, f"missing: expected one value per annotator, each {_EXPECTED}")
    if isinstance(value, dict):
        entries = [(f"{field}.{annotator}", v) for annotator, v in value.items()]
    elif isinstance(value, list):
        entries = [(f"{field}[{i}]", v) for i, v in enumerate(value)]
    else:
        raise f.error(field, f"expected an object {{annotator: value}} or a list of values, found {value!r}"[:200])
    if not entries:
        raise f.error(field, f"no annotator: expected at least one value, each {_EXPECTED}")
    return [_preference(f, v, where) for where, v in entries]


def _preference(f: FieldReader, value: Any, field: str) -> float:
    if isinstance(value, str):
        if value not in LABELS:
            raise f.error(field, f"unknown label {value!r}: expected {_EXPECTED}"[:300])
        return LABELS[value]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise f.error(field, f"expected {_EXPECTED}, found {value!r}"[:300])
    number = float(value)
    if not math.isfinite(number) or not -1.0 <= number <= 1.0:
        raise f.error(field, f"out of range: expected {_EXPECTED}, found {value!r}")
    return number


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)
