"""The OpenAI Agents SDK: a model input filter, a handoff filter and a Session.

Contract:

- ``ContextWindow(model=...)`` is both a ``call_model_input_filter`` and the
  ``RunHooks`` that go with it (``run_config=RunConfig(
  call_model_input_filter=window), hooks=window``): every model call's input
  items are fitted into the window, the agent's instructions and tool
  definitions counted and never dropped, through a ``ContextManager`` per
  conversation (compaction is incremental, the prefix sent stays stable).
  The SDK's own history (``result.to_input_list()``, a session) keeps every
  item; only the request is compacted. ``on_llm_end`` feeds each response's
  ``usage.input_tokens`` to the ``Calibration``, paired with the request
  the same run sent (the filter and the hook of one run share its asyncio
  task's context, so concurrent runs sharing one window never pair one's
  usage with another's request).
- ``handoff_filter(limit=..., model=...)`` is a handoff ``input_filter``:
  the receiving agent starts from a budgeted slice of the conversation
  (``contextwindow.handoff``: what is relevant to the task, the task last,
  the call awaiting its result left out); the items of the handing-off turn
  stay in the run's history (``new_items``). The SDK makes what an input
  filter returns the run's history from then on: what the slice left out is
  gone from ``result.to_input_list()`` too (no field of ``HandoffInputData``
  keeps it). Keep the full log elsewhere: a session
  (``ContextWindowSession.history()``), or the items you passed in.
- ``ContextWindowSession(session_id, store=..., model=...)`` is a
  ``Session`` backed by this project's stores (SQLite by default; a
  ``postgresql://`` or ``redis://`` URL, or any ``Store``): ``add_items``
  appends to the conversation's full log, ``get_items`` returns the
  compacted view, fitted into the window. ``pop_item`` and
  ``clear_session`` rewrite the stored conversation, as the SDK asks.
- Items are converted by ``contextwindow.formats`` (Responses items):
  ``to_responses(from_responses(items)) == items``.
- The SDK is imported when this module is; without it, importing fails
  with the ``pip install 'contextwindow[openai-agents]'`` to run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import Any, cast

try:
    from agents import Agent, HandoffInputData, RunContextWrapper, RunHooks
    from agents.items import ModelResponse, TResponseInputItem
    from agents.run import CallModelData, ModelInputData
except ImportError as exc:  # pragma: no cover -- the extra is installed in CI
    raise ImportError(
        "contextwindow.integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'contextwindow[openai-agents]'"
    ) from exc

from contextwindow._args import check_str
from contextwindow.formats import from_responses, to_responses
from contextwindow.integrations._fitting import Conversations
from contextwindow.manager import AsyncContextManager
from contextwindow.messages import Message, Provider, ToolSpec
from contextwindow.models import ModelInfo
from contextwindow.multiagent import handoff
from contextwindow.store.base import Store
from contextwindow.store.urls import open_store
from contextwindow.strategies.base import Report, Strategy
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.calibration import Calibration

__all__ = [
    "ContextWindow",
    "ContextWindowSession",
    "from_agents",
    "handoff_filter",
    "to_agents",
]


def from_agents(items: str | Sequence[Any]) -> list[Message]:
    """Neutral messages for the SDK's input items (a string is one user turn).

    Example:
        >>> items = [{"role": "user", "content": "List files."},
        ...          {"type": "function_call", "call_id": "c1", "name": "ls",
        ...           "arguments": "{}"},
        ...          {"type": "function_call_output", "call_id": "c1",
        ...           "output": "a.txt"}]
        >>> [m.role for m in from_agents(items)]
        ['user', 'assistant', 'tool']
        >>> to_agents(from_agents(items)) == items
        True
    """
    if isinstance(items, str):
        return [Message.user(items)]
    return from_responses([_plain(i) for i in items])


def to_agents(messages: Sequence[Message]) -> list[TResponseInputItem]:
    """The SDK's input items for neutral messages (``to_responses``)."""
    return cast("list[TResponseInputItem]", to_responses(list(messages)))


def _plain(item: Any) -> Any:
    """An item as a dict (the SDK may hand over its pydantic models)."""
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        return dump(exclude_unset=True)
    return item


_REQUEST: ContextVar[object] = ContextVar("contextwindow_agents_request")
"""The request the filter last fitted in this context (one run's task).

The SDK hands the filter no run of its own (``CallModelData.context`` is the
user's context, often shared or ``None``), but it calls the filter and then
``on_llm_end`` from the run's task: what the filter sets here, the run's
hooks see, and no other run does."""


