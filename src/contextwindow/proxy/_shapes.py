"""The three APIs the proxy speaks: where their messages are, their errors.

Each ``Api`` names the body fields holding the conversation, the field that
caps the reply (reserved in the window), the provider whose rules apply and
the upstream it goes to; ``error_body`` writes an error the way that
provider writes its own, so an SDK raises its usual exception for it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from contextwindow.messages import Provider

__all__ = ["APIS", "Api", "Upstream", "error_body"]

Upstream = Literal["openai", "anthropic"]


@dataclass(frozen=True, slots=True)
class Api:
    """One endpoint the proxy fits requests for."""

    path: str
    provider: Provider
    upstream: Upstream
    fields: tuple[str, ...]
    """The body fields holding the conversation (written back when fitted)."""
    reply_fields: tuple[str, ...]
    """Fields capping the reply, first present wins (reserved in the window)."""
    fitted: bool = True
    """Whether requests are fitted, as turns of their conversations
    (``count_tokens`` is only counted: its client wants the count of the
    request as it is, so it goes as it came)."""


APIS: dict[str, Api] = {
    a.path: a
    for a in (
        Api(
            "/v1/chat/completions",
            "openai",
            "openai",
            ("messages",),
            ("max_completion_tokens", "max_tokens"),
        ),
        Api("/v1/responses", "responses", "openai", ("input",), ("max_output_tokens",)),
        Api(
            "/v1/messages",
            "anthropic",
            "anthropic",
            ("system", "messages"),
            ("max_tokens",),
        ),
        Api(
            "/v1/messages/count_tokens",
            "anthropic",
            "anthropic",
            ("system", "messages"),
            (),
            fitted=False,
        ),
    )
}
"""The endpoints read, by path (all fitted but ``count_tokens``); every other
path passes through."""


def error_body(
    upstream: Upstream,
    status: int,
    message: str,
    code: str | None = None,
    param: str | None = None,
) -> bytes:
    """An error in the provider's own shape.

    OpenAI: ``{"error": {"message", "type", "param", "code"}}``; Anthropic:
    ``{"type": "error", "error": {"type", "message"}}`` with the type its API
    uses for ``status``. ``param``: the body field at fault (OpenAI's
    ``param``: ``messages``, or ``input`` for Responses).

    Example:
        >>> json.loads(error_body("anthropic", 400, "too long"))["error"]
        {'type': 'invalid_request_error', 'message': 'too long'}
        >>> doc = json.loads(
        ...     error_body("openai", 400, "x", "context_length_exceeded", "input"))
        >>> doc["error"]["type"], doc["error"]["code"], doc["error"]["param"]
        ('invalid_request_error', 'context_length_exceeded', 'input')
    """
    doc: dict[str, Any]
    if upstream == "anthropic":
        kind = _ANTHROPIC_TYPES.get(status, "api_error")
        doc = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        kind = "invalid_request_error" if status < 500 else "upstream_error"
        if status == 429:
            kind = "rate_limit_error"
        doc = {
            "error": {"message": message, "type": kind, "param": param, "code": code}
        }
    return json.dumps(doc, separators=(",", ":")).encode()


_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    413: "request_too_large",
    429: "rate_limit_error",
    502: "api_error",
    504: "timeout_error",
}
