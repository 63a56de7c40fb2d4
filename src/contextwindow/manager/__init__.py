r"""``ContextManager``: a live conversation, its full history and a compacted view.

Contract:

- ``push`` appends to the history (every message, forever) and to the view
  (what is sent). ``prepare`` returns the next request in the provider's
  shape; it never exceeds the window less the reserve, and it is always
  valid for the provider. Compaction, threshold handlers and the
  ``max_messages`` cap change the view, never the history.
- Threshold handlers (``@manager.on_threshold(80)``; 60, 80 and 90 are
  watched by default) run once when usage crosses their threshold upward,
  in increasing order and before automatic compaction, and are re-armed
  when usage falls below it again, whatever lowered it. A handler (or a
  subscriber) may call the manager's other methods, sync or awaited, which
  run inside the ``prepare`` under way (it holds the lock; a task an async
  handler leaves running waits for it instead); calling ``prepare`` itself
  raises ``ContextWindowError``, never recurses nor deadlocks.
- Automatic compaction follows the ``CompactionPolicy``: from ``at`` percent
  of the window down to ``to`` percent, never for less than ``min_saving``,
  at most ``max_per_turn`` times between user messages, and always when the
  request would not fit otherwise. Between compactions the view only grows,
  so its prefix (and a provider's prompt cache over it) is stable; each
  ``Compaction`` says how many leading tokens it kept byte-identical.
- Every action emits an ``Event`` to ``logging`` (logger
  ``contextwindow.manager``) and to ``subscribe``-d callbacks.
- ``AsyncContextManager`` has the same methods; those that may wait are
  coroutines, handlers may be coroutines, and strategies run on a worker
  thread so a summarizer calling an LLM does not block the event loop.

Example:
    >>> from contextwindow import ContextManager, Message, ToolCall
    >>> manager = ContextManager("gpt-4o", token_limit=2_000)
    >>> manager.push(Message.system("You are a coding agent."))
    >>> manager.push(Message.user("Find the failing test."))
    >>> for i in range(12):
    ...     manager.push_many([
    ...         Message.assistant(tool_calls=[ToolCall(f"c{i}", "read_file")]),
    ...         Message.tool(f"c{i}", f"file {i}: " + "code line\\n" * 40)])
    ...     request = manager.prepare()
    >>> (request.tokens <= 2_000, len(manager.history), len(manager.messages))
    (True, 26, 19)
    >>> [c.trigger for c in request.compactions] or "no compaction on this turn"
    'no compaction on this turn'
    >>> request.messages[0]["role"], request.prefix_tokens > 0
    ('system', True)
"""

from __future__ import annotations

import asyncio
import inspect
import sys
import threading
from collections.abc import AsyncGenerator, Generator, Iterable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from contextwindow.errors import ContextWindowError
from contextwindow.manager._context import AsyncThresholdContext, ThresholdContext
from contextwindow.manager._core import Call, Core, Step
from contextwindow.manager._state import DEFAULT_THRESHOLDS
from contextwindow.manager._types import (
    Compaction,
    CompactionPolicy,
    Event,
    Prepared,
    Trigger,
)
from contextwindow.messages import Message
from contextwindow.strategies.base import Strategy

__all__ = [
    "DEFAULT_THRESHOLDS",
    "AsyncContextManager",
    "AsyncThresholdContext",
    "Compaction",
    "CompactionPolicy",
    "ContextManager",
    "Event",
    "Prepared",
    "ThresholdContext",
    "Trigger",
]

T = TypeVar("T")

