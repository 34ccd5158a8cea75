"""Benchmark pipelines that read and write a benchmark's own file format."""
