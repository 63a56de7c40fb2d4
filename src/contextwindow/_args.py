"""The argument check every public call makes at entry, before any work.

Contract: each helper returns the argument as the callee will use it (an
``int``, a tuple, a ``Tokenizer`` built from a name, a parsed strategy) or
raises an ``ArgumentError`` naming the argument, what it got and what it takes:
``ArgumentTypeError`` (also a ``TypeError``) for the wrong type,
``ArgumentValueError`` (also a ``ValueError``) for a value out of range. A
``bool`` is never taken for a number, a ``float`` never for an ``int``, NaN
and infinity never for a number. Any iterable is taken where a sequence is
read once (a generator included), but a ``str`` is not taken for a sequence
of strings unless the callee says so. A secret is never shown, only its type.

``as_tokenizer`` and ``as_strategy`` import the registry and the strategy
names when first called, since every layer checks its arguments here and
those sit above the lowest ones.
"""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from contextwindow.errors import ArgumentTypeError, ArgumentValueError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from contextwindow.messages import Message
    from contextwindow.models import ModelInfo
    from contextwindow.strategies.base import Strategy
    from contextwindow.tokens.base import Tokenizer

__all__ = [
    "as_model",
    "as_strategy",
    "as_tokenizer",
    "check_bool",
    "check_callable",
    "check_int",
    "check_items",
    "check_messages",
    "check_number",
    "check_percent",
    "check_str",
    "check_strs",
    "check_summarizer",
    "shown",
]

T = TypeVar("T")

_SHOWN = 60
"""The longest ``repr`` an error shows of a value; longer ones are cut."""


def shown(value: object, *, secret: bool = False) -> str:
    """How an error shows ``value``: a short ``repr``, or only the type of a secret.

    Example:
        >>> shown(float("nan")), shown("x" * 100)[:12], shown("sk-123", secret=True)
        ('nan', "'xxxxxxxxxxx", 'a str (not shown)')
    """
    if secret:
        return f"a {type(value).__name__} (not shown)"
    try:
        text = repr(value)
    except Exception:  # a user's __repr__ that fails must not hide the error
        text = f"<{type(value).__name__}>"
    if len(text) > _SHOWN:
        text = text[: _SHOWN - 3] + "..."
    if value is None or isinstance(value, (bool, int, float, str)):
        return text
    return f"{text} ({type(value).__name__})"


def _type_error(name: str, value: object, takes: str, hint: str = "") -> Exception:
    return ArgumentTypeError(name, shown(value), takes, hint)


def _value_error(name: str, value: object, takes: str, hint: str = "") -> Exception:
    return ArgumentValueError(name, shown(value), takes, hint)


def _bounds(low: float | None, high: float | None, open_low: bool) -> str:
    if low is not None and high is not None:
        return f" in {'(' if open_low else '['}{low:g}, {high:g}]"
    if low is not None:
        return f" {'>' if open_low else '>='} {low:g}"
    if high is not None:
        return f" <= {high:g}"
    return ""


def check_int(
    value: object,
    name: str,
    *,
    low: int | None = None,
    high: int | None = None,
    none: bool = False,
) -> Any:
    """``value`` if it is an ``int`` in ``[low, high]`` (or ``None`` when allowed).

    Example:
        >>> check_int(3, "keep_last", low=0)
        3
        >>> check_int(2.0, "keep_last", low=0)
        Traceback (most recent call last):
        ...
        contextwindow.errors.ArgumentTypeError: keep_last: expected an int >= 0, got 2.0
    """
    takes = "an int" + _bounds(low, high, False)
    if value is None and none:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _type_error(name, value, takes + (" or None" if none else ""))
    if (low is not None and value < low) or (high is not None and value > high):
        raise _value_error(name, value, takes)
    return value


