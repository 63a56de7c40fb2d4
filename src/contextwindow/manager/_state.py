"""What a manager holds: its configuration, its history and view, its events.

Contract:

- The history is the log of every message pushed, in order. Only
  ``set_messages`` and ``clear``, called by name, replace it; ``update_system``
  replaces the system prompt in place. Nothing else touches it.
- Responses items pushed one at a time group as ``from_responses`` groups
  them in one list: an item continuing the last message's group (reasoning,
  an assistant message, a tool call after one of them; a tool output after
  another) joins that message, in the history and in the view. The store's
  log keeps each pushed message as it came, once; the history is the log
  grouped, so a manager resumed from the store has the same history and view.
- The view is what is sent. Pushes append to both; every other change to the
  view goes through ``_set_view``, which computes again what is kept
  incrementally: running token totals, what a request adds to its messages,
  how far the view is known valid, and the writer's output.
- Configuration is checked when it is given: bad values raise
  ``ContextWindowError`` naming the value.
"""

from __future__ import annotations

import contextlib
import difflib
import inspect
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar, cast

from contextwindow._args import (
    as_model,
    as_strategy,
    as_tokenizer,
    check_bool,
    check_callable,
    check_int,
    check_items,
    check_percent,
    check_str,
    check_summarizer,
    shown,
)
from contextwindow.errors import (
    ArgumentTypeError,
    ContextWindowError,
    StoreError,
)
from contextwindow.fitting import DEFAULT_STRATEGY, provider_of, reply_reserve
from contextwindow.formats._coerce import NEUTRAL, Shape, coerce_messages, coerce_tools
from contextwindow.manager._persist import Persistence, Resumed
from contextwindow.manager._types import CompactionPolicy, Event
from contextwindow.manager._wire import Writer
from contextwindow.messages import (
    Message,
    Provider,
    ToolCall,
    ToolSpec,
    check_provider,
    new_id,
)
from contextwindow.models import ModelInfo, get_tokenizer
from contextwindow.recalling import RECALL_SPEC, RECALL_TOOL, answer_recall, recall_tool
from contextwindow.store.base import Store
from contextwindow.store.urls import open_store, split_url
from contextwindow.strategies.base import Budget, Strategy, stage_name
from contextwindow.summarizers.base import Summarizer
from contextwindow.summarizers.record import recall, summary_sources
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.calibration import Calibration
from contextwindow.tokens.counting import TokenCounter

__all__ = ["DEFAULT_THRESHOLDS", "State", "checked_messages"]

logger = logging.getLogger("contextwindow.manager")

DEFAULT_THRESHOLDS: tuple[float, ...] = (60, 80, 90)
"""Usage percentages whose crossing fires handlers (and a ``threshold`` event)."""

F = TypeVar("F", bound=Callable[..., Any])
S = TypeVar("S", bound="State")


class _InitSignature:
    """A class's signature, for ``help()`` and ``inspect``: its ``__init__``'s.

    ``inspect.signature`` of a class would read the ``__new__`` that checks
    the call (``*args, **kwargs``) before it reads ``__init__``.
    """

    def __get__(self, obj: object, owner: type[Any]) -> inspect.Signature:
        sig = _signature(owner.__init__)
        return sig.replace(
            parameters=list(sig.parameters.values())[1:],
            return_annotation=inspect.Signature.empty,
        )


