"""Fakes and hypothesis strategies, for users' tests and for ours.

Contract:

- Importing this module needs nothing beyond contextwindow: hypothesis is
  imported inside the strategy functions, so ``FakeTokenizer`` works without it
  and the strategies need ``pip install 'contextwindow[test]'``.
- ``conversations()`` only generates conversations a provider would accept in
  their neutral form: every tool call is answered by the tool messages right
  after it (in any order), no result is an orphan, and turns alternate (a
  system message first, sometimes; then a user turn; then the assistant's tool
  exchanges and reply). Within that, it covers what breaks naive code: call ids
  reused across exchanges, parallel calls, results split over several messages
  or batched in one, images, CJK and emoji text, empty contents, thinking
  parts, pinned messages, agents, names and meta.
- Generated message ids are ``m0``, ``m1``... in order, so failures replay.

Example:
    >>> tok = FakeTokenizer()
    >>> tok.count("two words"), tok.calls
    (2, ['two words'])
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from contextwindow.messages import (
    Image,
    Message,
    Part,
    Role,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
)

if TYPE_CHECKING:
    from hypothesis.strategies import DrawFn, SearchStrategy

    class _Add(Protocol):
        def __call__(self, role: Role, parts: Sequence[Part], **kw: Any) -> None: ...


__all__ = [
    "SAMPLE_TEXTS",
    "FakeTokenizer",
    "agent_session",
    "call_handler",
    "conversations",
    "images",
    "messages_strategy",
    "parts_strategy",
    "texts",
]


class FakeTokenizer:
    r"""Counts whitespace-separated words, and records every text counted.

    Args:
        name: The name it reports.
        exact: What ``exact`` reports.

    Example:
        >>> tok = FakeTokenizer()
        >>> tok.count("a b  c\n"), tok.count("")
        (3, 0)
        >>> tok.calls
        ['a b  c\n', '']
    """

    __slots__ = ("_exact", "_name", "calls")

    def __init__(self, name: str = "fake", *, exact: bool = True) -> None:
        self._name = name
        self._exact = exact
        self.calls: list[str] = []
        """Every text passed to ``count``, in order."""

    @property
    def name(self) -> str:
        """The name given (``fake``)."""
        return self._name

    @property
    def exact(self) -> bool:
        """The ``exact`` given (``True``)."""
        return self._exact

    def count(self, text: str) -> int:
        """Return the number of whitespace-separated words in ``text``."""
        self.calls.append(text)
        return len(text.split())

    def reset(self) -> None:
        """Forget the recorded calls."""
        self.calls.clear()

    def __repr__(self) -> str:
        return f"FakeTokenizer({self._name!r}, calls={len(self.calls)})"


def agent_session(exchanges: int = 8, size: int = 70) -> list[Message]:
    """A small agent session: a system prompt, a task, tool exchanges, a question.

    Each of the ``exchanges`` is a ``read`` call and a result of ``size``
    words (``FakeTokenizer`` counts one token a word).

    Example:
        >>> [m.role for m in agent_session(1)]
        ['system', 'user', 'assistant', 'tool', 'user']
    """
    out = [Message.system("You are a coding agent."), Message.user("Fix the bug.")]
    for i in range(exchanges):
        out.append(Message.assistant(tool_calls=[ToolCall(f"c{i}", "read")]))
        words = " ".join(f"r{i}_{k}" for k in range(size))
        out.append(Message.tool(f"c{i}", words))
    out.append(Message.user("Where is it?"))
    return out


def call_handler(handler: Any, *, threshold: float = 60, limit: int = 1000) -> Any:
    """Run ``handler(ctx)`` as a threshold handler; return what it returned.

    The manager (window ``limit``, ``FakeTokenizer``, no strategy of its own)
    holds ``agent_session()``: 690 tokens, 69 % of the default window, so a
    handler at 60 % runs during the first ``prepare``. For trying a handler,
    in docs and tests.

    Example:
        >>> call_handler(lambda ctx: (ctx.threshold, ctx.tokens_used))
        (60, 690)
    """
    from contextwindow.manager import ContextManager  # lazily: a layer above this one

    m = ContextManager(token_limit=limit, tokenizer=FakeTokenizer(), strategy=None)
    m.push_many(agent_session())
    out: list[Any] = []

    def record(ctx: Any) -> None:
        out.append(handler(ctx))

    m.on_threshold(threshold)(record)
    m.prepare()
    if not out:
        raise AssertionError(f"the handler at {threshold}% did not run")
    return out[0]


SAMPLE_TEXTS: tuple[str, ...] = (
    "",
    "ok",
    "What is the weather in Paris today?",
    "東京タワーの高さは何メートルですか？",  # noqa: RUF001  # CJK uses the full-width mark
    "北京今天天气怎么样",
    "서울의 인구는 얼마입니까?",
    "def add(a, b):\n    return a + b\n",
    '{"status": "ok", "items": [1, 2, 3]}',
    "Emoji 🙂👍🏽 and accents: café, naïve.",
    "  padded  \n\n\ttabs\r\nand CRLF  ",
    "line\n" * 20,
    "The quick brown fox jumps over the lazy dog. " * 8,
    "Unicode breaks: a\u2028b\u2029c\x85d\x1ce\x0bf",
)
"""Texts that trip naive counters and readers: empty, CJK, code, JSON, emoji,
whitespace, and the characters ``str.splitlines`` treats as line breaks."""

_TOOL_NAMES = ("search", "read_file", "get_weather", "run_tests", "book_flight")
_CALL_IDS = ("call_0", "call_1", "call_2", "toolu_01", "toolu_02", "c")
_AGENTS: tuple[tuple[str | None, ...], ...] = (
    (None,),
    ("planner", "coder"),
    ("researcher", None),
)
_METAS: tuple[dict[str, Any], ...] = (
    {},
    {},
    {"cache_control": {"type": "ephemeral"}},
    {"source": "test", "turn": 3},
)
_ARGUMENTS = (
    "{}",
    '{"q": "tides in Brest"}',
    '{"path": "src/app.py", "start": 1, "end": 80}',
    '{"city": "東京"}',
    '{"n": 3, "flags": [true, false, null]}',
    '{"query":"compact, no spaces"}',
)
_PIXEL_PNG = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4"
    "2mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def texts() -> SearchStrategy[str]:
    """Text: the ``SAMPLE_TEXTS``, or anything hypothesis makes up.

    Example:
        >>> from hypothesis import given, settings
        >>> @settings(max_examples=20)
        ... @given(texts())
        ... def check(text):
        ...     assert isinstance(text, str)
        >>> check()
    """
    _need_hypothesis()
    from hypothesis import strategies as st

    return st.one_of(st.sampled_from(SAMPLE_TEXTS), st.text(max_size=40))


def images() -> SearchStrategy[Image]:
    """Images: a URL or a ``data:`` URI, with or without detail and size."""
    _need_hypothesis()
    from hypothesis import strategies as st

    return st.builds(
        Image,
        st.sampled_from(("https://example.com/cat.png", _PIXEL_PNG)),
        detail=st.sampled_from((None, "low", "high", "auto")),
        width=st.none() | st.integers(1, 4096),
        height=st.none() | st.integers(1, 4096),
    )


def _arguments() -> SearchStrategy[str]:
    _need_hypothesis()
    from hypothesis import strategies as st

    value = st.one_of(st.integers(-5, 5), st.sampled_from(SAMPLE_TEXTS[:6]))
    objects = st.dictionaries(st.sampled_from(("q", "path", "city", "n")), value)
    return objects.map(json.dumps)


def parts_strategy() -> SearchStrategy[Part]:
    """Any single part, with every optional field exercised."""
    _need_hypothesis()
    from hypothesis import strategies as st

    content = st.one_of(
        texts(),
        st.lists(st.one_of(texts().map(Text), images()), max_size=3).map(tuple),
    )
    return st.one_of(
        texts().map(Text),
        images(),
        st.builds(
            ToolCall,
            st.sampled_from(_CALL_IDS),
            st.sampled_from(_TOOL_NAMES),
            _arguments(),
        ),
        st.builds(
            ToolResult,
            st.sampled_from(_CALL_IDS),
            content,
            is_error=st.booleans(),
            name=st.none() | st.sampled_from(_TOOL_NAMES),
        ),
        st.builds(
            Thinking,
            texts(),
            signature=st.none() | st.text(max_size=20),
            redacted=st.booleans(),
        ),
    )


def _json_values() -> SearchStrategy[Any]:
    _need_hypothesis()
    from hypothesis import strategies as st

    scalars = (
        st.none()
        | st.booleans()
        | st.integers(-(2**53), 2**53)
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=10)
    )
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.text(max_size=5), inner, max_size=3)
        ),
        max_leaves=6,
    )


def messages_strategy() -> SearchStrategy[Message]:
    """Single messages of any role with any parts: for round-trip tests.

    Unlike ``conversations()``, parts need not suit the role; every field of
    ``Message`` (id, name, agent, pinned, JSON-valued meta) is exercised.

    Example:
        >>> from hypothesis import given, settings
        >>> from contextwindow.wire import message_from_dict, message_to_dict
        >>> @settings(max_examples=20)
        ... @given(messages_strategy())
        ... def round_trip(msg):
        ...     assert message_from_dict(message_to_dict(msg)) == msg
        >>> round_trip()
    """
    _need_hypothesis()
    from hypothesis import strategies as st

    roles: tuple[Role, ...] = ("system", "user", "assistant", "tool")
    return st.builds(
        Message,
        st.sampled_from(roles),
        st.lists(parts_strategy(), max_size=4).map(tuple),
        name=st.none() | st.sampled_from(("ada", "bob", "")),
        agent=st.none() | st.sampled_from(("planner", "coder")),
        pinned=st.booleans(),
        id=st.text(max_size=12),
        meta=st.dictionaries(st.text(max_size=8), _json_values(), max_size=3),
    )


def conversations(
    *,
    min_turns: int = 0,
    max_turns: int = 6,
    system: bool | None = None,
    tools: bool = True,
) -> SearchStrategy[list[Message]]:
    """Valid neutral conversations (see the module's contract).

    Args:
        min_turns: Fewest user turns.
        max_turns: Most user turns.
        system: Whether to start with a system message; ``None`` draws it.
        tools: Whether assistant turns may call tools.

    Example:
        >>> from hypothesis import given, settings
        >>> from contextwindow.messages import units
        >>> @settings(max_examples=20)
        ... @given(conversations(min_turns=1))
        ... def check(conv):
        ...     assert conv[0].role in ("system", "user")
        ...     assert all(u.complete for u in units(conv))
        >>> check()
    """
    _need_hypothesis()
    from hypothesis import strategies as st

    kit = _kit()

    def build(draw: DrawFn) -> list[Message]:
        out: list[Message] = []
        agents = draw(kit.agents)

        def add(role: Role, parts: Sequence[Part], **kw: Any) -> None:
            out.append(
                Message(
                    role,
                    tuple(parts),
                    agent=agents[draw(kit.index) % len(agents)],
                    pinned=draw(kit.chance) == 0,
                    meta=copy.deepcopy(draw(kit.meta)),
                    id=f"m{len(out)}",
                    **kw,
                )
            )

        if system if system is not None else draw(kit.flag):
            add("system", [Text(draw(kit.text))])
        turns = draw(st.integers(min_turns, max_turns))
        for turn in range(turns):
            last = turn == turns - 1
            user: list[Part] = [Text(t) for t in draw(kit.user_texts)]
            user += draw(kit.user_images if user else kit.only_images)
            add("user", user, name=draw(kit.name))
            if last and draw(kit.chance) == 0:
                break  # pending: the model has not answered yet
            for _ in range(draw(kit.exchanges) if tools else 0):
                _exchange(draw, kit, add)
            if last and tools and draw(kit.chance) == 0:
                break  # ends on tool results, as an agent loop does
            reply: list[Part] = []
            if draw(kit.chance) == 0:
                reply.append(_thinking(draw, kit))
            reply.append(Text(draw(kit.text)))
            add("assistant", reply)
        return out

    return st.composite(build)()


@dataclass(frozen=True)
class _Kit:
    """Strategies built once: building them inside a draw loop is slow."""

    text: SearchStrategy[str]
    image: SearchStrategy[Image]
    arguments: SearchStrategy[str]
    tool_name: SearchStrategy[str]
    flag: SearchStrategy[bool]
    chance: SearchStrategy[int]  # 0 one time in four
    index: SearchStrategy[int]
    calls: SearchStrategy[int]
    exchanges: SearchStrategy[int]
    ids: SearchStrategy[list[str]]
    order: SearchStrategy[list[int]]
    signature: SearchStrategy[str | None]
    opaque: SearchStrategy[str]
    agents: SearchStrategy[tuple[str | None, ...]]
    meta: SearchStrategy[dict[str, Any]]
    name: SearchStrategy[str | None]
    user_texts: SearchStrategy[list[str]]
    user_images: SearchStrategy[list[Image]]
    only_images: SearchStrategy[list[Image]]


@functools.lru_cache(maxsize=1)
def _kit() -> _Kit:
    _need_hypothesis()
    from hypothesis import strategies as st

    text = texts()
    image = images()
    return _Kit(
        text=text,
        image=image,
        arguments=st.sampled_from(_ARGUMENTS),
        tool_name=st.sampled_from(_TOOL_NAMES),
        flag=st.booleans(),
        chance=st.integers(0, 3),
        index=st.integers(0, 7),
        calls=st.integers(1, 3),
        exchanges=st.integers(0, 2),
        ids=st.permutations(_CALL_IDS),
        order=st.permutations(range(3)),
        signature=st.none() | st.text(max_size=20),
        opaque=st.text(min_size=1, max_size=20),
        agents=st.sampled_from(_AGENTS),
        meta=st.sampled_from(_METAS),
        name=st.none() | st.sampled_from(("ada", "bob")),
        user_texts=st.lists(text, max_size=2),
        user_images=st.lists(image, max_size=1),
        only_images=st.lists(image, max_size=2),
    )


def _thinking(draw: DrawFn, kit: _Kit) -> Thinking:
    if draw(kit.chance) == 0:
        return Thinking("", signature=draw(kit.opaque), redacted=True)
    return Thinking(draw(kit.text), signature=draw(kit.signature))


def _exchange(draw: DrawFn, kit: _Kit, add: _Add) -> None:
    """One assistant message with 1-3 parallel calls, then all their results."""
    n = draw(kit.calls)
    ids = draw(kit.ids)[:n]  # distinct here, reused across exchanges
    calls = [ToolCall(cid, draw(kit.tool_name), draw(kit.arguments)) for cid in ids]
    head: list[Part] = []
    if draw(kit.chance) == 0:
        head.append(_thinking(draw, kit))
    if draw(kit.flag):
        head.append(Text(draw(kit.text)))
    add("assistant", [*head, *calls])
    results: list[ToolResult] = []
    for k in (i for i in draw(kit.order) if i < n):
        content: str | tuple[Text | Image, ...] = draw(kit.text)
        if draw(kit.chance) == 0:
            content = (Text(draw(kit.text)), draw(kit.image))
        results.append(
            ToolResult(
                calls[k].id,
                content,
                is_error=draw(kit.chance) == 0,
                name=calls[k].name if draw(kit.flag) else None,
            )
        )
    if n > 1 and draw(kit.flag):
        add("tool", results)  # batched, as Anthropic sends them
    else:
        for r in results:
            add("tool", [r])


def _need_hypothesis() -> None:
    """Raise an error naming what to install when hypothesis is missing."""
    try:
        import hypothesis  # noqa: F401  # pyright: ignore[reportUnusedImport]  # imported to see that it is there
    except ModuleNotFoundError as exc:
        raise ImportError(
            "contextwindow.testing's strategies need hypothesis: "
            "pip install hypothesis (or 'contextwindow[test]')"
        ) from exc
