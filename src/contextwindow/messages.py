"""The neutral message model, and the one place that groups messages into units.

Contract:

- ``Message`` and every part are frozen, slotted dataclasses: values, never
  mutated. ``id`` and ``meta`` take no part in equality or hashing, so two
  messages with the same content compare equal and share a cached token count.
- Roles are ``system``, ``user``, ``assistant`` and ``tool``. Tool calls live in
  assistant messages; tool results live in ``tool`` messages (one or more
  results each). Provider shapes that differ (Anthropic puts results in user
  turns) are converted at the edge, in ``contextwindow.formats``.
- ``units()`` is the only code that decides which messages belong together: an
  assistant message with tool calls and every tool message answering it form one
  unit. Results are paired with calls by position (the pending calls of the
  latest assistant message), never by id alone, because real transcripts reuse
  call ids.

Example:
    >>> conv = [
    ...     Message.system("You are terse."),
    ...     Message.user("Weather in Paris?"),
    ...     Message.assistant(tool_calls=[ToolCall("c1", "weather", "{}")]),
    ...     Message.tool("c1", "18 C, clear"),
    ...     Message.assistant("18 C and clear."),
    ... ]
    >>> [(u.kind, u.start, u.stop) for u in units(conv)]
    [('system', 0, 1), ('message', 1, 2), ('tool_exchange', 2, 4), ('message', 4, 5)]
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import count
from operator import attrgetter
from typing import Any, Literal, NoReturn, cast

from contextwindow._args import (
    check_bool,
    check_int,
    check_items,
    check_str,
    shown,
)
from contextwindow._prefix import TRIED, best_spans, longest_prefix
from contextwindow.errors import (
    ArgumentTypeError,
    ArgumentValueError,
)

__all__ = [
    "Image",
    "Message",
    "Opaque",
    "Part",
    "Provider",
    "ResultPart",
    "Role",
    "Text",
    "Thinking",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Unit",
    "UnitKind",
    "check_provider",
    "fresh_units",
    "new_id",
    "same_units",
    "unit_at",
    "units",
]

Role = Literal["system", "user", "assistant", "tool"]
"""Who wrote a message: the system prompt, the user, the model, or a tool's result."""
ROLES: frozenset[str] = frozenset(("system", "user", "assistant", "tool"))

Provider = Literal["openai", "anthropic", "responses"]
"""A wire shape: OpenAI Chat Completions, Anthropic Messages, OpenAI Responses."""
PROVIDERS: tuple[Provider, ...] = ("openai", "anthropic", "responses")


def check_provider(provider: object, name: str = "provider") -> None:
    """Raise an ``ArgumentError`` naming the known providers for any other.

    Example:
        >>> check_provider("anthropic")
        >>> try:
        ...     check_provider("gemini")
        ... except ArgumentValueError as exc:
        ...     print(exc.argument, exc.got)
        provider 'gemini'
    """
    if provider not in PROVIDERS:
        error = ArgumentValueError if isinstance(provider, str) else ArgumentTypeError
        hint = "unknown provider" if isinstance(provider, str) else ""
        raise error(name, shown(provider), "openai, anthropic or responses", hint)


def refuse_constant(name: str) -> NoReturn:
    """Refuse ``NaN``, ``Infinity`` or ``-Infinity`` (a ``parse_constant`` hook).

    Raises:
        ValueError: Always: ``NaN is not JSON``.
    """
    raise ValueError(f"{name} is not JSON")


def finite_float(text: str) -> float:
    """``float(text)``, refusing a literal past a double's range (``parse_float``).

    ``1e400`` is JSON text, but ``float`` reads it as an infinity: writing
    the value back gives ``Infinity``, which is not JSON and which no
    provider takes, so it is refused where ``Infinity`` is. (A literal too
    small for a double reads as ``0.0``: a number still, and written back as
    one.)

    Raises:
        ValueError: ``text`` reads as an infinity.

    Example:
        >>> finite_float("2.5e3")
        2500.0
        >>> finite_float("-1e400")
        Traceback (most recent call last):
        ...
        ValueError: -1e400 is past a double's range (it would read as Infinity)
    """
    value = float(text)
    if math.isinf(value):  # ``json`` passes no ``NaN`` here: a constant
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise ValueError(
            f"{shown} is past a double's range (it would read as Infinity)"
        )
    return value


_DECODER = json.JSONDecoder(parse_constant=refuse_constant, parse_float=finite_float)
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def parse_json(text: str) -> Any:
    """``text`` parsed as JSON, and JSON alone.

    Python's ``json`` reads ``NaN``, ``Infinity`` and ``-Infinity``, which
    are not JSON, and reads a number past a double's range (``1e400``) as an
    infinity: a provider refuses a request holding one, and writing the value
    back gives ``Infinity``. Here they are a ``ValueError``
    (``finite_float``).

    Raises:
        ValueError: ``text`` is not JSON (``NaN is not JSON`` for those).
        RecursionError: It is nested deeper than Python's stack goes; the
            caller names the field (``nested too deeply``).

    Example:
        >>> parse_json('{"a": [1, 2.5]}')
        {'a': [1, 2.5]}
        >>> parse_json('{"a": NaN}')
        Traceback (most recent call last):
        ...
        ValueError: NaN is not JSON
        >>> parse_json('{"a": 1e400}')
        Traceback (most recent call last):
        ...
        ValueError: 1e400 is past a double's range (it would read as Infinity)
    """
    return _DECODER.decode(text)


