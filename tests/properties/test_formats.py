"""Properties of the format converters on generated conversations.

What a trip through a provider's shape keeps is what the module docstrings of
``contextwindow.formats`` promise; the ``expected_*`` functions below spell it
out and say where each loss comes from:

- Never carried by any shape: ``agent``, ``pinned`` (storage concerns) and an
  image's ``width``/``height`` (re-read from a ``data:`` URI, else unknown).
- Content written as a string: a lone empty text is written ``""`` and reads
  back as no part at all.
- OpenAI: reasoning not read from ``reasoning_content`` and ``is_error`` are
  dropped; a tool message with several results becomes several messages;
  images in a tool result are left out (Chat's tool message takes text).
- Anthropic: system messages go to the top-level field; consecutive tool
  messages and a directly following user message form one user turn (reading
  gives back one tool message, then the user's parts, if any); names are
  dropped; tool-call arguments are re-serialised compactly; a reused tool
  call id is renamed (Anthropic refuses it twice in a request).
- Responses: reasoning from another shape, ``is_error`` and names are dropped;
  consecutive tool messages (and assistant messages) become one message.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import replace
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
from contextwindow.messages import (
    Image,
    Message,
    Part,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
)

from ._support import for_each

PROVIDERS = ("openai", "anthropic", "responses")

# Generated tool results hold images, which a Chat tool message cannot carry:
# written for Chat they are left out with this warning (formats.openai_chat).
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*an image has no equivalent in the openai tool result"
    ":contextwindow.errors.ContentDroppedWarning"
)


# -- the trips -------------------------------------------------------------------


def write(conv: Sequence[Message], provider: str) -> Any:
    """The provider's dicts: a list, or for Anthropic the request body."""
    if provider == "openai":
        return to_openai(conv)
    if provider == "anthropic":
        return to_anthropic(conv).body()
    return to_responses(conv)


def read(data: Any, provider: str) -> list[Message]:
    """Read what ``write`` wrote (Anthropic: ``system`` and ``messages`` fields)."""
    if provider == "openai":
        return from_openai(data)
    if provider == "anthropic":
        if not isinstance(data, dict):
            return from_anthropic(data)
        turns: Any = data.get("messages")  # None is bad input, to be refused
        return from_anthropic(turns, system=data.get("system"))
    return from_responses(data)


# -- what survives ---------------------------------------------------------------


def sizeless(part: Part, *, detail: bool, default: str | None = None) -> Part:
    """An image without its size (and without ``detail`` where the shape has none;
    ``default`` where the shape writes one for an image without)."""
    if isinstance(part, Image):
        return Image(part.url, (part.detail or default) if detail else None)
    if isinstance(part, ToolResult) and not isinstance(part.content, str):
        content = tuple(
            sizeless(p, detail=detail, default=default) for p in part.content
        )
        return replace(part, content=content)  # type: ignore[arg-type]
    return part


def plain(m: Message, parts: Sequence[Part], *, name: bool = True) -> Message:
    """``m`` with other parts, as a provider gives it back: no agent, not pinned."""
    return Message(m.role, tuple(parts), name=m.name if name else None)


def lone_empty_text_dropped(parts: Sequence[Part]) -> list[Part]:
    """Content written as the string ``""`` reads back as no part."""
    content = [p for p in parts if isinstance(p, (Text, Image))]
    if content == [Text("")]:
        return [p for p in parts if p != Text("")]
    return list(parts)


def without_sizes(
    conv: Sequence[Message], *, detail: bool, default: str | None = None
) -> list[Message]:
    """Messages with image sizes (and maybe details) stripped, for comparing."""
    return [
        replace(
            m,
            parts=tuple(sizeless(p, detail=detail, default=default) for p in m.parts),
        )
        for m in conv
    ]


def expected_openai(conv: Sequence[Message]) -> list[Message]:
    """What ``from_openai(to_openai(conv))`` must give for a generated conversation."""
    out: list[Message] = []
    for m in conv:
        if m.role == "tool":
            for r in m.tool_results:
                out.append(Message("tool", (imageless(r),)))
            continue
        parts = [p for p in m.parts if not isinstance(p, Thinking)]
        out.append(plain(m, lone_empty_text_dropped(parts)))
    return without_sizes(out, detail=True)


def imageless(r: ToolResult) -> ToolResult:
    """A result as Chat's tool message carries it: text alone (images left out,
    with a ``ContentDroppedWarning``; nothing left is ``""``), no ``is_error``."""
    content = r.content
    if not isinstance(content, str):
        kept = tuple(p for p in content if not isinstance(p, Image))
        content = kept or ""
    return replace(r, content=content, is_error=False)


