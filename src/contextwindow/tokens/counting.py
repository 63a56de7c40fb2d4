"""Token counts of whole messages and requests: provider framing, tools, images.

Contract:

- ``TokenCounter(tokenizer, provider).message(m)`` is the message's framing plus
  the count of each part, a pure function of the message's content. Counts are
  cached per message, keyed by the ``Message`` itself (messages are frozen and
  compare by content, ids excluded), so equal messages share one entry; the
  same object found again is looked up by identity first, which skips hashing
  its content. The cache is bounded (``_lru.Generations``: the
  ``cache_size`` most recently used counts are kept, at most twice as many
  held, in constant time however long it runs); by default it grows to
  keep twice the longest sequence counted, so a conversation counted again
  (or a strategy's output) is never recounted.
- ``messages(msgs)`` and ``running(msgs)`` also remember the running totals of
  the last few sequences: when a call extends one (the same messages first,
  then new ones), only the new messages are looked at. Recounting a
  10,000-message history after one ``append`` costs one message, not 10,000
  dictionary lookups. A sequence that only shares a prefix with one
  remembered (a strategy's output that rewrote a message near the end) has
  the counts of that prefix reused.
- ``memo`` is a bounded store (``contextwindow._memo``, ``DEFAULT_MEMO_ENTRIES``
  entries) the strategies use for what they decided on the conversations
  fitted with this counter; the counter never looks into it. ``clear()``
  empties it with the caches.
- Framing follows each provider's published or measured rules (constants below,
  each with its source); what no provider documents is a stated estimate.
- Images cost what the provider's rule gives (``tokens._images``), and on
  OpenAI what the model's does: a counter that knows its model (``model``,
  or a tokenizer named by the model) counts gpt-4.1-mini's images by
  patches, GPT-4o's by tiles; one that does not uses the tile rule.
- Every part counts: an ``Opaque`` one (a document, a file, audio, a
  refusal) by its text and an estimate of its payload
  (``tokens._opaque``: PDF pages, audio seconds, file bytes), so a budget
  never passes a request that carries more than it counts.
"""

from __future__ import annotations

import copy
import json
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from itertools import compress
from typing import TYPE_CHECKING, Any, TypeAlias, cast

from contextwindow._args import as_tokenizer, check_int, check_str, shown
from contextwindow._images import data_uri_bytes, image_size
from contextwindow._lru import Generations
from contextwindow._memo import Memo
from contextwindow._prefix import TRIED, best_spans, longest_prefix
from contextwindow.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    ContextWindowError,
)
from contextwindow.formats._coerce import coerce_messages, coerce_tools, neutral
from contextwindow.formats._thinking import thinking_sent
from contextwindow.messages import (
    COMPARED,
    Image,
    Message,
    Opaque,
    Part,
    Provider,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    ToolSpec,
    check_provider,
)
from contextwindow.tokens._images import (
    ImageRule,
    anthropic_image_tokens,
    openai_image_rule,
    openai_image_tokens,
)
from contextwindow.tokens._opaque import opaque_tokens
from contextwindow.tokens.base import Tokenizer

if TYPE_CHECKING:  # models imports tokens: read at call time, not import time
    from contextwindow.models import ModelInfo

__all__ = ["TokenCounter", "count_messages", "render_openai_tools"]


_Key: TypeAlias = Message | tuple[Message, frozenset[int]]
"""A message count's cache key (``TokenCounter._key``)."""


@dataclass(frozen=True, slots=True)
class _Framing:
    per_message: int
    """Added to every message (every tool result, for OpenAI)."""
    count_role: bool
    """Whether the role name is counted as text."""
    per_name: int
    """Added when a message has a ``name`` (besides the name's own tokens)."""
    per_tool_call: int
    """Added to each tool call, besides its name and arguments."""
    per_tool_result: int
    """Added to each tool result inside a message (Anthropic blocks)."""
    reply: int
    """Added once per request: the primed assistant turn."""


# OpenAI Chat Completions, from the OpenAI cookbook "How to count tokens with
# tiktoken" (3 per message, +1 with a name, role counted, +3 reply priming;
# verified there against the API) and hmarr/openai-chat-tokens (a function call
# adds 3 besides its name and arguments; verified against the API). OpenAI sends
# each tool result as its own message, so each pays the message framing.
_OPENAI = _Framing(
    per_message=3,
    count_role=True,
    per_name=1,
    per_tool_call=3,
    per_tool_result=0,
    reply=3,
)
# Anthropic publishes no framing and no tokenizer. Estimate: 3 per message (the
# turn markers), 3 per tool_use / tool_result block (ids and block markers),
# nothing for the reply.
_ANTHROPIC = _Framing(
    per_message=3,
    count_role=False,
    per_name=0,
    per_tool_call=3,
    per_tool_result=3,
    reply=0,
)
# OpenAI Responses: no separate published rule; the same chat template, but
# items carry no ``name`` (``to_responses`` drops it), so none is counted.
_RESPONSES = replace(_OPENAI, per_name=0)
_FRAMING: dict[str, _Framing] = {
    "openai": _OPENAI,
    "responses": _RESPONSES,
    "anthropic": _ANTHROPIC,
}