def dump_json(value: object) -> str:
    """``value`` as compact JSON text (UTF-8 kept); a NaN or an infinity refused.

    Raises:
        ValueError: A float that JSON cannot hold (NaN, an infinity).
        TypeError: A value that is no JSON type.
        RecursionError: Nested deeper than Python's stack goes.

    Example:
        >>> dump_json({"q": "café", "n": [1, 2]})
        '{"q":"café","n":[1,2]}'
        >>> try:
        ...     dump_json({"a": float("inf")})
        ... except ValueError:
        ...     print("refused")
        refused
    """
    return _ENCODER.encode(value)


_DEEP = "nested too deeply"
"""Why JSON deeper than Python's stack is refused (as ``formats`` words it)."""

COMPARED = count()
"""Advanced by every ``Message.__eq__`` call: with it, ``_prefix.same_objects``
tells at C speed whether two lists hold the very same messages (``==`` takes
an object as equal to itself without calling ``__eq__``)."""


def _empty() -> dict[str, Any]:
    # A typed factory: ``dict[str, Any]`` as a factory costs 9x ``{}`` per
    # message, and every message without meta calls it.
    return {}


def new_id() -> str:
    """Return a fresh message id: 128 random bits as 32 hex characters.

    ``os.urandom`` directly: five times faster than ``uuid4().hex`` (which
    only sets six of the bits), and every message read from a provider's
    shape gets one.

    Example:
        >>> a, b = new_id(), new_id()
        >>> (len(a), int(a, 16) >= 0, a != b)
        (32, True, True)
    """
    return os.urandom(16).hex()


@dataclass(frozen=True, slots=True)
class Text:
    """Plain text content.

    Example:
        >>> Text("hello").text
        'hello'
    """

    text: str
    """The text itself."""
    kind: Literal["text"] = field(default="text", init=False, repr=False)
    """Discriminator for serialised forms."""

    def __post_init__(self) -> None:
        if type(self.text) is not str:
            check_str(self.text, "text")


