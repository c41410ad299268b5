"""What happens to episodes over time: burst summaries, archiving to compressed cold storage and
restoring, retention and erasure, each leaving an audit record."""
