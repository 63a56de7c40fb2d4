from __future__ import annotations

import dataclasses
import enum
from typing import Any

import pytest

from contextwindow.errors import ArgumentError, ArgumentTypeError, ArgumentValueError
from contextwindow.messages import (
    Image,
    Message,
    Opaque,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    ToolSpec,
    units,
)

# Untyped aliases: the tests below pass what the types forbid, on purpose.
M: Any = Message
TR: Any = ToolResult
T: Any = Text
Img: Any = Image
TH: Any = Thinking
TS: Any = ToolSpec


def _call(cid: str, name: str = "f") -> ToolCall:
    return ToolCall(cid, name, "{}")


class TestMessage:
    def test_frozen(self) -> None:
        """Messages cannot be changed in place."""
        m = Message.user("hi")
        with pytest.raises(dataclasses.FrozenInstanceError):
            m.role = "assistant"  # type: ignore[misc]  # the point of the test

    def test_equality_ignores_id_and_meta(self) -> None:
        """Equality and hashing are about content, not identity."""
        a = Message.user("hi", meta={"x": 1})
        b = Message.user("hi")
        assert a.id != b.id
        assert a == b
        assert hash(a) == hash(b)
        assert Message.user("hi") != Message.user("ho")

    def test_the_hash_kept_is_the_content_hash(self) -> None:
        """A message keeps its hash; a copy, a pickle or a replace computes its own."""
        import copy
        import pickle

        m = Message.assistant("x", tool_calls=[_call("c1")], name="ada", pinned=True)
        want = hash((m.role, m.parts, m.name, m.agent, m.pinned))
        assert hash(m) == want
        assert m._hash == want  # kept  # pyright: ignore[reportPrivateUsage]
        assert hash(m) == want
        back = pickle.loads(pickle.dumps(m))
        assert not hasattr(back, "_hash")  # a hash of strings is the run's own
        assert back == m
        assert hash(back) == want
        assert hash(copy.deepcopy(m)) == want
        other = dataclasses.replace(m, name="bob")
        assert other != m
        assert hash(other) != want
        assert [f.name for f in dataclasses.fields(m)] == [
            "role", "parts", "name", "agent", "pinned", "id", "meta"
        ]  # fmt: skip

    def test_constructors(self) -> None:
        """The role constructors build the expected parts."""
        call = _call("c1")
        a = Message.assistant("thinking aloud", tool_calls=[call])
        assert a.parts == (Text("thinking aloud"), call)
        assert a.tool_calls == (call,)
        t = Message.tool("c1", "out", is_error=True, name="f")
        assert t.tool_results == (ToolResult("c1", "out", is_error=True, name="f"),)
        assert Message.user("").parts == ()

    def test_text_joins_text_and_results(self) -> None:
        """`text` joins text parts and tool-result text, skipping other parts."""
        m = Message("user", (Text("a"), Image("https://x/y.png"), Text("b")))
        assert m.text == "a\nb"
        assert Message.tool("c", (Text("x"), Text("y"))).text == "x\ny"

    def test_with_parts_keeps_identity(self) -> None:
        """`with_parts` keeps id and meta."""
        m = Message.user("a", meta={"k": 1})
        n = m.with_parts([Text("b")])
        assert (n.id, n.meta, n.text) == (m.id, m.meta, "b")

    def test_image_media_type(self) -> None:
        """A data URI names its media type; a URL does not."""
        assert Image("data:image/png;base64,AAAA").media_type == "image/png"
        assert Image("https://x/y.png").media_type is None

    def test_tool_call_input(self) -> None:
        """Arguments parse from JSON; empty arguments are an empty dict."""
        assert ToolCall("c", "f", '{"a": [1]}').input == {"a": [1]}
        assert ToolCall("c", "f", "").input == {}

    def test_tool_call_arguments_checked(self) -> None:
        """Invalid JSON is refused when built; a mapping is serialised compactly."""
        with pytest.raises(ArgumentValueError, match=r"^arguments: expected JSON"):
            ToolCall("c", "f", "{nope")
        with pytest.raises(ArgumentTypeError, match=r"^arguments: "):
            ToolCall("c", "f", 5)  # type: ignore[arg-type]  # on purpose
        call = ToolCall("c", "f", {"q": "tides", "n": 2})  # type: ignore[arg-type]  # a mapping is taken
        assert call.arguments == '{"q":"tides","n":2}'
        assert call.input == {"q": "tides", "n": 2}
        with pytest.raises(ArgumentValueError, match=r"^arguments: "):
            ToolCall("c", "f", {"x": object()})  # type: ignore[arg-type]  # on purpose

    @pytest.mark.parametrize(
        ("build", "argument"),
        [
            (lambda: M.user(None), "content"),
            (lambda: M("bot", ()), "role"),
            (lambda: M.tool(None, "x"), "call_id"),
            (lambda: M.system(3), "text"),
            (lambda: M("user", ("hi",)), "parts[0]"),
            (lambda: M.user("hi", pinned=1), "pinned"),
            (lambda: M.user("hi", meta=[]), "meta"),
            (lambda: M.tool("c", None), "content"),
            (lambda: TR("c", ("text",)), "content[0]"),
            (lambda: T(None), "text"),
            (lambda: Img("u", width=-1), "width"),
            (lambda: TH("t", redacted="no"), "redacted"),
            (lambda: TS(""), "name"),
        ],
    )
    def test_bad_parts_refused_when_built(self, build: Any, argument: str) -> None:
        """A message or part that is not one is refused at once, naming the field."""
        with pytest.raises(ArgumentError) as info:
            build()
        assert info.value.argument == argument
        assert str(info.value).startswith(f"{argument}: expected ")
        assert isinstance(info.value, (TypeError, ValueError))

    def test_parts_from_any_iterable(self) -> None:
        """Parts and tool calls are taken from a generator, stored as a tuple."""
        m = Message("user", (p for p in (Text("a"), Text("b"))))  # type: ignore[arg-type]  # a generator is taken
        assert m.parts == (Text("a"), Text("b"))
        calls = Message.assistant(tool_calls=(ToolCall(str(i), "f") for i in range(2)))
        assert len(calls.tool_calls) == 2

    def test_tool_result_images(self) -> None:
        """A result's images are its image parts; a string result has none."""
        img = Image("https://x/chart.png")
        result = ToolResult("c", (Text("see"), img, Text("above")))
        assert result.images == (img,)
        assert result.text == "see\nabove"
        assert ToolResult("c", "plain").images == ()
        assert ToolResult("c", "plain").text == "plain"

    def test_thinking_defaults(self) -> None:
        """Thinking parts are visible and unsigned by default."""
        assert Thinking("x") == Thinking("x", None, False)