_ARGS = """
    Args:
        model: The model (a name or a ``ModelInfo``): its window, its
            tokenizer and its provider are the defaults.
        token_limit: The window in tokens (default: the model's).
        strategy: How to compact (default: ``DEFAULT_STRATEGY``, the one
            ``fit`` uses), or a spec such as ``"dedupe,drop-oldest"``
            (``parse_strategy``); ``None`` never compacts, and a request over
            the window then raises ``BudgetError``.
        tokenizer: Counts text (default: the model's): a tokenizer, or a
            model or encoding name (``"gpt-4o"``, ``"o200k_base"``), or a
            ``TokenCounter``, which the manager then counts with (its
            provider is the manager's): what it counted before is not
            counted again, and what the manager counts is there for the
            counter's other users (one thread at a time).
        reserve: Tokens kept free in the window for the reply (default: the
            model's output limit, at most a quarter of the window; 0 without
            a model). A request takes at most ``token_limit - reserve``
            (``budget``), and thresholds and the policy's watermarks are
            percentages of that, so a 90 % handler fires whatever the
            reserve.
        max_messages: A hard cap on the view's non-system messages, applied
            after compaction; whole units go, oldest first.
        provider: ``openai``, ``anthropic`` or ``responses`` (default: the
            model's).
        tools: Tool schemas sent with every request (they take tokens).
        thresholds: Usage percentages watched (default 60, 80 and 90);
            ``on_threshold`` adds more.
        policy: When and how far to compact on its own (``CompactionPolicy``).
        summarizer: What ``summarize_old_exchanges`` summarizes with (default:
            the offline extractive summarizer, which reads the originals of
            what earlier compactions cut, from the history; one given here
            reads the conversation as it stands).
        agent_name: The agent served, in events and handler contexts.
        system: A system prompt to start a new conversation with.
        store: Where the conversation is kept: a ``Store``, or a URL such as
            ``sqlite:///chats.db#run-1`` (see ``contextwindow.store``). A
            conversation already there is resumed as it was left.
        conversation_id: The stored conversation (default: the URL's
            ``#id``, else a new id, in ``conversation_id``).
        offer_recall: Offer the model the ``context_recall`` tool (its
            schema joins ``tools``; ``recall_schema`` gives it in the
            provider's shape): ``answer_recall`` answers a call of it from
            the full history, so what compaction cut can be had back.
        calibration: What usage reports taught of an approximate
            tokenizer's error (default: a new ``Calibration``; pass one to
            share it between managers of a model). ``observe_usage`` feeds
            it, and with an approximate tokenizer the budget is in the
            provider's tokens, not in the ones counted here.

    Raises:
        ArgumentError: An argument of the wrong type or out of range (a
            limit, reserve or cap out of range, an unknown provider, a
            threshold outside (0, 100], a strategy that is not callable nor a
            spec, a tokenizer that is not one), naming it; an unknown keyword
            (with the names close to it) or a second positional argument is
            an ``ArgumentTypeError`` naming the class.
        ContextWindowError: Neither ``model`` nor ``token_limit``, or a
            ``conversation_id`` without a store.
        StoreError: The store cannot be opened or read.
"""


