"""``AnthropicSummarizer``: Claude through the Anthropic Messages API.

Contract: one request per summary to ``{base_url}/v1/messages`` with the
prompt as ``system`` and the transcript as the one user turn; the headers
``x-api-key`` (from the environment variable ``api_key_env``, read at each
call, never stored or shown) and ``anthropic-version``. The summary is the
text blocks of the answer, joined. Failures, retries and timeouts are as
``contextwindow.summarizers._llm`` describes (Anthropic's 529 "overloaded"
is retried like any 5xx); every failure is a ``SummarizerError``. With
``keep_facts`` (the default) the facts the model dropped are re-attached;
``check`` says which those were.

Example:
    >>> s = AnthropicSummarizer("claude-haiku-4-5")
    >>> (s.endpoint, s.api_key_env)
    ('https://api.anthropic.com/v1/messages', 'ANTHROPIC_API_KEY')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from contextwindow.summarizers._llm import (
    Call,
    LLMSummarizer,
    Request,
    endpoint_url,
    parse_error,
)

__all__ = ["ANTHROPIC_VERSION", "AnthropicSummarizer"]

ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header sent."""


@dataclass(frozen=True, repr=False, eq=False)  # LLMSummarizer's repr, identity
class AnthropicSummarizer(LLMSummarizer):
    """Summarise with a Claude model.

    Args:
        model: The model name, e.g. ``claude-haiku-4-5``.
        base_url: The API root (``/v1/messages`` is added).
        api_key_env: The environment variable holding the key (``None``:
            never send one, for a proxy that adds it).
        **settings: ``timeout``, ``retries`` (529 "overloaded" is retried
            too), ``backoff``, ``temperature``, ``prompt``, ``keep_facts``,
            ``tokenizer``, ``transport``: see ``LLMSummarizer``.

    Raises:
        SummarizerError: ``httpx`` is missing (``pip install
            'contextwindow[llm]'``), or a setting is out of range.
    """

    base_url: str = "https://api.anthropic.com"
    api_key_env: str | None = "ANTHROPIC_API_KEY"

    KEYED_HOSTS: ClassVar[frozenset[str]] = frozenset({"api.anthropic.com"})
    """A call to api.anthropic.com without a key fails at once, naming it."""

    @property
    def endpoint(self) -> str:
        """The URL requests go to: ``{base_url}/v1/messages``."""
        return endpoint_url(self.base_url, "/v1/messages")

    def _shape(
        self, request: Request, key: str | None
    ) -> tuple[dict[str, str], dict[str, Any]]:
        headers = {
            "content-type": "application/json",
            "anthropic-version": ANTHROPIC_VERSION,
        }
        if key:
            headers["x-api-key"] = key
        body = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "system": request.system,
            "messages": [{"role": "user", "content": request.user}],
            "temperature": self.temperature,
        }
        return headers, body

    def _answer(self, call: Call, data: Any) -> str:
        """The text blocks of a Messages API answer, joined."""
        answer: Mapping[str, Any] = (
            cast("Mapping[str, Any]", data) if isinstance(data, dict) else {}
        )
        blocks = answer.get("content")
        if not isinstance(blocks, list):
            raise parse_error(call, "no content list", data)
        texts: list[str] = []
        for raw in cast("Sequence[Any]", blocks):
            block: Mapping[str, Any] = (
                cast("Mapping[str, Any]", raw) if isinstance(raw, dict) else {}
            )
            text = block.get("text")
            if block.get("type") == "text" and isinstance(text, str):
                texts.append(text)
        return "\n".join(texts)
