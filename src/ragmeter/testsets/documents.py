"""A team's documents as plain text: the corpus ``ragmeter generate`` writes questions from (issue 48).

A corpus is a folder, read recursively in sorted order; each file with a suffix of :data:`SUFFIXES` is one
:class:`Document`, whose ``doc_id`` is its path relative to the folder (``/``-separated, so the same on every
system), and every other file is listed as skipped, never silently dropped. What each kind gives:

- ``.txt``: the text as it is (UTF-8; a file that is not says so, with its path);
- ``.md``: Markdown rendered by markdown-it-py (CommonMark, the parser of Jupyter and rich) and read as HTML
  below, so that a link keeps its words, a heading its text and a table its cells, without markup;
- ``.html``/``.htm``: the text of the page by the standard library's HTML parser: ``script``, ``style``,
  ``template``, ``noscript``, ``svg`` and ``head`` dropped; a block (paragraph, heading, list, table) set apart by
  a blank line, a list item, table row or ``br`` on a line of its own, a row's cells separated by `` | ``;
  entities decoded. The standard library's
  parser is tolerant of broken markup and needs no install;
- ``.pdf``: each page's text by pypdf (pure Python, BSD, kept by the py-pdf organisation; no system library), pages
  separated by a blank line; a PDF with no text layer (a scan) is an error that says so, since OCR is not done.

Markdown and PDF need the ``generate`` extra. Whitespace is normalised the same way for every kind: runs of
spaces and tabs to one space, three or more line breaks to a blank line, each line stripped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from ragmeter.core.errors import InputError, MissingDependencyError

__all__ = ["SUFFIXES", "Corpus", "Document", "html_text", "read_corpus", "read_document"]

#: The suffixes read as documents (lower case).
SUFFIXES = (".txt", ".md", ".markdown", ".html", ".htm", ".pdf")
_DROPPED = frozenset({"script", "style", "template", "noscript", "svg", "head"})
_LINE_ENDING = frozenset({"br", "li", "dt", "dd", "tr", "caption", "figcaption", "pre"})
_CELLS = frozenset({"td", "th"})
_PARAGRAPH = frozenset(
    {
        "p",
        "div",
        "section",
        "article",
        "main",
        "header",
        "footer",
        "nav",
        "aside",
        "blockquote",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "ul",
        "ol",
        "dl",
        "table",
        "form",
        "fieldset",
        "hr",
        "figure",
        "details",
        "summary",
        "address",
    }
)


@dataclass(frozen=True)
class Document:
    """One file of a corpus: its id (the path relative to the corpus folder), its plain text, and where it was
    read from."""

    doc_id: str
    text: str
    path: Path


@dataclass(frozen=True)
class Corpus:
    """The documents of a folder, and the files it did not read with why (an unknown suffix, no text)."""

    documents: tuple[Document, ...]
    skipped: tuple[tuple[str, str], ...]


class _TextOfHTML(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._dropped = 0
        self._cells = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _DROPPED:
            self._dropped += 1
        if tag in _CELLS:
            if self._cells:
                self.parts.append(" | ")
            self._cells += 1
        self._break(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in _DROPPED:
            self._dropped = max(0, self._dropped - 1)
        self._break(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._break(tag)  # <br/>, <hr/>: no content, and no end tag to close a dropped element

    def handle_data(self, data: str) -> None:
        if not self._dropped:
            self.parts.append(data.replace("\n", " "))

    def _break(self, tag: str) -> None:
        """A line break after a line-ending element, a blank line around a block; one of each at most in a row."""
        if tag == "tr":
            self._cells = 0
        last = next((part for part in reversed(self.parts) if part.strip(" ")), "\n\n")
        if tag in _PARAGRAPH and last != "\n\n":
            self.parts.append("\n" if last == "\n" else "\n\n")
        elif tag in _LINE_ENDING and last not in ("\n", "\n\n"):
            self.parts.append("\n")


def _normalised(text: str) -> str:
    lines = [re.sub(r"[ \t\f\v\u00a0]+", " ", line).strip() for line in text.replace("\r\n", "\n").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def html_text(markup: str) -> str:
    """The readable text of an HTML page or fragment (see the module docstring).

    >>> html_text("<h1>Hours</h1><p>Open at <b>9:00</b> &amp; closed on Sundays.</p><script>x()</script>")
    'Hours\\n\\nOpen at 9:00 & closed on Sundays.'
    """
    parser = _TextOfHTML()
    parser.feed(markup)
    parser.close()
    return _normalised("".join(parser.parts))


def _markdown_text(source: str) -> str:
    try:
        from markdown_it import MarkdownIt
    except ImportError as exc:
        raise MissingDependencyError("markdown-it-py", "generate", "reading Markdown documents") from exc
    return html_text(MarkdownIt("commonmark").enable("table").render(source))


def _pdf_text(path: Path) -> str:
    try:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError as exc:
        raise MissingDependencyError("pypdf", "generate", "reading PDF documents") from exc
    try:
        pages = [page.extract_text() or "" for page in PdfReader(path).pages]
    except (PdfReadError, ValueError, KeyError) as exc:
        raise InputError(f"not a readable PDF ({exc}); fix or remove the file", path=str(path)) from exc
    return "\n\n".join(_normalised(page) for page in pages)


def _utf8(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not UTF-8 text (byte {exc.start}): save it as UTF-8, or remove it from the corpus", path=str(path)
        ) from exc


def read_document(path: Path, doc_id: str) -> Document:
    """The :class:`Document` of one file, by its suffix."""
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        text = _pdf_text(path)
    elif suffix in (".md", ".markdown"):
        text = _markdown_text(_utf8(path))
    elif suffix in (".html", ".htm"):
        text = html_text(_utf8(path))
    elif suffix == ".txt":
        text = _normalised(_utf8(path))
    else:
        raise InputError(
            f"ragmeter reads {', '.join(SUFFIXES)} documents, not {suffix or 'a file without suffix'}", path=str(path)
        )
    return Document(doc_id, _normalised(text), path)


def _files(folder: Path) -> Iterator[Path]:
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(folder).parts):
            yield path


def read_corpus(folder: Path) -> Corpus:
    """The documents of ``folder`` (recursively, in sorted order, hidden files and folders left out), and the files
    skipped with why: another suffix, or no text at all (a scanned PDF, an empty page)."""
    if not folder.is_dir():
        raise InputError("the corpus must be a folder of .txt, .md, .html or .pdf files", path=str(folder))
    documents, skipped = [], []
    for path in _files(folder):
        doc_id = path.relative_to(folder).as_posix()
        if path.suffix.lower() not in SUFFIXES:
            skipped.append((doc_id, f"not a document ({', '.join(SUFFIXES)})"))
            continue
        document = read_document(path, doc_id)
        if document.text:
            documents.append(document)
        else:
            skipped.append(
                (
                    doc_id,
                    "no text (a PDF without a text layer is not read: OCR it first)"
                    if path.suffix.lower() == ".pdf"
                    else "no text",
                )
            )
    return Corpus(tuple(documents), tuple(skipped))
