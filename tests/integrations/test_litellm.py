"""The LiteLLM wrapper, real: LiteLLM's mock replies and the llama.cpp server."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest
from tests.llama import LlamaServer, free_port

from contextwindow import get_tokenizer, problems
from contextwindow.errors import ContextWindowError
from contextwindow.formats import from_openai
from contextwindow.integrations.litellm import (
    FittingCompletion,
    _litellm,
    acompletion,
    completion,
)
from contextwindow.tokens import TokenCounter


class Sent:
    """Records the messages each model was sent (LiteLLM's own callback, below)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[dict[str, Any]]]] = []


@pytest.fixture
def sent() -> Any:
    litellm = _litellm()  # imported as the adapter imports it: offline
    from litellm.integrations.custom_logger import CustomLogger

    record = Sent()

    class Logger(CustomLogger):
        def log_pre_api_call(self, model: str, messages: Any, kwargs: Any) -> None:
            record.calls.append((model, list(messages)))

    before = list(litellm.callbacks)
    litellm.callbacks = [*before, Logger()]
    yield record
    litellm.callbacks = before


def agent_history(exchanges: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Read every module."},
    ]
    for i in range(exchanges):
        out += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "read", "arguments": f'{{"n": {i}}}'},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": f"c{i}",
                "content": f"module {i}\n" + "code line\n" * 60,
            },
        ]
    return [*out, {"role": "user", "content": "Which module failed?"}]


COUNTER = TokenCounter(get_tokenizer("gpt-4o"), "openai")


class TestFallbacks:
    def test_a_smaller_fallback_gets_a_request_that_fits_it(self, sent: Sent) -> None:
        """The first model fails; the fallback's request fits its smaller window."""
        calls = FittingCompletion(
            windows={"openai/big": 6_000, "openai/small": 2_000}, tokenizer="o200k_base"
        )
        history = agent_history(30)
        response = calls.completion(
            model="openai/big",
            messages=history,
            max_tokens=200,
            mock_response=Exception("the big model is down"),
            fallbacks=[{"model": "openai/small", "mock_response": "module 7"}],
        )
        assert response.choices[0].message.content == "module 7"
        sizes = {model: COUNTER.messages(from_openai(ms)) for model, ms in sent.calls}
        assert sizes["big"] <= 5_800 < COUNTER.messages(from_openai(history))
        assert sizes["small"] <= 1_800
        for _, ms in sent.calls:
            assert problems(from_openai(ms), "openai") == ()
            assert ms[0]["content"] == "You are a coding agent."
            assert ms[-1]["content"] == "Which module failed?"

    def test_every_model_failing_raises_the_last_error(self) -> None:
        """When every model fails, the last failure is raised, not swallowed."""
        calls = FittingCompletion(windows={"openai/a": 4_000, "openai/b": 4_000})
        with pytest.raises(Exception, match="b is down"):
            calls.completion(
                model="openai/a",
                messages=[{"role": "user", "content": "hi"}],
                mock_response=Exception("a is down"),
                fallbacks=[
                    {"model": "openai/b", "mock_response": Exception("b is down")}
                ],
            )

    def test_a_window_from_the_registry_and_litellms(self) -> None:
        """Known models need no window: this project's registry, else LiteLLM's."""
        calls = FittingCompletion()
        assert calls.window("gpt-4o") == calls.window("openai/gpt-4o") == 128_000
        assert calls.window("bedrock/amazon.titan-text-express-v1") > 0
        with pytest.raises(ContextWindowError, match="windows="):
            calls.window("openai/nobody-knows-this-one")

    def test_module_functions_sync_and_async(self, sent: Sent) -> None:
        """``completion`` / ``acompletion`` fit to the model's own window."""
        history = agent_history(400)  # about 40,000 tokens: over gpt-3.5's 16,385
        r = completion(model="gpt-3.5-turbo", messages=history, mock_response="ok")
        ra = asyncio.run(
            acompletion(model="gpt-3.5-turbo", messages=history, mock_response="ok")
        )
        assert r.choices[0].message.content == ra.choices[0].message.content == "ok"
        for _, ms in sent.calls:
            assert COUNTER.messages(from_openai(ms)) <= 16_385 - 4096
            assert problems(from_openai(ms), "openai") == ()

    def test_model_and_messages_by_position(self, sent: Sent) -> None:
        """As LiteLLM takes them: ``completion(model, messages, ...)``, fitted
        the same; given twice, or more by position, a named error."""
        history = agent_history(400)
        r = completion("gpt-3.5-turbo", history, mock_response="ok")
        ra = asyncio.run(acompletion("gpt-3.5-turbo", history, mock_response="ok"))
        assert r.choices[0].message.content == ra.choices[0].message.content == "ok"
        ((model, ms), _) = sent.calls
        assert model == "gpt-3.5-turbo"
        assert COUNTER.messages(from_openai(ms)) <= 16_385 - 4096
        with pytest.raises(ContextWindowError, match=r"^model: "):
            completion("gpt-4o", history, model="gpt-4o", mock_response="ok")
        with pytest.raises(ContextWindowError, match=r"^args: "):
            completion("gpt-4o", history, 1.0, mock_response="ok")

    def test_claude_gets_anthropic_rules(self, sent: Sent) -> None:
        """A Claude model's request keeps Anthropic's rules (first turn a user's)."""
        history = [
            {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": "hi"},
        ]
        completion(
            model="anthropic/claude-sonnet-4-5", messages=history, mock_response="ok"
        )
        from contextwindow.formats import from_openai as read

        assert problems(read(sent.calls[-1][1]), "anthropic") == ()


class TestLlama:
    def test_fallback_against_llama_cpp(self, llama_server: LlamaServer) -> None:
        """A dead endpoint, then llama.cpp (small window): fitted, calibrated."""
        key = os.environ[llama_server.key_env]
        calls = FittingCompletion(
            windows={"openai/dead": 8_000, "openai/smollm2": 1_200},
            tokenizer="o200k_base",
        )
        history: list[dict[str, Any]] = []  # SmolLM2's chat template has no tool turns
        for i in range(20):
            history += [
                {"role": "user", "content": f"Note {i}: " + "the sky is blue. " * 20},
                {"role": "assistant", "content": f"Noted {i}."},
            ]
        history.append({"role": "user", "content": "What colour is the sky?"})
        args: dict[str, Any] = {
            "model": "openai/dead",
            "api_base": f"http://127.0.0.1:{free_port()}/v1",
            "api_key": "none",
            "num_retries": 0,
            "max_retries": 0,
            "messages": history,
            "max_tokens": 16,
            "temperature": 0,
            "fallbacks": [
                {
                    "model": "openai/smollm2",
                    "api_base": llama_server.base_url,
                    "api_key": key,
                }
            ],
        }
        first = calls.completion(**args)
        assert first.choices[0].message.content is not None
        assert first.usage.prompt_tokens > 0  # SmolLM2 counts more than o200k does
        second = calls.completion(**args)  # fitted to the calibrated budget
        assert calls.calibration("openai/smollm2").observed == 2
        assert second.usage.prompt_tokens <= 1_200 - 16
