"""A corpus folder read as plain text: each kind of file, what is skipped and why, and the errors that name a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmeter.core.errors import InputError
from ragmeter.testsets.documents import html_text, read_corpus


def _pdf(text: str) -> bytes:
    """A one-page PDF whose text layer is ``text`` (Helvetica), with a correct cross-reference table."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> >> >>"
        ),
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    return out + b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)


def test_html_keeps_the_words_and_the_blocks_and_drops_what_is_not_read() -> None:
    page = (
        "<html><head><title>T</title><style>p {color: red}</style></head><body>"
        "<h1>Opening&nbsp;hours</h1><p>Open at <b>9:00</b> &amp; closed on\nSundays.</p>"
        "<script>track()</script><table><tr><td>Mon</td><td>9–17</td></tr></table>"
        "<p>Call us<br/>today.</p><noscript>enable scripts</noscript></body></html>"
    )
    assert html_text(page) == "Opening hours\n\nOpen at 9:00 & closed on Sundays.\n\nMon | 9–17\n\nCall us\ntoday."


def test_a_folder_of_each_kind_gives_one_document_a_file_named_by_its_relative_path(tmp_path: Path) -> None:
    pytest.importorskip("markdown_it", reason="Markdown documents are the generate extra's")
    pytest.importorskip("pypdf", reason="PDF documents are the generate extra's")
    (tmp_path / "guides").mkdir()
    (tmp_path / "a.txt").write_text("\ufeffThe library opens at nine.\r\n\r\n\r\n\tIt   closes at six.\n", "utf-8")
    (tmp_path / "guides" / "b.md").write_text(
        "# Parking\n\nSee [the map](https://example.org/map) for **free** spots.\n\n| day | price |\n|---|---|\n"
        "| Sat | 3 |\n",
        "utf-8",
    )
    (tmp_path / "c.html").write_text("<p>Tickets cost five euros.</p>", "utf-8")
    (tmp_path / "d.pdf").write_bytes(_pdf("The museum closes on Mondays."))
    (tmp_path / "logo.png").write_bytes(b"\x89PNG")
    (tmp_path / "empty.txt").write_text(" \n", "utf-8")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "notes.txt").write_text("not a document", "utf-8")
    corpus = read_corpus(tmp_path)
    texts = {d.doc_id: d.text for d in corpus.documents}
    assert texts == {
        "a.txt": "The library opens at nine.\n\nIt closes at six.",
        "c.html": "Tickets cost five euros.",
        "d.pdf": "The museum closes on Mondays.",
        "guides/b.md": "Parking\n\nSee the map for free spots.\n\nday | price\nSat | 3",
    }
    assert [d.doc_id for d in corpus.documents] == ["a.txt", "c.html", "d.pdf", "guides/b.md"]  # sorted, stable
    assert dict(corpus.skipped) == {
        "empty.txt": "no text",
        "logo.png": "not a document (.txt, .md, .markdown, .html, .htm, .pdf)",
    }


def test_a_file_that_cannot_be_read_is_named(tmp_path: Path) -> None:
    (tmp_path / "latin1.txt").write_bytes("Café au lait".encode("latin-1"))
    with pytest.raises(InputError, match=r"latin1\.txt: not UTF-8 text \(byte 3\)"):
        read_corpus(tmp_path)
    with pytest.raises(InputError, match="must be a folder"):
        read_corpus(tmp_path / "latin1.txt")


def test_a_pdf_without_text_is_skipped_and_a_broken_one_named(tmp_path: Path) -> None:
    pytest.importorskip("pypdf", reason="PDF documents are the generate extra's")
    (tmp_path / "scan.pdf").write_bytes(_pdf(""))
    assert dict(read_corpus(tmp_path).skipped) == {
        "scan.pdf": "no text (a PDF without a text layer is not read: OCR it first)"
    }
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not a PDF body")
    with pytest.raises(InputError, match=r"broken\.pdf: not a readable PDF"):
        read_corpus(tmp_path)
