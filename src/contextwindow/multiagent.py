"""Context for teams of agents: one shared log, and each agent's slice of it.

Contract:

- ``SharedContext`` keeps the whole history of a team, in the order added,
  each message tagged with the agent that wrote or received it (``agent``;
  ``None`` is shared by every agent). ``full_history()`` is that log; nothing
  in it is ever changed or dropped.
- ``slice_for(agent, task)`` is what that agent is sent, in order: its own
  system messages; one user message saying what the other agents have been
  doing (the first ``SUBJECT_LENGTH`` characters of each one's latest tasks,
  or of its latest reply when it has no task; or, with a ``Summarizer``, a
  summary of each one's messages, rolled forward as they grow); another
  agent's system prompt is never shown, nor, without a summarizer, its tool
  output; its own past messages and the shared ones, in order; the task,
  last. It goes through ``fit`` with the task as the query: within the
  budget (by default the window less ``reply_reserve``, the room ``fit``
  leaves for the reply), valid for the provider (Anthropic's first user
  turn included), what the other agents did and the task kept whole, the
  agent's own history cut down to what the task needs (``SLICE_STRATEGY``)
  or ``BudgetError``.
- ``handoff(parent, task, limit=...)`` gives a sub-agent the part of a parent's
  history relevant to its task, within a budget: the units ``SelectRelevant``
  ranks highest and the parent's last exchanges, not all, not nothing.
- ``fold_result(parent, result, agent=...)`` returns the parent's history with
  the sub-agent's result folded in as one unit: it answers the parent's
  pending call (Claude Code's ``Task``) when there is one, else it is a new
  ``delegate`` tool exchange naming the agent and its task. Inputs are never
  mutated.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from contextwindow._args import (
    as_model,
    as_strategy,
    as_tokenizer,
    check_int,
    check_str,
    check_summarizer,
)
from contextwindow.errors import (
    ContextWindowError,
    InvalidMessageError,
)
from contextwindow.fitting import fit, provider_of, reply_reserve
from contextwindow.formats._coerce import NEUTRAL, Shape, coerce_messages
from contextwindow.messages import (
    Message,
    Part,
    Provider,
    ToolCall,
    check_provider,
    new_id,
    units,
)
from contextwindow.models import ModelInfo, get_model, get_tokenizer
from contextwindow.strategies.base import Fitted, Strategy
from contextwindow.strategies.pipeline import Pipeline
from contextwindow.strategies.relevant import SelectRelevant
from contextwindow.strategies.tool_results import Deduplicate, TruncateToolResults
from contextwindow.summarizers.base import Summarizer, summary_text
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.counting import TokenCounter

__all__ = [
    "DELEGATE_TOOL",
    "SLICE_STRATEGY",
    "SUBJECT_LENGTH",
    "SharedContext",
    "fold_result",
    "handoff",
]

SUBJECT_LENGTH = 80
"""Characters of a task shown as its subject in another agent's slice."""
SUBJECTS_SHOWN = 3
"""An agent's latest tasks listed in the others' slices (older ones counted)."""
SUMMARY_TOKENS = 200
"""What a summary of another agent's work is asked to stay within."""
ACTIVITY_HEADING = "What the other agents have been doing:"
"""The first line of the message listing the other agents' work."""
NO_TASK = "(no task yet)"
"""What another agent is shown doing when it has no task and wrote no reply."""
NO_ANSWER = "(the sub-agent wrote no answer)"
"""The result folded in for a sub-agent run with no assistant text."""
DELEGATE_TOOL = "delegate"
"""The tool name of the exchange ``fold_result`` adds when no call is pending."""

SLICE_STRATEGY: Strategy = Pipeline(
    Deduplicate(), TruncateToolResults(), SelectRelevant()
)
"""How an agent's own history is cut to its budget: repeated and long tool
outputs shrink first, then the units least relevant to the task go (``fit``
finishes with ``DropOldest`` if need be)."""


