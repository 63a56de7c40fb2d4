"""What a manager holds: its configuration, its history and view, its events.

Contract:

- The history is the log of every message pushed, in order. Only
  ``set_messages`` and ``clear``, called by name, replace it; ``update_system``
  replaces the system prompt in place. Nothing else touches it.
- The view is what is sent. Pushes append to both; every other change to the
  view goes through ``_set_view``, which computes again what is kept
  incrementally: running token totals, what a request adds to its messages,
  how far the view is known valid, and the writer's output.
- Configuration is checked when it is given: bad values raise
  ``ContextWindowError`` naming the value.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast

from contextwindow._args import (
    as_model,
    as_strategy,
    as_tokenizer,
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


class State:
    """Everything a manager knows, and the changes that are not compaction."""

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
        info = as_model(model)
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
        _summarizer_checked(summarizer)
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
        self._usable = token_limit - reserve
        """What a request may take in the ``prepare`` under way (or the next):
        the window less the reserve; usage percentages are of this."""
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
            self._counter = TokenCounter(chosen, self._provider)
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
        self._ran: dict[float, int] = {}
        """For a threshold whose handlers are part way through (one raised):
        how many of them have returned."""
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
        """What a class needs before the configuration is read (its lock)."""

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
        """What a request may take: the window less the reserve.

        Thresholds and the compaction policy's watermarks are percentages of
        this, so a 90 % handler fires at 90 % of what may be sent, whatever
        the reserve.

        Example:
            >>> from contextwindow import ContextManager
            >>> ContextManager("gpt-4o", token_limit=10_000).budget  # 10,000 - 2,500
            7500
        """
        return self._usable

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
        self._counter = TokenCounter(chosen, self._provider)
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

        Raises:
            ArgumentError: A threshold outside (0, 100], or a handler that
                is not callable.

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
            self._handlers.setdefault(t, []).append(handler)
            return handler

        return register

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

    def _extend(self, added: Sequence[Message], counts: Sequence[int]) -> None:
        self._edits += 1
        running = self._running
        system = False
        for m, n in zip(added, counts, strict=True):
            if m.role == "user":
                self._turn_compactions = 0  # a new turn begins
            if m.role != "system":
                self._nonsystem += 1
            else:
                system = True
            running.append(running[-1] + n)
        self._history.extend(added)
        self._view.extend(added)
        if system:  # with tools, OpenAI folds them into the first system turn
            self._overhead = self._request_overhead()

    def _restore(self, messages: Iterable[Any], history: Iterable[Any] | None) -> None:
        self._append_only("set_messages")
        view = self._checked(messages, "messages")
        log = view if history is None else self._checked(history, "history")
        self._history = list(log)
        self._set_view(view)
        self._fired.clear()
        self._ran.clear()
        self._emit("restore", messages=len(view), history=len(log))

    def _clear(self) -> None:
        self._append_only("clear")
        self._history = []
        self._set_view([])
        self._fired.clear()
        self._ran.clear()
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
        view = _with_system(self._view, text)
        self._save_view(None, view)
        if self._persist is None:
            self._history = _with_system(self._history, text)
        self._set_view(view)
        self._emit("system", length=len(text))

    def _set_view(self, view: Sequence[Message]) -> None:
        """Any change but appends: what was kept incrementally is computed again."""
        self._edits += 1
        self._view = list(view)
        self._nonsystem = sum(1 for m in self._view if m.role != "system")
        self._running = list(self._counter.running(self._view))
        self._overhead = self._request_overhead()
        self._valid_upto = 0
        self._stable = None
        self._writer.reset()

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
        key = f"{self._counter.tokenizer.name}/{self._provider}"
        return Persistence(store, cid or new_id(), key)

    def _resume(self, resumed: Resumed) -> None:
        for m, n in zip(resumed.history, resumed.tokens, strict=True):
            if n is not None:
                self._counter.learn(m, n)
        self._history = list(resumed.history)
        self._set_view(resumed.view)
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

    def _percent(self, tokens: int) -> float:
        return 100.0 * tokens / self._usable if self._usable else 100.0

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


def _summarizer_checked(summarizer: object) -> None:
    check_summarizer(summarizer)