class TestUnits:
    def test_partition_and_kinds(self) -> None:
        """Units cover every message once, in order, with the right kinds."""
        conv = [
            Message.system("s"),
            Message.user("u"),
            Message.assistant(tool_calls=[_call("a"), _call("b")]),
            Message.tool("b", "2"),
            Message.tool("a", "1"),
            Message.assistant("done"),
        ]
        got = units(conv)
        assert [(u.kind, u.start, u.stop) for u in got] == [
            ("system", 0, 1),
            ("message", 1, 2),
            ("tool_exchange", 2, 5),
            ("message", 5, 6),
        ]
        assert all(u.complete for u in got)

    def test_reused_ids_pair_by_position(self) -> None:
        """A call id reused in a later exchange pairs with the result after it."""
        conv = [
            Message.assistant(tool_calls=[_call("x")]),
            Message.tool("x", "first"),
            Message.user("again"),
            Message.assistant(tool_calls=[_call("x")]),
            Message.tool("x", "second"),
        ]
        got = units(conv)
        assert [(u.kind, u.start, u.stop) for u in got] == [
            ("tool_exchange", 0, 2),
            ("message", 2, 3),
            ("tool_exchange", 3, 5),
        ]

    def test_duplicate_ids_within_one_message(self) -> None:
        """Two parallel calls with one id need two results."""
        conv = [
            Message.assistant(tool_calls=[_call("x"), _call("x")]),
            Message.tool("x", "1"),
        ]
        (u,) = units(conv)
        assert u.unanswered == (1,)
        assert not u.complete
        conv.append(Message.tool("x", "2"))
        (u,) = units(conv)
        assert u.complete
        assert len(u) == 3

    def test_unanswered_call(self) -> None:
        """A call with no result is reported by its position."""
        conv = [
            Message.assistant(tool_calls=[_call("a"), _call("b")]),
            Message.tool("a", "1"),
            Message.user("next"),
        ]
        got = units(conv)
        assert got[0].unanswered == (1,)
        assert (got[0].start, got[0].stop) == (0, 2)

    def test_orphan_results(self) -> None:
        """Tool messages answering nothing are grouped as orphans."""
        conv = [
            Message.user("u"),
            Message.tool("zz", "?"),
            Message.tool("yy", "?"),
            Message.assistant(tool_calls=[_call("a")]),
            Message.tool("a", "ok"),
            Message.tool("a", "again"),
        ]
        got = units(conv)
        assert [(u.kind, u.start, u.stop) for u in got] == [
            ("message", 1 - 1, 1),
            ("orphan_results", 1, 3),
            ("tool_exchange", 3, 5),
            ("orphan_results", 5, 6),
        ]
        assert not got[1].complete

    def test_one_tool_message_with_several_results(self) -> None:
        """A tool message may answer several calls at once (Anthropic's shape)."""
        results = (ToolResult("a", "1"), ToolResult("b", "2"))
        conv = [
            Message.assistant(tool_calls=[_call("a"), _call("b")]),
            Message("tool", results),
        ]
        (u,) = units(conv)
        assert u.complete
        assert len(u) == 2

    def test_partial_match_ends_exchange(self) -> None:
        """A tool message with one unknown result is not part of the exchange."""
        conv = [
            Message.assistant(tool_calls=[_call("a")]),
            Message("tool", (ToolResult("a", "1"), ToolResult("q", "?"))),
        ]
        got = units(conv)
        assert [u.kind for u in got] == ["tool_exchange", "orphan_results"]
        assert got[0].unanswered == (0,)

    def test_tool_message_without_results_ends_exchange(self) -> None:
        """An empty tool message answers nothing: the call stays unanswered."""
        conv = [Message.assistant(tool_calls=[_call("a")]), Message("tool", ())]
        got = units(conv)
        assert [(u.kind, u.start, u.stop) for u in got] == [
            ("tool_exchange", 0, 1),
            ("orphan_results", 1, 2),
        ]
        assert got[0].unanswered == (0,)

    def test_empty(self) -> None:
        """No messages, no units."""
        assert units([]) == ()