def check_number(
    value: object,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    open_low: bool = False,
    none: bool = False,
) -> Any:
    """``value`` if it is a finite ``int`` or ``float`` in range.

    Example:
        >>> check_number(0.5, "max_share", low=0, high=1, open_low=True)
        0.5
        >>> check_number(float("inf"), "weight", low=0)
        Traceback (most recent call last):
        ...
        contextwindow.errors.ArgumentValueError: weight: expected a finite number >= 0, got inf
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    takes = "a finite number" + _bounds(low, high, open_low)
    if value is None and none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _type_error(name, value, takes + (" or None" if none else ""))
    if isinstance(value, float) and not math.isfinite(value):
        raise _value_error(name, value, takes)
    if (low is not None and (value <= low if open_low else value < low)) or (
        high is not None and value > high
    ):
        raise _value_error(name, value, takes)
    return value


def check_percent(value: object, name: str) -> Any:
    """A percentage in (0, 100].

    Example:
        >>> check_percent(90, "threshold")
        90
    """
    return check_number(value, name, low=0, high=100, open_low=True)


def check_str(
    value: object,
    name: str,
    *,
    empty: bool = True,
    none: bool = False,
    secret: bool = False,
    takes: str | None = None,
) -> Any:
    """``value`` if it is a ``str`` (non-empty unless ``empty``; ``None`` if allowed).

    Example:
        >>> check_str("hi", "text")
        'hi'
        >>> check_str(None, "text")
        Traceback (most recent call last):
        ...
        contextwindow.errors.ArgumentTypeError: text: expected a str, got None
    """
    what = takes or ("a str" if empty else "a non-empty str")
    if value is None and none:
        return None
    if not isinstance(value, str):
        either = what + (" or None" if none else "")
        raise ArgumentTypeError(name, shown(value, secret=secret), either)
    if not empty and not value.strip():
        raise ArgumentValueError(name, shown(value, secret=secret), what)
    return value


def check_path(value: object, name: str, takes: str) -> str:
    """``value`` as a path's text: a ``str`` or a ``PathLike`` of one, no NUL in it.

    ``takes`` says what the argument takes, for a value of another type (a
    ``PathLike`` of bytes too); a NUL, which no file system takes, is an
    ``ArgumentValueError``.

    Example:
        >>> from pathlib import Path
        >>> check_path(Path("a/b.db"), "path", "a file path")
        'a/b.db'
        >>> try:
        ...     check_path(chr(0), "path", "a file path")
        ... except ArgumentValueError as exc:
        ...     print(exc.takes)
        a path without NUL characters
    """
    text = _fspath(value)
    if not isinstance(text, str):
        raise ArgumentTypeError(name, shown(value), takes)
    if "\0" in text:
        raise ArgumentValueError(name, shown(value), "a path without NUL characters")
    return text


def _fspath(value: object) -> str | bytes | None:
    """``os.fspath(value)`` for a ``str`` or a ``PathLike``, else ``None``."""
    if not isinstance(value, (str, os.PathLike)):
        return None
    return os.fspath(cast("str | os.PathLike[str] | os.PathLike[bytes]", value))


def check_bool(value: object, name: str) -> Any:
    """``value`` if it is a ``bool`` (``0`` and ``1`` are not).

    Example:
        >>> check_bool(True, "is_error")
        True
    """
    if not isinstance(value, bool):
        raise _type_error(name, value, "True or False")
    return value


def check_callable(value: T, name: str, takes: str = "a callable") -> T:
    """``value`` if it can be called.

    Example:
        >>> check_callable(len, "scorer") is len
        True
    """
    if not callable(value):
        raise _type_error(name, value, takes)
    return value


def check_items(
    value: object,
    name: str,
    check: Callable[[Any, str], T] | None = None,
    *,
    takes: str = "an iterable",
) -> list[T]:
    """Any iterable's items as a list (a generator is taken), each checked.

    ``check(item, f"{name}[{k}]")`` checks each item. A ``str``, ``bytes`` or
    mapping is refused: each would be taken apart by mistake.

    Example:
        >>> check_items((x for x in (1, 2)), "limits", check_int)
        [1, 2]
        >>> check_items([1, "a"], "limits", check_int)
        Traceback (most recent call last):
        ...
        contextwindow.errors.ArgumentTypeError: limits[1]: expected an int, got 'a'
    """
    if isinstance(value, (str, bytes, bytearray, Mapping)) or not isinstance(
        value, Iterable
    ):
        raise _type_error(name, value, takes)  # pyright: ignore[reportUnknownArgumentType]  # any value, shown
    given = cast("Iterable[object]", value)
    try:
        items = list(given)
    except (TypeError, ValueError) as exc:  # a generator that fails while read
        raise _value_error(name, given, takes, f"reading it raised {exc!r}") from exc
    if check is None:
        return cast("list[T]", items)  # items of any type: the caller's T
    return [check(item, f"{name}[{k}]") for k, item in enumerate(items)]


def check_messages(
    value: object, name: str = "messages", *, start: int = 0
) -> Sequence[Message]:
    """``value`` as a sequence of ``Message`` objects, or an error naming it.

    A ``list`` or a ``tuple`` is returned as it is (its identity kept: the
    caches key on it), any other iterable (a generator) is read into a
    tuple; a ``str``, ``bytes`` or mapping is refused (``ArgumentTypeError``),
    and so is an item that is not a ``Message`` (``InvalidMessageError``
    naming ``name[i]``: neutral messages only, no provider's shape). One
    class test per item, at C speed; ``start``: the items before it are
    known to be messages (a caller that found them before), not tested.

    Example:
        >>> from contextwindow.messages import Message
        >>> read = check_messages(m for m in [Message.user("hi")])
        >>> type(read).__name__, read[0].text
        ('tuple', 'hi')
        >>> check_messages([Message.user("hi"), "hello"], "history")
        Traceback (most recent call last):
        ...
        contextwindow.errors.InvalidMessageError: history[1]: expected a Message, got str
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    from contextwindow.errors import InvalidMessageError
    from contextwindow.messages import Message

    seq: Sequence[object]
    if type(value) is list or type(value) is tuple:
        seq = cast("Sequence[object]", value)
    else:
        takes = "an iterable of Message objects"
        seq = tuple(check_items(value, name, takes=takes))
    tail = seq[start:] if start else seq
    # ``map(type, ...)`` and ``count`` run in C: a 10,000-message list costs
    # about 0.1 ms; a subclass of Message is found by the slow loop below.
    if list(map(type, tail)).count(Message) != len(tail):
        for i, item in enumerate(tail, start):
            if not isinstance(item, Message):
                raise InvalidMessageError(
                    f"{name}[{i}]", f"expected a Message, got {type(item).__name__}"
                )
    return cast("Sequence[Message]", seq)


def check_strs(value: object, name: str, *, lone: bool = True) -> tuple[str, ...]:
    """Strings from any iterable; a lone ``str`` is one string when ``lone``.

    Example:
        >>> check_strs("<keep>", "protected"), check_strs(["a", "b"], "protected")
        (('<keep>',), ('a', 'b'))
    """
    if lone and isinstance(value, str):
        return (value,)
    takes = "a str or an iterable of str" if lone else "an iterable of str"
    return tuple(check_items(value, name, check_str, takes=takes))


# -- tokenizers and strategies -------------------------------------------------------

_TOKENIZER = "a Tokenizer, a model name (gpt-4o) or an encoding (o200k_base)"

_NOT_TOKENIZERS = (int, float, complex, bytes, bytearray, list, tuple, set, frozenset)


def as_tokenizer(value: object, name: str = "tokenizer") -> Tokenizer:
    """The tokenizer ``value`` names or is, checked before anything is counted.

    A ``str`` is an encoding (``o200k_base``, ``cl100k_base``), ``heuristic``,
    or a model name the registry resolves (its tokenizer, as ``get_tokenizer``
    gives). A ``TokenCounter`` gives its tokenizer. Any other object needs a
    callable ``count`` returning an ``int`` (tried once on ``""``), a ``str``
    ``name`` and a ``bool`` ``exact``. Nothing else passes: a ``str`` has a
    ``count`` method, but it is not a tokenizer.

    Example:
        >>> as_tokenizer("gpt-4o").name, as_tokenizer("cl100k_base").exact
        ('o200k_base', True)
        >>> as_tokenizer("gtp-4o")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        contextwindow.errors.ArgumentValueError: tokenizer: expected a Tokenizer..., got 'gtp-4o' (not a known model or encoding; did you mean gpt-4o, ...?)
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    from contextwindow.tokens.approx import ApproximateTokenizer
    from contextwindow.tokens.bpe import BPETokenizer
    from contextwindow.tokens.counting import TokenCounter
    from contextwindow.tokens.heuristic import HeuristicTokenizer

    # The library's tokenizers are known good; a user's is tried once.
    if isinstance(value, (BPETokenizer, HeuristicTokenizer, ApproximateTokenizer)):
        return value
    if isinstance(value, str):
        return _named_tokenizer(value, name)
    if isinstance(value, TokenCounter):
        return value.tokenizer
    if value is None or isinstance(value, (*_NOT_TOKENIZERS, Mapping)):
        raise _type_error(name, cast("object", value), _TOKENIZER)
    count = getattr(value, "count", None)
    if not callable(count):
        raise _type_error(name, value, _TOKENIZER, "it has no count method")
    if not type(value).__module__.startswith("contextwindow."):  # the fakes are good
        _try_count(count, value, name)
    label = getattr(value, "name", None)
    exact = getattr(value, "exact", None)
    if not isinstance(label, str) or not isinstance(exact, bool):
        raise _type_error(
            name, value, _TOKENIZER, "it needs a str name and a bool exact as well"
        )
    return value  # type: ignore[return-value]  # checked above: the protocol's members


def _try_count(count: Callable[[str], object], value: object, name: str) -> None:
    try:
        n = count("")
    except Exception as exc:
        raise _type_error(
            name, value, _TOKENIZER, f"its count('') raised {type(exc).__name__}"
        ) from exc
    if isinstance(n, bool) or not isinstance(n, int):
        raise _type_error(
            name, value, _TOKENIZER, f"its count('') returned {shown(n)}, not an int"
        )


def _named_tokenizer(spec: str, name: str) -> Tokenizer:
    from contextwindow.models import get_tokenizer, registry
    from contextwindow.tokens.bpe import ENCODINGS, BPETokenizer
    from contextwindow.tokens.heuristic import HeuristicTokenizer

    key = spec.strip()
    if key in ENCODINGS:
        return BPETokenizer(key)
    if key == "heuristic":
        return HeuristicTokenizer()
    resolved = registry.resolve(key) if key else None
    if resolved is None:
        close = registry.suggest(key) if key else ()
        hint = "not a known model or encoding"
        if close:
            hint += f"; did you mean {', '.join(close)}?"
        raise _value_error(name, spec, _TOKENIZER, hint)
    return get_tokenizer(key)


_STRATEGY = "a Strategy (called with messages and a budget) or a spec string"


def as_strategy(value: object, name: str = "strategy") -> Strategy:
    """The strategy ``value`` is, or the one a spec string names (``parse_strategy``).

    A callable must take ``(messages, budget)``: a strategy class (not an
    instance of it), a function of another arity (when its signature can be
    read) or an ``async def`` one is refused here, not on the first call
    that needs a cut: a strategy runs on a worker thread in
    ``AsyncContextManager`` too, where nothing awaits it. The library's own
    strategies are known good.

    Example:
        >>> as_strategy("sliding-window(4)")
        SlidingWindow(keep_last=4)
        >>> as_strategy(5)
        Traceback (most recent call last):
        ...
        contextwindow.errors.ArgumentTypeError: strategy: expected a Strategy (called with messages and a budget) or a spec string, got 5
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    from contextwindow.errors import ContextWindowError
    from contextwindow.strategies.names import parse_strategy

    if isinstance(value, str):
        try:
            return parse_strategy(value)
        except ContextWindowError as exc:
            raise _value_error(name, value, _STRATEGY, str(exc)) from None
    if not callable(value):
        raise _type_error(name, value, _STRATEGY)
    _refuse_class(value, name, _STRATEGY)  # a spec string names an instance
    if not type(value).__module__.startswith("contextwindow."):
        _refuse_async(value, name)
        _check_arity(value, name)
    return cast("Strategy", value)  # a callable: the protocol's one member


def _refuse_async(value: Callable[..., object], name: str) -> None:
    """Refuse an ``async def`` strategy (or one whose ``__call__`` is).

    A strategy is called, never awaited (``AsyncContextManager`` runs it on a
    worker thread): the coroutine it returned would be the error on the
    first compaction, with a ``RuntimeWarning`` that it was never awaited.
    """
    call = type(value).__call__  # an instance's own: the class's method
    if inspect.iscoroutinefunction(value) or inspect.iscoroutinefunction(call):
        hint = "an async def; a strategy is called, never awaited: pass a sync one"
        raise _type_error(name, value, _STRATEGY, hint)


def _refuse_class(value: object, name: str, takes: str) -> None:
    """Refuse a class given for an instance of it (a slip its first use would show)."""
    if isinstance(value, type):
        hint = f"a class; pass an instance, e.g. {value.__name__}()"
        raise _type_error(name, value, takes, hint)


def _check_arity(value: Callable[..., object], name: str) -> None:
    """Refuse a callable that cannot be called with ``(messages, budget)``."""
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):  # no signature to read (a builtin): trusted
        return
    try:
        signature.bind(None, None)
    except TypeError:
        hint = f"it cannot take (messages, budget): its signature is {signature}"
        raise _type_error(name, value, _STRATEGY, hint) from None


