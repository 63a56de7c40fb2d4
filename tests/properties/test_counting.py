"""Properties of ``TokenCounter`` on generated conversations, for every provider.

Each invariant runs with ``FakeTokenizer`` (words) and with the exact
``o200k_base`` BPE, for the ``openai``, ``anthropic`` and ``responses``
framings.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace

import pytest

from contextwindow.messages import Message, Provider, Text
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.counting import TokenCounter

from ._support import for_each

PROVIDERS: tuple[Provider, ...] = ("openai", "anthropic", "responses")
TOKENIZERS = ("fake", "o200k")

Setup = tuple[Callable[[], Tokenizer], list[list[Message]]]
"""How to make a tokenizer, and the conversations to check with it."""


@pytest.fixture(params=TOKENIZERS)
def setup(
    request: pytest.FixtureRequest,
    o200k: Tokenizer,
    convs: list[list[Message]],
    some_convs: list[list[Message]],
) -> Setup:
    """A tokenizer maker and the conversations to check: a fresh
    ``FakeTokenizer`` on every conversation, or the shared ``o200k_base`` one
    on a quarter of them (exact counts are slower)."""
    if request.param == "fake":
        return FakeTokenizer, convs
    return (lambda: o200k), some_convs


def variants(conv: list[Message], rng: random.Random) -> list[list[Message]]:
    """Lists to count after ``conv``: an extension by k messages, a middle
    message replaced, one dropped, and one more edit drawn at random."""
    n = len(conv)
    other = Message.user("an edited message, not like the others")
    out = [conv + conv[: rng.randint(1, 3)]]
    if not n:
        return [*out, [other]]
    i = rng.randrange(n)
    more = [
        [*conv, other],  # extended by a new message
        [
            *conv[:i],
            replace(conv[i], parts=(*conv[i].parts, Text("x y"))),
            *conv[i + 1 :],
        ],
        conv[: rng.randrange(n)],  # cut to a shorter prefix
        [*conv[:i], replace(conv[i]), *conv[i + 1 :]],  # an equal copy
        conv[::-1],
    ]
    return [
        *out,
        [*conv[:i], other, *conv[i + 1 :]],  # a middle message replaced
        conv[:i] + conv[i + 1 :],  # one dropped
        rng.choice(more),
    ]


class TestTokenCounter:
    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_total_is_the_sum_of_messages_and_reply(
        self,
        provider: Provider,
        setup: Setup,
    ) -> None:
        """messages(conv) == sum of message(m) + the reply framing (messages([]))."""
        make_tokenizer, convs = setup
        counter = TokenCounter(make_tokenizer(), provider)
        reply = counter.messages([])

        def check(conv: list[Message], rng: random.Random) -> None:
            fresh = TokenCounter(make_tokenizer(), provider)
            total = sum(fresh.message(m) for m in conv) + reply
            assert fresh.messages(conv) == total
            assert counter.messages(conv) == total

        for_each(convs, check)

    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_warm_counter_agrees_with_a_fresh_one(
        self,
        provider: Provider,
        setup: Setup,
    ) -> None:
        """After counting a list, counting a changed list matches a fresh count."""
        make_tokenizer, convs = setup

        def fresh(msgs: list[Message]) -> int:
            return TokenCounter(make_tokenizer(), provider).messages(msgs)

        def check(conv: list[Message], rng: random.Random) -> None:
            cache_size = rng.choice((1, 2, 100_000))
            warm = TokenCounter(make_tokenizer(), provider, cache_size=cache_size)
            for after in variants(conv, rng):
                warm.messages(conv)
                assert warm.messages(after) == fresh(after), after
            # one list object, changed in place between calls (a growing history)
            history = list(conv)
            warm.messages(history)
            history.append(Message.assistant("one more reply"))
            assert warm.messages(history) == fresh(history)
            if history[:-1]:
                history[rng.randrange(len(history) - 1)] = Message.user("swapped in")
                assert warm.messages(history) == fresh(history)

        for_each(convs, check)

    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_counts_are_never_negative(
        self,
        provider: Provider,
        setup: Setup,
    ) -> None:
        """Message, part and request counts are >= 0; breakdowns sum to message()."""
        make_tokenizer, convs = setup
        counter = TokenCounter(make_tokenizer(), provider)

        def check(conv: list[Message], rng: random.Random) -> None:
            assert counter.messages(conv) >= 0
            for m in conv:
                parts = counter.breakdown(m)
                assert all(v >= 0 for v in parts.values()), parts
                assert sum(parts.values()) == counter.message(m) >= 0
                assert all(counter.part(p) >= 0 for p in m.parts)

        for_each(convs, check)

    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_a_prefix_never_counts_more(
        self,
        provider: Provider,
        setup: Setup,
    ) -> None:
        """messages(conv[:k]) <= messages(conv[:k + 1]) for every k."""
        make_tokenizer, convs = setup

        def check(conv: list[Message], rng: random.Random) -> None:
            counter = TokenCounter(make_tokenizer(), provider)
            totals = [counter.messages(conv[:k]) for k in range(len(conv) + 1)]
            assert totals == sorted(totals), totals
            assert totals[-1] == TokenCounter(make_tokenizer(), provider).messages(conv)

        for_each(convs, check)