@dataclass(frozen=True, slots=True)
class Image:
    """An image, by URL or ``data:`` URI.

    Example:
        >>> Image("https://example.com/cat.png", detail="low").detail
        'low'
    """

    url: str
    """An ``http(s)://`` URL or a ``data:<media type>;base64,<data>`` URI."""
    detail: str | None = None
    """OpenAI's ``detail`` (``low``, ``high``, ``auto``); ``None`` when not given."""
    width: int | None = None
    """Pixel width, when known (read from a data URI, or given by the caller)."""
    height: int | None = None
    """Pixel height, when known."""
    kind: Literal["image"] = field(default="image", init=False, repr=False)
    """Discriminator for serialised forms."""

    def __post_init__(self) -> None:
        check_str(self.url, "url")
        check_str(self.detail, "detail", none=True)
        check_int(self.width, "width", low=1, none=True)
        check_int(self.height, "height", low=1, none=True)

    @property
    def media_type(self) -> str | None:
        """The media type of a ``data:`` URI, else ``None``."""
        if self.url.startswith("data:"):
            head = self.url[5:].split(",", 1)[0]
            return head.split(";", 1)[0] or None
        return None


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A request from the model to run a tool.

    ``arguments`` is the JSON text of the arguments, exactly as the provider sent
    it (OpenAI sends a string; Anthropic's ``input`` object is serialised
    compactly), so counting and round trips see the same bytes. A mapping is
    taken too, and serialised compactly as Anthropic's ``input`` is. Text that
    is not JSON is refused (``""`` is taken: some servers send it for a call
    without arguments), and so are ``NaN`` and ``Infinity``, which Python's
    ``json`` would read (and a mapping holding such a float), and a number
    past a double's range (``1e400``), which it reads as an infinity: no
    provider takes them (``parse_json``). So is JSON nested deeper than
    Python's stack goes (``nested too deeply``).

    Example:
        >>> ToolCall("call_1", "search", '{"q": "tides"}').input
        {'q': 'tides'}
        >>> ToolCall("call_2", "search", {"q": "tides"}).arguments
        '{"q":"tides"}'
        >>> ToolCall("call_3", "search", "{q: tides}")
        Traceback (most recent call last):
        ...
        contextwindow.errors.ArgumentValueError: arguments: expected JSON text or a mapping, got '{q: tides}'
    """  # noqa: E501 -- doctest output lines cannot be wrapped

    id: str
    """The call id; results answer it."""
    name: str
    """The tool's name."""
    arguments: str = "{}"
    """The arguments as JSON text."""
    kind: Literal["tool_call"] = field(default="tool_call", init=False, repr=False)
    """Discriminator for serialised forms."""

    def __post_init__(self) -> None:
        if type(self.id) is not str:
            check_str(self.id, "id")
        if type(self.name) is not str:
            check_str(self.name, "name")
        args: object = self.arguments
        if args == "{}" or args == "":  # the common cases, and cheap
            return
        if isinstance(args, Mapping):
            try:
                text = dump_json(args)
            except (TypeError, ValueError) as exc:
                raise ArgumentValueError(
                    "arguments", shown(args), "a mapping JSON can hold", str(exc)
                ) from None
            except RecursionError:
                raise ArgumentValueError(
                    "arguments", shown(args), "a mapping JSON can hold", _DEEP
                ) from None
            object.__setattr__(self, "arguments", text)
            return
        takes = "JSON text or a mapping"
        if not isinstance(args, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
            raise ArgumentTypeError("arguments", shown(args), takes)
        try:
            parse_json(args)
        except ValueError as exc:
            hint = "" if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise ArgumentValueError("arguments", shown(args), takes, hint) from None
        except RecursionError:
            raise ArgumentValueError("arguments", shown(args), takes, _DEEP) from None

    @property
    def input(self) -> Any:
        """The arguments parsed from JSON (``{}`` when empty or not JSON).

        Not JSON: only a part that skipped the constructor (unpickled) can
        hold such arguments.

        Raises:
            ArgumentValueError: They are nested too deeply to parse here
                (the constructor parsed them with less of the stack in use).
        """
        if not self.arguments:
            return {}
        try:
            return parse_json(self.arguments)
        except ValueError:
            return {}
        except RecursionError:
            raise ArgumentValueError(
                "arguments", shown(self.arguments), "JSON text", _DEEP
            ) from None


@dataclass(frozen=True, slots=True)
class ToolResult:
    r"""The output of a tool, answering one ``ToolCall``.

    Example:
        >>> ToolResult("call_1", "42").text
        '42'
        >>> ToolResult("call_1", (Text("a"), Text("b"))).text
        'a\nb'
    """

    call_id: str
    """The id of the call this answers."""
    content: str | tuple[ResultPart, ...] = ""
    """The output: a string, or text, image and ``Opaque`` parts (an Anthropic
    ``search_result`` or ``document`` in a ``tool_result``, a Responses
    ``input_file`` in a call's output)."""
    is_error: bool = False
    """Whether the tool reported a failure."""
    name: str | None = None
    """The tool's name, when the provider's shape carries it (OpenAI's ``name``)."""
    kind: Literal["tool_result"] = field(default="tool_result", init=False, repr=False)
    """Discriminator for serialised forms."""

    def __post_init__(self) -> None:
        if type(self.call_id) is not str:
            check_str(self.call_id, "call_id")
        content: object = self.content
        if type(content) is not str:
            if type(content) is not tuple:
                if isinstance(content, str):  # a str subclass: taken as it is
                    return
                takes = "a str, or Text, Image and Opaque parts"
                items: list[Any] = check_items(content, "content", takes=takes)
                object.__setattr__(self, "content", tuple(items))
            for k, item in enumerate(self.content):
                kind = type(item)
                if kind is not Text and kind is not Image and kind is not Opaque:
                    raise ArgumentTypeError(
                        f"content[{k}]", shown(item), "a Text, an Image or an Opaque"
                    )
        if self.is_error is not False and self.is_error is not True:
            check_bool(self.is_error, "is_error")
        if self.name is not None and type(self.name) is not str:
            check_str(self.name, "name", none=True)

    @property
    def text(self) -> str:
        """The textual content, parts joined by newlines.

        An ``Opaque`` part gives the text a model reads in it (a search
        result's content, a text document's text), so what cuts or reads a
        result (truncation, a summary) sees it too.
        """
        if isinstance(self.content, str):
            return self.content
        out: list[str] = []
        for p in self.content:
            if isinstance(p, Text):
                out.append(p.text)
            elif isinstance(p, Opaque):
                from contextwindow.formats._opaque import read_opaque

                text = read_opaque(p).text
                if text:
                    out.append(text)
        return "\n".join(out)

    @property
    def images(self) -> tuple[Image, ...]:
        """The image parts of the content."""
        if isinstance(self.content, str):
            return ()
        return tuple(p for p in self.content if isinstance(p, Image))

    @property
    def opaque(self) -> tuple[Opaque, ...]:
        """The ``Opaque`` parts of the content (documents, search results, files)."""
        if isinstance(self.content, str):
            return ()
        return tuple(p for p in self.content if isinstance(p, Opaque))


@dataclass(frozen=True, slots=True)
class Thinking:
    """Model reasoning: Anthropic thinking blocks, OpenAI reasoning items.

    Example:
        >>> Thinking("Check the date first.").redacted
        False
    """

    text: str
    """The visible reasoning text (or summary); empty when redacted."""
    signature: str | None = None
    """Anthropic's signature, or OpenAI's ``encrypted_content``; must round-trip."""
    redacted: bool = False
    """Anthropic ``redacted_thinking``: ``signature`` holds the opaque data."""
    kind: Literal["thinking"] = field(default="thinking", init=False, repr=False)
    """Discriminator for serialised forms."""

    def __post_init__(self) -> None:
        check_str(self.text, "text")
        check_str(self.signature, "signature", none=True)
        check_bool(self.redacted, "redacted")


class _OpaqueKept:
    """Slots for an opaque part's type and key, each computed once.

    Not fields: they are never compared, copied or pickled (a part read back
    from a pickle computes them again). ``TokenCounter.part`` and the
    writers ask a part its type on every count, and a document's JSON can be
    megabytes: parsing it each time cost more than counting it.
    """

    __slots__ = ("_key", "_type")
    _key: str
    _type: str


@dataclass(frozen=True, slots=True)
class Opaque(_OpaqueKept):
    """Content the neutral model does not interpret, kept as the provider wrote it.

    An Anthropic ``document`` or ``search_result`` block, a Chat ``file`` or
    ``input_audio`` part, a Responses ``input_file``, a refusal, an audio
    reply: real content the model reads (and the provider bills), so it is
    counted (``TokenCounter.part``), makes a turn non-empty
    (``validity``), and is written back in place. ``raw`` is the block as
    compact JSON text, not a dict: a part is a hashable value, and the
    block goes back as it came. A mapping is taken too, and serialised; JSON
    text is serialised again, compactly, so equal blocks are equal parts.

    Example:
        >>> doc = Opaque("anthropic", {"type": "document", "source": {
        ...     "type": "text", "media_type": "text/plain", "data": "Fee: 4,200 EUR."}})
        >>> (doc.type, doc.block["source"]["data"])
        ('document', 'Fee: 4,200 EUR.')
        >>> doc.raw[:20]
        '{"type":"document","'
    """

    provider: Provider
    """Whose shape ``raw`` is in: ``openai``, ``responses`` or ``anthropic``."""
    raw: str
    """The block, part or field as compact JSON text (a JSON object)."""
    kind: Literal["opaque"] = field(default="opaque", init=False, repr=False)
    """Discriminator for serialised forms."""

    def __post_init__(self) -> None:
        check_provider(self.provider)
        raw = cast("object", self.raw)  # a mapping too, or anything a caller passes
        takes = "a JSON object (text or a mapping)"
        if isinstance(raw, str):
            try:
                value: object = parse_json(raw)
            except ValueError as exc:
                hint = "" if isinstance(exc, json.JSONDecodeError) else str(exc)
                raise ArgumentValueError("raw", shown(raw), takes, hint) from None
            except RecursionError:
                raise ArgumentValueError("raw", shown(raw), takes, _DEEP) from None
            if not isinstance(value, dict):
                raise ArgumentValueError("raw", shown(raw), takes)
            value = cast("dict[str, Any]", value)
        elif isinstance(raw, Mapping):
            value = cast("Mapping[str, Any]", raw)
        else:
            raise ArgumentTypeError("raw", shown(raw), takes)
        try:
            text = dump_json(value)
        except (TypeError, ValueError) as exc:
            raise ArgumentValueError("raw", shown(self.raw), takes, str(exc)) from None
        except RecursionError:
            raise ArgumentValueError("raw", shown(self.raw), takes, _DEEP) from None
        object.__setattr__(self, "raw", text)
        kind = value.get("type")
        object.__setattr__(self, "_type", kind if isinstance(kind, str) else "")

    @classmethod
    def of(cls, provider: Provider, block: Mapping[str, Any]) -> Opaque:
        """An ``Opaque`` part of ``block`` (serialised compactly).

        Example:
            >>> Opaque.of("openai", {"type": "refusal", "refusal": "No."}).raw
            '{"type":"refusal","refusal":"No."}'
        """
        return cls(provider, block)  # type: ignore[arg-type]  # __post_init__ serialises a mapping

    @property
    def block(self) -> dict[str, Any]:
        """``raw`` parsed: a new dict each time (the caller may change it)."""
        value: dict[str, Any] = parse_json(self.raw)
        return value

    @property
    def type(self) -> str:
        """The block's ``"type"`` (``document``, ``file``, ``refusal``...) or ``""``."""
        try:
            return self._type
        except AttributeError:  # unpickled or copied: slots are not fields
            kind = self.block.get("type")
            object.__setattr__(self, "_type", kind if isinstance(kind, str) else "")
            return self._type

    @property
    def key(self) -> str:
        """A digest of ``raw`` (BLAKE2b), computed once: what caches key on.

        A cache keyed by the part, or by its text, would hold a document of
        megabytes for as long as it holds the entry.

        Example:
            >>> len(Opaque.of("openai", {"type": "refusal", "refusal": "No."}).key)
            32
        """
        try:
            return self._key
        except AttributeError:
            digest = hashlib.blake2b(self.raw.encode(), digest_size=16).hexdigest()
            object.__setattr__(self, "_key", digest)
            return digest


Part = Text | Image | ToolCall | ToolResult | Thinking | Opaque
"""Any content part of a message."""
ResultPart = Text | Image | Opaque
"""What a ``ToolResult``'s content holds when it is not a string."""
_PART_TYPES = frozenset((Text, Image, ToolCall, ToolResult, Thinking, Opaque))


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool offered to the model with a request (its schema costs tokens).

    Example:
        >>> ToolSpec("search", "Search the web", {"type": "object"}).name
        'search'
    """

    name: str
    """The tool's name."""
    description: str = ""
    """What the tool does, as shown to the model."""
    parameters: Mapping[str, Any] = field(default_factory=_empty, hash=False)
    """The JSON Schema of the arguments."""

    def __post_init__(self) -> None:
        check_str(self.name, "name", empty=False)
        check_str(self.description, "description")
        if not isinstance(self.parameters, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
            raise ArgumentTypeError(
                "parameters", shown(self.parameters), "a JSON Schema (a mapping)"
            )


class _HashKept:
    """Slots for a message's hash and content handle (each computed once).

    Not fields: they are never compared, copied or pickled (the hash of a
    string differs between runs). The handle is ``handles.content_handle``'s,
    which markers name and re-fits ask for again and again. A third slot takes
    weak references: a cache keeps what it read of a message no longer than
    the message lives.
    """

    __slots__ = ("__weakref__", "_handle", "_hash")
    _hash: int
    _handle: str


@dataclass(frozen=True, slots=True)
class Message(_HashKept):
    """One message of a conversation, in no provider's shape.

    Example:
        >>> m = Message.user("hi", name="ada")
        >>> (m.role, m.text, m.name)
        ('user', 'hi', 'ada')
        >>> m == Message.user("hi", name="ada")  # ids differ, content is equal
        True
    """

    role: Role
    """``system``, ``user``, ``assistant`` or ``tool``."""
    parts: tuple[Part, ...] = ()
    """The content, in order."""
    name: str | None = None
    """A participant name the provider sees (OpenAI's ``name``)."""
    agent: str | None = None
    """Which agent of a team wrote or owns this message; not sent to providers."""
    pinned: bool = False
    """Never removed by any strategy."""
    id: str = field(default_factory=new_id, compare=False)
    """A unique id; identity is a storage concern, so it is not compared."""
    meta: Mapping[str, Any] = field(default_factory=_empty, compare=False, hash=False)
    """Opaque provider data that must round-trip (e.g. Anthropic cache_control)."""

    def __post_init__(self) -> None:
        # Every message passes here, so the usual case costs a few type
        # checks; the helpers that word an error run only on a bad value.
        role: object = self.role
        if type(role) is not str or role not in ROLES:
            # A str subclass naming a role (a ``str`` Enum's member): its
            # plain str, so that the role compares, hashes, prints and
            # serialises as the role does.
            plain = str.__str__(role) if isinstance(role, str) else None  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
            if plain not in ROLES:
                error = ArgumentValueError if plain is not None else ArgumentTypeError
                raise error("role", shown(role), "system, user, assistant or tool")
            object.__setattr__(self, "role", plain)
        parts: object = self.parts
        if type(parts) is not tuple:
            items: list[Any] = check_items(parts, "parts", takes="an iterable of parts")
            object.__setattr__(self, "parts", tuple(items))
        for k, part in enumerate(self.parts):
            if type(part) not in _PART_TYPES:
                raise ArgumentTypeError(
                    f"parts[{k}]",
                    shown(part),
                    "a Text, Image, ToolCall, ToolResult, Thinking or Opaque",
                )
        if self.name is not None and type(self.name) is not str:
            check_str(self.name, "name", none=True)
        if self.agent is not None and type(self.agent) is not str:
            check_str(self.agent, "agent", none=True)
        if self.pinned is not False and self.pinned is not True:
            check_bool(self.pinned, "pinned")
        if type(self.id) is not str:
            check_str(self.id, "id")
        if type(self.meta) is not dict and not isinstance(self.meta, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
            raise ArgumentTypeError("meta", shown(self.meta), "a mapping")

    def __eq__(self, other: object) -> bool:
        # What the dataclass would write, and a tick of ``COMPARED``: by it
        # ``_prefix.same_objects`` compares two lists of messages at C speed.
        next(COMPARED)
        if other.__class__ is not self.__class__ or not isinstance(other, Message):
            return NotImplemented
        return (self.role, self.parts, self.name, self.agent, self.pinned) == (
            other.role,
            other.parts,
            other.name,
            other.agent,
            other.pinned,
        )

    def __hash__(self) -> int:
        # A counter looks each message up by content again on every count:
        # the hash of every part, once.
        try:
            return self._hash
        except AttributeError:
            pass
        found = hash((self.role, self.parts, self.name, self.agent, self.pinned))
        object.__setattr__(self, "_hash", found)
        return found

    # -- constructors -------------------------------------------------------

    @classmethod
    def system(cls, text: str, **kw: Any) -> Message:
        """A system message with one text part."""
        if type(text) is not str:
            check_str(text, "text")
        return cls("system", (Text(text),), **kw)

    @classmethod
    def user(cls, content: str | Iterable[Part], **kw: Any) -> Message:
        """A user message from a string or parts."""
        return cls("user", _as_parts(content), **kw)

    @classmethod
    def assistant(
        cls,
        content: str | Iterable[Part] = (),
        *,
        tool_calls: Iterable[ToolCall] = (),
        **kw: Any,
    ) -> Message:
        """An assistant message: text or parts, then any tool calls."""
        calls: Iterable[ToolCall] = (
            () if tool_calls == () else check_items(tool_calls, "tool_calls")
        )
        return cls("assistant", _as_parts(content) + tuple(calls), **kw)

    @classmethod
    def tool(
        cls,
        call_id: str,
        content: str | tuple[ResultPart, ...],
        *,
        is_error: bool = False,
        name: str | None = None,
        **kw: Any,
    ) -> Message:
        """A tool message holding one result."""
        if type(call_id) is not str:
            check_str(call_id, "call_id")
        result = ToolResult(call_id, content, is_error=is_error, name=name)
        return cls("tool", (result,), **kw)

    # -- views --------------------------------------------------------------

    @property
    def text(self) -> str:
        """The text parts joined by newlines (tool results included)."""
        out: list[str] = []
        for p in self.parts:
            if isinstance(p, (Text, ToolResult)):
                out.append(p.text)
        return "\n".join(out)

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls in this message, in order."""
        return tuple(p for p in self.parts if isinstance(p, ToolCall))

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        """The tool results in this message, in order."""
        return tuple(p for p in self.parts if isinstance(p, ToolResult))

    def with_parts(self, parts: Iterable[Part]) -> Message:
        """A copy with other parts and the same id, name, agent and meta.

        Raises:
            ArgumentTypeError: ``parts`` is no iterable of parts (a ``str``,
                a ``Message``, ``None``), or an item is not a part.
        """
        takes = "an iterable of parts"
        given: list[Part] = check_items(parts, "parts", takes=takes)
        return replace(self, parts=tuple(given))


def _as_parts(content: str | Iterable[Part]) -> tuple[Part, ...]:
    if isinstance(content, str):
        return (Text(content),) if content else ()
    takes = "a str or an iterable of parts"
    return tuple(check_items(content, "content", takes=takes))


# -- units ---------------------------------------------------------------------

UnitKind = Literal["system", "message", "tool_exchange", "orphan_results"]


@dataclass(frozen=True, slots=True)
class Unit:
    """Messages that are kept or dropped together: ``messages[start:stop]``.

    Example:
        >>> conv = [Message.user("hi"), Message.assistant("hello")]
        >>> units(conv)[1]
        Unit(kind='message', start=1, stop=2, unanswered=())
    """

    kind: UnitKind
    """``system``; ``message`` (one plain message); ``tool_exchange`` (an
    assistant message with tool calls and the tool messages answering it);
    ``orphan_results`` (a tool message answering no pending call)."""
    start: int
    """Index of the first message."""
    stop: int
    """Index one past the last message."""
    unanswered: tuple[int, ...] = ()
    """For a tool exchange: positions (in the assistant message's calls) that no
    result answers. Empty for a complete exchange."""

    def __len__(self) -> int:
        return self.stop - self.start

    @property
    def complete(self) -> bool:
        """Whether a provider would accept this unit as it is."""
        return self.kind != "orphan_results" and not self.unanswered


def units(messages: Iterable[Any]) -> tuple[Unit, ...]:
    """Group a conversation into atomic units, in order, covering every message.

    Messages in any shape ``contextwindow.formats`` reads are taken (provider
    dicts, SDK objects); the units then index the neutral messages they are
    read into.

    A tool exchange is an assistant message with tool calls followed by the
    contiguous ``tool`` messages whose results answer its calls. Each result is
    matched to the earliest pending call with its id; a result naming no pending
    call ends the exchange (it becomes an ``orphan_results`` unit, or joins the
    following orphans).

    Args:
        messages: The conversation.

    Returns:
        Units whose ranges partition ``range(len(messages))``.

    The last few sequences grouped are remembered: when a call extends one
    (the same message objects first, then new ones), only the new tail is
    scanned, so an agent loop pays for what it appended, not for the history.

    Example:
        >>> conv = [
        ...     Message.assistant(tool_calls=[ToolCall("a", "f"), ToolCall("b", "g")]),
        ...     Message.tool("b", "2"),
        ...     Message.tool("a", "1"),
        ...     Message.tool("zz", "?"),
        ... ]
        >>> [(u.kind, u.start, u.stop) for u in units(conv)]
        [('tool_exchange', 0, 3), ('orphan_results', 3, 4)]
    """
    seq: list[Any] | tuple[Any, ...]
    if type(messages) in (list, tuple):  # not narrowed: hence the cast
        # A tuple cannot change: taken, and kept, as it is.
        seq = cast("list[Any] | tuple[Any, ...]", messages)
    elif isinstance(messages, (list, tuple)):
        seq = list(messages)
    else:  # a body, a generator: read at the edge
        seq = list(_neutral(messages))
    n = len(seq)
    out: list[Unit] = []
    same: tuple[Unit, ...] | None = None
    with _recent_lock:
        recent = list(_recent)
        # Taken out as it is followed: a chain of them ends, even one that
        # leads back to ``seq``.
        k = next((k for k, (new, _) in enumerate(_alike) if new is seq), None)
        alike = None if k is None else _alike.pop(k)[1]
    for last, found in recent:  # the very sequence remembered (a tuple)
        if last is seq:
            return found
    if alike is not None:  # grouped as another (``same_units``): its units
        found = units(alike)
        with _recent_lock:
            _recent.insert(0, (seq, found))
            del _recent[_RECENT:]
        return found
    # An agent loop asks again after appending: units before the last one end
    # inside the old prefix and cannot change, so only the tail is scanned.
    # ``==`` on lists compares by identity first, so an unchanged prefix of the
    # same message objects is checked at C speed.
    for last, found in recent:
        k = len(last)
        if k and n >= k and seq[k - 1] is last[-1] and _starts_with(seq, last):
            if n == k:
                return found
            if not _all_messages(seq, k):
                return units(_neutral(seq))
            out.extend(found[:-1])
            _scan(seq, found[-1].start, out)
            break
    else:
        if not _all_messages(seq, 0):
            return units(_neutral(seq))
        # Only a prefix shared (a strategy's output that rewrote or dropped
        # something): units that end inside it, before its last message,
        # cannot change. A strategy that rewrote some contents (tool results
        # cut or cleared) changed no role and no call id: then the units are
        # the same.
        k, last, found = _longest_shared(seq, recent)
        if (
            found
            and len(last) == n
            and all(
                a is b or _shape(a) == _shape(b)
                for a, b in zip(seq[k:], last[k:], strict=True)
            )
        ):
            same = found  # the very units: no copy of them held
        else:
            out.extend(found[: _units_before(found, k)])
            _scan_known(seq, out[-1].stop if out else 0, out, recent)
    result = tuple(out) if same is None else same
    if n >= _MIN_SHARED:  # a short one is cheaper to scan than to look up
        with _recent_lock:
            # A copy: a caller's list changed in place later must not match.
            kept = seq if seq is not messages or type(seq) is tuple else list(seq)
            _recent.insert(0, (kept, result))
            del _recent[_RECENT:]
    return result


def _starts_with(seq: Sequence[Any], last: Sequence[Any]) -> bool:
    """Whether ``seq`` starts with ``last`` (by ``==``; a list or a tuple each).

    Compared whole, without a slice, when they are as long and of one type.
    """
    if len(seq) == len(last) and type(seq) is type(last):
        return seq == last
    head = seq[: len(last)]
    if type(head) is not type(last):  # a list never equals a tuple
        head = list(head) if type(last) is list else tuple(head)
    return head == last


_RECENT = 16
"""Sequences remembered by ``units`` (a pipeline's input and each stage's
output; a manager's history and its view)."""
_MIN_SHARED = 64
"""Fewer shared leading messages than this: the units are found from scratch."""


def _longest_shared(
    seq: Sequence[Message], recent: Sequence[tuple[Sequence[Message], tuple[Unit, ...]]]
) -> tuple[int, Sequence[Message], tuple[Unit, ...]]:
    """The remembered sequence sharing the longest prefix with ``seq``."""
    which, k = longest_prefix(seq, [last for last, _ in recent])
    best: tuple[int, Sequence[Message], tuple[Unit, ...]]
    best = (k, *recent[which]) if k else (0, [], ())
    if best[0] >= _MIN_SHARED or (best[0] and len(best[1]) == len(seq)):
        return best
    return (0, [], ())


def _scan_known(
    seq: Sequence[Message],
    start: int,
    out: list[Unit],
    recent: Sequence[tuple[Sequence[Message], tuple[Unit, ...]]],
) -> None:
    """``_scan(seq, start, out)``, taking the units of runs met before.

    A strategy's output often holds a remembered sequence's messages at
    other places (its oldest units dropped, runs of them made one line, new
    ones appended): in each run they share (``shared_spans``), from the first
    place where both have a unit start, the units are the remembered ones,
    moved, as far as the run decides them.
    """
    n = len(seq)
    tried = [
        (last, found)
        for last, found in recent[:TRIED]
        if len(last) >= _MIN_SHARED and found
    ]
    which, spans = best_spans([last for last, _ in tried], seq, start)
    if spans:
        last, found = tried[which]
        at = start
        for first, end, d in spans:
            if at < first:
                _scan(seq, at, out, until=first)
                at = out[-1].stop
            k = len(found)  # no unit starts where both have one: none moved
            while at < end:
                j = bisect_left(found, at - d, key=_start)
                if j < len(found) and found[j].start == at - d:
                    k = j
                    break
                _scan(seq, at, out, 1)
                at = out[-1].stop
            # A unit's end is decided by the message after it: in the run
            # too, unless both sequences end with the unit.
            j = bisect_left(found, end - d, lo=k, key=_stop)
            if j < len(found) and found[j].stop + d == end == n == len(last) + d:
                j += 1
            if j > k:
                out.extend(found[k:j] if not d else _shifted(found[k:j], d))
                at = found[j - 1].stop + d
        if at < n:
            _scan(seq, at, out)
        return
    _scan(seq, start, out)


_start = attrgetter("start")
"""A unit's first message (``bisect``'s key)."""
_stop = attrgetter("stop")
"""The message after a unit (``bisect``'s key)."""


def _moved(u: Unit, d: int) -> Unit:
    """``u`` moved by ``d`` places."""
    if u.kind == "tool_exchange":
        if u.unanswered:
            return Unit("tool_exchange", u.start + d, u.stop + d, u.unanswered)
        return _exchange(u.start + d, u.stop + d)
    if u.kind == "orphan_results":
        return Unit("orphan_results", u.start + d, u.stop + d)
    return _one(u.kind, u.start + d)


def _shifted(found: Sequence[Unit], d: int) -> list[Unit]:
    """``_moved(u, d)`` of each of ``found``.

    One message and two-message exchanges (nearly every unit) are taken from
    the units kept built, in the loop, without a call each.
    """
    ones = _ONE.get("message") or []
    pairs = _EXCHANGES[2]
    out: list[Unit] = []
    append = out.append
    for u in found:
        i = u.start + d
        kind = u.kind
        kept: Unit | None = None
        if kind == "message":
            kept = ones[i] if 0 <= i < len(ones) else None
        elif kind == "tool_exchange" and u.stop - u.start == 2 and not u.unanswered:
            kept = pairs[i] if 0 <= i < len(pairs) else None
        if kept is not None:
            append(kept)
            continue
        append(_moved(u, d))
    return out


def _units_before(found: Sequence[Unit], k: int) -> int:
    """How many of ``found`` end before index ``k - 1``.

    A unit's end is decided by the message after it, which must be shared too.
    """
    lo, hi = 0, len(found)
    while lo < hi:
        mid = (lo + hi) // 2
        if found[mid].stop < k:
            lo = mid + 1
        else:
            hi = mid
    return lo


_recent: list[tuple[Sequence[Message], tuple[Unit, ...]]] = []
_recent_lock = threading.Lock()
_alike: list[tuple[tuple[Message, ...], Sequence[Message]]] = []
"""Tuples ``same_units`` said group as another sequence (the last few)."""


def _all_messages(seq: Sequence[Any], start: int) -> bool:
    """Whether ``seq[start:]`` holds ``Message`` objects alone."""
    kinds = set(map(type, seq[start:] if start else seq))  # at C speed
    return kinds <= {Message} or all(issubclass(k, Message) for k in kinds)


def _neutral(data: object) -> Sequence[Message]:
    # The edge lives in ``formats``, which builds on this module.
    from contextwindow.formats._coerce import neutral

    return neutral(data)


def _shape(m: Message) -> tuple[str, tuple[str, ...]]:
    """What ``units`` looks at: the role and the call ids of calls or results."""
    if m.role == "assistant":
        return m.role, tuple(p.id for p in m.parts if isinstance(p, ToolCall))
    if m.role == "tool":
        return m.role, tuple(p.call_id for p in m.parts if isinstance(p, ToolResult))
    return m.role, ()


def fresh_units(messages: Sequence[Message]) -> tuple[Unit, ...]:
    """``units(messages)`` of ``Message`` objects, found and not remembered.

    For a sequence nothing will ask about again (a slice checked once): the
    cache ``units`` keeps would hold a copy of it and of its units.

    Example:
        >>> fresh_units([Message.user("hi")])
        (Unit(kind='message', start=0, stop=1, unanswered=()),)
    """
    out: list[Unit] = []
    _scan(messages, 0, out)
    return tuple(out)


def same_units(new: tuple[Message, ...], old: Sequence[Message]) -> None:
    """Record that ``new`` groups as ``old`` does: ``units(new)`` is ``units(old)``.

    For a strategy's output that holds, at each index, a message of the role
    and the call (or result) ids of ``old``'s there (it rewrote contents
    alone): ``units`` then looks at none of its messages. ``new`` is a tuple,
    which cannot change later.

    Example:
        >>> old = [Message.assistant(tool_calls=[ToolCall("a", "f")]),
        ...        Message.tool("a", "a long output")]
        >>> new = (old[0], Message.tool("a", "[cleared]"))
        >>> same_units(new, old)
        >>> units(new) is units(old)
        True
    """
    if len(new) != len(old):
        raise ValueError("same_units: the two sequences differ in length")
    if new is old:
        return
    # A snapshot: a caller's list may change before the units are asked for.
    was = cast("tuple[Message, ...]", old) if type(old) is tuple else tuple(old)
    with _recent_lock:  # found when asked for: a later stage may never ask
        _alike.insert(0, (new, was))
        del _alike[_RECENT:]


def unit_at(messages: Sequence[Message], start: int) -> Unit:
    """The unit starting at ``messages[start]``, as ``units`` finds it there.

    For a ``start`` where a unit starts: a strategy that walks on from a known
    unit boundary looks at the units it needs, not at the whole conversation.

    Example:
        >>> conv = [Message.user("hi"),
        ...         Message.assistant(tool_calls=[ToolCall("a", "f")]),
        ...         Message.tool("a", "1"), Message.user("ok")]
        >>> unit_at(conv, 1)
        Unit(kind='tool_exchange', start=1, stop=3, unanswered=())
    """
    out: list[Unit] = []
    _scan(messages, start, out, 1)
    return out[0]


def _scan(
    messages: Sequence[Message],
    start: int,
    out: list[Unit],
    most: int = -1,
    until: int | None = None,
) -> None:
    """Append the units of ``messages[start:]`` to ``out``.

    At most ``most`` of them, and none starting at ``until`` or after.
    """
    # The hot path of every strategy: plain loops and direct class checks, no
    # per-message tuples (``tool_calls`` would build one per message).
    append = out.append
    n = len(messages)
    end = n if until is None else min(n, until)
    i = start
    while i < end and most:
        most -= 1
        msg = messages[i]
        role = msg.role
        if role == "system":
            append(_one("system", i))
            i += 1
        elif role == "assistant":
            pending = [p.id for p in msg.parts if isinstance(p, ToolCall)]
            if not pending:
                append(_one("message", i))
                i += 1
                continue
            slots: list[str | None] = list(pending)
            where: dict[str, list[int]] = {}
            for k, cid in enumerate(pending):
                where.setdefault(cid, []).append(k)
            left = len(slots)
            j = i + 1
            while j < n and left and messages[j].role == "tool":
                taken = _take_results(messages[j], slots, where)
                if not taken:
                    break
                left -= taken
                j += 1
            if left:
                unanswered = tuple(k for k, cid in enumerate(slots) if cid is not None)
                append(Unit("tool_exchange", i, j, unanswered))
            else:
                append(_exchange(i, j))
            i = j
        elif role == "tool":
            j = i + 1
            while j < n and messages[j].role == "tool":
                j += 1
            append(Unit("orphan_results", i, j))
            i = j
        else:
            append(_one("message", i))
            i += 1


_KEPT_UNITS = 1 << 15
"""Positions whose one-message and complete-exchange units are kept built."""
_KEPT_SPAN = 4
"""The longest complete exchange (messages) whose unit ``_exchange`` keeps."""
# Kept by kind (or by length, for exchanges), then by position: a list slot
# each, no key to build or hold.
_ONE: dict[UnitKind, list[Unit | None]] = {}
_EXCHANGES: list[list[Unit | None]] = [[] for _ in range(_KEPT_SPAN + 1)]


def _one(kind: UnitKind, i: int) -> Unit:
    """``Unit(kind, i, i + 1)``: the same object each time (a unit is a value).

    Building a frozen dataclass costs more than the rest of a scan's step, and
    a conversation is grouped again after each change: the units of the
    first ``_KEPT_UNITS`` positions are built once.
    """
    row = _ONE.get(kind)
    if row is None:
        row = _ONE[kind] = []
    if i < len(row):
        found = row[i]
        if found is not None:
            return found
    found = Unit(kind, i, i + 1)
    _keep(row, i, found)
    return found


def _exchange(i: int, j: int) -> Unit:
    """``Unit("tool_exchange", i, j)`` of a complete exchange, kept as ``_one``'s."""
    d = j - i
    row = _EXCHANGES[d] if d <= _KEPT_SPAN else None
    if row is not None and i < len(row):
        found = row[i]
        if found is not None:
            return found
    found = Unit("tool_exchange", i, j)
    if row is not None:
        _keep(row, i, found)
    return found


def _keep(row: list[Unit | None], i: int, unit: Unit) -> None:
    """Keep ``unit`` at position ``i`` of ``row`` (within ``_KEPT_UNITS``)."""
    if i >= _KEPT_UNITS:
        return
    if i >= len(row):
        row.extend([None] * (i + 1 - len(row)))
    row[i] = unit


def _take_results(
    msg: Message, slots: list[str | None], where: dict[str, list[int]]
) -> int:
    """Match every result of ``msg`` to the earliest pending call with its id.

    ``slots`` holds the call ids still pending (``None`` once answered),
    ``where`` each id's pending positions in order: a result is matched in
    constant time (looked for along ``slots``, an exchange of thousands of
    parallel calls took the square of their number). All or nothing: when a
    result matches no pending call, both are left as they were and 0 is
    returned; else the number of results taken.
    """
    taken: list[int] = []
    used: dict[str, int] = {}  # each id's pending positions this message takes
    for part in msg.parts:
        if not isinstance(part, ToolResult):
            continue
        cid = part.call_id
        queue = where.get(cid)
        u = used.get(cid, 0)
        if queue is None or u >= len(queue):
            return 0
        used[cid] = u + 1
        taken.append(queue[u])
    for cid, u in used.items():
        del where[cid][:u]
    for k in taken:
        slots[k] = None
    return len(taken)
