"""What people say: annotation files, merging annotators' votes, the LLM annotator, pairwise preferences, and how
far a score agrees with people."""
