from __future__ import annotations

from typing import Any

from contextwindow.formats import to_anthropic, to_openai
from contextwindow.formats._common import entry, insert_opaque, put_extras
from contextwindow.messages import Message, Text

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
