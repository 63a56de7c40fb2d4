"""Claude Code session files: records -> API messages -> neutral messages.

Contract:

- Only ``user`` and ``assistant`` records become messages, plus each
  ``system`` ``compact_boundary`` as an entry of ``meta["compactions"]``
  (``index`` of the first message after it, ``trigger``, ``pre_tokens``),
  plus the prompts typed while Claude Code was busy (below);
  ``progress``, ``file-history-snapshot``, ``summary`` and other system
  records are skipped.
- The records read are those of the conversation Claude Code itself would
  resume (``_claude_chain``): a record whose ``uuid`` was read before, a
  sub-agent's sidechain record in a main session file and a record on a
  branch the conversation left (``/rewind``) are left out, and
  ``meta["left_out"]`` counts the ``user`` and ``assistant`` records each
  rule left out (``duplicates``, ``sidechain``, ``abandoned``).
- A prompt typed while Claude Code was busy is recorded only as a
  ``queue-operation`` ``enqueue``; a ``remove`` marks where Claude Code took
  it into the running turn, with the tool results that follow. Unless a
  later ``user`` record carries its text (a prompt or task notification run
  as a turn of its own, which is read as that record), its text becomes a
  user message there, after those tool results, flagged ``queued`` (with
  the enqueue's ``timestamp``; it has no ``uuid``, so its id is derived). A
  ``dequeue`` (run as a turn of its own) and a ``popAll`` (taken back into
  the prompt box) deliver nothing.
- Assistant records sharing ``message.id`` are one API message (Claude Code
  writes one record per content block); consecutive user records holding
  only tool results are one user turn. Blocks are then converted by
  ``formats.anthropic.from_anthropic_message``, never parsed here.
- Every message keeps its first record's ``uuid`` and ``timestamp`` in
  ``meta`` (``uuids`` when it spans several records), and assistant messages
  their ``usage``; ``isMeta`` and compact-summary user records are kept as
  user text, flagged ``is_meta`` / ``is_compact_summary``.
- Errors name the record's line and its own block index, even inside a
  grouped message.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from contextwindow._validate import expect_mapping, type_name
from contextwindow.errors import InvalidMessageError
from contextwindow.formats.anthropic import from_anthropic_message
from contextwindow.messages import Message
from contextwindow.transcripts._base import Records, Transcript
from contextwindow.transcripts._claude_chain import (
    Rec,
    blocks_of,
    conversation,
    message_of,
)

__all__ = ["read_claude_code"]


@dataclass
class _ApiMessage:
    """One API message rebuilt from Claude Code records, with where it came from."""

    role: str
    content: list[Any] | str
    spans: list[tuple[int, int]]  # (line, index of the record's first block)
    records: list[Mapping[str, Any]]
    usage: Any = None
    results_only: bool = False
    queued: bool = False


_BLOCK_PATH = re.compile(r"@\.content\[(\d+)\]")


def read_claude_code(records: Records, name: str) -> list[Transcript]:
    recs = [(n, expect_mapping(raw, f"{name}:{n}")) for n, raw in records]
    recs, left_out = conversation(recs)
    build = _Builder(name, _user_texts(recs))
    for n, rec in recs:
        build.add(n, rec)
    return [build.transcript(left_out)]


class _Builder:
    """API messages rebuilt record by record, and what the records say besides."""

    def __init__(self, name: str, texts: list[tuple[int, str]]) -> None:
        self.name = name
        self.api: list[_ApiMessage] = []
        self.by_id: dict[str, _ApiMessage] = {}
        self.boundaries: list[tuple[int, Mapping[str, Any]]] = []
        self.queue = _Queue(texts)
        self.session_id: Any = None
        self.agent_id: Any = None
        self.model: str | None = None
        self.usage: Any = None

    def add(self, n: int, rec: Mapping[str, Any]) -> None:
        where = f"{self.name}:{n}"
        kind = rec.get("type")
        self.session_id = self.session_id or rec.get("sessionId")
        self.agent_id = self.agent_id or rec.get("agentId")
        if kind == "system":
            if rec.get("subtype") == "compact_boundary":
                self.api.extend(self.queue.delivered())
                self.boundaries.append((len(self.api), rec))
            return
        if kind == "queue-operation":
            self.queue.record(n, rec)
            return
        if kind not in ("user", "assistant"):
            # Other kinds (progress, file-history-snapshot, summary and any
            # newer one) carry no message.
            if isinstance(kind, str):
                return
            raise InvalidMessageError(
                f"{where}: type", f"expected a string, got {type_name(kind)}"
            )
        if "message" not in rec:
            raise InvalidMessageError(f"{where}: message", "missing")
        msg = expect_mapping(rec["message"], f"{where}: message")
        if kind == "assistant":
            self._assistant(n, rec, msg)
        else:
            self._user(n, rec, msg.get("content"))

    def _assistant(
        self, n: int, rec: Mapping[str, Any], msg: Mapping[str, Any]
    ) -> None:
        content = msg.get("content")
        mid = msg.get("id")
        found = self.by_id.get(mid) if isinstance(mid, str) else None
        if (
            found is not None
            and isinstance(content, list)
            and isinstance(found.content, list)
        ):
            found.spans.append((n, len(found.content)))
            found.content.extend(cast("Sequence[Any]", content))
            found.records.append(rec)
            target = found
        else:
            # A queued prompt went in with the tool results before this.
            self.api.extend(self.queue.delivered())
            target = _ApiMessage("assistant", _copy(content), [(n, 0)], [rec])
            self.api.append(target)
            if isinstance(mid, str):
                self.by_id[mid] = target
        if isinstance(msg.get("usage"), Mapping):
            target.usage = self.usage = msg["usage"]
        m = msg.get("model")
        if isinstance(m, str) and m != "<synthetic>":
            self.model = m

    def _user(self, n: int, rec: Mapping[str, Any], content: Any) -> None:
        results_only = _results_only(content)
        last = self.api[-1] if self.api else None
        if (
            results_only
            and last is not None
            and last.results_only
            and isinstance(last.content, list)
        ):
            last.spans.append((n, len(last.content)))
            last.content.extend(cast("Sequence[Any]", content))
            last.records.append(rec)
            return
        if not results_only:
            self.api.extend(self.queue.delivered())
        self.api.append(
            _ApiMessage(
                "user", _copy(content), [(n, 0)], [rec], results_only=results_only
            )
        )

    def transcript(self, left_out: dict[str, int]) -> Transcript:
        self.api.extend(self.queue.delivered())
        messages: list[Message] = []
        starts: list[int] = []
        for am in self.api:
            starts.append(len(messages))
            messages.extend(_convert_api(am, self.name))
        starts.append(len(messages))
        compactions = [_compaction(starts[k], rec) for k, rec in self.boundaries]
        agent = self.agent_id
        title = str(self.session_id or self.name) + (f" agent {agent}" if agent else "")
        meta: dict[str, Any] = {
            "session_id": self.session_id,
            "compactions": compactions,
            "usage": self.usage,
            "left_out": left_out,
        }
        if agent:
            meta["agent_id"] = agent
        return Transcript(tuple(messages), "claude_code", title, self.model, (), meta)


def _results_only(content: Any) -> bool:
    if not isinstance(content, list):
        return False
    blocks = cast("Sequence[Any]", content)
    return bool(blocks) and all(
        isinstance(b, Mapping)
        and cast("Mapping[str, Any]", b).get("type") == "tool_result"
        for b in blocks
    )


def _user_texts(recs: list[Rec]) -> list[tuple[int, str]]:
    """Each user record's texts with its line: what a queued prompt became."""
    out: list[tuple[int, str]] = []
    for n, rec in recs:
        if rec.get("type") != "user":
            continue
        msg = message_of(rec)
        content = msg.get("content")
        if isinstance(content, str):
            out.append((n, content.strip()))
        for block in blocks_of(msg):
            text = block.get("text")
            if block.get("type") == "text" and isinstance(text, str):
                out.append((n, text.strip()))
    return out


