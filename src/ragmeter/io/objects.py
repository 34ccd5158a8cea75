"""Records from the Python objects of the field's frameworks, so that ``ragmeter.read_records(df)`` and
``ragmeter.evaluate(df, column_map=...)`` work on what a team already holds in memory.

Objects are recognised by the module and name of their class (or of a base class), so neither pandas, ``datasets``,
RAGAS nor DeepEval is imported unless the caller passed one of their objects.

Sources, and the ``path`` their errors carry (``line`` is the 1-based row or sample position, ``field`` the column
or attribute)::

    pandas DataFrame                  "DataFrame"
    datasets.Dataset (one split)      "Dataset"           a DatasetDict is refused: pass one split
    ragas EvaluationDataset           "EvaluationDataset"
    list/tuple of ragas samples       "SingleTurnSample list" (the class of the first item, then "list")
    list/tuple of deepeval test cases "LLMTestCase list"

DataFrame and Dataset rows mean what a CSV or Parquet row means (:mod:`ragmeter.io.formats.table`): columns named
as ragmeter's fields, or mapped to them by ``column_map`` (field → column, as ``--map FIELD=COLUMN``); a row with
RAGAS's columns (``user_input``, ``retrieved_contexts``, …) is read as RAGAS; other columns go to metadata. A cell is
first made the value a JSON reader would give: numpy scalars become Python numbers, numpy arrays and tuples lists,
and NaN, ``None``, ``pd.NA`` and ``pd.NaT`` missing (at any depth). Then, as in a table file, an empty text is
missing except an empty answer, JSON text in a structured column is decoded, a lone text in ``references`` is one
reference, and ``prompt_tokens``/``completion_tokens`` columns make one usage entry.

A DataFrame's index named ``id`` (what ``df.set_index("id")`` leaves) is the ``id`` column. Any other index gives the
ids when no column does (neither an ``id`` column nor one ``column_map`` maps to ``id``): each row's label as text (a
MultiIndex's labels joined by ``/``; a missing label, the row's position), so that ``df.set_index("question_id")``
or a filtered frame keeps its rows' names, and a label repeated for one ``model_id`` is a repeated id; except pandas'
default numbering, an index holding 0, 1, …, n − 1 in order, which leaves the ids the 1-based row positions (as in a
table file). Two columns of one name (an ``id`` index and an ``id`` column among them) are one error of the whole
frame, as is a mapped column the frame lacks.

RAGAS samples: each ``SingleTurnSample``'s ``model_dump()``, its ``None`` fields left out, is a RAGAS row: contexts
are ``retrieved_contexts`` with ids from ``retrieved_context_ids`` or their 1-based rank; ``reference_contexts``,
``multi_responses``, ``rubrics``, ``persona_name`` and the other fields go to metadata. A ``MultiTurnSample`` is an
error of that sample: its messages (tool calls among them) are not ragmeter's question, answer and history.

DeepEval ``LLMTestCase``: a native record is built and checked by
:func:`~ragmeter.io.formats.native.record_from_dict`, with errors naming DeepEval's attributes::

    input                                  → question
    actual_output                          → answer (None: an error of that test case)
    expected_output                        → references (one)
    retrieval_context                      → contexts, doc_id the 1-based rank (a RetrievedContextData's
                                             source is the chunk's title)
    completion_time (s)                    → latency_ms = 1000 × completion_time
    input_token_count, output_token_count  → usage: one call {prompt_tokens, completion_tokens}
    name                                   → id (unset: the position)
    metadata, additional_metadata          → metadata (their keys; model_id there is the record's model)
    tags, comments, token_cost             → metadata under those names
    context (the ideal context)            → metadata["ideal_context"]

Tool and MCP attributes are not read: a record has no field for them.

Each source is read row by row, never copied whole. As for files, an id repeated for the same ``model_id`` is an
error of the later record, and a source without rows is one error without a line.
"""

from __future__ import annotations

