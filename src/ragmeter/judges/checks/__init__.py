"""Checks of a judge's verdicts that need no model: the claim-evidence check, refusal cues."""