_SUMMARIZER = "a Summarizer (with a summarize method)"


def check_summarizer(value: T, name: str = "summarizer") -> T:
    """``value`` if it is a summarizer (``None`` too: the caller's default).

    Anything with a callable ``summarize``, but not a summarizer class (its
    ``summarize`` is an unbound function, which fails on the first call
    that needs a summary), as ``as_strategy`` refuses a strategy class; nor
    one whose ``summarize`` is ``async def`` (the ``Summarize`` strategy
    calls it, on a worker thread in ``AsyncContextManager``, and awaits
    nothing; an async summarizer gives ``summarize`` as well as
    ``asummarize``).

    Example:
        >>> from contextwindow.summarizers import ExtractiveSummarizer
        >>> try:
        ...     check_summarizer(ExtractiveSummarizer)
        ... except ArgumentTypeError as exc:
        ...     print(exc.argument, str(exc).endswith("e.g. ExtractiveSummarizer())"))
        summarizer True
    """
    if value is None:
        return value
    _refuse_class(value, name, _SUMMARIZER)
    summarize = getattr(value, "summarize", None)
    if not callable(summarize):
        raise _type_error(name, value, _SUMMARIZER)
    if inspect.iscoroutinefunction(summarize):
        hint = "its summarize is an async def, which strategies call, never await"
        raise _type_error(name, value, _SUMMARIZER, hint)
    return value


def as_model(
    value: object, name: str = "model", *, window_given: bool = False
) -> ModelInfo | None:
    """The ``ModelInfo`` a model argument names (``None`` stays ``None``).

    An unknown name gets the registry's default with an
    ``UnknownModelWarning``, as ``get_model`` does (``window_given``: the
    caller gave the window, and the warning says that one is used); a value
    that is not a name is refused.

    Example:
        >>> as_model("gpt-4o").context_window
        128000
        >>> as_model(4)
        Traceback (most recent call last):
        ...
        contextwindow.errors.ArgumentTypeError: model: expected a model name or a ModelInfo, got 4
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    from contextwindow.models import ModelInfo, get_model

    if value is None or isinstance(value, ModelInfo):
        return value
    if not isinstance(value, str) or not value.strip():
        raise (_value_error if isinstance(value, str) else _type_error)(
            name, value, "a model name or a ModelInfo"
        )
    return get_model(value, window_given=window_given)
