"""``ragmeter labels template`` and ``ragmeter labels merge``, called in-process (``ragmeter.cli.main``).

Every expected value is worked out by hand from the records and the votes written in the test.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from label_records import ALL, MODEL_RECORDS, RECORDS, TEXT_COLUMNS, UNITS

from ragmeter import read_records
from ragmeter.cli import main
from ragmeter.core.records import ANSWER_LABELS, CHUNK_LABELS

Values = dict[tuple[str, int], dict[str, Any]]
Capsys = pytest.CaptureFixture[str]


# ---------------------------------------------------------------- helpers


def run_cli(capsys: Capsys, *argv: Any) -> tuple[int, str, str]:
    code = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def write_records(tmp_path: Path, records: list[dict[str, Any]] = RECORDS, name: str = "records.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def write_csv(path: Path, header: Sequence[str], rows: Sequence[dict[str, Any]]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(header))
        writer.writeheader()
        writer.writerows(rows)
    return path


def make_template(capsys: Capsys, records: Path, output: Path, *options: str) -> Path:
    code, _, err = run_cli(capsys, "labels", "template", records, "-o", output, *options)
    assert code == 0, err
    return output


def fill(template: Path, output: Path, values: Values, *, annotator: str | None = None, default: str = "0") -> Path:
    """The template with every empty (applicable) cell set to ``default``, then ``values`` by (record, rank)
    (rank 0: the answer; the rank column of a model-id template is read as is)."""
    header, rows = read_csv(template)
    for row in rows:
        for name in ALL:
            if row.get(name) == "":
                row[name] = default
        row.update(values.get((row["record_id"], 0 if row["unit"] == "answer" else int(row["rank"])), {}))
        if annotator is not None:
            row["annotator"] = annotator
    return write_csv(output, header, rows)


def votes_of(table: Mapping[tuple[str, int], tuple[int, ...]], label: str, annotator: int) -> Values:
    return {unit: {label: str(votes[annotator])} for unit, votes in table.items()}


def merge_values(*parts: Values) -> Values:
    merged: Values = {}
    for part in parts:
        for unit, cells in part.items():
            merged.setdefault(unit, {}).update(cells)
    return merged


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# ---------------------------------------------------------------- template


def test_template_csv_with_every_label(capsys: Capsys, tmp_path: Path) -> None:
    records = write_records(tmp_path)
    output = tmp_path / "t.csv"
    code, out, err = run_cli(capsys, "labels", "template", records, "-o", output)
    assert code == 0, err
    assert out.strip() == (f"{output}: 11 rows to label ({', '.join(ALL)}); fill each label with 0 or 1")
    assert output.read_text(encoding="utf-8").splitlines()[0] == ",".join(TEXT_COLUMNS + ALL)
    header, rows = read_csv(output)
    assert header == TEXT_COLUMNS + ALL
    assert [(r["record_id"], 0 if r["unit"] == "answer" else int(r["rank"])) for r in rows] == UNITS
    assert [r["doc_id"] for r in rows] == ["", "fr-1", "fr-2", "de-1", "", "ham-1", "mac-1", "", "ev-1", "k2-1", "ev-2"]
    for row in rows:
        applicable = ANSWER_LABELS if row["unit"] == "answer" else CHUNK_LABELS
        expected = {name: "" if name in applicable else "n/a" for name in ALL}
        assert {name: row[name] for name in ALL} == expected
    assert {r["annotator"] for r in rows} == {""} and {r["model_id"] for r in rows} == {""}
    # commas, quotes and newlines survive the CSV
    assert rows[0]["text"] == 'Paris, "the City of Light",\nis the capital.'
    assert rows[0]["question"] == "What is the capital of France?"
    assert rows[1]["text"] == "France\nParis is the capital of France."
    assert rows[2]["text"] == 'Lyon, a city, is "big".'
    assert rows[7]["text"] == "About 8,849 m."


@pytest.mark.parametrize(
    ("spec", "columns", "units"),
    [
        ("chunk", list(CHUNK_LABELS), ["chunk"] * 8),
        ("answer", list(ANSWER_LABELS), ["answer"] * 3),
        ("misleading,topically_relevant", ["misleading", "topically_relevant"], ["chunk"] * 8),
        (
            "helpful, topically_relevant",
            ["helpful", "topically_relevant"],
            [u for r in (3, 2, 3) for u in ["answer"] + ["chunk"] * r],
        ),
    ],
)
def test_template_labels_option(
    capsys: Capsys, tmp_path: Path, spec: str, columns: list[str], units: list[str]
) -> None:
    output = tmp_path / "t.csv"
    records = write_records(tmp_path)
    code, out, err = run_cli(capsys, "labels", "template", records, "-o", output, "--labels", spec)
    assert code == 0, err
    assert f"{len(units)} rows to label ({', '.join(columns)})" in out
    header, rows = read_csv(output)
    assert header == TEXT_COLUMNS + columns
    assert [r["unit"] for r in rows] == units


def test_template_annotator_option(capsys: Capsys, tmp_path: Path) -> None:
    output = make_template(
        capsys, write_records(tmp_path), tmp_path / "t.csv", "--annotator", "alice", "--labels", "chunk"
    )
    _, rows = read_csv(output)
    assert len(rows) == 8 and {r["annotator"] for r in rows} == {"alice"}


def test_template_jsonl(capsys: Capsys, tmp_path: Path) -> None:
    output = make_template(
        capsys,
        write_records(tmp_path),
        tmp_path / "t.jsonl",
        "--labels",
        "topically_relevant,helpful",
        "--annotator",
        "bob",
    )
    rows = read_jsonl(output)
    assert len(rows) == 11
    assert rows[0] == {
        "annotator": "bob",
        "record_id": "r1",
        "model_id": "",
        "unit": "answer",
        "rank": "",
        "doc_id": "",
        "question": "What is the capital of France?",
        "text": 'Paris, "the City of Light",\nis the capital.',
        "helpful": None,
    }
    assert rows[1] == {
        "annotator": "bob",
        "record_id": "r1",
        "model_id": "",
        "unit": "chunk",
        "rank": 1,
        "doc_id": "fr-1",
        "question": "What is the capital of France?",
        "text": "France\nParis is the capital of France.",
        "topically_relevant": None,
    }


def test_template_model_id_column(capsys: Capsys, tmp_path: Path) -> None:
    output = make_template(capsys, write_records(tmp_path, MODEL_RECORDS), tmp_path / "t.csv")
    _, rows = read_csv(output)
    assert [(r["record_id"], r["model_id"], r["unit"], r["rank"]) for r in rows] == [
        ("q1", "m-a", "answer", ""),
        ("q1", "m-a", "chunk", "1"),
        ("q1", "m-a", "chunk", "2"),
        ("q1", "m-b", "answer", ""),
        ("q1", "m-b", "chunk", "1"),
        ("q1", "m-b", "chunk", "2"),
    ]
    assert rows[3]["text"] == "Rome (m-b)."


def test_template_sample_draws_records_at_random_in_the_files_order(capsys: Capsys, tmp_path: Path) -> None:
    records = [{**RECORDS[0], "id": f"s{i:02d}"} for i in range(30)]
    path = write_records(tmp_path, records)
    drawn = []
    for seed in (1, 1, 2):
        output = make_template(
            capsys, path, tmp_path / f"t{len(drawn)}.csv", "--labels", "helpful", "--sample", "7", "--seed", str(seed)
        )
        drawn.append([r["record_id"] for r in read_csv(output)[1]])
    assert len(drawn[0]) == 7 and drawn[0] == sorted(drawn[0])  # seven records, in the file's order
    assert drawn[0] == drawn[1] != drawn[2]  # the seed decides the draw
    everything = make_template(capsys, path, tmp_path / "all.csv", "--labels", "helpful", "--sample", "99")
    assert len(read_csv(everything)[1]) == 30
    assert run_cli(capsys, "labels", "template", str(path), "-o", str(tmp_path / "none.csv"), "--sample", "0")[0] == 2


@pytest.mark.parametrize("spec", ["helpfull", "chunk,helpful", ","])
def test_template_unknown_label(capsys: Capsys, tmp_path: Path, spec: str) -> None:
    output = tmp_path / "t.csv"
    records = write_records(tmp_path)
    code, out, err = run_cli(capsys, "labels", "template", records, "-o", output, "--labels", spec)
    assert code == 2
    assert out == ""
    unknown = {"helpfull": "helpfull", "chunk,helpful": "chunk", ",": "none given"}[spec]
    assert error_lines(err) == [
        (f"error: --labels takes all, chunk, answer or label names ({', '.join(ALL)}); unknown: {unknown}")
    ]
    assert "Traceback" not in err
    assert not output.exists()


# ---------------------------------------------------------------- merge: three annotators

# Votes of ann1, ann2, ann3 on topically_relevant, chunk by chunk.
TOPICAL = {
    ("r1", 1): (1, 1, 1),
    ("r1", 2): (1, 0, 1),
    ("r1", 3): (0, 0, 0),
    ("r2", 1): (1, 1, 0),
    ("r2", 2): (0, 0, 0),
    ("r3", 1): (1, 1, 1),
    ("r3", 2): (0, 1, 0),
    ("r3", 3): (0, 0, 1),
}
# evidence_sufficient: everyone says 1 for the first chunk of each record and 0 elsewhere (the default).
SUFFICIENT = {("r1", 1): (1, 1, 1), ("r2", 1): (1, 1, 1), ("r3", 1): (1, 1, 1)}
HELPFUL = {("r1", 0): (1, 1, 0), ("r2", 0): (0, 0, 1), ("r3", 0): (1, 1, 1)}
SUPPORT = {("r1", 0): (1, 1, 1), ("r2", 0): (1, 1, 1), ("r3", 0): (1, 1, 1)}
MERGE_LABELS = "topically_relevant,evidence_sufficient,helpful,support_present"


def three_annotators(capsys: Capsys, tmp_path: Path, records: Path) -> list[Path]:
    template = make_template(capsys, records, tmp_path / "template.csv", "--labels", MERGE_LABELS)
    return [
        fill(
            template,
            tmp_path / f"file{i + 1}.csv",
            merge_values(
                votes_of(TOPICAL, "topically_relevant", i),
                votes_of(SUFFICIENT, "evidence_sufficient", i),
                votes_of(HELPFUL, "helpful", i),
                votes_of(SUPPORT, "support_present", i),
            ),
            annotator=f"ann{i + 1}",
        )
        for i in range(3)
    ]


def test_merge_three_annotators(capsys: Capsys, tmp_path: Path) -> None:
    records = write_records(tmp_path)
    filled = three_annotators(capsys, tmp_path, records)
    output = tmp_path / "merged.jsonl"
    code, out, err = run_cli(capsys, "labels", "merge", records, *filled, "-o", output)
    assert code == 0, err
    assert error_lines(err) == []

    merged = list(read_records(output))
    assert [r.id for r in merged] == ["r1", "r2", "r3"]
    chunk_labels = [[dict(c.labels) for c in r.contexts] for r in merged]
    assert chunk_labels == [
        [
            {"topically_relevant": 1, "evidence_sufficient": 1},
            {"topically_relevant": 1, "evidence_sufficient": 0},
            {"topically_relevant": 0, "evidence_sufficient": 0},
        ],
        [
            {"misleading": 0, "topically_relevant": 1, "evidence_sufficient": 1},  # misleading: kept
            {"topically_relevant": 0, "evidence_sufficient": 0},
        ],
        [
            {"topically_relevant": 1, "evidence_sufficient": 1},
            {"topically_relevant": 0, "evidence_sufficient": 0},
            {"topically_relevant": 0, "evidence_sufficient": 0},
        ],
    ]
    assert [dict(r.labels) for r in merged] == [
        {"unsafe_content": 0, "idk_eval": 0, "helpful": 1, "support_present": 1},  # unvoted labels: kept
        {"helpful": 0, "support_present": 1},
        {"helpful": 1, "support_present": 1},  # 0 before: the vote wins
    ]
    annotations = merged[0].metadata["annotations"]
    assert list(annotations) == ["ann1", "ann2", "ann3"]
    assert annotations["ann2"] == {
        "answer": {"helpful": 1, "support_present": 1},
        "chunks": {
            "1": {"topically_relevant": 1, "evidence_sufficient": 1},
            "2": {"topically_relevant": 0, "evidence_sufficient": 0},
            "3": {"topically_relevant": 0, "evidence_sufficient": 0},
        },
    }
    assert merged[2].metadata["annotations"]["ann3"]["chunks"]["3"] == {
        "topically_relevant": 1,
        "evidence_sufficient": 0,
    }
    assert merged[1].metadata["label_ties"] == "undefined"

    report_path = tmp_path / "merged.jsonl.agreement.json"
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["annotators"] == ["ann1", "ann2", "ann3"]
    assert (report["ties"], report["problems_skipped"]) == ("undefined", 0)
    assert report["output"] == str(output) and report["filled"] == [str(p) for p in filled]
    by_label = {a["label"]: a for a in report["agreement"]}
    assert [a["label"] for a in report["agreement"]] == [
        "topically_relevant",
        "evidence_sufficient",
        "support_present",
        "helpful",
    ]
    # topically_relevant: 8 chunks × 3 votes; ones per chunk k = 3,2,0,2,0,3,1,1 → 12 of 24: prevalence 1/2.
    # Agreeing pairs per chunk / 3 pairs: k ∈ {0, 3} → 1, k ∈ {1, 2} → 1/3; raw = (4·1 + 4·1/3)/8 = 2/3.
    # Fleiss: P̄ = 2/3, P̄_e = (1/2)² + (1/2)² = 1/2, κ = (2/3 − 1/2)/(1 − 1/2) = 1/3.
    # Krippendorff: n = 24, n₀ = n₁ = 12, D_e = 2·12·12/(24·23) = 12/23;
    # D_o = (1/24)·Σ_u 2·n_u0·n_u1/(3 − 1) = (1/24)·(4 chunks × 2·1) = 1/3; α = 1 − (1/3)/(12/23) = 13/36.
    topical = by_label["topically_relevant"]
    assert (topical["n_units"], topical["n_shared"], topical["n_ratings"], topical["n_ties"]) == (8, 8, 24, 0)
    assert topical["raw_agreement"] == pytest.approx(2 / 3)
    assert topical["prevalence"] == pytest.approx(1 / 2)
    assert topical["cohen_kappa"] is None
    assert topical["fleiss_kappa"] == pytest.approx(1 / 3)
    assert topical["krippendorff_alpha"] == pytest.approx(13 / 36)
    # evidence_sufficient: unanimous, 3 chunks × 3 ones = 9 of 24 ratings → raw 1, prevalence 3/8, κ = α = 1
    sufficient = by_label["evidence_sufficient"]
    assert sufficient["raw_agreement"] == sufficient["fleiss_kappa"] == sufficient["krippendorff_alpha"] == 1
    assert sufficient["prevalence"] == pytest.approx(3 / 8)
    # support_present: every vote is 1 → chance agreement is perfect: κ and α undefined (null)
    support = by_label["support_present"]
    assert (support["prevalence"], support["fleiss_kappa"], support["krippendorff_alpha"]) == (1, None, None)
    helpful = by_label["helpful"]  # ones per answer 2, 1, 3: raw = (1/3 + 1/3 + 1)/3 = 5/9
    assert helpful["raw_agreement"] == pytest.approx(5 / 9) and helpful["prevalence"] == pytest.approx(6 / 9)

    assert out.splitlines()[0] == (
        f"{output}: 3 records, labels from 3 annotator(s) (ann1, ann2, ann3); ties → undefined"
    )
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:] if line.strip()}
    for label in ("topically_relevant", "evidence_sufficient", "support_present", "helpful"):
        assert label in rows, out
    # columns: annotators, units, shared, agree, prevalence, kappa, alpha, ties
    assert rows["topically_relevant"][1:] == ["3", "8", "8", "0.667", "0.500", "0.333", "Fleiss", "0.361", "0"]
    assert rows["support_present"][1:] == ["3", "3", "3", "1.000", "1.000", "–", "Fleiss", "–", "0"]
    assert f"Agreement report: {report_path}" in err
    assert not (tmp_path / "merged.jsonl.partial").exists()


@pytest.mark.parametrize(("ties", "expected"), [("undefined", None), ("positive", 1), ("negative", 0)])
def test_merge_tie_rules(capsys: Capsys, tmp_path: Path, ties: str, expected: int | None) -> None:
    records = write_records(tmp_path)
    template = make_template(capsys, records, tmp_path / "template.csv", "--labels", "helpful,misleading")
    first = fill(
        template, tmp_path / "a.csv", {("r2", 0): {"helpful": "1"}, ("r3", 2): {"misleading": "1"}}, annotator="a"
    )
    second = fill(template, tmp_path / "b.csv", {("r3", 0): {"helpful": "1"}}, annotator="b")
    output = tmp_path / "merged.jsonl"
    code, out, err = run_cli(
        capsys, "labels", "merge", records, first, second, "-o", output, "--ties", ties, "--format", "json"
    )
    assert code == 0, err
    merged = {r.id: r for r in read_records(output)}
    assert merged["r1"].labels["helpful"] == 0  # both 0: no tie
    assert merged["r2"].labels["helpful"] == expected  # a 1, b 0
    assert merged["r3"].labels["helpful"] == expected  # a 0, b 1
    assert merged["r3"].contexts[1].labels["misleading"] == expected
    assert merged["r3"].contexts[0].labels["misleading"] == 0
    assert merged["r2"].metadata["label_ties"] == ties
    report = json.loads(out)
    assert report == json.loads((tmp_path / "merged.jsonl.agreement.json").read_text(encoding="utf-8"))
    assert report["ties"] == ties
    helpful = next(a for a in report["agreement"] if a["label"] == "helpful")
    # a = 0,1,0 and b = 0,0,1: p_o = 1/3, p = q = 1/3, p_e = 1/9 + 4/9 = 5/9, κ = (1/3 − 5/9)/(4/9) = −1/2
    assert (helpful["n_units"], helpful["n_ties"]) == (3, 2)
    assert helpful["raw_agreement"] == pytest.approx(1 / 3)
    assert helpful["cohen_kappa"] == pytest.approx(-1 / 2)
    assert helpful["fleiss_kappa"] is None


# ---------------------------------------------------------------- the acceptance check


def acceptance_file(capsys: Capsys, tmp_path: Path, records: Path) -> Path:
    """A filled CSV (annotator 'ann') with a chunk-id typo (line 6), a 2 (line 8) and r3's rank-3 row
    left out."""
    template = make_template(capsys, records, tmp_path / "template.csv")
    path = fill(
        template,
        tmp_path / "filled.csv",
        {
            ("r1", 1): {"topically_relevant": "1"},
            ("r1", 2): {"doc_id": "fr2", "topically_relevant": "1"},
            ("r2", 0): {"helpful": "2", "support_present": "1"},
            ("r2", 1): {"topically_relevant": "1"},
        },
        annotator="ann",
    )
    header, rows = read_csv(path)
    assert (rows[2]["doc_id"], rows[4]["helpful"], rows[-1]["doc_id"]) == ("fr2", "2", "ev-2")
    return write_csv(path, header, rows[:-1])


def assert_acceptance_errors(err: str, path: Path) -> None:
    assert error_lines(err) == [
        (f"error: {path}:6 field 'doc_id': chunk id 'fr2' does not match the chunk at rank 2 of record 'r1' ('fr-2')"),
        f"error: {path}:8 field 'helpful': expected 0 or 1, found '2'",
        (f"error: {path}: no row for record 'r3' chunk at rank 3 by annotator 'ann': every template row needs a row"),
    ]
    assert "Traceback" not in err


def test_acceptance_three_problems_nothing_written(capsys: Capsys, tmp_path: Path) -> None:
    records = write_records(tmp_path)
    path = acceptance_file(capsys, tmp_path, records)
    output = tmp_path / "merged.jsonl"
    code, out, err = run_cli(capsys, "labels", "merge", records, path, "-o", output)
    assert code == 2
    assert out == ""
    assert_acceptance_errors(err, path)
    assert (
        "3 problem(s) in the annotation files: nothing merged. Fix them, or pass --skip-invalid to merge the valid rows"
    ) in err
    assert not output.exists()
    assert not (tmp_path / "merged.jsonl.agreement.json").exists()
    assert not (tmp_path / "merged.jsonl.partial").exists()


def test_acceptance_with_skip_invalid_merges_the_valid_rows(capsys: Capsys, tmp_path: Path) -> None:
    records = write_records(tmp_path)
    path = acceptance_file(capsys, tmp_path, records)
    output = tmp_path / "merged.jsonl"
    code, _, err = run_cli(capsys, "labels", "merge", records, path, "-o", output, "--skip-invalid")
    assert code == 0, err
    assert_acceptance_errors(err, path)
    merged = {r.id: r for r in read_records(output)}
    r1, r2, r3 = merged["r1"], merged["r2"], merged["r3"]
    assert r1.contexts[0].labels == {"topically_relevant": 1, "evidence_sufficient": 0, "misleading": 0}
    assert r1.contexts[1].labels == {}  # the typo'd row gives no vote
    assert r3.contexts[2].labels == {}  # the row left out
    assert r2.contexts[0].labels == {"misleading": 0, "topically_relevant": 1, "evidence_sufficient": 0}
    assert dict(r2.labels) == {}  # the row with the 2 gives no vote at all
    assert dict(r3.labels) == dict.fromkeys(ANSWER_LABELS, 0)  # its 0 votes replace helpful: 0
    assert dict(r1.labels) == {"unsafe_content": 0, "idk_eval": 0, **dict.fromkeys(ANSWER_LABELS, 0)}
    ann = r1.metadata["annotations"]["ann"]
    assert sorted(ann["chunks"]) == ["1", "3"]
    assert r2.metadata["annotations"]["ann"]["answer"] == {}
    assert sorted(r3.metadata["annotations"]["ann"]["chunks"]) == ["1", "2"]
    report = json.loads((tmp_path / "merged.jsonl.agreement.json").read_text(encoding="utf-8"))
    assert report["problems_skipped"] == 3
    topical = next(a for a in report["agreement"] if a["label"] == "topically_relevant")
    assert (topical["n_units"], topical["n_ratings"], topical["n_shared"]) == (6, 6, 0)  # 8 chunks − 2


# ---------------------------------------------------------------- more validation

Rows = list[dict[str, str]]


def _append(base: str, **changes: str) -> Callable[[list[str], Rows], tuple[list[str], Rows]]:
    """Append a copy of the row of ``base`` ("record:rank", rank 0 the answer) with ``changes``: line 15."""

    def mutate(header: list[str], rows: Rows) -> tuple[list[str], Rows]:
        record_id, rank = base.split(":")
        row = next(
            r for r in rows if r["record_id"] == record_id and (r["rank"] if r["unit"] == "chunk" else "0") == rank
        )
        return header, rows + [{**row, **changes}]

    return mutate


def _set(line_index: int, **changes: str) -> Callable[[list[str], Rows], tuple[list[str], Rows]]:
    def mutate(header: list[str], rows: Rows) -> tuple[list[str], Rows]:
        rows[line_index].update(changes)
        return header, rows

    return mutate


def _rename(old: str, new: str) -> Callable[[list[str], Rows], tuple[list[str], Rows]]:
    def mutate(header: list[str], rows: Rows) -> tuple[list[str], Rows]:
        return (
            [new if name == old else name for name in header],
            [{(new if k == old else k): v for k, v in row.items()} for row in rows],
        )

    return mutate


def _drop(column: str) -> Callable[[list[str], Rows], tuple[list[str], Rows]]:
    def mutate(header: list[str], rows: Rows) -> tuple[list[str], Rows]:
        return [n for n in header if n != column], [{k: v for k, v in r.items() if k != column} for r in rows]

    return mutate


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(
            _append(base="r2:0", record_id="rr2"),
            "15 field 'record_id': unknown record id 'rr2': no such record in the records file; did you mean 'r2'?",
            id="unknown-id-close",
        ),
        pytest.param(
            _append(base="r2:0", record_id="zzz"),
            "15 field 'record_id': unknown record id 'zzz': no such record in the records file",
            id="unknown-id-far",
        ),
        pytest.param(
            _append(base="r2:2", rank="3"),
            "15 field 'rank': expected a chunk rank from 1 to 2 for record 'r2', found '3'",
            id="rank-high",
        ),
        pytest.param(
            _append(base="r2:2", rank="0"),
            "15 field 'rank': expected a chunk rank from 1 to 2 for record 'r2', found '0'",
            id="rank-zero",
        ),
        pytest.param(
            _append(base="r2:2", rank="x"),
            "15 field 'rank': expected a chunk rank from 1 to 2 for record 'r2', found 'x'",
            id="rank-text",
        ),
        pytest.param(
            _append(base="r2:2", unit="passage"),
            "15 field 'unit': expected 'answer' or 'chunk', found 'passage'",
            id="unit",
        ),
        pytest.param(
            _append(base="r1:3"),
            "15 field 'record_id': a second row for record 'r1' chunk at rank 3 by annotator 'ann'",
            id="duplicate",
        ),
        pytest.param(
            _set(4, topically_relevant="1"),
            r"re:8 field 'topically_relevant': topically_relevant does not apply to an? answer row; "
            r"leave it 'n/a'",
            id="not-applicable-on-answer",
        ),
        pytest.param(
            _set(5, helpful="0"),
            "9 field 'helpful': helpful does not apply to a chunk row; leave it 'n/a'",
            id="not-applicable-on-chunk",
        ),
        pytest.param(
            _set(9, topically_relevant=""),
            "13 field 'topically_relevant': expected 0 or 1, found an empty cell",
            id="empty-cell",
        ),
        pytest.param(_set(7, helpful="yes"), "11 field 'helpful': expected 0 or 1, found 'yes'", id="not-binary"),
        pytest.param(
            _rename("topically_relevant", "topicaly_relevant"),
            "1 field 'topicaly_relevant': unknown column 'topicaly_relevant'; did you mean 'topically_relevant'?",
            id="unknown-column-typo",
        ),
        pytest.param(
            _drop("unit"), "1 field 'unit': missing column 'unit': keep the template's columns", id="missing-column"
        ),
    ],
)
def test_one_problem_one_precise_message(
    capsys: Capsys, tmp_path: Path, mutate: Callable[[list[str], Rows], tuple[list[str], Rows]], expected: str
) -> None:
    records = write_records(tmp_path)
    template = make_template(capsys, records, tmp_path / "template.csv", "--labels", "topically_relevant,helpful")
    path = fill(template, tmp_path / "filled.csv", {}, annotator="ann")
    write_csv(path, *mutate(*read_csv(path)))
    output = tmp_path / "merged.jsonl"
    code, out, err = run_cli(capsys, "labels", "merge", records, path, "-o", output)
    assert code == 2
    assert out == ""
    errors = error_lines(err)
    assert len(errors) == 1, err
    if expected.startswith("re:"):
        assert re.fullmatch(re.escape(f"error: {path}:") + expected[3:], errors[0]), errors[0]
    else:
        assert errors[0] == f"error: {path}:{expected}"
    assert "1 problem(s) in the annotation files: nothing merged" in err
    assert not output.exists()


def test_unknown_column_without_a_close_label(capsys: Capsys, tmp_path: Path) -> None:
    records = write_records(tmp_path)
    template = make_template(capsys, records, tmp_path / "template.csv", "--labels", "helpful")
    header, rows = read_csv(fill(template, tmp_path / "filled.csv", {}))
    path = write_csv(tmp_path / "filled.csv", header + ["comment"], [{**r, "comment": "ok"} for r in rows])
    code, _, err = run_cli(capsys, "labels", "merge", records, path, "-o", tmp_path / "merged.jsonl")
    assert code == 2
    assert error_lines(err) == [
        (f"error: {path}:1 field 'comment': unknown column 'comment'; labels are {', '.join(ALL)}")
    ]


def test_model_id_tells_records_with_the_same_id_apart(capsys: Capsys, tmp_path: Path) -> None:
    records = write_records(tmp_path, MODEL_RECORDS)
    template = make_template(capsys, records, tmp_path / "template.csv", "--labels", "topically_relevant,helpful")
    rows = read_csv(template)[1]
    header = read_csv(template)[0]
    for row in rows:  # m-a: helpful 1, chunks 1, 0; m-b: helpful 0, chunks 0, 1
        column = "helpful" if row["unit"] == "answer" else "topically_relevant"
        position = 0 if row["unit"] == "answer" else int(row["rank"])
        row[column] = str(int((row["model_id"] == "m-a") == (position in (0, 1))))
    path = write_csv(tmp_path / "zoe.csv", header, rows)
    output = tmp_path / "merged.jsonl"
    code, _, err = run_cli(capsys, "labels", "merge", records, path, "-o", output)
    assert code == 0, err
    a, b = read_records(output)
    assert (a.model_id, dict(a.labels)) == ("m-a", {"helpful": 1})
    assert [c.labels["topically_relevant"] for c in a.contexts] == [1, 0]
    assert (b.model_id, dict(b.labels)) == ("m-b", {"helpful": 0})
    assert [c.labels["topically_relevant"] for c in b.contexts] == [0, 1]
    assert a.metadata["annotations"] == {
        "zoe": {"answer": {"helpful": 1}, "chunks": {"1": {"topically_relevant": 1}, "2": {"topically_relevant": 0}}}
    }


def test_ambiguous_record_id_without_model_id(capsys: Capsys, tmp_path: Path) -> None:
    records = write_records(tmp_path, MODEL_RECORDS)
    template = make_template(capsys, records, tmp_path / "template.csv", "--labels", "helpful")
    path = fill(template, tmp_path / "filled.csv", {}, annotator="ann")
    header, rows = read_csv(path)
    rows[0]["model_id"] = ""
    write_csv(path, header, rows)
    output = tmp_path / "merged.jsonl"
    code, _, err = run_cli(capsys, "labels", "merge", records, path, "-o", output)
    assert code == 2
    # the row matches no unit, so m-a's answer also has no row
    assert error_lines(err) == [
        (f"error: {path}:2 field 'model_id': record id 'q1' has one record per model ('m-a', 'm-b'): fill model_id"),
        (
            f"error: {path}: no row for record 'q1' (model 'm-a') answer by annotator 'ann': every template row "
            "needs a row"
        ),
    ]
    assert not output.exists()


def test_empty_annotator_cell_takes_the_file_name(capsys: Capsys, tmp_path: Path) -> None:
    records = write_records(tmp_path)
    template = make_template(capsys, records, tmp_path / "template.csv", "--labels", "helpful")
    alice = fill(template, tmp_path / "alice.csv", {("r1", 0): {"helpful": "1"}})
    bob = fill(template, tmp_path / "bob.csv", {("r1", 0): {"helpful": "1"}, ("r2", 0): {"helpful": "1"}})
    output = tmp_path / "merged.jsonl"
    code, out, err = run_cli(capsys, "labels", "merge", records, alice, bob, "-o", output, "--ties", "positive")
    assert code == 0, err
    assert "labels from 2 annotator(s) (alice, bob); ties → positive" in out
    r1, r2, r3 = read_records(output)
    assert r1.metadata["annotations"] == {
        "alice": {"answer": {"helpful": 1}, "chunks": {}},
        "bob": {"answer": {"helpful": 1}, "chunks": {}},
    }
    assert (r1.labels["helpful"], r2.labels["helpful"], r3.labels["helpful"]) == (1, 1, 0)
    report = json.loads((tmp_path / "merged.jsonl.agreement.json").read_text(encoding="utf-8"))
    assert report["annotators"] == ["alice", "bob"]


def test_jsonl_filled_files(capsys: Capsys, tmp_path: Path) -> None:
    records = write_records(tmp_path)
    template = make_template(capsys, records, tmp_path / "template.jsonl", "--labels", "topically_relevant,helpful")
    rows = read_jsonl(template)
    for name, values in (("kim", [True, 1, False, 0]), ("lee", [1, True, 0, True])):
        filled = []
        for i, row in enumerate(rows):
            label = "helpful" if row["unit"] == "answer" else "topically_relevant"
            filled.append({**row, "annotator": name, label: values[i % 4]})
        text = "".join(json.dumps(r) + "\n" for r in filled)
        (tmp_path / f"{name}.jsonl").write_text(text, encoding="utf-8")
    output = tmp_path / "merged.jsonl"
    code, _, err = run_cli(
        capsys,
        "labels",
        "merge",
        records,
        tmp_path / "kim.jsonl",
        tmp_path / "lee.jsonl",
        "-o",
        output,
        "--ties",
        "negative",
    )
    assert code == 0, err
    # rows i = 0…10: kim 1,1,0,0,1,1,0,0,1,1,0 and lee 1,1,0,1,1,1,0,1,1,1,0; a 1-0 tie → 0 (negative)
    r1, r2, r3 = read_records(output)
    assert (r1.labels["helpful"], r2.labels["helpful"], r3.labels["helpful"]) == (1, 1, 0)
    assert [c.labels["topically_relevant"] for c in r1.contexts] == [1, 0, 0]
    assert [c.labels["topically_relevant"] for c in r2.contexts] == [1, 0]
    assert [c.labels["topically_relevant"] for c in r3.contexts] == [1, 1, 0]
    assert r1.metadata["annotations"]["lee"]["chunks"]["3"] == {"topically_relevant": 1}
    assert type(r1.metadata["annotations"]["kim"]["answer"]["helpful"]) is int


def test_output_must_not_be_the_records_file(capsys: Capsys, tmp_path: Path) -> None:
    records = write_records(tmp_path)
    before = records.read_bytes()
    template = make_template(capsys, records, tmp_path / "template.csv", "--labels", "helpful")
    filled = fill(template, tmp_path / "filled.csv", {})
    same = tmp_path / "." / "records.jsonl"
    code, out, err = run_cli(capsys, "labels", "merge", records, filled, "-o", same)
    assert code == 2
    assert out == ""
    assert error_lines(err) == [
        (
            f"error: -o {same} is an input of this command: give a new file for "
            "the output; ragmeter never writes over its input"
        )
    ]
    assert records.read_bytes() == before
    assert not (tmp_path / "records.jsonl.agreement.json").exists()


def test_output_must_not_be_a_filled_file(capsys: Capsys, tmp_path: Path) -> None:
    records = write_records(tmp_path)
    template = make_template(capsys, records, tmp_path / "template.csv", "--labels", "helpful")
    filled = fill(template, tmp_path / "filled.csv", {})
    before = filled.read_bytes()
    code, _, err = run_cli(capsys, "labels", "merge", records, filled, "-o", filled)
    assert code == 2
    assert f"-o {filled} is an input of this command: give a new file" in err
    assert filled.read_bytes() == before


def test_csv_line_numbers_count_blank_lines_and_extra_cells_are_errors(capsys: Capsys, tmp_path: Path) -> None:
    records = write_records(tmp_path)
    header = "annotator,record_id,model_id,unit,rank,doc_id,question,text,helpful\n"
    # line 2: r1 answer; line 3: blank; line 4: r2 answer with a 2; line 5: r3 answer with an extra cell
    filled = tmp_path / "ann.csv"
    filled.write_text(
        header + "ann,r1,,answer,,,q,a,1\n\nann,r2,,answer,,,q,a,2\nann,r3,,answer,,,q,a,1,EXTRA\n", encoding="utf-8"
    )
    code, _, err = run_cli(capsys, "labels", "merge", records, filled, "-o", tmp_path / "out.jsonl")
    assert code == 2
    errors = error_lines(err)
    assert f"error: {filled}:4 field 'helpful': expected 0 or 1, found '2'" in errors
    assert any(e.startswith(f"error: {filled}:5: the row has 10 cells but the header 9") for e in errors)


def test_a_model_id_that_matches_no_record_says_so(capsys: Capsys, tmp_path: Path) -> None:
    records = write_records(tmp_path)
    header = "annotator,record_id,model_id,unit,rank,doc_id,question,text,helpful\n"
    filled = tmp_path / "ann.csv"
    filled.write_text(header + "ann,r1,m-x,answer,,,q,a,1\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "labels", "merge", records, filled, "-o", tmp_path / "out.jsonl")
    assert code == 2
    assert (
        f"error: {filled}:2 field 'model_id': record id 'r1' has no record with model_id 'm-x' (its model_id: '')"
    ) in error_lines(err)


def test_a_jsonl_row_with_an_unknown_key_is_one_problem(capsys: Capsys, tmp_path: Path) -> None:
    records = write_records(tmp_path, RECORDS[:1])
    filled = tmp_path / "ann.jsonl"
    filled.write_text(
        json.dumps({"annotator": "ann", "record_id": "r1", "unit": "answer", "helpful": 1, "note": "x"}) + "\n",
        encoding="utf-8",
    )
    code, _, err = run_cli(capsys, "labels", "merge", records, filled, "-o", tmp_path / "out.jsonl")
    assert code == 2
    assert len(error_lines(err)) == 1 and "unknown column 'note'" in err


# ---------------------------------------------------------------- end to end


def test_template_fill_merge_run(capsys: Capsys, tmp_path: Path) -> None:
    records = write_records(tmp_path)
    template = make_template(capsys, records, tmp_path / "template.csv")
    # Two annotators; they agree everywhere except topically_relevant at r2's rank 2 (a tie → undefined).
    common: Values = {
        ("r1", 1): {"topically_relevant": "1", "evidence_sufficient": "1"},
        ("r1", 2): {"topically_relevant": "1"},
        ("r1", 3): {"misleading": "1"},
        ("r2", 1): {"topically_relevant": "1", "evidence_sufficient": "1"},
        ("r3", 1): {"topically_relevant": "1"},
        ("r3", 3): {"evidence_sufficient": "1"},
        ("r1", 0): {"support_present": "1", "helpful": "1"},
        ("r2", 0): {"support_present": "1", "helpful": "1"},
        ("r3", 0): {"helpful": "1", "incomplete": "1"},
    }
    first = fill(template, tmp_path / "a.csv", common, annotator="a")
    tie = merge_values(common, {("r2", 2): {"topically_relevant": "1"}})
    second = fill(template, tmp_path / "b.csv", tie, annotator="b")
    merged = tmp_path / "merged.jsonl"
    code, _, err = run_cli(capsys, "labels", "merge", records, first, second, "-o", merged)
    assert code == 0, err
    assert [c.labels["topically_relevant"] for c in list(read_records(merged))[1].contexts] == [1, None]

    out_dir = tmp_path / "run"
    code, out, err = run_cli(
        capsys,
        "run",
        merged,
        "--metrics",
        "retrieval@3,grounding,generation",
        "--embedder",
        "hashing",
        "--out",
        out_dir,
        "--format",
        "json",
        "--n-resamples",
        "200",
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["n_items"] == 3
    by_key = {s["metric"]: s for s in data["summaries"]}
    # topical_precision@3 from the majority labels: r1 (1+1+0)/3, r2 undefined (tie at rank 2), r3 (1+0+0)/3
    precision = by_key["topical_precision@3"]
    assert precision["value"] == pytest.approx((2 / 3 + 1 / 3) / 2)
    assert (precision["n"], precision["n_undefined"]) == (2, 1)
    assert precision["undefined_reasons"] == {"annotators tied on topically_relevant at rank 2": 1}
    # sufficiency_hit@3: r1, r2 and r3 each have a sufficient chunk in the top 3
    assert by_key["sufficiency_hit@3"]["value"] == pytest.approx(1.0)
    # misleading_context_rate@3: r1 1/3, r2 0/3 (2 chunks, the denominator stays 3), r3 0/3 → 1/9
    assert by_key["misleading_context_rate@3"]["value"] == pytest.approx(1 / 9)
    assert by_key["grounding_presence_rate"]["value"] == pytest.approx(2 / 3)
    assert by_key["helpfulness_rate"]["value"] == pytest.approx(1.0)
    assert by_key["incompleteness_rate"]["value"] == pytest.approx(1 / 3)
    rows = [json.loads(line) for line in (out_dir / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == ["r1", "r2", "r3"]
    assert rows[0]["scores"]["topical_precision@3"] == pytest.approx(2 / 3)


def test_the_bundled_demo_labels_merge_without_a_problem(capsys: Capsys, tmp_path: Path) -> None:
    """``ragmeter demo`` copies two people's labels of the demo; they merge cleanly, with the κ that scikit-learn
    finds in the files' columns."""
    from sklearn.metrics import cohen_kappa_score

    assert run_cli(capsys, "demo", tmp_path)[0] == 0
    files = [tmp_path / "demo-labels-ana.csv", tmp_path / "demo-labels-ben.csv"]
    code, out, _ = run_cli(
        capsys, "labels", "merge", tmp_path / "demo.jsonl", *files, "-o", tmp_path / "m.jsonl", "--format", "json"
    )
    report = json.loads(out)
    assert code == 0 and report["problems_skipped"] == 0 and sorted(report["annotators"]) == ["ana", "ben"]
    columns = []
    for path in files:
        with path.open(newline="", encoding="utf-8") as handle:
            columns.append(list(csv.DictReader(handle)))
    for entry in report["agreement"]:
        unit = "chunk" if entry["label"] in CHUNK_LABELS else "answer"
        ana, ben = ([int(row[entry["label"]]) for row in rows if row["unit"] == unit] for rows in columns)
        assert entry["n_units"] == len(ana) == (395 if unit == "chunk" else 45)
        if len(set(ana) | set(ben)) > 1:
            assert entry["cohen_kappa"] == pytest.approx(cohen_kappa_score(ana, ben)), entry["label"]
    assert run_cli(capsys, "demo", tmp_path)[0] == 2  # nothing is overwritten
