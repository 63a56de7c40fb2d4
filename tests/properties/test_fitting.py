"""Properties of fitting: every invariant of DESIGN.md, for every strategy.

A *batch* is one strategy, called one way (``fit`` with it, or the strategy
called directly), for one provider, run once over the whole ``convs`` pool;
the module-scoped ``batch`` fixture builds it and every invariant test then
checks it (pytest groups the tests by batch, so one batch is alive at a time).
Each invariant is a test of its own, so a failure names the invariant, the
strategy, the way and the provider, and the smallest failing conversation.

Each conversation gets one *case* per provider, drawn with its own
``random.Random`` (seeded with its position): a cheap tokenizer (words, or the
heuristic), a budget that is a random share (0 to 1.1) of its own tokens, or
exactly what its pinned content needs, or one token less, so both fitting and
overflowing cases occur, protected markers cut from its texts now and then,
sometimes a tool schema and a reserve. What must be kept is computed here,
independently of the library (``pinned_oracle``, ``floor``). A smaller check
repeats every invariant with exact ``o200k_base`` counts on ``some_convs``.
"""

from __future__ import annotations

import base64
import functools
import random
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import pytest

from contextwindow import fit
from contextwindow.errors import BudgetError, ContentDroppedWarning
from contextwindow.fitting import DEFAULT_STRATEGY
from contextwindow.formats import from_provider, to_provider
from contextwindow.handles import find_handles, handle_of, originals
from contextwindow.messages import (
    Image,
    Message,
    Opaque,
    Part,
    Provider,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    ToolSpec,
    units,
)
from contextwindow.recalling import MAX_RECALL_TOKENS, context_recall, render
from contextwindow.relevance import EmbeddingScorer
from contextwindow.strategies import (
    Budget,
    ClearToolResults,
    CompactLossless,
    Deduplicate,
    DropOldest,
    Fitted,
    MaxMessages,
    Pipeline,
    SelectRelevant,
    SlidingWindow,
    StaleReads,
    Strategy,
    TruncateToolInputs,
    TruncateToolResults,
)
from contextwindow.summarizers import (
    is_summary,
    recall,
    summary_handle,
    summary_sources,
)
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens import HeuristicTokenizer
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.counting import TokenCounter
from contextwindow.validity import CONTINUED_ID, ensure_valid, problems
from contextwindow.wire import MessageDict, to_dicts

from ._support import MAX_SHOWN, dump, for_each, pool_size

PROVIDERS: tuple[Provider, ...] = ("openai", "anthropic", "responses")

STRATEGIES: dict[str, Callable[[random.Random], Strategy]] = {
    "DropOldest": lambda rng: DropOldest(),
    "SlidingWindow": lambda rng: SlidingWindow(rng.choice((0, 1, 3, 8))),
    "MaxMessages": lambda rng: MaxMessages(rng.choice((0, 1, 3, 8))),
    "TruncateToolResults": lambda rng: TruncateToolResults(keep_recent=1, max_tokens=5),
    "ClearToolResults": lambda rng: ClearToolResults(keep_recent=1),
    "Deduplicate": lambda rng: Deduplicate(),
    "CompactLossless": lambda rng: CompactLossless(),
    "StaleReads": lambda rng: StaleReads(),
    "TruncateToolInputs": lambda rng: TruncateToolInputs(keep_recent=1, max_tokens=2),
    "default": lambda rng: DEFAULT_STRATEGY,
    "Pipeline": lambda rng: Pipeline(
        Deduplicate(),
        TruncateToolResults(keep_recent=1, max_tokens=5),
        ClearToolResults(keep_recent=1),
        DropOldest(),
    ),
    "Pipeline-window": lambda rng: Pipeline(SlidingWindow(3), DropOldest()),
    "SelectRelevant": lambda rng: SelectRelevant(rng.choice((0, 1, 3, 6))),
    "SelectRelevant-embeddings": lambda rng: SelectRelevant(
        rng.choice((0, 2)), scorer=EmbeddingScorer(LETTERS)
    ),
    "Pipeline-relevant": lambda rng: Pipeline(
        TruncateToolResults(keep_recent=1, max_tokens=5),
        SelectRelevant(2),
        DropOldest(),
    ),
}
"""Each strategy under test, made per conversation (``SlidingWindow`` and
``SelectRelevant`` draw their windows)."""

ALWAYS_FITS = frozenset(
    ("DropOldest", "Pipeline", "Pipeline-window", "Pipeline-relevant", "default")
)
"""Strategies that meet the budget (or raise ``BudgetError``) when called directly."""

