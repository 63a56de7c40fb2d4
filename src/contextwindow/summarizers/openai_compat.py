"""``OpenAICompatibleSummarizer``: any ``/v1/chat/completions`` endpoint.

Contract: one request per summary to ``{base_url}/chat/completions`` (OpenAI,
vLLM, Ollama, a llama.cpp server, any proxy speaking that shape), with the
prompt and the transcript as a system and a user message. The API key is read
from the environment variable ``api_key_env`` at each call, sent as a bearer
token when set (local servers need none), and never stored, shown or logged.
Failures, retries and timeouts are as ``contextwindow.summarizers._llm``
describes; every failure is a ``SummarizerError``. With ``keep_facts`` (the
default) the facts the model dropped are re-attached to its summary;
``check`` says which those were.

Example:
    >>> s = OpenAICompatibleSummarizer("llama-3.1-8b", base_url="http://localhost:8000/v1")
    >>> s.endpoint
    'http://localhost:8000/v1/chat/completions'
    >>> s
    OpenAICompatibleSummarizer(model='llama-3.1-8b', base_url='http://localhost:8000/v1', api_key_env='OPENAI_API_KEY', timeout=60.0, retries=2)
"""  # noqa: E501 -- doctest output lines cannot be wrapped

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from contextwindow.summarizers._llm import (
    Call,
    LLMSummarizer,
    Request,
    endpoint_url,
    parse_error,
)

__all__ = ["OpenAICompatibleSummarizer"]


@dataclass(frozen=True, repr=False, eq=False)  # LLMSummarizer's repr, identity
class OpenAICompatibleSummarizer(LLMSummarizer):
    """Summarise with a chat model behind an OpenAI-compatible API.

    Args:
        model: The model name the server expects.
        base_url: The API root, up to and including ``/v1``.
        api_key_env: The environment variable holding the key (``None``:
            never send one; a local server needs none).
        **settings: ``timeout``, ``retries``, ``backoff``, ``temperature``,
            ``prompt``, ``keep_facts``, ``tokenizer``, ``transport``: see
            ``LLMSummarizer``.

    Raises:
        SummarizerError: ``httpx`` is missing (``pip install
            'contextwindow[llm]'``), or a setting is out of range.
    """

    base_url: str = "https://api.openai.com/v1"
    api_key_env: str | None = "OPENAI_API_KEY"

    KEYED_HOSTS: ClassVar[frozenset[str]] = frozenset({"api.openai.com"})
    """A call to api.openai.com without a key fails at once, naming the variable."""

    @property
    def endpoint(self) -> str:
        """The URL requests go to: ``{base_url}/chat/completions``."""
        return endpoint_url(self.base_url, "/chat/completions")

    def _shape(
        self, request: Request, key: str | None
    ) -> tuple[dict[str, str], dict[str, Any]]:
        headers = {"content-type": "application/json"}
        if key:
            headers["authorization"] = f"Bearer {key}"
        body = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": request.system},
                {"role": "user", "content": request.user},
            ],
            "max_tokens": request.max_tokens,
            "temperature": self.temperature,
        }
        return headers, body

    def _answer(self, call: Call, data: Any) -> str:
        """``choices[0].message.content`` of a chat completion."""
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise parse_error(call, "no choices[0].message.content", data) from None
        if not isinstance(content, str):
            raise parse_error(call, "choices[0].message.content is not text", data)
        return content
