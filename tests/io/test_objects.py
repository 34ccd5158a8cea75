"""Records from in-memory objects: pandas DataFrames, Hugging Face datasets, RAGAS samples, DeepEval test cases.

Every expected value below is worked out by hand from the input written in the test.
"""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import datasets
import numpy as np
import pandas as pd
import pytest
from pydantic import BaseModel

import ragmeter
from ragmeter.core.errors import ConfigError, InputError
from ragmeter.core.records import Answerability, Chunk, Record, Usage
from ragmeter.io.objects import is_framework_object, object_records

# ---------------------------------------------------------------- stand-ins for RAGAS and DeepEval
# Neither installs here (deepeval 4.3.1 pins click<8.4, which huggingface-hub ≥ 1.31 excludes; ragas 0.4.3 fails to
# import with the current langchain-community). These pydantic models have the class names, modules and fields of
# ragas 0.4.x's dataset_schema classes and deepeval 4.x's LLMTestCase, which is all objects.py looks at.


class SingleTurnSample(BaseModel):
    user_input: str | None = None
    retrieved_contexts: list[str] | None = None
    reference_contexts: list[str] | None = None
    retrieved_context_ids: list[str] | None = None
    reference_context_ids: list[str] | None = None
    response: str | None = None
    multi_responses: list[str] | None = None
    reference: str | None = None
    rubrics: dict[str, str] | None = None
    persona_name: str | None = None
    query_style: str | None = None
    query_length: str | None = None


class MultiTurnSample(BaseModel):
    user_input: list[dict[str, str]]
    reference: str | None = None


class EvaluationDataset(BaseModel):
    samples: list[SingleTurnSample | MultiTurnSample]


class RetrievedContextData(BaseModel):
    context: str
    source: str


class LLMTestCase(BaseModel):
    # additional_metadata: a field in older releases, an alias of metadata in 4.x; both are read.
    input: str
    actual_output: str | None = None
    expected_output: str | None = None
    context: list[str] | None = None
    retrieval_context: list[str | RetrievedContextData] | None = None
    metadata: dict[str, Any] | None = None
    additional_metadata: dict[str, Any] | None = None
    tags: list[str] | None = None
    comments: str | None = None
    token_cost: float | None = None
    completion_time: float | None = None
    multimodal: bool = False
    name: str | None = None
    input_token_count: int | None = None
    output_token_count: int | None = None


for _model in (SingleTurnSample, MultiTurnSample, EvaluationDataset):
    _model.__module__ = "ragas.dataset_schema"
for _model in (LLMTestCase, RetrievedContextData):
    _model.__module__ = "deepeval.test_case.llm_test_case"


def records(obj: Any, **kwargs: Any) -> list[Record | InputError]:
    return list(object_records(obj, **kwargs))


def only(obj: Any, **kwargs: Any) -> Record:
    (record,) = records(obj, **kwargs)
    assert isinstance(record, Record), record
    return record


# ---------------------------------------------------------------- recognising the objects


def test_framework_objects_are_recognised_by_class_name() -> None:
    frame = pd.DataFrame({"question": ["q"], "answer": ["a"]})
    dataset = datasets.Dataset.from_list([{"question": "q", "answer": "a"}])
    assert is_framework_object(frame) and is_framework_object(dataset)
    assert is_framework_object(datasets.DatasetDict({"test": dataset}))
    assert is_framework_object(EvaluationDataset(samples=[SingleTurnSample(user_input="q")]))
    assert is_framework_object([SingleTurnSample(user_input="q")]) and is_framework_object((LLMTestCase(input="q"),))
    assert not any(is_framework_object(obj) for obj in ([], [{"question": "q"}], "run.jsonl", frame.to_dict()))