def subject(text: str, length: int = SUBJECT_LENGTH) -> str:
    r"""The first ``length`` characters of ``text``, whitespace collapsed.

    Example:
        >>> subject("Find   the flaky test\nin CI", 12)
        'Find the fla…'
        >>> subject("Short one")
        'Short one'
    """
    flat = " ".join(text.split())
    return flat if len(flat) <= length else flat[:length].rstrip() + "…"


class SharedContext:
    """The shared history of a team of agents, and each agent's slice of it.

    Args:
        messages: History to start from (each keeps its ``agent``).
        model: The model slices are for by default: its window is the
            default budget, its tokenizer and provider the defaults.
        tokenizer: Counts tokens (a ``TokenCounter`` is reused as it is).
        provider: Whose rules slices follow (default: the model's).
        summarizer: Summarises the other agents' work; without one, each is
            shown by the subjects of its latest tasks.
        strategy: How an agent's own history is cut (``SLICE_STRATEGY``).

    Raises:
        ContextWindowError: An unknown provider.
        InvalidMessageError: A starting message that is not a ``Message``.

    Warning:
        Adding is safe from several threads; slices are not (they share the
        context's ``TokenCounter``, which is not thread-safe): take them from
        one thread, or give each thread its own context.

    Example:
        >>> from contextwindow.testing import FakeTokenizer
        >>> team = SharedContext(tokenizer=FakeTokenizer())
        >>> team.add_message(role="user", content="Collect flight prices for May",
        ...                  agent="researcher")  # doctest: +ELLIPSIS
        Message(role='user', ...)
        >>> _ = team.add_message(role="assistant", content="Lisbon 120 EUR",
        ...                      agent="researcher")
        >>> view = team.slice_for("writer", "Draft the trip email", budget=100)
        >>> for m in view.messages:
        ...     print(m.role, "|", m.text)
        user | What the other agents have been doing:
        - researcher: Collect flight prices for May
        user | Draft the trip email
    """

    def __init__(
        self,
        messages: Iterable[Any] = (),
        *,
        model: str | ModelInfo | None = None,
        tokenizer: Tokenizer | TokenCounter | None = None,
        provider: Provider | None = None,
        summarizer: Summarizer | None = None,
        strategy: Strategy | None = None,
    ) -> None:
        if provider is not None:
            check_provider(provider)
        self._info = as_model(model)
        self._provider: Provider | None = provider
        if isinstance(tokenizer, TokenCounter):
            self._counter = tokenizer
        else:
            wire = provider or (
                provider_of(self._info) if self._info is not None else "openai"
            )
            chosen = (
                get_tokenizer(self._info)
                if tokenizer is None
                else as_tokenizer(tokenizer)
            )
            self._counter = TokenCounter(chosen, wire, model=self._info)
        self._counters: dict[str, TokenCounter] = {}
        check_summarizer(summarizer)
        self._summarizer = summarizer
        self._summaries: dict[str, tuple[int, str]] = {}
        self._strategy = SLICE_STRATEGY if strategy is None else as_strategy(strategy)
        self._log: list[Message] = []
        self._lock = threading.Lock()
        self._shape: Shape = NEUTRAL
        self._log.extend(self._read(messages, "messages"))

    def _read(self, data: object, name: str) -> list[Message]:
        """Messages in any shape the edge reads; the shape is remembered."""
        read = coerce_messages(data, hint=self._counter.provider, name=name)
        if read.shape.kind != "neutral":
            self._shape = Shape(read.shape.kind)
        return read.messages

    # -- the log -------------------------------------------------------------------

    def add(self, message: Message | Any, *, agent: str | None = None) -> Message:
        """Append a message; with ``agent``, tagged as that agent's.

        Args:
            message: A ``Message``, or one message in a provider's shape (a
                dict or an SDK object; an Anthropic user turn holding tool
                results and text gives two messages).
            agent: The agent it belongs to.

        Returns:
            The message as stored (the same id); the last one, when the
            message read as several.

        Raises:
            InvalidMessageError: ``message`` is no message, or is malformed.

        Example:
            >>> team = SharedContext(tokenizer=None)
            >>> team.add({"role": "user", "content": "Plan it"}, agent="planner").agent
            'planner'
        """
        read = (
            [message]
            if message.__class__ is Message
            else self._read(message, "message")
        )
        if not read:
            raise InvalidMessageError("message", "holds no message")
        if agent is not None:
            read = [m if m.agent == agent else replace(m, agent=agent) for m in read]
        with self._lock:
            self._log.extend(read)
        return read[-1]

    def add_message(
        self,
        *,
        role: str,
        content: str | Iterable[Part],
        agent: str | None = None,
    ) -> Message:
        """Append a ``system``, ``user`` or ``assistant`` message (Chorus's form).

        Raises:
            InvalidMessageError: Another role (tool results go through
                ``add(Message.tool(...))``).
        """
        if role == "system":
            if not isinstance(content, str):
                raise InvalidMessageError("content", "a system message takes text")
            message = Message.system(content)
        elif role == "user":
            message = Message.user(content)
        elif role == "assistant":
            message = Message.assistant(content)
        else:
            raise InvalidMessageError(
                "role", f"expected system, user or assistant, got {role!r}"
            )
        return self.add(message, agent=agent)

    def full_history(self) -> tuple[Message, ...]:
        """Every message, in the order added."""
        with self._lock:
            return tuple(self._log)

    def history(self, agent: str | None) -> tuple[Message, ...]:
        """The messages tagged ``agent`` (``None``: the shared ones), in order.

        Raises:
            ArgumentTypeError: ``agent`` is neither a ``str`` nor ``None``.
        """
        check_str(agent, "agent", none=True)
        return tuple(m for m in self.full_history() if m.agent == agent)

    def agents(self) -> tuple[str, ...]:
        """Every agent with a message, in the order each first appears."""
        return tuple(dict.fromkeys(m.agent for m in self.full_history() if m.agent))

    # -- slices --------------------------------------------------------------------

    def activity(self, agent: str | None = None) -> str:
        """What the agents other than ``agent`` have been doing ("" for none).

        Example:
            >>> team = SharedContext(tokenizer=None)
            >>> _ = team.add(Message.user("Fix the failing login test"), agent="coder")
            >>> _ = team.add(Message.user("Review PR 12"), agent="reviewer")
            >>> print(team.activity("reviewer"))
            What the other agents have been doing:
            - coder: Fix the failing login test
        """
        check_str(agent, "agent", none=True)
        # The log grouped by agent in one pass (in the order each first
        # appears), not read again for each agent: a team of thousands.
        groups: dict[str, list[Message]] = {}
        for m in self.full_history():
            if m.agent:
                mine = groups.setdefault(m.agent, [])
                if m.role != "system":
                    mine.append(m)
        lines = [
            f"- {other}: {self._work(other, mine)}"
            for other, mine in groups.items()
            if other != agent
        ]
        return "\n".join([ACTIVITY_HEADING, *lines]) if lines else ""

    def slice_for(
        self,
        agent: str,
        task: str,
        budget: int | None = None,
        model: str | ModelInfo | None = None,
    ) -> Fitted:
        """What ``agent`` is sent for ``task`` (see the module's contract).

        Args:
            agent: The agent the slice is for.
            task: What it is asked to do now (the final user message; not
                blank).
            budget: Most tokens the slice may take (default: the model's
                window less the room left for the reply, ``reply_reserve``,
                as ``fit(model=...)`` leaves it).
            model: The agent's model, when not the context's: its tokenizer,
                provider and window apply.

        Returns:
            The slice and the report of what was cut from the agent's history.

        Raises:
            BudgetError: The other agents' work and the task alone exceed the
                budget.
            ContextWindowError: No budget and no model to take a window from.
            ArgumentError: ``task`` is not a ``str`` or is blank, naming it.
        """
        check_str(agent, "agent")
        # A blank task would be removed as blank: the slice would end on an
        # old message, with nothing asked.
        check_str(task, "task", empty=False)
        check_int(budget, "budget", low=0, none=True)
        info = as_model(model) or self._info
        counter = self._counter_for(model) if model is not None else self._counter
        if budget is not None:
            limit, reserve = budget, 0
        elif info is not None:
            limit = info.context_window
            reserve = reply_reserve(info, limit)
        else:
            raise ContextWindowError("slice_for needs a budget or a model")
        log = self.full_history()
        own = [m for m in log if m.agent in (agent, None)]
        system = [m for m in own if m.role == "system"]
        rest = [m for m in own if m.role != "system"]
        others = self.activity(agent)
        shown = [Message.user(others, pinned=True)] if others else []
        conv = [*system, *shown, *rest, Message.user(task, agent=agent)]
        fitted = fit(
            conv,
            limit=limit,
            reserve=reserve,
            strategy=self._strategy,
            tokenizer=counter,
            query=task,
        )
        return fitted if self._shape is NEUTRAL else replace(fitted, shape=self._shape)

    def _counter_for(self, model: str | ModelInfo) -> TokenCounter:
        """A counter per model, kept, so its cache stays warm between slices."""
        info = get_model(model) if isinstance(model, str) else model
        counter = self._counters.get(info.name)
        if counter is None:
            wire: Provider = self._provider or provider_of(info)
            counter = self._counters[info.name] = TokenCounter(
                get_tokenizer(info), wire, model=info
            )
        return counter

    def _work(self, agent: str, mine: Sequence[Message]) -> str:
        """One line on what ``agent`` has done: task subjects, or a summary.

        ``mine``: its messages but its system prompts (its own, not something
        it did: never shown). Without a summarizer, an agent with no task is
        shown by its latest reply, never by a tool's output (a file, a secret
        it read).
        """
        if self._summarizer is not None:
            done, text = self._summaries.get(agent, (0, ""))
            if done < len(mine):
                text = summary_text(
                    self._summarizer,
                    self._summarizer.summarize(
                        mine[done:], previous=text or None, max_tokens=SUMMARY_TOKENS
                    ),
                )
                self._summaries[agent] = (len(mine), text)
            return " ".join(text.split())
        tasks = [m.text for m in mine if m.role == "user" and m.text.strip()]
        if not tasks:
            said = [m.text for m in mine if m.role == "assistant" and m.text.strip()]
            return subject(said[-1]) if said else NO_TASK
        shown = "; ".join(subject(t) for t in tasks[-SUBJECTS_SHOWN:])
        earlier = len(tasks) - SUBJECTS_SHOWN
        return f"{shown} (and {earlier} earlier)" if earlier > 0 else shown