class ContextManager(Core):
    """A conversation kept within its model's window: full history, compacted view.

    Warning:
        One manager serves one conversation; its methods hold a lock, so
        threads may share it, but a handler must not wait on another thread
        that uses the same manager.

    Example:
        >>> from contextwindow import ContextManager, Message
        >>> m = ContextManager("claude-sonnet-4-5", system="Be terse.")
        >>> m.push(Message.user("hi"))
        >>> request = m.prepare()
        >>> request.system, request.messages
        ('Be terse.', [{'role': 'user', 'content': 'hi'}])
    """

    __doc__ = (__doc__ or "") + _ARGS

    # ``__init__`` is ``State.__init__``: one signature, for help() and IDEs.
    def _setup(self) -> None:
        self._lock = threading.RLock()
        self._held = self._lock  # the methods the classes share hold it too

    def push(self, message: Message | Any) -> None:
        """Append one message to the history and the view.

        ``message`` is a ``Message`` or one message as the user holds it (an
        OpenAI, Anthropic or Responses dict, or an SDK object); a provider
        message that reads as several (an Anthropic user turn with tool
        results and text) appends them all. A Responses item continuing the
        last message's group (a call after its reasoning, an output after
        another) joins that message, as ``from_responses`` reads the items
        in one list: pushed one at a time or together, they make one
        conversation (the store's log keeps each push as it came).

        Raises:
            InvalidMessageError: ``message`` is no message, or is malformed.

        Example:
            >>> from contextwindow import ContextManager, Message
            >>> m = ContextManager(token_limit=1000)
            >>> m.push(Message.user("hi"))
            >>> len(m.history)
            1
        """
        with self._lock:
            self._append(message, "message")

    def push_many(self, messages: Iterable[Any]) -> None:
        """Append messages, in order (all or none when one is not a ``Message``).

        Example:
            >>> from contextwindow import ContextManager, Message
            >>> m = ContextManager(token_limit=1000)
            >>> m.push_many([Message.user("hi"), Message.assistant("hello")])
            >>> [x.role for x in m.messages]
            ['user', 'assistant']
        """
        with self._lock:
            self._append(messages)

    def set_messages(
        self, messages: Iterable[Any], *, history: Iterable[Any] | None = None
    ) -> None:
        """Restore a conversation: ``messages`` become the view, and the history.

        Pass ``history`` to restore a full log behind a compacted view.
        Thresholds are re-armed.

        Example:
            >>> from contextwindow import ContextManager, Message
            >>> m = ContextManager(token_limit=1000)
            >>> log = [Message.user("a"), Message.assistant("b"), Message.user("c")]
            >>> m.set_messages(log[2:], history=log)
            >>> (len(m.messages), len(m.history))
            (1, 3)
        """
        with self._lock:
            self._restore(messages, history)

    def clear(self) -> None:
        """Forget every message, history included (configuration is kept).

        Example:
            >>> from contextwindow import ContextManager, Message
            >>> m = ContextManager(token_limit=1000, system="Be terse.")
            >>> m.clear()
            >>> (m.messages, m.history)
            ((), ())
        """
        with self._lock:
            self._clear()

    def update_system(self, text: str) -> None:
        """Replace the system prompt (in the view and the history), or add one first.

        Example:
            >>> from contextwindow import ContextManager, Message
            >>> m = ContextManager(token_limit=1000)
            >>> m.push(Message.user("hi"))
            >>> m.update_system("Answer in French.")
            >>> [x.text for x in m.messages]
            ['Answer in French.', 'hi']
        """
        with self._lock:
            self._update_system(text)

    def prepare(self, query: str | None = None, reserve: int | None = None) -> Prepared:
        """The next request: handlers run, the view is compacted if needed.

        Args:
            query: What the request is about, for strategies that keep what
                is relevant (default: the final message).
            reserve: Tokens to keep free for the reply this time (default:
                the manager's).

        Returns:
            The request in the provider's shape, its tokens, and what changed.

        Raises:
            BudgetError: The request cannot fit: pinned content alone exceeds
                the window less the reserve, or no strategy is set.
            ContextWindowError: A handler is a coroutine function (use
                ``AsyncContextManager``), or it called ``prepare`` (a
                handler changes the view with its ``ctx``, or calls
                ``force_compress``; ``on_threshold`` says what it may call),
                or the handlers left a view that had a turn with none (no
                message but the system prompt: nothing a provider takes).
            ArgumentError: ``query`` is not a ``str`` or ``None``, or
                ``reserve`` is out of range (checked at once, whether or not
                anything needs cutting).

        Example:
            >>> from contextwindow import ContextManager, Message
            >>> m = ContextManager("gpt-4o", token_limit=100)
            >>> m.push(Message.user("word " * 70))
            >>> m.push(Message.assistant("ok"))
            >>> m.push(Message.user("and now?"))
            >>> p = m.prepare()
            >>> p.budget  # the window less a quarter of it kept for the reply
            75
            >>> (p.tokens <= p.budget, [c.trigger for c in p.compactions])
            (True, ['limit'])
            >>> [x.text for x in p.conversation]
            ['ok', 'and now?']
        """
        with self._lock, self._preparing():
            return _run(self._prepare_steps(query, reserve))

    def force_compress(
        self, fallback_window: int = 20, *, target: int | None = None
    ) -> Compaction:
        """Compact now, whatever the usage (echo_state's ``force_compress``).

        Args:
            fallback_window: With no strategy set, ``SlidingWindow`` keeps this
                many units.
            target: The budget the strategy works to (default: the policy's
                ``to`` watermark). Strategies that stop once the budget is met
                do nothing when the view is already under it; ``0`` applies
                them fully.

        Returns:
            What changed (``applied`` is ``False`` when nothing did).

        Raises:
            ArgumentError: ``fallback_window`` or ``target`` is not an int
                >= 0 (checked whether or not a strategy is set).

        Example:
            >>> from contextwindow import ContextManager, Message
            >>> m = ContextManager(token_limit=1000, strategy=None)
            >>> m.push_many([Message.user(str(i)) for i in range(5)])
            >>> m.force_compress(2).applied  # no strategy: SlidingWindow(2)
            True
            >>> [x.text for x in m.messages]
            ['3', '4']
        """
        with self._lock:
            return _run(
                self._force_steps(self._forced_strategy(fallback_window), target)
            )

    def force_compress_with(
        self, strategy: Strategy | str, *, target: int | None = None
    ) -> Compaction:
        """Compact now with ``strategy``, leaving the manager's own strategy as it is.

        Args:
            strategy: Any strategy, e.g. ``SlidingWindow(10)``, or a spec
                such as ``"dedupe,drop-oldest"`` (``parse_strategy``), as
                the constructor and ``set_strategy`` take.
            target: As for ``force_compress``.

        Raises:
            ArgumentError: ``strategy`` is no strategy nor a spec (a class
                instead of an instance, a function that cannot take
                ``(messages, budget)``), or ``target`` is not an int >= 0.

        Example:
            >>> from contextwindow import ContextManager, Message, SlidingWindow
            >>> m = ContextManager(token_limit=1000)
            >>> m.push_many([Message.user(str(i)) for i in range(5)])
            >>> c = m.force_compress_with(SlidingWindow(1))
            >>> (c.applied, c.trigger, [x.text for x in m.messages], m.has_strategy)
            (True, 'forced', ['4'], True)
        """
        with self._lock:
            return _run(self._force_steps(strategy, target))

    def _context(self, threshold: float, done: list[Compaction]) -> ThresholdContext:
        return ThresholdContext(self, threshold, done)