OWN_KINDS: dict[str, frozenset[str]] = {
    "DropOldest": frozenset(("dropped",)),
    "SlidingWindow": frozenset(("dropped",)),
    "MaxMessages": frozenset(("dropped",)),
    "TruncateToolResults": frozenset(("truncated",)),
    "ClearToolResults": frozenset(("cleared",)),
    "Deduplicate": frozenset(("deduplicated",)),
    "CompactLossless": frozenset(("compacted",)),
    # The generated tool results are a few tokens: a stale-read marker would
    # be longer than any of them, so StaleReads never acts on this pool. Its
    # own kind is checked on the real Claude Code sessions (tests/strategies/
    # test_stale.py); here it keeps the invariants.
    "StaleReads": frozenset(),
    # The generated arguments are a word or two: none is long enough to cut.
    # Its own kind is checked in tests/strategies/test_tool_inputs.py (and on
    # the real sessions by benchmarks/fact_retention.py); here it keeps the
    # invariants.
    "TruncateToolInputs": frozenset(),
    # The same holds for the default's stale reads; its truncation rarely
    # gets a turn.
    "default": frozenset(
        ("compacted", "deduplicated", "cleared", "summarized", "dropped")
    ),
    "Pipeline": frozenset(("dropped", "truncated", "cleared", "deduplicated")),
    "Pipeline-window": frozenset(("dropped",)),
    "SelectRelevant": frozenset(("dropped",)),
    "SelectRelevant-embeddings": frozenset(("dropped",)),
    "Pipeline-relevant": frozenset(("dropped", "truncated")),
}
"""The kinds of change each strategy makes; a batch must show each of them."""

REWRITES = frozenset(
    (
        "truncated",
        "cleared",
        "deduplicated",
        "compacted",
        "stale",
        "collapsed",
        "repaired",
    )
)
"""Changes that leave a message in place with other content (a collapsed run's
first message holds the run's line)."""

MARKERS = frozenset(("truncated", "cleared", "deduplicated", "stale"))
"""Changes that put a marker in a tool result (and keep the message's role)."""

How = Literal["fit", "direct"]


class Letters:
    """A cheap deterministic embedder: letter counts (a..z) of each text."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [
            [float(t.lower().count(c)) for c in "abcdefghijklmnopqrstuvwxyz"]
            for t in texts
        ]


LETTERS: Letters = Letters()
"""One embedder for every case, so its scorers' caches share what it embeds."""

TOOL = ToolSpec(
    "lookup",
    "Look a thing up",
    {"type": "object", "properties": {"q": {"type": "string"}}},
)


# -- the oracle: what must be kept, computed without the library ---------------------


def pinned_oracle(
    msgs: Sequence[Message],
    protected: Sequence[str],
    provider: Provider | None = None,
) -> list[bool]:
    """System messages, ``pinned`` ones, those holding a marker, and the last one;
    for Anthropic, the thinking turn (``thinking_oracle``).

    Not the placeholder turn a repair inserts: it is no content of the input,
    and goes once the conversation no longer opens on the assistant's turn.
    """
    last = len(msgs) - 1
    turn = thinking_oracle(msgs) if provider == "anthropic" else set()
    return [
        m.id != CONTINUED_ID
        and (
            m.role == "system"
            or m.pinned
            or i == last
            or i in turn
            or any(mark in m.text for mark in protected)
        )
        for i, m in enumerate(msgs)
    ]


def opens_thinking(m: Message) -> bool:
    """``m`` opens with a signed or redacted thinking block, and calls a tool."""
    first = m.parts[0] if m.parts else None
    signed = isinstance(first, Thinking) and (first.redacted or bool(first.signature))
    return signed and bool(m.tool_calls)


def thinking_oracle(valid: Sequence[Message]) -> set[int]:
    """Anthropic, on a valid conversation ending on tool results: the last user
    turn that is not only results (the task) and the loop's first assistant
    message after it, when that opens with thinking and calls a tool."""
    turns = [i for i, m in enumerate(valid) if m.role != "system"]
    if not turns or valid[turns[-1]].role != "tool":
        return set()
    users = [
        i
        for i in turns
        if valid[i].role == "user"
        and not all(isinstance(p, ToolResult) for p in valid[i].parts)
    ]
    task = users[-1] if users else -1
    opener = next((i for i in turns if i > task and valid[i].role == "assistant"), None)
    if opener is None or not opens_thinking(valid[opener]):
        return set()
    found = {opener}
    if task >= 0 and valid[task].id != CONTINUED_ID:
        found.add(task)
    return found


def pinned_only(
    valid: Sequence[Message], flags: Sequence[bool], provider: Provider
) -> tuple[Message, ...]:
    """What no strategy may remove: every unit holding a pinned message, whole,
    made valid (Anthropic may need its opening user turn)."""
    kept = [
        m
        for u in units(valid)
        if any(flags[u.start : u.stop])
        for m in valid[u.start : u.stop]
    ]
    return ensure_valid(kept, provider).messages


def is_subsequence(items: Sequence[str], of: Sequence[str]) -> bool:
    """Whether ``items`` appear in ``of`` in the same order."""
    it = iter(of)
    return all(x in it for x in items)


def ids(msgs: Sequence[Message]) -> list[str]:
    """Message ids, without the placeholder a repair may insert."""
    return [m.id for m in msgs if m.id != CONTINUED_ID]


