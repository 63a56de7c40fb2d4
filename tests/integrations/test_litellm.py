"""The LiteLLM wrapper, real: LiteLLM's mock replies and the llama.cpp server."""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any, ClassVar

import pytest
from tests.llama import LlamaServer, free_port

from contextwindow import _windows, get_model, get_tokenizer, problems
from contextwindow.errors import ArgumentError, ContextWindowError, InvalidMessageError
from contextwindow.formats import from_openai
from contextwindow.integrations.litellm import (
    FittingCompletion,
    _litellm,
    acompletion,
    completion,
)
from contextwindow.models import Registry
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


SCHEMA: dict[str, Any] = {
    "name": "lookup",
    "description": "Look things up. " * 400,
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
}


def long_history() -> list[dict[str, Any]]:
    turns = [
        {"role": "user", "content": f"turn {i} " + "alpha beta " * 100}
        for i in range(60)
    ]
    return [*turns, {"role": "user", "content": "go"}]


class TestSchemasCounted:
    def sent_size(self, sent: Sent, **extra: Any) -> int:
        calls = FittingCompletion(windows={"openai/local": 8_000})
        calls.completion(
            model="openai/local",
            messages=long_history(),
            max_tokens=1_000,
            mock_response="ok",
            **extra,
        )
        return COUNTER.messages(from_openai(sent.calls[-1][1]))

    def test_legacy_functions_cost_what_tools_cost(self, sent: Sent) -> None:
        """functions= leaves the messages the room tools= leaves them."""
        with_tools = self.sent_size(
            sent, tools=[{"type": "function", "function": SCHEMA}]
        )
        alone = self.sent_size(sent)
        assert with_tools < alone - 1_000  # the schema is some 1,600 tokens
        assert self.sent_size(sent, functions=[SCHEMA]) == with_tools

    def test_a_response_format_schema_is_counted_as_its_tool(self, sent: Sent) -> None:
        """A json_schema response_format takes the room of the same schema as a
        tool (what LiteLLM sends Anthropic); json_object alone costs nothing."""
        fmt = {
            "type": "json_schema",
            "json_schema": {
                "name": SCHEMA["name"],
                "description": SCHEMA["description"],
                "schema": SCHEMA["parameters"],
            },
        }
        with_tools = self.sent_size(
            sent, tools=[{"type": "function", "function": SCHEMA}]
        )
        assert self.sent_size(sent, response_format=fmt) == with_tools
        alone = self.sent_size(sent)
        assert self.sent_size(sent, response_format={"type": "json_object"}) == alone

    def test_bad_schemas_are_named(self) -> None:
        """A malformed function or response schema names where it is."""
        calls = FittingCompletion(windows={"openai/local": 8_000})
        bad: dict[str, Any] = {"name": "f", "parameters": {"properties": []}}
        with pytest.raises(
            InvalidMessageError, match=r"^functions\[0\]\.parameters\.properties"
        ):
            calls.completion(
                model="openai/local",
                messages=[{"role": "user", "content": "hi"}],
                functions=[bad],
                mock_response="ok",
            )
        fmt = {"type": "json_schema", "json_schema": {"name": "A", "schema": [1]}}
        with pytest.raises(
            InvalidMessageError, match=r"^response_format\.json_schema\.schema: "
        ):
            calls.completion(
                model="openai/local",
                messages=[{"role": "user", "content": "hi"}],
                response_format=fmt,
                mock_response="ok",
            )


