from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence
from typing import Any

import pytest

from contextwindow import fit
from contextwindow.errors import ContentDroppedWarning, ContextWindowError
from contextwindow.formats import to_anthropic, to_openai, to_responses
from contextwindow.messages import (
    PROVIDERS,
    Image,
    Message,
    Opaque,
    Part,
    Provider,
    Role,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
)
from contextwindow.validity import (
    CONTINUED,
    CONTINUED_ID,
    Problem,
    ensure_valid,
    problems,
)

OPENAI_LIKE: tuple[Provider, ...] = ("openai", "responses")


def call(cid: str, name: str = "f") -> ToolCall:
    return ToolCall(cid, name, "{}")


def rows(found: tuple[Problem, ...]) -> list[tuple[int, str, str, str]]:
    return [(p.index, p.path, p.reason, p.fix) for p in found]


class TestOrphanResults:
    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_result_without_call(self, provider: Provider) -> None:
        """A tool result answering no call is dropped, for every provider."""
        conv = [Message.user("hi"), Message.tool("zz", "out")]
        assert rows(problems(conv, provider)) == [
            (
                1,
                "messages[1].parts[0].call_id",
                "tool result answers no pending tool call",
                "drop_message",
            )
        ]
        assert ensure_valid(conv, provider).messages == (conv[0],)

    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_orphans_after_a_complete_exchange(self, provider: Provider) -> None:
        """Results beyond an exchange's calls are orphans; the exchange stays."""
        conv = [
            Message.user("hi"),
            Message.assistant(tool_calls=[call("a")]),
            Message.tool("a", "1"),
            Message.tool("a", "again"),
            Message.tool("b", "other"),
            Message.assistant("done"),
        ]
        found = problems(conv, provider)
        assert [(p.index, p.fix) for p in found] == [
            (3, "drop_message"),
            (4, "drop_message"),
        ]
        out = ensure_valid(conv, provider).messages
        assert [m.id for m in out] == [conv[i].id for i in (0, 1, 2, 5)]

    def test_path_names_the_first_result(self) -> None:
        """The path points at the first tool result of the orphan message."""
        odd = Message("tool", (Text("note"), ToolResult("zz", "out")))
        found = problems([Message.user("hi"), odd], "openai")
        assert found[0].path == "messages[1].parts[1].call_id"

    def test_tool_message_without_results(self) -> None:
        """A tool message holding no result at all is an orphan too."""
        found = problems([Message.user("hi"), Message("tool", ())], "openai")
        assert rows(found) == [
            (
                1,
                "messages[1].parts",
                "tool result answers no pending tool call",
                "drop_message",
            )
        ]

    def test_orphan_reported_once(self) -> None:
        """An orphan dropped whole is not also stripped of its blank text."""
        odd = Message("tool", (ToolResult("zz", "out"), Text(" ")))
        found = problems([Message.user("hi"), odd], "anthropic")
        assert [p.fix for p in found] == ["drop_message"]


