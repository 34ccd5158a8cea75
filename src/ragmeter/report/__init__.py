"""Run reports as terminal text (the JSON figures come from :meth:`ragmeter.EvalResult.to_dict`)."""

from ragmeter.report.terminal import render_annotator_agreement, render_report

__all__ = ["render_annotator_agreement", "render_report"]
