"""Annotation files at library level: the template (rows, CSV/TSV/JSONL), filled files read back as votes
with every problem located, majority merge onto records, and agreement per label.

Every expected value is worked out by hand from the records and votes written in the test.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from label_records import ALL, RECORDS, TEXT_COLUMNS, UNITS

from ragmeter import read_records
from ragmeter.core.errors import InputError
from ragmeter.core.records import ANSWER_LABELS, CHUNK_LABELS, Record
from ragmeter.human.annotation_files import read_annotations, template_rows, unit_key, write_template
from ragmeter.human.merge import agreement_by_label, merge_votes
from ragmeter.io.formats.native import record_from_dict, record_to_dict


@pytest.fixture
def records() -> list[Record]:
    return [record_from_dict(obj) for obj in RECORDS]


def read_csv(path: Path, delimiter: str = ",") -> tuple[list[str], list[dict[str, str]]]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
        return list(reader.fieldnames or []), list(reader)


def write_csv(path: Path, header: Sequence[str], rows: Sequence[dict[str, Any]], delimiter: str = ",") -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(header), delimiter=delimiter)
        writer.writeheader()
        writer.writerows(rows)
    return path


def fill(
    rows: list[dict[str, str]],
    values: dict[tuple[str, int], dict[str, Any]],
    default: str = "0",
    annotator: str | None = None,
) -> list[dict[str, str]]:
    """Template rows with every empty (applicable) cell set to ``default``, then ``values`` by
    (record, rank), rank 0 the answer."""
    filled = []
    for row in rows:
        row = dict(row)
        rank = 0 if row["unit"] == "answer" else int(row["rank"])
        for name in ALL:
            if row.get(name) == "":
                row[name] = default
        row.update(values.get((row["record_id"], rank), {}))
        if annotator is not None:
            row["annotator"] = annotator
        filled.append(row)
    return filled


def filled_csv(
    tmp_path: Path,
    records: list[Record],
    name: str,
    labels: Sequence[str],
    values: dict[tuple[str, int], dict[str, Any]] | None = None,
    annotator: str = "",
) -> Path:
    template = tmp_path / f"template-{name}"
    write_template(records, template, labels, annotator=annotator)
    header, rows = read_csv(template)
    return write_csv(tmp_path / name, header, fill(rows, values or {}))


# ---------------------------------------------------------------- template


def test_template_rows_one_answer_row_then_one_per_chunk(records: list[Record]) -> None:
    rows = list(template_rows(records))
    assert [(r["record_id"], 0 if r["unit"] == "answer" else r["rank"]) for r in rows] == UNITS
    answer, chunk = rows[0], rows[1]
    assert list(answer) == TEXT_COLUMNS + ALL
    assert answer["unit"] == "answer" and answer["rank"] == "" and answer["doc_id"] == ""
    assert answer["text"] == RECORDS[0]["answer"]
    assert {name: answer[name] for name in CHUNK_LABELS} == dict.fromkeys(CHUNK_LABELS, "n/a")
    assert {name: answer[name] for name in ANSWER_LABELS} == dict.fromkeys(ANSWER_LABELS, "")
    assert chunk["unit"] == "chunk" and chunk["rank"] == 1 and chunk["doc_id"] == "fr-1"
    assert chunk["text"] == "France\nParis is the capital of France."  # the title, then the text
    assert rows[2]["text"] == 'Lyon, a city, is "big".'  # no title: the text alone
    assert {name: chunk[name] for name in CHUNK_LABELS} == dict.fromkeys(CHUNK_LABELS, "")
    assert {name: chunk[name] for name in ANSWER_LABELS} == dict.fromkeys(ANSWER_LABELS, "n/a")
    assert {r["question"] for r in rows[:4]} == {"What is the capital of France?"}
    assert {r["annotator"] for r in rows} == {""} and {r["model_id"] for r in rows} == {""}


def test_csv_template_header_and_cells(tmp_path: Path, records: list[Record]) -> None:
    path = tmp_path / "t.csv"
    assert write_template(records, path) == 11  # 3 answers + 3 + 2 + 3 chunks
    header, rows = read_csv(path)
    assert header == TEXT_COLUMNS + ALL
    assert path.read_text(encoding="utf-8").splitlines()[0] == ",".join(TEXT_COLUMNS + ALL)
    assert [(r["record_id"], r["unit"], r["rank"], r["doc_id"]) for r in rows[:5]] == [
        ("r1", "answer", "", ""),
        ("r1", "chunk", "1", "fr-1"),
        ("r1", "chunk", "2", "fr-2"),
        ("r1", "chunk", "3", "de-1"),
        ("r2", "answer", "", ""),
    ]
    for row in rows:
        applicable = ANSWER_LABELS if row["unit"] == "answer" else CHUNK_LABELS
        assert all(row[name] == ("" if name in applicable else "n/a") for name in ALL), row


def test_text_with_commas_quotes_and_newlines_round_trips(tmp_path: Path, records: list[Record]) -> None:
    path = tmp_path / "t.csv"
    write_template(records, path)
    _, rows = read_csv(path)
    assert rows[0]["text"] == 'Paris, "the City of Light",\nis the capital.'
    assert rows[1]["text"] == "France\nParis is the capital of France."
    assert rows[2]["text"] == 'Lyon, a city, is "big".'
    assert rows[8]["text"] == "Mount Everest is 8,849 metres tall."
    assert [r["question"] for r in rows] == [r.question for r in records for _ in range(len(r.contexts) + 1)]


@pytest.mark.parametrize(
    ("labels", "units"),
    [
        (CHUNK_LABELS, ["chunk"] * 8),
        (ANSWER_LABELS, ["answer"] * 3),
        (("misleading",), ["chunk"] * 8),
        (
            ("helpful", "topically_relevant"),
            ["answer", "chunk", "chunk", "chunk", "answer", "chunk", "chunk", "answer", "chunk", "chunk", "chunk"],
        ),
    ],
)
def test_template_label_selection(
    tmp_path: Path, records: list[Record], labels: tuple[str, ...], units: list[str]
) -> None:
    path = tmp_path / "t.csv"
    assert write_template(records, path, labels) == len(units)
    header, rows = read_csv(path)
    assert header == TEXT_COLUMNS + list(labels)  # the order asked for
    assert [r["unit"] for r in rows] == units


def test_annotator_fills_the_column(tmp_path: Path, records: list[Record]) -> None:
    path = tmp_path / "t.csv"
    write_template(records, path, CHUNK_LABELS, annotator="alice")
    _, rows = read_csv(path)
    assert {r["annotator"] for r in rows} == {"alice"}


def test_model_id_column(tmp_path: Path) -> None:
    records = [
        record_from_dict(
            {
                "id": "q1",
                "question": "q",
                "answer": f"answer of {model}",
                "contexts": [{"doc_id": "d1", "text": "t"}],
                "metadata": {"model_id": model},
            }
        )
        for model in ("m-a", "m-b")
    ]
    path = tmp_path / "t.csv"
    write_template(records, path, ("helpful",))
    _, rows = read_csv(path)
    assert [(r["record_id"], r["model_id"], r["text"]) for r in rows] == [
        ("q1", "m-a", "answer of m-a"),
        ("q1", "m-b", "answer of m-b"),
    ]


def test_jsonl_template_has_null_to_fill_and_omits_labels_that_do_not_apply(
    tmp_path: Path, records: list[Record]
) -> None:
    path = tmp_path / "t.jsonl"
    assert write_template(records, path, annotator="bob") == 11
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 11
    answer, chunk = rows[0], rows[1]
    assert answer["annotator"] == "bob" and answer["unit"] == "answer"
    assert answer["text"] == 'Paris, "the City of Light",\nis the capital.'
    assert {name: answer[name] for name in ANSWER_LABELS} == dict.fromkeys(ANSWER_LABELS)  # null = to fill
    assert not set(CHUNK_LABELS) & set(answer)
    assert (chunk["unit"], chunk["rank"], chunk["doc_id"]) == ("chunk", 1, "fr-1")
    assert {name: chunk[name] for name in CHUNK_LABELS} == dict.fromkeys(CHUNK_LABELS)
    assert not set(ANSWER_LABELS) & set(chunk)
    assert "n/a" not in path.read_text(encoding="utf-8")


def test_unknown_label_is_refused(tmp_path: Path, records: list[Record]) -> None:
    path = tmp_path / "t.csv"
    with pytest.raises(InputError, match=r"unknown labels \['helpfull'\]"):
        write_template(records, path, ("helpful", "helpfull"))
    assert not path.exists()


# ---------------------------------------------------------------- reading filled files


def test_votes_from_two_annotators(tmp_path: Path, records: list[Record]) -> None:
    labels = ("topically_relevant", "helpful")
    a = filled_csv(
        tmp_path,
        records,
        "a.csv",
        labels,
        {("r1", 2): {"topically_relevant": "1"}, ("r2", 0): {"helpful": "1"}},
        annotator="ann",
    )
    b = filled_csv(tmp_path, records, "b.csv", labels, {("r2", 0): {"helpful": "1"}}, annotator="ben")
    read = read_annotations([a, b], records)
    assert read.errors == []
    assert read.annotators == {"ann": str(a), "ben": str(b)}
    assert len(read.votes) == 11
    assert read.votes[("r1", "", 2)] == {"topically_relevant": {"ann": 1, "ben": 0}}
    assert read.votes[("r2", "", 0)] == {"helpful": {"ann": 1, "ben": 1}}
    assert read.votes[unit_key(records[2], 3)] == {"topically_relevant": {"ann": 0, "ben": 0}}


def test_empty_annotator_cell_names_the_annotator_after_the_file(tmp_path: Path, records: list[Record]) -> None:
    path = filled_csv(tmp_path, records, "carol.csv", ("helpful",))
    read = read_annotations([path], records)
    assert read.errors == []
    assert read.annotators == {"carol": str(path)}
    assert read.votes[("r1", "", 0)] == {"helpful": {"carol": 0}}


def test_tsv_round_trip(tmp_path: Path, records: list[Record]) -> None:
    template = tmp_path / "t.tsv"
    write_template(records, template, ("misleading",), annotator="dan")
    header, rows = read_csv(template, delimiter="\t")
    assert header == TEXT_COLUMNS + ["misleading"]
    rows = fill(rows, {("r3", 2): {"misleading": "1"}})
    path = write_csv(tmp_path / "dan.tsv", header, rows, delimiter="\t")
    read = read_annotations([path], records)
    assert read.errors == []
    assert read.votes[("r3", "", 2)] == {"misleading": {"dan": 1}}
    assert sum(v["misleading"]["dan"] for v in read.votes.values()) == 1


def test_jsonl_filled_file_with_ints_and_booleans(tmp_path: Path, records: list[Record]) -> None:
    template = tmp_path / "t.jsonl"
    write_template(records, template, ("topically_relevant", "helpful"))
    rows = [json.loads(line) for line in template.read_text(encoding="utf-8").splitlines()]
    for i, row in enumerate(rows):
        name = "helpful" if row["unit"] == "answer" else "topically_relevant"
        row[name] = [True, 0, False, 1][i % 4]  # booleans and ints alike
    path = tmp_path / "erin.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    read = read_annotations([path], records)
    assert read.errors == []
    assert read.annotators == {"erin": str(path)}
    got = [read.votes[(rid, "", rank)]["helpful" if rank == 0 else "topically_relevant"]["erin"] for rid, rank in UNITS]
    assert got == [1, 0, 0, 1] * 2 + [1, 0, 0]
    assert all(type(v) is int for unit in read.votes.values() for by in unit.values() for v in by.values())


def test_jsonl_problems_are_located(tmp_path: Path, records: list[Record]) -> None:
    template = tmp_path / "t.jsonl"
    write_template(records, template, ("helpful",))
    rows = [json.loads(line) for line in template.read_text(encoding="utf-8").splitlines()]
    rows[0]["helpful"] = 1
    rows[1]["helpful"] = 2  # line 2: not 0/1
    # line 3: r3's helpful left null
    lines = [json.dumps(row) for row in rows] + ["{broken"]
    path = tmp_path / "fay.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    read = read_annotations([path], records)
    assert [(e.path, e.line, e.field, e.reason) for e in read.errors] == [
        (str(path), 2, "helpful", "expected 0 or 1, found 2"),
        (str(path), 3, "helpful", "expected 0 or 1, found an empty cell"),
        (str(path), 4, None, "not valid JSON: Expecting property name enclosed in double quotes"),
    ]
    assert read.votes == {("r1", "", 0): {"helpful": {"fay": 1}}}


def test_every_problem_is_collected_with_path_line_and_field(tmp_path: Path, records: list[Record]) -> None:
    path = filled_csv(
        tmp_path,
        records,
        "gus.csv",
        ALL,
        {
            ("r1", 2): {"doc_id": "fr2"},  # line 6: typo in the chunk id
            ("r2", 0): {"helpful": "2"},  # line 8: not 0/1
            ("r3", 1): {"misleading": ""},  # line 12: left empty
        },
    )
    header, rows = read_csv(path)
    write_csv(path, header, rows[:-1])  # r3's chunk at rank 3 left out
    read = read_annotations([path], records)
    # Lines are the file's: r1's answer spans lines 2-3 and its titled chunk 4-5 (quoted newlines).
    assert [(e.path, e.line, e.field, e.reason) for e in read.errors] == [
        (str(path), 6, "doc_id", "chunk id 'fr2' does not match the chunk at rank 2 of record 'r1' ('fr-2')"),
        (str(path), 8, "helpful", "expected 0 or 1, found '2'"),
        (str(path), 12, "misleading", "expected 0 or 1, found an empty cell"),
        (
            str(path),
            None,
            None,
            ("no row for record 'r3' chunk at rank 3 by annotator 'gus': every template row needs a row"),
        ),
    ]
    assert str(read.errors[0]) == (
        f"{path}:6 field 'doc_id': chunk id 'fr2' does not match the chunk at rank 2 of record 'r1' ('fr-2')"
    )
    # a row with a problem gives no vote, and counts as present (no "no row" error of its own)
    assert ("r1", "", 2) not in read.votes and ("r2", "", 0) not in read.votes
    assert ("r3", "", 1) not in read.votes and ("r3", "", 3) not in read.votes
    assert len(read.votes) == 11 - 4
    assert read.votes[("r1", "", 1)] == {name: {"gus": 0} for name in CHUNK_LABELS}


def test_missing_file(tmp_path: Path, records: list[Record]) -> None:
    path = tmp_path / "nope.csv"
    read = read_annotations([path], records)
    assert len(read.errors) == 1
    assert read.errors[0].path == str(path) and read.errors[0].reason.startswith("cannot open the file")


def test_empty_csv(tmp_path: Path, records: list[Record]) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("", encoding="utf-8")
    read = read_annotations([path], records)
    assert [(e.path, e.line, e.reason) for e in read.errors] == [
        (str(path), None, "the file holds no rows: fill in the template and save it")
    ]


# ---------------------------------------------------------------- merge


def assert_agreement(actual: dict[str, Any], expected: dict[str, Any]) -> None:
    """``LabelAgreement.to_dict()`` against hand-computed values (floats to 1e-9)."""
    assert set(actual) == set(expected)
    for key, value in expected.items():
        if isinstance(value, float):
            assert actual[key] == pytest.approx(value, abs=1e-9), key
        else:
            assert actual[key] == value, key


def test_merge_takes_the_majority_and_keeps_the_votes(records: list[Record]) -> None:
    votes = {
        ("r1", "", 0): {"helpful": {"a": 1, "b": 1, "c": 0}, "support_present": {"a": 0, "b": 0, "c": 1}},
        ("r1", "", 2): {"topically_relevant": {"a": 0, "b": 1, "c": 1}},
        ("r2", "", 1): {"topically_relevant": {"a": 1, "b": 0, "c": 0}},
    }
    merged = list(merge_votes(records, votes))
    r1, r2, r3 = merged
    # unsafe_content and idk_eval, which nobody voted on, are kept
    assert dict(r1.labels) == {"unsafe_content": 0, "idk_eval": 0, "helpful": 1, "support_present": 0}
    assert [dict(c.labels) for c in r1.contexts] == [{}, {"topically_relevant": 1}, {}]
    assert [dict(c.labels) for c in r2.contexts] == [{"misleading": 0, "topically_relevant": 0}, {}]
    assert r1.metadata["annotations"] == {
        "a": {"answer": {"helpful": 1, "support_present": 0}, "chunks": {"2": {"topically_relevant": 0}}},
        "b": {"answer": {"helpful": 1, "support_present": 0}, "chunks": {"2": {"topically_relevant": 1}}},
        "c": {"answer": {"helpful": 0, "support_present": 1}, "chunks": {"2": {"topically_relevant": 1}}},
    }
    assert list(r1.metadata["annotations"]) == ["a", "b", "c"]
    assert r1.metadata["label_ties"] == "undefined"
    assert r2.metadata["annotations"] == {
        "a": {"answer": {}, "chunks": {"1": {"topically_relevant": 1}}},
        "b": {"answer": {}, "chunks": {"1": {"topically_relevant": 0}}},
        "c": {"answer": {}, "chunks": {"1": {"topically_relevant": 0}}},
    }
    assert r3 is records[2]  # no vote: the record as it was
    # the merged record survives the native format
    assert record_from_dict(json.loads(json.dumps(record_to_dict(r1)))) == r1


@pytest.mark.parametrize(("ties", "expected"), [("undefined", None), ("positive", 1), ("negative", 0)])
def test_merge_tie_rules(records: list[Record], ties: str, expected: int | None) -> None:
    votes = {
        ("r2", "", 0): {"helpful": {"a": 1, "b": 0}},
        ("r2", "", 2): {"misleading": {"a": 0, "b": 1}},
        ("r3", "", 0): {"helpful": {"a": 1, "b": 1}},
    }
    _, r2, r3 = merge_votes(records, votes, ties=ties)
    assert r2.labels == {"helpful": expected}
    assert r2.contexts[1].labels == {"misleading": expected}
    assert r3.labels == {"helpful": 1}
    assert r2.metadata["label_ties"] == ties


def test_merge_overrides_an_existing_label_that_was_voted_on() -> None:
    record = record_from_dict({"id": "x", "question": "q", "answer": "a", "labels": {"helpful": 0, "note": "kept"}})
    (merged,) = merge_votes([record], {("x", "", 0): {"helpful": {"a": 1, "b": 1}}})
    assert merged.labels == {"helpful": 1, "note": "kept"}


def test_merge_rejects_an_unknown_tie_rule(records: list[Record]) -> None:
    with pytest.raises(ValueError, match="ties must be one of"):
        list(merge_votes(records, {("r1", "", 0): {"helpful": {"a": 1, "b": 0}}}, ties="coin"))


# ---------------------------------------------------------------- agreement


def test_agreement_two_annotators_cohen() -> None:
    votes = {
        ("u1", "", 0): {"helpful": {"a": 1, "b": 1}},
        ("u2", "", 0): {"helpful": {"a": 1, "b": 0}},
        ("u3", "", 0): {"helpful": {"a": 0, "b": 0}},
        ("u4", "", 0): {"helpful": {"a": 0, "b": 0}},
    }
    (agreement,) = agreement_by_label(votes)
    # a = 1,1,0,0 and b = 1,0,0,0 over 4 units, 8 ratings, 3 of them 1s.
    # raw agreement p_o = 3/4; prevalence 3/8.
    # Cohen: p = 1/2, q = 1/4, p_e = 1/2·1/4 + 1/2·3/4 = 1/2, κ = (3/4 − 1/2)/(1 − 1/2) = 1/2.
    # Krippendorff: n = 8, n₀ = 5, n₁ = 3, D_e = 2·5·3/(8·7) = 15/28;
    # D_o = (1/8)·2·1·1/1 = 1/4 (unit u2 only);
    # α = 1 − (1/4)/(15/28) = 1 − 7/15 = 8/15. u2 is a 1-1 tie.
    assert_agreement(
        agreement.to_dict(),
        {
            "label": "helpful",
            "annotators": ["a", "b"],
            "n_units": 4,
            "n_shared": 4,
            "n_ratings": 8,
            "raw_agreement": 0.75,
            "prevalence": 0.375,
            "cohen_kappa": 0.5,
            "fleiss_kappa": None,
            "krippendorff_alpha": 8 / 15,
            "n_ties": 1,
        },
    )


def test_agreement_three_annotators_fleiss_in_seed_label_order() -> None:
    topical = [(1, 1, 1), (1, 0, 1), (0, 0, 0), (1, 1, 0), (0, 0, 0), (1, 1, 1), (0, 1, 0), (0, 0, 1)]
    votes: dict[Any, Any] = {
        (f"u{i}", "", 1): {"topically_relevant": dict(zip("abc", v, strict=True))} for i, v in enumerate(topical)
    }
    votes[("u0", "", 0)] = {"helpful": {"a": 1, "b": 1, "c": 1}, "support_present": {"a": 1, "b": 1, "c": 0}}
    result = agreement_by_label(votes)
    assert [a.label for a in result] == ["topically_relevant", "support_present", "helpful"]
    topical_agreement = result[0]
    # 8 units × 3 ratings, k ones per unit = 3,2,0,2,0,3,1,1 → 12 ones of 24: prevalence 1/2.
    # Per unit, agreeing pairs / 3: k ∈ {0, 3} → 1, k ∈ {1, 2} → 1/3;
    # mean = (4 + 4/3)/8 = 2/3 (= raw agreement).
    # Fleiss: P̄ = 2/3, P̄_e = 1/2² + 1/2² = 1/2, κ = (2/3 − 1/2)/(1/2) = 1/3.
    # Krippendorff: D_e = 2·12·12/(24·23) = 12/23; D_o = (1/24)·Σ 2·n_u0·n_u1/2 = (1/24)·4·2 = 1/3;
    # α = 1 − (1/3)/(12/23) = 13/36.
    assert_agreement(
        topical_agreement.to_dict(),
        {
            "label": "topically_relevant",
            "annotators": ["a", "b", "c"],
            "n_units": 8,
            "n_shared": 8,
            "n_ratings": 24,
            "raw_agreement": 2 / 3,
            "prevalence": 0.5,
            "cohen_kappa": None,
            "fleiss_kappa": 1 / 3,
            "krippendorff_alpha": 13 / 36,
            "n_ties": 0,
        },
    )
    helpful = result[2]
    assert helpful.raw_agreement == 1.0 and helpful.prevalence == 1.0
    assert helpful.fleiss_kappa is not None and math.isnan(helpful.fleiss_kappa)  # one class only
    assert math.isnan(helpful.krippendorff_alpha)
    assert helpful.to_dict()["fleiss_kappa"] is None and helpful.to_dict()["krippendorff_alpha"] is None


def test_votes_read_from_files_feed_merge_and_agreement(tmp_path: Path, records: list[Record]) -> None:
    labels = ("topically_relevant",)
    a = filled_csv(tmp_path, records, "a.csv", labels, {("r1", 1): {"topically_relevant": "1"}})
    b = filled_csv(
        tmp_path,
        records,
        "b.csv",
        labels,
        {("r1", 1): {"topically_relevant": "1"}, ("r3", 2): {"topically_relevant": "1"}},
    )
    read = read_annotations([a, b], records)
    assert read.errors == []
    merged = list(merge_votes(records, read.votes, ties="negative"))
    out = tmp_path / "merged.jsonl"
    out.write_text("".join(json.dumps(record_to_dict(r)) + "\n" for r in merged), encoding="utf-8")
    again = list(read_records(out))
    assert [[c.labels.get("topically_relevant") for c in r.contexts] for r in again] == [
        [1, 0, 0],
        [0, 0],
        [0, 0, 0],
    ]  # r3 rank 2: a tie (a 0, b 1) → 0 under ties=negative
    (agreement,) = agreement_by_label(read.votes)
    assert (agreement.n_units, agreement.n_ties, agreement.raw_agreement) == (8, 1, 7 / 8)
