"""The examples in docstrings are executed, so they cannot drift from the code."""

import doctest
import importlib
import pkgutil

import pytest

import ragmeter

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _modules_with_examples() -> list[str]:
    names = sorted(name for _, name, _ in pkgutil.walk_packages(ragmeter.__path__, "ragmeter."))
    finder = doctest.DocTestFinder()
    return [
        name
        for name in names
        if any(
            not example.options.get(doctest.SKIP)
            for test in finder.find(importlib.import_module(name))
            for example in test.examples
        )
    ]


@pytest.mark.parametrize("name", _modules_with_examples())
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=FLAGS)
    assert result.attempted > 0 and result.failed == 0
