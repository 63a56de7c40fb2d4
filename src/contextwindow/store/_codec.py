"""Rows: what every backend writes and reads, and the checks on reading them.

Contract:

- A backend moves rows and nothing else; this module turns messages into rows
  and rows back into validated values, so every backend stores the same bytes
  and refuses the same faults.
- A log row is ``(position, id, agent, time, tokens, digest, body)``: ``body``
  is the message in ``contextwindow.wire``'s JSON form (compact, UTF-8, key
  order kept), ``tokens`` a JSON object of counts, ``digest`` covers both:
  the body's BLAKE2b-128 in hex, then (when there are counts) ``.`` and the
  BLAKE2b-128 of that and the counts, so a changed count is damage like a
  changed body, and a view can still point at a body by its digest's first
  part. ``id`` and ``agent`` repeat the body's, for queries; reads check
  that they agree.
- A view row is ``(index, ref, kind, origins, digest, body)``: an ``original``
  has ``ref`` (the log position of the message it is) and no body; the others
  have a body. ``origins`` is a JSON array of log positions.
- A conversation id is printable Unicode (no control character, no lone
  surrogate, no separator but the space), 1 to ``MAX_ID`` characters: one
  rule for every backend, checked before any of them sees it.
- Reading checks types, JSON, digests, positions (a gap or a surplus is an
  error) and the wire form; every fault is a ``StoreError`` naming the
  conversation, the position and what is wrong. Nothing is skipped.

Example:
    >>> rows = encode_log("c1", [Message.user("hi", id="u1")], None, 0, 1.5)
    >>> rows[0][:5]
    (0, 'u1', None, 1.5, '{}')
    >>> rows[0][6]
    '{"role":"user","parts":[{"kind":"text","text":"hi"}],"id":"u1"}'
    >>> [e.message.text for e in decode_log("c1", rows, 0, 1)]
    ['hi']
    >>> try:
    ...     decode_log("c1", rows, 0, 2)
    ... except StoreError as exc:
    ...     print(exc)
    conversation 'c1': the log is at version 2 but holds 1 message(s) from \
position 0 (position 1 is missing)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

from contextwindow._args import check_items, check_strs, shown
from contextwindow.errors import ArgumentTypeError, InvalidMessageError, StoreError
from contextwindow.messages import Message
from contextwindow.store.base import (
    ConversationInfo,
    StoredMessage,
    StoredView,
    ViewKind,
    ViewMessage,
)
from contextwindow.wire import message_from_dict, message_to_dict

__all__ = [
    "MAX_ID",
    "InfoRow",
    "LogRow",
    "ViewRow",
    "body_digest",
    "body_part",
    "check_id",
    "decode_info",
    "decode_log",
    "decode_view",
    "encode_json",
    "encode_log",
    "encode_meta",
    "encode_view",
    "message_list",
    "meta_value",
    "row_digest",
]

LogRow = tuple[int, str, str | None, float, str, str, str]
"""``(position, id, agent, time, tokens, digest, body)``."""
ViewRow = tuple[int, int | None, str, str, str, str | None]
"""``(index, ref, kind, origins, digest, body)``."""
InfoRow = tuple[Any, ...]
"""``(id, version, created, updated, meta, view_version)`` as a backend read
it (``decode_info`` checks it); ``meta`` is one JSON object, or (Redis) each
key's JSON value."""

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_KINDS: frozenset[str] = frozenset(("original", "rewritten", "new"))
MAX_ID = 256
"""Longest conversation id, in characters (at most 1 KiB of UTF-8, within
every backend's key and index limits)."""


def _conv(cid: str) -> str:
    return f"conversation {cid!r}"


