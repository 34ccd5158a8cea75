"""The demo data bundled with ragmeter (``src/ragmeter/data``; ``DEMO.md`` there describes it)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["DEMOS", "DEMO_FILES", "demo_file", "demo_path"]

#: The bundled demo datasets: the assistant as it is, the same assistant with its uncertainty gate on, and an
#: Indonesian help desk (``DEMO-id.md``).
DEMOS = {"v1": "demo.jsonl", "gate": "demo-gate.jsonl", "id": "demo-id.jsonl"}
#: What ``ragmeter demo FOLDER`` copies: the runs, two people's labels of the first (seed 003's 13 labels,
#: filled in the template 'labels merge' reads), the documents' chunks (the corpus of ``ragmeter generate``) and the
#: data's descriptions.
DEMO_FILES = (
    *DEMOS.values(),
    "demo-labels-ana.csv",
    "demo-labels-ben.csv",
    "demo-chunks.jsonl",
    "DEMO.md",
    "DEMO-id.md",
)


def demo_path(variant: str = "v1") -> Path:
    """A bundled demo dataset (``DEMOS``)."""
    return Path(str(resources.files("ragmeter") / "data" / DEMOS[variant]))


def demo_file(name: str) -> bytes:
    """The bytes of one of :data:`DEMO_FILES`."""
    return (resources.files("ragmeter") / "data" / name).read_bytes()
