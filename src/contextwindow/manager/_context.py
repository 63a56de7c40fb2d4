"""What a threshold handler gets: usage figures, and tools that change the view.

Contract: every tool changes the manager's view, never its history, and each
change is recorded (``Prepared.compactions`` of the ``prepare`` call that ran
the handler, and a ``compaction`` event). The figures are live: after a tool
has run, ``tokens_used`` and ``usage_percentage`` say what is left.
``compress_tool_results``, ``prune_old_messages`` and
``summarize_old_exchanges`` mark compression as applied, so the manager's
automatic compaction does not compact again in the same ``prepare`` (unless
the request would not fit the window); ``replace_messages`` and
``transform_messages`` do not, since the manager cannot know what they did:
call ``mark_compression_applied`` when they compress.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from contextwindow._args import check_callable, check_int
from contextwindow.manager._core import Core
from contextwindow.manager._types import Compaction
from contextwindow.messages import Message, units
from contextwindow.strategies.base import Report, Strategy
from contextwindow.strategies.drop import MaxMessages
from contextwindow.strategies.tool_results import TruncateToolResults

__all__ = ["AsyncThresholdContext", "ThresholdContext"]


class _Context:
    """The figures and tools both kinds of context share."""

    __slots__ = ("_done", "_m", "_threshold")

    def __init__(self, manager: Core, threshold: float, done: list[Compaction]) -> None:
        self._m = manager
        self._threshold = threshold
        self._done = done

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(threshold={self._threshold}, "
            f"usage={self.usage_percentage:.1f}%, messages={self.message_count})"
        )

    # -- figures ---------------------------------------------------------------

    @property
    def usage_percentage(self) -> float:
        """Tokens of the view as a percentage of ``budget`` (0 to 100, or more).

        The budget is what a request may take (the window less the reserve),
        so a handler at 90 fires at 90 % of what may be sent.

        Example:
            >>> from contextwindow.testing import call_handler
            >>> call_handler(lambda ctx: ctx.usage_percentage)
            69.0
        """
        budget = self.budget
        return 100.0 * self.tokens_used / budget if budget else 100.0

    @property
    def tokens_used(self) -> int:
        """Tokens of a request holding the view now.

        Example:
            >>> from contextwindow.testing import call_handler
            >>> call_handler(lambda ctx: ctx.tokens_used)
            690
        """
        return self._m.token_estimate()

    @property
    def tokens_remaining(self) -> int:
        """Tokens left in the budget (negative when over it).

        Example:
            >>> from contextwindow.testing import call_handler
            >>> call_handler(lambda ctx: ctx.tokens_remaining)
            310
        """
        return self.budget - self.tokens_used

    @property
    def budget(self) -> int:
        """What this request may take: the window less the reserve.

        Example:
            >>> from contextwindow.testing import call_handler
            >>> call_handler(lambda ctx: ctx.budget)  # no model: no reserve
            1000
        """
        return self._m._limit()  # pyright: ignore[reportPrivateUsage]  # this prepare's, with its own reserve

    @property
    def context_limit(self) -> int:
        """The window.

        Example:
            >>> from contextwindow.testing import call_handler
            >>> call_handler(lambda ctx: ctx.context_limit)
            1000
        """
        return self._m.context_limit

    @property
    def threshold(self) -> float:
        """The threshold whose crossing called this handler.

        Example:
            >>> from contextwindow.testing import call_handler
            >>> call_handler(lambda ctx: ctx.threshold, threshold=50)
            50
        """
        return self._threshold

    @property
    def agent_name(self) -> str | None:
        """The manager's agent name (``None`` when it has none).

        Example:
            >>> from contextwindow.testing import call_handler
            >>> call_handler(lambda ctx: ctx.agent_name) is None
            True
        """
        return self._m.agent_name

    @property
    def messages(self) -> list[Message]:
        """A copy of the view, to read or to edit and pass to ``replace_messages``.

        Example:
            >>> from contextwindow.testing import call_handler
            >>> call_handler(lambda ctx: [m.role for m in ctx.messages][:4])
            ['system', 'user', 'assistant', 'tool']
        """
        return list(self._m.messages)

    @property
    def message_count(self) -> int:
        """Messages in the view.

        Example:
            >>> from contextwindow.testing import call_handler
            >>> call_handler(lambda ctx: ctx.message_count)
            19
        """
        return len(self._m.messages)

    @property
    def compression_applied(self) -> bool:
        """Whether a handler has compressed the view during this ``prepare``.

        Example:
            >>> from contextwindow.testing import call_handler
            >>> call_handler(lambda ctx: ctx.compression_applied)
            False
        """
        return self._m._applied  # pyright: ignore[reportPrivateUsage]  # the context is the manager's own helper

    # -- tools -----------------------------------------------------------------

    def replace_messages(self, messages: Iterable[Message]) -> None:
        """Make ``messages`` the view (the history is kept as it is).

        The next request is checked as always: a broken tool exchange is
        repaired, and the change is reported message by message, each
        message of the view once (matched by id): one left out is
        ``dropped``, one changed is ``rewritten``, one new is ``added``, and
        so is a second copy of one given twice; one moved out of the order
        of the others is ``rewritten``, its ``what`` ending in ``moved``. So
        the report adds up: tokens before, less what its changes save, are
        the tokens after.

        Raises:
            InvalidMessageError: An item is not a ``Message``.

        Example:
            >>> from contextwindow.testing import call_handler
            >>> def keep_ends(ctx):
            ...     ctx.replace_messages(ctx.messages[:2] + ctx.messages[-1:])
            ...     return [m.text for m in ctx.messages]
            >>> call_handler(keep_ends)
            ['You are a coding agent.', 'Fix the bug.', 'Where is it?']
        """
        reason = f"replace_messages at {self._threshold:g}%"
        self._record(self._m._replace(messages, reason))  # pyright: ignore[reportPrivateUsage]  # the manager's own helper

    def transform_messages(
        self, transform: Callable[[list[Message]], Iterable[Message]]
    ) -> None:
        """Replace the view with ``transform(copy_of_view)``.

        Raises:
            ArgumentTypeError: ``transform`` is not callable.

        Example:
            >>> from contextwindow.testing import call_handler
            >>> def no_tools(ctx):  # calls left without results are repaired away
            ...     ctx.transform_messages(lambda ms: [m for m in ms if m.text])
            ...     return [m.role for m in ctx.messages]
            >>> call_handler(no_tools)
            ['system', 'user', 'user']
        """
        check_callable(transform, "transform", "a callable taking a list of messages")
        self.replace_messages(transform(self.messages))

    def compress_tool_results(
        self, keep_recent: int = 10, truncate_to: int = 200
    ) -> int:
        """Cut all but the ``keep_recent`` latest tool results to ``truncate_to``.

        ``truncate_to`` is in tokens; head and tail are kept with a marker of the cut
        (``TruncateToolResults``); calls and results stay paired.

        Returns:
            How many messages were changed.

        Example:
            >>> from contextwindow.testing import call_handler
            >>> def compress(ctx):
            ...     return ctx.compress_tool_results(2, 10), ctx.tokens_used
            >>> call_handler(compress)
            (6, 444)
        """
        # Checked here, so an error names the arguments the handler passed.
        check_int(keep_recent, "keep_recent", low=0)
        check_int(truncate_to, "truncate_to", low=1)
        strategy = TruncateToolResults(keep_recent=keep_recent, max_tokens=truncate_to)
        why = f"compress_tool_results at {self._threshold:g}%"
        done = self._run(strategy, why)
        return len(done.report.changes) if done.applied else 0

    def prune_old_messages(self, keep_recent: int = 20) -> int:
        """Keep the system prompt, pinned messages and the ``keep_recent`` latest.

        Whole units go, oldest first (``MaxMessages``), so a tool exchange
        is never split: the view may keep a few more than ``keep_recent``.

        Returns:
            How many messages were removed.

        Example:
            >>> from contextwindow.testing import call_handler
            >>> call_handler(lambda ctx: (ctx.prune_old_messages(5), ctx.message_count))
            (13, 6)
        """
        check_int(keep_recent, "keep_recent", low=0)  # MaxMessages calls it limit
        before = self.message_count
        why = f"prune_old_messages at {self._threshold:g}%"
        self._run(MaxMessages(keep_recent), why)
        return before - self.message_count

    def log_action(self, action: str, **details: Any) -> None:
        """Emit an ``action`` event (and a log record) with the usage figures.

        Example:
            >>> from contextwindow import ContextManager, Message
            >>> m = ContextManager(token_limit=100, strategy=None)
            >>> seen = []
            >>> _ = m.subscribe(seen.append)
            >>> m.on_threshold(50)(lambda ctx: ctx.log_action("noted", reason="test"))
            <function <lambda> at ...>
            >>> m.push(Message.user("word " * 60))
            >>> _ = m.prepare()
            >>> [e.data["reason"] for e in seen if e.kind == "action"]
            ['test']
        """
        self._m._emit(  # pyright: ignore[reportPrivateUsage]  # the manager's own helper
            "action",
            action=action,
            threshold=self._threshold,
            usage_percentage=round(self.usage_percentage, 2),
            **details,
        )

    def mark_compression_applied(self) -> None:
        """Tell the manager this handler compressed the view (no second pass).

        Example:
            >>> from contextwindow.testing import call_handler
            >>> def mark(ctx):
            ...     ctx.mark_compression_applied()
            ...     return ctx.compression_applied
            >>> call_handler(mark)
            True
        """
        self._m._applied = True  # pyright: ignore[reportPrivateUsage]  # the manager's own helper

    # -- shared ----------------------------------------------------------------

    def _run(self, strategy: Strategy, reason: str) -> Compaction:
        done = self._m._apply(strategy, 0, "handler", reason)  # pyright: ignore[reportPrivateUsage]  # the manager's own helper
        self._record(done)
        self.mark_compression_applied()
        return done

    def _record(self, done: Compaction) -> None:
        self._done.append(done)

    def _summarize(self, older_than: int) -> Strategy | None:
        """The strategy to run, or ``None`` when this turn's cap is reached."""
        check_int(older_than, "older_than", low=0)
        m = self._m
        # Summaries count against the turn's cap, as compactions do: a loop of
        # handlers summarising again and again is what the cap is there to stop.
        if m._turn_compactions >= m.policy.max_per_turn:  # pyright: ignore[reportPrivateUsage]  # the manager's own state
            why = (
                f"summarize_old_exchanges at {self._threshold:g}%: "
                f"{m.policy.max_per_turn} compactions this turn already"
            )
            report = Report(self.tokens_used, self.tokens_used, 0)
            self._record(Compaction("handler", False, report, 0, why))
            m._emit("compaction_refused", trigger="handler", reason=why)  # pyright: ignore[reportPrivateUsage]  # the manager's own helper
            return None
        m._turn_compactions += 1  # pyright: ignore[reportPrivateUsage]  # the manager's own state
        keep = _units_covering(m.messages, older_than)
        return m._summarize_strategy(keep)  # pyright: ignore[reportPrivateUsage]  # the manager's own helper

    def _summarized(self, done: Compaction) -> int:
        self._record(done)
        self.mark_compression_applied()
        if not done.applied:
            return 0
        # A summarized change names what it replaced, then the summary itself.
        return sum(
            len(c.ids) - 1 for c in done.report.changes if c.kind == "summarized"
        )


