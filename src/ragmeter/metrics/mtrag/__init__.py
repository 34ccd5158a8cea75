"""MT-RAG's metrics: the algorithmic ones (ROUGE-L, BERTScore, RB_agg, …) and the judged ones (IDK, RL_F,
RADBench)."""