# -- cases and runs ------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One conversation, prepared for one provider."""

    index: int
    """Its position in the pool."""
    conv: list[Message]
    """The conversation, as the pool holds it (never copied)."""
    budget: Budget
    """The limit (after the reserve), counter, tools and protected markers."""
    reserve: int
    """What ``fit`` is told to keep free on top of ``budget.limit``."""
    valid: tuple[Message, ...]
    """``ensure_valid(conv)``: what the strategies really work on."""
    floor: int
    """Tokens of the pinned-only content: below this, ``BudgetError``."""
    wire: list[MessageDict]
    """``to_dicts(conv)``, taken before any strategy ran."""

    @functools.cached_property
    def pinned(self) -> list[bool]:
        """Which messages of ``valid`` are pinned (``pinned_oracle``)."""
        return pinned_oracle(self.valid, self.protected, self.provider)

    @functools.cached_property
    def exchanges(self) -> dict[str, tuple[int, int]]:
        """The tool exchanges of ``valid``: id of the calling message -> range."""
        return {
            self.valid[u.start].id: (u.start, u.stop)
            for u in units(self.valid)
            if u.kind == "tool_exchange"
        }

    @functools.cached_property
    def where(self) -> dict[str, int]:
        """Index of each message of ``valid`` by id."""
        return {m.id: i for i, m in enumerate(self.valid)}

    @property
    def provider(self) -> Provider:
        """The provider of the budget's counter."""
        return self.budget.provider

    @property
    def protected(self) -> tuple[str, ...]:
        """The budget's protected markers."""
        return self.budget.protected


def draw_marker(conv: Sequence[Message], rng: random.Random) -> str | None:
    """A protected marker cut from one line of one text of ``conv``, if any.

    Lines, because a message's searchable text joins its parts with newlines,
    and a repair that drops a blank part would move such a marker's match.
    Short markers often occur in the strategies' own placeholders ("ok" in
    "tokens"), and in the placeholder turn ``CONTINUED``, which no marker
    pins.
    """
    lines = [
        line
        for m in conv
        for p in m.parts
        if isinstance(p, (Text, ToolResult))
        for line in p.text.split("\n")
        if line.strip()
    ]
    if not lines:
        return None
    line = rng.choice(lines)
    start = rng.randrange(len(line))
    mark = line[start : start + rng.randint(2, 8)]
    return mark if mark.strip() else None


def make_case(
    index: int, conv: list[Message], counters: dict[str, TokenCounter]
) -> Case:
    """Draw the tokenizer, markers, tools, reserve and budget for a conversation."""
    rng = random.Random(index)
    counter = counters[rng.choice(sorted(counters))]
    provider = counter.provider
    protected: tuple[str, ...] = ()
    if rng.random() < 0.3:
        mark = draw_marker(conv, rng)
        protected = (mark,) if mark else ()
    tools = (TOOL,) if rng.random() < 0.2 else ()
    reserve = rng.choice((0, 0, 0, 5))
    valid = ensure_valid(conv, provider).messages
    flags = pinned_oracle(valid, protected, provider)
    floor = counter.messages(list(pinned_only(valid, flags, provider)), tools=tools)
    wire = to_dicts(conv)
    total = counter.messages(conv, tools=tools)
    pick = rng.random()
    if pick < 0.1:
        limit = floor
    elif pick < 0.2:
        limit = floor - 1
    else:
        limit = int(total * rng.uniform(0, 1.1))
    limit = max(limit, 0)
    # The query has a generator of its own: the draws above stay as they were.
    asking = random.Random(-1 - index)
    query = draw_marker(conv, asking) if asking.random() < 0.3 else None
    return Case(
        index,
        conv,
        Budget(limit, counter, tools, protected, query),
        reserve,
        valid,
        floor,
        wire,
    )


@dataclass(frozen=True)
class Run:
    """One strategy run on one case: the output, or the ``BudgetError``."""

    case: Case
    how: How
    name: str
    strategy: Strategy
    fitted: Fitted | None
    error: BudgetError | None

    def describe(self) -> str:
        """Everything needed to replay the run."""
        c = self.case
        shown = dump(c.conv)
        if len(shown) > MAX_SHOWN:
            shown = shown[:MAX_SHOWN] + " ..."
        return (
            f"{self.how} with {self.strategy!r} for {c.provider}, "
            f"tokenizer {c.budget.counter.tokenizer.name}, limit {c.budget.limit}, "
            f"reserve {c.reserve}, protected {c.protected!r}, "
            f"tools {len(c.budget.tools)}; conversation {c.index}: {shown}"
        )

    @property
    def must_fit(self) -> bool:
        """Whether the output must fit the budget (else ``BudgetError``)."""
        return self.how == "fit" or self.name in ALWAYS_FITS


def execute(case: Case, how: How, name: str) -> Run:
    """Run one strategy on one case, through ``fit`` or directly."""
    return run_with(case, how, name, STRATEGIES[name](random.Random(case.index)))


def run_with(case: Case, how: How, name: str, strategy: Strategy) -> Run:
    """Run ``strategy`` (called ``name``) on one case, through ``fit`` or directly."""
    b = case.budget
    try:
        if how == "fit":
            fitted = fit(
                case.conv,
                limit=b.limit + case.reserve,
                reserve=case.reserve,
                strategy=strategy,
                tokenizer=b.counter,
                tools=b.tools,
                protected=b.protected,
                query=b.query,
            )
        else:
            fitted = strategy(case.conv, b)
    except BudgetError as exc:
        return Run(case, how, name, strategy, None, exc)
    return Run(case, how, name, strategy, fitted, None)