class _Queue:
    """Claude Code's queue of prompts typed while it was busy, replayed."""

    def __init__(self, texts: list[tuple[int, str]]) -> None:
        self.texts = texts
        # Prompts a later user record carries (run as turns of their own)
        # and prompts no record carries: a ``remove`` takes the oldest of
        # these, as Claude Code takes a typed prompt into the running turn
        # and leaves task notifications for a turn of their own.
        self.carried: deque[Rec] = deque()
        self.pending: deque[Rec] = deque()
        self.taken: list[Rec] = []

    def record(self, n: int, rec: Mapping[str, Any]) -> None:
        op = rec.get("operation")
        if op == "enqueue":
            content = rec.get("content")
            if isinstance(content, str) and content.strip():
                text = content.strip()
                later = any(k > n and t == text for k, t in self.texts)
                (self.carried if later else self.pending).append((n, rec))
        elif op == "remove":
            if self.pending:
                self.taken.append(self.pending.popleft())
        elif op == "dequeue":
            for queue in (self.carried, self.pending):
                if queue:
                    queue.popleft()
                    break
        elif op == "popAll":
            self.carried.clear()
            self.pending.clear()

    def delivered(self) -> list[_ApiMessage]:
        """The prompts taken into the turn so far, as user messages; then none."""
        out = [
            _ApiMessage("user", str(rec["content"]), [(n, 0)], [rec], queued=True)
            for n, rec in self.taken
        ]
        self.taken.clear()
        return out


