"""The state and the rules shared by ``ContextManager`` and ``AsyncContextManager``.

Contract:

- The history is the log of every message pushed, in order. Only
  ``set_messages`` and ``clear``, called by name, replace it; ``update_system``
  replaces the system prompt in place. Nothing else touches it.
- The view is what is sent. Pushes append to both; compactions, threshold
  handlers, repairs and the ``max_messages`` cap change the view only. Once
  compacted, the view grows by appends again, so a request shares its prefix
  with the one before until the next compaction.
- ``prepare`` repairs what no provider accepts, fires the handlers of each
  threshold that usage has crossed upward (in increasing order; once, until
  usage falls below it again), compacts when the policy or the window asks,
  applies the cap, and returns the request. A request never exceeds the
  window less the reserve: ``BudgetError`` says what could not be removed.
- Work that may wait (a handler, a strategy calling an LLM) is yielded as a
  step, so the sync and async classes share every rule and differ only in
  how they run a step.
- Preparing after appends costs the appended messages: counts, checks and the
  provider's shape of the earlier ones are reused.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from contextwindow.errors import (
    BudgetError,
    ContextWindowError,
    InvalidMessageError,
    SummarizerError,
)
from contextwindow.fitting import DEFAULT_STRATEGY, fit, provider_of
from contextwindow.manager._types import (
    Compaction,
    CompactionPolicy,
    Event,
    Prepared,
    Trigger,
)
from contextwindow.manager._wire import Writer
from contextwindow.messages import Message, Provider, ToolSpec, check_provider, units
from contextwindow.models import ModelInfo, get_model, get_tokenizer
from contextwindow.strategies.base import (
    Budget,
    Change,
    Fitted,
    Report,
    Strategy,
    finish,
    stage_name,
)
from contextwindow.strategies.drop import MaxMessages, SlidingWindow
from contextwindow.summarizers.base import Summarizer
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.counting import TokenCounter
from contextwindow.validity import ensure_valid, problems

__all__ = ["DEFAULT_THRESHOLDS", "Call", "Core", "Run", "Step"]

logger = logging.getLogger("contextwindow.manager")

DEFAULT_THRESHOLDS: tuple[float, ...] = (60, 80, 90)
"""Usage percentages whose crossing fires handlers (and a ``threshold`` event)."""

_UNSET: Any = object()
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(slots=True)
class Call:
    """A step: call ``fn(arg)`` (a handler; it may return an awaitable)."""

    fn: Callable[[Any], Any]
    arg: Any


@dataclass(slots=True)
class Run:
    """A step: call ``fn()`` (a compaction; it may block on a summarizer)."""

    fn: Callable[[], Any]


Step = Call | Run


class Core:
    """Everything a manager knows and does, but running a step."""

    def __init__(
        self,
        model: str | ModelInfo | None = None,
        *,
        token_limit: int | None = None,
        strategy: Strategy | None = _UNSET,
        tokenizer: Tokenizer | None = None,
        reserve: int = 0,
        max_messages: int | None = None,
        provider: Provider | None = None,
        tools: Iterable[ToolSpec] = (),
        thresholds: Iterable[float] = DEFAULT_THRESHOLDS,
        policy: CompactionPolicy | None = None,
        summarizer: Summarizer | None = None,
        agent_name: str | None = None,
        system: str | None = None,
    ) -> None:
        info = get_model(model) if isinstance(model, str) else model
        if token_limit is None:
            if info is None:
                raise ContextWindowError("a manager needs a model or a token_limit")
            token_limit = info.context_window
        if token_limit < 1:
            raise ContextWindowError(f"token_limit must be >= 1, got {token_limit:,}")
        self._window = token_limit
        self._check_reserve(reserve)
        self._reserve = reserve
        if max_messages is not None and max_messages < 1:
            raise ContextWindowError(f"max_messages must be >= 1, got {max_messages}")
        self._max_messages = max_messages
        if provider is not None:
            check_provider(provider)
        self._provider: Provider = provider or (
            provider_of(info) if info is not None else "openai"
        )
        self._info = info
        self._counter = TokenCounter(tokenizer or get_tokenizer(info), self._provider)
        self._tools = tuple(tools)
        self._strategy: Strategy | None = (
            DEFAULT_STRATEGY if strategy is _UNSET else _strategy_checked(strategy)
        )
        self._policy = policy or CompactionPolicy()
        self._summarizer = summarizer
        self._agent = agent_name
        self._markers: list[str] = []
        self._handlers: dict[float, list[Callable[[Any], Any]]] = {}
        for t in thresholds:
            self._handlers.setdefault(_threshold_checked(t), [])
        self._fired: set[float] = set()
        self._subscribers: list[Callable[[Event], None]] = []
        self._history: list[Message] = []
        self._view: list[Message] = []
        self._nonsystem = 0
        self._running = [0]
        """Tokens of ``_view[:i]`` (messages only), kept as the view grows."""
        self._overhead = self._counter.messages([], tools=self._tools)
        """What a request adds to its messages: reply priming and tools."""
        self._valid_upto = 0
        """``_view[:_valid_upto]`` is known valid, and a unit starts there."""
        self._stable: int | None = 0
        """Leading view messages the last request sent as they are (``None``:
        unknown, the view changed)."""
        self._turn_compactions = 0
        self._refused_at: int | None = None
        self._applied = False
        self._writer = Writer(self._provider)
        self._last_sent: tuple[Message, ...] = ()
        if system is not None:
            self._append((Message.system(system),))

    def __repr__(self) -> str:
        model = self._info.name if self._info is not None else None
        return (
            f"{type(self).__name__}(model={model!r}, token_limit={self._window}, "
            f"messages={len(self._view)}, history={len(self._history)})"
        )

    # -- what it is configured with -------------------------------------------------

    @property
    def model(self) -> ModelInfo | None:
        """The model, when one was given."""
        return self._info

    @property
    def provider(self) -> Provider:
        """The provider requests are shaped and checked for."""
        return self._provider

    @property
    def context_limit(self) -> int:
        """The window: ``token_limit``, else the model's."""
        return self._window

    @property
    def reserve(self) -> int:
        """Tokens kept free for the reply (``prepare(reserve=...)`` overrides it)."""
        return self._reserve

    @property
    def policy(self) -> CompactionPolicy:
        """When and how far the manager compacts on its own."""
        return self._policy

    @property
    def thresholds(self) -> tuple[float, ...]:
        """The usage percentages watched, in increasing order."""
        return tuple(sorted(self._handlers))

    @property
    def agent_name(self) -> str | None:
        """The agent this manager serves (in events and handler contexts)."""
        return self._agent

    @property
    def protected_markers(self) -> tuple[str, ...]:
        """Markers that pin every message whose text holds one."""
        return tuple(self._markers)

    @property
    def messages(self) -> tuple[Message, ...]:
        """The current view: what the next request is made of.

        Example:
            >>> from contextwindow import ContextManager, Message
            >>> m = ContextManager(token_limit=1000)
            >>> m.push(Message.user("hi"))
            >>> [x.text for x in m.messages]
            ['hi']
        """
        return tuple(self._view)

    @property
    def history(self) -> tuple[Message, ...]:
        """Every message pushed, in order; compaction never shortens it.

        Example:
            >>> from contextwindow import ContextManager, Message, SlidingWindow
            >>> m = ContextManager(token_limit=1000)
            >>> m.push_many([Message.user("a"), Message.assistant("b")])
            >>> m.force_compress_with(SlidingWindow(1)).applied
            True
            >>> (len(m.messages), len(m.history))
            (1, 2)
        """
        return tuple(self._history)

    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer counting text.

        Example:
            >>> from contextwindow import ContextManager
            >>> ContextManager("gpt-4o").tokenizer.name
            'o200k_base'
        """
        return self._counter.tokenizer

    @property
    def has_strategy(self) -> bool:
        """Whether the manager compacts on its own (a strategy is set).

        Example:
            >>> from contextwindow import ContextManager
            >>> m = ContextManager(token_limit=1000)
            >>> m.has_strategy
            True
            >>> m.remove_strategy()
            >>> m.has_strategy
            False
        """
        return self._strategy is not None

    @property
    def strategy(self) -> Strategy | None:
        """The strategy automatic compaction runs (``None``: none is set)."""
        return self._strategy

    # -- configuration ---------------------------------------------------------------

    def set_strategy(self, strategy: Strategy) -> None:
        """Compact with ``strategy`` from now on (the view is kept as it is).

        Raises:
            ContextWindowError: ``strategy`` is not callable.

        Example:
            >>> from contextwindow import ContextManager, SlidingWindow
            >>> m = ContextManager(token_limit=1000)
            >>> m.set_strategy(SlidingWindow(10))
            >>> m.strategy
            SlidingWindow(keep_last=10)
        """
        checked = _strategy_checked(strategy)
        if checked is None:
            raise ContextWindowError("set_strategy needs a strategy (remove_strategy)")
        self._strategy = checked
        self._emit("strategy", strategy=stage_name(checked))

    def remove_strategy(self) -> None:
        """Stop compacting on its own: a request over the window raises ``BudgetError``.

        Example:
            >>> from contextwindow import ContextManager
            >>> m = ContextManager(token_limit=1000)
            >>> m.remove_strategy()
            >>> m.strategy is None
            True
        """
        self._strategy = None
        self._emit("strategy", strategy=None)

    def set_tokenizer(self, tokenizer: Tokenizer) -> None:
        """Count with ``tokenizer`` from now on (cached counts are dropped).

        Example:
            >>> from contextwindow import ContextManager, HeuristicTokenizer
            >>> m = ContextManager("gpt-4o")
            >>> m.set_tokenizer(HeuristicTokenizer())
            >>> m.tokenizer.name
            'heuristic'
        """
        self._counter = TokenCounter(tokenizer, self._provider)
        self._set_view(self._view)
        self._emit("tokenizer", tokenizer=tokenizer.name)

    def add_protected_marker(self, marker: str) -> None:
        """Pin every message whose text holds ``marker`` (kept whole by compaction).

        Raises:
            ContextWindowError: An empty marker (every message would hold it).

        Example:
            >>> from contextwindow import ContextManager
            >>> m = ContextManager(token_limit=1000)
            >>> m.add_protected_marker("<skill>")
            >>> m.add_protected_marker("<skill>")  # once is enough
            >>> m.protected_markers
            ('<skill>',)
        """
        if not isinstance(marker, str) or not marker:
            raise ContextWindowError("a protected marker must be a non-empty string")
        if marker not in self._markers:
            self._markers.append(marker)
            self._emit("marker", marker=marker)

    def on_threshold(self, percent: float) -> Callable[[F], F]:
        """Register a handler for usage crossing ``percent`` of the window upward.

        A handler gets a context (usage figures and tools to change the view)
        and runs once per crossing, before automatic compaction; handlers of
        lower thresholds run first. A threshold not watched yet is added.

        Raises:
            ContextWindowError: A threshold outside (0, 100].

        Example:
            >>> from contextwindow import ContextManager
            >>> m = ContextManager(token_limit=100)
            >>> @m.on_threshold(50)
            ... def note(ctx):
            ...     ctx.log_action("half full", tokens=ctx.tokens_used)
            >>> m.thresholds
            (50, 60, 80, 90)
        """
        t = _threshold_checked(percent)

        def register(handler: F) -> F:
            if not callable(handler):
                raise ContextWindowError(f"a handler must be callable: {handler!r}")
            self._handlers.setdefault(t, []).append(handler)
            return handler

        return register

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Send every event to ``callback``; returns a function that unsubscribes.

        Example:
            >>> from contextwindow import ContextManager, Message
            >>> m = ContextManager(token_limit=1000)
            >>> seen = []
            >>> stop = m.subscribe(seen.append)
            >>> m.push(Message.user("hi"))
            >>> stop()
            >>> m.push(Message.user("again"))
            >>> [(e.kind, e.data["role"]) for e in seen]
            [('push', 'user')]
        """
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    # -- reading ---------------------------------------------------------------------

    def token_estimate(self) -> int:
        """Tokens of a request holding the current view (framing and tools included).

        Example:
            >>> from contextwindow import ContextManager, Message
            >>> m = ContextManager("gpt-4o")
            >>> m.push(Message.user("hello world"))
            >>> m.token_estimate()
            9
        """
        return self._count()

    def recall(self, ids: Iterable[str]) -> list[Message]:
        """The history's messages with these ids, in history order.

        A summary or a cleared result points at the originals by id; this
        brings them back from the full log.

        Example:
            >>> from contextwindow import ContextManager, Message
            >>> m = ContextManager(token_limit=1000)
            >>> first = Message.user("the file is src/app.py")
            >>> m.push_many([first, Message.assistant("ok")])
            >>> [x.text for x in m.recall([first.id])]
            ['the file is src/app.py']
        """
        wanted = set(ids)
        return [m for m in self._history if m.id in wanted]

    # -- state -----------------------------------------------------------------------

    def _append(self, messages: Iterable[Message]) -> None:
        added = list(messages)
        for k, m in enumerate(added):
            if not isinstance(m, Message):
                raise InvalidMessageError(
                    f"messages[{k}]",
                    f"expected a Message, got {type(m).__name__} "
                    "(convert provider dicts with from_openai or from_anthropic)",
                )
        running = self._running
        count = self._counter.message
        system = False
        for m in added:
            if m.role == "user":
                self._turn_compactions = 0  # a new turn begins
            if m.role != "system":
                self._nonsystem += 1
            else:
                system = True
            running.append(running[-1] + count(m))
        self._history.extend(added)
        self._view.extend(added)
        if system:  # with tools, OpenAI folds them into the first system turn
            self._overhead = self._request_overhead()
        for m in added:
            self._emit("push", logging.DEBUG, role=m.role, id=m.id)

    def _restore(
        self, messages: Iterable[Message], history: Iterable[Message] | None
    ) -> None:
        view = list(messages)
        log = view if history is None else list(history)
        for name, seq in (("messages", view), ("history", log)):
            for k, m in enumerate(seq):
                if not isinstance(m, Message):
                    raise InvalidMessageError(
                        f"{name}[{k}]", f"expected a Message, got {type(m).__name__}"
                    )
        self._history = list(log)
        self._set_view(view)
        self._fired.clear()
        self._emit("restore", messages=len(view), history=len(log))

    def _clear(self) -> None:
        self._history = []
        self._set_view([])
        self._fired.clear()
        self._turn_compactions = 0
        self._refused_at = None
        self._emit("clear")

    def _update_system(self, text: str) -> None:
        if not isinstance(text, str):
            raise ContextWindowError(
                f"update_system takes the prompt's text, got {type(text).__name__}"
            )
        for seq in (self._history, self._view):
            k = next((i for i, m in enumerate(seq) if m.role == "system"), None)
            if k is None:
                seq.insert(0, Message.system(text))
            else:
                seq[k] = Message.system(text, id=seq[k].id, meta=seq[k].meta)
        self._set_view(self._view)
        self._emit("system", length=len(text))

    def _set_view(self, view: Sequence[Message]) -> None:
        """Any change but appends: what was kept incrementally is computed again."""
        self._view = list(view)
        self._nonsystem = sum(1 for m in self._view if m.role != "system")
        self._running = list(self._counter.running(self._view))
        self._overhead = self._request_overhead()
        self._valid_upto = 0
        self._stable = None
        self._writer.reset()

    def _request_overhead(self) -> int:
        return self._counter.messages(self._view, tools=self._tools) - self._running[-1]

    def _count(self) -> int:
        return self._running[-1] + self._overhead

    def _percent(self, tokens: int) -> float:
        return 100.0 * tokens / self._window

    def _hard_limit(self, reserve: int | None) -> int:
        if reserve is None:
            return self._window - self._reserve
        self._check_reserve(reserve)
        return self._window - reserve

    def _check_reserve(self, reserve: int) -> None:
        if not 0 <= reserve < self._window:
            raise ContextWindowError(
                f"reserve must be >= 0 and below the window ({self._window:,}), "
                f"got {reserve:,}"
            )

    def _budget(self, limit: int, query: str | None = None) -> Budget:
        markers = tuple(self._markers)
        return Budget(max(limit, 0), self._counter, self._tools, markers, query)

    # -- events ----------------------------------------------------------------------

    def _emit(self, kind: str, level: int = logging.INFO, **data: Any) -> None:
        logged = logger.isEnabledFor(level)
        if not self._subscribers and not logged:
            return
        event = Event(kind, self._agent, data)
        if logged:
            who = f"[{self._agent}] " if self._agent else ""
            shown = ", ".join(f"{k}={v}" for k, v in data.items())
            logger.log(
                level,
                "%s%s: %s",
                who,
                kind,
                shown,
                extra={"contextwindow_event": kind, "contextwindow_data": data},
            )
        for callback in tuple(self._subscribers):
            callback(event)

    # -- changing the view -----------------------------------------------------------

    def _install(
        self, fitted: Fitted, trigger: Trigger, reason: str, base: int | None = None
    ) -> Compaction:
        """Make ``fitted`` the view and describe the change.

        ``base`` is the length of the view the strategy was given: messages
        pushed while it ran (an async manager's) are kept after its output.
        """
        old, new = self._view, list(fitted.messages)
        if base is not None and len(old) > base:
            new.extend(old[base:])
        k = _common_prefix(old, new)
        self._set_view(new)
        prefix = self._running[k]
        report = fitted.report
        self._emit(
            "compaction",
            trigger=trigger,
            tokens_before=report.tokens_before,
            tokens_after=report.tokens_after,
            changes=len(report.changes),
            prefix_tokens=prefix,
            reason=reason,
        )
        return Compaction(trigger, True, report, prefix, reason)

    def _apply(
        self, strategy: Strategy, limit: int, trigger: Trigger, reason: str
    ) -> Compaction:
        """Run ``strategy`` on the view under ``limit`` and keep what it made."""
        view = list(self._view)
        fitted = strategy(view, self._budget(limit))
        return self._keep(fitted, trigger, reason, len(view))

    def _keep(
        self, fitted: Fitted, trigger: Trigger, reason: str, base: int
    ) -> Compaction:
        """Install a strategy's output when it changed anything."""
        out = fitted.messages
        view = self._view
        if len(out) == base and all(a is b for a, b in zip(out, view, strict=False)):
            return Compaction(trigger, False, fitted.report, 0, f"{reason}: no change")
        return self._install(fitted, trigger, reason, base)

    def _replace(self, messages: Iterable[Message], reason: str) -> Compaction:
        """Make ``messages`` the view (a handler's own edit), accounted by id."""
        new = list(messages)
        for k, m in enumerate(new):
            if not isinstance(m, Message):
                raise InvalidMessageError(
                    f"messages[{k}]", f"expected a Message, got {type(m).__name__}"
                )
        changes = _diff(self._view, new, self._counter)
        fitted = finish(
            "replace_messages", self._view, new, changes, self._budget(self._window)
        )
        return self._install(fitted, "handler", reason)

    def _fit_view(
        self,
        view: list[Message],
        target: int,
        hard: int,
        trigger: Trigger,
        query: str | None,
    ) -> Fitted | None:
        """Fit ``view`` to ``target``, or ``None`` when pinned content forbids it.

        When the request must shrink (``limit``) and pinned content alone
        exceeds ``target``, it is fitted to ``hard`` instead. Pure: it may
        run on another thread.
        """
        strategy = self._strategy
        assert strategy is not None  # _plan raises when none is set and one is needed

        def run(limit: int) -> Fitted:
            return fit(
                view,
                limit=limit,
                strategy=strategy,
                tokenizer=self._counter,
                tools=self._tools,
                protected=tuple(self._markers),
                query=query,
            )

        try:
            return run(target)
        except BudgetError:
            if target >= hard:
                raise
            if trigger != "limit":
                return None
            return run(hard)  # pinned content fits the window, not the target

    def _settle(
        self,
        trigger: Trigger,
        fitted: Fitted | None,
        tokens: int,
        target: int,
        reason: str,
        base: int,
    ) -> Compaction:
        """Keep an automatic compaction's output, or refuse it and say why."""
        if fitted is None:
            return self._refuse(
                trigger,
                Report(tokens, tokens, target),
                tokens,
                f"{reason}; pinned content alone exceeds {target:,} tokens",
            )
        saved = fitted.report.saved
        least = self._min_saving()
        if trigger != "limit" and saved < least:
            return self._refuse(
                trigger,
                fitted.report,
                tokens,
                f"{reason}; it would save {saved:,} tokens, less than the minimum "
                f"of {least:,}: the view is kept",
            )
        self._refused_at = None
        return self._install(fitted, trigger, reason, base)

    def _refuse(
        self, trigger: Trigger, report: Report, tokens: int, reason: str
    ) -> Compaction:
        self._refused_at = tokens
        self._emit("compaction_refused", trigger=trigger, tokens=tokens, reason=reason)
        return Compaction(trigger, False, report, 0, reason)

    def _min_saving(self) -> int:
        return math.ceil(self._policy.min_saving * self._window / 100)

    def _plan(self, tokens: int, hard: int) -> tuple[Trigger, int, str] | None:
        """Whether to compact on its own now: the trigger, the target and why."""
        policy = self._policy
        target = min(hard, int(policy.to * self._window / 100))
        if tokens > hard:
            if self._strategy is None:
                raise BudgetError(
                    hard,
                    tokens,
                    ("no strategy is set, so nothing is removed (set_strategy)",),
                )
            return "limit", target, f"{tokens:,} tokens exceed the budget of {hard:,}"
        usage = self._percent(tokens)
        if (
            self._strategy is None
            or self._applied
            or usage < policy.at
            or self._turn_compactions >= policy.max_per_turn
        ):
            return None
        grown = self._refused_at is None or (
            tokens >= self._refused_at + self._min_saving()
        )
        if not grown:
            return None  # refused at about this size: wait until it has grown
        return "watermark", target, f"usage {usage:.1f}% >= {policy.at:g}%"

    def _repair(self) -> Compaction | None:
        """Fix in the view what no provider accepts, except a call awaiting results."""
        view = self._view
        if not view:
            return None
        start = min(self._valid_upto, len(view))
        found = problems(view, self._provider, start=start)
        if not found:
            return None
        last = units(view[start:])[-1]
        pending = last.kind == "tool_exchange" and bool(last.unanswered)
        cut = start + last.start if pending else len(view)
        if all(p.index >= cut for p in found):
            return None  # only the pending call: left out of the request alone
        head = view[:cut]
        budget = self._budget(self._window)
        fixed = finish("ensure_valid", head, head, (), budget, start=start)
        new = [*fixed.messages, *view[cut:]]
        report = Report(
            budget.count(view),
            budget.count(new),
            budget.limit,
            fixed.report.changes,
            ("ensure_valid",),
        )
        reason = "messages no provider accepts were removed from the view"
        return self._install(Fitted(tuple(new), report), "repair", reason)

    # -- the steps of prepare and force_compress -------------------------------------

    def _prepare_steps(
        self, query: str | None, reserve: int | None
    ) -> Generator[Step, Any, Prepared]:
        hard = self._hard_limit(reserve)
        self._applied = False
        done: list[Compaction] = []
        fired: list[float] = []
        repaired = self._repair()
        if repaired is not None:
            done.append(repaired)
        tokens = self._count()
        for t in sorted(self._handlers):
            if self._percent(tokens) < t:
                break
            if t in self._fired:
                continue
            self._fired.add(t)
            fired.append(t)
            self._emit(
                "threshold",
                threshold=t,
                usage=round(self._percent(tokens), 2),
                tokens=tokens,
                context_limit=self._window,
            )
            for handler in tuple(self._handlers[t]):
                yield Call(handler, self._context(t, done))
            tokens = self._count()
        plan = self._plan(tokens, hard)
        if plan is not None:
            trigger, target, reason = plan
            self._turn_compactions += 1
            view = list(self._view)
            work = partial(self._fit_view, view, target, hard, trigger, query)
            fitted = yield Run(work)
            done.append(
                self._settle(trigger, fitted, tokens, target, reason, len(view))
            )
        if self._max_messages is not None and self._nonsystem > self._max_messages:
            cap = MaxMessages(self._max_messages)
            why = f"more than {self._max_messages} messages"
            done.append(self._apply(cap, hard, "max_messages", why))
        return self._finish(done, fired, hard)

    def _force_steps(
        self, strategy: Strategy, target: int | None
    ) -> Generator[Step, Any, Compaction]:
        if target is None:
            limit = min(
                self._hard_limit(None), int(self._policy.to * self._window / 100)
            )
        elif target < 0:
            raise ContextWindowError(f"target must be >= 0, got {target:,}")
        else:
            limit = target
        reason = f"forced ({stage_name(strategy)}, target {limit:,} tokens)"
        view = list(self._view)
        fitted = yield Run(partial(strategy, view, self._budget(limit)))
        return self._keep(fitted, "forced", reason, len(view))

    def _summarize_strategy(self, keep_recent: int) -> Strategy:
        """The ``Summarize`` strategy over the manager's summarizer."""
        try:
            from contextwindow.strategies.summarize import (  # type: ignore[import-not-found]  # the Summarize strategy may not be installed yet
                Summarize,
            )
        except ImportError:
            raise SummarizerError(
                "summarizing needs the Summarize strategy "
                "(contextwindow.strategies.summarize), which is not installed"
            ) from None
        strategy: Strategy = Summarize(self._summarizer, keep_recent=keep_recent)
        return strategy

    def _forced_strategy(self, fallback_window: int) -> Strategy:
        if self._strategy is not None:
            return self._strategy
        return SlidingWindow(fallback_window)

    def _context(self, threshold: float, done: list[Compaction]) -> Any:
        """The handler context: each class makes its own kind."""
        raise NotImplementedError

    def _finish(
        self, done: list[Compaction], fired: list[float], hard: int
    ) -> Prepared:
        view = self._view
        start = min(self._valid_upto, len(view))
        valid = ensure_valid(view, self._provider, start=start)
        sent = valid.messages
        kept = len(view)  # leading messages sent as they are in the view
        if valid.problems:  # only a call awaiting results: left out of this request
            budget = self._budget(hard)
            left_out = finish(
                "ensure_valid",
                view,
                view,
                (),
                budget,
                start=start,
                counted=self._count(),
            )
            sent = left_out.messages
            kept = valid.problems[0].index
            tokens = left_out.report.tokens_after
            why = "the last tool call has no result yet: left out of this request"
            done.append(Compaction("repair", False, left_out.report, 0, why))
        else:
            tokens = self._count()
        if view:
            self._valid_upto = start + units(view[start:])[-1].start
        if tokens > hard:
            raise BudgetError(hard, tokens, ("the view after every compaction",))
        for t in tuple(self._fired):
            if self._percent(tokens) < t:
                self._fired.discard(t)  # re-armed: it fires on the next crossing
        shared = self._shared(sent, kept)
        prefix = self._running[min(shared, kept)] + sum(
            self._counter.message(m) for m in sent[kept:shared]
        )
        self._stable = kept
        self._last_sent = sent
        messages, system = self._writer.write(sent, shared=shared)
        joined: Report | None = None
        for c in done:
            if c.applied or c.trigger == "repair":
                joined = c.report if joined is None else joined.then(c.report)
        return Prepared(
            messages,
            system,
            self._provider,
            sent,
            tokens,
            self._window,
            hard,
            joined,
            tuple(done),
            prefix,
            tuple(fired),
        )

    def _shared(self, sent: tuple[Message, ...], kept: int) -> int:
        """Leading messages of ``sent`` identical to the last request's."""
        prev = self._last_sent
        if self._stable is None:  # the view changed: compare everything
            return _common_prefix(prev, sent)
        # Appends only since: the last request's unchanged part is still
        # there; what follows it is compared (a short tail).
        k = min(self._stable, kept, len(prev))
        while k < len(prev) and k < len(sent):
            a, b = prev[k], sent[k]
            if not (a is b or (a == b and a.meta == b.meta)):
                break
            k += 1
        return k


