"""Indirect dispatch: a kernel counts tokens per expert, the next runs on those counts."""