def renamed(conv: Sequence[Message]) -> list[Message]:
    """``conv`` with tool call ids as Anthropic takes them: a reused one gets
    ``_2``, ``_3``... (never an id in use), and results follow their call."""
    taken = {c.id for m in conv for c in m.tool_calls}
    used: set[str] = set()
    latest: dict[str, str] = {}

    def name(part: Part) -> Part:
        if isinstance(part, ToolCall):
            new, k = part.id, 2
            while new in used or (new != part.id and new in taken):
                new, k = f"{part.id}_{k}", k + 1
            used.add(new)
            latest[part.id] = new
            return replace(part, id=new)
        if isinstance(part, ToolResult):
            return replace(part, call_id=latest.get(part.call_id, part.call_id))
        return part

    return [m.with_parts([name(p) for p in m.parts]) for m in conv]


def compact(call: ToolCall) -> ToolCall:
    """Anthropic's ``input`` read back: arguments as compact JSON."""
    value = json.loads(call.arguments) if call.arguments else {}
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return replace(call, arguments=text)


def expected_anthropic(conv: Sequence[Message]) -> list[Message]:
    """What ``from_anthropic`` of ``to_anthropic(conv)`` must give."""
    conv = renamed(conv)
    system = [m for m in conv if m.role == "system"]
    out: list[Message] = []
    if system:
        texts = [p for m in system for p in m.parts]
        out.append(Message("system", tuple(texts)))
    after_results = False
    for m in conv:
        parts = [compact(p) if isinstance(p, ToolCall) else p for p in m.parts]
        if m.role == "system":
            continue
        if m.role == "tool":
            results = [replace(r, name=None) for r in m.tool_results]
            if after_results:
                out[-1] = plain(out[-1], [*out[-1].parts, *results])
            else:
                out.append(Message("tool", tuple(results)))
            after_results = True
            continue
        if m.role == "user" and after_results:
            if parts:  # the rest of the merged user turn, written as a list
                out.append(plain(m, parts, name=False))
        else:  # one plain text block is written as a string
            solo = len(parts) == 1 and isinstance(parts[0], Text)
            out.append(
                plain(m, lone_empty_text_dropped(parts) if solo else parts, name=False)
            )
        after_results = False
    return without_sizes(out, detail=False)


def expected_responses(conv: Sequence[Message]) -> list[Message]:
    """What ``from_responses(to_responses(conv))`` must give."""
    out: list[Message] = []
    for m in conv:
        if m.role == "tool":
            parts: list[Part] = [
                replace(r, is_error=False, name=None) for r in m.tool_results
            ]
        else:
            kept = [p for p in m.parts if not isinstance(p, Thinking)]
            parts = lone_empty_text_dropped(kept)
        if m.role in ("tool", "assistant") and out and out[-1].role == m.role:
            out[-1] = plain(out[-1], [*out[-1].parts, *parts], name=False)
        else:
            out.append(plain(m, parts, name=False))
    # An image without a detail is written with "auto" (the API requires one).
    return without_sizes(out, detail=True, default="auto")


EXPECTED: dict[str, Callable[[Sequence[Message]], list[Message]]] = {
    "openai": expected_openai,
    "anthropic": expected_anthropic,
    "responses": expected_responses,
}


# -- corrupting provider dicts ----------------------------------------------------

_KEYS = (
    "role",
    "content",
    "type",
    "text",
    "name",
    "tool_calls",
    "tool_call_id",
    "function",
    "arguments",
    "image_url",
    "url",
    "id",
    "input",
    "tool_use_id",
    "is_error",
    "source",
    "call_id",
    "output",
    "summary",
    "system",
    "messages",
    "cache_control",
)
_ROLES = ("robot", "", "System", "developer", "function", "tool", "user", "assistant")
_TYPES = (
    "foo",
    "",
    "text",
    "image_url",
    "image",
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "document",
    "message",
    "function_call",
    "function_call_output",
    "reasoning",
    "input_text",
    "output_text",
    "input_image",
    "refusal",
    "summary_text",
    "base64",
    "url",
)