def _common_prefix(a: Sequence[Message], b: Sequence[Message]) -> int:
    """How many leading messages ``a`` and ``b`` share, meta included."""
    k = 0
    for x, y in zip(a, b, strict=False):
        if not (x is y or (x == y and x.meta == y.meta)):
            break
        k += 1
    return k


def _strategy_checked(strategy: Strategy | None) -> Strategy | None:
    if strategy is not None and not callable(strategy):
        raise ContextWindowError(f"not a strategy (not callable): {strategy!r}")
    return strategy


def _threshold_checked(threshold: float) -> float:
    if isinstance(threshold, bool) or not 0 < threshold <= 100:
        raise ContextWindowError(
            f"a threshold is a percentage in (0, 100], got {threshold!r}"
        )
    return threshold


def _diff(
    before: Sequence[Message], after: Sequence[Message], counter: TokenCounter
) -> list[Change]:
    """Changes that turn ``before`` into ``after``, messages matched by id."""
    old = {m.id: (i, m) for i, m in enumerate(before)}
    kept = {m.id for m in after}
    stage = "replace_messages"
    changes = [
        Change("dropped", stage, (m.id,), i, counter.message(m), 0, f"{m.role} message")
        for i, m in enumerate(before)
        if m.id not in kept
    ]
    for m in after:
        hit = old.get(m.id)
        if hit is None:
            n = counter.message(m)
            changes.append(
                Change("added", stage, (m.id,), len(before), 0, n, f"{m.role} message")
            )
        elif hit[1] != m or hit[1].meta != m.meta:
            i, was = hit
            changes.append(
                Change(
                    "rewritten",
                    stage,
                    (m.id,),
                    i,
                    counter.message(was),
                    counter.message(m),
                    f"{m.role} message",
                )
            )
    return changes
