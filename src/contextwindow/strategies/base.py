"""What every strategy shares: the budget, the report, pinning, validation.

Contract:

- A strategy is any callable ``strategy(messages, budget, /) -> Fitted``; the
  ``Strategy`` protocol names it. Strategies are pure: the input is never
  mutated, the output depends on the input and the budget alone, nothing is
  printed or stored.
- Incremental: a strategy may keep what it decided in ``budget.memo`` (the
  counter's bounded memo, ``contextwindow._memo``), keyed by itself and
  ``budget.settings``, so that a call on the same conversation grown by a
  few messages re-decides only where something changed. What it keeps
  changes how fast the answer comes, never the answer: a re-fit equals a fit
  from scratch, messages, ids and report (``tests/properties/
  test_incremental.py``). The helpers for it live here: ``finish`` skips
  what the memo knows is valid and remembers each output's tokens by
  identity; ``note_shared``/``shares`` say how much of a stage's input is the
  very objects it saw last; ``note_aligned`` lets a pipeline keep a stage's
  change indices as they are. ``strategies._rescan`` is the incremental scan
  the tool-result stages share.
- A strategy applies its own rule (``TruncateToolResults`` truncates every old
  result, ``DropOldest`` drops until the budget is met). Whether the budget is
  met is for ``Pipeline`` and ``fit`` to decide: they run nothing more once it
  is. ``Report.fits`` says whether a stage's output fits.
- Strategies work on whole units (``contextwindow.messages.units``): a tool
  exchange is kept or dropped as one.
- Pinned messages are never removed or changed by any strategy: system
  messages, messages flagged ``pinned``, messages whose text holds one of the
  budget's protected markers, the final message (and, when a repair would
  drop that one, the last message the provider will see), for Anthropic the
  task and the opening message of a tool loop that opened with thinking and
  still runs (``validity.thinking_turn``: the loop must still open with
  that thinking block, unmodified), and summary messages, which only
  ``Summarize`` rolls into a new summary. A unit holding a pinned message
  is kept whole. The final message and the thinking turn are pinned for
  their place (``final_indices``), the others for themselves
  (``pinned_one``).
- Every built-in strategy starts in ``strategy_input``: a direct call with
  a budget that is not a ``Budget``, or messages that are not ``Message``
  objects, is refused naming them, and a generator is read; the
  conversation a pipeline gives its stages passes in constant time.
- Every strategy ends in ``finish``: its output goes through
  ``ensure_valid`` for the budget's provider, and every change, repairs
  included, is in the report with the tokens it cost or saved, so that
  ``report.tokens_before - sum(c.saved for c in report.changes)`` equals
  ``report.tokens_after``.
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, cast, get_args

from contextwindow._args import (
    check_bool,
    check_int,
    check_messages,
    check_str,
    check_strs,
    shown,
)
from contextwindow._memo import Memo
from contextwindow._prefix import common_prefix, same_objects
from contextwindow.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    ContextWindowError,
)
from contextwindow.formats._coerce import NEUTRAL, Shape, coerce_tools
from contextwindow.messages import (
    COMPARED,
    Image,
    Message,
    Provider,
    Text,
    ToolCall,
    ToolSpec,
    Unit,
    check_provider,
    units,
)
from contextwindow.summarizers.record import SUMMARY_KEY, is_summary
from contextwindow.tokens.counting import TokenCounter
from contextwindow.validity import (
    CONTINUED_ID,
    Valid,
    ensure_valid,
    neutral_ensure_valid,
    neutral_problems,
    thinking_turn,
)

__all__ = [
    "CUT_STEP",
    "REWRITE_STEP",
    "Budget",
    "Change",
    "ChangeKind",
    "Fitted",
    "Report",
    "RunTally",
    "Strategy",
    "aligned",
    "check_budget",
    "checked_history",
    "describe",
    "describe_run",
    "finish",
    "first_system",
    "known_valid",
    "note_aligned",
    "note_shared",
    "note_valid",
    "opens_well",
    "pinned_flags",
    "pinned_one",
    "shared_length",
    "shares",
    "stage_name",
    "step_end",
    "step_size",
    "strategy_input",
    "trusted",
    "unit_start",
    "verify",
]

ChangeKind = Literal[
    "dropped",
    "truncated",
    "cleared",
    "deduplicated",
    "compacted",
    "stale",
    "collapsed",
    "summarized",
    "repaired",
    "rewritten",
    "added",
]
"""What a change did to the messages it touched (``rewritten`` and ``added``
come from a caller's own edit, such as a manager's ``replace_messages``;
``compacted`` loses nothing, ``stale`` marks a superseded file read,
``collapsed`` makes a run of cut tool exchanges one line)."""


@dataclass(frozen=True, slots=True)
class Budget:
    """How many tokens a conversation may take, and how to count them.

    Args:
        limit: Most tokens the request may take: messages, framing, reply
            priming and tool schemas, as ``counter.messages`` counts them.
        counter: Counts tokens for the provider; its cache makes re-fitting a
            grown conversation cost only the new messages.
        tools: Tool schemas sent with the request (they count).
        protected: Markers: a message whose text holds one is pinned (a
            string alone is one marker).
        query: What the next request is about, for strategies that keep
            what is relevant to it (``None``: the final message's text).
        history: The conversation as its owner holds it, nothing cut (what
            ``fit`` was given; a manager's history): where a stage finds the
            original of a message an earlier stage rewrote
            (``handles.originals_of``). Not a setting: no decision is keyed
            by it. Its messages are checked where a stage reads it
            (``checked_history``), not here: ``fit`` and a manager make a
            budget for every request, with a history they checked.

    Raises:
        ContextWindowError: A negative limit, an empty marker (every
            message would hold it), or a ``history`` that is no sequence
            (a ``str`` or ``bytes`` neither).

    Example:
        >>> from contextwindow.testing import FakeTokenizer
        >>> budget = Budget(100, TokenCounter(FakeTokenizer()))
        >>> (budget.provider, budget.count([Message.user("two words")]))
        ('openai', 9)
    """

    limit: int
    counter: TokenCounter
    tools: tuple[ToolSpec, ...] = ()
    protected: tuple[str, ...] = ()
    query: str | None = None
    history: Sequence[Message] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        check_int(self.limit, "limit", low=0)
        if not isinstance(self.counter, TokenCounter):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
            raise ArgumentTypeError("counter", shown(self.counter), "a TokenCounter")
        object.__setattr__(self, "tools", coerce_tools(self.tools))
        # A lone string is one marker, not a marker per character.
        markers = check_strs(self.protected, "protected")
        if "" in markers:
            raise ArgumentValueError(
                "protected", shown(markers), "markers that are not empty"
            )
        object.__setattr__(self, "protected", markers)
        check_str(self.query, "query", none=True)
        history = self.history
        if history is not None and (
            not isinstance(history, Sequence)  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
            or isinstance(history, str | bytes | bytearray)
        ):
            raise ArgumentTypeError(
                "history", shown(history), "a sequence of Message objects"
            )

    @property
    def provider(self) -> Provider:
        """The provider the output must be valid for (the counter's)."""
        return self.counter.provider

    @property
    def memo(self) -> Memo:
        """Where strategies keep what they decided last (the counter's memo).

        A strategy keys its entry by itself and ``settings``: a call with
        the same counter, the same settings and the conversation grown by a
        few messages then re-decides only the tail (see ``contextwindow._memo``).
        """
        return self.counter.memo

    @property
    def settings(self) -> tuple[object, ...]:
        """What, besides the conversation, a strategy's decisions depend on."""
        return (self.limit, *self.rules)

    @property
    def rules(self) -> tuple[object, ...]:
        """``settings`` but the limit: for a memo entry any limit can resume."""
        return (self.tools, self.protected, self.query)

    def count(self, messages: Sequence[Message]) -> int:
        """Tokens of a request holding ``messages`` (and the tools).

        A conversation a strategy returned (``finish``) is known by identity:
        its tokens are the report's, not counted again.
        """
        for seq, total in _totals(self):
            if seq is messages:
                return total
        return self.counter.messages(messages, tools=self.tools)

    def know(self, messages: tuple[Message, ...], tokens: int) -> None:
        """Remember that ``messages`` (immutable) take ``tokens`` with these tools."""
        known = _totals(self)
        known.insert(0, (messages, tokens))
        del known[_TOTALS_KEPT:]

    def fits(self, messages: Sequence[Message]) -> bool:
        """Whether ``messages`` fit within ``limit``."""
        return self.count(messages) <= self.limit


_TOTALS_KEPT = 8
"""Conversations whose request tokens a budget's memo remembers by identity."""


def checked_history(budget: Budget) -> Sequence[Message] | None:
    """``budget.history``, its items checked (``InvalidMessageError``: ``history[i]``).

    For a stage about to read it: one class test per message, at C speed.
    """
    history = budget.history
    return None if history is None else check_messages(history, "history")


def strategy_input(messages: object, budget: object, /) -> Sequence[Message]:
    """A strategy's arguments, checked at entry: its messages as a sequence.

    Every built-in strategy's ``__call__`` starts here. ``budget`` must be a
    ``Budget``; ``messages`` any iterable of ``Message`` objects (a
    generator is read into a tuple; a list or a tuple is returned as it is).
    A tuple this budget's counter knows valid (one ``finish`` returned: what
    a pipeline gives its stages, what ``fit`` runs) is taken in constant
    time; any other conversation costs one class test per message, at C
    speed (about 0.1 ms for 10,000): only a direct call pays.

    Raises:
        ArgumentTypeError: ``budget`` is not a ``Budget``, or ``messages``
            is no iterable (a ``str`` neither).
        InvalidMessageError: An item is not a ``Message`` (``messages[i]``).

    Example:
        >>> from contextwindow.testing import FakeTokenizer
        >>> budget = Budget(100, TokenCounter(FakeTokenizer()))
        >>> strategy_input(iter([Message.user("hi")]), budget)[0].text
        'hi'
        >>> strategy_input([Message.user("hi")], 100)
        Traceback (most recent call last):
        ...
        contextwindow.errors.ArgumentTypeError: budget: expected a Budget, got 100
    """
    checked = check_budget(budget)
    given: object = messages  # narrowed below, ``messages`` itself is not
    if type(given) is tuple and known_valid(
        checked, cast("tuple[Message, ...]", given)
    ):
        return cast("tuple[Message, ...]", given)
    return check_messages(messages)


def check_budget(budget: object) -> Budget:
    """``budget`` if it is a ``Budget`` (``ArgumentTypeError`` naming it)."""
    if type(budget) is not Budget and not isinstance(budget, Budget):
        raise ArgumentTypeError("budget", shown(budget), "a Budget")
    return budget


def _totals(budget: Budget) -> list[tuple[tuple[Message, ...], int]]:
    key = ("contextwindow.totals", budget.tools)
    found = budget.memo.get(key)
    if isinstance(found, list):
        return found  # pyright: ignore[reportUnknownVariableType]  # only this module puts it
    fresh: list[tuple[tuple[Message, ...], int]] = []
    budget.memo.put(key, fresh)
    return fresh


@dataclass(frozen=True, slots=True)
class Change:
    """One change a strategy made: to a message, a unit, or a run of units.

    Example:
        >>> c = Change("dropped", "DropOldest", ("m3",), 3, 120, 0, "user message")
        >>> c.saved
        120
    """

    kind: ChangeKind
    """``dropped``, ``truncated``, ``cleared``, ``deduplicated``, ``compacted``,
    ``stale``, ``collapsed``, ``summarized``, ``repaired``, ``rewritten`` or
    ``added``."""
    stage: str
    """The strategy that made it (``ensure_valid`` for repairs)."""
    ids: tuple[str, ...]
    """Ids of the messages touched; a changed message keeps its id."""
    index: int
    """Index of the first message touched, in the input of ``fit`` (or of the
    strategy called on its own); for a message not in that input (one a repair
    inserted), the index of the input message it went before."""
    tokens_before: int
    """Tokens of the touched messages before the change."""
    tokens_after: int
    """Tokens of what replaced them (0 when dropped)."""
    what: str
    """What was touched and why, e.g. ``tool exchange: read_file (3 messages)``."""
    units: int = 1
    """How many units the change covers (a run of dropped units is one change)."""

    @property
    def saved(self) -> int:
        """Tokens saved (negative when a repair added a message)."""
        return self.tokens_before - self.tokens_after

    def at(self, index: int, tokens_after: int | None = None) -> Change:
        """This change at ``index`` (and leaving ``tokens_after``, when given).

        As ``replace`` makes it, without its cost: a change is moved for
        every run of a long conversation.

        Example:
            >>> c = Change("dropped", "DropOldest", ("m3",), 3, 120, 0, "user message")
            >>> c.at(1) == replace(c, index=1), c.at(3, 20).saved
            (True, 100)
        """
        after = self.tokens_after if tokens_after is None else tokens_after
        return Change(
            self.kind,
            self.stage,
            self.ids,
            index,
            self.tokens_before,
            after,
            self.what,
            self.units,
        )

    def to_dict(self) -> dict[str, Any]:
        """The change as JSON-ready data.

        Example:
            >>> c = Change("dropped", "DropOldest", ("m3",), 3, 120, 0, "user message")
            >>> c.to_dict()["saved"]
            120
        """
        return {
            "kind": self.kind,
            "stage": self.stage,
            "index": self.index,
            "ids": list(self.ids),
            "units": self.units,
            "what": self.what,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "saved": self.saved,
        }


@dataclass(frozen=True, slots=True)
class Report:
    """Every change made to fit a conversation, and the totals.

    Example:
        >>> r = Report(1000, 400, 500, (
        ...     Change("dropped", "DropOldest", ("m1",), 1, 600, 0, "user message"),))
        >>> (r.fits, r.saved, r.totals())
        (True, 600, {'dropped': (1, 600)})
    """

    tokens_before: int
    """Tokens of the request before any change."""
    tokens_after: int
    """Tokens of the request after every change."""
    limit: int
    """The budget's limit."""
    changes: tuple[Change, ...] = ()
    """Every change, in the order made."""
    stages: tuple[str, ...] = field(default=())
    """The strategies that ran, in order (a pipeline stops once the budget is met)."""
    warnings: tuple[str, ...] = field(default=())
    """What went wrong without stopping the fit, e.g. a stage skipped because
    its summarizer failed (``Pipeline`` goes on with the next stage)."""

    @property
    def fits(self) -> bool:
        """Whether the output fits the budget."""
        return self.tokens_after <= self.limit

    @property
    def saved(self) -> int:
        """Tokens saved in all."""
        return self.tokens_before - self.tokens_after

    def totals(self) -> dict[ChangeKind, tuple[int, int]]:
        """For each kind of change: how many, and the tokens they saved."""
        out: dict[ChangeKind, tuple[int, int]] = {}
        for c in self.changes:
            n, saved = out.get(c.kind, (0, 0))
            out[c.kind] = (n + 1, saved + c.saved)
        return out

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data: figures, totals and every change.

        Example:
            >>> Report(1000, 400, 500).to_dict()["saved"]
            600
        """
        return {
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "limit": self.limit,
            "saved": self.saved,
            "fits": self.fits,
            "stages": list(self.stages),
            "warnings": list(self.warnings),
            "totals": {
                k: {"changes": n, "saved": saved}
                for k, (n, saved) in self.totals().items()
            },
            "changes": [c.to_dict() for c in self.changes],
        }

    def then(self, later: Report) -> Report:
        """This report followed by a later stage's: changes and stages joined."""
        return Report(
            self.tokens_before,
            later.tokens_after,
            later.limit,
            self.changes + later.changes,
            self.stages + later.stages,
            self.warnings + later.warnings,
        )


@dataclass(frozen=True, slots=True)
class Fitted:
    """A conversation after a strategy, and the report of what changed.

    Example:
        >>> from contextwindow.testing import FakeTokenizer
        >>> budget = Budget(50, TokenCounter(FakeTokenizer()))
        >>> conv = [Message.user("hi")]
        >>> fitted = finish("Noop", conv, conv, [], budget)
        >>> (len(fitted.messages), fitted.report.fits, fitted.report.changes)
        (1, True, ())
    """

    messages: tuple[Message, ...]
    """The conversation, valid for the budget's provider."""
    report: Report
    """What changed, and the tokens before and after."""
    shape: Shape = field(default=NEUTRAL, compare=False, repr=False)
    """The shape the input came in (``as_input`` writes the output so)."""

    def as_input(self) -> Any:
        """The fitted conversation in the shape the input came in.

        OpenAI dicts give a list of OpenAI dicts; Responses items a list of
        items; Anthropic dicts a ``{"system", "messages"}`` body (its system
        prompt is not a message); a request body the same body, its other
        keys kept; ``Message`` objects a list of them.

        Example:
            >>> from contextwindow import fit
            >>> from contextwindow.testing import FakeTokenizer
            >>> fitted = fit([{"role": "user", "content": "hi"}], limit=100,
            ...              tokenizer=FakeTokenizer())
            >>> fitted.as_input()
            [{'role': 'user', 'content': 'hi'}]
        """
        return self.shape.write(self.messages)

    def to(self, provider: Provider) -> Any:
        """The fitted conversation in ``provider``'s shape (as ``as_input`` writes).

        Repaired first by ``ensure_valid`` for ``provider``, when it is not the
        provider the conversation was fitted for.

        Example:
            >>> from contextwindow import fit
            >>> from contextwindow.testing import FakeTokenizer
            >>> fitted = fit([Message.system("Be brief."), Message.user("hi")],
            ...              limit=100, tokenizer=FakeTokenizer())
            >>> fitted.to("anthropic")
            {'system': 'Be brief.', 'messages': [{'role': 'user', 'content': 'hi'}]}
        """
        check_provider(provider)
        return Shape(provider).write(ensure_valid(self.messages, provider).messages)


class Strategy(Protocol):
    """Anything that fits a conversation: ``strategy(messages, budget) -> Fitted``.

    Example:
        >>> def keep_all(messages, budget, /):
        ...     return finish("keep_all", messages, messages, [], budget)
        >>> from contextwindow.testing import FakeTokenizer
        >>> budget = Budget(5, TokenCounter(FakeTokenizer()))
        >>> keep_all([Message.user("a b c d e f")], budget).report.fits
        False
    """

    def __call__(self, messages: Sequence[Message], budget: Budget, /) -> Fitted:
        """Return the fitted conversation and its report."""
        ...


CUT_STEP = 0.05
"""Where a cut from the oldest stops moves in steps of this share of the
budget (``step_end``): a summary's, a drop's, the collapse of runs."""

REWRITE_STEP = 0.01
"""The step of rewrites that lose what they cut (truncating, clearing a
result): a smaller one, since each step cut is text the model no longer
reads (at 5 %, the default pipeline kept 9 points fewer of the Claude Code
sessions' numbers at headroom-ai's output size)."""


def step_end(position: int, budget: Budget, share: float = CUT_STEP) -> int:
    """Where the step of ``share`` of the budget holding token ``position`` ends.

    A strategy cutting from the oldest until the budget is met cuts on to
    there (what starts before it goes too): the cut is then a function of
    the conversation that stays put while it grows by less than a step, so
    a re-fit finds the same output up to the new messages (and resumes from
    it), and a provider's prompt cache over that output keeps serving.
    ``position`` counts tokens from the conversation's start (``running``);
    ``share``: the step's share of the budget.

    Example:
        >>> from contextwindow import TokenCounter
        >>> from contextwindow.testing import FakeTokenizer
        >>> budget = Budget(1000, TokenCounter(FakeTokenizer()))
        >>> step_end(0, budget), step_end(49, budget), step_end(50, budget)
        (50, 50, 100)
    """
    step = step_size(budget, share)
    return (position // step + 1) * step


def step_size(budget: Budget, share: float = CUT_STEP) -> int:
    """Tokens in a step of ``share`` of the budget (at least 1)."""
    return max(1, int(budget.limit * share))


def stage_name(strategy: object) -> str:
    """The name a strategy goes by in reports: its class or function name."""
    if isinstance(strategy, type):
        return strategy.__name__
    name = getattr(strategy, "__name__", None)
    return name if isinstance(name, str) else type(strategy).__name__


# -- pinning -------------------------------------------------------------------------


def pinned_flags(
    messages: Sequence[Message],
    protected: Iterable[str] = (),
    provider: Provider | None = None,
    *,
    summaries: bool = True,
) -> list[bool]:
    """For each message, whether it is pinned (see the module's contract).

    Args:
        messages: The conversation.
        protected: Markers: a message whose text holds one is pinned (a
            string alone is one marker; the ``CONTINUED`` placeholder turn a
            repair inserts is never pinned by one).
        provider: When given, the final message that ``ensure_valid`` keeps
            for this provider is pinned too: the last message may be one it
            drops (an empty reply, say), and then the turn before it is the
            final one the provider sees. For Anthropic, so is the thinking
            turn of the tool loop the conversation ends in
            (``final_indices``).
        summaries: Whether summary messages (``summarizers.is_summary``) are
            pinned: for every strategy but ``Summarize``, which rolls them
            forward.

    Example:
        >>> conv = [Message.system("s"), Message.user("KEEP: id 7"),
        ...         Message.user("x", pinned=True), Message.user("y"),
        ...         Message.user("z")]
        >>> pinned_flags(conv, ["KEEP:"])
        [True, True, True, False, True]
        >>> pinned_flags([Message.user("q"), Message.assistant("")], (), "openai")
        [True, True]
    """
    # A budget's markers are a tuple of str already: the common case is free.
    markers: tuple[str, ...]
    given: object = protected  # narrowed below, ``protected`` itself is not
    if type(given) is tuple and all(
        type(k) is str for k in cast("tuple[object, ...]", given)
    ):
        markers = cast("tuple[str, ...]", given)
    else:
        markers = check_strs(protected, "protected")
    if summaries is not True and summaries is not False:
        check_bool(summaries, "summaries")
    flags = [m.pinned or m.role == "system" for m in messages]
    if summaries:
        for i, m in enumerate(messages):
            # The key test first: it is all most messages cost.
            if SUMMARY_KEY in m.meta and is_summary(m):
                flags[i] = True
    if markers:
        for i, m in enumerate(messages):
            # The placeholder turn is ours: a marker in its text pins nothing.
            if not flags[i] and m.id != CONTINUED_ID:
                text = m.text  # text parts and tool results, as markers see them
                flags[i] = any(mark in text for mark in markers)
    for i in final_indices(messages, provider):
        flags[i] = True
    return flags


def pinned_one(m: Message, markers: tuple[str, ...], *, summaries: bool = True) -> bool:
    """Whether ``m`` is pinned for itself, as ``pinned_flags`` decides it.

    Without the final message's rule, which depends on its place.

    Example:
        >>> pinned_one(Message.user("KEEP: id 7"), ("KEEP:",))
        True
    """
    if m.pinned or m.role == "system":
        return True
    if summaries and SUMMARY_KEY in m.meta and is_summary(m):
        return True
    return bool(markers) and m.id != CONTINUED_ID and any(k in m.text for k in markers)


def final_indices(
    messages: Sequence[Message], provider: Provider | None = None
) -> tuple[int, ...]:
    """The messages pinned for their place: the final one and, with ``provider``, more.

    With ``provider``: the last message ``ensure_valid`` does not drop for
    it, when that is not the final message itself; and the messages of
    ``validity.thinking_turn`` (Anthropic: while a tool loop that opened
    with a thinking block runs, its task and its opening message). The final
    message comes first; callers test membership, or take the least.

    Example:
        >>> from contextwindow.messages import Thinking
        >>> conv = [Message.user("q"), Message.assistant("a"), Message.assistant("")]
        >>> final_indices(conv), final_indices(conv, "openai")
        ((2,), (2, 1))
        >>> loop = [Message.user("Fix it."),
        ...         Message.assistant([Thinking("Plan.", signature="c2ln")],
        ...                           tool_calls=[ToolCall("t1", "read")]),
        ...         Message.tool("t1", "..."),
        ...         Message.assistant(tool_calls=[ToolCall("t2", "test")]),
        ...         Message.tool("t2", "ok")]
        >>> final_indices(loop, "anthropic"), final_indices(loop, "openai")
        ((4, 0, 1), (4,))
    """
    if not messages:
        return ()
    ends = _ends(messages, provider)
    turn = thinking_turn(messages, provider)
    if not turn:
        return ends
    return (*ends, *(i for i in turn if i not in ends))


def _ends(messages: Sequence[Message], provider: Provider | None) -> tuple[int, ...]:
    """The final message's index and, with ``provider``, the last one kept."""
    last = len(messages) - 1
    if provider is None or _surely_kept(messages[last]):
        return (last,)
    # Which of the last unit's messages a repair drops depends on that unit
    # alone (its pairing and each message's content): only it is checked,
    # unless the repair drops all of it.
    start = unit_start(messages, last)
    gone = {
        p.index
        for p in neutral_problems(messages, provider, start=start)
        if p.fix == "drop_message"
    }
    kept = next((i for i in range(last, start - 1, -1) if i not in gone), None)
    if kept is None:
        gone = {
            p.index
            for p in neutral_problems(messages, provider)
            if p.fix == "drop_message"
        }
        kept = next((i for i in range(last, -1, -1) if i not in gone), last)
    return (last,) if kept == last else (last, kept)


def _surely_kept(m: Message) -> bool:
    """Whether no repair can drop ``m`` (saves checking the whole conversation)."""
    if m.role == "system":
        return True
    return (
        m.role in ("user", "assistant")
        and not m.tool_calls
        and any(
            isinstance(p, Image) or (isinstance(p, Text) and p.text.strip())
            for p in m.parts
        )
    )


def pinned_units(
    messages: Sequence[Message],
    protected: Iterable[str] = (),
    provider: Provider | None = None,
) -> tuple[tuple[Unit, ...], list[bool]]:
    """The units of ``messages`` and, for each, whether any message in it is pinned."""
    flags = pinned_flags(messages, protected, provider)
    us = units(messages)
    return us, [
        flags[u.start] if u.stop - u.start == 1 else any(flags[u.start : u.stop])
        for u in us
    ]


def describe(messages: Sequence[Message], unit: Unit) -> str:
    """A short description of a unit, for reports.

    Example:
        >>> from contextwindow.messages import ToolCall
        >>> conv = [Message.assistant(tool_calls=[ToolCall("1", "ls")]),
        ...         Message.tool("1", "a.txt")]
        >>> describe(conv, units(conv)[0])
        'tool exchange: ls (2 messages)'
    """
    n = unit.stop - unit.start
    if unit.kind == "tool_exchange":
        names = ", ".join(
            dict.fromkeys(c.name for c in messages[unit.start].tool_calls)
        )
        return f"tool exchange: {names} ({n} messages)"
    if unit.kind == "orphan_results":
        return f"orphan tool results ({n} messages)"
    return f"{messages[unit.start].role} message"


def describe_run(messages: Sequence[Message], run: Sequence[Unit]) -> str:
    """A short description of consecutive units, for reports.

    Example:
        >>> from contextwindow.messages import ToolCall
        >>> conv = [Message.user("go"),
        ...         Message.assistant(tool_calls=[ToolCall("1", "ls")]),
        ...         Message.tool("1", "a.txt"), Message.assistant("done")]
        >>> describe_run(conv, units(conv))
        '3 units: 1 tool exchange (ls), 2 messages'
    """
    tally = RunTally()
    tally.extend(messages, run)
    return tally.text()


class RunTally:
    """What ``describe_run`` says of a run, gathered one unit at a time.

    A strategy that extends a run it reported before (one more unit dropped
    at its end) adds the new units instead of describing the run again.

    Example:
        >>> conv = [Message.user("a"), Message.assistant("b")]
        >>> tally = RunTally()
        >>> for u in units(conv):
        ...     tally.add(conv, u)
        >>> tally.text()
        '2 units: 2 messages'
    """

    __slots__ = ("exchanges", "first", "names", "orphans", "plain")

    def __init__(self) -> None:
        self.first = ""
        self.exchanges = 0
        self.plain = 0
        self.orphans = 0
        self.names: dict[str, None] = {}

    @property
    def units(self) -> int:
        """Units added."""
        return self.exchanges + self.plain + self.orphans

    def add(self, messages: Sequence[Message], unit: Unit) -> None:
        """Count ``unit`` (of ``messages``) into the run."""
        if not self.units:
            self.first = describe(messages, unit)
        if unit.kind == "tool_exchange":
            self.exchanges += 1
            if len(self.names) <= MAX_NAMES_SHOWN:  # the first few are enough
                self.names.update(
                    dict.fromkeys(c.name for c in messages[unit.start].tool_calls)
                )
        elif unit.kind == "message":
            self.plain += 1
        else:  # orphan results (a system unit is never in a run)
            self.orphans += 1

    def extend(self, messages: Sequence[Message], run: Sequence[Unit]) -> None:
        """``add`` each unit of ``run``, counted at C speed where it can be."""
        if not run:
            return
        if not self.units and len(run) == 1:
            # Said only of a run of one unit: a tally of more never is again.
            self.first = describe(messages, run[0])
        kinds = [u.kind for u in run]
        exchanges, plain = kinds.count("tool_exchange"), kinds.count("message")
        self.exchanges += exchanges
        self.plain += plain
        self.orphans += len(kinds) - exchanges - plain
        names = self.names
        if not exchanges or len(names) > MAX_NAMES_SHOWN:  # the first few are enough
            return
        for u in run:
            if u.kind == "tool_exchange":
                for part in messages[u.start].parts:
                    if isinstance(part, ToolCall):
                        names[part.name] = None
                if len(names) > MAX_NAMES_SHOWN:
                    break

    def copy(self) -> RunTally:
        """An independent copy."""
        out = RunTally()
        out.first, out.exchanges, out.plain, out.orphans = (
            self.first,
            self.exchanges,
            self.plain,
            self.orphans,
        )
        out.names = dict(self.names)
        return out

    def text(self) -> str:
        """The run's description, as ``describe_run`` gives it."""
        n = self.units
        if n == 1:
            return self.first
        parts: list[str] = []
        if self.exchanges:
            shown = ", ".join(list(self.names)[:MAX_NAMES_SHOWN])
            more = ", ..." if len(self.names) > MAX_NAMES_SHOWN else ""
            noun = "exchange" if self.exchanges == 1 else "exchanges"
            parts.append(f"{self.exchanges} tool {noun} ({shown}{more})")
        if self.plain:
            parts.append(f"{self.plain} message" + ("" if self.plain == 1 else "s"))
        if self.orphans:
            parts.append(
                f"{self.orphans} orphan result group"
                + ("" if self.orphans == 1 else "s")
            )
        return f"{n} units: {', '.join(parts)}"


MAX_NAMES_SHOWN = 4
"""Tool names a run's description lists before ``...``."""


# -- finishing -----------------------------------------------------------------------


def finish(
    stage: str,
    before: Sequence[Message],
    after: Iterable[Message],
    changes: Iterable[Change],
    budget: Budget,
    *,
    start: int = 0,
    counted: int | None = None,
    kept: bool = False,
    saved: int | None = None,
) -> Fitted:
    """Validate a strategy's output and build its report.

    Args:
        stage: The strategy's name, for the report.
        before: The strategy's input.
        after: Its output, before validation.
        changes: What it changed (indices into ``before``).
        budget: The budget (its provider decides validity).
        start: ``after[:start]`` is known valid and a unit starts there
            (see ``validity.problems``): only the rest is checked.
        counted: The request tokens of ``before``, when the caller knows
            them; those of the output then follow from the changes (they
            add up: a message's tokens do not depend on its neighbours), and
            nothing is counted again; with tools, only while the first system
            message stands (OpenAI's count of tools reads it).
        saved: With ``counted``: what ``changes`` save in all, when the
            caller knows it (else it is summed).
        kept: ``after`` is whole units of ``before``, in order, and
            possibly assistant messages of non-blank text alone between
            them (a collapsed run's line). When
            ``before`` is a conversation this counter's memo knows valid (an
            earlier ``finish`` returned it), only the rule that dropping
            units can break (Anthropic's first turn) is checked.

    Known-valid conversations: each output is remembered (by identity, a
    few at a time) in the budget's memo, and so is an input found valid, so
    that the next stage, or the next fit of the grown conversation, checks
    only what is new. The check is the same ``ensure_valid``: what is
    skipped is what it would find valid.

    Returns:
        The valid output, with repairs added to the report.
    """
    # A tuple as it is: a valid one comes back as the very tuple (no copy).
    shown = cast("tuple[Message, ...]", after) if type(after) is tuple else tuple(after)
    valid = _validate(shown, before, budget, start, kept or after is before)
    out = valid.messages
    found = list(changes)
    given = len(found)
    if valid.problems:
        counter = budget.counter
        # Output positions are input positions when nothing but repairs ran.
        where = None if after is before else _positions(before)
        # One change per message repaired (an insert is its own), so that no
        # message's tokens are counted twice when it breaks several rules.
        merged: dict[tuple[int, bool], int] = {}
        for p, old, new in zip(valid.problems, valid.before, valid.after, strict=True):
            # The path without its message index, which is the change's own.
            what = f"{p.reason} ({p.path.split('.', 1)[1]})"
            key = (p.index, old is None)
            if key in merged:
                k = merged[key]
                found[k] = replace(found[k], what=f"{found[k].what}; {what}")
                continue
            touched = old if old is not None else new
            assert touched is not None  # one of them is always set
            merged[key] = len(found)
            found.append(
                Change(
                    "repaired",
                    "ensure_valid",
                    (touched.id,),
                    p.index
                    if where is None
                    else _place(shown, p.index, where, len(before)),
                    counter.message(old) if old is not None else 0,
                    counter.message(new) if new is not None else 0,
                    what,
                )
            )
    if counted is None:
        tokens_before = budget.count(before)
        # Nothing repaired in a conversation given as its own output: the
        # same messages, the same tokens.
        same = after is before and not valid.problems
        tokens_after = tokens_before if same else budget.count(out)
    elif budget.tools and first_system(out) is not first_system(before):
        # With tools, OpenAI's count reads the first system turn: the
        # changes add up only while it stands.
        tokens_before = counted
        tokens_after = budget.count(out)
    else:
        tokens_before = counted
        if saved is None:
            tokens_after = counted - sum(c.saved for c in found)
        else:
            tokens_after = counted - saved - sum(c.saved for c in found[given:])
    report = Report(tokens_before, tokens_after, budget.limit, tuple(found), (stage,))
    budget.know(out, tokens_after)
    return Fitted(out, report)


def first_system(messages: Sequence[Message]) -> Message | None:
    """The first system message of ``messages`` (``None``: none).

    With tools, OpenAI's count of them reads it: a report adds up by message
    only while it stands (``finish``, and the manager's handler edits).
    """
    return next((m for m in messages if m.role == "system"), None)


_VALID_KEY = ("contextwindow.finish", "valid")
"""The memo entry listing conversations known valid for the counter's provider."""
_VALID_KEPT = 16
"""Known-valid conversations remembered (a pipeline's input and outputs)."""


def _valid_list(budget: Budget) -> list[Sequence[Message]]:
    found = budget.memo.get(_VALID_KEY)
    if isinstance(found, list):
        return found  # pyright: ignore[reportUnknownVariableType]  # only this module puts it
    fresh: list[Sequence[Message]] = []
    budget.memo.put(_VALID_KEY, fresh)
    return fresh


def note_valid(budget: Budget, messages: Sequence[Message]) -> None:
    """Record that ``messages`` is valid for the budget's provider.

    ``finish`` records what it returns or found valid; a stage that built a
    conversation from a known-valid one in a way that keeps every rule (each
    message where one with its id and parts' kinds stood) records it too: the
    next stage, and ``verify``, then check nothing again.
    """
    known = _valid_list(budget)
    if any(v is messages for v in known):
        return
    known.insert(0, messages)
    del known[_VALID_KEPT:]


def _validate(
    shown: tuple[Message, ...],
    before: Sequence[Message],
    budget: Budget,
    start: int,
    kept: bool,
) -> Valid:
    """``ensure_valid(shown)``, skipping what the memo knows is valid."""
    known = _valid_list(budget)
    # Whole units of a valid conversation: only the first-turn rule can break.
    if kept and any(v is before for v in known) and opens_well(shown, budget.provider):
        note_valid(budget, shown)
        return Valid(shown, ())
    if not start:
        start = _checked_prefix(shown, known)
    valid = neutral_ensure_valid(shown, budget.provider, start=start)
    if not valid.problems:
        note_valid(budget, valid.messages)
    return valid


def known_valid(budget: Budget, messages: Sequence[Message]) -> bool:
    """Whether ``messages`` is known valid, by identity.

    That is: an earlier ``finish`` with this budget's counter returned it, or
    found it valid.
    """
    return any(v is messages for v in _valid_list(budget))


def opens_well(messages: Sequence[Message], provider: Provider) -> bool:
    """Whether the first-turn rule holds (the one rule dropping units can break).

    Example:
        >>> opens_well([Message.system("s"), Message.assistant("a")], "anthropic")
        False
    """
    if provider != "anthropic":
        return True
    first = next((m for m in messages if m.role != "system"), None)
    return first is None or first.role != "assistant"


def _checked_prefix(
    shown: Sequence[Message], known: Sequence[Sequence[Message]]
) -> int:
    """Where checking ``shown`` must start.

    The start of the unit holding the last message ``shown`` shares with a
    known-valid conversation (0 if none): the units before it are that
    conversation's, whose rules (each unit's, each message's, the first
    turn's) it met.
    """
    best = 0
    for v in known:
        if v and shown and shown[0] == v[0]:
            best = max(best, common_prefix(shown, v))
    return unit_start(shown, best - 1) if best else 0


def unit_start(messages: Sequence[Message], i: int) -> int:
    """The start of the unit holding ``messages[i]``, in a valid conversation.

    A tool message belongs to the exchange of the last message before it that
    is not one; in any conversation, a unit starts at the index returned.

    Example:
        >>> from contextwindow.messages import ToolCall
        >>> conv = [Message.user("go"),
        ...         Message.assistant(tool_calls=[ToolCall("1", "ls")]),
        ...         Message.tool("1", "a.txt")]
        >>> unit_start(conv, 2)
        1
    """
    while i > 0 and messages[i].role == "tool":
        i -= 1
    return max(i, 0)


_ALIGNED_KEY = ("contextwindow.aligned",)


def note_aligned(
    budget: Budget, out: Sequence[Message], before: Sequence[Message]
) -> None:
    """Record that ``out`` keeps each message of ``before`` where it was.

    At each index a message with the id of ``before``'s there (a stage that
    rewrote contents and moved nothing): a pipeline need not move its
    changes' indices.
    """
    found = budget.memo.get(_ALIGNED_KEY)
    known: list[tuple[Sequence[Message], Sequence[Message]]]
    if isinstance(found, list):
        known = found  # pyright: ignore[reportUnknownVariableType]  # only this module puts it
    else:
        known = []
        budget.memo.put(_ALIGNED_KEY, known)
    known.insert(0, (out, before))
    del known[_SHARED_KEPT:]


def aligned(budget: Budget, out: Sequence[Message], before: Sequence[Message]) -> bool:
    """Whether ``note_aligned`` recorded ``out`` against ``before``."""
    found = budget.memo.get(_ALIGNED_KEY)
    if isinstance(found, list):
        for o, b in found:  # pyright: ignore[reportUnknownVariableType]  # only this module puts it
            if o is out and b is before:
                return True
    return False


_SHARED_KEY = ("contextwindow.shared",)
_SHARED_KEPT = 16


def note_shared(
    budget: Budget, new: Sequence[Message], old: Sequence[Message], k: int
) -> None:
    """Record that ``new[:k]`` holds the very objects of ``old[:k]``.

    A stage built ``new`` from ``old``: ``shares`` then need not look.
    """
    found = budget.memo.get(_SHARED_KEY)
    known: list[tuple[Sequence[Message], Sequence[Message], int]]
    if isinstance(found, list):
        known = found  # pyright: ignore[reportUnknownVariableType]  # only this module puts it
    else:
        known = []
        budget.memo.put(_SHARED_KEY, known)
    known.insert(0, (new, old, k))
    del known[_SHARED_KEPT:]


def shares(
    budget: Budget, new: Sequence[Message], old: Sequence[Message], k: int
) -> bool:
    """Whether ``new[:k]`` holds the very objects of ``old[:k]``, ids and all.

    Recorded by ``note_shared``, else looked at.
    """
    found = budget.memo.get(_SHARED_KEY)
    if isinstance(found, list):
        for n, o, j in found:  # pyright: ignore[reportUnknownVariableType]  # only this module puts it
            if n is new and o is old and j >= k:
                return True
    return same_objects(old, new, k, COMPARED)


def shared_length(
    budget: Budget, new: Sequence[Message], old: Sequence[Message]
) -> int | None:
    """How many leading objects ``note_shared`` recorded ``new`` shares with ``old``.

    ``None`` when nothing was recorded for the two.
    """
    found = budget.memo.get(_SHARED_KEY)
    best: int | None = None
    if isinstance(found, list):
        # Only ``note_shared`` puts it.
        known = cast("list[tuple[Sequence[Message], Sequence[Message], int]]", found)
        for n, o, j in known:
            if n is new and o is old and (best is None or j > best):
                best = j
    return best


def trusted(stage: object) -> bool:
    """Whether ``stage`` is one of the library's own strategies (not a subclass).

    Their outputs keep the module's contract by construction (the property
    tests hold them to it), and those that run a user's strategy
    (``Pipeline``, ``CollapseRuns``) pass its output through ``verify``
    themselves. So ``verify`` looks for what only a user's code can do (a
    pinned message dropped, messages moved, a change that names no message
    or holds no number) in a user's output alone: a re-fit of the default
    pipeline costs what changed, not a pass over every message per stage.

    Example:
        >>> from contextwindow.strategies import DropOldest
        >>> def mine(messages, budget, /): ...
        >>> trusted(DropOldest()), trusted(mine)
        (True, False)
    """
    return type(stage).__module__.startswith("contextwindow.")


def verify(
    stage: object,
    given: Sequence[Message],
    fitted: object,
    budget: Budget,
    *,
    counted: int | None = None,
) -> Fitted:
    """A stage's output as ``fit`` and ``Pipeline`` can rely on it.

    A strategy is any callable, so its output is checked, not trusted: it
    must be a ``Fitted`` of messages and a report whose changes have the
    fields a ``Change`` declares (each index into ``given``); it is made
    valid for the budget's provider (``ensure_valid``, each repair
    reported); its tokens are counted again (the counter's cache makes that
    a sum for messages seen before); and when its report does not add up to
    the recount (``tokens_before - saved != tokens_after``), a change naming
    the messages it touched carries the difference, so the report stays
    consistent. A built-in strategy's output passes unchanged (``trusted``).

    A user's strategy is held to the invariants every strategy keeps
    (DESIGN.md): the system messages, the pinned ones, those holding a
    protected marker and the final message, each with the rest of its tool
    exchange, are put back as they were when it dropped or rewrote them, and
    the input's order when it moved messages (the final message last), each
    said in the report's ``warnings``. They are put back rather than
    refused: the output then keeps the invariants and the rest of the
    stage's work, as a broken tool pair is repaired rather than refused (the
    next stage, or ``fit``'s fallback, cuts what no longer fits). A cut
    the stage reported and that was undone gets a ``repaired`` change that
    adds its tokens back. Every message it dropped, rewrote or added that its
    report names nowhere (by id) gets a change, even one that saves no
    tokens (a rewrite of the same size).

    Args:
        stage: The strategy, for its name.
        given: What it was given.
        fitted: What it returned.
        budget: The budget it worked to.
        counted: The request tokens of ``given``, when the caller knows them.

    Returns:
        The valid output, its report recounted, indices into ``given``.

    Raises:
        ContextWindowError: The strategy returned something other than a
            ``Fitted`` of messages and a ``Report`` (a coroutine too: an
            ``async def`` strategy), or a report field that is not of its
            declared type or range (naming the strategy and the field).

    Example:
        >>> from contextwindow.testing import FakeTokenizer
        >>> from contextwindow.messages import ToolCall
        >>> budget = Budget(100, TokenCounter(FakeTokenizer()))
        >>> conv = [Message.user("hi"),
        ...         Message.assistant(tool_calls=[ToolCall("a", "ls")]),
        ...         Message.tool("a", "x y z"), Message.user("and?")]
        >>> def sloppy(messages, budget, /):  # drops a call, says it saved nothing
        ...     out = (messages[0], *messages[2:])
        ...     return Fitted(out, Report(0, 0, budget.limit))
        >>> fitted = verify(sloppy, conv, sloppy(conv, budget), budget)
        >>> [m.text for m in fitted.messages], fitted.report.tokens_after
        (['hi', 'and?'], 13)
        >>> [(c.kind, c.stage) for c in fitted.report.changes]
        [('dropped', 'sloppy'), ('repaired', 'ensure_valid')]
        >>> def tail(messages, budget, /):  # drops the first message, a pinned one
        ...     return Fitted(tuple(messages[-1:]), Report(0, 0, budget.limit))
        >>> pinned = [Message.system("Be brief."), *conv]
        >>> fitted = verify(tail, pinned, tail(pinned, budget), budget)
        >>> fitted.messages[0].text
        'Be brief.'
        >>> print(fitted.report.warnings[0])  # doctest: +ELLIPSIS
        strategy 'tail' dropped or rewrote messages[0] (system), which every ...
        >>> try:
        ...     verify(sloppy, conv, list(conv), budget)
        ... except ContextWindowError as e:
        ...     print(e)
        strategy 'sloppy' returned list, not a Fitted(messages, report)
    """
    name = stage_name(stage)
    report = _report_of(name, fitted)
    assert isinstance(fitted, Fitted)  # _report_of refused anything else
    own = trusted(stage)
    returned = report
    if own:
        given_changes = tuple(cast("Iterable[object]", report.changes))
    else:
        given_changes, report = _checked_report(name, report, len(given))
    given_out = fitted.messages
    if isinstance(given_out, tuple) and known_valid(budget, given_out):  # pyright: ignore[reportUnnecessaryIsInstance]  # a user's strategy may return anything
        # A conversation ``finish`` returned: messages, valid, its tokens known.
        out: tuple[Message, ...] = given_out
        valid = True
    else:
        out = _checked_output(name, given_out)
        valid = False
    # What this stage reported last time (the same changes, mostly): only
    # the rest is checked and added up.
    found = budget.memo.get(_VERIFIED_KEY)  # only this function puts it
    verified: _Verified = cast("_Verified", found) if isinstance(found, dict) else {}
    budget.memo.put(_VERIFIED_KEY, verified)
    last = verified.get(name)
    k, saved = 0, 0
    if last is not None:
        seen, total = last
        k = common_prefix(seen, given_changes)
        saved = total - sum(c.saved for c in seen[k:])
    for j in range(k, len(given_changes)):
        c = given_changes[j]
        if not isinstance(c, Change):
            raise ContextWindowError(
                f"strategy {name!r} returned report.changes[{j}] of type "
                f"{type(c).__name__}, not a Change"
            )
        saved += c.saved
    changes = cast("tuple[Change, ...]", given_changes)
    verified[name] = (changes, saved)
    kept: _Kept | None = None
    if not own:
        kept = _kept(name, given, out, changes, budget)
        if kept.messages is not out:
            out, valid = kept.messages, False
        changes = (*changes, *kept.repairs)
        saved += sum(c.saved for c in kept.repairs)
    before = budget.count(given) if counted is None else counted
    after = budget.count(out)
    unaccounted = before - saved - after
    if kept is not None:
        extra = kept.unreported(name, given, budget, unaccounted)
        if extra is not None:
            changes = (*changes, extra)
    elif unaccounted:
        changes = (*changes, _unreported(name, given, out, unaccounted))
    if not valid and ensure_valid(out, budget.provider).problems:
        fixed = finish("ensure_valid", out, out, (), budget, counted=after)
        changes = (*changes, *relocate(fixed.report, given, out).changes)
        out, after = fixed.messages, fixed.report.tokens_after
    # ``replace`` keeps whatever else the report carries.
    checked = replace(
        report,
        tokens_before=before,
        tokens_after=after,
        limit=budget.limit,
        changes=changes,
        stages=report.stages or (name,),
        warnings=report.warnings if kept is None else report.warnings + kept.warnings,
    )
    if checked == returned and out is fitted.messages:
        return fitted
    return Fitted(out, checked)


def _report_of(name: str, fitted: object) -> Report:
    """The report of ``fitted``, a ``Fitted`` holding a ``Report`` (else an error)."""
    if not isinstance(fitted, Fitted):
        hint = ""
        if inspect.iscoroutine(fitted):
            fitted.close()  # never awaited: said here, without a RuntimeWarning
            hint = " (an async def strategy: a strategy is called, never awaited)"
        raise ContextWindowError(
            f"strategy {name!r} returned {type(fitted).__name__}, not a Fitted"
            f"(messages, report){hint}"
        )
    report = fitted.report
    if not isinstance(report, Report):  # pyright: ignore[reportUnnecessaryIsInstance]  # a user's strategy may return anything
        raise ContextWindowError(
            f"strategy {name!r} returned a Fitted whose report is "
            f"{type(report).__name__}, not a Report"
        )
    return report


_VERIFIED_KEY = "contextwindow.verify"
"""The memo entry holding, per stage name, the changes ``verify`` last
checked and what they save in all (one entry: the memo is small)."""
_Verified = dict[str, tuple[tuple[Change, ...], int]]
"""What that entry holds."""


def _checked_output(name: str, messages: object) -> tuple[Message, ...]:
    """A strategy's messages as a tuple, or an error naming the first bad item."""
    if isinstance(messages, tuple):
        out = cast("tuple[object, ...]", messages)
    elif isinstance(messages, Iterable) and not isinstance(messages, str | bytes):
        out = tuple(cast("Iterable[object]", messages))
    else:
        raise ContextWindowError(
            f"strategy {name!r} returned messages of type "
            f"{type(messages).__name__}, not a sequence of Message"
        )
    for k, m in enumerate(out):
        if not isinstance(m, Message):
            raise ContextWindowError(
                f"strategy {name!r} returned messages[{k}] of type "
                f"{type(m).__name__}, not a Message"
            )
    return cast("tuple[Message, ...]", out)


_KINDS = frozenset(get_args(ChangeKind))
"""Every ``ChangeKind``."""


def _checked_report(
    name: str, report: Report, n: int
) -> tuple[tuple[object, ...], Report]:
    """A user's report: its changes, and the report with tuples where it has lists.

    Each field must be what ``Report`` and ``Change`` declare, so that an
    error names the strategy and the field, not a ``TypeError`` deep in a
    sum, and so that ``fit``'s report indexes its input (``n`` messages; an
    index of ``n`` is a message added at the end).
    """
    changes = _items(name, "changes", report.changes, "a tuple of Change")
    for j, c in enumerate(changes):
        if not isinstance(c, Change):
            raise ContextWindowError(
                f"strategy {name!r} returned report.changes[{j}] of type "
                f"{type(c).__name__}, not a Change"
            )
        _check_change(name, j, c, n)
    warnings = _items(name, "warnings", report.warnings, "a tuple of str")
    stages = _items(name, "stages", report.stages, "a tuple of str")
    for field_name, values in (("warnings", warnings), ("stages", stages)):
        for j, v in enumerate(values):
            if not isinstance(v, str):
                raise ContextWindowError(
                    f"strategy {name!r} returned report.{field_name}[{j}] = "
                    f"{shown(v)}, not a str"
                )
    if warnings is report.warnings and stages is report.stages:
        return changes, report
    fixed = replace(
        report,
        warnings=cast("tuple[str, ...]", warnings),
        stages=cast("tuple[str, ...]", stages),
    )
    return changes, fixed


def _items(name: str, field_name: str, value: object, takes: str) -> tuple[object, ...]:
    """A report field's items as a tuple (a list or a generator is read)."""
    given: object = value  # narrowed below, ``value`` itself is not
    if isinstance(given, tuple):
        return cast("tuple[object, ...]", given)
    if isinstance(given, Iterable) and not isinstance(
        given, str | bytes | bytearray | Mapping
    ):
        return tuple(cast("Iterable[object]", given))
    raise ContextWindowError(
        f"strategy {name!r} returned report.{field_name} = {shown(value)}, not {takes}"
    )


def _check_change(name: str, j: int, c: Change, n: int) -> None:
    """Refuse a field of ``c`` (``report.changes[j]``) that is not what it declares."""
    where = f"strategy {name!r} returned report.changes[{j}]"
    if c.kind not in _KINDS:
        raise ContextWindowError(
            f"{where}.kind = {shown(c.kind)}, not a ChangeKind "
            f"({', '.join(get_args(ChangeKind))})"
        )
    for field_name in ("stage", "what"):
        value = getattr(c, field_name)
        if not isinstance(value, str):
            raise ContextWindowError(
                f"{where}.{field_name} = {shown(value)}, not a str"
            )
    ids = cast("object", c.ids)  # a user's change may hold anything
    if not isinstance(ids, tuple) or not all(
        isinstance(i, str) for i in cast("tuple[object, ...]", ids)
    ):
        shown_ids = shown(c.ids)
        raise ContextWindowError(f"{where}.ids = {shown_ids}, not a tuple of str")
    for field_name in ("tokens_before", "tokens_after", "units"):
        value = getattr(c, field_name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ContextWindowError(
                f"{where}.{field_name} = {shown(value)}, not an int >= 0"
            )
    index = cast("object", c.index)
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index <= n:
        raise ContextWindowError(
            f"{where}.index = {shown(index)}, not an index into its {n} input "
            f"messages (0 to {n})"
        )


@dataclass(slots=True)
class _Kept:
    """A user's output with the invariants put back (``_kept``), and what that took."""

    messages: tuple[Message, ...]
    """The output: the stage's own when nothing was put back."""
    repairs: tuple[Change, ...]
    """A ``repaired`` change for each message put back that its report cut."""
    warnings: tuple[str, ...]
    """What was put back, and why."""
    touched: list[int]
    """Input positions dropped or rewritten that its report names nowhere."""
    dropped: bool
    """Whether each of ``touched`` is gone from the output (none rewritten)."""
    added: list[int]
    """For each message added that its report names nowhere, the input
    position it went before."""
    added_ids: list[str]
    """Those messages' ids."""

    def unreported(
        self, name: str, given: Sequence[Message], budget: Budget, tokens: int
    ) -> Change | None:
        """The change for what the report left out: its messages and ``tokens``.

        ``tokens`` is what the report leaves unaccounted (``before - saved -
        after``): the change carries it, so the report adds up. ``None`` when
        nothing is left out.
        """
        touched, added = self.touched, self.added
        if not touched and not added:
            return _unreported(name, given, self.messages, tokens) if tokens else None
        if not added:
            kind: ChangeKind = "dropped" if self.dropped else "rewritten"
        else:
            kind = "added" if not touched else "rewritten"
        was = sum(budget.counter.message(given[j]) for j in touched)
        now = was - tokens  # what replaced them, when the report's figures hold
        if now < 0:  # they do not: the change carries the difference alone
            was, now = max(tokens, 0), max(-tokens, 0)
        n = len(touched) + len(added)
        return Change(
            kind,
            name,
            (*(given[j].id for j in touched), *self.added_ids),
            touched[0] if touched else added[0],
            was,
            now,
            f"{n} message{'' if n == 1 else 's'} {kind} that its report does not "
            f"account for ({tokens:,} tokens saved)",
        )


def _kept(
    name: str,
    given: Sequence[Message],
    out: tuple[Message, ...],
    changes: tuple[Change, ...],
    budget: Budget,
) -> _Kept:
    """A user's output, holding what every strategy keeps, in the input's order.

    Each output message stands for the input message with its id (else one
    equal to it: a message rebuilt with a new id), or for none (one it
    added). A pinned input message (``pinned_flags``: system, pinned,
    holding a marker, the final one) that no output message stands for, or
    one that stands for it changed, is put back as it was; so is any message
    of its unit gone from the output (a tool exchange is kept whole). Then
    the messages are sorted by the input position each stands for, an added
    one going before the message that followed it (after the last of them:
    before the final unit), so that the order is the input's.
    """
    n = len(given)
    if len(out) == n and all(map(operator.is_, out, given)):
        return _Kept(out, (), (), [], True, [], [])  # it changed nothing
    slot = _slots(given, out)
    holder = [-1] * n
    for k, j in enumerate(slot):
        if j >= 0:
            holder[j] = k
    carried = [
        k >= 0 and (out[k] is given[j] or out[k] == given[j])
        for j, k in enumerate(holder)
    ]
    put = _to_put_back(given, carried, holder, budget.protected)
    msgs = list(out)
    for j in put:
        if holder[j] >= 0:
            msgs[holder[j]] = given[j]
    # Where each message goes: the input position it stands for; an added one
    # before the next message that stands for one.
    end = unit_start(given, n - 1) if n else 0
    following = end
    keys: list[tuple[int, int, int]] = [(0, 0, 0)] * len(out)
    for k in range(len(out) - 1, -1, -1):
        if slot[k] >= 0:
            following = slot[k]
            keys[k] = (following, 1, k)
        else:
            keys[k] = (following, 0, k)
    placed = sorted(
        [(keys[k], msgs[k]) for k in range(len(out))]
        + [((j, 1, -1), given[j]) for j in put if holder[j] < 0],
        key=lambda e: e[0],
    )
    result = tuple(m for _, m in placed)
    if len(result) == len(out) and all(
        a is b for a, b in zip(result, out, strict=True)
    ):
        result = out
    warnings: list[str] = []
    if put:
        places = _places(given, put, budget.protected)
        warnings.append(
            f"strategy {name!r} dropped or rewrote {places}, which every strategy "
            "keeps (system, pinned and protected messages, the final message and "
            "the rest of their tool exchanges): put back"
        )
    if any(keys[k] > keys[k + 1] for k in range(len(keys) - 1)):
        warnings.append(
            f"strategy {name!r} moved messages out of the input's order (or past "
            "the final message): the input's order was put back"
        )
    # What its report names, by id; and what it changed that the report does not.
    named = {i for c in changes for i in c.ids}
    counter = budget.counter
    repairs = tuple(
        Change(
            "repaired",
            name,
            (given[j].id,),
            j,
            counter.message(out[holder[j]]) if holder[j] >= 0 else 0,
            counter.message(given[j]),
            f"{given[j].role} message put back: every strategy keeps it",
        )
        for j in put
        if given[j].id in named
    )
    back = set(put)
    touched = [
        j
        for j in range(n)
        if not carried[j] and j not in back and given[j].id not in named
    ]
    added = [k for k in range(len(out)) if slot[k] < 0 and out[k].id not in named]
    return _Kept(
        result,
        repairs,
        tuple(warnings),
        touched,
        all(holder[j] < 0 for j in touched),
        [keys[k][0] for k in added],
        [out[k].id for k in added],
    )


def _slots(given: Sequence[Message], out: Sequence[Message]) -> list[int]:
    """For each output message, the input position it stands for (``-1``: none).

    By id: the input message with its id, the very object first when ids
    repeat; then, for the rest, an input message left over equal to it (a
    message rebuilt with a new id). No input position is taken twice: a
    message given twice stands for its input once, its copy for none.
    """
    first: dict[str, int] = {}
    repeats: dict[str, list[int]] = {}
    for i, m in enumerate(given):
        if first.setdefault(m.id, i) != i:
            repeats.setdefault(m.id, []).append(i)
    taken = [False] * len(given)
    slot = [-1] * len(out)
    loose: list[int] = []
    for k, o in enumerate(out):
        j = first.get(o.id)
        if j is not None and o.id in repeats:
            free = [i for i in (j, *repeats[o.id]) if not taken[i]]
            j = next(
                (i for i in free if given[i] is o),
                next((i for i in free if given[i] == o), free[0] if free else None),
            )
        if j is None or taken[j]:
            loose.append(k)
            continue
        slot[k] = j
        taken[j] = True
    if loose:
        left: dict[Message, list[int]] = {}
        try:
            for i, m in enumerate(given):
                if not taken[i]:
                    left.setdefault(m, []).append(i)
            for k in loose:
                found = left.get(out[k])
                if found:
                    slot[k] = found.pop(0)
        except TypeError:  # a part that cannot be hashed: matched by id alone
            pass
    return slot


def _to_put_back(
    given: Sequence[Message],
    carried: list[bool],
    holder: list[int],
    markers: tuple[str, ...],
) -> list[int]:
    """Input positions to put back: pinned ones not carried, their units' gone ones.

    Summaries are not pinned here: a user's strategy may roll them forward.
    """
    if not given:
        return []
    flags = pinned_flags(given, markers, summaries=False)
    put: list[int] = []
    for u in units(given):
        if u.stop - u.start == 1:
            if flags[u.start] and not carried[u.start]:
                put.append(u.start)
        elif any(flags[u.start : u.stop]):
            put.extend(
                j
                for j in range(u.start, u.stop)
                if (flags[j] and not carried[j]) or holder[j] < 0
            )
    return put


def _places(given: Sequence[Message], put: list[int], markers: tuple[str, ...]) -> str:
    """``messages[0] (system), messages[7] (final)``: what was put back, and why."""
    n = len(given)

    def why(j: int) -> str:
        m = given[j]
        if j == n - 1:
            return "final"
        if m.role == "system" or m.pinned:
            return "system" if m.role == "system" else "pinned"
        if pinned_one(m, markers, summaries=False):
            return "protected"
        return f"{m.role}, of a pinned tool exchange"

    listed = ", ".join(f"messages[{j}] ({why(j)})" for j in put[:4])
    return listed + (f" and {len(put) - 4} more" if len(put) > 4 else "")


def _unreported(
    name: str, given: Sequence[Message], out: Sequence[Message], tokens: int
) -> Change:
    """The change a strategy made and did not report: what it touched, by id."""
    kept = {m.id: m for m in out}
    touched = [(i, m.id) for i, m in enumerate(given) if kept.get(m.id) is not m]
    known = {m.id for m in given}
    added = [m.id for m in out if m.id not in known]
    dropped = not added and all(i not in kept for _, i in touched)
    n = len(touched) + len(added)
    kind: ChangeKind = "dropped" if dropped else "rewritten"
    return Change(
        kind,
        name,
        (*(i for _, i in touched), *added),
        touched[0][0] if touched else len(given),
        max(tokens, 0),
        max(-tokens, 0),
        f"{n} message{'' if n == 1 else 's'} {kind} that its report does not "
        f"account for ({tokens:,} tokens saved)",
    )


def relocate(
    report: Report,
    messages: Sequence[Message],
    source: Sequence[Message] | None = None,
    *,
    memo: Memo | None = None,
) -> Report:
    """The report with each change's index moved into ``messages``, by id.

    Changes keep message ids, so a pipeline's later stages can be reported
    against the pipeline's own input.

    Args:
        report: A report whose indices point into ``source``.
        messages: The conversation the indices should point into.
        source: The conversation the report was made on. When given, each
            change's index names ``source[index]``; a message that is not in
            ``messages`` (one a repair inserted, say) takes the index of the
            first message after it that is. Without it, the change's first id
            is looked up.
        memo: Where the table of ``messages``' ids is kept for the next call
            (``_Positions``): a conversation that grew by an append then
            indexes only its new messages.
    """
    where = _Positions(messages, memo)

    def index(c: Change) -> int:
        if source is not None and 0 <= c.index < len(source):
            return _place(source, c.index, where, len(messages))
        if c.ids and c.ids[0] in where:
            return where[c.ids[0]]
        return c.index

    changes: list[Change] = []
    n = len(messages)
    for c in report.changes:
        i = c.index
        # The common case first: the message is where it was (a stage that
        # rewrote contents moves nothing).
        if (
            source is not None
            and 0 <= i < n
            and i < len(source)
            and (messages[i] is source[i] or messages[i].id == source[i].id)
        ):
            changes.append(c)
            continue
        k = index(c)
        changes.append(c if k == c.index else c.at(k))
    return replace(report, changes=tuple(changes))


def _positions(messages: Sequence[Message]) -> dict[str, int]:
    """Each id's first index in ``messages``."""
    table = {m.id: i for i, m in enumerate(messages)}  # the last index of each
    if len(table) == len(messages):
        return table  # no id repeats (the common case): first is last
    return {m.id: i for i, m in reversed(list(enumerate(messages)))}


_POSITIONS_KEY = ("contextwindow.relocate", "positions")
"""The memo entry holding the last table ``_Positions`` built (a ``_Table``)."""


@dataclass(frozen=True, slots=True)
class _Table:
    """Each id's first index in ``messages`` (a snapshot)."""

    messages: tuple[Message, ...]
    index: dict[str, int]


class _Positions:
    """Each id's first index in ``messages``, the table built only when needed.

    A stage that kept every message where it was (one that rewrote contents)
    is relocated by looking at the same index, not by indexing ten thousand
    ids; a change there points at that message even when an earlier one
    repeats its id. With a ``memo``, the table is kept there, and the next
    one, for a conversation that starts with the very objects of the last,
    is a copy of it with the new messages added (a copy at C speed, not a
    loop over every message).
    """

    __slots__ = ("_memo", "_messages", "_table")

    def __init__(self, messages: Sequence[Message], memo: Memo | None = None) -> None:
        self._messages = messages
        self._memo = memo
        self._table: dict[str, int] | None = None

    def first(self, message_id: str, hint: int) -> int | None:
        """Where ``message_id`` is.

        ``hint`` when the message there has that id (the same message, where
        a stage left it), else its first index.
        """
        ms = self._messages
        if 0 <= hint < len(ms) and ms[hint].id == message_id:
            return hint
        return self.table().get(message_id)

    def table(self) -> dict[str, int]:
        if self._table is None:
            self._table = self._built()
        return self._table

    def _built(self) -> dict[str, int]:
        ms, memo = self._messages, self._memo
        if memo is None:
            return _positions(ms)
        last = memo.get(_POSITIONS_KEY)
        n = len(ms)
        if (
            isinstance(last, _Table)
            and len(last.messages) <= n
            and same_objects(last.messages, ms, len(last.messages), COMPARED)
        ):
            table = last.index.copy()
            add = table.setdefault  # an id seen before keeps its first index
            for i in range(len(last.messages), n):
                add(ms[i].id, i)
        else:
            table = _positions(ms)
        memo.put(_POSITIONS_KEY, _Table(tuple(ms), table))
        return table

    def __contains__(self, message_id: str) -> bool:
        return message_id in self.table()

    def __getitem__(self, message_id: str) -> int:
        return self.table()[message_id]


def _place(
    seq: Sequence[Message], k: int, where: dict[str, int] | _Positions, default: int
) -> int:
    """Where ``seq[k]`` is, or would go, in the conversation ``where`` indexes.

    The index of the first of ``seq[k:]`` found there (a message that is not,
    such as an inserted one, sits just before it), else ``default``.
    """
    for j in range(k, len(seq)):  # no slice: this runs once per change
        if isinstance(where, _Positions):
            i = where.first(seq[j].id, j)
        else:
            i = where.get(seq[j].id)
        if i is not None:
            return i
    return default
