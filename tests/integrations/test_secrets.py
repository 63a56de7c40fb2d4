"""The adapters show no key: a bad LiteLLM fallback, a failing LangChain model.

A fallback dict carries its own ``api_key``: its error names its keys, never
a value, and comes before any call. A LangChain model's exception may quote
the key (``Incorrect API key provided: sk-...``): the ``SummarizerError``
names only its type and keeps no link to it (cause or context).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from tests.secret_leaks import exception_text, leaked

from contextwindow import Message
from contextwindow.errors import ArgumentTypeError, SummarizerError
from contextwindow.integrations import litellm as adapter
from contextwindow.integrations.langchain import LangChainSummarizer

KEY = "sk-proj-AbCdEfGh1234567890XyZwVuTsRq"
MESSAGES = [{"role": "user", "content": "hi"}]


class FakeLiteLLM:
    """Stands for the ``litellm`` module: every call fails, and is recorded."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def completion(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        raise RuntimeError("down")

    async def acompletion(self, **kwargs: Any) -> Any:
        return self.completion(**kwargs)


def _run(call: Any, **kwargs: Any) -> Any:
    result = call(model="gpt-4o", messages=MESSAGES, **kwargs)
    return asyncio.run(result) if asyncio.iscoroutine(result) else result


class TestLiteLLMFallbacks:
    @pytest.mark.parametrize(
        "bad",
        [
            {"modle": "gpt-4o", "api_key": KEY},
            {"model": 5, "api_key": KEY},
            ("gpt-4o", KEY),
            KEY.encode(),
        ],
    )
    def test_bad_fallback(self, bad: object, monkeypatch: pytest.MonkeyPatch) -> None:
        """Named by index, its values not shown, and no model called first."""
        fake = FakeLiteLLM()
        monkeypatch.setattr(adapter, "_litellm", lambda: fake)
        for call in (adapter.completion, adapter.acompletion):
            with pytest.raises(ArgumentTypeError, match=r"^fallbacks\[1\]") as info:
                _run(call, fallbacks=["gpt-4o-mini", bad])
            assert not leaked([KEY], exception_text(info.value))
            assert fake.calls == []
        if isinstance(bad, dict):
            assert "'api_key'" in str(info.value)


class FailingModel:
    """A chat model whose provider refuses the key, quoting it."""

    def invoke(self, _messages: Any) -> Any:
        raise RuntimeError(f"Error code: 401 - Incorrect API key provided: {KEY}")

    async def ainvoke(self, _messages: Any) -> Any:
        self.invoke(_messages)


class TestLangChainSummarizer:
    def test_provider_exception_not_chained(self) -> None:
        """Neither the error nor its traceback holds a piece of the key."""
        summ = LangChainSummarizer(FailingModel())
        messages = [Message.user("hello " * 20), Message.assistant("ok")]
        runs: list[Callable[[], str]] = [
            lambda: summ.summarize(messages),
            lambda: asyncio.run(summ.asummarize(messages)),
        ]
        for run in runs:
            with pytest.raises(SummarizerError, match="RuntimeError") as info:
                run()
            assert info.value.__cause__ is None
            assert info.value.__context__ is None
            assert not leaked([KEY], exception_text(info.value))