@dataclass(frozen=True)
class Batch:
    """Every run of one strategy, one way, for one provider."""

    name: str
    how: How
    provider: Provider
    runs: list[Run]

    def outputs(self) -> Iterator[tuple[Run, Fitted]]:
        """The runs that returned, with their output."""
        for run in self.runs:
            if run.fitted is not None:
                yield run, run.fitted


def each(runs: Sequence[Run], check: Callable[[Run], object]) -> int:
    """Run ``check`` on every run; fail naming the first failing one."""
    for run in runs:
        try:
            check(run)
        except Exception as exc:
            raise AssertionError(f"fails: {run.describe()}") from exc
    return len(runs)


def make_counters(provider: Provider) -> dict[str, TokenCounter]:
    """One counter per cheap tokenizer, for ``provider``."""
    makers: dict[str, Callable[[], Tokenizer]] = {
        "words": FakeTokenizer,
        "heuristic": HeuristicTokenizer,
    }
    return {k: TokenCounter(make(), provider) for k, make in makers.items()}


OPAQUE_EVERY = 4
"""One conversation in this many gets a document in a user turn (``with_opaque``)."""


def with_opaque(conv: list[Message], provider: Provider) -> list[Message]:
    """``conv`` with a text document, in ``provider``'s own shape, in its first
    user turn (an ``Opaque`` part: counted, kept or dropped whole), and a
    search result in its first tool result (counted, cut with the result)."""
    text = "The fee is 4,200 EUR; the term is 12 months. " * 6
    encoded = base64.b64encode(text.encode()).decode()
    block: dict[str, object]
    if provider == "anthropic":
        source = {"type": "text", "media_type": "text/plain", "data": text}
        block = {"type": "document", "source": source}
    elif provider == "openai":
        data = f"data:text/plain;base64,{encoded}"
        block = {"type": "file", "file": {"filename": "terms.txt", "file_data": data}}
    else:
        data = f"data:text/plain;base64,{encoded}"
        block = {"type": "input_file", "filename": "terms.txt", "file_data": data}
    out = list(conv)
    for k, m in enumerate(out):
        if m.role == "user":
            out[k] = m.with_parts((Opaque.of(provider, block), *m.parts))
            break
    # And a search result in the first tool result: Anthropic's own block, which
    # the other shapes take as its text.
    hit = {
        "type": "search_result",
        "source": "https://kb.example/terms",
        "title": "Terms",
        "content": [{"type": "text", "text": text}],
    }
    for k, m in enumerate(out):
        if m.role == "tool":
            first, *rest = m.parts
            assert isinstance(first, ToolResult)
            held = (Text(first.text), Opaque.of("anthropic", hit))
            out[k] = m.with_parts((replace(first, content=held), *rest))
            break
    return out


@pytest.fixture(scope="module")
def cases(convs: list[list[Message]]) -> dict[Provider, list[Case]]:
    """Every conversation's case, for each provider; one in ``OPAQUE_EVERY``
    holds a document (``with_opaque``)."""
    out: dict[Provider, list[Case]] = {}
    for provider in PROVIDERS:
        counters = make_counters(provider)
        out[provider] = [
            make_case(
                k, with_opaque(c, provider) if k % OPAQUE_EVERY == 1 else c, counters
            )
            for k, c in enumerate(convs)
        ]
    return out


BATCHES = [
    pytest.param((name, how, provider), id=f"{name}-{how}-{provider}")
    for name in STRATEGIES
    for how in ("fit", "direct")
    for provider in PROVIDERS
]


@pytest.fixture(scope="module", params=BATCHES)
def batch(request: pytest.FixtureRequest, cases: dict[Provider, list[Case]]) -> Batch:
    """One strategy, one way, one provider, over the whole pool."""
    name, how, provider = request.param
    mine = cases[provider]
    for counter in {id(c.budget.counter): c.budget.counter for c in mine}.values():
        tok = counter.tokenizer
        if isinstance(tok, FakeTokenizer):
            tok.reset()  # it records every text; keep memory flat
    runs = [execute(case, how, name) for case in mine]
    return Batch(name, how, provider, runs)


# -- the checks (shared with the exact-count test) -------------------------------------


def check_fits(run: Run) -> None:
    """Fits, with an exact report; or BudgetError, as pinned content overflows."""
    c = run.case
    limit = c.budget.limit
    if run.error is not None:
        e = run.error
        assert run.must_fit, "only strategies that drop may raise BudgetError"
        assert e.budget == limit
        assert e.required > e.budget, (e.required, e.budget)
        assert c.floor >= e.required, ("more than the pinned content", c.floor, e)
        assert e.pinned, "BudgetError names nothing"
        return
    assert run.fitted is not None
    out, report = run.fitted.messages, run.fitted.report
    assert report.tokens_after == c.budget.count(out)
    assert report.limit == limit
    assert report.fits == (report.tokens_after <= limit)
    if run.must_fit:
        assert report.tokens_after <= limit, (report.tokens_after, limit)
    if run.how == "fit" and c.budget.count(c.valid) <= limit:
        assert out == c.valid, "a fitting conversation comes back only repaired"
        assert [m.id for m in out] == [m.id for m in c.valid]