def json_kind(value: object) -> str:
    """The JSON type of a value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "list" if isinstance(value, list) else "object"


def random_json(rng: random.Random, depth: int = 2, avoid: str = "") -> Any:
    """A small random JSON value whose type is not ``avoid``."""
    kinds = [
        k
        for k in ("null", "bool", "number", "string", "list", "object")
        if k != avoid and (depth > 0 or k not in ("list", "object"))
    ]
    kind = rng.choice(kinds)
    if kind == "null":
        return None
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "number":
        return rng.choice((0, -1, 7, 2**60, 1.5, -0.0))
    if kind == "string":
        return rng.choice(("", "x", "{}", "[1]", "{bad json", "data:,", *_TYPES[:6]))
    if kind == "list":
        return [random_json(rng, depth - 1) for _ in range(rng.randrange(3))]
    keys = rng.sample(_KEYS, rng.randrange(3))
    return {k: random_json(rng, depth - 1) for k in keys}


Path = tuple[Any, ...]


def places(tree: Any) -> list[tuple[Path, Any]]:
    """Every value of a JSON tree with its path, the root first."""
    out: list[tuple[Path, Any]] = []
    stack: list[tuple[Path, Any]] = [((), tree)]
    while stack:
        path, node = stack.pop()
        out.append((path, node))
        if isinstance(node, dict):
            stack.extend(((*path, k), v) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend(((*path, k), v) for k, v in enumerate(node))
    return out


def at(tree: Any, path: Path) -> Any:
    """The value at ``path``."""
    for key in path:
        tree = tree[key]
    return tree


def corrupt_once(tree: Any, rng: random.Random, *, keep_root: bool) -> tuple[Any, str]:
    """One random corruption of ``tree`` (changed in place unless the root is
    replaced); returns the new tree and what was done."""
    found = places(tree)
    if keep_root:
        found = found[1:] or found
    dicts = [node for _, node in found if isinstance(node, dict)]
    lists = [node for _, node in found if isinstance(node, list)]
    op = rng.randrange(6)
    if op == 0 and dicts:  # delete a key
        d = rng.choice(dicts)
        if d:
            key = rng.choice(list(d))
            del d[key]
            return tree, f"del {key!r}"
    if op == 1 and dicts:  # garbage role or type
        d = rng.choice(dicts)
        key = "role" if "role" in d or rng.random() < 0.3 else "type"
        d[key] = rng.choice(_ROLES if key == "role" else _TYPES)
        return tree, f"{key} = {d[key]!r}"
    if op == 2 and dicts:  # an extra or replaced key
        d = rng.choice(dicts)
        key = rng.choice(_KEYS)
        d[key] = random_json(rng)
        return tree, f"set {key!r}"
    if op == 3 and lists:  # insert garbage
        seq = rng.choice(lists)
        seq.insert(rng.randrange(len(seq) + 1), random_json(rng))
        return tree, "insert into a list"
    # replace a value with one of another JSON type
    path, node = rng.choice(found)
    value = random_json(rng, avoid=json_kind(node))
    if not path:
        return value, "root replaced"
    at(tree, path[:-1])[path[-1]] = value
    return tree, f"{path} = {value!r}"


def corrupt(data: Any, rng: random.Random, *, keep_root: bool) -> tuple[Any, list[str]]:
    """A deep copy of ``data`` with one to three corruptions."""
    tree = copy.deepcopy(data)
    done = []
    for _ in range(rng.randint(1, 3)):
        tree, what = corrupt_once(tree, rng, keep_root=keep_root)
        done.append(what)
    return tree, done


def enrich(data: Any, rng: random.Random) -> Any:
    """A deep copy with unmodelled keys (nested values) added to random objects
    (not to an Anthropic body itself: only its ``system`` and ``messages`` are read)."""
    tree = copy.deepcopy(data)
    objects = [node for _, node in places(tree)[1:] if isinstance(node, dict)]
    for obj in rng.sample(objects, min(len(objects), 3)):
        obj["x_extra"] = {"nested": [rng.randrange(9), {"deep": "v"}]}
    return tree


def scramble(tree: Any) -> None:
    """Change every object and list of a JSON tree in place."""
    if isinstance(tree, dict):
        for v in tree.values():
            scramble(v)
        tree["scrambled"] = True
    elif isinstance(tree, list):
        for v in tree:
            scramble(v)
        tree.append("scrambled")


# -- the tests -----------------------------------------------------------------------


class TestRoundTrip:
    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_neutral_survives_a_trip(
        self, convs: list[list[Message]], provider: str
    ) -> None:
        """from_x(to_x(conv)) keeps roles, texts, calls, results, images, in order."""
        expected = EXPECTED[provider]
        detail = provider != "anthropic"

        def check(conv: list[Message], rng: random.Random) -> None:
            back = without_sizes(read(write(conv, provider), provider), detail=detail)
            assert back == expected(conv)

        for_each(convs, check)

    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_one_trip_is_a_fixed_point(
        self, convs: list[list[Message]], provider: str
    ) -> None:
        """to_x(from_x(to_x(conv))) == to_x(conv): a second trip changes nothing."""

        def check(conv: list[Message], rng: random.Random) -> None:
            data = write(conv, provider)
            assert write(read(data, provider), provider) == data

        for_each(convs, check)

    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_dicts_survive_a_trip_with_extras(
        self, some_convs: list[list[Message]], provider: str
    ) -> None:
        """to_x(from_x(d)) == d, also with unmodelled keys added anywhere."""

        def check(conv: list[Message], rng: random.Random) -> None:
            data = enrich(write(conv, provider), rng)
            assert write(read(data, provider), provider) == data

        for_each(some_convs, check)


class TestPurity:
    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_writing_leaves_the_messages_alone(
        self, convs: list[list[Message]], provider: str
    ) -> None:
        """to_x never changes the neutral list: same messages, ids and meta."""

        def check(conv: list[Message], rng: random.Random) -> None:
            before = list(conv)
            ids = [m.id for m in conv]
            metas = [copy.deepcopy(dict(m.meta)) for m in conv]
            write(conv, provider)
            assert len(conv) == len(before)
            assert all(a is b for a, b in zip(conv, before, strict=True))
            assert conv == before
            assert [m.id for m in conv] == ids
            assert [dict(m.meta) for m in conv] == metas

        for_each(convs, check)

    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_reading_leaves_the_dicts_alone(
        self, convs: list[list[Message]], provider: str
    ) -> None:
        """from_x never changes its input dicts (unmodelled keys added to them)."""

        def check(conv: list[Message], rng: random.Random) -> None:
            data = enrich(write(conv, provider), rng)
            kept = copy.deepcopy(data)
            read(data, provider)
            assert data == kept

        for_each(convs, check)

    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_output_shares_nothing_with_input(
        self, some_convs: list[list[Message]], provider: str
    ) -> None:
        """Changing the dicts after from_x, or to_x's output, changes no message."""

        def check(conv: list[Message], rng: random.Random) -> None:
            data = enrich(write(conv, provider), rng)
            msgs = read(data, provider)
            first = write(msgs, provider)
            kept = copy.deepcopy(first)
            scramble(data)
            scramble(first)
            assert write(msgs, provider) == kept

        for_each(some_convs, check)


