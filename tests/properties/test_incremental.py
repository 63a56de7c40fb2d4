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
