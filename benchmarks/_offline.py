"""The environment of the side-by-side benchmarks, set before another tool or a Hugging Face library is imported:
no hub look-ups (the machines here reach no hub), and whatever the tool needs not to call home."""

from __future__ import annotations

import os

HUB_OFFLINE = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")


def go_offline(**settings: str) -> None:
    """Set the hub's offline switches and ``settings`` (``RAGAS_DO_NOT_TRACK="true"``), unless already set."""
    for name in HUB_OFFLINE:
        os.environ.setdefault(name, "1")
    for name, value in settings.items():
        os.environ.setdefault(name, value)