def check_pinned(run: Run) -> None:
    """Pinned messages of the valid input are in the output, unchanged, in order."""
    if run.fitted is None:
        return
    c = run.case
    out = run.fitted.messages
    by_id = {m.id: m for m in out}
    keep = [m for m, f in zip(c.valid, c.pinned, strict=True) if f]
    for m in keep:
        assert m.id in by_id, f"pinned {m.id} was removed"
        got = by_id[m.id]
        assert got == m, f"pinned {m.id} was changed"
        assert (got.meta, got.name, got.agent) == (m.meta, m.name, m.agent)
    assert is_subsequence([m.id for m in keep], [m.id for m in out])


def check_units(run: Run) -> None:
    """Exchanges of the output are whole exchanges of the input; none is broken."""
    if run.fitted is None:
        return
    c = run.case
    out = run.fitted.messages
    assert problems(out, c.provider) == ()
    valid, where, exchanges = c.valid, c.where, c.exchanges
    for u in units(out):
        assert u.kind != "orphan_results", f"orphan results at {u.start}"
        assert u.complete, f"unanswered tool calls at {u.start}"
        if u.kind != "tool_exchange":
            continue
        head = out[u.start]
        assert head.id in exchanges, f"{head.id} opens no exchange of the input"
        start, stop = exchanges[head.id]
        if head != valid[start]:  # only a lossless compaction of its arguments
            was = valid[start]
            assert [(t.id, t.name) for t in head.tool_calls] == [
                (t.id, t.name) for t in was.tool_calls
            ], "the calling message's calls were changed"
            assert [t.input for t in head.tool_calls] == [
                t.input for t in was.tool_calls
            ], "the calling message's arguments were changed"
            assert [p for p in head.parts if not isinstance(p, ToolCall)] == [
                p for p in was.parts if not isinstance(p, ToolCall)
            ], "the calling message was changed"
        got = [m.id for m in out[u.start : u.stop]]
        assert got == [m.id for m in valid[start:stop]], "split"
        for m in out[u.start + 1 : u.stop]:
            was = valid[where[m.id]]
            shape = [(r.call_id, r.is_error, r.name) for r in m.tool_results]
            assert shape == [(r.call_id, r.is_error, r.name) for r in was.tool_results]


def check_order(run: Run) -> None:
    """Output ids are a subsequence of the (validated) input ids."""
    if run.fitted is None:
        return
    c = run.case
    # A summary (the default pipeline's) stands for messages it replaced.
    out = ids([m for m in run.fitted.messages if not is_summary(m)])
    assert len(set(out)) == len(out), "a message appears twice"
    assert is_subsequence(out, ids(c.valid)), (out, ids(c.valid))
    assert is_subsequence(ids(c.valid), ids(c.conv))
    for s in (m for m in run.fitted.messages if is_summary(m)):
        # What it stands for: input messages, in order, none of them sent.
        sources = list(summary_sources(s))
        assert is_subsequence(sources, ids(c.conv)), (sources, ids(c.conv))
        assert not set(sources) & set(out), "summarised and sent"
        assert summary_handle(s) is not None, "a summary names no handle"


def check_provider(run: Run) -> None:
    """The output obeys the provider's rules (checked here without ``problems``)."""
    if run.fitted is None:
        return
    out = run.fitted.messages
    anthropic = run.case.provider == "anthropic"
    turns = [m for m in out if m.role != "system"]
    if anthropic and turns:
        assert turns[0].role == "user", "Anthropic's first turn is the user's"
    for m in turns:
        texts = [p.text for p in m.parts if isinstance(p, Text)]
        content = any(t.strip() for t in texts) or any(
            isinstance(p, (ToolCall, ToolResult, Image, Opaque)) for p in m.parts
        )
        if m.role == "assistant" or (anthropic and m.role == "user"):
            assert content, f"{m.role} turn {m.id} has no content"
        if anthropic:
            assert all(t.strip() for t in texts), f"blank text block in {m.id}"
    if turns and turns[0].id == CONTINUED_ID:
        assert anthropic, "a placeholder turn only Anthropic needs"
        assert len(turns) > 1, "a placeholder alone"
        assert turns[1].role == "assistant", "needless placeholder"


