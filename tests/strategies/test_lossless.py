from __future__ import annotations

import json

import pytest

from contextwindow.handles import ORIGIN_KEY, handle_of, originals
from contextwindow.messages import Message, ToolCall
from contextwindow.strategies import Budget, CompactLossless
from contextwindow.strategies.lossless import (
    compact_json,
    compact_message,
    squeeze_repeats,
    squeeze_whitespace,
)
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens import BPETokenizer, TokenCounter

O200K = BPETokenizer("o200k_base")


def budget(limit: int = 0) -> Budget:
    return Budget(limit, TokenCounter(O200K, "openai"))


def exchange(cid: str, output: str, args: str = "{}") -> list[Message]:
    return [
        Message.assistant(tool_calls=[ToolCall(cid, "run", args)]),
        Message.tool(cid, output),
    ]


class TestCompactJson:
    def test_compacts_what_round_trips(self) -> None:
        """Pretty JSON becomes compact JSON holding the same value."""
        pretty = json.dumps({"a": [1, 2.5, None], "b": {"c": "é"}}, indent=2)
        out = compact_json(pretty)
        assert out is not None
        assert json.loads(out) == json.loads(pretty)
        assert len(out) < len(pretty)

    def test_refuses_what_would_lose(self) -> None:
        """Repeated keys, non-JSON, scalars and compact JSON are left alone."""
        assert compact_json('{"a": 1, "a": 2}') is None
        assert compact_json("[1, 2") is None
        assert compact_json('"just a string"') is None
        assert compact_json('{"a":1}') is None

    @pytest.mark.parametrize(
        "text",
        [
            '{\n  "n": 1e400,\n  "ok": true\n}',
            '{\n  "max": 1.7976931348623157e309,\n  "ok": true\n}',
            "[ -1e400 ]",
            '{ "a": NaN }',
            '{ "a": Infinity }',
        ],
    )
    def test_never_writes_infinity(self, text: str) -> None:
        """JSON no double holds (or no JSON at all) is left as it was."""
        assert compact_json(text) is None

    def test_a_number_too_small_for_a_double_is_a_number(self) -> None:
        """1e-400 reads as 0.0, a number: written as one."""
        assert compact_json('{ "n": 1e-400 }') == '{"n":0.0}'

    def test_a_lone_surrogate_escape_stays_an_escape(self) -> None:
        """``\\ud83d`` (a string cut inside an emoji) is written as it came, so
        the compact text is UTF-8 as the original was; other text stays as is."""
        pretty = '{\n  "name": "cut emoji \\ud83d",\n  "é": "\\u00e9 \\ud83d\\ude00"\n}'
        out = compact_json(pretty)
        assert out == '{"name":"cut emoji \\ud83d","é":"é \U0001f600"}'
        out.encode("utf-8")  # no error
        assert json.loads(out) == json.loads(pretty)


class TestSqueeze:
    def test_repeats_become_a_count(self) -> None:
        """Three or more identical lines become the line and a count."""
        assert squeeze_repeats("a\nb\nb\nc") is None
        assert squeeze_repeats("x\nx\nx") == "x\n[previous line repeated 2 more times]"

    def test_whitespace(self) -> None:
        """Trailing blanks go; runs of blank lines become one."""
        assert squeeze_whitespace("a \t\n\n\n\nb") == "a\n\nb"
        assert squeeze_whitespace("a\n\nb") is None


class TestCompactLossless:
    def test_compacts_results_and_arguments_with_savings(self) -> None:
        """Each changed message is one `compacted` change naming each saving."""
        conv = [
            Message.user("go"),
            *exchange("c1", json.dumps({"rows": list(range(50))}, indent=2)),
            *exchange("c2", "\n".join(["waiting"] * 30), '{"n": 1,  "m": 2}'),
            Message.user("?"),
        ]
        fitted = CompactLossless()(conv, budget())
        kinds = [(c.kind, c.index) for c in fitted.report.changes]
        assert kinds == [("compacted", 2), ("compacted", 3), ("compacted", 4)]
        whats = [c.what for c in fitted.report.changes]
        assert whats[0].startswith("tool result: run (json ")
        assert whats[1].startswith("tool call: run (json ")
        assert whats[2].startswith("tool result: run (repeats ")
        assert json.loads(fitted.messages[2].text) == {"rows": list(range(50))}
        assert fitted.messages[3].tool_calls[0].input == {"n": 1, "m": 2}
        r = fitted.report
        assert r.tokens_before - sum(c.saved for c in r.changes) == r.tokens_after

    def test_keeps_a_handle_to_the_original(self) -> None:
        """The rewritten message's handle recalls the message it came from."""
        conv = [Message.user("go"), *exchange("c1", "ok\n" * 40), Message.user("?")]
        out = CompactLossless()(conv, budget()).messages
        assert ORIGIN_KEY in out[2].meta
        assert originals(conv, handle_of(out[2])) == [conv[2]]

    def test_pinned_and_fitting_left_alone(self) -> None:
        """Nothing changes in a pinned message, or once the budget is met."""
        conv = [Message.user("go"), *exchange("c1", "ok\n" * 40), Message.user("?")]
        conv[2] = Message.tool("c1", "ok\n" * 40, pinned=True)
        assert CompactLossless()(conv, budget()).report.changes == ()
        assert CompactLossless()(conv, budget(10**6)).report.changes == ()

    def test_lossless_fit_keeps_a_lone_surrogate_escape(self) -> None:
        """A result and arguments holding a surrogate escape stay UTF-8 text."""
        result = '{\n  "name": "cut emoji \\ud83d",\n  "n": 1\n}'
        conv = [
            Message.user("go"),
            *exchange("c1", result, '{ "text":  "cut \\udc00" }'),
            Message.user("?"),
        ]
        fitted = CompactLossless()(conv, budget())
        assert [c.index for c in fitted.report.changes] == [1, 2]
        assert fitted.messages[1].tool_calls[0].arguments == '{"text":"cut \\udc00"}'
        assert fitted.messages[2].text == '{"name":"cut emoji \\ud83d","n":1}'
        for m in fitted.messages:
            m.text.encode("utf-8")
            for call in m.tool_calls:
                call.arguments.encode("utf-8")

    def test_compact_message_is_pure(self) -> None:
        """The per-message rewrite depends on the message alone (memoisable)."""
        m = Message.tool("c1", "x\n" * 10)
        a, sa = compact_message(m, FakeTokenizer().count)
        b, sb = compact_message(m, FakeTokenizer().count)
        assert (a, sa) == (b, sb)
        assert a is not m
        same = Message.tool("c1", "nothing to do")
        assert compact_message(same, FakeTokenizer().count) == (same, {})
