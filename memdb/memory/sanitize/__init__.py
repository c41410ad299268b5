"""The PII sanitizer (``detect``), the secrets this process holds (``known``: a server registers
its tokens), what error messages may show of a value (``messages``), and
the plumbing that carries every string of an episode through the sanitizer and back
(``memdb.memory.sanitize.fields``, imported by name: it needs the text layer, which needs the
placeholder shape from here)."""

from memdb.memory.sanitize.detect import (
    PLACEHOLDER,
    SECRET_FIELD,
    RegexSanitizer,
    Sanitizer,
    SanitizeResult,
    is_secret_key,
    sanitize_fields,
)
from memdb.memory.sanitize.known import register_secrets, unregister_secrets
from memdb.memory.sanitize.messages import shown

__all__ = [
    "PLACEHOLDER",
    "SECRET_FIELD",
    "RegexSanitizer",
    "SanitizeResult",
    "Sanitizer",
    "is_secret_key",
    "register_secrets",
    "sanitize_fields",
    "shown",
    "unregister_secrets",
]