def check_id(cid: object) -> str:
    r"""Return ``cid`` if it can name a conversation, else raise ``StoreError``.

    Example:
        >>> check_id("support-42")
        'support-42'
        >>> check_id("")
        Traceback (most recent call last):
        ...
        contextwindow.errors.StoreError: a conversation id must be a non-empty ...
        >>> check_id("a\ud800b")
        Traceback (most recent call last):
        ...
        contextwindow.errors.StoreError: conversation id 'a\ud800b': character 1 ...
    """
    rule = f"printable text of 1 to {MAX_ID} characters"
    if not isinstance(cid, str) or not cid:
        raise StoreError(
            f"a conversation id must be a non-empty string ({rule}), got "
            + repr(cid)[:100]
        )
    if len(cid) > MAX_ID:
        raise StoreError(
            f"conversation id {cid[:40]!r}...: {len(cid)} characters; an id is {rule}"
        )
    if not cid.isprintable():
        k = next(i for i, c in enumerate(cid) if not c.isprintable())
        raise StoreError(
            f"conversation id {cid[:100]!r}: character {k} ({cid[k]!r}) is not "
            f"printable; an id is {rule}"
        )
    return cid


def body_digest(body: str) -> str:
    """The BLAKE2b-128 of a body, in hex: what a view's pointer compares."""
    return hashlib.blake2b(body.encode("utf-8"), digest_size=16).hexdigest()


def row_digest(body: str, counts: str) -> str:
    """A log row's digest: the body's, then the counts' when there are any.

    Example:
        >>> len(row_digest("{}", "{}")), len(row_digest("{}", '{"a":1}'))
        (32, 65)
    """
    digest = body_digest(body)
    if counts == "{}":
        return digest
    tail = hashlib.blake2b(f"{digest}\n{counts}".encode(), digest_size=16)
    return f"{digest}.{tail.hexdigest()}"


def body_part(digest: object) -> str:
    """The body's digest within a row's digest (what ``body_digest`` gives)."""
    return str(digest).partition(".")[0]


def encode_json(cid: str, what: str, value: object) -> str:
    """``value`` as compact JSON; ``StoreError`` naming ``what`` if it is not JSON."""
    try:
        text = _ENCODER.encode(value)
        text.encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{_conv(cid)}: {what} is not JSON: {exc}") from exc
    return text


def _body(cid: str, msg: object, where: str) -> tuple[str, str]:
    if not isinstance(msg, Message):
        raise StoreError(f"{_conv(cid)}: {where}: expected a Message, got {msg!r}")
    for name in ("id", "agent"):
        value = getattr(msg, name)
        if value is not None and "\0" in value:
            raise StoreError(f"{_conv(cid)}: {where}.{name}: holds a NUL character")
    body = encode_json(cid, where, message_to_dict(msg))
    return body, body_digest(body)