def _copy(content: Any) -> Any:
    return (
        list(cast("Sequence[Any]", content)) if isinstance(content, list) else content
    )


def _compaction(index: int, rec: Mapping[str, Any]) -> dict[str, Any]:
    raw = rec.get("compactMetadata")
    cm: Mapping[str, Any] = (
        cast("Mapping[str, Any]", raw) if isinstance(raw, Mapping) else {}
    )
    return {
        "index": index,
        "trigger": cm.get("trigger"),
        "pre_tokens": cm.get("preTokens"),
        "uuid": rec.get("uuid"),
        "timestamp": rec.get("timestamp"),
    }


def _convert_api(am: _ApiMessage, name: str) -> list[Message]:
    try:
        msgs = from_anthropic_message(
            {"role": am.role, "content": am.content}, path="@"
        )
    except InvalidMessageError as exc:
        raise _record_error(exc, am, name) from None
    first = am.records[0]
    extra: dict[str, Any] = {"timestamp": first.get("timestamp")}
    if am.queued:
        # An enqueue record has no uuid: the id is derived, as for any file.
        extra["queued"] = True
    else:
        extra["uuid"] = first.get("uuid")
    if len(am.records) > 1:
        extra["uuids"] = [r.get("uuid") for r in am.records]
    if am.usage is not None:
        extra["usage"] = am.usage
    if first.get("isMeta"):
        extra["is_meta"] = True
    if first.get("isCompactSummary"):
        extra["is_compact_summary"] = True
    return [replace(m, meta={**m.meta, **extra}) for m in msgs]


def _record_error(
    exc: InvalidMessageError, am: _ApiMessage, name: str
) -> InvalidMessageError:
    """Point an error in a rebuilt message at the record and block it came from."""
    m = _BLOCK_PATH.match(exc.path)
    line, offset = am.spans[0]
    if m is not None:
        j = int(m.group(1))
        for ln, start in am.spans:
            if start <= j:
                line, offset = ln, start
        rest = f".content[{j - offset}]{exc.path[m.end() :]}"
    else:
        rest = exc.path[1:]
    return InvalidMessageError(f"{name}:{line}: message{rest}", exc.reason)
