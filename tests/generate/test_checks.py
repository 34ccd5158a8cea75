"""The free checks of a written item: its evidence is words of its chunks, and its question does not state its
answer."""

from __future__ import annotations

from ragmeter.testsets.checks import quotes_found, states_its_answer
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
