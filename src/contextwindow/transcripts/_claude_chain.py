"""Which records of a Claude Code session file are its conversation.

Contract: ``conversation(records)`` returns the records of the conversation
Claude Code itself would resume, in file order, and how many message records
(``user`` and ``assistant``) each rule left out; it reads no block and
raises nothing (the reader names what is malformed):

- ``duplicates``: a record whose ``uuid`` was read before is a copy (Claude
  Code writes some twice: anthropics/claude-code#5034), as is a queue
  operation read before (the same time, operation and text);
- ``sidechain``: in a file holding main-thread records, a record with
  ``isSidechain: true`` is a Task sub-agent's, which the main thread never
  saw (it sees the Task's result). Claude Code up to about 2.0.27 wrote
  them into the session file; later versions write
  ``subagents/agent-*.jsonl``, all sidechain, read whole;
- ``abandoned``: a record on a branch the conversation left (``/rewind``
  continues from an earlier message; the rewound records stay in the
  file). A record is kept when the last message reaches it by
  ``parentUuid`` (``logicalParentUuid`` across a compaction), when it is
  another record of a message kept (Claude Code writes one record per
  content block, and parallel tool calls branch the chain), when it holds
  the result of a tool call kept, or when it comes after the last message.
  A parent missing from the file, and the first record of a session that
  follows another session in the same file, do not end the walk: the
  record before it in the file is taken as its parent (Claude Code's own
  walk loses the history there; the file has it). A file whose message
  records name no parent is read whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

__all__ = ["Rec", "blocks_of", "conversation", "message_of"]

Rec = tuple[int, Mapping[str, Any]]
"""A record with its line."""


def _is_message(rec: Mapping[str, Any]) -> bool:
    return rec.get("type") in ("user", "assistant")


def conversation(recs: list[Rec]) -> tuple[list[Rec], dict[str, int]]:
    """The records of the conversation Claude Code would resume, in file order.

    Returns them with the number of message records each rule left out.
    """
    left_out = {"duplicates": 0, "sidechain": 0, "abandoned": 0}
    seen: set[object] = set()
    unique: list[Rec] = []
    for n, rec in recs:
        key = _identity(rec)
        if key is not None:
            if key in seen:
                left_out["duplicates"] += int(_is_message(rec))
                continue
            seen.add(key)
        unique.append((n, rec))
    if any(_is_message(r) and r.get("isSidechain") is not True for _, r in unique):
        main: list[Rec] = []
        for n, rec in unique:
            if rec.get("isSidechain") is True:
                left_out["sidechain"] += int(_is_message(rec))
            else:
                main.append((n, rec))
        unique = main
    live = _live(unique)
    if live is None:
        return unique, left_out
    kept: list[Rec] = []
    for n, rec in unique:
        uuid = rec.get("uuid")
        if isinstance(uuid, str) and uuid and uuid not in live:
            left_out["abandoned"] += int(_is_message(rec))
        else:
            kept.append((n, rec))
    return kept, left_out


def _identity(rec: Mapping[str, Any]) -> object:
    """What makes a record the same as another: its ``uuid``; ``None``: nothing.

    A queue operation has no ``uuid``; its copy has the same time, operation
    and text (one replayed twice would deliver its prompt twice).
    """
    uuid = rec.get("uuid")
    if isinstance(uuid, str) and uuid:
        return uuid
    if rec.get("type") == "queue-operation":
        fields = ("sessionId", "timestamp", "operation", "content")
        return ("queue-operation", *(repr(rec.get(k)) for k in fields))
    return None


@dataclass
class _Graph:
    """The records that have a ``uuid``, in file order, and how they link."""

    order: list[str]
    index: dict[str, Mapping[str, Any]]
    place: dict[str, int]
    by_message: dict[str, list[str]]  # assistant message.id -> its records
    answers: dict[str, list[str]]  # tool_use id -> records holding its result
    leaf: str | None  # the last message record


def _graph(recs: list[Rec]) -> _Graph:
    g = _Graph([], {}, {}, {}, {}, None)
    for _, rec in recs:
        uuid = rec.get("uuid")
        if not isinstance(uuid, str) or not uuid:
            continue
        g.place[uuid] = len(g.order)
        g.order.append(uuid)
        g.index[uuid] = rec
        if not _is_message(rec):
            continue
        g.leaf = uuid
        msg = message_of(rec)
        mid = msg.get("id")
        if rec.get("type") == "assistant" and isinstance(mid, str):
            g.by_message.setdefault(mid, []).append(uuid)
        for block in blocks_of(msg):
            call = block.get("tool_use_id")
            if block.get("type") == "tool_result" and isinstance(call, str):
                g.answers.setdefault(call, []).append(uuid)
    return g


def _live(recs: list[Rec]) -> set[str] | None:
    """The uuids of the records the last message reaches; ``None``: all of them.

    Claude Code rebuilds a session by walking ``parentUuid`` back from its
    last message. Parallel tool calls branch that chain (each call's record
    and its result hang off the record before), so the walk also takes
    every record of a message it reached and every record holding a result
    of a call it reached. Records after the last message are on no branch
    it left, and are kept.
    """
    if not any(
        _is_message(r) and isinstance(r.get("parentUuid"), str) for _, r in recs
    ):
        return None  # no record names a parent: nothing to walk
    g = _graph(recs)
    if g.leaf is None:
        return None
    live: set[str] = set()
    todo = [g.leaf]
    while todo:
        uuid = todo.pop()
        if uuid in live:
            continue
        live.add(uuid)
        rec = g.index[uuid]
        parent = _parent(rec, g.place[uuid], g)
        if parent is not None:
            todo.append(parent)
        if rec.get("type") != "assistant":
            continue
        msg = message_of(rec)
        mid = msg.get("id")
        if isinstance(mid, str):
            todo.extend(g.by_message.get(mid, ()))
        for block in blocks_of(msg):
            call = block.get("id")
            if block.get("type") == "tool_use" and isinstance(call, str):
                todo.extend(g.answers.get(call, ()))
    live.update(g.order[g.place[g.leaf] + 1 :])
    return live


def _parent(rec: Mapping[str, Any], k: int, g: _Graph) -> str | None:
    """The record ``rec`` (``g.order[k]``) continues, or ``None`` at the start."""
    parent = rec.get("parentUuid")
    if parent is None:
        parent = rec.get("logicalParentUuid")  # a compact boundary's
    if isinstance(parent, str) and parent in g.index:
        return parent
    if k == 0:
        return None
    before = g.order[k - 1]
    same = g.index[before].get("sessionId") == rec.get("sessionId")
    if parent is None and "parentUuid" in rec and same:
        # The first record of this session: what is before it is not its
        # history (a rewind to the start leaves the rest). The first record
        # of a session after another one in the same file is read on.
        return None
    return before


def message_of(rec: Mapping[str, Any]) -> Mapping[str, Any]:
    msg = rec.get("message")
    return cast("Mapping[str, Any]", msg) if isinstance(msg, Mapping) else {}


def blocks_of(msg: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = msg.get("content")
    if not isinstance(content, list):
        return []
    return [
        cast("Mapping[str, Any]", b)
        for b in cast("Sequence[Any]", content)
        if isinstance(b, Mapping)
    ]