class TestUnansweredCalls:
    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_call_alone_drops_the_message(self, provider: Provider) -> None:
        """An assistant turn holding only an unanswered call is dropped."""
        conv = [
            Message.user("hi"),
            Message.assistant(tool_calls=[call("a")]),
            Message.user("well?"),
        ]
        assert rows(problems(conv, provider)) == [
            (1, "messages[1].parts", "tool call has no result", "drop_message")
        ]
        assert ensure_valid(conv, provider).messages == (conv[0], conv[2])

    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_call_with_text_strips_the_call(self, provider: Provider) -> None:
        """Text beside an unanswered call stays; the call leaves the message."""
        conv = [
            Message.user("hi"),
            Message.assistant("Let me look.", tool_calls=[call("a")]),
        ]
        assert rows(problems(conv, provider)) == [
            (1, "messages[1].parts[1]", "tool call has no result", "drop_parts")
        ]
        fixed = ensure_valid(conv, provider).messages[1]
        assert (fixed.text, fixed.tool_calls, fixed.id) == (
            "Let me look.",
            (),
            conv[1].id,
        )

    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_parallel_calls_one_answered(self, provider: Provider) -> None:
        """Of two parallel calls, only the unanswered one is stripped."""
        conv = [
            Message.user("hi"),
            Message.assistant(tool_calls=[call("a"), call("b")]),
            Message.tool("b", "2"),
            Message.user("next"),
        ]
        assert rows(problems(conv, provider)) == [
            (1, "messages[1].parts[0]", "tool call has no result", "drop_parts")
        ]
        out = ensure_valid(conv, provider).messages
        assert [c.id for c in out[1].tool_calls] == ["b"]
        assert out[2] is conv[2]
        assert problems(out, provider) == ()

    def test_thinking_left_alone_drops_the_message(self) -> None:
        """A message left with only reasoning after stripping is dropped."""
        conv = [
            Message.user("hi"),
            Message.assistant([Thinking("hmm")], tool_calls=[call("a")]),
            Message.user("next"),
        ]
        assert rows(problems(conv, "openai")) == [
            (1, "messages[1].parts", "tool call has no result", "drop_message")
        ]
        assert ensure_valid(conv, "openai").messages == (conv[0], conv[2])

    def test_each_unanswered_call_is_a_problem(self) -> None:
        """Two unanswered calls in one message are two problems, one repair."""
        conv = [
            Message.user("hi"),
            Message.assistant("Looking.", tool_calls=[call("a"), call("b")]),
        ]
        found = problems(conv, "openai")
        assert [p.path for p in found] == [
            "messages[1].parts[1]",
            "messages[1].parts[2]",
        ]
        v = ensure_valid(conv, "openai")
        assert v.messages[1].parts == (Text("Looking."),)
        assert v.after[0] is v.after[1] is v.messages[1]


class TestContent:
    @pytest.mark.parametrize("provider", PROVIDERS)
    @pytest.mark.parametrize("content", ["", "   \n"])
    def test_empty_assistant_turn(self, provider: Provider, content: str) -> None:
        """An assistant turn with no content, or blank text only, is dropped."""
        conv = [Message.user("hi"), Message.assistant(content), Message.user("?")]
        assert rows(problems(conv, provider)) == [
            (1, "messages[1].parts", "assistant turn: no content", "drop_message")
        ]

    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_reasoning_only_assistant_turn(self, provider: Provider) -> None:
        """Reasoning alone is not a turn."""
        conv = [Message.user("hi"), Message.assistant([Thinking("plan")])]
        assert rows(problems(conv, provider)) == [
            (1, "messages[1].parts", "assistant turn: reasoning only", "drop_message")
        ]

    @pytest.mark.parametrize(
        "parts",
        [
            [call("a")],
            [Image("https://example.com/a.png")],
            [Text("ok")],
            [Thinking("plan"), Text("answer")],
        ],
    )
    def test_assistant_content_kinds(self, parts: list[Part]) -> None:
        """A call, an image or non-blank text is content."""
        conv = [Message.user("hi"), Message("assistant", tuple(parts))]
        if parts[0] == call("a"):
            conv.append(Message.tool("a", "1"))
        assert problems(conv, "anthropic") == ()

    @pytest.mark.parametrize("content", ["", " "])
    def test_empty_user_turn_anthropic(self, content: str) -> None:
        """Anthropic rejects a user turn without content."""
        conv = [Message.user(content), Message.assistant("hi"), Message.user("?")]
        found = problems(conv, "anthropic")
        assert rows(found)[0] == (
            0,
            "messages[0].parts",
            "user turn: no content",
            "drop_message",
        )

    @pytest.mark.parametrize("provider", OPENAI_LIKE)
    @pytest.mark.parametrize("content", ["", " "])
    def test_empty_user_turn_openai(self, provider: Provider, content: str) -> None:
        """OpenAI accepts a user turn without content."""
        conv = [Message.user(content), Message.assistant("hi")]
        assert problems(conv, provider) == ()

    def test_image_is_user_content(self) -> None:
        """A user turn holding only an image is fine for Anthropic."""
        conv = [Message.user([Image("https://example.com/a.png")])]
        assert problems(conv, "anthropic") == ()


