"""Incremental re-fitting gives exactly what fitting from scratch gives.

Each conversation of the pool is grown step by step, one message at a time
(mid-exchange too, so repairs happen), then by a copy of its own tool
exchanges with fresh call ids (repeated outputs, for ``Deduplicate``). At
every step it is fitted twice: with one ``TokenCounter`` reused across the
steps (its memo holds what each strategy decided at the step before) and with
a fresh counter. Same messages (ids included), same report, or the same
``BudgetError``: that is the guarantee of every cache a re-fit uses.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import replace

import pytest

from contextwindow import fit
from contextwindow.errors import BudgetError
from contextwindow.messages import Message, Provider, ToolCall, ToolResult
from contextwindow.relevance import BM25Scorer
from contextwindow.strategies import (
    ClearToolResults,
    CompactLossless,
    Deduplicate,
    DropOldest,
    MaxMessages,
    Pipeline,
    SelectRelevant,
    SlidingWindow,
    StaleReads,
    Strategy,
    Summarize,
    TruncateToolInputs,
    TruncateToolResults,
)
from contextwindow.strategies.base import Report
from contextwindow.summarizers import ExtractiveSummarizer
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens.counting import TokenCounter

from ._support import for_each

STRATEGIES: dict[str, Callable[[], Strategy | None]] = {
    "default": lambda: None,
    "DropOldest": DropOldest,
    "DropOldest-keep0": lambda: DropOldest(keep_first=0),
    "TruncateToolResults": lambda: TruncateToolResults(keep_recent=1, max_tokens=5),
    "ClearToolResults": lambda: ClearToolResults(keep_recent=1),
    "ClearToolResults-0": lambda: ClearToolResults(keep_recent=0),
    "Deduplicate": Deduplicate,
    "Deduplicate-exact": lambda: Deduplicate(near=False),
    "CompactLossless": CompactLossless,
    "StaleReads": StaleReads,
    "TruncateToolInputs": lambda: TruncateToolInputs(keep_recent=1, max_tokens=2),
    "ClearToolResults-nocollapse": lambda: ClearToolResults(keep_recent=1, max_share=1),
    "Pipeline": lambda: Pipeline(
        Deduplicate(),
        TruncateToolResults(keep_recent=1, max_tokens=5),
        ClearToolResults(keep_recent=1),
        DropOldest(),
    ),
    "SlidingWindow": lambda: SlidingWindow(3),
    "MaxMessages": lambda: MaxMessages(4),
    "SelectRelevant": lambda: SelectRelevant(2),
    "Summarize": lambda: Summarize(keep_recent=1),
}

PROVIDERS: tuple[Provider, ...] = ("openai", "anthropic")

SAMPLE = 24
"""Conversations of the pool each strategy is grown through, step by step."""


def reissued(conv: Sequence[Message], tag: str) -> list[Message]:
    """``conv``'s messages again, with fresh ids and call ids (same outputs)."""
    out: list[Message] = []
    for m in conv:
        if m.role == "system":
            continue
        parts = tuple(
            ToolCall(f"{tag}{p.id}", p.name, p.arguments)
            if isinstance(p, ToolCall)
            else ToolResult(f"{tag}{p.call_id}", p.content, p.is_error, p.name)
            if isinstance(p, ToolResult)
            else p
            for p in m.parts
        )
        out.append(Message(m.role, parts, name=m.name, agent=m.agent, pinned=m.pinned))
    return out


def outcome(
    conv: list[Message], counter: TokenCounter, limit: int, **kw: object
) -> object:
    """What ``fit`` gives: messages with ids, and the report; or the error."""
    try:
        fitted = fit(conv, limit=limit, tokenizer=counter, **kw)  # type: ignore[arg-type]  # the keywords are fit's
    except BudgetError as exc:
        return ("BudgetError", str(exc))
    return ([(m, m.id) for m in fitted.messages], fitted.report)