def lossless_anthropic(body: Any) -> bool:
    """Whether Anthropic's contract promises a dict round trip for ``body``."""
    turns = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(turns, list):
        return True
    only_results = False
    for t in turns:
        content = t.get("content") if isinstance(t, dict) else None
        user = isinstance(t, dict) and t.get("role") == "user"
        if user and only_results:
            return False  # a user turn of results alone, then a user turn
        kinds = (
            [b.get("type") if isinstance(b, dict) else None for b in content]
            if isinstance(content, list)
            else []
        )
        firsts = kinds[: kinds.count("tool_result")]
        if any(k != "tool_result" for k in firsts):
            return False  # results not first
        only_results = user and bool(kinds) and set(kinds) == {"tool_result"}
    return True


class TestBadInput:
    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_corrupt_dicts_raise_only_invalid_message_error(
        self, convs: list[list[Message]], provider: str
    ) -> None:
        """from_x of corrupted dicts succeeds or raises InvalidMessageError, only."""
        roots = {
            "openai": ("messages",),
            "anthropic": ("messages", "system"),
            "responses": ("input",),
        }[provider]

        def check(conv: list[Message], rng: random.Random) -> None:
            data = write(conv, provider)
            for _ in range(2):
                bad, done = corrupt(data, rng, keep_root=provider == "anthropic")
                try:
                    read(bad, provider)
                except InvalidMessageError as exc:
                    path = exc.path
                except Exception as exc:
                    raise AssertionError(f"{done}: {bad!r}") from exc
                else:
                    continue
                assert path.startswith(roots), (path, done)

        for_each(convs, check)

    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_accepted_corrupt_dicts_still_round_trip(
        self, some_convs: list[list[Message]], provider: str
    ) -> None:
        """Corrupted dicts that from_x accepts are written back as they were read."""

        def check(conv: list[Message], rng: random.Random) -> None:
            data = write(conv, provider)
            for _ in range(2):
                bad, done = corrupt(data, rng, keep_root=provider == "anthropic")
                try:
                    msgs = read(bad, provider)
                except InvalidMessageError:
                    continue
                if provider == "anthropic" and not lossless_anthropic(bad):
                    continue
                if isinstance(bad, str):  # Responses' string input: one user message
                    continue
                if provider == "anthropic":  # only these fields are read
                    keys = ("system", "messages")
                    bad = {k: v for k, v in bad.items() if k in keys and v is not None}
                try:
                    assert write(msgs, provider) == bad
                except Exception as exc:
                    raise AssertionError(f"{done}: {bad!r}") from exc

        for_each(some_convs, check)