def check_report(run: Run) -> None:
    """Every removed or changed message is named by a change; the totals add up."""
    if run.fitted is None:
        return
    c = run.case
    out, report = run.fitted.messages, run.fitted.report
    assert report.tokens_before == c.budget.count(c.conv)
    assert report.tokens_before - sum(ch.saved for ch in report.changes) == (
        report.tokens_after
    )
    named: dict[str, set[str]] = {}
    raw = {m.id: i for i, m in enumerate(c.conv)}
    by_id = {m.id: m for m in out}
    for ch in report.changes:
        assert ch.ids, ch
        assert ch.tokens_before >= 0
        assert ch.tokens_after >= 0
        named.setdefault(ch.kind, set()).update(ch.ids)
        assert 0 <= ch.index <= len(c.conv), ("index", ch)
        if ch.ids[0] in raw:
            assert c.conv[ch.index].id == ch.ids[0], ("index", ch)
        if ch.kind == "dropped":
            assert ch.tokens_after == 0
            gone = [i for i in ch.ids if i in by_id and i != CONTINUED_ID]
            assert not gone, ("dropped but present", ch)
        elif ch.kind in MARKERS:
            assert ch.saved > 0, ch
            (only,) = ch.ids
            assert c.conv[raw[only]].role == "tool", ch
            if only in by_id:
                assert by_id[only] != c.conv[raw[only]], ("not changed", ch)
        elif ch.kind == "compacted":
            assert ch.saved > 0, ch
            (only,) = ch.ids
            assert c.conv[raw[only]].role in ("assistant", "tool"), ch
        elif ch.kind == "collapsed":
            assert ch.saved > 0, ch
            first, *rest = ch.ids
            assert first not in by_id or by_id[first].role == "assistant", ch
            assert not any(i in by_id for i in rest), ("collapsed but present", ch)
    removed = (
        named.get("dropped", set())
        | named.get("repaired", set())
        | named.get("collapsed", set())
        | named.get("summarized", set())
    )
    rewritten = set().union(*(named.get(k, set()) for k in REWRITES))
    for m in c.conv:
        if m.id not in by_id:
            assert m.id in removed, f"{m.id} left without a change naming it"
    for m in out:
        if m.id not in raw:
            made = named.get("repaired", set()) | named.get("summarized", set())
            assert m.id in made, f"{m.id} added unreported"
        else:
            was = c.conv[raw[m.id]]
            if m != was or m.meta != was.meta:
                assert m.id in rewritten, f"{m.id} changed without a change naming it"


def content(m: Message) -> tuple[object, ...]:
    """What a handle names of a message: its role, name and parts."""
    return (m.role, m.name, m.parts)


def check_handles(run: Run) -> None:
    """Every rewritten message, and every marker, names a handle recalling the
    exact original from the history the strategy was given (the input, or the
    input as ``fit`` repaired it)."""
    if run.fitted is None:
        return
    c = run.case
    histories = [c.conv, c.valid]
    by_id = [{m.id: m for m in h} for h in histories]
    collapsed = {
        ch.ids[0]: ch.ids for ch in run.fitted.report.changes if ch.kind == "collapsed"
    }
    for m in run.fitted.messages:
        was = by_id[1].get(m.id)
        if was is None or (m == was and m.meta == was.meta):
            continue
        ids = collapsed.get(m.id, (m.id,))
        if m.id not in collapsed and (
            m.role != was.role or len(m.parts) != len(was.parts)
        ):
            continue  # a repair (it removes parts; nothing to recall)
        h = handle_of(m)
        # By content: of two messages alike but for their pins, a handle
        # recalls the first.
        assert any(
            list(map(content, originals(hist, h))) == [content(known[i]) for i in ids]
            for hist, known in zip(histories, by_id, strict=True)
            if all(i in known for i in ids)
        ), ("handle does not recall the original", m.id, h)
        for named in find_handles(m.text):
            assert named == h or any(originals(hist, named) for hist in histories), (
                "a marker names an unknown handle",
                named,
            )
    sent = run.fitted.messages
    for s in (m for m in sent if is_summary(m)):
        # Its header's handle recalls, from the input and the output sent,
        # every message it stands for, in order.
        sources = summary_sources(s)
        replaced = recall(c.conv, sources)
        assert [m.id for m in replaced] == list(sources), "a source is not recalled"
        handle = summary_handle(s)
        assert handle is not None
        assert find_handles(s.text.partition("\n")[0]) == [handle]
        got = context_recall(c.conv, handle, view=sent, max_tokens=MAX_RECALL_TOKENS)
        whole = render(replaced)
        if HeuristicTokenizer().count(whole) <= MAX_RECALL_TOKENS:
            assert got == whole, "a summary's handle does not recall its sources"


def check_written(run: Run) -> None:
    """What goes out in the provider's shape counts what the report says, or less.

    The output is written as the provider takes it and read back: a writer
    that sends more than a strategy counted (a cut it cannot make, a block it
    passes on whole) would overflow the budget silently.
    """
    if run.fitted is None:
        return
    c = run.case
    out = run.fitted.messages
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ContentDroppedWarning)
        sent = from_provider(to_provider(out, c.provider), c.provider)
    # An image's stated size is not in the wire shapes: read back, it is
    # counted at the provider's default size, as a provider with the file would.
    assert c.budget.count(sent) <= c.budget.count(unsized(out)), run.describe()


