"""Run reports: terminal text and JSON."""

from ragmeter.report.terminal import render_agreement, render_report

__all__ = ["render_agreement", "render_report"]
