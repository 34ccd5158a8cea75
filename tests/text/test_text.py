"""Text tools: SQuAD normalisation, citations, sentences, IDK detection."""

import pytest

from ragmeter.core.errors import ConfigError
from ragmeter.text import (
    IdkDetector,
    answer_tokens,
    find_citations,
    normalize_answer,
    split_sentences,
    strip_citations,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Eiffel Tower", "eiffel tower"),
        ("  a  cat,  AN owl and THE dog!  ", "cat owl and dog"),
        ("theatre another thesis", "theatre another thesis"),  # articles only as whole words
        ("U.S.A.", "usa"),
        ("rock'n'roll", "rocknroll"),
        ("“quoted” — dash", "“quoted” — dash"),  # non-ASCII punctuation is kept (SQuAD v1.1)
        ("Café déjà vu", "café déjà vu"),
        ("", ""),
        ("the a an", ""),
    ],
)
def test_normalize_answer_follows_squad_v11(text, expected):
    assert normalize_answer(text) == expected


def test_answer_tokens_split_the_normalised_text():
    assert answer_tokens("The cat-sat, on a mat.") == ["catsat", "on", "mat"]


def test_citations_are_found_in_order_with_repeats_and_spaces():
    text = "A [CIT:d1]. B [CIT: doc 2 ] and [CIT:d1][CIT:]. C [cit:x]."
    assert find_citations(text) == ["d1", "doc 2", "d1"]


def test_strip_citations_tidies_spacing():
    assert strip_citations("Rain is wet [CIT:d1]. Snow [CIT:a] [CIT:b] is cold!") == "Rain is wet. Snow is cold!"


def test_sentences_keep_a_trailing_citation_with_its_sentence():
    text = "The U.S. Senate has 100 members.[CIT:gov-3] It meets in Washington [CIT:gov-4]. I don't know more."
    assert split_sentences(text) == [
        "The U.S. Senate has 100 members.[CIT:gov-3]",
        "It meets in Washington [CIT:gov-4].",
        "I don't know more.",
    ]


@pytest.mark.parametrize("text", ["", "   ", "\n\n"])
def test_sentences_of_blank_text_are_empty(text):
    assert split_sentences(text) == []


def test_sentences_split_indonesian():
    assert split_sentences("Saya tidak tahu. Jakarta adalah ibu kota [CIT:d9].") == [
        "Saya tidak tahu.",
        "Jakarta adalah ibu kota [CIT:d9].",
    ]


@pytest.mark.parametrize(
    "sentence",
    [
        "I don't know.",
        "I do not know the answer [CIT:d1].",
        "I’m not sure about that.",
        "I do not have specific information about the fees.",
        "I have no information on this.",
        "The provided context does not mention the opening hours.",
        "There is no information about it.",
        "I cannot answer this question.",
        "Saya tidak tahu.",
        "Tidak ada informasi tentang jadwal itu.",
        "Maaf, saya tidak dapat menjawab pertanyaan ini.",
        "Informasi tersebut tidak tersedia.",
    ],
)
def test_idk_sentences_are_detected(sentence):
    assert IdkDetector().is_idk(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "The pool opens at 7 am [CIT:pool].",
        "Residents know the rules.",
        "Nobody knows the exact date, but it is May.",
        "Saya tahu jawabannya.",
        "Perpustakaan buka pukul sembilan.",
        "The context is clear: fees are €5.",
    ],
)
def test_plain_sentences_are_not_idk(sentence):
    assert not IdkDetector().is_idk(sentence)


def test_custom_idk_patterns_are_versioned_by_content(tmp_path):
    path = tmp_path / "idk.txt"
    path.write_text("# comment\nno clue\n\n", encoding="utf-8")
    detector = IdkDetector.from_file(path)
    assert detector.is_idk("I have no clue.") and not detector.is_idk("I don't know.")
    assert detector.version == "custom-ad8b2f5070ef"  # printf 'no clue' | sha256sum, first 12 hex digits
    assert detector.version != IdkDetector.from_patterns(["no idea"]).version
    assert IdkDetector().version == "idk-en-1+id-3"


@pytest.mark.parametrize("patterns", [(), ("(unclosed",)])
def test_bad_idk_pattern_lists_are_config_errors(patterns):
    with pytest.raises(ConfigError):
        IdkDetector(patterns=patterns)
