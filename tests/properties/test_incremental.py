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

import pytest

from contextwindow import fit
from contextwindow.errors import BudgetError
from contextwindow.messages import Message, Provider, ToolCall, ToolResult
from contextwindow.strategies import (
    ClearToolResults,
    Deduplicate,
    DropOldest,
    MaxMessages,
    Pipeline,
    SelectRelevant,
    SlidingWindow,
    Strategy,
    Summarize,
    TruncateToolResults,
)
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

    # Every prefix is fitted twice: half the pool (500 conversations under CI),
    # and for Summarize, whose summaries make each step costly, its smallest
    # quarter.
    pool = convs[: len(convs) // 4] if name == "Summarize" else convs[::2]
    assert for_each(pool, check) > 0
