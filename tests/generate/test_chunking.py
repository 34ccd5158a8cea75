"""Documents cut into chunks: a text worked by hand, the bounds, the overlap, and ids that stay put."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.core.errors import ConfigError
from ragmeter.testsets.chunking import chunk_document
from ragmeter.testsets.documents import Document
from ragmeter.text.languages import LANGUAGES

TEXT = "Alpha opens at nine. Beta closes at six. Gamma is free.\n\nDelta has parking. Epsilon sells tea."


def _document(text: str, doc_id: str = "a.txt") -> Document:
    return Document(doc_id, text, Path(doc_id))


def test_a_text_worked_by_hand() -> None:
    # 50 characters at most: "Alpha … nine. Beta … six." is 40, adding Gamma makes 55; each next chunk opens
    # with the last sentence of the one before, across the paragraph break too
    chunks = chunk_document(_document(TEXT), max_chars=50)
    assert [c.text for c in chunks] == [
        "Alpha opens at nine. Beta closes at six.",
        "Beta closes at six. Gamma is free.",
        "Gamma is free.\n\nDelta has parking.",
        "Delta has parking. Epsilon sells tea.",
    ]
    digest = hashlib.sha256(b"Alpha opens at nine. Beta closes at six.").hexdigest()[:12]
    assert chunks[0].chunk_id == f"a.txt#{digest}"
    assert [c.position for c in chunks] == [0, 1, 2, 3] and {c.doc_id for c in chunks} == {"a.txt"}
    # no overlap: Gamma (14 characters, under half the bound) does not close at the paragraph, Epsilon does not fit
    assert [c.text for c in chunk_document(_document(TEXT), max_chars=50, overlap=0)] == [
        "Alpha opens at nine. Beta closes at six.",
        "Gamma is free.\n\nDelta has parking.",
        "Epsilon sells tea.",
    ]


def test_a_paragraph_closes_a_chunk_that_is_half_full() -> None:
    text = "The first paragraph is rather long indeed.\n\nA second one."
    assert [c.text for c in chunk_document(_document(text), max_chars=80, overlap=0)] == [
        "The first paragraph is rather long indeed.",
        "A second one.",
    ]


def test_a_sentence_longer_than_the_bound_is_cut_at_spaces_and_a_word_longer_still_at_the_bound() -> None:
    text = "word " * 30 + "x" * 130
    chunks = chunk_document(_document(text.strip()), max_chars=60, overlap=0)
    assert all(len(c.text) <= 60 for c in chunks)
    assert "".join(c.text.replace(" ", "") for c in chunks) == text.replace(" ", "")
    assert chunks[-1].text == "x" * 10 and chunks[-2].text == "x" * 60


def test_the_same_text_twice_in_a_document_gets_numbered_ids() -> None:
    # each paragraph (36 characters, over half the bound) is a chunk of its own
    chunks = chunk_document(
        _document("\n\n".join(["Closed on Mondays. Open on Tuesdays."] * 3)), max_chars=50, overlap=0
    )
    digest = hashlib.sha256(b"Closed on Mondays. Open on Tuesdays.").hexdigest()[:12]
    assert [c.chunk_id for c in chunks] == [f"a.txt#{digest}", f"a.txt#{digest}-2", f"a.txt#{digest}-3"]


def test_an_edit_leaves_the_other_chunks_ids_as_they_were() -> None:
    paragraphs = [f"Paragraph {n} starts here. It says fact number {n}. It ends here." for n in range(6)]
    before = chunk_document(_document("\n\n".join(paragraphs)), max_chars=120)
    paragraphs[0] = paragraphs[0].replace("starts here", "begins at the top")
    after = chunk_document(_document("\n\n".join(paragraphs)), max_chars=120)
    assert before[0].chunk_id != after[0].chunk_id
    assert [c.chunk_id for c in before[1:]] == [c.chunk_id for c in after[1:]]
    assert [c.chunk_id for c in before] == [
        c.chunk_id
        for c in chunk_document(
            _document("\n\n".join([p.replace("begins at the top", "starts here") for p in paragraphs])), max_chars=120
        )
    ]


def test_indonesian_abbreviations_do_not_end_a_chunks_sentence() -> None:
    text = "Kantor di Jl. Merdeka buka pukul 08.00. Loket tutup pukul 15.00."
    chunks = chunk_document(_document(text), max_chars=50, overlap=0, language=LANGUAGES["id"])
    assert [c.text for c in chunks] == ["Kantor di Jl. Merdeka buka pukul 08.00.", "Loket tutup pukul 15.00."]


def test_settings_that_cannot_work_say_why() -> None:
    with pytest.raises(ConfigError, match="too short to hold a fact"):
        chunk_document(_document(TEXT), max_chars=20)
    with pytest.raises(ConfigError, match="0 or more"):
        chunk_document(_document(TEXT), overlap=-1)


sentences = st.lists(
    st.text(st.sampled_from("abcdefgh "), min_size=1, max_size=40).map(lambda s: s.strip().capitalize() + "."),
    min_size=1,
    max_size=25,
).filter(lambda xs: all(len(x) > 1 for x in xs))


@settings(max_examples=60, deadline=None)
@given(sentences, st.integers(50, 200), st.integers(0, 2))
def test_the_chunks_cover_the_text_in_order_within_the_bound(parts: list[str], max_chars: int, overlap: int) -> None:
    text = " ".join(parts)
    chunks = chunk_document(_document(text), max_chars=max_chars, overlap=overlap)
    assert all(len(c.text) <= max_chars for c in chunks)
    if overlap == 0:  # every word once, in order
        assert " ".join(c.text for c in chunks).split() == text.split()
    else:  # each chunk a piece of the text, later ones further on, the first and last at its ends
        starts = [0]
        for chunk in chunks:
            starts.append(text.find(chunk.text, starts[-1]))
            assert starts[-1] >= 0
        assert starts[1] == 0
        assert text.endswith(chunks[-1].text)
    assert chunk_document(_document(text), max_chars=max_chars, overlap=overlap) == chunks  # the same every run
