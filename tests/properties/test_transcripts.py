"""Properties of ``read_transcripts`` / ``detect_format`` on generated conversations.

Each conversation is written in a provider's shape to a file, then read back
(as JSONL with a line break character put into its first text):
the messages must be those the provider's ``from_x`` gives for the same data,
and the format must be named right. A plain-text Anthropic conversation (no
system field, no block only Anthropic has) is also a valid OpenAI one, byte
for byte; there the reader may name either, and must still read the same
messages.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contextwindow.errors import InvalidMessageError
from contextwindow.formats import (
    from_anthropic,
    from_openai,
    from_responses,
    to_anthropic,
    to_openai,
    to_responses,
)
from contextwindow.messages import Message, Text
from contextwindow.transcripts import detect_format, read_transcripts

from ._support import for_each

# Generated tool results hold images, which a Chat tool message cannot carry:
# written for Chat they are left out with this warning (formats.openai_chat).
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*an image has no equivalent in the openai tool result"
    ":contextwindow.errors.ContentDroppedWarning"
)


_ANTHROPIC_ONLY = frozenset(
    ("tool_use", "tool_result", "thinking", "redacted_thinking", "image")
)


def anthropic_only(turns: list[dict[str, Any]]) -> bool:
    """Whether some block of the turns exists only in Anthropic's shape."""
    return any(
        isinstance(t["content"], list)
        and any(b.get("type") in _ANTHROPIC_ONLY for b in t["content"])
        for t in turns
    )


def openai_list(conv: list[Message]) -> tuple[str, list[Message], set[str]]:
    data = to_openai(conv)
    return json.dumps(data), from_openai(data), {"openai"}


def openai_jsonl(conv: list[Message]) -> tuple[str, list[Message], set[str]]:
    data = to_openai(conv)
    text = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in data)
    return text, from_openai(data), {"jsonl"}


def anthropic_body(conv: list[Message]) -> tuple[str, list[Message], set[str]]:
    body = to_anthropic(conv).body()
    body["model"] = "claude-test"
    msgs = from_anthropic(body["messages"], system=body.get("system"))
    names = {"anthropic_request"}
    if "system" not in body and not anthropic_only(body["messages"]):
        names.add("openai_request")
    return json.dumps(body, ensure_ascii=False), msgs, names


def anthropic_list(conv: list[Message]) -> tuple[str, list[Message], set[str]]:
    req = to_anthropic(conv)
    turns = req.messages
    names = {"anthropic"} if anthropic_only(turns) else {"anthropic", "openai"}
    return json.dumps(turns), from_anthropic(turns), names


def responses_list(conv: list[Message]) -> tuple[str, list[Message], set[str]]:
    items = to_responses(conv)
    return json.dumps(items), from_responses(items), {"responses"}


LINE_BREAKS = ("\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\r")
"""Characters ``str.splitlines`` breaks on that JSON leaves unescaped (or that
a JSONL reader must not split on)."""


def with_line_break(conv: list[Message], rng: random.Random) -> list[Message]:
    """``conv`` with a Unicode line break inside its first text, if it has one."""
    for i, m in enumerate(conv):
        for j, part in enumerate(m.parts):
            if isinstance(part, Text):
                text = Text(f"{part.text}{rng.choice(LINE_BREAKS)}after")
                parts = (*m.parts[:j], text, *m.parts[j + 1 :])
                return [*conv[:i], m.with_parts(parts), *conv[i + 1 :]]
    return conv


Writer = Callable[[list[Message]], tuple[str, list[Message], set[str]]]
WRITERS: dict[str, Writer] = {
    "openai": openai_list,
    "jsonl": openai_jsonl,
    "anthropic_request": anthropic_body,
    "anthropic": anthropic_list,
    "responses": responses_list,
}
CORE = ("openai", "jsonl", "anthropic_request")
"""Checked on every conversation; the other shapes on a quarter of them."""


class TestReadTranscripts:
    @pytest.mark.parametrize("shape", list(WRITERS))
    def test_file_reads_as_the_converter_does(
        self,
        convs: list[list[Message]],
        some_convs: list[list[Message]],
        shape: str,
        tmp_path: Path,
    ) -> None:
        """A conversation in a file reads back as from_x reads it; format named."""
        path = tmp_path / "conversation.json"
        writer = WRITERS[shape]

        def check(conv: list[Message], rng: random.Random) -> None:
            if shape == "anthropic" and any(m.role == "system" for m in conv):
                conv = [m for m in conv if m.role != "system"]  # no place in a list
            if shape == "jsonl":  # one record per line, whatever the texts hold
                conv = with_line_break(conv, rng)
            read_back(conv, rng)

        def read_back(conv: list[Message], rng: random.Random) -> None:
            text, expected, names = writer(conv)
            path.write_text(text, encoding="utf-8")
            if not text:  # an empty conversation as JSONL: an empty file
                with pytest.raises(InvalidMessageError, match="empty file"):
                    read_transcripts(path)
                return
            if not conv:  # "[]" is every list shape; it reads as OpenAI's
                names = {*names, "openai"}
            fmt = detect_format(path)
            assert fmt in names
            (transcript,) = read_transcripts(path)
            assert transcript.format == fmt
            assert list(transcript.messages) == expected

        for_each(convs if shape in CORE else some_convs, check)
