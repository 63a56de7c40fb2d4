"""Models' windows in the proxy: ``--model-window`` names, unknown models said."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from tests.proxy.conftest import MakeRig
from tests.proxy.test_behaviour import _post

from contextwindow.errors import ArgumentTypeError, ArgumentValueError
from contextwindow.models import DEFAULT_MODEL_INFO, Registry, get_model
from contextwindow.proxy import FitterConfig, _fitter
from contextwindow.proxy._fitter import Fitter, Plan
from contextwindow.proxy._shapes import APIS

CHAT = APIS["/v1/chat/completions"]
MESSAGES = [
    {"role": "user", "content": "word " * 200},
    {"role": "assistant", "content": "ok " * 200},
    {"role": "user", "content": "next"},
]


def _plan(fitter: Fitter, model: str) -> Plan:
    body: dict[str, Any] = {"model": model, "messages": MESSAGES, "max_tokens": 10}
    return fitter.plan(CHAT, json.dumps(body).encode(), body)


def _unknown_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [
        json.loads(r.getMessage())
        for r in caplog.records
        if r.name == "contextwindow.proxy.models"
    ]


class TestModelWindow:
    @pytest.mark.parametrize(
        "model",
        [
            "gpt-4o",
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
        """windows={"gpt-4o": 300} holds for the spellings the registry resolves
        as that model: case, a provider's prefix, a date."""
        plan = _plan(Fitter(FitterConfig(windows={"gpt-4o": 300}), None), model)
        assert plan.rewritten
        assert plan.tokens_forwarded <= 300 < plan.tokens_in
        assert plan.window == 300

    def test_the_exact_string_first(self) -> None:
        """A name given as the request spells it wins over one read alike."""
        fitter = Fitter(FitterConfig(windows={"gpt-4o": 300, "GPT-4o": 500}), None)
        assert _plan(fitter, "GPT-4o").window == 500
        assert _plan(fitter, "gpt-4o").window == 300

    @pytest.mark.parametrize("model", ["gpt-4o-mini", "gpt-4", "claude-sonnet-4-5"])
    def test_not_for_another_model(self, model: str) -> None:
        """Another model (gpt-4o-mini holds gpt-4o's name) keeps its own window."""
        fitter = Fitter(FitterConfig(windows={"gpt-4o": 300}), None)
        assert _plan(fitter, model).window == get_model(model).context_window

    def test_an_alias_by_the_model_it_names(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A name the registry resolves to a configured model's (an alias) gets
        that model's window."""
        reg = Registry()
        reg.alias("house-model", "gpt-4o")
        monkeypatch.setattr(_fitter, "registry", reg)
        fitter = Fitter(FitterConfig(windows={"gpt-4o": 300, "my-dep": 9}), None)
        assert fitter.window_of("house-model") == (300, True)
        assert fitter.window_of("no-such-model")[0] == DEFAULT_MODEL_INFO.context_window

    def test_the_litellm_adapter_reads_the_names_alike(self) -> None:
        """The LiteLLM adapter's windows= gives each name the window the proxy
        gives it: one rule for both."""
        from contextwindow.integrations.litellm import FittingCompletion

        windows = {"gpt-4o": 300, "GPT-4o": 500, "My-Deployment": 900}
        fitter = Fitter(FitterConfig(windows=windows), None)
        calls = FittingCompletion(windows=windows)
        for model in (
            "gpt-4o",
            "GPT-4o",
            "openai/gpt-4o",
            "gpt-4o-2024-08-06",
            "my-deployment",
            "azure/My-Deployment",
        ):
            assert calls.window(model) == fitter.window_of(model)[0], model

    def test_an_unknown_models_name(self) -> None:
        """An unknown model's name matches as well, in any case; its window is
        the configured one, and the plan says the registry does not know it."""
        fitter = Fitter(FitterConfig(windows={"My-Deployment": 128_000}), None)
        plan = _plan(fitter, "my-deployment")
        assert (plan.window, plan.model_known) == (128_000, False)

    @pytest.mark.parametrize(
        ("windows", "error", "words"),
        [
            ({"gpt-4o": 0}, ArgumentValueError, "windows['gpt-4o']: expected an int"),
            ({"gpt-4o": "300"}, ArgumentTypeError, "windows['gpt-4o']"),
            ({1: 300}, ArgumentTypeError, "windows: expected model names"),
            ({"": 300}, ArgumentValueError, "windows"),
        ],
    )
    def test_a_bad_window_fails_at_once(
        self, windows: Any, error: type[Exception], words: str
    ) -> None:
        """A window that is no int >= 1, or a name that is no name, is refused
        when the fitter is made, named."""
        with pytest.raises(error, match=words.replace("[", r"\[")):
            Fitter(FitterConfig(windows=windows), None)


class TestUnknownModel:
    def test_the_plan_says_the_default_window_was_assumed(self) -> None:
        """An unknown model's plan says so, and which window it was fitted in."""
        fitter = Fitter(FitterConfig(), None)
        plan = _plan(fitter, "my-gpt4o-deployment")
        assert (plan.model_known, plan.window) == (False, 8192)
        known = _plan(fitter, "gpt-4o")
        assert (known.model_known, known.window) == (True, 128_000)

    def test_warned_once_per_name(self, caplog: pytest.LogCaptureFixture) -> None:
        """The first request for an unknown model logs one warning, a JSON line
        naming it and the window assumed; its next requests, a known model and
        one whose window is configured log none."""
        caplog.set_level(logging.INFO, logger="contextwindow.proxy")
        fitter = Fitter(FitterConfig(windows={"configured-dep": 4096}), None)
        for model in ("dep-a", "dep-a", "gpt-4o", "dep-b", "configured-dep", "dep-a"):
            _plan(fitter, model)
        lines = _unknown_lines(caplog)
        assert [(d["event"], d["model"], d["window"]) for d in lines] == [
            ("unknown_model", "dep-a", 8192),
            ("unknown_model", "dep-b", 8192),
        ]
        assert "default window of 8,192 tokens" in lines[0]["message"]
        assert "--model-window" in lines[0]["message"]
        assert {r.levelno for r in caplog.records} == {logging.WARNING}

    def test_through_the_proxy(
        self, make_rig: MakeRig, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The request's log line and response say the model was unknown and the
        window assumed; the warning is a line of its own, beside the request's."""
        caplog.set_level(logging.INFO, logger="contextwindow.proxy")
        with make_rig(fitting=FitterConfig(), store=None) as rig:
            body = {"model": "my-gpt4o-deployment", "messages": MESSAGES}
            r = _post(rig, "/v1/chat/completions", body)
            assert r.status_code == 200
            assert r.headers["x-contextwindow-model"] == "unknown"
            assert r.headers["x-contextwindow-window"] == "8192"
            r = _post(rig, "/v1/chat/completions", body | {"model": "gpt-4o"})
            assert "x-contextwindow-model" not in r.headers
            assert r.headers["x-contextwindow-window"] == "128000"
        requests = [
            json.loads(r.getMessage())
            for r in caplog.records
            if r.name == "contextwindow.proxy"
        ]
        assert [(d["model"], d["model_known"], d["window"]) for d in requests] == [
            ("my-gpt4o-deployment", False, 8192),
            ("gpt-4o", True, 128_000),
        ]
        assert [d["model"] for d in _unknown_lines(caplog)] == ["my-gpt4o-deployment"]

    def test_a_context_length_error_says_the_window_was_assumed(
        self, make_rig: MakeRig, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Pinned content over the assumed window: the 400 and its log line say
        the model was unknown and its window the default."""
        caplog.set_level(logging.INFO, logger="contextwindow.proxy")
        with make_rig(fitting=FitterConfig(), store=None) as rig:
            body = {
                "model": "my-gpt4o-deployment",
                "messages": [{"role": "user", "content": "word " * 10_000}],
            }
            r = _post(rig, "/v1/chat/completions", body)
        assert r.status_code == 400
        message = r.json()["error"]["message"]
        assert "an unknown model: the default window of 8,192 tokens" in message
        (line,) = [
            r.getMessage() for r in caplog.records if r.name == "contextwindow.proxy"
        ]
        record = json.loads(line)
        assert (record["status"], record["model_known"], record["window"]) == (
            400,
            False,
            8192,
        )
