"""Anthropic's thinking turn: a tool loop that opened with thinking still does.

With thinking on, the assistant message that opens the tool loop a request
ends in must open with its ``thinking`` (or ``redacted_thinking``) block, sent
back unmodified; Claude thinks only there, so in a long loop no later message
holds one. The pool's conversations rarely end so (a few in 200), so each is
continued here by a task and such a loop (``looped``), of a few to a few
dozen messages, whose results are short or long. Then every invariant of
``test_fitting`` holds for every strategy, both ways (``check_thinking``
among them: what the oracle ``thinking_oracle`` pins is kept, and the
output's loop opens with the very block), and a re-fit with a warm counter
equals a fit from scratch at every step of a loop that starts, grows and
ends (its pins come and go).
"""

from __future__ import annotations

import json
import random

from contextwindow.messages import Message, Thinking, ToolCall
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens.counting import TokenCounter

from ._support import for_each
from .test_fitting import (
    ALL_CHECKS,
    STRATEGIES,
    How,
    each,
    execute,
    make_case,
    make_counters,
    thinking_oracle,
)
from .test_incremental import STRATEGIES as REFIT_STRATEGIES
from .test_incremental import outcome

LONG = "def handler(request):\n    return respond(request.body)\n" * 30
"""A long tool result: what makes a loop worth cutting."""


def looped(conv: list[Message], rng: random.Random, tag: str = "") -> list[Message]:
    """``conv``, then a task and a tool loop whose first message opens with thinking."""
    out = [*conv, Message.user(f"Fix the failing tests{tag}, please.")]
    if rng.random() < 0.25:
        thought = Thinking("", signature=f"ErUBCkYIAxgC{tag}", redacted=True)
    else:
        plan = "Read the modules, then run the tests. " * rng.randint(1, 4)
        thought = Thinking(plan, signature=f"EqQBCkgIARABGAIiQL{tag}")
    for k in range(rng.randint(2, 8)):
        cid = f"toolu_loop{tag}_{k}"
        call = ToolCall(cid, "read_file", json.dumps({"path": f"src/m{k}.py"}))
        head = (thought,) if k == 0 else ()
        out.append(Message("assistant", (*head, call)))
        out.append(Message.tool(cid, rng.choice(("ok", LONG[:300], LONG))))
    return out


def test_every_invariant_holds_in_a_thinking_loop(
    some_convs: list[list[Message]],
) -> None:
    """Each strategy, both ways: the loop still opens with its thinking, unmodified."""
    names = sorted(STRATEGIES)
    errors = cut = 0

    def check(conv: list[Message], rng: random.Random) -> None:
        nonlocal errors, cut
        k = rng.randrange(10**6)
        conv = looped(conv, rng)
        for j, name in enumerate(names):
            # Counters of its own: what one strategy keeps in the counter's
            # memo is not another's to resume from.
            case = make_case(k, conv, make_counters("anthropic"))
            turn = thinking_oracle(case.valid)
            assert turn, "the loop opens with thinking"
            loop = case.valid[max(turn) + 1 :]
            how: How = "fit" if (k + j) % 2 else "direct"
            run = execute(case, how, name)
            for invariant in ALL_CHECKS:
                each([run], invariant)
            if run.fitted is None:
                errors += 1
                continue
            out = {m.id: m for m in run.fitted.messages}
            cut += any(out.get(m.id) != m for m in loop)  # went, or was cut

    for_each(some_convs, check)
    # The loops were cut into, and some budgets were below what is pinned.
    assert cut > len(some_convs)
    assert errors > 0


def test_refit_equals_fit_from_scratch_as_a_thinking_loop_comes_and_goes(
    convs: list[list[Message]],
) -> None:
    """A loop opens with thinking, grows and ends: a warm re-fit equals a cold fit."""

    def check(conv: list[Message], rng: random.Random) -> None:
        grown = looped(conv, rng, "-a")
        grown.append(Message.user("Thanks. Now the docs."))
        grown = looped(grown, rng, "-b")
        whole = TokenCounter(FakeTokenizer(), "anthropic").messages(grown)
        limit = int(whole * rng.choice((0.2, 0.4, 0.6)))
        for name, make in REFIT_STRATEGIES.items():
            warm = TokenCounter(FakeTokenizer(), "anthropic")
            for n in range(len(conv) + 1, len(grown) + 1):
                step = grown[:n]
                cold = TokenCounter(FakeTokenizer(), "anthropic")
                got = outcome(step, warm, limit, strategy=make())
                want = outcome(step, cold, limit, strategy=make())
                assert got == want, (name, f"step {n} of {len(grown)}, limit {limit}")

    # A few conversations: every step of each is fitted twice per strategy.
    assert for_each(convs[:: max(1, len(convs) // 6)], check) > 0