def unsized(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with every image's stated width and height forgotten."""

    def part(p: Part) -> Part:
        if isinstance(p, Image):
            return Image(p.url, detail=p.detail)
        if isinstance(p, ToolResult) and not isinstance(p.content, str):
            return replace(p, content=tuple(map(part, p.content)))  # type: ignore[arg-type]
        return p

    return [m.with_parts(map(part, m.parts)) for m in messages]


def anthropic_turns(messages: Sequence[Message]) -> list[tuple[str, list[Any]]]:
    """The conversation as Anthropic reads it: written, same-role turns merged."""
    turns: list[tuple[str, list[Any]]] = []
    for m in to_provider(messages, "anthropic").messages:
        content = m["content"]
        blocks = content if isinstance(content, list) else [{"type": "text"}]
        if turns and turns[-1][0] == m["role"]:
            turns[-1][1].extend(blocks)
        else:
            turns.append((m["role"], list(blocks)))
    return turns


def check_thinking(run: Run) -> None:
    """Anthropic: a loop that opened with thinking still opens with it, unchanged."""
    c = run.case
    if run.fitted is None or c.provider != "anthropic":
        return
    turn = thinking_oracle(c.valid)
    if not turn:
        return
    opener = [c.valid[i] for i in sorted(turn) if c.valid[i].role == "assistant"]
    (_, expected), *_ = anthropic_turns([Message.user("task"), *opener])[1:]
    turns = anthropic_turns(run.fitted.messages)
    results_only = [
        role == "user" and all(b["type"] == "tool_result" for b in blocks)
        for role, blocks in turns
    ]
    assert results_only[-1], "the output no longer ends inside the loop"
    # The loop opens after the last user turn that is not only tool results.
    task = max(
        (
            k
            for k, (role, _) in enumerate(turns)
            if role == "user" and not results_only[k]
        ),
        default=-1,
    )
    role, blocks = turns[task + 1]
    assert role == "assistant"
    assert blocks[0] == expected[0], "the loop does not open with its thinking block"
    # The writer renames a call id the conversation reuses: ids aside, the same.
    unnamed = [{k: v for k, v in b.items() if k != "id"} for b in blocks]
    assert unnamed[: len(expected)] == [
        {k: v for k, v in b.items() if k != "id"} for b in expected
    ], "the loop's opening turn changed"


ALL_CHECKS = (
    check_fits,
    check_pinned,
    check_units,
    check_order,
    check_provider,
    check_report,
    check_handles,
    check_written,
    check_thinking,
)


class TestFitting:
    def test_fits_the_budget_or_names_the_pinned_content(self, batch: Batch) -> None:
        """Output fits (exact report) or BudgetError, and only when pinned overflows."""
        each(batch.runs, check_fits)
        if batch.how == "fit" or batch.name in ALWAYS_FITS:
            errors = sum(r.error is not None for r in batch.runs)
            assert 0 < errors < len(batch.runs), "budgets must both fit and overflow"

    def test_pinned_messages_are_kept_unchanged_and_in_order(
        self, batch: Batch
    ) -> None:
        """System, pinned, protected and final messages of the valid input survive."""
        each(batch.runs, check_pinned)

    def test_tool_exchanges_are_kept_or_dropped_whole(self, batch: Batch) -> None:
        """No orphan result, no unanswered call, no exchange split or altered."""
        each(batch.runs, check_units)

    def test_order_is_preserved(self, batch: Batch) -> None:
        """Output ids are a subsequence of the input ids (but the placeholder)."""
        each(batch.runs, check_order)

    def test_output_is_valid_for_the_provider(self, batch: Batch) -> None:
        """Anthropic opens on a user turn; no turn without content, no blank block."""
        each(batch.runs, check_provider)

    def test_a_thinking_loop_opens_with_its_thinking_block(self, batch: Batch) -> None:
        """Anthropic: the loop a conversation ends in still opens with its thinking."""
        each(batch.runs, check_thinking)

    def test_what_is_written_is_what_was_counted(self, batch: Batch) -> None:
        """The request in the provider's shape counts no more than reported."""
        each(batch.runs, check_written)

    def test_input_is_never_mutated(self, batch: Batch) -> None:
        """Every conversation, in the wire form, is as it was before any run."""
        for run in batch.runs:
            assert to_dicts(run.case.conv) == run.case.wire, run.describe()

    def test_every_cut_recalls_its_original(self, batch: Batch) -> None:
        """Each rewritten message's handle recalls exactly its original."""
        each(batch.runs, check_handles)

    def test_report_accounts_for_every_change(self, batch: Batch) -> None:
        """tokens_before - saved == tokens_after; every drop and rewrite is named."""
        each(batch.runs, check_report)
        kinds = {
            ch.kind for _, fitted in batch.outputs() for ch in fitted.report.changes
        }
        # Every strategy shows its own kind of change somewhere in the CI pool
        # (1,000 conversations, the same on every run); a small random dev pool
        # may hold no repeated tool output for Deduplicate to act on.
        if pool_size() >= 1000:
            assert kinds >= OWN_KINDS[batch.name], kinds


class TestExactCounts:
    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_every_invariant_holds_with_exact_counts(
        self,
        provider: Provider,
        some_convs: list[list[Message]],
        o200k: Tokenizer,
    ) -> None:
        """Every check, with o200k_base counts: each strategy in turn, both ways."""
        counters = {"o200k": TokenCounter(o200k, provider)}
        names = sorted(STRATEGIES)
        runs = []
        for k, conv in enumerate(some_convs):
            case = make_case(k, conv, counters)
            how: How = "fit" if k % 2 else "direct"
            run = execute(case, how, names[k // 2 % len(names)])
            for check in ALL_CHECKS:
                each([run], check)
            assert to_dicts(conv) == case.wire, run.describe()
            runs.append(run)
        assert any(r.error is not None for r in runs)
        assert any(r.fitted is not None and r.fitted.report.changes for r in runs)


class TestEnsureValid:
    def test_repairs_any_history_and_is_idempotent(
        self, convs: list[list[Message]]
    ) -> None:
        """Histories broken by deleting and shuffling messages come back valid."""
        repaired = 0

        def check(conv: list[Message], rng: random.Random) -> None:
            nonlocal repaired
            broken = [m for m in conv if rng.random() > 0.25]
            for _ in range(rng.randint(0, 3)):
                if len(broken) > 1:
                    i = rng.randrange(len(broken) - 1)
                    broken[i], broken[i + 1] = broken[i + 1], broken[i]
            if broken and rng.random() < 0.3:
                broken.insert(0, broken.pop(rng.randrange(len(broken))))
            if broken and rng.random() < 0.2:
                broken.append(rng.choice(broken))  # a message twice
            for provider in PROVIDERS:
                before = to_dicts(broken)
                found = problems(broken, provider)
                v = ensure_valid(broken, provider)
                assert to_dicts(broken) == before, "input mutated"
                assert v.problems == found
                assert len(v.before) == len(v.after) == len(found)
                assert problems(v.messages, provider) == ()
                again = ensure_valid(v.messages, provider)
                assert again.problems == ()
                assert all(
                    a is b for a, b in zip(again.messages, v.messages, strict=True)
                )
                if not found:
                    assert all(a is b for a, b in zip(v.messages, broken, strict=True))
                repaired += bool(found)
                assert is_subsequence(ids(v.messages), [m.id for m in broken])
                for m in v.messages:
                    if m.id == CONTINUED_ID:
                        continue
                    was = next(o for o in broken if o.id == m.id)
                    assert (m.role, m.name, m.agent, m.pinned) == (
                        was.role,
                        was.name,
                        was.agent,
                        was.pinned,
                    )
                    kept = iter(was.parts)
                    assert all(any(p is q for q in kept) for p in m.parts), (
                        "a repair only removes parts"
                    )

        for_each(convs, check)
        assert repaired > len(convs), "most broken histories need repairs"


# -- cases the properties found; an xfail is a reported bug (strict: fix, unmark) --


class TestFoundCases:
    def test_bare_strategies_keep_the_valid_final_message(self) -> None:
        """A history ending in an empty reply keeps its last real turn."""
        conv = [
            Message.user("hello", id="u1"),
            Message.assistant("hi", id="a1"),
            Message.user("the question that matters", id="u2"),
            Message.assistant("", id="a2"),  # an empty reply: ensure_valid drops it
        ]
        counter = TokenCounter(FakeTokenizer(), "openai")
        window = SlidingWindow(1)(conv, Budget(1000, counter))
        assert [m.id for m in window.messages] == ["u2"]
        with pytest.raises(BudgetError):  # once: returned () and "fit"
            DropOldest()(conv[2:], Budget(5, counter))

    def test_placeholders_do_not_pin_what_they_replace(self) -> None:
        """Clearing a result does not make it protected ("tokens" is in the note)."""
        conv = [
            Message.user("read it"),
            Message.assistant(tool_calls=[ToolCall("c1", "read")]),
            Message.tool("c1", "data " * 100),
            Message.assistant("done"),
            Message.user("next?"),
        ]
        counter = TokenCounter(FakeTokenizer(), "openai")
        strategy = Pipeline(ClearToolResults(keep_recent=0), DropOldest())
        plain = fit(conv, limit=15, strategy=strategy, tokenizer=counter)
        assert plain.report.fits
        marked = fit(  # once: BudgetError naming the cleared exchange
            conv, limit=15, strategy=strategy, tokenizer=counter, protected=["tokens"]
        )
        assert marked.messages == plain.messages

    def test_a_marker_does_not_pin_the_placeholder_turn(self) -> None:
        """Anthropic: the placeholder goes with the opening assistant turn."""
        conv = [
            Message.assistant("hello there " * 10, id="a0"),
            Message.user("question one", id="u1"),
            Message.assistant("answer", id="a1"),
            Message.user("last question", id="u2"),
        ]
        counter = TokenCounter(FakeTokenizer(), "anthropic")
        # keep_first=1 too: the placeholder a repair put first is not the task.
        for keep_first in (0, 1):
            for protected in ([], ["cont"]):
                fitted = fit(
                    conv,
                    limit=20,
                    strategy=DropOldest(keep_first=keep_first),
                    tokenizer=counter,
                    protected=protected,
                )
                ids = [m.id for m in fitted.messages]
                assert ids == ["u1", "a1", "u2"], (keep_first, protected)

    def test_budget_error_names_the_request_overhead(self) -> None:
        """An empty conversation over a budget below the reply priming says why."""
        with pytest.raises(BudgetError) as info:
            fit([], limit=0, tokenizer=TokenCounter(FakeTokenizer(), "openai"))
        assert info.value.pinned, "BudgetError names nothing"