class TestWithParts:
    @pytest.mark.parametrize("bad", [None, 5, "abc", Message.user("x")])
    def test_takes_an_iterable_of_parts(self, bad: Any) -> None:
        """``None``, a number, a str or a Message is named, not a raw TypeError."""
        with pytest.raises(ArgumentTypeError, match=r"^parts: expected an iterable"):
            Message.user("hi").with_parts(bad)

    def test_keeps_identity(self) -> None:
        """Any iterable of parts (a generator) gives a copy with the same id."""
        m = Message.user("hi", name="ada")
        copy = m.with_parts(p for p in [Text("bye")])
        assert (copy.text, copy.id, copy.name) == ("bye", m.id, "ada")


def _deep_mapping(depth: int) -> dict[str, Any]:
    top: dict[str, Any] = {}
    inner = top
    for _ in range(depth):
        inner["a"] = {}
        inner = inner["a"]
    return top


class TestToolCallJSON:
    @pytest.mark.parametrize(
        ("text", "constant"),
        [
            ('{"a": NaN}', "NaN"),
            ('{"a": Infinity}', "Infinity"),
            ("[-Infinity]", "-Infinity"),
        ],
    )
    def test_nan_and_infinity_are_not_json(self, text: str, constant: str) -> None:
        """Arguments holding NaN or Infinity are refused, the constant named."""
        with pytest.raises(ArgumentValueError, match=f"{constant} is not JSON") as info:
            ToolCall("c", "f", text)
        assert info.value.argument == "arguments"

    @pytest.mark.parametrize("number", [float("nan"), float("inf"), -float("inf")])
    def test_a_mapping_holding_nan_is_refused(self, number: float) -> None:
        """A mapping with a float JSON cannot hold is refused, never written as NaN."""
        with pytest.raises(ArgumentValueError) as info:
            ToolCall("c", "f", {"a": [number]})  # type: ignore[arg-type]  # a mapping is taken
        assert info.value.argument == "arguments"

    def test_nested_too_deeply(self) -> None:
        """JSON nested past the stack (text or mapping): an argument error."""
        text = '{"a":' * 5000 + "1" + "}" * 5000
        for value in (text, _deep_mapping(5000)):
            with pytest.raises(ArgumentValueError, match="nested too deeply") as info:
                ToolCall("c", "f", value)  # type: ignore[arg-type]  # a mapping is taken
            assert info.value.argument == "arguments"

    def test_json_is_still_taken(self) -> None:
        """Plain JSON, and numbers that merely look large, are taken as before."""
        assert ToolCall("c", "f", '{"a": 1e308, "b": "NaN"}').input == {
            "a": 1e308,
            "b": "NaN",
        }
        assert ToolCall("c", "f", {"x": 1.5}).arguments == '{"x":1.5}'  # type: ignore[arg-type]  # a mapping is taken

    @pytest.mark.parametrize(
        "text", ['{"n": 1e400}', "[-1e400]", '{"n": 1' + "0" * 400 + ".5}"]
    )
    def test_a_number_past_a_double_is_refused(self, text: str) -> None:
        """A literal float() reads as an infinity is refused as Infinity is."""
        with pytest.raises(ArgumentValueError, match="past a double's range") as info:
            ToolCall("c", "f", text)
        assert info.value.argument == "arguments"

    def test_a_number_too_small_for_a_double_is_taken(self) -> None:
        """A literal that underflows reads as 0.0: still a number, taken."""
        assert ToolCall("c", "f", '{"n": 1e-400}').input == {"n": 0.0}