import difflib
import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ragmeter.core.errors import ConfigError, InputError
from ragmeter.core.records import Record
from ragmeter.io.formats.base import parsed
from ragmeter.io.formats.native import record_from_dict
from ragmeter.io.formats.ragas import RAGAS_FIELDS, record_from_ragas
from ragmeter.io.formats.table import MAP_FIELDS, missing_columns, table_records
from ragmeter.io.ids import unique_ids

__all__ = ["is_framework_object", "object_records"]

_FRAME = ("pandas", "DataFrame")
_DATASET = ("datasets", "Dataset")
_DATASET_DICT = ("datasets", "DatasetDict")
_EVALUATION_DATASET = ("ragas", "EvaluationDataset")
_SINGLE_TURN = ("ragas", "SingleTurnSample")
_MULTI_TURN = ("ragas", "MultiTurnSample")
_TEST_CASE = ("deepeval", "LLMTestCase")
_SOURCES = (_FRAME, _DATASET, _DATASET_DICT, _EVALUATION_DATASET)
_ITEMS = (_SINGLE_TURN, _MULTI_TURN, _TEST_CASE)  # what a list may hold
_ACCEPTED = (
    "a pandas DataFrame, a Hugging Face datasets.Dataset, a RAGAS EvaluationDataset or list of "
    "SingleTurnSample, or a list of DeepEval LLMTestCase"
)
#: record_from_dict's field → the DeepEval attribute it comes from, for error messages.
_TEST_CASE_NAMES = {
    "id": "name",
    "question": "input",
    "answer": "actual_output",
    "reference": "expected_output",
    "contexts": "retrieval_context",
    "latency_ms": "completion_time",
}


def is_framework_object(obj: Any) -> bool:
    """Whether :func:`object_records` reads ``obj``: a pandas DataFrame, a Hugging Face ``Dataset`` or
    ``DatasetDict`` (which it refuses with a message), a RAGAS ``EvaluationDataset``, or a list or tuple whose first
    item is a RAGAS sample or a DeepEval ``LLMTestCase``.

    >>> is_framework_object([{"question": "q", "answer": "a"}]), is_framework_object("run.jsonl")
    (False, False)
    """
    if isinstance(obj, (list, tuple)):
        return bool(obj) and _kind(obj[0], _ITEMS) is not None
    return _kind(obj, _SOURCES) is not None


def object_records(obj: Any, *, column_map: Mapping[str, str] | None = None) -> Iterator[Record | InputError]:
    """Each record of ``obj`` (see the module docstring), or the :class:`InputError` that rejects it, in order.

    ``column_map`` maps ragmeter fields to the columns of a DataFrame or Dataset (``{"question": "query"}``).
    Raises :class:`ConfigError` for an object that is none of the sources, a ``DatasetDict``, a ``column_map``
    with an unknown field or a column given twice, or a ``column_map`` given with RAGAS or DeepEval objects.
    """
    name, rows = _source_rows(obj, _checked_map(column_map or {}))
    count = 0
    for item in unique_ids(Path(name), rows):
        count += 1
        yield item
    if count == 0:
        yield InputError("holds no records", path=name)


def _kind(obj: Any, kinds: Iterable[tuple[str, str]]) -> tuple[str, str] | None:
    """The first of ``kinds`` (top-level module, class name) that ``obj``'s class or a base class is."""
    names = {(cls.__module__.split(".")[0], cls.__name__) for cls in type(obj).__mro__}
    return next((kind for kind in kinds if kind in names), None)


