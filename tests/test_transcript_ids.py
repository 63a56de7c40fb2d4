"""Message ids from files: the file's own, else derived; the same on every read."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings

from contextwindow import Message
from contextwindow.formats import to_provider
from contextwindow.testing import conversations
from contextwindow.transcripts import read_transcripts


class TestDerivedIds:
    @settings(max_examples=50, deadline=None)
    @given(conversations(max_turns=5))
    @pytest.mark.filterwarnings(  # images in tool results: Chat takes none
        "ignore:.*an image has no equivalent in the openai tool result"
        ":contextwindow.errors.ContentDroppedWarning"
    )
    def test_same_on_every_read_and_unique(self, conv: list[Message]) -> None:
        """Two reads of one file give the same ids; no two messages share one."""
        text = json.dumps(to_provider(conv, "openai"))
        first = read_transcripts(io.StringIO(text))[0].messages
        second = read_transcripts(io.StringIO(text))[0].messages
        assert [m.id for m in first] == [m.id for m in second]
        assert len({m.id for m in first}) == len(first)

    def test_position_and_content(self) -> None:
        """Equal messages at two places differ; another text gives another id."""
        chat = [{"role": "user", "content": "hi"}] * 2
        a, b = read_transcripts(io.StringIO(json.dumps(chat)))[0].messages
        assert a.id != b.id
        other = [{"role": "user", "content": "ho"}, chat[1]]
        c, d = read_transcripts(io.StringIO(json.dumps(other)))[0].messages
        assert c.id != a.id
        assert d.id == b.id

    def test_conversations_of_one_file_differ(self, shared_data: Path) -> None:
        """tau-bench trajectories share a system prompt, not its id."""
        runs = read_transcripts(shared_data / "tau-bench_gpt-4o-airline.json")
        firsts = [t.messages[0].id for t in runs]
        assert len(set(firsts)) == len(firsts)

    def test_claude_code_keeps_record_uuids(self, shared_data: Path) -> None:
        """A Claude Code message's id is its record's uuid (uuid:N for more);
        a queued prompt, whose record has none, gets a derived one."""
        for path in (shared_data / "claude_code_sessions").glob("*.jsonl"):
            (t,) = read_transcripts(path)
            ids = [m.id for m in t.messages]
            assert len(set(ids)) == len(ids)
            for m in t.messages:
                if m.meta.get("queued"):
                    assert "uuid" not in m.meta
                    assert len(m.id) == 32
                else:
                    assert m.id.split(":")[0] == m.meta["uuid"]