class TestOpaqueJSON:
    def test_nan_is_refused(self) -> None:
        """An opaque block holding NaN (as text or as a float) is refused."""
        with pytest.raises(ArgumentValueError, match="NaN is not JSON"):
            Opaque("openai", '{"type": "file", "n": NaN}')
        with pytest.raises(ArgumentValueError) as info:
            Opaque.of("openai", {"type": "file", "n": float("nan")})
        assert info.value.argument == "raw"

    def test_nested_too_deeply(self) -> None:
        """A block nested past the stack: an argument error, no RecursionError."""
        text = '{"a":' * 5000 + "1" + "}" * 5000
        for value in (text, _deep_mapping(5000)):
            with pytest.raises(ArgumentValueError, match="nested too deeply"):
                Opaque("anthropic", value)  # type: ignore[arg-type]  # a mapping is taken

    def test_a_number_past_a_double_is_refused(self) -> None:
        """An opaque block's text holding 1e400 is refused, never kept as Infinity."""
        with pytest.raises(ArgumentValueError, match="1e400 is past") as info:
            Opaque("openai", '{"type": "file", "n": 1e400}')
        assert info.value.argument == "raw"


class TestRoleSubclasses:
    def test_a_str_enum_role_is_its_plain_str(self) -> None:
        """A str Enum's member naming a role is taken, as the plain str."""

        class Role(str, enum.Enum):
            USER = "user"
            TOOL = "tool"

        msg = M(Role.USER, (Text("hi"),))
        assert msg.role == "user"
        assert type(msg.role) is str
        assert msg == Message.user("hi")

    def test_a_str_subclass_role_is_its_plain_str(self) -> None:
        """A str subclass naming a role is taken, as the plain str."""

        class Named(str):
            pass

        msg = M(Named("system"), (Text("be brief"),))
        assert (msg.role, type(msg.role)) == ("system", str)

    def test_a_subclass_naming_no_role_is_refused(self) -> None:
        """A str subclass that names no role is still a value error naming it."""

        class Named(str):
            pass

        with pytest.raises(ArgumentValueError, match="got 'robot'"):
            M(Named("robot"))
