"""What generate reads: a folder cut into chunks in each document's language, or a team's own chunk file as it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmeter.core.errors import InputError
from ragmeter.testsets.corpus import read_chunks


def test_a_folder_is_cut_into_chunks_each_in_its_documents_language(tmp_path: Path) -> None:
    (tmp_path / "en.txt").write_text("The library opens at nine. It closes at six on weekdays.", "utf-8")
    (tmp_path / "id.txt").write_text(
        "Perpustakaan buka pukul sembilan pagi. Perpustakaan tutup pukul enam sore pada hari kerja.", "utf-8"
    )
    (tmp_path / "notes.csv").write_text("a,b\n", "utf-8")
    found = read_chunks(tmp_path, max_chars=55, overlap=0)
    assert [(c.doc_id, c.text) for c in found.chunks] == [
        ("en.txt", "The library opens at nine."),
        ("en.txt", "It closes at six on weekdays."),
        ("id.txt", "Perpustakaan buka pukul sembilan pagi."),
        ("id.txt", "Perpustakaan tutup pukul enam sore pada hari kerja."),
    ]
    assert [found.languages[c.chunk_id] for c in found.chunks] == ["en", "en", "id", "id"]
    assert [doc for doc, _ in found.skipped] == ["notes.csv"]
    assert read_chunks(tmp_path, max_chars=55, overlap=0) == found  # the same ids every time


def test_a_chunk_file_is_used_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "chunks.jsonl"
    path.write_text(
        json.dumps({"id": "kb-17", "text": " Opens at nine. ", "doc_id": "hours.md"})
        + "\n\n"
        + json.dumps({"chunk_id": 18, "text": "Tutup pukul enam sore pada hari Minggu."})
        + "\n",
        "utf-8",
    )
    found = read_chunks(path)
    assert [(c.chunk_id, c.doc_id, c.text, c.position) for c in found.chunks] == [
        ("kb-17", "hours.md", "Opens at nine.", 0),
        ("18", "18", "Tutup pukul enam sore pada hari Minggu.", 1),
    ]
    assert found.languages == {"kb-17": "en", "18": "id"}


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"text": "no id"}], r"chunks\.jsonl:1 field 'id': every chunk needs an id"),
        (
            [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}],
            r":2 field 'id': the id 'a' is already the chunk's of line 1",
        ),
        ([{"id": "a", "text": "  "}], r":1 field 'text': a chunk needs its text"),
        ([["a", "x"]], r":1: a chunk is an object"),
        ([], r"chunks\.jsonl: holds no chunk"),
    ],
)
def test_a_bad_chunk_is_named_by_file_line_and_field(tmp_path: Path, rows: list, message: str) -> None:
    path = tmp_path / "chunks.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), "utf-8")
    with pytest.raises(InputError, match=message):
        read_chunks(path)


def test_a_parquet_file_of_chunks(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow", reason="Parquet files are the parquet extra's")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": ["c1", "c2"], "text": ["Opens at nine.", "Closes at six."]}), tmp_path / "c.parquet")
    assert [c.chunk_id for c in read_chunks(tmp_path / "c.parquet").chunks] == ["c1", "c2"]


def test_a_chunk_file_saved_with_a_byte_order_mark_is_read_and_one_in_cp1252_is_named(tmp_path: Path) -> None:
    path = tmp_path / "chunks.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": "a", "text": "Opens at nine."}).encode() + b"\n")
    assert [c.chunk_id for c in read_chunks(path).chunks] == ["a"]
    path.write_bytes(b'{"id": "a", "text": "Opens at nine."}\n{"id": "b", "text": "Caf\xe9 au lait."}\n')
    with pytest.raises(InputError, match=r"chunks\.jsonl:2: not UTF-8 text \(byte 24 of the line\)"):
        read_chunks(path)
