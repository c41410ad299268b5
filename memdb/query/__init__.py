"""Structured recall without embeddings: time phrases, recall / ask / history over the time,
tag, kind, outcome, session and text indexes, and honest answers."""