class AsyncContextManager(Core):
    """``ContextManager`` for asyncio: the same methods, awaited where they may wait.

    ``push``, ``push_many``, ``set_messages``, ``clear``, ``update_system``,
    ``prepare``, ``force_compress`` and ``force_compress_with`` are
    coroutines; handlers may be plain functions or coroutine functions, and
    get an ``AsyncThresholdContext``. Strategies run on a worker thread.

    Warning:
        A store is written on the event loop's thread. Each write usually
        takes a millisecond or less (a remote PostgreSQL adds its round
        trip), but while another process holds SQLite's write lock a push
        waits up to the store's ``timeout`` (30 s by default), and a stalled
        PostgreSQL server up to its ``timeout`` and a second: the loop waits
        with it.

    Example:
        >>> import asyncio
        >>> from contextwindow import AsyncContextManager, Message
        >>> async def main():
        ...     m = AsyncContextManager("gpt-4o", token_limit=100)
        ...     @m.on_threshold(60)
        ...     async def note(ctx):
        ...         ctx.log_action("over 60%", tokens=ctx.tokens_used)
        ...     await m.push(Message.user("word " * 70))
        ...     await m.push(Message.assistant("ok"))
        ...     await m.push(Message.user("and now?"))
        ...     return await m.prepare()
        >>> p = asyncio.run(main())
        >>> (p.thresholds, p.tokens <= 100)
        ((60, 80, 90), True)
    """

    __doc__ = (__doc__ or "") + _ARGS

    _awaits_handlers = True

    def _setup(self) -> None:
        self._alock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self._hosting = False
        """Whether ``prepare`` is awaiting a handler now: its calls, and
        those of tasks it awaits, run inside that ``prepare``."""

    def _lock(self) -> asyncio.Lock:
        # One per event loop, made inside it (a manager may outlive a loop).
        loop = asyncio.get_running_loop()
        if self._alock is None or self._alock[0] is not loop:
            self._alock = (loop, asyncio.Lock())
        return self._alock[1]

    @asynccontextmanager
    async def _locked(self) -> AsyncGenerator[None, None]:
        """The lock, or nothing for a handler's call: its ``prepare`` holds it.

        An ``asyncio.Lock`` is not re-entrant: a handler awaiting
        ``update_system`` would wait forever for the ``prepare`` awaiting it.
        Only while the handler runs, though: a task it started and left
        running takes the lock, and waits for the ``prepare``, whose
        strategy could not run while it changed the view.
        """
        if self._hosting and self._inside():
            yield
            return
        async with self._lock():
            yield

    async def push(self, message: Message | Any) -> None:
        """Append one message to the history and the view (see ``ContextManager``).

        Example:
            >>> import asyncio
            >>> from contextwindow import AsyncContextManager, Message
            >>> m = AsyncContextManager(token_limit=1000)
            >>> asyncio.run(m.push(Message.user("hi")))
            >>> len(m.history)
            1
        """
        self._append(message, "message")

    async def push_many(self, messages: Iterable[Any]) -> None:
        """Append messages, in order (see ``ContextManager``).

        Example:
            >>> import asyncio
            >>> from contextwindow import AsyncContextManager, Message
            >>> m = AsyncContextManager(token_limit=1000)
            >>> asyncio.run(m.push_many([Message.user("a"), Message.assistant("b")]))
            >>> [x.role for x in m.messages]
            ['user', 'assistant']
        """
        self._append(messages)

    async def set_messages(
        self, messages: Iterable[Any], *, history: Iterable[Any] | None = None
    ) -> None:
        """Restore a conversation (see ``ContextManager.set_messages``).

        Example:
            >>> import asyncio
            >>> from contextwindow import AsyncContextManager, Message
            >>> m = AsyncContextManager(token_limit=1000)
            >>> log = [Message.user("a"), Message.assistant("b")]
            >>> asyncio.run(m.set_messages(log[1:], history=log))
            >>> (len(m.messages), len(m.history))
            (1, 2)
        """
        async with self._locked():
            self._restore(messages, history)

    async def clear(self) -> None:
        """Forget every message, history included (see ``ContextManager``).

        Example:
            >>> import asyncio
            >>> from contextwindow import AsyncContextManager
            >>> m = AsyncContextManager(token_limit=1000, system="Be terse.")
            >>> asyncio.run(m.clear())
            >>> m.history
            ()
        """
        async with self._locked():
            self._clear()

    async def update_system(self, text: str) -> None:
        """Replace the system prompt, or add one first (see ``ContextManager``).

        Example:
            >>> import asyncio
            >>> from contextwindow import AsyncContextManager
            >>> m = AsyncContextManager(token_limit=1000, system="old")
            >>> asyncio.run(m.update_system("new"))
            >>> m.messages[0].text
            'new'
        """
        async with self._locked():
            self._update_system(text)

    async def prepare(
        self, query: str | None = None, reserve: int | None = None
    ) -> Prepared:
        """The next request (see ``ContextManager.prepare``).

        Example:
            >>> import asyncio
            >>> from contextwindow import AsyncContextManager, Message
            >>> m = AsyncContextManager("gpt-4o")
            >>> asyncio.run(m.push(Message.user("hi")))
            >>> asyncio.run(m.prepare()).messages
            [{'role': 'user', 'content': 'hi'}]
        """
        async with self._locked():
            with self._preparing():
                return await _arun(self._prepare_steps(query, reserve), self)

    async def force_compress(
        self, fallback_window: int = 20, *, target: int | None = None
    ) -> Compaction:
        """Compact now, whatever the usage (see ``ContextManager``).

        Example:
            >>> import asyncio
            >>> from contextwindow import AsyncContextManager, Message
            >>> m = AsyncContextManager(token_limit=1000, strategy=None)
            >>> asyncio.run(m.push_many([Message.user(str(i)) for i in range(5)]))
            >>> asyncio.run(m.force_compress(2)).applied, len(m.messages)
            (True, 2)
        """
        async with self._locked():
            strategy = self._forced_strategy(fallback_window)
            return await _arun(self._force_steps(strategy, target))

    async def force_compress_with(
        self, strategy: Strategy | str, *, target: int | None = None
    ) -> Compaction:
        """Compact now with ``strategy`` (see ``ContextManager``).

        Example:
            >>> import asyncio
            >>> from contextwindow import AsyncContextManager, Message, SlidingWindow
            >>> m = AsyncContextManager(token_limit=1000)
            >>> asyncio.run(m.push_many([Message.user(str(i)) for i in range(5)]))
            >>> asyncio.run(m.force_compress_with(SlidingWindow(1))).trigger
            'forced'
        """
        async with self._locked():
            return await _arun(self._force_steps(strategy, target))

    def _context(
        self, threshold: float, done: list[Compaction]
    ) -> AsyncThresholdContext:
        return AsyncThresholdContext(self, threshold, done)


