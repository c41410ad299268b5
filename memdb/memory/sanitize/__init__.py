"""The PII sanitizer (``detect``) and the plumbing that carries every string of an episode
through it and back (``memdb.memory.sanitize.fields``, imported by name: it needs the text
layer, which needs the placeholder shape from here)."""

from memdb.memory.sanitize.detect import PLACEHOLDER, RegexSanitizer, Sanitizer, SanitizeResult, sanitize_fields

__all__ = ["PLACEHOLDER", "RegexSanitizer", "SanitizeResult", "Sanitizer", "sanitize_fields"]
