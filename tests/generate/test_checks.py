"""The free checks of a written item: its evidence is words of its chunks, and its question does not state its
answer."""

from __future__ import annotations

from ragmeter.testsets.checks import answer_grades, quotes_found, states_its_answer
from ragmeter.text.languages import LANGUAGES

CHUNKS = ["The Central Library opens at 9:00 on weekdays.", "A library card costs 25 dollars a year."]


def test_quotes_must_each_be_words_of_a_chunk() -> None:
    assert quotes_found(["opens at 9:00 on weekdays", "costs 25 dollars"], CHUNKS)
    assert not quotes_found(["opens at 9:00", "costs 30 dollars"], CHUNKS)  # a number the chunks lack
    assert not quotes_found(["lends laptops to members"], CHUNKS)  # words the chunks lack
    assert not quotes_found([], CHUNKS)
    assert quotes_found(
        ["kartu perpustakaan Rp25.000"], ["Harga kartu perpustakaan Rp 25.000 per tahun."], language=LANGUAGES["id"]
    )


def test_a_question_that_holds_its_answers_words_states_it() -> None:
    assert states_its_answer("Does a library card cost 25 dollars a year?", "A library card costs 25 dollars.")
    assert not states_its_answer("How much does a library card cost?", "25 dollars a year.")
    assert not states_its_answer("Is the library open on weekdays?", "Yes.")  # no content word: later calls
    assert states_its_answer(
        "Apakah perpustakaan buka pukul sembilan?", "Perpustakaan buka pukul sembilan.", language=LANGUAGES["id"]
    )


def test_a_quote_in_other_quote_marks_still_finds_its_chunk() -> None:
    """IDK-MRC's paragraphs quote with double marks and the judge's quotes with single ones: three kept items of the
    generated IDK-MRC set had no qrels while their quotes were words of their own paragraph."""
    chunk = 'Feminin adalah kata sifat yang berarti "kewanitaan". Lawan katanya adalah "kejantanan".'
    quotes = ["berarti 'kewanitaan'", "Lawan katanya adalah 'kejantanan'."]
    assert quotes_found(quotes, [chunk], language=LANGUAGES["id"])
    assert answer_grades(quotes, ["Parkir gratis.", chunk], language=LANGUAGES["id"]) == {1: 2}


def test_the_chunks_an_answer_was_written_from_are_always_read() -> None:
    """A quote is words of a chunk when its content words' stems are (``quote_found``), so a chunk can hold it
    without its longest word as written: the chunk it was written from is read in full, another is not."""
    chunks = ["The library lends laptops to members.", "The library lends laptops to members too."]
    quote = ["libraries lend laptops"]
    assert quotes_found(quote, chunks[:1])
    assert answer_grades(quote, chunks) == {}
    assert answer_grades(quote, chunks, written_from={0}) == {0: 2}