@pytest.mark.parametrize("name", list(STRATEGIES))
@pytest.mark.parametrize("provider", PROVIDERS)
def test_refit_equals_fit_from_scratch(
    convs: list[list[Message]], name: str, provider: Provider
) -> None:
    """A re-fit with a warm counter equals a fit from scratch, at every step."""

    def check(conv: list[Message], rng: random.Random) -> None:
        if len(conv) < 2:
            return
        grown = conv + reissued(conv, "again-")
        whole = TokenCounter(FakeTokenizer(), provider).messages(grown)
        limit = int(whole * rng.choice((0.1, 0.3, 0.5, 0.8)))
        markers: tuple[str, ...] = ()
        texts = [m.text for m in conv if len(m.text) > 6]
        if texts and rng.random() < 0.2:
            t = rng.choice(texts)
            markers = (t[:6],)
        warm = TokenCounter(FakeTokenizer(), provider)
        for n in range(1, len(grown) + 1):
            step = grown[:n]
            kw = {"strategy": STRATEGIES[name](), "protected": markers}
            cold = TokenCounter(FakeTokenizer(), provider)
            got = outcome(step, warm, limit, **kw)
            want = outcome(step, cold, limit, **kw)
            assert got == want, f"step {n} of {len(grown)}, limit {limit}"

    # Every step of every conversation is fitted twice: a sample of the pool,
    # the same size in every profile (CI's pool is five times the default's),
    # spread over its sizes; Summarize's summaries make each step costly.
    pool = convs[:: max(1, len(convs) // SAMPLE)]
    if name == "Summarize":
        pool = pool[: len(pool) // 4]
    assert for_each(pool, check) > 0


REWRITING = (
    "default",
    "TruncateToolResults",
    "ClearToolResults",
    "ClearToolResults-0",
    "ClearToolResults-nocollapse",
    "Deduplicate",
    "CompactLossless",
    "TruncateToolInputs",
    "Pipeline",
)
"""The strategies whose scans one memo entry keeps for any limit."""


@pytest.mark.parametrize("name", REWRITING)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_refit_equals_fit_from_scratch_as_the_limit_moves(
    convs: list[list[Message]], name: str, provider: Provider
) -> None:
    """A warm counter asked for another limit at each step (a manager's
    thresholds, a stage trying larger budgets) still gives a fit from scratch:
    a scan kept for one limit resumes for a larger or smaller one."""

    def check(conv: list[Message], rng: random.Random) -> None:
        if len(conv) < 2:
            return
        grown = conv + reissued(conv, "again-")
        whole = TokenCounter(FakeTokenizer(), provider).messages(grown)
        warm = TokenCounter(FakeTokenizer(), provider)
        for n in range(1, len(grown) + 1):
            step = grown[:n]
            # Twice at each step: the limits of the last step and this one.
            for _ in range(2):
                limit = int(whole * rng.choice((0.1, 0.2, 0.3, 0.5, 0.8)))
                kw = {"strategy": STRATEGIES[name]()}
                cold = TokenCounter(FakeTokenizer(), provider)
                got = outcome(step, warm, limit, **kw)
                want = outcome(step, cold, limit, **kw)
                assert got == want, f"step {n} of {len(grown)}, limit {limit}"

    pool = convs[:: max(1, len(convs) // SAMPLE)]
    assert for_each(pool, check) > 0


def file_session(seed: int, turns: int = 40) -> list[Message]:
    """An agent reading and editing a few files, again and again."""
    rng = random.Random(seed)
    conv = [Message.system("You edit code."), Message.user("fix the tests")]
    for k in range(turns):
        path = f"src/m{rng.randrange(4)}.py"
        tool = rng.choice(("Read", "Read", "Edit", "Bash"))
        args = (
            f'{{"command": "cat {path}"}}'
            if tool == "Bash"
            else f'{{"file_path": "{path}"}}'
        )
        call = ToolCall(f"f{seed}-{k}", tool, args)
        body = f"{path} v{k}\n" + "def f():\n    return 1\n" * rng.randrange(2, 30)
        conv += [Message.assistant(tool_calls=[call]), Message.tool(call.id, body)]
        if rng.random() < 0.3:
            conv.append(Message.user(f"and {k}?"))
    return conv


@pytest.mark.parametrize("name", ["StaleReads", "default", "CompactLossless"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_refit_equals_fit_from_scratch_on_file_sessions(
    name: str, provider: Provider
) -> None:
    """The same on sessions whose reads go stale (file tools the pool lacks)."""
    for seed in range(2):
        grown = file_session(seed)
        whole = TokenCounter(FakeTokenizer(), provider).messages(grown)
        for share in (0.2, 0.6):
            limit = int(whole * share)
            warm = TokenCounter(FakeTokenizer(), provider)
            for n in range(2, len(grown) + 1):
                kw = {"strategy": STRATEGIES[name]()}
                got = outcome(grown[:n], warm, limit, **kw)
                want = outcome(
                    grown[:n], TokenCounter(FakeTokenizer(), provider), limit, **kw
                )
                assert got == want, f"seed {seed}, step {n}, limit {limit}"


def _shared_words(documents: Sequence[str], query: str, /) -> list[float]:
    """A scorer with no index of its own: words shared with the query."""
    q = set(query.lower().split())
    return [float(len(q & set(d.lower().split()))) for d in documents]


SCORERS: dict[str, Callable[[], object]] = {
    "bm25": BM25Scorer,
    "bm25-plain": lambda: BM25Scorer(context=()),
    "bm25-wide": lambda: BM25Scorer(context=((1, 0.5), (3, 0.0), (5, 2.0))),
    "words": lambda: _shared_words,
}


@pytest.mark.parametrize("scorer", list(SCORERS))
@pytest.mark.parametrize("provider", PROVIDERS)
def test_select_relevant_refit_under_changing_queries(
    convs: list[list[Message]], scorer: str, provider: Provider
) -> None:
    """``SelectRelevant``'s kept index never changes its answer.

    The conversation grows, is cut back and has a message replaced; the
    query stays, changes, or is the final message's text.
    """

    def check(conv: list[Message], rng: random.Random) -> None:
        if len(conv) < 2:
            return
        grown = conv + reissued(conv, "again-")
        whole = TokenCounter(FakeTokenizer(), provider).messages(grown)
        limit = int(whole * rng.choice((0.1, 0.3, 0.6)))
        texts = [m.text for m in grown if m.text] or ["nothing"]
        warm = TokenCounter(FakeTokenizer(), provider)
        strategy = SelectRelevant(rng.choice((0, 1, 3)), SCORERS[scorer]())  # type: ignore[arg-type]  # a scorer
        query: str | None = None
        n = 1
        for step in range(2 * len(grown)):
            roll = rng.random()
            if roll < 0.6:
                n = min(len(grown), n + rng.choice((1, 1, 2, 5)))
            elif roll < 0.8:
                n = max(1, n - rng.randrange(1, 4))
            view = grown[:n]
            if roll >= 0.8 and n > 2:  # one message replaced by another's copy
                i = rng.randrange(n - 1)
                view = [*view[:i], Message.user(rng.choice(texts)), *view[i + 1 :]]
            if rng.random() < 0.4:
                query = rng.choice((None, rng.choice(texts)))
            kw = {"strategy": strategy, "query": query}
            got = outcome(view, warm, limit, **kw)
            want = outcome(view, TokenCounter(FakeTokenizer(), provider), limit, **kw)
            assert got == want, f"step {step}, {n} messages, limit {limit}"

    # Twice as many fits per step as above: half the sample.
    pool = convs[:: max(1, len(convs) // SAMPLE)][::2]
    assert for_each(pool, check) > 0


class _Counting:
    """The extractive summarizer, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.inner = ExtractiveSummarizer()

    def summarize(self, messages: Sequence[Message], **kw: object) -> str:
        self.calls += 1
        return self.inner.summarize(messages, **kw)  # type: ignore[arg-type]  # previous, max_tokens


@pytest.mark.parametrize("provider", PROVIDERS)
def test_summarize_reuses_its_summary_while_the_cut_stays(provider: Provider) -> None:
    """Growing by less than a step reuses the summary; an edit makes a new one.

    Each re-fit equals a fit from scratch; the summarizer is called again
    only when the cut moved or what it replaced changed.
    """
    grown = file_session(3, turns=60)
    whole = TokenCounter(FakeTokenizer(), provider).messages(grown)
    limit = int(whole * 0.3)
    counting = _Counting()
    strategy = Summarize(counting, keep_recent=2)
    other = Summarize(_Counting(), keep_recent=2)  # for the fits from scratch
    warm = TokenCounter(FakeTokenizer(), provider)
    reused = 0
    last: tuple[tuple[str, ...], ...] = ()
    for n in range(len(grown) // 2, len(grown) + 1):
        view = grown[:n]
        before = counting.calls
        got = outcome(view, warm, limit, strategy=strategy)
        calls = counting.calls - before
        want = outcome(
            view, TokenCounter(FakeTokenizer(), provider), limit, strategy=other
        )
        assert got == want, f"step {n}"
        assert isinstance(got, tuple)
        assert isinstance(got[1], Report)
        cut = tuple(c.ids for c in got[1].changes if c.kind == "summarized")
        if cut and cut == last:
            assert calls == 0, f"step {n}: summarised again"
            reused += 1
        last = cut
    assert reused > 10  # the cut stayed for many steps
    # A message inside what was summarised, edited to the same size: the
    # same cut, the same target, yet summarised again.
    edited = [grown[0], Message.user("fix the docs"), *grown[2:]]
    before = counting.calls
    got = outcome(edited, warm, limit, strategy=strategy)
    assert counting.calls > before
    assert got == outcome(
        edited, TokenCounter(FakeTokenizer(), provider), limit, strategy=other
    )


@pytest.mark.parametrize("provider", PROVIDERS)
def test_summarize_refit_as_the_conversation_wanders(
    convs: list[list[Message]], provider: Provider
) -> None:
    """``Summarize``'s kept layout and cut never change its answer.

    The conversation grows by one or more messages, is cut back, has a
    message replaced (inside what was summarised too), or is replaced by
    the last output grown on (its summary then rolls forward); markers pin
    some messages. Each warm fit equals a fit from scratch.
    """

    def check(conv: list[Message], rng: random.Random) -> None:
        if len(conv) < 2:
            return
        grown = conv + reissued(conv, "again-") + reissued(conv, "third-")
        whole = TokenCounter(FakeTokenizer(), provider).messages(grown)
        limit = int(whole * rng.choice((0.1, 0.3, 0.6)))
        texts = [m.text for m in grown if len(m.text) > 6] or ["nothing"]
        markers = (rng.choice(texts)[:6],) if rng.random() < 0.3 else ()
        strategy = Summarize(keep_recent=rng.choice((0, 1, 3)))
        warm = TokenCounter(FakeTokenizer(), provider)
        n = max(1, len(grown) // 2)
        base: list[Message] = []  # an earlier output, when fitting onto it
        for step in range(len(grown)):
            roll = rng.random()
            if roll < 0.6:
                n = min(len(grown), n + rng.choice((1, 1, 2, 4)))
            elif roll < 0.7:
                n = max(1, n - rng.randrange(1, 4))
            view = [*base, *grown[:n]] if base else grown[:n]
            if 0.7 <= roll < 0.8 and len(view) > 2:
                # Another text, or the same message again under a new id,
                # mostly where the summary is.
                i = rng.randrange(
                    len(view) // 2 if rng.random() < 0.8 else len(view) - 1
                )
                other = (
                    Message.user(rng.choice(texts))
                    if rng.random() < 0.5
                    else replace(view[i], id=f"edited-{step}")
                )
                view = [*view[:i], other, *view[i + 1 :]]
            kw = {"strategy": strategy, "protected": markers}
            got = outcome(view, warm, limit, **kw)
            want = outcome(view, TokenCounter(FakeTokenizer(), provider), limit, **kw)
            assert got == want, f"step {step}, {len(view)} messages, limit {limit}"
            if roll >= 0.95 and isinstance(got, tuple) and isinstance(got[1], Report):
                # A manager's view: the fitted output, then what comes next.
                base = [m for m, _ in got[0]][:-1]
                grown, n = grown[n:], 1
                if len(grown) < 2:
                    return

    # Summaries make each fit costly: a fifth of the sample, and agent
    # sessions long enough for the cut to stay while they grow.
    pool = convs[:: max(1, len(convs) // SAMPLE)][::5]
    assert for_each(pool, check) > 0
    for seed in range(2):
        check(file_session(seed, turns=10), random.Random(seed))


EDITS = ("append", "append", "append", "cut", "twin", "other", "meta", "tuple")
"""What ``test_refit_under_edits_of_one_list`` does to the list between fits."""

EDIT_STEPS = 24
"""Edits made to each conversation's list, each followed by a warm and a cold fit."""


def _edit(
    live: list[Message], pool: Sequence[Message], rng: random.Random
) -> list[Message] | tuple[Message, ...]:
    """Change ``live`` in place as a caller might; returns what to fit.

    ``twin`` puts, in place of a message, a copy equal to it but for its id
    (messages compare by content, so only identity tells them apart): a
    re-fit that took the old object for the new one would give the old id.
    ``meta`` does the same with the meta it carries (a summary's key, a
    handle); ``tuple`` fits a tuple of the same messages.
    """
    edit = rng.choice(EDITS)
    if edit == "append" or len(live) < 3:
        live.extend(pool[len(live) : len(live) + rng.randint(1, 3)])
    elif edit == "cut":
        del live[rng.randrange(1, len(live)) :]
    elif edit in ("twin", "meta"):
        i = rng.randrange(len(live))
        m = live[i]
        if edit == "twin":
            live[i] = Message(
                m.role, m.parts, name=m.name, agent=m.agent, pinned=m.pinned
            )
        else:
            live[i] = Message(
                m.role,
                m.parts,
                name=m.name,
                agent=m.agent,
                pinned=m.pinned,
                id=m.id,
                meta={**m.meta, "note": rng.random()},
            )
    elif edit == "other":
        i = rng.randrange(len(live))
        live[i] = pool[rng.randrange(len(pool))]
    if edit == "tuple":
        return tuple(live)
    return live


@pytest.mark.parametrize(
    "name", ["default", "DropOldest", "DropOldest-keep0", "Pipeline"]
)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_refit_under_edits_of_one_list(
    convs: list[list[Message]], name: str, provider: Provider
) -> None:
    """One list the caller keeps and edits in place, fitted after each edit.

    Appends, cut-backs, a message swapped for another or for a twin (equal
    content, another id or meta), the list passed as a tuple: the warm
    counter's fit equals a fresh counter's every time (messages with ids,
    report), so no cached decision outlives what it was made for.
    """

    def check(conv: list[Message], rng: random.Random) -> None:
        if len(conv) < 3:
            return
        pool = conv + reissued(conv, "again-")
        whole = TokenCounter(FakeTokenizer(), provider).messages(pool)
        limit = int(whole * rng.choice((0.1, 0.3, 0.5)))
        warm = TokenCounter(FakeTokenizer(), provider)
        live: list[Message] = list(pool[:2])
        for step in range(EDIT_STEPS):
            given = _edit(live, pool, rng)
            kw = {"strategy": STRATEGIES[name]()}
            got = outcome(given, warm, limit, **kw)  # type: ignore[arg-type]  # a tuple is a conversation too
            want = outcome(
                list(given), TokenCounter(FakeTokenizer(), provider), limit, **kw
            )
            assert got == want, f"step {step}, limit {limit}"

    # Half the sample the step-by-step test takes, the same in every profile.
    pool = convs[:: max(1, len(convs) // (SAMPLE // 2))]
    assert for_each(pool, check) > 0