# -- hand-offs -----------------------------------------------------------------------


def handoff(
    parent: Iterable[Any],
    task: str,
    *,
    limit: int,
    model: str | ModelInfo | None = None,
    tokenizer: Tokenizer | TokenCounter | None = None,
    system: str | None = None,
    strategy: Strategy | None = None,
) -> Fitted:
    """What a sub-agent starts from: the parent's history relevant to ``task``.

    The parent's system messages stay the parent's (pass the sub-agent's own
    as ``system``); a call the parent made and no result answers yet (the
    one spawning the sub-agent) is left out, as ``ensure_valid`` does. The
    rest is fitted into ``limit`` with ``task`` as the query, and the task
    comes last.

    Args:
        parent: The parent agent's conversation.
        task: What the sub-agent is asked to do.
        limit: Most tokens the sub-agent's first request may take.
        model: The sub-agent's model (tokenizer and provider).
        tokenizer: A tokenizer or ``TokenCounter`` instead of the model's.
        system: The sub-agent's system prompt, first, if any.
        strategy: How the parent's history is cut
            (default: ``SelectRelevant(keep_recent=2)``).

    Returns:
        The sub-agent's conversation and the report of what was left out.

    Raises:
        BudgetError: The system prompt and the task alone exceed ``limit``.
        ArgumentError: ``task`` is not a ``str`` or is blank, naming it.

    Example:
        >>> from contextwindow.testing import FakeTokenizer
        >>> parent = [Message.user("Ship the release"),
        ...           Message.assistant("The changelog lists 3 fixes."),
        ...           Message.user("The docs build fails on a broken link."),
        ...           Message.assistant("Noted, I'll delegate the docs link.")]
        >>> sub = handoff(parent, "Fix the broken docs link", limit=40,
        ...               tokenizer=FakeTokenizer())
        >>> [m.text for m in sub.messages]
        ['The docs build fails on a broken link.', "Noted, I'll delegate the docs link.", 'Fix the broken docs link']
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    check_str(task, "task", empty=False)  # a blank one would be removed as blank
    check_str(system, "system", none=True)
    check_int(limit, "limit", low=0)
    read = coerce_messages(parent, name="parent")
    conv = [m for m in read.messages if m.role != "system"]
    if system is not None:
        conv.insert(0, Message.system(system))
    conv.append(Message.user(task))
    chosen = SelectRelevant(keep_recent=2) if strategy is None else strategy
    fitted = fit(
        conv, model=model, limit=limit, strategy=chosen, tokenizer=tokenizer, query=task
    )
    return fitted if read.shape is NEUTRAL else replace(fitted, shape=read.shape)


def fold_result(
    parent: Iterable[Any],
    result: str | Iterable[Any],
    *,
    agent: str,
    task: str | None = None,
    call_id: str | None = None,
) -> list[Message]:
    """The parent's history with a sub-agent's result folded in as one unit.

    Args:
        parent: The parent's conversation (not changed).
        result: The sub-agent's answer, or its messages (the last assistant
            text among them is the answer).
        agent: The sub-agent's name.
        task: What it was asked (named in a new ``delegate`` call).
        call_id: The pending call the result answers (default: the first
            call of the parent's last exchange that no result answers yet).

    Returns:
        A new list: ``parent`` and the result, as the tool result of the
        pending call, or as a new ``delegate`` exchange.

    Raises:
        ContextWindowError: ``call_id`` names no pending call.

    Example:
        >>> parent = [Message.user("Plan the trip")]
        >>> done = fold_result(parent, "Hotels booked: Alfama, 3 nights.",
        ...                    agent="booker", task="Book hotels")
        >>> [(m.role, m.text) for m in done[1:]]
        [('assistant', ''), ('tool', 'Hotels booked: Alfama, 3 nights.')]
        >>> done[1].tool_calls[0].input
        {'agent': 'booker', 'task': 'Book hotels'}
        >>> len(units(done))  # the task, then one exchange
        2
    """
    check_str(agent, "agent")
    check_str(task, "task", none=True)
    check_str(call_id, "call_id", none=True)
    parent = coerce_messages(parent, name="parent").messages
    answer = (
        result
        if isinstance(result, str)
        else _final_answer(coerce_messages(result, name="result").messages)
    )
    pending = _pending(parent)
    if call_id is not None and call_id not in pending:
        raise ContextWindowError(
            f"call_id {call_id!r} is not pending in the parent's last exchange"
        )
    target = call_id or next(iter(pending), None)
    out = list(parent)
    if target is not None:
        name = pending[target]
        out.append(Message.tool(target, answer, name=name, agent=out[-1].agent))
        return out
    fresh = f"{DELEGATE_TOOL}_{new_id()[:16]}"
    arguments = json.dumps({"agent": agent, "task": task}, ensure_ascii=False)
    # The parent's, as an answered call is: untagged, it would be every agent's.
    owner = next((m.agent for m in reversed(parent) if m.agent is not None), None)
    call = ToolCall(fresh, DELEGATE_TOOL, arguments)
    out.append(Message.assistant(tool_calls=[call], agent=owner))
    out.append(Message.tool(fresh, answer, name=DELEGATE_TOOL, agent=owner))
    return out


def _pending(parent: Sequence[Message]) -> dict[str, str]:
    """The calls of the parent's last exchange no result answers: id -> name."""
    if not parent:
        return {}
    last = units(parent)[-1]
    if last.kind != "tool_exchange" or not last.unanswered:
        return {}
    calls = parent[last.start].tool_calls
    return {calls[k].id: calls[k].name for k in last.unanswered}


def _final_answer(messages: Sequence[Message]) -> str:
    """The last assistant text of a sub-agent's run (``NO_ANSWER`` if none)."""
    for m in reversed(messages):
        if m.role == "assistant" and m.text.strip():
            return m.text
    return NO_ANSWER
