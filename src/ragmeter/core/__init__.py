"""The vocabulary every layer shares: errors, the evaluation record, settings, signatures, the one output
module (what a command may write), iteration helpers."""