class TestOpaqueContent:
    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_refusal_is_assistant_content(self, provider: Provider) -> None:
        """An assistant turn holding only a refusal is kept."""
        refusal = Opaque.of("openai", {"type": "refusal", "refusal": "No."})
        conv = [Message.user("hi"), Message("assistant", (refusal,)), Message.user("?")]
        assert problems(conv, provider) == ()

    @pytest.mark.parametrize("kind", ["document", "search_result"])
    def test_user_turn_of_one_anthropic_block_is_kept(self, kind: str) -> None:
        """A user turn holding only a document or search result is not blank."""
        block = Opaque.of("anthropic", {"type": kind, "title": "t"})
        conv = [Message("user", (block,))]
        assert problems(conv, "anthropic") == ()
        assert ensure_valid(conv, "anthropic").messages == tuple(conv)


AUDIO_IN = Opaque.of(
    "openai", {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
)
CHAT_FILE_ID = Opaque.of("openai", {"type": "file", "file": {"file_id": "file-abc"}})
RESPONSES_FILE_ID = Opaque.of("responses", {"type": "input_file", "file_id": "f1"})
RESPONSES_IMAGE_ID = Opaque.of(
    "responses", {"type": "input_image", "file_id": "f2", "detail": "auto"}
)
AUDIO_REPLY = Opaque.of("openai", {"type": "audio", "audio": {"id": "audio_1"}})
SERVER_TOOL = Opaque.of(
    "anthropic",
    {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
)


def _written(conv: Sequence[Message], provider: Provider) -> list[Any]:
    """The turns the writer for ``provider`` sends (warnings of drops ignored)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ContentDroppedWarning)
        if provider == "anthropic":
            return to_anthropic(conv).messages
        return to_openai(conv) if provider == "openai" else to_responses(conv)


class TestOpaqueDroppedByTheWriter:
    @pytest.mark.parametrize(
        ("role", "part", "provider"),
        [
            ("user", AUDIO_IN, "anthropic"),
            ("user", CHAT_FILE_ID, "anthropic"),
            ("user", RESPONSES_FILE_ID, "anthropic"),
            ("user", RESPONSES_IMAGE_ID, "anthropic"),
            ("user", RESPONSES_IMAGE_ID, "openai"),
            ("assistant", AUDIO_REPLY, "anthropic"),
            ("assistant", AUDIO_REPLY, "responses"),
            ("assistant", SERVER_TOOL, "openai"),
            ("assistant", SERVER_TOOL, "responses"),
        ],
    )
    def test_turn_of_only_such_parts_is_empty(
        self, role: Role, part: Opaque, provider: Provider
    ) -> None:
        """A turn whose only parts the target's writer leaves out is no content."""
        if role == "user":
            conv = [Message(role, (part,)), Message.assistant("ok"), Message.user("?")]
        else:
            conv = [Message.user("q"), Message(role, (part,)), Message.user("next")]
        at = conv.index(Message(role, (part,)))
        found = problems(conv, provider)
        assert (found[0].index, found[0].fix) == (at, "drop_message")
        fixed = ensure_valid(conv, provider).messages
        assert problems(fixed, provider) == ()
        for turn in _written(fixed, provider):
            assert turn.get("content") != []

    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_part_the_writer_keeps_is_content(self, provider: Provider) -> None:
        """A Chat file by id is content for Chat and Responses, not for Anthropic."""
        conv = [Message("user", (CHAT_FILE_ID,))]
        assert (problems(conv, provider) == ()) is (provider != "anthropic")

    def test_fit_never_writes_an_empty_turn(self) -> None:
        """fit for Anthropic drops a user turn of audio alone (it wrote ``[]``)."""
        conv = [
            Message("user", (AUDIO_IN,)),
            Message.assistant("ok"),
            Message.user("?"),
        ]
        fitted = fit(conv, model="claude-sonnet-4-5", provider="anthropic")
        assert problems(fitted.messages, "anthropic") == ()
        assert all(t["content"] != [] for t in _written(fitted.messages, "anthropic"))


class TestBlankText:
    def test_anthropic_strips_blank_blocks(self) -> None:
        """Anthropic rejects blank text blocks; they leave the message."""
        conv = [
            Message.user([Text("hi"), Text(" \n")]),
            Message.assistant([Text(""), Text("hello")]),
        ]
        assert rows(problems(conv, "anthropic")) == [
            (0, "messages[0].parts[1].text", "blank text block", "drop_parts"),
            (1, "messages[1].parts[0].text", "blank text block", "drop_parts"),
        ]
        out = ensure_valid(conv, "anthropic").messages
        assert [m.parts for m in out] == [(Text("hi"),), (Text("hello"),)]
        assert [m.id for m in out] == [m.id for m in conv]

    @pytest.mark.parametrize("provider", OPENAI_LIKE)
    def test_openai_keeps_blank_blocks(self, provider: Provider) -> None:
        """OpenAI accepts blank text blocks."""
        conv = [Message.user([Text("hi"), Text(" ")]), Message.assistant("hello")]
        assert problems(conv, provider) == ()

    def test_blank_text_beside_unanswered_call(self) -> None:
        """A blank block and an unanswered call leave the same message."""
        conv = [
            Message.user("hi"),
            Message.assistant([Text(" "), Text("ok")], tool_calls=[call("a")]),
        ]
        found = problems(conv, "anthropic")
        assert sorted(p.path for p in found) == [
            "messages[1].parts[0].text",
            "messages[1].parts[2]",
        ]
        assert ensure_valid(conv, "anthropic").messages[1].parts == (Text("ok"),)


class TestFirstTurn:
    def test_anthropic_needs_a_user_turn_first(self) -> None:
        """After the system prompt, Anthropic wants the user's turn first."""
        conv = [Message.system("s"), Message.assistant("hi"), Message.user("x")]
        assert rows(problems(conv, "anthropic")) == [
            (
                1,
                "messages[1].role",
                "the first turn after the system prompt must be a user turn",
                "insert_user",
            )
        ]
        out = ensure_valid(conv, "anthropic").messages
        assert [m.role for m in out] == ["system", "user", "assistant", "user"]
        assert (out[1].text, out[1].id) == (CONTINUED, CONTINUED_ID)
        assert problems(out, "anthropic") == ()

    @pytest.mark.parametrize("provider", OPENAI_LIKE)
    def test_openai_accepts_the_assistant_first(self, provider: Provider) -> None:
        """OpenAI lets a conversation open on the assistant's turn."""
        conv = [Message.system("s"), Message.assistant("hi"), Message.user("x")]
        assert problems(conv, provider) == ()

    def test_dropped_messages_do_not_count(self) -> None:
        """The first turn is the first one that survives the repairs."""
        conv = [Message.tool("zz", "stale"), Message.assistant("hello")]
        found = problems(conv, "anthropic")
        assert [(p.index, p.fix) for p in found] == [
            (0, "drop_message"),
            (1, "insert_user"),
        ]
        out = ensure_valid(conv, "anthropic").messages
        assert [m.id for m in out] == [CONTINUED_ID, conv[1].id]

    def test_dropped_assistant_turn_uncovers_a_user_turn(self) -> None:
        """No placeholder when dropping an empty assistant turn leaves a user first."""
        conv = [Message.assistant(" "), Message.user("hi")]
        found = problems(conv, "anthropic")
        assert [p.fix for p in found] == ["drop_message"]

    def test_system_only(self) -> None:
        """A conversation of system messages needs no user turn."""
        assert problems([Message.system("s")], "anthropic") == ()
        assert problems([], "anthropic") == ()

    def test_placeholder_is_stable(self) -> None:
        """The same repair gives an equal placeholder with the same id."""
        conv = [Message.assistant("hi")]
        a = ensure_valid(conv, "anthropic").messages[0]
        b = ensure_valid(conv, "anthropic").messages[0]
        assert (a, a.id, a.role) == (b, b.id, "user")
        assert a.id == CONTINUED_ID


class TestProblems:
    def test_sorted_by_index(self) -> None:
        """Problems come in message order, whatever rule found them."""
        conv = [
            Message.assistant("Hello!"),
            Message.tool("t9", "stale output"),
            Message.user(""),
            Message.user("hi"),
            Message.assistant(tool_calls=[call("t1")]),
        ]
        found = problems(conv, "anthropic")
        assert [p.index for p in found] == [0, 1, 2, 4]
        assert [p.fix for p in found] == [
            "insert_user",
            "drop_message",
            "drop_message",
            "drop_message",
        ]

    def test_changes_nothing(self) -> None:
        """Listing problems leaves the conversation as it was."""
        conv = [Message.assistant("a", tool_calls=[call("x")]), Message.tool("y", "")]
        before = copy.deepcopy(conv)
        problems(conv, "anthropic")
        assert conv == before

    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_complete_exchange_is_valid(self, provider: Provider) -> None:
        """A full exchange, results split over messages, breaks no rule."""
        conv = [
            Message.system("s"),
            Message.user("hi"),
            Message.assistant(tool_calls=[call("a"), call("b")]),
            Message.tool("b", "2"),
            Message.tool("a", "1"),
            Message.assistant("done"),
        ]
        assert problems(conv, provider) == ()

    def test_unknown_provider(self) -> None:
        """An unknown provider is an error naming the known ones."""
        with pytest.raises(ContextWindowError, match=r"^provider: .* got 'gemini'"):
            problems([], "gemini")  # type: ignore[arg-type]  # the point of the test
        with pytest.raises(ContextWindowError, match="openai, anthropic or responses"):
            ensure_valid([], "gemini")  # type: ignore[arg-type]  # the point of the test


def broken() -> list[Message]:
    return [
        Message.system("s"),
        Message.assistant("Hello!"),
        Message.tool("t9", "stale output"),
        Message.user([Text("hi"), Text(" ")]),
        Message.assistant("Checking.", tool_calls=[call("a"), call("b")]),
        Message.tool("a", "1"),
        Message.assistant([Thinking("hmm")]),
        Message.user("next"),
    ]


class TestEnsureValid:
    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_valid_input_comes_back_as_is(self, provider: Provider) -> None:
        """A valid conversation comes back as the same message objects."""
        conv = [Message.system("s"), Message.user("hi"), Message.assistant("ho")]
        v = ensure_valid(conv, provider)
        assert isinstance(v.messages, tuple)
        assert all(a is b for a, b in zip(v.messages, conv, strict=True))
        assert (v.problems, v.before, v.after) == ((), (), ())

    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_repairs_everything(self, provider: Provider) -> None:
        """The output breaks no rule."""
        v = ensure_valid(broken(), provider)
        assert v.problems
        assert problems(v.messages, provider) == ()

    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_idempotent(self, provider: Provider) -> None:
        """Repairing a repaired conversation changes nothing."""
        once = ensure_valid(broken(), provider).messages
        twice = ensure_valid(once, provider)
        assert twice.problems == ()
        assert all(a is b for a, b in zip(twice.messages, once, strict=True))

    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_never_mutates(self, provider: Provider) -> None:
        """The input list and its messages are left as they were."""
        conv = broken()
        snapshot = list(conv)
        ids = [m.id for m in conv]
        deep = copy.deepcopy(conv)
        ensure_valid(conv, provider)
        assert conv == deep
        assert [m.id for m in conv] == ids
        assert all(a is b for a, b in zip(conv, snapshot, strict=True))

    def test_anthropic_repair(self) -> None:
        """Every rule repaired, removing as little as possible."""
        conv = broken()
        v = ensure_valid(conv, "anthropic")
        assert [(m.role, m.text) for m in v.messages] == [
            ("system", "s"),
            ("user", CONTINUED),
            ("assistant", "Hello!"),
            ("user", "hi"),
            ("assistant", "Checking."),
            ("tool", "1"),
            ("user", "next"),
        ]
        assert [c.id for c in v.messages[4].tool_calls] == ["a"]

    def test_openai_repair(self) -> None:
        """OpenAI needs no placeholder and keeps blank text."""
        conv = broken()
        out = ensure_valid(conv, "openai").messages
        assert [m.id for m in out] == [conv[i].id for i in (0, 1, 3, 4, 5, 7)]
        assert out[2] is conv[3]

    def test_before_and_after(self) -> None:
        """Each problem names the message it touched and what replaced it."""
        conv = broken()
        v = ensure_valid(conv, "anthropic")
        by_fix = {
            p.fix: (b, a) for p, b, a in zip(v.problems, v.before, v.after, strict=True)
        }
        assert by_fix["insert_user"] == (None, v.messages[1])
        assert by_fix["drop_message"][1] is None
        touched = [
            (p.index, b, a)
            for p, b, a in zip(v.problems, v.before, v.after, strict=True)
            if p.fix == "drop_parts"
        ]
        for i, b, a in touched:
            assert b is conv[i]
            assert a is not None
            assert a.id == conv[i].id
            assert a in v.messages