def _tool_specs(agent: Any) -> list[ToolSpec]:
    specs: list[ToolSpec] = []
    for tool in getattr(agent, "tools", ()) or ():
        schema: Any = getattr(tool, "params_json_schema", None)
        name = getattr(tool, "name", None)
        if isinstance(name, str):
            specs.append(
                ToolSpec(name, getattr(tool, "description", "") or "", schema or {})
            )
    for h in getattr(agent, "handoffs", ()) or ():
        name = getattr(h, "tool_name", None) or getattr(h, "name", None)
        if isinstance(name, str):
            description = getattr(h, "tool_description", None) or ""
            schema = getattr(h, "input_json_schema", None) or {}
            specs.append(ToolSpec(name, description, schema))
    return specs


class ContextWindow(RunHooks[Any]):
    """A ``call_model_input_filter`` and the hooks feeding its calibration.

    Args:
        model: The model (a name or a ``ModelInfo``): its window, tokenizer
            and provider are the defaults.
        limit: The window in tokens (default: the model's).
        reserve: Tokens kept free for the reply (default: the model's output
            limit, at most a quarter of the window).
        strategy: How to make room (default: ``fit``'s), or a spec.
        provider: Whose rules and framing apply (default: ``responses``).
        tokenizer: Counts text (default: the model's).
        calibration: Learns from the usage each response reports (default:
            a new ``Calibration``).

    Example:
        >>> window = ContextWindow("gpt-4o", limit=200, reserve=0)
        >>> items = [{"role": "user", "content": f"note {i} " * 20}
        ...          for i in range(10)]
        >>> data = CallModelData(ModelInputData(items, "Be brief."),
        ...                      Agent(name="a"), None)
        >>> sent = window(data)
        >>> (len(sent.input) < 10, sent.instructions, window.last_report.fits)
        (True, 'Be brief.', True)
    """

    def __init__(
        self,
        model: str | ModelInfo | None = None,
        *,
        limit: int | None = None,
        reserve: int | None = None,
        strategy: Strategy | str | None = None,
        provider: Provider | None = None,
        tokenizer: Tokenizer | str | None = None,
        calibration: Calibration | None = None,
    ) -> None:
        self._fit = Conversations(
            model,
            limit=limit,
            reserve=reserve,
            strategy=strategy,
            provider=provider or "responses",
            tokenizer=tokenizer,
            calibration=calibration,
        )

    @property
    def calibration(self) -> Calibration:
        """What the reported usage taught of the tokenizer's error."""
        return self._fit.calibration

    @property
    def last_report(self) -> Report | None:
        """What the last request's compaction changed (``None``: none yet)."""
        last = self._fit.last
        if last is None:
            return None
        return last.report or Report(last.tokens, last.tokens, last.budget)

    @property
    def last_tokens(self) -> int | None:
        """The last request's count: items, instructions and tools."""
        return self._fit.last_tokens

    def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        """Fit the model input (the ``call_model_input_filter``)."""
        model_data = data.model_data
        neutral = from_agents(model_data.input)
        extra = self._fit.extra_tokens(model_data.instructions, _tool_specs(data.agent))
        request = object()  # this request, named to its run's on_llm_end
        _REQUEST.set(request)
        prepared = self._fit.prepare(neutral, extra, run=request)
        return ModelInputData(
            input=to_agents(prepared.conversation),
            instructions=model_data.instructions,
        )

    async def on_llm_end(
        self,
        context: RunContextWrapper[Any],
        agent: Agent[Any],
        response: ModelResponse,
    ) -> None:
        """Feed the reported input tokens to the calibration."""
        self._fit.observe(response.usage, run=_REQUEST.get(None))


def handoff_filter(
    *,
    limit: int,
    model: str | ModelInfo | None = None,
    tokenizer: Tokenizer | None = None,
    strategy: Strategy | None = None,
) -> Callable[[HandoffInputData], HandoffInputData]:
    """A handoff ``input_filter`` giving the receiving agent a budgeted slice.

    The task is the conversation's last user message; the rest is the
    parent's history, cut to what is relevant to it (``handoff``).

    Warning:
        The SDK replaces the run's input history with the ``input_history``
        an input filter returns, so the cut is permanent: what the slice
        left out is missing from ``result.to_input_list()`` and from every
        turn built on it. To keep the whole conversation, run with a
        session (``ContextWindowSession`` keeps the full log,
        ``history()``) or keep your own list of the items you sent, and
        build the next turn's input from that.

    Args:
        limit: Most tokens the receiving agent's first input may take.
        model: The receiving agent's model (tokenizer and provider).
        tokenizer: A tokenizer instead of the model's.
        strategy: How the history is cut (default: ``handoff``'s).

    Example:
        >>> from agents import HandoffInputData
        >>> data = HandoffInputData(
        ...     input_history=tuple({"role": "user", "content": f"fact {i} " * 30}
        ...                         for i in range(8)) + (
        ...         {"role": "user", "content": "Book the flight."},),
        ...     pre_handoff_items=(), new_items=())
        >>> out = handoff_filter(limit=120, model="gpt-4o")(data)
        >>> len(out.input_history) < 9, out.input_history[-1]["content"]
        (True, 'Book the flight.')
    """

    def apply(data: HandoffInputData) -> HandoffInputData:
        history = data.input_history
        items: list[Any] = [history] if isinstance(history, str) else list(history)
        for run_item in (*data.pre_handoff_items, *data.new_items):
            items.append(run_item.to_input_item())
        neutral = from_agents(
            [{"role": "user", "content": i} if isinstance(i, str) else i for i in items]
        )
        at = max(
            (i for i, m in enumerate(neutral) if m.role == "user" and m.text),
            default=None,
        )
        if at is None:
            return data
        task = neutral[at].text
        parent = neutral[:at] + neutral[at + 1 :]
        fitted = handoff(
            parent,
            task,
            limit=limit,
            model=model,
            tokenizer=tokenizer,
            strategy=strategy,
        )
        return data.clone(
            input_history=tuple(to_agents(fitted.messages)),
            pre_handoff_items=(),
            input_items=(),
        )

    return apply


