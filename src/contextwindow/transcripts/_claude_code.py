"""Claude Code session files: records -> API messages -> neutral messages.

Contract:

- Only ``user`` and ``assistant`` records become messages, plus each
  ``system`` ``compact_boundary`` as an entry of ``meta["compactions"]``
  (``index`` of the first message after it, ``trigger``, ``pre_tokens``);
  ``progress``, ``file-history-snapshot``, ``queue-operation`` and other
  system records are skipped.
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from contextwindow._validate import expect_mapping, type_name
from contextwindow.errors import InvalidMessageError
from contextwindow.formats.anthropic import from_anthropic_message
from contextwindow.messages import Message
from contextwindow.transcripts._base import Records, Transcript

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


_BLOCK_PATH = re.compile(r"@\.content\[(\d+)\]")


def read_claude_code(records: Records, name: str) -> list[Transcript]:
    api: list[_ApiMessage] = []
    by_id: dict[str, _ApiMessage] = {}
    boundaries: list[tuple[int, Mapping[str, Any]]] = []
    session_id = agent_id = model = None
    usage: Any = None
    for n, raw in records:
        where = f"{name}:{n}"
        rec = expect_mapping(raw, where)
        kind = rec.get("type")
        session_id = session_id or rec.get("sessionId")
        agent_id = agent_id or rec.get("agentId")
        if kind == "system":
            if rec.get("subtype") == "compact_boundary":
                boundaries.append((len(api), rec))
            continue
        if kind not in ("user", "assistant"):
            # Other kinds (progress, file-history-snapshot, queue-operation and
            # any newer one) carry no message.
            if isinstance(kind, str):
                continue
            raise InvalidMessageError(
                f"{where}: type", f"expected a string, got {type_name(kind)}"
            )
        if "message" not in rec:
            raise InvalidMessageError(f"{where}: message", "missing")
        msg = expect_mapping(rec["message"], f"{where}: message")
        content = msg.get("content")
        blocks = cast("Sequence[Any]", content) if isinstance(content, list) else None
        if kind == "assistant":
            mid = msg.get("id")
            found = by_id.get(mid) if isinstance(mid, str) else None
            if (
                found is not None
                and blocks is not None
                and isinstance(found.content, list)
            ):
                found.spans.append((n, len(found.content)))
                found.content.extend(blocks)
                found.records.append(rec)
                target = found
            else:
                target = _ApiMessage("assistant", _copy(content), [(n, 0)], [rec])
                api.append(target)
                if isinstance(mid, str):
                    by_id[mid] = target
            if isinstance(msg.get("usage"), Mapping):
                target.usage = usage = msg["usage"]
            m = msg.get("model")
            if isinstance(m, str) and m != "<synthetic>":
                model = m
            continue
        results_only = bool(blocks) and all(
            isinstance(b, Mapping)
            and cast("Mapping[str, Any]", b).get("type") == "tool_result"
            for b in blocks or ()
        )
        last = api[-1] if api else None
        if (
            results_only
            and last is not None
            and last.results_only
            and isinstance(last.content, list)
        ):
            last.spans.append((n, len(last.content)))
            last.content.extend(blocks or ())
            last.records.append(rec)
        else:
            api.append(
                _ApiMessage(
                    "user", _copy(content), [(n, 0)], [rec], results_only=results_only
                )
            )
    messages: list[Message] = []
    starts: list[int] = []
    for am in api:
        starts.append(len(messages))
        messages.extend(_convert_api(am, name))
    starts.append(len(messages))
    compactions = [_compaction(starts[k], rec) for k, rec in boundaries]
    title = str(session_id or name) + (f" agent {agent_id}" if agent_id else "")
    meta: dict[str, Any] = {
        "session_id": session_id,
        "compactions": compactions,
        "usage": usage,
    }
    if agent_id:
        meta["agent_id"] = agent_id
    return [Transcript(tuple(messages), "claude_code", title, model, (), meta)]


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
    extra: dict[str, Any] = {
        "uuid": first.get("uuid"),
        "timestamp": first.get("timestamp"),
    }
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