def _checked_map(column_map: Mapping[str, str]) -> dict[str, str]:
    """``column_map`` checked as ``--map`` options are: every field one of ``MAP_FIELDS``, no column twice."""
    taken: dict[str, str] = {}
    for field_name, column in column_map.items():
        if field_name not in MAP_FIELDS:
            close = difflib.get_close_matches(str(field_name), MAP_FIELDS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(
                f"column_map: {field_name!r} is not a record field{hint}. A field is one of "
                f"{', '.join(MAP_FIELDS[: -len(RAGAS_FIELDS)])}; for RAGAS-style columns also "
                f"{', '.join(RAGAS_FIELDS)} (unmapped columns keep their names; unknown ones go to "
                "metadata)"
            )
        if not isinstance(column, str) or not column:
            raise ConfigError(f"column_map: {field_name!r} maps to {column!r}; expected a column name")
        if column in taken:
            raise ConfigError(
                f"column_map maps both {taken[column]!r} and {field_name!r} to column {column!r}: a "
                "column fills one field"
            )
        taken[column] = field_name
    return dict(column_map)


def _source_rows(obj: Any, column_map: dict[str, str]) -> tuple[str, Iterator[tuple[int, Record | InputError]]]:
    """The name of ``obj`` in errors and its (position, record or error) rows; raises ConfigError for what is not
    read."""
    kind = _kind(obj, _SOURCES)
    if kind == _FRAME:
        return "DataFrame", _table_records("DataFrame", *_frame_rows(obj, column_map), column_map)
    if kind == _DATASET:
        rows = ({key: _plain(value) for key, value in row.items()} for row in obj)
        return "Dataset", _table_records("Dataset", list(obj.column_names), rows, column_map)
    if kind == _DATASET_DICT:
        splits = list(obj)
        example = "test" if "test" in splits else (splits or ["test"])[0]
        raise ConfigError(
            f"a DatasetDict holds splits ({', '.join(map(repr, splits))}): pass one split, e.g. dataset[{example!r}]"
        )
    first = obj[0] if isinstance(obj, (list, tuple)) and obj else None
    item = _kind(first, _ITEMS)
    if kind is None and item is None:
        raise ConfigError(
            f"ragmeter reads records from a file path, or from {_ACCEPTED}; found "
            f"{type(obj).__name__} (Record objects and dicts go to ragmeter.evaluate as they are)"
        )
    if column_map:
        raise ConfigError(
            "column_map applies to a DataFrame or a Hugging Face Dataset; RAGAS samples and DeepEval "
            "test cases have fixed field names"
        )
    if kind == _EVALUATION_DATASET:
        return "EvaluationDataset", _sample_records("EvaluationDataset", obj.samples, _ragas_record)
    name = f"{type(first).__name__} list"
    return name, _sample_records(name, obj, _test_case_record if item == _TEST_CASE else _ragas_record)


def _table_records(
    name: str, names: list[str], rows: Iterator[dict[str, Any]], column_map: Mapping[str, str]
) -> Iterator[tuple[int, Record | InputError]]:
    """The rows of a frame or dataset read as a table file's rows, after the checks of its columns."""
    path = Path(name)
    problem = _repeated_columns(name, names) or missing_columns(path, names, column_map)
    if problem is not None:
        yield 0, problem
        return
    yield from table_records(path, enumerate(rows, start=1), column_map)


def _repeated_columns(name: str, names: list[str]) -> InputError | None:
    repeated = sorted(column for column, count in Counter(names).items() if count > 1)
    if not repeated:
        return None
    return InputError(
        f"more than one column is named {', '.join(map(repr, repeated))} (columns read: "
        f"{', '.join(map(repr, names))}): rename them, since each fills one field",
        path=name,
    )


def _frame_rows(frame: Any, column_map: Mapping[str, str]) -> tuple[list[str], Iterator[dict[str, Any]]]:
    """The columns a frame is read with (the index as ``id`` first where it gives the ids, then the frame's
    columns) and its rows, made one at a time."""
    columns = [str(column) for column in frame.columns]
    if frame.index.nlevels == 1 and frame.index.name == "id":
        rows = (
            dict(zip(["id", *columns], map(_plain, values), strict=True))
            for values in frame.itertuples(index=True, name=None)
        )
        return ["id", *columns], rows
    if "id" in columns or "id" in column_map or _numbered(frame):
        return columns, (
            dict(zip(columns, map(_plain, values), strict=True)) for values in frame.itertuples(index=False, name=None)
        )
    rows = (
        {"id": _label(values[0]), **dict(zip(columns, map(_plain, values[1:]), strict=True))}
        for values in frame.itertuples(index=True, name=None)
    )
    return ["id", *columns], rows


def _numbered(frame: Any) -> bool:
    """Whether the frame's index is pandas' default numbering: 0, 1, …, n − 1 in order."""
    import pandas as pd  # the caller passed a DataFrame: pandas is loaded

    return bool(frame.index.equals(pd.RangeIndex(len(frame))))


def _label(label: Any) -> str | None:
    """A row's index label as an id: its text (a MultiIndex's parts joined by ``/``), ``None`` where missing."""
    value = _plain(label)
    if isinstance(value, list):
        return "/".join("" if part is None else str(part) for part in value)
    return None if value is None else str(value)


def _plain(value: Any) -> Any:
    """``value`` as a JSON reader would give it: numpy scalars as Python numbers, numpy arrays and tuples as
    lists, and NaN, ``pd.NA`` and ``pd.NaT`` as ``None``, at any depth.

    >>> _plain((1, float("nan"), {"k": [None, "x"]}))
    [1, None, {'k': [None, 'x']}]
    """
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    module = type(value).__module__.split(".")[0]
    if module == "numpy":  # an array or a numpy scalar: tolist() gives lists of Python values, or one
        return _plain(value.tolist())
    if isinstance(value, float) and math.isnan(value):
        return None
    if module == "pandas" and type(value).__name__ in ("NAType", "NaTType"):
        return None
    return value


def _sample_records(
    name: str,
    items: Iterable[Any],
    read: Callable[[Any, dict[str, Any]], Record | InputError],
) -> Iterator[tuple[int, Record | InputError]]:
    for number, item in enumerate(items, start=1):
        yield number, read(item, {"path": name, "line": number})


def _ragas_record(sample: Any, where: dict[str, Any]) -> Record | InputError:
    kind = _kind(sample, (_SINGLE_TURN, _MULTI_TURN))
    if kind == _MULTI_TURN:
        return InputError(
            "a RAGAS MultiTurnSample is not read: its messages (tool calls among them) are not "
            "ragmeter's question, answer and history; build records with 'history' instead",
            **where,
        )
    if kind is None:
        return InputError(f"expected a RAGAS SingleTurnSample, found {type(sample).__name__}", **where)
    row = {key: value for key, value in sample.model_dump().items() if value is not None}
    return parsed(record_from_ragas, row, **where)


def _test_case_record(case: Any, where: dict[str, Any]) -> Record | InputError:
    if _kind(case, (_TEST_CASE,)) is None:
        return InputError(f"expected a DeepEval LLMTestCase, found {type(case).__name__}", **where)
    return parsed(record_from_dict, _test_case_dict(case), names=_TEST_CASE_NAMES, **where)


def _test_case_dict(case: Any) -> dict[str, Any]:
    """The native record of a DeepEval test case (see the module docstring), left for record_from_dict to check.
    Attributes are read from the model's fields (``vars``), so no deprecated property is touched."""
    got = {key: value for key, value in vars(case).items() if value is not None}
    row: dict[str, Any] = {
        "id": got.get("name"),
        "question": got.get("input"),
        "answer": got.get("actual_output"),
        "reference": got.get("expected_output"),
        "contexts": [
            _test_case_chunk(rank, item) for rank, item in enumerate(got.get("retrieval_context", []), start=1)
        ],
    }
    if "completion_time" in got:
        row["latency_ms"] = got["completion_time"] * 1000
    if "input_token_count" in got or "output_token_count" in got:
        row["usage"] = {
            "prompt_tokens": got.get("input_token_count"),
            "completion_tokens": got.get("output_token_count"),
        }
    metadata = {
        **got.get("additional_metadata", {}),
        **got.get("metadata", {}),
        **{key: got[key] for key in ("tags", "comments", "token_cost") if key in got},
    }
    if "context" in got:
        metadata["ideal_context"] = got["context"]
    row["metadata"] = metadata
    return {key: value for key, value in row.items() if value is not None}


def _test_case_chunk(rank: int, item: Any) -> dict[str, Any]:
    """A retrieval_context item as a native chunk: a string, or a RetrievedContextData (context, source)."""
    if isinstance(item, str) or not hasattr(item, "context"):
        return {"doc_id": str(rank), "text": item}
    return {"doc_id": str(rank), "text": item.context, "title": getattr(item, "source", None)}