DEFAULT_STORE = "sqlite:///contextwindow_sessions.db"
"""Where a session is kept when no store is named."""


class ContextWindowSession:
    """A ``Session`` keeping the full log in a store and returning the compacted view.

    Args:
        session_id: The conversation's id in the store.
        store: A ``Store`` or a URL (``sqlite:///chats.db``,
            ``postgresql://...``, ``redis://...``; default: an SQLite file
            ``contextwindow_sessions.db`` in the working directory).
        model: The model (window, tokenizer, provider).
        limit: The window in tokens (default: the model's).
        reserve: Tokens kept free for the reply and the agent's instructions.
        strategy: How to make room (default: ``fit``'s), or a spec.
        tokenizer: Counts text (default: the model's).

    Example:
        >>> import asyncio, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "s.db")
        >>> s = ContextWindowSession("chat-1", store=f"sqlite:///{path}",
        ...                          model="gpt-4o", limit=150, reserve=0)
        >>> async def main():
        ...     for i in range(8):
        ...         await s.add_items([{"role": "user", "content": f"q{i} " * 20},
        ...                            {"role": "assistant", "content": "ok"}])
        ...     return len(await s.get_items()), len(await s.history())
        >>> asyncio.run(main())  # the view sent, the full log kept
        (2, 16)
    """

    session_settings: Any = None

    def __init__(
        self,
        session_id: str,
        *,
        store: Store | str | None = None,
        model: str | ModelInfo | None = None,
        limit: int | None = None,
        reserve: int | None = None,
        strategy: Strategy | str | None = None,
        tokenizer: Tokenizer | str | None = None,
    ) -> None:
        self.session_id: str = check_str(session_id, "session_id", empty=False)
        if store is None or isinstance(store, str):
            self._store: Store = open_store(store or DEFAULT_STORE)
        else:
            self._store = store
        self._config: dict[str, Any] = {
            "token_limit": limit,
            "reserve": reserve,
            "strategy": "default" if strategy is None else strategy,
            "tokenizer": tokenizer,
            "provider": "responses",
        }
        self._model = model
        self._manager: AsyncContextManager | None = None
        self._lock = asyncio.Lock()

    @property
    def store(self) -> Store:
        """Where the session is kept."""
        return self._store

    def _open(self) -> AsyncContextManager:
        if self._manager is None:
            self._manager = AsyncContextManager(
                self._model,
                store=self._store,
                conversation_id=self.session_id,
                **self._config,
            )
        return self._manager

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The compacted view, fitted into the window (the latest ``limit`` items).

        ``limit`` cuts the view by count, as the SDK's own sessions do: the
        latest ``limit`` items exactly, even where that starts inside a tool
        exchange (a ``function_call_output`` whose call is cut). The SDK
        relies on the exact count: a run with ``SessionSettings(limit=...)``
        prunes such an output itself, and its resumable writes compare the
        last ``limit`` items against digests of what it wrote. Without
        ``limit`` (what a run asks by default) the view is whole and valid.
        """
        async with self._lock:
            manager = self._open()
            if not manager.history:
                return []
            prepared = await manager.prepare()
            items = to_agents(prepared.conversation)
        return items if limit is None else items[-limit:] if limit > 0 else []

    async def history(self) -> list[TResponseInputItem]:
        """Every item added, in order (the full log)."""
        async with self._lock:
            return to_agents(self._open().history)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` to the log (and to the view)."""
        if not items:
            return
        async with self._lock:
            await self._open().push_many(from_agents(items))

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the most recent item (the stored log is rewritten)."""
        async with self._lock:
            items = to_agents(self._open().history)
            if not items:
                return None
            last = items.pop()
            await self._rewrite(items)
            return last

    async def clear_session(self) -> None:
        """Forget the session: its stored conversation is deleted."""
        async with self._lock:
            await self._rewrite([])

    async def _rewrite(self, items: list[TResponseInputItem]) -> None:
        self._store.delete(self.session_id)
        self._manager = None
        if items:
            await self._open().push_many(from_agents(items))