class TestProviderRules:
    HISTORY: ClassVar[list[dict[str, Any]]] = [
        {"role": "system", "content": "Be brief."},
        {"role": "assistant", "content": "Hello, how can I help?"},
        {"role": "user", "content": "hi"},
    ]

    @pytest.mark.parametrize(
        ("model", "given"),
        [
            ("bedrock/meta.llama3-8b-instruct-v1:0", None),
            ("bedrock/converse/mistral.mistral-large-2407-v1:0", None),
            ("gemini/gemini-2.0-flash", None),
            ("vertex_ai/gemini-2.0-flash", None),
            ("my-local-llama", "bedrock"),
        ],
    )
    def test_user_first_providers_get_a_user_turn_first(
        self, sent: Sent, model: str, given: str | None
    ) -> None:
        """Bedrock (every model), Gemini and Vertex AI open on a user turn."""
        calls = FittingCompletion(windows={model: 8_000})
        extra = {} if given is None else {"custom_llm_provider": given}
        calls.completion(
            model=model, messages=self.HISTORY, mock_response="ok", **extra
        )
        ms = sent.calls[-1][1]
        assert [m["role"] for m in ms][:3] == ["system", "user", "assistant"]
        assert problems(from_openai(ms), "anthropic") == ()

    def test_openai_keeps_an_assistant_turn_first(self, sent: Sent) -> None:
        """OpenAI's rules allow an assistant turn first: nothing is added."""
        calls = FittingCompletion(windows={"openai/local": 8_000})
        calls.completion(
            model="openai/local", messages=self.HISTORY, mock_response="ok"
        )
        assert [m["role"] for m in sent.calls[-1][1]] == ["system", "assistant", "user"]


class TestWindows:
    @pytest.mark.parametrize("bad", ["big", -5, 0, True, 1.5, None])
    def test_a_bad_window_is_named(self, bad: object) -> None:
        """Each value of windows= is an int >= 1, named by its model."""
        with pytest.raises(
            ArgumentError, match=r"^windows\['m'\]: expected an int >= 1"
        ):
            FittingCompletion(windows={"m": bad})  # type: ignore[dict-item]  # the wrong type on purpose

    def test_a_window_overrides_the_registry(self) -> None:
        """windows= wins over the registry for a model it knows."""
        assert FittingCompletion(windows={"gpt-4o": 1_000}).window("gpt-4o") == 1_000

    @pytest.mark.parametrize(
        "model",
        [
            "GPT-4o",
            " gpt-4o ",
            "openai/gpt-4o",
            "azure/gpt-4o",
            "gpt-4o-2024-08-06",
            "gpt-4o-latest",
        ],
    )
    def test_a_window_holds_for_names_the_registry_reads_alike(
        self, model: str
    ) -> None:
        """windows={"gpt-4o": ...} holds for the spellings the registry resolves
        as that model (case, a provider's prefix, a date), as the proxy's
        --model-window does."""
        assert FittingCompletion(windows={"gpt-4o": 1_000}).window(model) == 1_000

    def test_the_exact_string_first_and_not_another_model(self) -> None:
        """The name as given wins over one read alike; another model (whose
        name holds gpt-4o's) keeps its own window."""
        calls = FittingCompletion(windows={"gpt-4o": 1_000, "GPT-4o": 2_000})
        assert (calls.window("GPT-4o"), calls.window("gpt-4o")) == (2_000, 1_000)
        mini = get_model("gpt-4o-mini").context_window
        assert calls.window("gpt-4o-mini") == mini

    def test_an_unknown_models_name_in_another_case(self) -> None:
        """A deployment's name neither registry knows matches in any case and
        with a provider's prefix, without asking LiteLLM."""
        calls = FittingCompletion(windows={"My-Deployment": 12_000})
        assert calls.window("my-deployment") == 12_000
        assert calls.window("openai/my-deployment") == 12_000

    def test_an_alias_by_the_model_it_names(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A name the registry resolves to a configured model's (an alias) gets
        that model's window."""
        reg = Registry()
        reg.alias("house-model", "gpt-4o")
        monkeypatch.setattr(_windows, "registry", reg)
        calls = FittingCompletion(windows={"gpt-4o": 1_000})
        assert calls.window("house-model") == 1_000


class TestQuiet:
    def test_an_unknown_model_prints_nothing(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """LiteLLM's 'Provider List' banner is not printed; its setting is kept."""
        litellm = _litellm()
        before = litellm.suppress_debug_info
        with pytest.raises(ContextWindowError, match="windows="):
            FittingCompletion().window("unknown-model-xyz")
        assert capsys.readouterr().out == ""
        assert litellm.suppress_debug_info == before

    def test_a_mocked_reply_teaches_calibration_nothing(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """mock_response usage is LiteLLM's estimate: not observed, no warning."""
        calls = FittingCompletion()
        with caplog.at_level(logging.DEBUG, logger="contextwindow"):
            calls.completion(
                model="gpt-4o", messages=agent_history(3), mock_response="ok"
            )
        assert calls.calibration("gpt-4o").observed == 0
        assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