def _run(steps: Generator[Step, Any, T]) -> T:
    """Run every step here and now."""
    value: Any = None
    while True:
        try:
            step = steps.send(value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]  # the generator's return value
        if isinstance(step, Call):
            try:
                value = step.fn(step.arg)
            except Exception as exc:
                _note_handler_error(exc, step)
                raise
            if inspect.isawaitable(value):
                if inspect.iscoroutine(value):
                    value.close()  # never awaited: say so without a warning
                raise ContextWindowError(
                    f"handler {getattr(step.fn, '__name__', step.fn)!r} is a coroutine "
                    "function: use AsyncContextManager"
                )
        else:
            value = step.fn()


async def _arun(
    steps: Generator[Step, Any, T], host: AsyncContextManager | None = None
) -> T:
    """Run every step, awaiting handlers and running strategies on a thread.

    ``host`` is the manager whose ``prepare`` runs the steps: it hosts the
    calls made while a handler runs.
    """
    value: Any = None
    while True:
        try:
            step = steps.send(value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]  # the generator's return value
        if isinstance(step, Call):
            if host is not None:
                host._hosting = True  # pyright: ignore[reportPrivateUsage]  # its own runner
            try:
                value = step.fn(step.arg)
                if inspect.isawaitable(value):
                    value = await value
            except Exception as exc:
                _note_handler_error(exc, step)
                raise
            finally:
                if host is not None:
                    host._hosting = False  # pyright: ignore[reportPrivateUsage]  # its own runner
        else:
            value = await asyncio.to_thread(step.fn)


def _note_handler_error(exc: Exception, step: Call) -> None:
    """Say, on a handler's own error, what ``prepare`` did and will do.

    The error is the handler's and goes up as it is; the note (Python
    3.11+) says the handler is not counted as run, so the next ``prepare``
    runs it again, and that the view keeps what was changed before it.
    """
    if sys.version_info < (3, 11):  # pragma: no cover  # notes came in 3.11
        return
    name = getattr(step.fn, "__qualname__", type(step.fn).__name__)
    threshold = getattr(step.arg, "threshold", None)
    at = f" at {threshold:g}%" if isinstance(threshold, int | float) else ""
    exc.add_note(
        f"contextwindow: threshold handler {name}{at} raised during prepare; "
        "it is not counted as run and the next prepare runs it again; what "
        "handlers changed in the view before it is kept (compaction events)"
    )