def message_list(value: object, name: str = "messages") -> list[Message]:
    """The ``messages`` argument of a store call as a list.

    Its items are checked when encoded. One ``Message`` alone is refused, naming the argument: it is not a list
    of them, and would otherwise fail as Python's "not iterable".

    Example:
        >>> message_list(Message.user("hi"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        contextwindow.errors.ArgumentTypeError: messages: expected a list of Messages, got ... (one Message: pass [message])
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    takes = "a list of Messages"
    if isinstance(value, Message):
        raise ArgumentTypeError(
            name, shown(value), takes, "one Message: pass [message]"
        )
    return check_items(value, name, takes=takes)


def _token_list(tokens: object) -> list[Mapping[Any, Any]] | None:
    """The ``tokens`` argument as a list of mappings (``None`` stays ``None``)."""
    if tokens is None:
        return None
    takes = "a list of mappings of counter names to token counts, one per message"
    counts: list[object] = check_items(tokens, "tokens", takes=takes)
    for i, item in enumerate(counts):
        if not isinstance(item, Mapping):
            raise ArgumentTypeError(
                f"tokens[{i}]", shown(item), "a mapping of counter names to tokens"
            )
    return cast("list[Mapping[Any, Any]]", counts)


def encode_log(
    cid: str,
    messages: Sequence[Message],
    tokens: Sequence[Mapping[str, int]] | None,
    start: int,
    now: float,
) -> list[LogRow]:
    """The rows of ``messages`` appended at position ``start``.

    Raises:
        ArgumentTypeError: ``tokens`` is not a list of mappings.
        StoreError: A message or a count that cannot be stored, or not one
            count per message.
    """
    tokens = _token_list(tokens)
    if tokens is not None and len(tokens) != len(messages):
        raise StoreError(
            f"{_conv(cid)}: {len(tokens)} token counts for {len(messages)} messages"
        )
    rows: list[LogRow] = []
    for i, msg in enumerate(messages):
        body, _ = _body(cid, msg, f"messages[{i}]")
        counts = "{}"
        if tokens is not None and tokens[i]:
            counts = _counts_text(cid, i, tokens[i])
        digest = row_digest(body, counts)
        rows.append((start + i, msg.id, msg.agent, now, counts, digest, body))
    return rows


def _counts_text(cid: str, i: int, counts: Mapping[Any, Any]) -> str:
    for name, n in counts.items():
        if not _is_count(n) or not isinstance(name, str):
            raise StoreError(
                f"{_conv(cid)}: tokens[{i}]: expected counter names to integers "
                f">= 0, got {name!r}: {n!r}"
            )
    return encode_json(cid, f"tokens[{i}]", dict(counts))


def _is_count(n: object) -> bool:
    """Whether ``n`` is a token count: an ``int`` >= 0.

    A manager resuming the conversation takes a count as it is: a negative
    one would be summed into every total it makes.
    """
    return isinstance(n, int) and not isinstance(n, bool) and n >= 0


def encode_meta(cid: str, meta: Mapping[Any, Any]) -> str:
    """The metadata as one JSON object.

    Raises:
        ArgumentTypeError: ``meta`` is not a mapping.
        StoreError: A key that is not a ``str``, or a value that is not JSON.
    """
    if not isinstance(meta, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
        raise ArgumentTypeError(
            "meta", shown(meta), "a mapping of str keys to JSON values"
        )
    for key in meta:
        if not isinstance(key, str):
            raise StoreError(f"{_conv(cid)}: metadata keys must be strings: {key!r}")
    return encode_json(cid, "metadata", dict(meta))


def meta_value(cid: str, key: object, value: object) -> str:
    """One metadata value as JSON (stores that keep each key apart)."""
    if not isinstance(key, str):
        raise StoreError(f"{_conv(cid)}: metadata keys must be strings: {key!r}")
    return encode_json(cid, f"metadata[{key!r}]", value)


# -- reading ---------------------------------------------------------------------


def _corrupt(cid: str, where: str, what: str) -> StoreError:
    return StoreError(f"{_conv(cid)}, {where}: {what}")


def _load_json(cid: str, where: str, text: object) -> Any:
    if not isinstance(text, str):
        raise _corrupt(cid, where, f"expected JSON text, got {type(text).__name__}")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise _corrupt(cid, where, f"not valid JSON ({exc})") from exc


def _int(cid: str, where: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _corrupt(cid, where, f"expected a non-negative integer, got {value!r}")
    return value


def _number(cid: str, where: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _corrupt(cid, where, f"expected a number, got {value!r}")
    return float(value)


def _message(
    cid: str, where: str, body: object, digest: object, counts: object = "{}"
) -> Message:
    if not isinstance(body, str):
        raise _corrupt(cid, where, f"body: expected JSON text, got {body!r}"[:300])
    if body_digest(body) != body_part(digest):
        raise _corrupt(cid, where, "body does not match its digest (changed or cut)")
    if not isinstance(counts, str) or row_digest(body, counts) != digest:
        raise _corrupt(
            cid, where, "token counts do not match the digest (changed or cut)"
        )
    data = _load_json(cid, f"{where} body", body)
    try:
        return message_from_dict(data, path="message")
    except InvalidMessageError as exc:
        raise _corrupt(cid, where, f"not a message: {exc}") from exc


def _counts(cid: str, where: str, text: object) -> Mapping[str, int]:
    if text == "{}":
        return {}
    value = _load_json(cid, f"{where} tokens", text)
    counts = cast("dict[str, object]", value) if isinstance(value, dict) else None
    if counts is None or not all(map(_is_count, counts.values())):
        raise _corrupt(cid, where, f"tokens: expected counts, got {text!r}"[:300])
    return cast("dict[str, int]", counts)


def decode_row(cid: str, row: Sequence[Any]) -> StoredMessage:
    """One log row as a ``StoredMessage``, every field checked.

    Counts a digest does not cover (one without its ``.`` part) are left out,
    to be counted again: a release before digests covered counts wrote them
    so, a worker of that release may still be appending during a rolling
    upgrade, and an unread database (read-only) keeps them.
    """
    if len(row) != 7:
        raise StoreError(f"{_conv(cid)}: a log row has {len(row)} fields, not 7")
    position, ident, agent, when, counts, digest, body = row
    if isinstance(digest, str) and "." not in digest:
        counts = "{}"
    where = f"message {_int(cid, 'a log row position', position)}"
    msg = _message(cid, where, body, digest, counts)
    if ident != msg.id or agent != msg.agent:
        raise _corrupt(
            cid,
            where,
            f"the row says id {ident!r}, agent {agent!r}; "
            f"its body says {msg.id!r}, {msg.agent!r}",
        )
    return StoredMessage(
        position, msg, _number(cid, f"{where} time", when), _counts(cid, where, counts)
    )


def decode_log(
    cid: str,
    rows: Iterable[Sequence[Any]],
    since: int,
    version: int,
) -> tuple[StoredMessage, ...]:
    """Rows ``since`` to ``version - 1``, in order: all of them, nothing else."""
    out: list[StoredMessage] = []
    expect = since
    for row in rows:
        entry = decode_row(cid, row)
        if entry.position != expect:
            what = "missing" if entry.position > expect else "repeated"
            raise StoreError(
                f"{_conv(cid)}: position {expect} is {what} "
                f"(found position {entry.position} instead)"
            )
        out.append(entry)
        expect += 1
    if expect != max(version, since):
        raise StoreError(
            f"{_conv(cid)}: the log is at version {version} but holds "
            f"{expect - since} message(s) from position {since} "
            + (
                f"(position {expect} is missing)"
                if expect < version
                else f"(position {version} should not exist)"
            )
        )
    return tuple(out)


def decode_info(cid: str, row: Sequence[Any]) -> ConversationInfo:
    """A conversation row as ``ConversationInfo``, every field checked."""
    ident, version, created, updated, meta, view_version = row
    where = "metadata"
    values: dict[str, Any]
    if isinstance(meta, Mapping):
        fields = cast("Mapping[str, object]", meta)
        values = {k: _load_json(cid, f"{where}[{k!r}]", v) for k, v in fields.items()}
    else:
        loaded = _load_json(cid, where, meta)
        if not isinstance(loaded, dict):
            raise _corrupt(cid, where, f"expected an object, got {meta!r}"[:300])
        values = cast("dict[str, Any]", loaded)
    return ConversationInfo(
        str(ident),
        _int(cid, "version", version),
        _number(cid, "created", created),
        _number(cid, "updated", updated),
        values,
        None if view_version is None else _int(cid, "view version", view_version),
    )


# -- views -----------------------------------------------------------------------


def encode_view(
    cid: str,
    messages: Sequence[Message],
    index: Iterable[tuple[int, str, str]],
    sources: Mapping[str, Sequence[str]] | None,
) -> list[ViewRow]:
    """The rows of a view, given the log's ``(position, id, digest)`` index.

    A view message whose body equals a log message with its id becomes a
    pointer to it; others are kept whole (see the module's contract).
    """
    named = _sources(sources)
    by_id: dict[str, list[tuple[int, str]]] = {}
    for position, ident, digest in index:
        by_id.setdefault(ident, []).append((position, body_part(digest)))
    view_ids = {getattr(m, "id", None) for m in messages}
    for key in named:
        if key not in view_ids:
            raise StoreError(f"{_conv(cid)}: sources names {key!r}, not in the view")
    rows: list[ViewRow] = []
    for i, msg in enumerate(messages):
        body, digest = _body(cid, msg, f"view[{i}]")
        found = by_id.get(msg.id, [])
        ref = next((p for p, d in found if d == digest), None)
        kind: ViewKind
        if ref is not None:
            rows.append((i, ref, "original", f"[{ref}]", digest, None))
            continue
        kind = "rewritten" if found else "new"
        origins = [p for p, _ in found]
        if msg.id in named:
            origins = _origins(cid, msg.id, named[msg.id], by_id)
        rows.append((i, None, kind, json.dumps(origins), digest, body))
    return rows


def _sources(sources: object) -> dict[str, tuple[str, ...]]:
    """``sources`` checked: a mapping of view message ids to log message ids.

    Raises:
        ArgumentTypeError: Not a mapping (``None`` is none), a key not a
            ``str``, or a value neither an id nor an iterable of ids.
    """
    if sources is None:
        return {}
    takes = "a mapping of view message ids to the ids of their log messages"
    if not isinstance(sources, Mapping):
        raise ArgumentTypeError("sources", shown(sources), takes)
    named: dict[str, tuple[str, ...]] = {}
    for key, ids in cast("Mapping[object, object]", sources).items():
        if not isinstance(key, str):
            raise ArgumentTypeError("sources", shown(key), takes, "a key is no str")
        named[key] = check_strs(ids, f"sources[{key!r}]")
    return named


def _origins(
    cid: str, key: str, ids: Sequence[str], by_id: Mapping[str, list[tuple[int, str]]]
) -> list[int]:
    out: list[int] = []
    for ident in ids:
        if ident not in by_id:
            raise StoreError(
                f"{_conv(cid)}: sources[{key!r}] names {ident!r}, which the log "
                "does not hold up to the view's version"
            )
        out += [p for p, _ in by_id[ident]]
    return sorted(set(out))


def decode_view(
    cid: str,
    head: Sequence[Any],
    rows: Iterable[Sequence[Any]],
    lookup: Callable[[int], tuple[Message, str] | None],
) -> StoredView:
    """A view's head ``(version, time, report)`` and rows, every field checked.

    ``lookup(position)`` gives the log message an ``original`` points to, and
    its digest (``None`` when the log does not hold it).
    """
    version_v, when, report_text = head
    version = _int(cid, "view version", version_v)
    report = None
    if report_text is not None:
        report = _load_json(cid, "view report", report_text)
        if not isinstance(report, dict):
            raise _corrupt(cid, "view report", "expected a JSON object")
    entries: list[ViewMessage] = []
    for expect, row in enumerate(rows):
        entries.append(_view_entry(cid, expect, version, row, lookup))
    return StoredView(
        version,
        tuple(entries),
        cast("dict[str, Any] | None", report),
        _number(cid, "view time", when),
    )


def _view_entry(
    cid: str,
    expect: int,
    version: int,
    row: Sequence[Any],
    lookup: Callable[[int], tuple[Message, str] | None],
) -> ViewMessage:
    index, ref, kind, origins_text, digest, body = row
    where = f"view message {expect}"
    if index != expect:
        raise _corrupt(cid, where, f"found view message {index!r} in its place")
    if kind not in _KINDS:
        raise _corrupt(cid, where, f"unknown kind {kind!r}")
    origins = _load_json(cid, f"{where} origins", origins_text)
    if not isinstance(origins, list) or not all(
        isinstance(p, int) and not isinstance(p, bool) and 0 <= p < version
        for p in cast("list[object]", origins)
    ):
        raise _corrupt(cid, where, f"origins: expected log positions, got {origins!r}")
    if kind != "original":
        msg = _message(cid, where, body, digest)
    else:
        position = _int(cid, f"{where} ref", ref)
        original = lookup(position) if position < version else None
        if original is None:
            raise _corrupt(
                cid, where, f"points to message {position}, which the log lacks"
            )
        if body_part(original[1]) != digest:
            raise _corrupt(cid, where, f"points to message {position}, which differs")
        msg = original[0]
    return ViewMessage(msg, cast(ViewKind, kind), tuple(cast("list[int]", origins)))