class ThresholdContext(_Context):
    """What a ``ContextManager`` threshold handler gets.

    Example:
        >>> from contextwindow import ContextManager, Message, ToolCall
        >>> m = ContextManager(token_limit=400, strategy=None)
        >>> @m.on_threshold(60)
        ... def shrink(ctx):
        ...     n = ctx.compress_tool_results(keep_recent=1, truncate_to=20)
        ...     ctx.log_action("compressed", messages=n)
        >>> for i in range(3):
        ...     m.push_many([Message.assistant(tool_calls=[ToolCall(f"c{i}", "read")]),
        ...                  Message.tool(f"c{i}", "data " * 100)])
        >>> m.token_estimate()  # 86% of the window: 60 and 80 are crossed
        345
        >>> prepared = m.prepare()
        >>> (prepared.thresholds, prepared.compactions[0].trigger, prepared.tokens)
        ((60,), 'handler', 218)
        >>> len(m.history)  # the history keeps every message as it was
        6
    """

    __slots__ = ()

    def summarize_old_exchanges(self, older_than: int = 10) -> int:
        """Replace all but the ``older_than`` latest messages with one summary.

        The manager's summarizer writes it (the offline extractive one by
        default); the summary keeps pointers to the originals, which
        ``ContextManager.recall`` brings back from the history.

        At most ``policy.max_per_turn`` compactions run between two user
        messages, summaries included: past that, nothing is summarised and a
        refused ``Compaction`` says so.

        Returns:
            How many messages the summary replaced (0 when refused).

        Example:
            >>> from contextwindow.testing import call_handler
            >>> def summarize(ctx):
            ...     n = ctx.summarize_old_exchanges(older_than=3)
            ...     return n, ctx.message_count, ctx.messages[1].text.splitlines()[0]
            >>> call_handler(summarize)  # doctest: +ELLIPSIS
            (15, 5, '[Summary of 15 earlier messages; recall ...]')
        """
        strategy = self._summarize(older_than)
        if strategy is None:
            return 0
        reason = f"summarize_old_exchanges at {self._threshold:g}%"
        return self._summarized(self._m._apply(strategy, 0, "handler", reason))  # pyright: ignore[reportPrivateUsage]  # the manager's own helper