class State:
    """Everything a manager knows, and the changes that are not compaction."""

    _held: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
    """What every method reading or changing the state holds (``_setup``):
    the sync manager's lock; nothing for the async manager, whose methods
    that are not coroutines run on its event loop's thread, between awaits."""

    __signature__ = _InitSignature()

    _mark: object | None = None
    """The mark of this manager's ``prepare`` under way (``None``: none is)."""
    _awaits_handlers = False
    """Whether handlers may be coroutine functions (the async manager's)."""

    def __new__(cls: type[S], *args: Any, **kwargs: Any) -> S:
        # Python's own error for a bad call would name ``State.__init__``
        # and hint at nothing: the arguments are checked against the
        # signature first, and a mistake is named for the class called.
        signature = _signature(cls.__init__)
        try:
            signature.bind(None, *args, **kwargs)
        except TypeError:
            raise _call_error(cls.__name__, signature, args, kwargs) from None
        return object.__new__(cls)

    def __init__(
        self,
        model: str | ModelInfo | None = None,
        *,
        token_limit: int | None = None,
        strategy: Strategy | str | None = "default",
        tokenizer: Tokenizer | TokenCounter | str | None = None,
        reserve: int | None = None,
        max_messages: int | None = None,
        provider: Provider | None = None,
        tools: Iterable[ToolSpec | Any] = (),
        thresholds: Iterable[float] = DEFAULT_THRESHOLDS,
        policy: CompactionPolicy | None = None,
        summarizer: Summarizer | None = None,
        agent_name: str | None = None,
        system: str | None = None,
        store: Store | str | None = None,
        conversation_id: str | None = None,
        offer_recall: bool = False,
        calibration: Calibration | None = None,
    ) -> None:
        self._setup()
        info = as_model(model, window_given=token_limit is not None)
        offer_recall = check_bool(offer_recall, "offer_recall")
        token_limit = check_int(token_limit, "token_limit", low=1, none=True)
        reserve = check_int(reserve, "reserve", low=0, none=True)
        max_messages = check_int(max_messages, "max_messages", low=1, none=True)
        watched = check_items(thresholds, "thresholds", _threshold_checked)
        agent_name = check_str(agent_name, "agent_name", none=True)
        system = check_str(system, "system", none=True)
        conversation_id = check_str(
            conversation_id, "conversation_id", empty=False, none=True
        )
        if policy is not None and not isinstance(policy, CompactionPolicy):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
            raise ArgumentTypeError("policy", shown(policy), "a CompactionPolicy")
        check_summarizer(summarizer)
        if calibration is not None and not isinstance(calibration, Calibration):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
            raise ArgumentTypeError(
                "calibration", shown(calibration), "a Calibration or None"
            )
        self._calibration = calibration if calibration is not None else Calibration()
        self._last_tokens: int | None = None
        """The count of the last request ``prepare`` returned (what a usage
        report observed next is paired with)."""
        if token_limit is None:
            if info is None:
                raise ContextWindowError("a manager needs a model or a token_limit")
            token_limit = info.context_window
        self._window = token_limit
        if reserve is None:
            reserve = reply_reserve(info, token_limit)
        self._check_reserve(reserve)
        self._reserve = reserve
        self._usable: int | None = None
        """What a request may take in the ``prepare`` under way (its own
        ``reserve``), ``None`` outside one: usage percentages are of this
        during a ``prepare``, of ``budget`` otherwise."""
        self._max_messages = max_messages
        if provider is not None:
            check_provider(provider)
        if isinstance(tokenizer, TokenCounter):
            if provider is not None and provider != tokenizer.provider:
                raise ContextWindowError(
                    f"the counter counts for {tokenizer.provider!r}, "
                    f"but provider {provider!r} was asked for"
                )
            provider = tokenizer.provider
        self._provider: Provider = provider or (
            provider_of(info) if info is not None else "openai"
        )
        self._info = info
        if isinstance(tokenizer, TokenCounter):
            self._counter = tokenizer  # its counts, and theirs, are shared
        else:
            chosen = (
                get_tokenizer(info) if tokenizer is None else as_tokenizer(tokenizer)
            )
            self._counter = TokenCounter(chosen, self._provider, model=info)
        self._tools = coerce_tools(tools)
        self._shape: Shape = NEUTRAL
        """The shape pushed messages last came in (``Prepared.as_input``)."""
        if offer_recall and all(t.name != RECALL_TOOL for t in self._tools):
            self._tools += (RECALL_SPEC,)
        self._strategy: Strategy | None = (
            DEFAULT_STRATEGY if strategy == "default" else _strategy_checked(strategy)
        )
        self._policy = policy or CompactionPolicy()
        self._summarizer = summarizer
        self._agent = agent_name
        self._markers: list[str] = []
        self._handlers: dict[float, list[Callable[[Any], Any]]] = {}
        for t in watched:
            self._handlers.setdefault(t, [])
        self._fired: set[float] = set()
        self._ran: dict[float, list[Callable[[Any], Any]]] = {}
        """For a threshold whose handlers are part way through (one raised):
        the handlers that have returned."""
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
        self._edits = 0
        """Changes to the view so far (appends included): ``prepare`` checks
        the view again when any happened during the turn."""
        self._stable: int | None = 0
        """Leading view messages the last request sent as they are (``None``:
        unknown, the view changed)."""
        self._turn_compactions: int = 0
        self._refused_at: int | None = None
        self._applied = False
        self._writer = Writer(self._provider)
        self._last_sent: tuple[Message, ...] = ()
        self._logged = 0
        """With a store: the log's messages the history holds (the version
        the manager took in; the store's may be ahead after an interrupt)."""
        self._persist = self._open(store, conversation_id)
        resumed = self._persist.resume() if self._persist is not None else None
        if resumed is not None:  # the stored conversation wins over ``system``
            self._resume(resumed)
        else:
            if self._persist is not None:
                name = info.name if info is not None else None
                self._persist.start({"model": name, "provider": self._provider})
            if system is not None:
                self._append((Message.system(system),))

    def _setup(self) -> None:
        """What a class needs before the configuration is read (its lock).

        The sync manager sets ``_held`` to its lock.
        """

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
        """Tokens kept free for the reply (``prepare(reserve=...)`` overrides it).

        By default the model's output limit, at most a quarter of the window
        (``reply_reserve``); 0 without a model.

        Example:
            >>> from contextwindow import ContextManager
            >>> ContextManager("gpt-4o").reserve  # its output limit
            16384
            >>> ContextManager(token_limit=100).reserve  # no model: none
            0
        """
        return self._reserve

    @property
    def budget(self) -> int:
        """What a request may take: the window less the reserve, now.

        Thresholds and the compaction policy's watermarks are percentages of
        this, so a 90 % handler fires at 90 % of what may be sent, whatever
        the reserve. With an approximate tokenizer it is in the tokens
        counted here, as ``calibration`` scales it (``observe_usage``). A
        ``prepare(reserve=...)`` takes its own budget for that request
        (``Prepared.budget``); this one stays the manager's.

        Example:
            >>> from contextwindow import ContextManager, Message
            >>> m = ContextManager("gpt-4o", token_limit=10_000)
            >>> m.budget  # 10,000 - 2,500
            7500
            >>> m.push(Message.user("hi"))
            >>> (m.prepare(reserve=0).budget, m.budget)
            (10000, 7500)
        """
        with self._held:
            return self._hard_limit(None)

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
    def store(self) -> Store | None:
        """Where the conversation is kept, if anywhere."""
        return self._persist.store if self._persist is not None else None

    @property
    def conversation_id(self) -> str | None:
        """The stored conversation's id (``None`` without a store)."""
        return self._persist.conversation_id if self._persist is not None else None

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
    def calibration(self) -> Calibration:
        """What the provider's usage reports taught of the tokenizer's error.

        With an approximate tokenizer (``tokenizer.exact`` is ``False``: Claude,
        Gemini, Llama ...) a request takes at most ``calibration.limit(window
        - reserve)`` tokens as counted here, so the provider's own count of it
        fits the window; an exact tokenizer's counts are used as they are.
        ``observe_usage`` feeds it; one calibration may serve several managers
        of a model (pass it as ``calibration=``).
        """
        return self._calibration

    def observe_usage(self, usage: Any, *, counted: int | None = None) -> float:
        """Learn from the input tokens the provider reported for a request.

        Args:
            usage: The provider's usage for the last request ``prepare``
                returned (or for ``counted`` tokens): an ``int``, a usage
                mapping or object, or the whole response
                (``reported_input_tokens`` says which fields are read).
            counted: The request's count here (default: the last
                ``Prepared.tokens``).

        Returns:
            The calibration's ratio after this observation.

        Raises:
            ContextWindowError: No request was prepared yet and ``counted``
                is not given.
            ArgumentError: ``usage`` holds no input tokens, or ``counted`` is
                not an int >= 0.

        Example:
            >>> from contextwindow import ContextManager, Message
            >>> m = ContextManager("claude-sonnet-4-5", token_limit=10_000,
            ...                    reserve=0)
            >>> m.push(Message.user("What does this project do? " * 50))
            >>> sent = m.prepare()
            >>> sent.tokens, sent.budget
            (356, 10000)
            >>> m.observe_usage({"input_tokens": 445})  # the API's usage.input_tokens
            1.25
            >>> m.prepare().budget  # counted here, so that 10,000 billed fit
            8000
        """
        with self._held:
            if counted is None:
                if self._last_tokens is None:
                    raise ContextWindowError(
                        "observe_usage: no request was prepared yet; pass counted="
                    )
                counted = self._last_tokens
            ratio = self._calibration.observe(counted, usage)
            self._emit(
                "usage_observed",
                logging.DEBUG,
                counted=counted,
                ratio=round(ratio, 4),
            )
            return ratio

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

    def set_strategy(self, strategy: Strategy | str) -> None:
        """Compact with ``strategy`` from now on (the view is kept as it is).

        Raises:
            ArgumentError: ``strategy`` is no strategy nor a spec (not
                callable, a class, or a function that cannot take
                ``(messages, budget)``).

        Example:
            >>> from contextwindow import ContextManager, SlidingWindow
            >>> m = ContextManager(token_limit=1000)
            >>> m.set_strategy(SlidingWindow(10))
            >>> m.strategy
            SlidingWindow(keep_last=10)
        """
        checked = _strategy_checked(strategy)  # pyright: ignore[reportUnnecessaryComparison]  # callers may pass None
        if checked is None:
            raise ContextWindowError("set_strategy needs a strategy (remove_strategy)")
        with self._held:
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
        with self._held:
            self._strategy = None
            self._emit("strategy", strategy=None)

    def set_tokenizer(self, tokenizer: Tokenizer | str) -> None:
        """Count with ``tokenizer`` from now on (cached counts are dropped).

        Example:
            >>> from contextwindow import ContextManager, HeuristicTokenizer
            >>> m = ContextManager("gpt-4o")
            >>> m.set_tokenizer(HeuristicTokenizer())
            >>> m.tokenizer.name
            'heuristic'
        """
        chosen = as_tokenizer(tokenizer)
        with self._held:  # a prepare under way counts with one tokenizer
            self._counter = TokenCounter(chosen, self._provider, model=self._info)
            self._set_view(self._view)
            self._emit("tokenizer", tokenizer=chosen.name)

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
        if not isinstance(marker, str) or not marker:  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
            raise ContextWindowError("a protected marker must be a non-empty string")
        with self._held:
            if marker not in self._markers:
                self._markers.append(marker)
                self._emit("marker", marker=marker)

    def on_threshold(self, percent: float) -> Callable[[F], F]:
        """Register a handler for usage crossing ``percent`` of the window upward.

        A handler gets a context (usage figures and tools to change the view)
        and runs once per crossing, before automatic compaction; handlers of
        lower thresholds run first. A threshold not watched yet is added.

        A handler that raises ends ``prepare`` with its own error. It does
        not count as run: the next ``prepare`` runs it again (handlers that
        returned before it do not run twice), and what handlers changed in
        the view before it is kept, as their ``compaction`` events say.

        A handler may call the manager's other methods (``push``,
        ``update_system``, ``force_compress``, ...; an async handler awaits
        them): they run at once, inside the ``prepare`` under way, which
        reports a forced compaction with its own and sends the result. It
        may not call ``prepare``, which would run the handlers again:
        ``ContextWindowError`` says so. Its ``ctx`` has the tools to change
        the view.

        A handler is registered for good: ``remove_handler`` takes it off.

        Raises:
            ArgumentError: A threshold outside (0, 100], or a handler that
                is not callable; for ``ContextManager``, a coroutine function
                (``AsyncContextManager`` awaits handlers; this one cannot).

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
            check_callable(handler, "handler", "a callable taking the handler context")
            if not self._awaits_handlers and inspect.iscoroutinefunction(handler):
                # Refused now: each prepare would fail on it, and raise again.
                name = getattr(handler, "__qualname__", type(handler).__name__)
                raise ArgumentTypeError(
                    "handler",
                    f"coroutine function {name!r}",
                    "a plain function (ContextManager does not await handlers)",
                    "use AsyncContextManager, or a def handler",
                )
            with self._held:
                self._handlers.setdefault(t, []).append(handler)
            return handler

        return register

    def remove_handler(self, handler: Callable[[Any], Any]) -> bool:
        """Take ``handler`` off every threshold it was registered for.

        The thresholds stay watched (``thresholds``); a crossing under way
        runs the handlers still registered.

        Returns:
            Whether it was registered.

        Example:
            >>> from contextwindow import ContextManager
            >>> m = ContextManager(token_limit=100)
            >>> note = m.on_threshold(50)(lambda ctx: None)
            >>> (m.remove_handler(note), m.remove_handler(note))
            (True, False)
        """
        with self._held:
            found = False
            for t, handlers in self._handlers.items():
                kept = [h for h in handlers if h is not handler]
                if len(kept) < len(handlers):
                    found = True
                    self._handlers[t] = kept
            return found

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Send every event to ``callback``; returns a function that unsubscribes.

        An event reports what has happened: a callback that raises cannot
        undo it, so its error is logged (logger ``contextwindow.manager``,
        with the traceback) and the operation goes on, as if the callback
        had returned. A ``push`` whose subscriber raised is stored: do not
        push it again.

        Raises:
            ArgumentTypeError: ``callback`` is not callable.

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
        # Refused here: past this point its error would only be logged.
        check_callable(callback, "callback", "a callable taking an Event")
        with self._held:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._held:
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
        with self._held:
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
        with self._held:
            return recall(self._history, ids)

    @property
    def recall_schema(self) -> dict[str, Any]:
        """The ``context_recall`` tool's schema, in this manager's provider shape.

        Example:
            >>> from contextwindow import ContextManager
            >>> ContextManager(token_limit=1000).recall_schema["function"]["name"]
            'context_recall'
        """
        return recall_tool(self._provider)

    def answer_recall(self, call: ToolCall) -> Message:
        """The tool message answering a ``context_recall`` call, from the history.

        Markers in the view name handles (``contextwindow.handles``); the
        history (and the store it is read back from) holds the originals, so
        the answer is the original text, within the call's ``max_tokens``.
        Push the answer like any tool result.

        Example:
            >>> from contextwindow import ContextManager, Message, ToolCall
            >>> m = ContextManager(token_limit=1000, offer_recall=True)
            >>> first = Message.user("the key is in src/app.py")
            >>> m.push(first)
            >>> call = ToolCall("r1", "context_recall", f'{{"handle": "{first.id}"}}')
            >>> m.answer_recall(call).text
            'user: the key is in src/app.py'
        """
        with self._held:
            return answer_recall(
                self._history, call, tokenizer=self._counter.tokenizer, view=self._view
            )

    # -- state -----------------------------------------------------------------------

    def _checked(self, items: object, name: str) -> list[Message]:
        """``items`` as neutral messages; the shape they came in is remembered."""
        read = coerce_messages(items, hint=self._provider, name=name)
        if read.shape.kind != "neutral":
            self._shape = Shape(read.shape.kind)
        return list(read.messages)

    def _append(self, messages: object, name: str = "messages") -> None:
        added = self._checked(messages, name)
        if self._persist is not None:
            # An interrupted push may have been stored: taken in now, and
            # not stored again when it is pushed again.
            added = _not_in(added, self._catch_up())
        counts = [self._counter.message(m) for m in added]
        if self._persist is not None and added:
            # Stored first: a failed write changes nothing here. What other
            # workers appended meanwhile comes back, and goes first.
            others = self._persist.append(added, counts)
            if others:
                self._extend(others, [self._counter.message(m) for m in others])
        self._extend(added, counts)
        for m in added:
            self._emit("push", logging.DEBUG, role=m.role, id=m.id)

    def _catch_up(self) -> list[Message]:
        """Take in what the store's log holds past the history; return it.

        An append moves the store's version before the history takes its
        messages in: an interrupt (``KeyboardInterrupt``) between the two
        leaves messages in the log that the manager lacks. Every change
        starts here, so they join the history and the view first, and the
        view saved next is made from the log it names.
        """
        persist = self._persist
        if persist is None or persist.version <= self._logged:
            return []
        missed = persist.unseen(self._logged)
        self._extend(missed, [self._counter.message(m) for m in missed])
        return missed

    def _extend(self, added: Sequence[Message], counts: Sequence[int]) -> None:
        """Append ``added`` to the history and the view (``counts``: their tokens).

        A Responses item continuing the last message's group joins it
        (``_joined``). With a store, ``_logged`` moves with each message, so
        an interrupt leaves it naming what the history holds.
        """
        self._edits += 1
        history, view, running = self._history, self._view, self._running
        logged = self._persist is not None
        system = False
        for m, n in zip(added, counts, strict=True):
            whole = _joined(history[-1], m) if history else None
            if whole is not None:
                self._join(history[-1], m, whole)
            else:
                if m.role == "user":
                    self._turn_compactions = 0  # a new turn begins
                if m.role != "system":
                    self._nonsystem += 1
                else:
                    system = True
                running.append(running[-1] + n)
                history.append(m)
                view.append(m)
            if logged:
                self._logged += 1
        if system:  # with tools, OpenAI folds them into the first system turn
            self._overhead = self._request_overhead()

    def _join(self, prev: Message, item: Message, whole: Message) -> None:
        """``item`` joins ``prev``, the history's last message, as ``whole``.

        In the view, it joins the form of ``prev`` there (a strategy may
        have rewritten it) when that is the view's last message; a view
        without it (a repair removed reasoning that stood alone) gets
        ``whole``, the exchange as it now stands.
        """
        self._history[-1] = whole
        view, running = self._view, self._running
        last = view[-1] if view else None
        add = whole
        if last is not None and last.id == prev.id:
            grown = whole if last is prev else _joined(last, item)
            if grown is not None:
                k = len(view) - 1
                view[k] = grown
                running[-1] = running[-2] + self._counter.message(grown)
                # What was checked, or sent as it is, ends before it now.
                self._valid_upto = min(self._valid_upto, k)
                if self._stable is not None:
                    self._stable = min(self._stable, k)
                return
            add = item  # the view's form of it takes no more parts
        self._nonsystem += 1
        running.append(running[-1] + self._counter.message(add))
        view.append(add)

    def _restore(self, messages: Iterable[Any], history: Iterable[Any] | None) -> None:
        self._append_only("set_messages")
        view = self._checked(messages, "messages")
        log = view if history is None else self._checked(history, "history")
        self._history = list(log)
        self._set_view(view)
        self._rearm_all()
        self._emit("restore", messages=len(view), history=len(log))

    def _clear(self) -> None:
        self._append_only("clear")
        self._history = []
        self._set_view([])
        self._rearm_all()
        self._turn_compactions = 0
        self._refused_at = None
        self._emit("clear")

    def _update_system(self, text: str) -> None:
        if not isinstance(text, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
            raise ContextWindowError(
                f"update_system takes the prompt's text, got {type(text).__name__}"
            )
        # A stored log is append-only: the prompt changes in the view alone.
        # The new view is stored before anything here changes, so a failed
        # write leaves the manager as it was.
        self._catch_up()
        view = _with_system(self._view, text)
        self._save_view(None, view)
        if self._persist is None:
            self._history = _with_system(self._history, text)
        self._set_view(view)
        self._emit("system", length=len(text))

    def _set_view(self, view: Sequence[Message]) -> None:
        """Any change but appends: what was kept incrementally is computed again.

        Usage may have fallen (a forced compaction, a shorter system prompt,
        another tokenizer): the thresholds above it are re-armed at once, and
        the store told outside ``prepare`` (which tells it when it ends).
        """
        self._edits += 1
        self._view = list(view)
        self._nonsystem = sum(1 for m in self._view if m.role != "system")
        self._running = list(self._counter.running(self._view))
        self._overhead = self._request_overhead()
        self._valid_upto = 0
        self._stable = None
        self._writer.reset()
        if self._rearm(self._count()) and self._mark is None:
            self._save_state()

    def _rearm(self, tokens: int) -> bool:
        """Re-arm the thresholds above usage at ``tokens``; whether any was.

        Each fires again on its next crossing; one whose handlers were cut
        short (one raised) starts over then.
        """
        if not self._fired and not self._ran:
            return False
        usage = self._percent(tokens)
        above = {t for t in (*self._fired, *self._ran) if usage < t}
        if not above:
            return False
        self._fired -= above
        for t in above:
            self._ran.pop(t, None)
        return True

    def _rearm_all(self) -> None:
        """Re-arm every threshold (a restored or cleared conversation).

        Not inside ``prepare`` (a handler restoring the conversation): the
        crossing under way goes on from where it is, and the thresholds
        above the new usage are re-armed as any change re-arms them.
        """
        if self._mark is None:
            self._fired.clear()
            self._ran.clear()

    # -- the store ---------------------------------------------------------------------

    def _open(self, store: Store | str | None, cid: str | None) -> Persistence | None:
        if store is None:
            if cid is not None:
                raise ContextWindowError("conversation_id needs a store")
            return None
        if isinstance(store, str):
            url, in_url = split_url(store)
            store, cid = open_store(url), cid or in_url
        elif not all(
            callable(getattr(store, m, None)) for m in ("append", "load", "save_view")
        ):
            raise ArgumentTypeError(
                "store", shown(store), "a Store or a store URL (sqlite:///chats.db)"
            )
        key = self._counter.counts_key
        return Persistence(store, cid or new_id(), key)

    def _resume(self, resumed: Resumed) -> None:
        log = resumed.log
        for m, n in zip(log, resumed.tokens, strict=True):
            if n is not None:
                self._counter.learn(m, n)
        # As the manager that saved the view had it, then what came after
        # it, taken in as pushes are (a pushed item may join a message).
        cut = resumed.view_version
        self._history = _grouped(log[:cut])
        self._logged = cut
        self._set_view(resumed.view or ())
        self._extend(log[cut:], [self._counter.message(m) for m in log[cut:]])
        state = resumed.state
        fired = state.get("fired")
        numbers = cast("list[object]", fired) if isinstance(fired, list) else []
        self._fired = {t for t in numbers if isinstance(t, int | float)}
        turn = state.get("turn_compactions", 0)
        self._turn_compactions = turn if isinstance(turn, int) else 0
        refused = state.get("refused_at")
        self._refused_at = refused if isinstance(refused, int) else None
        self._emit("restore", messages=len(self._view), history=len(self._history))

    def _append_only(self, what: str) -> None:
        if self._persist is not None:
            raise StoreError(
                f"{what}: conversation {self._persist.conversation_id!r} is stored, "
                "and its log is append-only; start another conversation, or "
                "delete this one with store.delete(conversation_id)"
            )

    def _save_view(
        self, report: Mapping[str, Any] | None, view: Sequence[Message]
    ) -> None:
        """Keep ``view`` in the store (with summaries' pointers), if there is one.

        Callers store a new view before making it theirs: when the store
        fails, the manager keeps the view it had.
        """
        if self._persist is None:
            return
        sources: dict[str, list[str]] = {}
        for m in view:
            found = summary_sources(m)
            if found:
                sources[m.id] = list(found)
        self._persist.save_view(view, sources, report or {})

    def _save_state(self) -> None:
        if self._persist is not None:
            self._persist.save_state(
                {
                    "fired": sorted(self._fired),
                    "turn_compactions": self._turn_compactions,
                    "refused_at": self._refused_at,
                }
            )

    def _request_overhead(self) -> int:
        return self._counter.messages(self._view, tools=self._tools) - self._running[-1]

    def _count(self) -> int:
        return self._running[-1] + self._overhead

    def _limit(self) -> int:
        """What a request may take: this ``prepare``'s budget, else ``budget``'s."""
        return self._hard_limit(None) if self._usable is None else self._usable

    def _percent(self, tokens: int) -> float:
        limit = self._limit()
        return 100.0 * tokens / limit if limit else 100.0

    def _hard_limit(self, reserve: int | None) -> int:
        if reserve is not None:
            self._check_reserve(reserve)
        limit = self._window - (self._reserve if reserve is None else reserve)
        if self._counter.tokenizer.exact:
            return limit
        return self._calibration.limit(limit)

    def _check_reserve(self, reserve: object) -> None:
        check_int(reserve, "reserve", low=0, high=self._window - 1)

    def _budget(self, limit: int, query: str | None = None) -> Budget:
        markers = tuple(self._markers)
        return Budget(
            max(limit, 0), self._counter, self._tools, markers, query, self._history
        )

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
            # What the event reports has happened (a push is stored, a view
            # installed): a subscriber's error must not make the operation
            # look failed, or a retry would do it twice. It is logged.
            try:
                callback(event)
            except Exception:
                logger.exception(
                    "subscriber %s raised on a %s event (the %s happened; "
                    "the error is only logged)",
                    getattr(callback, "__qualname__", type(callback).__name__),
                    kind,
                    kind,
                )


def _with_system(seq: Sequence[Message], text: str) -> list[Message]:
    """``seq`` with its first system message's text replaced, or one added first."""
    out = list(seq)
    k = next((i for i, m in enumerate(out) if m.role == "system"), None)
    if k is None:
        out.insert(0, Message.system(text))
    else:
        out[k] = Message.system(text, id=out[k].id, meta=out[k].meta)
    return out


def checked_messages(
    items: object, name: str, hint: Provider | None = None
) -> list[Message]:
    """``items`` as neutral messages (any shape the edge reads), in a new list.

    Raises:
        InvalidMessageError: Something is no message; the error names
            ``name[i].field``.
    """
    return list(coerce_messages(items, hint=hint, name=name).messages)


def _strategy_checked(strategy: Strategy | str | None) -> Strategy | None:
    return None if strategy is None else as_strategy(strategy)


def _threshold_checked(threshold: object, name: str = "threshold") -> float:
    return check_percent(threshold, name)  # type: ignore[no-any-return]  # checked


def _not_in(pushed: list[Message], stored: Sequence[Message]) -> list[Message]:
    """``pushed`` less the messages ``stored`` holds already (each matched once).

    ``stored`` is what an interrupted push wrote. A message pushed again
    after it is that one, by its content and ``meta``, whatever its id: one
    read from a provider's dict gets a new id at each push.
    """
    if not stored:
        return pushed
    left = list(stored)
    out: list[Message] = []
    for m in pushed:
        k = next((i for i, s in enumerate(left) if s == m and s.meta == m.meta), None)
        if k is None:
            out.append(m)
        else:
            del left[k]
    return out


def _responses_items(m: Message) -> list[object] | None:
    """The Responses items an assistant or tool message was read from, if any."""
    if m.role not in ("assistant", "tool"):
        return None
    kept = m.meta.get("responses")
    if not isinstance(kept, Mapping):
        return None
    items = cast("Mapping[str, Any]", kept).get("items")
    return cast("list[object]", items) if isinstance(items, list) else None


def _joined(prev: Message, m: Message) -> Message | None:
    """``prev`` and ``m`` as one message, when ``m`` continues ``prev``'s group.

    ``from_responses`` reads consecutive reasoning, assistant message and
    tool call items as one assistant message, and consecutive tool outputs
    as one tool message; a push of one item reads it alone. Joined here, a
    conversation pushed an item at a time is the one read as a list: the
    reasoning stays with the call it goes with, and parallel calls with
    their outputs, as the provider requires.

    Example:
        >>> from contextwindow.formats import from_responses
        >>> rs = {"type": "reasoning", "id": "rs_1", "summary": []}
        >>> fc = {"type": "function_call", "id": "fc_1", "call_id": "c1",
        ...       "name": "f", "arguments": "{}"}
        >>> [one] = from_responses([rs, fc])
        >>> both = _joined(from_responses([rs])[0], from_responses([fc])[0])
        >>> (both == one, both.meta == one.meta)
        (True, True)
    """
    if (
        m.role != prev.role
        or m.agent != prev.agent
        or m.name != prev.name
        or m.pinned != prev.pinned
        or set(m.meta) != {"responses"}  # nothing else a join would lose
    ):
        return None
    had, more = _responses_items(prev), _responses_items(m)
    if had is None or more is None:
        return None
    kept = cast("Mapping[str, Any]", prev.meta["responses"])
    meta = {**prev.meta, "responses": {**kept, "items": [*had, *more]}}
    return replace(prev, parts=prev.parts + m.parts, meta=meta)


def _grouped(log: Iterable[Message]) -> list[Message]:
    """``log`` with each message that continues the one before joined to it."""
    out: list[Message] = []
    for m in log:
        whole = _joined(out[-1], m) if out else None
        if whole is None:
            out.append(m)
        else:
            out[-1] = whole
    return out


_SIGNATURES: dict[object, inspect.Signature] = {}


def _signature(init: object) -> inspect.Signature:
    """The signature of a class's ``__init__`` (kept: it is read at every call)."""
    found = _SIGNATURES.get(init)
    if found is None:
        found = _SIGNATURES[init] = inspect.signature(cast("Callable[..., Any]", init))
    return found


def _call_error(
    name: str,
    signature: inspect.Signature,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
) -> ArgumentTypeError:
    """The error for a call of class ``name`` that ``signature`` does not take.

    A text is shown by its type alone: a keyword the class does not take may
    be an API key (``api_key=...``), which no error shows.
    """

    def show(value: object) -> str:
        return shown(value, secret=isinstance(value, str))

    params = list(signature.parameters.values())[1:]  # less ``self``
    keywords = [p.name for p in params if p.kind != p.POSITIONAL_ONLY]
    by_position = [
        p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    for key, value in kwargs.items():
        if key not in keywords:
            close = difflib.get_close_matches(key, keywords, n=3)
            hint = (
                f"did you mean {', '.join(close)}?"
                if close
                else f"it takes {', '.join(keywords)}"
            )
            return ArgumentTypeError(
                key, f"{key}={show(value)}", f"a keyword argument {name}() takes", hint
            )
        if key in by_position[: len(args)]:
            return ArgumentTypeError(
                key,
                f"{show(args[by_position.index(key)])} by position and "
                f"{key}={show(value)}",
                "one value",
            )
    after = [p.name for p in params if p.kind == p.KEYWORD_ONLY]
    extra = args[len(by_position) :]
    guess = ", ".join(f"{k}={show(v)}" for k, v in zip(after, extra, strict=False))
    return ArgumentTypeError(
        f"{name}() arguments",
        f"{len(args)} positional",
        f"at most {len(by_position)} by position ({', '.join(by_position)}); "
        "the others by keyword",
        f"e.g. {guess}" if guess else "",
    )
