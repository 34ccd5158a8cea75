"""MT-RAG's evaluation pipeline: its steps over the one scoring loop, and the step summary."""
