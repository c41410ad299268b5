"""The owner-scoped episodic record: typed models, settings, ids, the on-disk layout, the text
tokenizer, the PII sanitizer, relevance, capture, the audit log and the integrity check."""