OPENAI_TOOLS_OVERHEAD = 9
"""Tokens added once when tools are sent (hmarr/openai-chat-tokens, measured)."""
OPENAI_TOOLS_SYSTEM_DISCOUNT = 4
"""Tokens saved when tools and a system message are both present (the tool
definitions reuse the system turn; hmarr/openai-chat-tokens, measured)."""
ANTHROPIC_TOOLS_OVERHEAD = 346
"""Anthropic's tool-use system prompt (tool_choice auto/none), as its pricing
documentation lists for current Claude models."""

_RECENT = 16
"""Sequences whose running totals are remembered (a pipeline's input and each
stage's output, a manager's history and view)."""

MIN_SHARED = 64
"""A sequence sharing fewer leading messages than this with every remembered
one is counted from scratch (looking for a match would cost more)."""

DEFAULT_CACHE_SIZE = 100_000
"""The most recently used messages a counter always keeps counted (up to twice
as many held; more when a longer sequence is counted, unless ``cache_size``
was given)."""


class TokenCounter:
    """Counts messages, requests, tool schemas and images for one provider.

    Args:
        tokenizer: Counts text (exact BPE, heuristic, HF ...), or names what
            does: a model (``"gpt-4o"``) or an encoding (``"o200k_base"``).
        provider: ``openai`` (Chat Completions), ``responses`` or ``anthropic``.
        model: The model the requests go to (a name or a ``ModelInfo``),
            whose rule prices images on OpenAI: gpt-4.1-mini, gpt-4.1-nano,
            o4-mini, gpt-5-mini and gpt-5-nano count 32 px patches,
            gpt-4o-mini tiles at its own rate (``tokens._images``). By
            default the model ``tokenizer`` names, if it names one; else
            none, and images cost what GPT-4o's do.
        cache_size: How many of the messages counted last are always
            remembered (at least 1; up to twice as many are held). By default
            ``DEFAULT_CACHE_SIZE``, or twice the length of the longest
            sequence counted when that is more: a strategy counts its input,
            then its output made of the same messages and rewritten ones,
            and a cache smaller than that would count each message again.

    Raises:
        ArgumentError: Unknown provider, a cache size below 1, a model that
            is neither a name nor a ``ModelInfo``, or a tokenizer that is
            not one (a ``str`` naming no model or encoding, an ``int``, an
            object without ``count``); when
            counting, a tokenizer whose ``count`` returned anything but an
            ``int`` >= 0 (naming ``tokenizer``).

    Warning:
        A counter is not thread-safe: give each thread its own, or guard a
        shared one with a lock.

    Example:
        >>> from contextwindow.tokens import BPETokenizer
        >>> counter = TokenCounter(BPETokenizer("o200k_base"))
        >>> counter.message(Message.user("hello world"))  # 3 + "user" + 2
        6
        >>> counter.messages([Message.user("hello world")])  # + 3 reply priming
        9
    """

    __slots__ = (
        "_cache",
        "_count",
        "_framing",
        "_grows",
        "_image_rule",
        "_last",
        "_memo",
        "_model",
        "_provider",
        "_texts",
        "_tok",
        "_tools",
    )

    def __init__(
        self,
        tokenizer: Tokenizer | str,
        provider: Provider = "openai",
        *,
        model: str | ModelInfo | None = None,
        cache_size: int | None = None,
    ) -> None:
        check_provider(provider)
        framing = _FRAMING[provider]
        check_int(cache_size, "cache_size", low=1, none=True)
        self._grows = cache_size is None
        if cache_size is None:
            cache_size = DEFAULT_CACHE_SIZE
        self._tok = as_tokenizer(tokenizer)
        self._count = checked_count(self._tok)
        self._model = _model_name(model, tokenizer)
        self._image_rule: ImageRule = openai_image_rule(self._model)
        self._provider: Provider = provider
        self._framing = framing
        self._cache: Generations[_Key, int] = Generations(cache_size)
        self._texts: Generations[str, int] = Generations(cache_size)
        self._last: list[tuple[Sequence[Message], tuple[int, ...]]] = []
        self._memo = Memo()
        # The tools last counted (a copy: a schema changed in place must not
        # match), and their tokens: an agent sends the same tools with every
        # request, and their schemas often take thousands of tokens.
        self._tools: tuple[tuple[ToolSpec, ...], int] | None = None

    @property
    def memo(self) -> Memo:
        """What strategies decided for the conversations this counter fitted last.

        See ``contextwindow._memo``: reusing the counter makes re-fitting a
        grown conversation cost what was appended. Bounded: at most
        ``DEFAULT_MEMO_ENTRIES`` entries, each holding references to about
        one conversation's messages (none is copied).
        """
        return self._memo

    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer counting text."""
        return self._tok

    @property
    def provider(self) -> Provider:
        """The provider whose framing is added."""
        return self._provider

    @property
    def model(self) -> str | None:
        """The model whose image rule is used (its registry name), or ``None``.

        Example:
            >>> TokenCounter("gpt-4.1-mini").model, TokenCounter("o200k_base").model
            ('gpt-4.1-mini', None)
        """
        return self._model

    @property
    def counts_key(self) -> str:
        """What its counts depend on, as a stored count's key names it.

        The tokenizer and the provider, and the model when its images count
        by a rule of their own (so that a count kept for one model is not
        taken for another's); stores keep each message's count under it.

        Example:
            >>> TokenCounter("gpt-4o").counts_key
            'o200k_base/openai'
            >>> TokenCounter("gpt-4.1-mini").counts_key
            'o200k_base/openai/gpt-4.1-mini'
        """
        key = f"{self._tok.name}/{self._provider}"
        if (
            self._provider != "anthropic"
            and self._image_rule is not openai_image_tokens
        ):
            key += f"/{self._model}"
        return key

    def clear(self) -> None:
        """Forget every cached count."""
        self._cache.clear()
        self._texts.clear()
        self._last = []
        self._tools = None
        self._memo.clear()

    def learn(self, msg: Message, tokens: int) -> None:
        """Remember that ``msg`` takes ``tokens`` (a count this counter made before).

        A store keeps each message's count, so a conversation read back is
        not counted again. The count must come from a counter with the same
        tokenizer, provider and model (whose rule prices images): it is
        taken as it is, once checked (an
        ``int`` >= 0; anything else would be summed into every total).

        Raises:
            ArgumentError: ``msg`` is not a ``Message``, or ``tokens`` not
                an ``int`` >= 0.

        Example:
            >>> from contextwindow.tokens import BPETokenizer
            >>> counter = TokenCounter(BPETokenizer("o200k_base"))
            >>> m = Message.user("hello world")
            >>> counter.learn(m, 6)
            >>> counter.message(m)
            6
        """
        _check_message(msg, "msg")
        if tokens.__class__ is not int or tokens < 0:
            check_int(tokens, "tokens", low=0)
        try:
            self._cache.put(self._key(msg), tokens)
        except TypeError:  # unhashable content: it is counted when asked
            return

    # -- messages -------------------------------------------------------------

    def message(self, msg: Message) -> int:
        """Tokens of one message in a request: framing plus parts (cached).

        Example:
            >>> from contextwindow.tokens import BPETokenizer
            >>> counter = TokenCounter(BPETokenizer("o200k_base"))
            >>> counter.message(Message.user("hi", name="ada"))  # 3+1 + 1 + 1+1
            7
        """
        cache = self._cache  # by content; a message keeps its hash
        try:
            n = cache.get(msg)
        except TypeError:  # a part holds something unhashable (a list)
            return sum(self.breakdown(msg).values())
        if n is None:
            _check_message(msg, "msg")  # before its parts are looked at
            key = self._key(msg)
            if key is not msg:
                n = cache.get(key)
            if n is None:
                n = sum(self.breakdown(msg).values())
                cache.put(key, n)
        return n

    def _key(self, msg: Message) -> _Key:
        """The cache key of ``msg``'s count.

        The message itself, or, for one holding ``Thinking`` parts, the
        message and which of them the provider's writer sends: that is read
        from its ``meta``, which message equality does not compare, so two
        equal messages read from different shapes must not share a count.
        """
        for part in msg.parts:
            if part.__class__ is Thinking:
                return (msg, thinking_sent(msg, self._provider))
        return msg

    def messages(
        self, msgs: Iterable[Message | Any], *, tools: Iterable[ToolSpec | Any] = ()
    ) -> int:
        """Tokens of a whole request: every message, reply priming, and tools.

        Args:
            msgs: The conversation, in order, or a request body.
            tools: Tool schemas sent with the request (default: a body's own).

        Example:
            >>> from contextwindow.tokens import BPETokenizer
            >>> counter = TokenCounter(BPETokenizer("cl100k_base"))
            >>> conv = [Message.system("You are terse."), Message.user("Hi")]
            >>> counter.messages(conv)
            16
            >>> counter.messages(conv, tools=[ToolSpec("ping", "Ping a host")])
            40
        """
        if isinstance(msgs, list | tuple):
            seq: Sequence[Any] = cast("Sequence[Any]", msgs)
        else:  # a body or a generator, read at the edge: a body's tools count
            read = coerce_messages(msgs, hint=self._provider)
            seq = read.messages
            if isinstance(tools, list | tuple) and not tools:  # none given
                tools = read.shape.tools
        sums = self._running(seq, owned=seq is not msgs)
        if sums is None:
            seq = list(neutral(seq, hint=self._provider))
            sums = self.running(seq)
        total = sums[-1] + self._framing.reply
        # Only an empty list or tuple is no tools: anything else is read (a
        # falsy ``False``, ``0`` or ``""`` is refused there, not taken as none).
        if not (isinstance(tools, list | tuple) and not tools):
            tools = _specs(tools)
            if tools:
                total += self.tools(tools)
                if self._framing is not _ANTHROPIC:  # Chat and Responses
                    total += self._openai_system_adjustment(seq)
        return total

    def running(self, msgs: Iterable[Message | Any]) -> tuple[int, ...]:
        """Running totals: ``out[i]`` is the tokens of the first ``i`` messages.

        Messages only (no reply priming, no tools); ``out[j] - out[i]`` is what
        ``msgs[i:j]`` take. Remembered for the last few sequences, so that a
        sequence extending one of them costs only its new messages.

        Example:
            >>> from contextwindow.tokens import BPETokenizer
            >>> counter = TokenCounter(BPETokenizer("o200k_base"))
            >>> counter.running([Message.user("hello world"), Message.user("hi")])
            (0, 6, 11)
        """
        seq = _listed(msgs, self._provider)
        done = self._running(seq, owned=seq is not msgs)
        if done is None:
            return self.running(list(neutral(seq, hint=self._provider)))
        return done

    def _running(
        self, seq: Sequence[Any], owned: bool = False
    ) -> tuple[int, ...] | None:
        """``running(seq)``, or ``None`` when ``seq`` holds a non-``Message``.

        ``owned``: ``seq`` is a list no caller holds (it may be kept as is).
        """
        n = len(seq)
        if self._grows and 2 * n > self._cache.size:
            # Room for the sequence and as many rewritten messages (a
            # strategy's output: tool results cut, cleared, summarised).
            for cache in (self._cache, self._texts):
                cache.grow(2 * n)
        # One read of the sequences remembered: the list is never changed in
        # place (a new one replaces it), so another thread's count cannot
        # shift it between the looks below.
        recent = self._last
        base, k = self._extended(seq, recent)
        if base is not None and k == n:
            return base
        spans: list[tuple[int, int, int, tuple[int, ...]]] = []
        if base is None:
            # A sequence that shares only a prefix with one seen (a strategy's
            # output that rewrote a message near the end): the counts of that
            # prefix stand, only the rest is counted; and of the runs of one
            # of the last few seen that it holds elsewhere (its oldest
            # messages dropped, runs of them made one line), the counts are
            # moved (``best_spans``).
            k, found, like = _longest_prefix(seq, recent)
            if k:
                k = self._sent_alike(seq, like, 0, k)
            base = found[: k + 1] if k else (0,)
            if n - k >= MIN_SHARED:
                tried = recent[:TRIED]
                at, shared = best_spans([last for last, _ in tried], seq, k)
                spans = [
                    (first, end, d, tried[at][1])
                    for first, end, d in shared
                    if self._sent_alike(seq, tried[at][0], first, end, d) == end
                ]
        total = base[-1]
        tail: list[int] = []
        append = tail.append
        message = self.message
        at = k
        for first, end, d, sums in (*spans, (n, n, 0, ())):
            for i in range(at, first):
                m = seq[i]
                if m.__class__ is not Message and not isinstance(m, Message):
                    return None
                total += message(m)
                append(total)
            if end > first:
                lo = sums[first - d]
                tail += [total + x - lo for x in sums[first - d + 1 : end - d + 1]]
                total = tail[-1]
            at = end
        done = base + tuple(tail)
        if n >= MIN_SHARED:  # a short one is cheaper to count than to look up
            # A copy of a list: a caller's list changed in place later must
            # not match. A tuple cannot change: it is kept as it is.
            kept = cast(
                "Sequence[Message]", seq if owned or type(seq) is tuple else list(seq)
            )
            self._last = [(kept, done), *self._last[: _RECENT - 1]]
        return done

    def _extended(
        self,
        seq: Sequence[Any],
        recent: Sequence[tuple[Sequence[Message], tuple[int, ...]]],
    ) -> tuple[tuple[int, ...] | None, int]:
        """The running totals of a sequence of ``recent`` that ``seq`` starts with.

        And how many of ``seq``'s messages they cover (``None, 0``: none).
        ``==`` on lists compares by identity first, so an unchanged prefix of
        the same message objects is checked at C speed (an equal message
        counts the same, but for the thinking a writer sends: ``_sent_alike``).
        """
        n = len(seq)
        for last, last_sums in recent:
            k = len(last)
            if not (k and n >= k and seq[k - 1] is last[-1]):
                continue
            before = next(COMPARED)
            if not _starts_with(seq, last):
                continue
            # No ``__eq__`` ran: every pair was the very same object, whose
            # thinking is sent alike (else only the equal ones are looked at).
            same = next(COMPARED) == before + 1
            d = k if same else self._sent_alike(seq, last, 0, k)
            return (last_sums if d == k else last_sums[: d + 1]), d
        return None, 0

    def _sent_alike(
        self,
        seq: Sequence[Message],
        other: Sequence[Message],
        start: int,
        stop: int,
        shift: int = 0,
    ) -> int:
        """Where equal messages first differ in the thinking a writer sends.

        ``seq[start:stop]`` equals ``other[start - shift:stop - shift]``; the
        first index whose message's thinking is sent otherwise, else ``stop``.

        Equal messages count alike but for their ``Thinking`` parts, which a
        writer sends or not by the message's ``meta`` (``thinking_sent``), a
        field equality does not compare: only the messages that are not the
        very same objects and hold thinking are looked at.
        """
        if stop <= start:
            return stop
        theirs = other[start - shift : stop - shift]
        for i in compress(
            range(start, stop), map(operator.is_not, seq[start:stop], theirs)
        ):
            m = seq[i]
            if any(p.__class__ is Thinking for p in m.parts) and self._key(
                m
            ) != self._key(other[i - shift]):
                return i
        return stop

    def _openai_system_adjustment(self, seq: Sequence[Message]) -> int:
        # With tools, OpenAI pads the first system message with a newline and
        # folds the tool definitions into the system turn (hmarr, measured).
        for msg in seq:
            if msg.role == "system":
                text = msg.text
                padded = self._count(text + "\n") - self._count(text)
                return padded - OPENAI_TOOLS_SYSTEM_DISCOUNT
        return 0

    def breakdown(self, msg: Message) -> dict[str, int]:
        """Tokens of one message by kind: ``framing`` and each part kind present.

        The values sum to ``message(msg)``; not cached.

        Example:
            >>> from contextwindow.tokens import BPETokenizer
            >>> counter = TokenCounter(BPETokenizer("o200k_base"))
            >>> call = ToolCall("1", "f", "{}")
            >>> counter.breakdown(Message.assistant("ok", tool_calls=[call]))
            {'framing': 4, 'text': 1, 'tool_call': 5}
        """
        _check_message(msg, "msg")  # ``message`` comes here for what it has not seen
        f = self._framing
        out: dict[str, int] = {}
        if msg.role == "tool" and f is not _ANTHROPIC:  # Chat and Responses
            # One wire message per result, each with the full framing.
            results = msg.tool_results
            role = self._count("tool")
            out["framing"] = (f.per_message + role) * max(1, len(results))
        else:
            framing = f.per_message
            if f.count_role:
                framing += self._count(msg.role)
            if msg.name and f.per_name:
                framing += f.per_name + self._count(msg.name)
            out["framing"] = framing
        sent: frozenset[int] | None = None
        for j, part in enumerate(msg.parts):
            if part.__class__ is Thinking:
                # Reasoning the provider's writer leaves out (another
                # provider's) is not sent, so not counted.
                if sent is None:
                    sent = thinking_sent(msg, self._provider)
                if j not in sent:
                    continue
            out[part.kind] = out.get(part.kind, 0) + self.part(part)
        return out

    def text(self, text: str) -> int:
        """Tokens of ``text`` (cached: strategies count the same old texts again).

        Example:
            >>> from contextwindow.tokens import BPETokenizer
            >>> TokenCounter(BPETokenizer("o200k_base")).text("hello world")
            2
        """
        if text.__class__ is not str:  # one test on the hot path
            check_str(text, "text")
        texts = self._texts
        n = texts.get(text)
        if n is None:
            n = self._count(text)
            texts.put(text, n)
        return n

    # -- parts ----------------------------------------------------------------

    def part(self, part: Part) -> int:
        """Tokens of one part, without the message's framing.

        Example:
            >>> from contextwindow.tokens import BPETokenizer
            >>> counter = TokenCounter(BPETokenizer("o200k_base"))
            >>> counter.part(ToolCall("c1", "search", '{"q": "tides"}'))  # 3 + 1 + 7
            11
        """
        count = self._count
        if isinstance(part, Text):
            return count(part.text)
        if isinstance(part, ToolCall):
            return (
                self._framing.per_tool_call + count(part.name) + count(part.arguments)
            )
        if isinstance(part, ToolResult):
            # Cached by text: strategies weigh the same old results on every fit.
            n = self._framing.per_tool_result
            if isinstance(part.content, str):
                return n + self.text(part.content)
            for item in part.content:
                if isinstance(item, Text):
                    n += self.text(item.text)
                elif isinstance(item, Image):
                    n += self.image(item)
                else:  # a document or search result the tool returned
                    n += opaque_tokens(item, self.text, self.image)
            return n
        if isinstance(part, Image):
            return self.image(part)
        if isinstance(part, Thinking):
            return count(part.text)
        if isinstance(part, Opaque):  # pyright: ignore[reportUnnecessaryIsInstance]  # defensive: callers may pass a non-Part; raise below
            # A document, a file, audio, a refusal: its text counted, its
            # payload estimated (``tokens._opaque``), never nothing.
            return opaque_tokens(part, self.text, self.image)
        raise ContextWindowError(f"cannot count part of type {type(part).__name__}")

    def image(self, img: Image) -> int:
        """Tokens of one image, by the provider's rule (on OpenAI, the model's).

        The size is the image's ``width``/``height``, else read from the header
        of a ``data:`` URI, else unknown (OpenAI's tile rule: 1024x1024
        assumed, 765 tokens at high detail; its patch rule: the most patches,
        1,536; Anthropic: the 1,600-token maximum).

        Example:
            >>> from contextwindow.tokens import BPETokenizer
            >>> counter = TokenCounter(BPETokenizer("o200k_base"))
            >>> counter.image(Image("https://example.com/a.png", width=512, height=512))
            255
            >>> mini = TokenCounter(BPETokenizer("o200k_base"), model="gpt-4.1-mini")
            >>> mini.image(Image("https://example.com/a.png", width=512, height=512))
            415
        """
        if not isinstance(img, Image):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
            raise ArgumentTypeError("img", shown(img), "an Image")
        width, height = img.width, img.height
        if not (width and height):
            data = data_uri_bytes(img.url)
            size = image_size(data) if data else None
            if size:
                width, height = size
        if self._framing is _ANTHROPIC:
            return anthropic_image_tokens(width, height)
        return self._image_rule(width, height, img.detail)

    # -- tools ----------------------------------------------------------------

    def tools(self, specs: Iterable[ToolSpec | Any]) -> int:
        """Tokens of the tool schemas sent with a request (0 for none).

        OpenAI renders tools as TypeScript-like declarations inside the prompt
        (see ``render_openai_tools``); Anthropic adds its tool-use system prompt
        and the JSON of each tool.

        Example:
            >>> from contextwindow.tokens import BPETokenizer
            >>> counter = TokenCounter(BPETokenizer("cl100k_base"))
            >>> counter.tools([ToolSpec("foo", "Do a foo", {"type": "object"})])
            28
        """
        # An empty list or tuple is none; anything else is read, so that a
        # ``False``, ``0`` or ``""`` is refused, not taken for no tools.
        specs = _specs(specs)
        if not specs:
            return 0
        last = self._tools
        with suppress(Exception):  # a schema value that cannot be compared
            if last is not None and specs == last[0]:  # at C speed: dicts, strings
                return last[1]
        # Each schema's text is counted through the text cache: the same
        # tools read again from the next request cost their rendering alone.
        if self._framing is _ANTHROPIC:
            total = ANTHROPIC_TOOLS_OVERHEAD
            for spec in specs:
                schema = {
                    "name": spec.name,
                    "description": spec.description,
                    "input_schema": dict(spec.parameters),
                }
                total += self.text(json.dumps(schema, ensure_ascii=False, default=str))
        else:
            total = self.text(render_openai_tools(specs)) + OPENAI_TOOLS_OVERHEAD
        try:
            self._tools = (copy.deepcopy(tuple(specs)), total)
        except Exception:  # a schema value that cannot be copied: counted each time
            self._tools = None
        return total


def _model_name(model: object, tokenizer: object) -> str | None:
    """The registry name of the model whose images a counter prices, if any.

    ``model`` when given (a name the registry does not know is kept as
    written: the image rules read names); else the model a ``str``
    tokenizer names, or a counter's own.
    """
    from contextwindow.models import ModelInfo, registry
    from contextwindow.tokens.bpe import ENCODINGS

    if model is None:
        if isinstance(tokenizer, TokenCounter):
            return tokenizer.model
        if not isinstance(tokenizer, str):
            return None
        model = tokenizer.strip()
        if model in ENCODINGS or model == "heuristic":
            return None
    if isinstance(model, ModelInfo):
        return model.name
    name: str = check_str(
        model, "model", empty=False, takes="a model name or a ModelInfo"
    )
    return registry.resolve(name) or name.strip()


def _check_message(msg: object, name: str) -> None:
    """Refuse what is not a ``Message`` (one class test for one that is)."""
    if msg.__class__ is not Message and not isinstance(msg, Message):
        raise ArgumentTypeError(name, shown(msg), "a Message")


def checked_count(
    tokenizer: Tokenizer, name: str = "tokenizer"
) -> Callable[[str], int]:
    """``tokenizer.count``, its results checked unless it is the library's own.

    Every count the counter makes goes through here (and every count an
    ``ApproximateTokenizer`` takes from its ``base``, named so): a user's
    tokenizer that returns a negative number, a float or ``None`` is named
    at once, not summed into a negative total or a ``TypeError`` deep in a
    strategy. The text is not shown (it may hold a secret), only its length.
    """
    count = tokenizer.count
    if type(tokenizer).__module__.startswith("contextwindow."):
        return count  # known good: the hot path stays one call

    def checked(text: str) -> int:
        return checked_result(count(text), tokenizer, name, len(text))

    return checked


def checked_result(n: object, tokenizer: object, name: str, length: int) -> int:
    """``n`` if it is a count (an ``int >= 0``), else an error naming ``tokenizer``.

    ``length``: the characters of the text counted, said instead of the text.

    Example:
        >>> checked_result(3, "chars/4", "tokenizer", 12)
        3
        >>> checked_result(3.0, "chars/4", "tokenizer", 12)
        Traceback (most recent call last):
        ...
        contextwindow.errors.ArgumentTypeError: tokenizer: expected a Tokenizer whose count returns an int >= 0, got 'chars/4' (its count of a 12-character text returned 3.0)
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        negative = isinstance(n, int) and not isinstance(n, bool)
        error = ArgumentValueError if negative else ArgumentTypeError
        raise error(
            name,
            shown(tokenizer),
            "a Tokenizer whose count returns an int >= 0",
            f"its count of a {length}-character text returned {shown(n)}",
        )
    return n


def _starts_with(seq: Sequence[Any], last: Sequence[Any]) -> bool:
    """Whether ``seq`` starts with ``last`` (by ``==``; a list or a tuple each)."""
    head = seq[: len(last)]
    if type(head) is not type(last):  # a list never equals a tuple
        head = list(head) if type(last) is list else tuple(head)
    return head == last


def _longest_prefix(
    seq: Sequence[Message],
    recent: Sequence[tuple[Sequence[Message], tuple[int, ...]]],
) -> tuple[int, tuple[int, ...], Sequence[Message]]:
    """The longest prefix ``seq`` shares with a remembered sequence.

    Its length, the sequence's running sums, and the sequence.
    """
    which, best = longest_prefix(seq, [last for last, _ in recent])
    if best < MIN_SHARED:
        return 0, (), ()
    return best, recent[which][1], recent[which][0]


def _listed(msgs: Iterable[Any], provider: Provider) -> Sequence[Any]:
    """``msgs`` as a list or a tuple; a body or a generator is read at the edge.

    A tuple stays as it is: immutable, it is remembered without a copy.
    """
    if isinstance(msgs, list | tuple):
        return cast("Sequence[Any]", msgs)
    return list(neutral(msgs, hint=provider))


def _specs(tools: Iterable[Any]) -> Sequence[ToolSpec]:
    """Tools as ``ToolSpec`` objects: SDK tool dicts read, schemas checked."""
    # ``kind``, not ``type(tools)``: a type checker would narrow ``tools`` by
    # that to a tuple of unknowns.
    kind = type(tools)
    if kind is tuple and all(t.__class__ is ToolSpec for t in tools):
        return cast("tuple[ToolSpec, ...]", tools)  # checked where it was made
    return coerce_tools(tools)


def count_messages(
    messages: Iterable[Message | Any],
    tokenizer: Tokenizer | str,
    *,
    provider: Provider = "openai",
    tools: Iterable[ToolSpec | Any] = (),
) -> int:
    """Tokens of a request, counted once (no cache kept between calls).

    ``tokenizer`` is a tokenizer or names one, as for ``TokenCounter``;
    ``messages`` may be a request body, whose own tools count unless
    ``tools`` are given.

    Example:
        >>> from contextwindow.tokens import BPETokenizer
        >>> count_messages([Message.user("hello")], BPETokenizer("cl100k_base"))
        8
    """
    return TokenCounter(tokenizer, provider).messages(messages, tools=tools)


# -- OpenAI tool rendering ---------------------------------------------------------


def render_openai_tools(specs: Sequence[ToolSpec]) -> str:
    """Render tool schemas the way OpenAI shows them to the model.

    The TypeScript-like ``namespace functions`` form inferred by
    hmarr/openai-chat-tokens, whose counts match the API's.

    Example:
        >>> spec = ToolSpec("get_weather", "Weather now", {
        ...     "type": "object",
        ...     "properties": {"city": {"type": "string", "description": "City name"}},
        ...     "required": ["city"],
        ... })
        >>> print(render_openai_tools([spec]))
        namespace functions {
        <BLANKLINE>
        // Weather now
        type get_weather = (_: {
        // City name
        city: string,
        }) => any;
        <BLANKLINE>
        } // namespace functions
    """
    lines = ["namespace functions {", ""]
    for spec in specs:
        if spec.description:
            lines.append(f"// {spec.description}")
        params: Mapping[str, Any] = (
            spec.parameters
            if isinstance(spec.parameters, Mapping)  # pyright: ignore[reportUnnecessaryIsInstance]  # a ToolSpec is not checked when built
            else {}
        )
        if isinstance(params.get("properties"), Mapping) and params["properties"]:
            lines.append(f"type {spec.name} = (_: {{")
            lines.append(_render_properties(params, 0))
            lines.append("}) => any;")
        else:
            lines.append(f"type {spec.name} = () => any;")
        lines.append("")
    lines.append("} // namespace functions")
    return "\n".join(lines)


def _render_properties(schema: Mapping[str, Any], indent: int) -> str:
    # Odd but legal schemas (``required: 5``) are rendered as far as they go.
    required = schema.get("required")
    if not isinstance(required, (list, tuple)):
        required = ()
    lines: list[str] = []
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        properties = {}
    for name, raw in cast("Mapping[str, Any]", properties).items():
        prop: Mapping[str, Any] = (
            cast("Mapping[str, Any]", raw) if isinstance(raw, Mapping) else {}
        )
        if prop.get("description"):
            lines.append(f"// {prop['description']}")
        mark = "" if name in required else "?"
        lines.append(f"{name}{mark}: {_render_type(prop, indent)},")
    pad = " " * indent
    return "\n".join(pad + line for line in lines)


def _render_type(prop: Mapping[str, Any], indent: int) -> str:
    kind = prop.get("type")
    enum = prop.get("enum")
    if enum is not None and not isinstance(enum, list):
        enum = [enum]
    if isinstance(kind, list):  # ["string", "null"]
        kinds = cast("Sequence[Any]", kind)
        return " | ".join(_render_type({**prop, "type": k}, indent) for k in kinds)
    options = prop.get("anyOf") or prop.get("oneOf")
    if kind is None and isinstance(options, list):
        return " | ".join(
            _render_type(cast("Mapping[str, Any]", o), indent)
            for o in cast("Sequence[Any]", options)
            if isinstance(o, Mapping)
        )
    if kind == "string":
        return (
            " | ".join(f'"{v}"' for v in cast("Sequence[Any]", enum))
            if enum
            else "string"
        )
    if kind in ("number", "integer"):
        return (
            " | ".join(str(v) for v in cast("Sequence[Any]", enum))
            if enum
            else "number"
        )
    if kind == "array":
        items = prop.get("items")
        return (
            f"{_render_type(cast('Mapping[str, Any]', items), indent)}[]"
            if isinstance(items, Mapping)
            else "any[]"
        )
    if kind == "object":
        return "\n".join(("{", _render_properties(prop, indent + 2), "}"))
    if kind in ("boolean", "null"):
        return str(kind)
    return "any"
