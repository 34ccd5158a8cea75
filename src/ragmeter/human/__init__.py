"""What people say: annotation files, merging annotators' votes, the LLM annotator, and how far a score agrees
with people."""
