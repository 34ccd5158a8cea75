"""Chat backends a judge talks to."""
