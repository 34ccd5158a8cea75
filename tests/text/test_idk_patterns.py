"""IDK pattern lists from a user: a bad regular expression named by file and line, and a version that
tells every custom list apart from the default one, whichever constructor made it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmeter.core.errors import ConfigError
from ragmeter.text import LANGUAGES, IdkDetector

# The documented id is ``custom-`` and the first 12 hex digits of the SHA-256 of the patterns joined by
# newlines; the digests below come from coreutils, not from Python:
#   printf 'no clue' | sha256sum            → ad8b2f5070efd9f1a7e50fcdcc47bc319c39b1c562ddac71bdd8d9a78f74c5c2
#   printf 'no clue\nno idea' | sha256sum   → 9f2bc9d5988fb4d05f2f4d2f4c19008fd94866eddbe16c202bb0dcb3b8443f80
NO_CLUE = "custom-ad8b2f5070ef"
NO_CLUE_NO_IDEA = "custom-9f2bc9d5988f"


def test_bad_pattern_in_a_file_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "idk.txt"
    path.write_text("# my patterns\nno clue\n(unclosed\n", encoding="utf-8")  # line 3 is bad
    with pytest.raises(ConfigError) as info:
        IdkDetector.from_file(path)
    assert str(info.value).startswith(
        f"{path}:3: not a valid regular expression: missing ), unterminated subpattern at position 0"
    )


def test_bad_pattern_given_in_code_names_its_position() -> None:
    with pytest.raises(ConfigError, match=r"IDK pattern 2 \('\[abc'\) is not a valid regular expression"):
        IdkDetector(patterns=("no clue", "[abc"))


def test_constructor_with_custom_patterns_gets_a_custom_version() -> None:
    assert IdkDetector(patterns=("no clue",)).version == NO_CLUE
    assert IdkDetector(patterns=["no clue"]).version == NO_CLUE  # a list, too
    assert IdkDetector(patterns=("no clue", "no idea")).version == NO_CLUE_NO_IDEA


def test_every_constructor_gives_the_same_version_for_the_same_list(tmp_path: Path) -> None:
    path = tmp_path / "idk.txt"
    path.write_text("no clue\n# a comment\n\nno idea\n", encoding="utf-8")
    expected = NO_CLUE_NO_IDEA
    assert IdkDetector.from_file(path).version == expected
    assert IdkDetector.from_patterns(["no clue", "  ", "no idea"]).version == expected
    assert IdkDetector(patterns=("no clue", "no idea")).version == expected


def test_the_default_detector_is_named_by_its_languages_and_a_list_given_is_custom() -> None:
    assert IdkDetector().version == "idk-en-1+id-3"
    # the English list given as a list applies to every language: not the default, whose lists are per language
    english = LANGUAGES["en"].idk_patterns
    assert IdkDetector(patterns=english).version.startswith("custom-")
    assert IdkDetector.from_patterns(english).version == IdkDetector(patterns=english).version


def test_version_cannot_be_set_by_hand() -> None:
    with pytest.raises(TypeError):
        IdkDetector(patterns=("no clue",), version="idk-en-1+id-3")  # type: ignore[call-arg]


def test_pattern_file_with_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "idk.txt"
    path.write_text("\ufeffno clue\n", encoding="utf-8")
    detector = IdkDetector.from_file(path)
    assert detector.is_idk("No clue, sorry.")
    assert detector.version == NO_CLUE


def test_pattern_file_not_utf8_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "idk.txt"
    path.write_bytes(b"no clue\nje ne sais pas, d\xe9sol\xe9\n")  # \xe9: 8 + 17 bytes before it, byte 26
    with pytest.raises(ConfigError, match=r"not UTF-8 text \(byte 26 of the file\)"):
        IdkDetector.from_file(path)