class AsyncThresholdContext(_Context):
    """What an ``AsyncContextManager`` threshold handler gets.

    The same figures and tools as ``ThresholdContext``; only
    ``summarize_old_exchanges``, which may wait on an LLM, is a coroutine.
    """

    __slots__ = ()

    async def summarize_old_exchanges(self, older_than: int = 10) -> int:
        """Replace all but the ``older_than`` latest messages with one summary.

        As ``ThresholdContext.summarize_old_exchanges``; the summarizer runs
        on a worker thread, so the event loop is not blocked.

        Returns:
            How many messages the summary replaced.
        """
        strategy = self._summarize(older_than)
        if strategy is None:
            return 0
        reason = f"summarize_old_exchanges at {self._threshold:g}%"
        m = self._m
        view = list(m.messages)
        fitted = await asyncio.to_thread(strategy, view, m._budget(0))  # pyright: ignore[reportPrivateUsage]  # the manager's own helper
        return self._summarized(m._keep(fitted, "handler", reason, view))  # pyright: ignore[reportPrivateUsage]  # the manager's own helper


def _units_covering(view: Sequence[Message], count: int) -> int:
    """How many trailing units hold the ``count`` latest non-system messages."""
    if count == 0:
        return 0
    seen = 0
    n = 0
    for u in reversed(units(view)):
        if u.kind == "system":
            continue
        n += 1
        seen += u.stop - u.start
        if seen >= count:
            break
    return n
