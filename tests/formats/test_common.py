from __future__ import annotations

from typing import Any

import pytest

from contextwindow.errors import InvalidMessageError
from contextwindow.formats import (
    from_anthropic,
    from_openai,
    from_responses,
    to_anthropic,
    to_openai,
)
from contextwindow.formats._common import entry, insert_opaque, put_extras
from contextwindow.messages import Message, Text, ToolCall
from contextwindow.tokens import count_messages

CACHE = {"type": "ephemeral"}


class TestPutExtras:
    def test_built_keys_win_over_stale_extras(self) -> None:
        """An extra never replaces a key the writer built from the neutral part."""
        out = put_extras({"type": "text", "text": "new"}, {"text": "old", "x": [1]})
        assert out == {"type": "text", "text": "new", "x": [1]}

    def test_extras_are_copies(self) -> None:
        """Writing twice from the same meta gives independent dicts."""
        extra: dict[str, Any] = {"cache_control": {"type": "ephemeral"}}
        a = put_extras({}, extra)
        a["cache_control"]["type"] = "changed"
        assert extra == {"cache_control": {"type": "ephemeral"}}

    def test_edited_text_wins_in_every_writer(self) -> None:
        """A strategy's edited text is written, not the text recorded in meta."""
        meta = {
            "anthropic": {"parts": [{"extra": {"text": "old", "cache_control": CACHE}}]}
        }
        m = Message.user([Text("new")], meta=meta)
        (turn,) = to_anthropic([m]).messages
        assert turn["content"] == [
            {"type": "text", "text": "new", "cache_control": CACHE}
        ]
        assert to_openai([m]) == [{"role": "user", "content": "new"}]

    def test_non_mapping_extra_is_ignored(self) -> None:
        """Extras that are not a mapping (corrupted meta) add nothing."""
        assert put_extras({"a": 1}, ["b"]) == {"a": 1}


class TestEntry:
    def test_list_of_wrong_length_is_ignored(self) -> None:
        """Per-part entries that no longer fit the parts are not applied."""
        entries = [{"extra": 1}, None]
        assert entry(entries, 0, 2) == {"extra": 1}
        assert entry(entries, 1, 2) == {}
        assert entry(entries, 0, 3) == {}
        assert entry("not a list", 0, 1) == {}


class TestInsertOpaque:
    def test_malformed_items_are_skipped(self) -> None:
        """Only [index, block] pairs are inserted; anything else is ignored."""
        got = insert_opaque(["a", "c"], [[1, "b"], "junk", [2], ["x", "y"], [9, "z"]])
        assert got == ["a", "b", "c", "z"]
        assert insert_opaque(["a"], None) == ["a"]

    def test_inserted_blocks_are_copies(self) -> None:
        """An inserted block is a copy, so the recorded one cannot be changed."""
        block: dict[str, Any] = {"type": "document", "source": {"data": "x"}}
        out = insert_opaque([], [[0, block]])
        out[0]["source"]["data"] = "changed"
        assert block["source"]["data"] == "x"


def _deep(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


class TestNestedTooDeeply:
    """JSON nested past Python's stack is an InvalidMessageError naming where."""

    DEPTH = 5000

    def test_chat_arguments(self) -> None:
        """Chat function arguments name the field."""
        args = "[" * self.DEPTH + "]" * self.DEPTH
        fn: dict[str, Any] = {"name": "f", "arguments": args}
        call: dict[str, Any] = {"id": "c", "type": "function", "function": fn}
        msgs: list[dict[str, Any]] = [
            {"role": "user", "content": "x"},
            {"role": "assistant", "tool_calls": [call]},
        ]
        with pytest.raises(InvalidMessageError) as info:
            from_openai(msgs)
        assert info.value.path == "messages[1].tool_calls[0].function.arguments"
        assert info.value.reason == "nested too deeply"

    def test_anthropic_input(self) -> None:
        """Anthropic tool_use input names the block's input."""
        block: dict[str, Any] = {"type": "tool_use", "id": "t", "name": "f"}
        block["input"] = {"a": _deep(self.DEPTH)}
        with pytest.raises(InvalidMessageError, match="nested too deeply") as info:
            from_anthropic([{"role": "assistant", "content": [block]}])
        assert info.value.path == "messages[0].content[0].input"

    def test_extras_name_the_message(self) -> None:
        """Kept keys too deep to copy name the message, in every reader."""
        deep = _deep(self.DEPTH)
        cases = [
            (from_openai, [{"role": "user", "content": "x", "z": deep}], "messages"),
            (
                from_anthropic,
                [
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": "x", "z": deep}],
                    }
                ],
                "messages",
            ),
            (
                from_responses,
                [{"type": "web_search_call", "id": "w", "action": deep}],
                "input",
            ),
        ]
        for read, body, name in cases:
            with pytest.raises(InvalidMessageError, match="nested too deeply") as info:
                read(body)  # type: ignore[operator]  # each reader takes its list
            assert info.value.path.startswith(f"{name}[0]")

    def test_tool_schema_counted(self) -> None:
        """A tool schema too deep to read names the tool, through count_messages."""
        fn = {"name": "f", "parameters": {"type": "object", "a": _deep(self.DEPTH)}}
        with pytest.raises(InvalidMessageError, match="nested too deeply") as info:
            count_messages(
                [Message.user("x")],
                "o200k_base",
                tools=[{"type": "function", "function": fn}],
            )
        assert info.value.path == "tools[0].function.parameters"

    def test_writer_names_the_message(self) -> None:
        """A call whose arguments are too deep to parse names it on writing."""
        call = ToolCall("t", "f", "1")
        object.__setattr__(call, "arguments", "[" * 5000 + "]" * 5000)  # past checks
        with pytest.raises(InvalidMessageError, match="nested too deeply") as info:
            to_anthropic([Message.user("x"), Message.assistant(tool_calls=[call])])
        assert info.value.path == "messages[1].parts[0].arguments"
