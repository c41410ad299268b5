"""The one way memdb talks to a model: an ``anthropic`` client with timeouts and bounded
retries, the default model, and structured (JSON schema) calls whose every failure is an LLMError."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic import ValidationError as PydanticError

from memdb.errors import ConfigError, LLMError
from memdb.memory.models import Episode
from memdb.memory.text import clip

__all__ = ["DEFAULT_MODEL", "anthropic_client", "episode_listing", "structured_call"]

DEFAULT_MODEL = "claude-haiku-4-5"
_M = TypeVar("_M", bound=BaseModel)


def anthropic_client(api_key: str | None, timeout: float, max_retries: int, what: str, client: Any | None = None) -> Any:
    """``client`` when one is given (tests pass one over a mocked transport), else an
    ``anthropic.Anthropic`` client with timeouts and bounded retries, or ConfigError naming
    what needed it; the one place every LLM-backed component gets its client."""
    if client is not None:
        return client
    import anthropic

    key = api_key or os.environ.get("ANTHROPIC_API_KEY")
    if not key:
        raise ConfigError(f"{what}: no API key (pass api_key= or set ANTHROPIC_API_KEY)")
    return anthropic.Anthropic(api_key=key, timeout=timeout, max_retries=max_retries)


def structured_call(client: Any, model: str, max_tokens: int, system: str, prompt: str, schema: type[_M], what: str) -> _M:
    """One Messages call whose answer must be JSON of ``schema`` (SDK structured output);
    every failure, from HTTP to a malformed answer, becomes LLMError.

    Only the SDK's own API errors are quoted; anything else is named by its type alone, since
    its text may carry the answer (and the answer may carry PII). A 200 whose body is not JSON
    (a proxy's error page) surfaces from the SDK as a JSON or attribute error, not an APIError:
    see test_anthropic_reflector_errors_cost_nothing_but_the_run.
    """
    import anthropic

    try:
        message = client.messages.parse(
            model=model, max_tokens=max_tokens, system=system, messages=[{"role": "user", "content": prompt}], output_format=schema
        )
        parsed, stop = message.parsed_output, message.stop_reason
    except anthropic.APIError as exc:
        raise LLMError(f"{what} with {model}: {type(exc).__name__}: {exc}") from None
    except PydanticError as exc:
        raise LLMError(f"{what} with {model}: the answer is not the requested JSON ({exc.error_count()} errors)") from None
    except Exception as exc:  # the contract: no failure of the call or its answer escapes as anything but LLMError
        raise LLMError(f"{what} with {model}: the answer could not be read ({type(exc).__name__}; is a proxy in the way?)") from None
    if not isinstance(parsed, schema):
        raise LLMError(f"{what} with {model}: no structured output in the response (stop_reason {stop!r})")
    return parsed


def episode_listing(episodes: Sequence[Episode], limit: int) -> str:
    """Episodes as bracketed-id lines for a prompt (the newest ``limit``), bounded per line."""
    lines = []
    for e in list(episodes)[-limit:]:
        head = f"[{e.id}] {e.ts:%Y-%m-%d %H:%M} {e.kind}" + (f"/{e.outcome}" if e.outcome else "")
        if e.tags:
            head += " tags=" + ",".join(e.tags)
        body = clip(e.summary, 300)
        for name in ("what_we_tried", "what_happened", "why", "lesson"):
            value = getattr(e, name)
            if value:
                body += f" | {name}: {clip(value, 200)}"
        lines.append(f"{head}: {body}")
    return "\n".join(lines)