def test_importing_the_module_imports_no_framework() -> None:
    code = (
        "import sys, ragmeter, ragmeter.io.objects as o; o.is_framework_object([{'question': 'q'}]); "
        "print(sorted(m for m in ('pandas', 'datasets', 'ragas', 'deepeval') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_other_objects_are_a_config_error_saying_what_is_read() -> None:
    with pytest.raises(ConfigError, match=re.escape("a pandas DataFrame, a Hugging Face datasets.Dataset")):
        records([{"question": "q", "answer": "a"}])


def test_a_dataset_dict_is_refused_naming_its_splits() -> None:
    split = datasets.Dataset.from_list([{"question": "q", "answer": "a"}])
    with pytest.raises(ConfigError, match=r"holds splits \('train', 'test'\): pass one split, e.g. dataset\['test'\]"):
        records(datasets.DatasetDict({"train": split, "test": split}))


# ---------------------------------------------------------------- DataFrames


def test_dataframe_columns_are_record_fields() -> None:
    frame = pd.DataFrame(
        {
            "id": ["a", "b"],
            "question": ["Capital of France?", "Who wrote it?"],
            "answer": ["Paris [CIT:d1]", ""],
            "contexts": [[{"doc_id": "d1", "text": "Paris is the capital."}], []],
            "references": [["Paris"], ["Hugo", "Victor Hugo"]],
            "latency_ms": [120.5, 80],
            "prompt_tokens": [100, 7],
            "completion_tokens": [12, 3],
            "model_id": ["m1", "m1"],
            "topic": ["geo", "lit"],
        }
    )
    first, second = records(frame)
    assert first == Record(
        id="a",
        question="Capital of France?",
        answer="Paris [CIT:d1]",
        contexts=(Chunk("d1", "Paris is the capital."),),
        references=("Paris",),
        answerability=Answerability.ANSWERABLE,
        usage=(Usage(100, 12),),
        latency_ms=120.5,
        metadata={"model_id": "m1", "topic": "geo"},
    )
    assert (second.id, second.answer, second.references, second.usage, second.latency_ms) == (
        "b",
        "",
        ("Hugo", "Victor Hugo"),
        (Usage(7, 3),),
        80.0,
    )
    assert type(second.latency_ms) is float and type(second.metadata["topic"]) is str


def test_column_map_renames_columns() -> None:
    frame = pd.DataFrame({"query": ["q1"], "response_text": ["a1"], "lat": [5], "gold": ["a1"]})
    record = only(
        frame, column_map={"question": "query", "answer": "response_text", "latency_ms": "lat", "references": "gold"}
    )
    assert (record.id, record.question, record.answer, record.latency_ms, record.references, record.metadata) == (
        "1",
        "q1",
        "a1",
        5.0,
        ("a1",),
        {},
    )


def test_ragas_column_names_read_as_ragas() -> None:
    frame = pd.DataFrame(
        {
            "user_input": ["q"],
            "response": ["r"],
            "retrieved_contexts": [["c one", "c two"]],
            "reference": ["gold"],
            "persona_name": ["novice"],
        }
    )
    assert only(frame) == Record(
        id="1",
        question="q",
        answer="r",
        contexts=(Chunk("1", "c one"), Chunk("2", "c two")),
        references=("gold",),
        answerability=Answerability.ANSWERABLE,
        metadata={"persona_name": "novice"},
    )


def test_numpy_cells_become_python_values() -> None:
    frame = pd.DataFrame(
        {
            "question": ["q"],
            "answer": ["a"],
            "references": [np.array(["x", "y"])],
            "contexts": [np.array([{"doc_id": np.int64(7), "text": "t"}], dtype=object)],
            "usage": [[{"prompt_tokens": np.int32(3), "completion_tokens": np.int64(4)}]],
            "score": [np.float32(0.5)],
            "flag": [np.bool_(True)],
        }
    )
    record = only(frame)
    assert (record.references, record.contexts, record.usage) == (("x", "y"), (Chunk("7", "t"),), (Usage(3, 4),))
    assert record.metadata == {"score": 0.5, "flag": True} and type(record.metadata["flag"]) is bool


def test_nan_none_and_na_cells_are_missing_but_an_empty_answer_is_an_answer() -> None:
    frame = pd.DataFrame(
        {
            "question": ["q1", "q2"],
            "answer": ["", "a2"],
            "references": [np.nan, "r2"],
            "latency_ms": [np.nan, 9.0],
            "contexts": [None, "[]"],
            "prompt_tokens": pd.array([pd.NA, 5], dtype="Int64"),
            "note": [pd.NA, "n"],
        }
    )
    first, second = records(frame)
    assert (first.answer, first.references, first.latency_ms, first.usage, first.metadata) == ("", (), None, None, {})
    assert (second.references, second.latency_ms, second.usage, second.metadata) == (
        ("r2",),
        9.0,
        (Usage(5, 0),),
        {"note": "n"},
    )


def test_json_text_in_structured_columns_is_decoded() -> None:
    frame = pd.DataFrame(
        {
            "question": ["q"],
            "answer": ["a"],
            "contexts": ['[{"doc_id": "d", "text": "t"}]'],
            "metadata": ['{"run_id": "r7"}'],
        }
    )
    record = only(frame)
    assert (record.contexts, record.metadata) == ((Chunk("d", "t"),), {"run_id": "r7"})


def test_a_bad_row_is_an_error_with_row_and_field_and_later_rows_still_come() -> None:
    frame = pd.DataFrame(
        {
            "question": ["q1", "q2", "q3"],
            "answer": ["a1", "a2", "a3"],
            "latency_ms": [1.0, -4.0, 3.0],
            "prompt_tokens": [1, 2, 2.5],
        }
    )
    first, bad, last = records(frame)
    assert isinstance(first, Record) and first.id == "1"
    assert isinstance(bad, InputError) and (bad.path, bad.line, bad.field) == ("DataFrame", 2, "latency_ms")
    assert isinstance(last, InputError) and (last.line, last.field) == (3, "prompt_tokens")
    assert "whole number of tokens" in last.reason
    mapped = records(pd.DataFrame({"q": ["x"], "answer": [None]}), column_map={"question": "q"})
    assert [(e.line, e.field) for e in mapped if isinstance(e, InputError)] == [(1, "answer")]


def test_a_mapped_column_the_frame_lacks_is_one_error_naming_its_columns() -> None:
    frame = pd.DataFrame({"query": ["q"] * 3, "answer": ["a"] * 3})
    (error,) = records(frame, column_map={"question": "querry"})
    assert isinstance(error, InputError) and (error.path, error.line) == ("DataFrame", None)
    assert "'question' is mapped to column 'querry'" in error.reason and "did you mean 'query'?" in error.reason
    assert "columns are: 'query', 'answer'" in error.reason


def test_column_map_is_checked_like_map_options() -> None:
    frame = pd.DataFrame({"q": ["q"], "answer": ["a"]})
    with pytest.raises(ConfigError, match=r"'questoin' is not a record field \(did you mean 'question'\?\)"):
        records(frame, column_map={"questoin": "q"})
    with pytest.raises(ConfigError, match="maps both 'question' and 'reference' to column 'q'"):
        records(frame, column_map={"question": "q", "reference": "q"})
    with pytest.raises(ConfigError, match="expected a column name"):
        records(frame, column_map={"question": ""})


def test_an_index_named_id_is_the_id_column() -> None:
    frame = pd.DataFrame({"question": ["q1", "q2"], "answer": ["a1", "a2"]}, index=[10, 20])
    named = frame.rename_axis("id")
    assert [(r.id, r.metadata) for r in records(named)] == [("10", {}), ("20", {})]
    (error,) = records(named.assign(id=["x", "y"]))
    assert isinstance(error, InputError) and error.line is None
    assert "more than one column is named 'id' (columns read: 'id', 'question', 'answer', 'id')" in error.reason


def test_without_an_id_column_the_index_gives_the_ids() -> None:
    frame = pd.DataFrame(
        {"question": ["q1", "q2", "q3"], "answer": ["a1", "a2", "a3"]},
        index=pd.Index(["alpha", "beta", "gamma"], name="qid"),
    )
    assert [(r.id, r.question, r.metadata) for r in records(frame)] == [
        ("alpha", "q1", {}),
        ("beta", "q2", {}),
        ("gamma", "q3", {}),
    ]
    # integer labels other than 0, 1, 2 (a filtered frame keeps its rows' labels); a MultiIndex's parts joined
    assert [r.id for r in records(frame.reset_index(drop=True).iloc[[0, 2]])] == ["0", "2"]
    assert [r.id for r in records(frame.set_axis(pd.Index([10, 20, 30])))] == ["10", "20", "30"]
    pairs = pd.MultiIndex.from_tuples([("conv1", 1), ("conv1", 2), ("conv2", 1)])
    assert [r.id for r in records(frame.set_axis(pairs))] == ["conv1/1", "conv1/2", "conv2/1"]
    # a repeated label is a repeated id, named at its row
    first, second, third = records(frame.set_axis(pd.Index(["x", "y", "x"])))
    assert (first.id, second.id) == ("x", "y") and isinstance(third, InputError)
    assert (third.line, third.field) == (3, "id") and "repeats the id 'x' of line 1" in third.reason


def test_an_id_column_or_mapping_wins_over_the_index_and_default_numbering_stays_positions() -> None:
    frame = pd.DataFrame(
        {"id": ["i1", "i2"], "qid": ["m1", "m2"], "question": ["q1", "q2"], "answer": ["a", "b"]}, index=["x", "y"]
    )
    assert [r.id for r in records(frame)] == ["i1", "i2"]
    assert [r.id for r in records(frame.drop(columns="id"), column_map={"id": "qid"})] == ["m1", "m2"]
    # pandas' default index (and one equal to it) leaves the ids the 1-based row positions, as before
    plain = frame.drop(columns=["id", "qid"]).reset_index(drop=True)
    assert [r.id for r in records(plain)] == ["1", "2"]
    assert [r.id for r in records(plain.set_axis(pd.Index([0, 1])))] == ["1", "2"]


def test_evaluate_keeps_a_frames_string_index_as_the_ids() -> None:
    frame = pd.DataFrame(
        {"question": ["Capital?", "Colours?"], "answer": ["Paris", "blue green"], "references": ["Paris", "green red"]},
        index=["fr-capital", "flag-colours"],
    )
    result = ragmeter.evaluate(frame, metrics=["token_f1"])
    # fr-capital: [paris] vs [paris]: F1 1. flag-colours: [blue, green] vs [green, red]: P = R = 1/2.
    assert [(row["id"], row["scores"]) for row in result.items()] == [
        ("fr-capital", {"token_f1": 1.0}),
        ("flag-colours", {"token_f1": 0.5}),
    ]


def test_repeated_ids_and_empty_frames_are_errors_as_in_files() -> None:
    frame = pd.DataFrame({"id": ["x", "x"], "question": ["q", "q"], "answer": ["a", "b"]})
    first, second = records(frame)
    assert isinstance(first, Record) and isinstance(second, InputError)
    assert (second.line, second.field) == (2, "id") and "repeats the id 'x' of line 1" in second.reason
    (empty,) = records(pd.DataFrame({"question": [], "answer": []}))
    assert isinstance(empty, InputError) and (empty.path, empty.line, empty.reason) == (
        "DataFrame",
        None,
        "holds no records",
    )


def test_read_records_and_evaluate_take_a_frame() -> None:
    frame = pd.DataFrame(
        {
            "qid": ["a", "b", "c"],
            "query": ["Capital?", "Landmark?", "Colours?"],
            "resp": ["Paris is the capital", "The Eiffel Tower.", "blue green"],
            "gold": ["Paris", np.array(["eiffel tower", "Tour Eiffel"]), "green red"],
        }
    )
    column_map = {"id": "qid", "question": "query", "answer": "resp", "references": "gold"}
    assert [r.references for r in ragmeter.read_records(frame, column_map=column_map)] == [
        ("Paris",),
        ("eiffel tower", "Tour Eiffel"),
        ("green red",),
    ]
    result = ragmeter.evaluate(frame, metrics=["exact_match", "token_f1"], column_map=column_map)
    # a: [paris, is, capital] vs [paris]: P 1/3, R 1, F1 1/2. b: equal after normalisation. c: [blue, green] vs
    # [green, red]: P = R = 1/2.
    assert [(row["id"], row["scores"]) for row in result.items()] == [
        ("a", {"exact_match": 0.0, "token_f1": 0.5}),
        ("b", {"exact_match": 1.0, "token_f1": 1.0}),
        ("c", {"exact_match": 0.0, "token_f1": 0.5}),
    ]
    assert result.summary("exact_match").value == pytest.approx(1 / 3)


def test_evaluate_raises_the_error_of_a_bad_row() -> None:
    frame = pd.DataFrame({"question": ["q1", "q2"], "answer": ["a", None]})
    with pytest.raises(InputError, match="DataFrame:2 field 'answer'"):
        ragmeter.evaluate(frame, metrics=["token_f1"])


# ---------------------------------------------------------------- Hugging Face datasets


def test_dataset_rows_read_like_frame_rows() -> None:
    dataset = datasets.Dataset.from_list(
        [
            {"query": "q1", "answer": "a1", "references": ["r1", "r2"], "contexts": [{"doc_id": "d", "text": "t"}]},
            {"query": "q2", "answer": "", "references": [], "contexts": []},
        ]
    )
    first, second = records(dataset, column_map={"question": "query"})
    assert first == Record(
        id="1",
        question="q1",
        answer="a1",
        contexts=(Chunk("d", "t"),),
        references=("r1", "r2"),
        answerability=Answerability.ANSWERABLE,
    )
    assert (second.id, second.question, second.answer, second.contexts, second.references) == ("2", "q2", "", (), ())


def test_dataset_from_pandas_keeps_an_id_index_and_reports_bad_rows() -> None:
    frame = pd.DataFrame(
        {
            "user_input": ["q1", "q2", "q3"],
            "response": ["r1", None, "r3"],
            "retrieved_contexts": [["c"], ["c"], ["c1", "c2"]],
            "retrieved_context_ids": [["k"], ["k"], ["k1", "k2"]],
        },
        index=pd.Index([5, 6, 7], name="id"),
    )
    first, bad, last = records(datasets.Dataset.from_pandas(frame))
    assert isinstance(first, Record) and (first.id, first.question, first.contexts) == ("5", "q1", (Chunk("k", "c"),))
    assert isinstance(bad, InputError) and (bad.path, bad.line, bad.field) == ("Dataset", 2, "response")
    assert isinstance(last, Record) and last.contexts == (Chunk("k1", "c1"), Chunk("k2", "c2"))


def test_a_mapped_column_the_dataset_lacks_is_one_error() -> None:
    dataset = datasets.Dataset.from_list([{"question": "q", "answer": "a"}])
    (error,) = records(dataset, column_map={"references": "gold"})
    assert isinstance(error, InputError) and (error.path, error.line) == ("Dataset", None)
    assert "columns are: 'question', 'answer'" in error.reason


# ---------------------------------------------------------------- RAGAS


def test_ragas_evaluation_dataset() -> None:
    dataset = EvaluationDataset(
        samples=[
            SingleTurnSample(
                user_input="q",
                response="r",
                retrieved_contexts=["c1", "c2"],
                reference="gold",
                reference_contexts=["c1"],
                rubrics={"score1": "bad"},
            ),
            SingleTurnSample(user_input="q2", response="r2", retrieved_contexts=["c"], retrieved_context_ids=["doc9"]),
        ]
    )
    first, second = records(dataset)
    assert first == Record(
        id="1",
        question="q",
        answer="r",
        contexts=(Chunk("1", "c1"), Chunk("2", "c2")),
        references=("gold",),
        answerability=Answerability.ANSWERABLE,
        metadata={"reference_contexts": ["c1"], "rubrics": {"score1": "bad"}},
    )
    assert (second.id, second.contexts, second.references, second.metadata) == ("2", (Chunk("doc9", "c"),), (), {})


def test_ragas_sample_list_errors() -> None:
    items = records(
        [
            SingleTurnSample(user_input="q"),
            SingleTurnSample(user_input="q", response="r"),
            MultiTurnSample(user_input=[{"content": "hi", "type": "human"}]),
            LLMTestCase(input="q"),
        ]
    )
    assert [type(item).__name__ for item in items] == ["InputError", "Record", "InputError", "InputError"]
    assert [(e.path, e.line, e.field) for e in items if isinstance(e, InputError)] == [
        ("SingleTurnSample list", 1, "response"),
        ("SingleTurnSample list", 3, None),
        ("SingleTurnSample list", 4, None),
    ]
    assert "MultiTurnSample is not read" in items[2].reason and "found LLMTestCase" in items[3].reason
    with pytest.raises(ConfigError, match="column_map applies to a DataFrame or a Hugging Face Dataset"):
        records([SingleTurnSample(user_input="q")], column_map={"question": "user_input"})


def test_an_empty_evaluation_dataset_holds_no_records() -> None:
    (error,) = records(EvaluationDataset(samples=[]))
    assert isinstance(error, InputError) and (error.path, error.line) == ("EvaluationDataset", None)


# ---------------------------------------------------------------- DeepEval


def test_deepeval_test_cases() -> None:
    case = LLMTestCase(
        input="Capital?",
        actual_output="Paris [CIT:2]",
        expected_output="Paris",
        retrieval_context=["Lyon is big.", RetrievedContextData(context="Paris is the capital.", source="wiki/France")],
        context=["Paris is France's capital."],
        completion_time=1.25,
        input_token_count=40,
        output_token_count=6,
        name="case-1",
        tags=["geo"],
        comments="checked",
        token_cost=0.002,
        metadata={"model_id": "m1"},
        additional_metadata={"team": "t"},
    )
    record, second = records([case, LLMTestCase(input="q2", actual_output="a2")])
    assert record == Record(
        id="case-1",
        question="Capital?",
        answer="Paris [CIT:2]",
        contexts=(Chunk("1", "Lyon is big."), Chunk("2", "Paris is the capital.", title="wiki/France")),
        references=("Paris",),
        answerability=Answerability.ANSWERABLE,
        usage=(Usage(40, 6),),
        latency_ms=1250.0,
        metadata={
            "team": "t",
            "model_id": "m1",
            "tags": ["geo"],
            "comments": "checked",
            "token_cost": 0.002,
            "ideal_context": ["Paris is France's capital."],
        },
    )
    assert record.model_id == "m1"
    assert (second.id, second.contexts, second.references, second.usage, second.latency_ms, second.metadata) == (
        "2",
        (),
        (),
        None,
        None,
        {},
    )


def test_deepeval_errors_name_deepeval_attributes() -> None:
    items = records(
        (
            LLMTestCase(input="q"),
            LLMTestCase(input="q", actual_output="a", completion_time=-1.0),
            LLMTestCase(input="q", actual_output="a", retrieval_context=["x" * 1_000_001]),
            LLMTestCase(input="q", actual_output="a"),
        )
    )
    assert [(e.path, e.line, e.field) for e in items if isinstance(e, InputError)] == [
        ("LLMTestCase list", 1, "actual_output"),
        ("LLMTestCase list", 2, "completion_time"),
        ("LLMTestCase list", 3, "retrieval_context[0].text"),
    ]
    assert isinstance(items[3], Record) and items[3].id == "4"
