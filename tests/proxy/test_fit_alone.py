"""A request fitted on its own (no store, or a fork past the last): its body.

With no store each request is fitted alone, and Chat's messages and
Responses' items come back from ``fit`` as a list: the body must hold it in
its conversation field (the fitted body once went upstream as
``{"model": "gpt-4o"}``, the conversation deleted, its log saying 658 tokens).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from contextwindow.proxy import FitterConfig
from contextwindow.proxy._fitter import Fitter
from contextwindow.proxy._shapes import APIS

TURNS = [
    {"role": "user", "content": "word " * 200},
    {"role": "assistant", "content": "ok " * 200},
    {"role": "user", "content": "next"},
]


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/v1/chat/completions", "messages"),
        ("/v1/responses", "input"),
        ("/v1/messages", "messages"),
    ],
)
def test_the_fitted_conversation_is_in_the_body(path: str, field: str) -> None:
    api = APIS[path]
    body: dict[str, Any] = {"model": "gpt-4o", field: TURNS, "max_tokens": 10}
    plan = Fitter(FitterConfig(windows={"gpt-4o": 300}), None).plan(
        api, json.dumps(body).encode(), body
    )
    assert plan.rewritten
    sent = json.loads(plan.body)
    assert sent["model"] == "gpt-4o"
    assert sent[field], "the conversation went missing"
    assert sent[field][-1]["content"] in (
        "next",
        [{"type": "input_text", "text": "next"}],
    )
    assert plan.tokens_forwarded <= 300
