"""Properties of ``units()``: a partition, complete when valid, paired by position."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

import contextwindow.messages as messages_module
from contextwindow.messages import (
    Message,
    Role,
    Text,
    ToolCall,
    ToolResult,
    Unit,
    units,
)
from contextwindow.strategies import (
    Budget,
    ClearToolResults,
    CompactLossless,
    Deduplicate,
    StaleReads,
    TruncateToolInputs,
    TruncateToolResults,
)
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens import TokenCounter

from ._support import edited, for_each

Pairs = dict[tuple[int, int], tuple[int, int]]
"""(call message index, call position) -> (tool message index, result position)."""


def check_partition(msgs: Sequence[Message]) -> None:
    """Units cover every index once, in order; each unit's kind fits its messages."""
    found = units(msgs)
    pos = 0
    for k, u in enumerate(found):
        assert u.start == pos, f"unit {k} starts at {u.start}, expected {pos}"
        assert u.stop > u.start, f"unit {k} is empty"
        pos = u.stop
        group = msgs[u.start : u.stop]
        head = group[0]
        if u.kind == "system":
            assert len(u) == 1
            assert head.role == "system"
        elif u.kind == "message":
            assert len(u) == 1
            assert head.role in ("user", "assistant")
            assert not (head.role == "assistant" and head.tool_calls)
        elif u.kind == "tool_exchange":
            assert head.role == "assistant"
            assert head.tool_calls
            assert all(m.role == "tool" for m in group[1:])
            pending = list(enumerate(head.tool_calls))
            for m in group[1:]:
                assert answer(m, pending), "each tool message answers pending calls"
            assert u.unanswered == tuple(at for at, _ in pending)
            assert u.complete == (not u.unanswered)
            if pending and u.stop < len(msgs) and msgs[u.stop].role == "tool":
                left = list(pending)  # the next tool message could not join
                assert not answer(msgs[u.stop], left), "the exchange ends too soon"
        else:
            assert u.kind == "orphan_results"
            assert all(m.role == "tool" for m in group)
            assert not u.complete
            if k:  # a run of tool messages answering nothing is one unit
                assert found[k - 1].kind != "orphan_results"
        if u.kind != "tool_exchange":
            assert u.unanswered == ()
    assert pos == len(msgs), f"units end at {pos} of {len(msgs)} messages"
    systems = {i for i, m in enumerate(msgs) if m.role == "system"}
    assert systems == {u.start for u in found if u.kind == "system"}


def answer(msg: Message, pending: list[tuple[int, ToolCall]]) -> bool:
    """Whether every result of ``msg`` answers a pending call (the earliest with
    its id); if so those calls are no longer pending. A message without
    results answers nothing."""
    left = list(pending)
    for r in msg.tool_results:
        hit = next((k for k, (_, c) in enumerate(left) if c.id == r.call_id), None)
        if hit is None:
            return False
        del left[hit]
    pending[:] = left
    return bool(msg.tool_results)


def oracle_pairs(conv: Sequence[Message]) -> tuple[Pairs, list[tuple[int, int]]]:
    """Brute force: each result answers the earliest pending call with its id of
    the latest assistant message with calls. Returns the pairs and the results
    that answer nothing (none in a valid conversation)."""
    pairs: Pairs = {}
    unmatched: list[tuple[int, int]] = []
    pending: list[tuple[str, int, int]] = []  # (call id, message, position)
    for i, m in enumerate(conv):
        if m.role == "assistant" and m.tool_calls:
            pending = [(c.id, i, k) for k, c in enumerate(m.tool_calls)]
        elif m.role == "tool":
            for r_pos, r in enumerate(m.tool_results):
                hit = next(
                    (j for j, (cid, _, _) in enumerate(pending) if cid == r.call_id),
                    None,
                )
                if hit is None:
                    unmatched.append((i, r_pos))
                    continue
                _, call_msg, call_pos = pending.pop(hit)
                pairs[(call_msg, call_pos)] = (i, r_pos)
    return pairs, unmatched


def unit_of(found: Sequence[Unit], index: int) -> Unit:
    """The unit holding message ``index``."""
    return next(u for u in found if u.start <= index < u.stop)


def perturb(conv: list[Message], rng: random.Random) -> list[Message]:
    """Break a conversation at random: drop, duplicate, swap, re-role, add results."""
    out = list(conv)
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(5)
        if not out:
            out.append(Message.tool(rng.choice(("call_0", "c")), "late"))
            continue
        i = rng.randrange(len(out))
        if op == 0:
            del out[i]
        elif op == 1:
            out.insert(i, out[i])
        elif op == 2 and len(out) > 1:
            j = rng.randrange(len(out))
            out[i], out[j] = out[j], out[i]
        elif op == 3:
            role: Role = rng.choice(("system", "user", "assistant", "tool"))
            out[i] = replace(out[i], role=role)
        else:
            calls = [c for m in out for c in m.tool_calls]
            cid = rng.choice(calls).id if calls else "call_0"
            out.insert(i, Message("tool", (ToolResult(cid, "x"), ToolResult("c", ""))))
    return out


class TestUnitsPartition:
    def test_partition_of_any_messages(
        self, loose_messages: list[Message], convs: list[list[Message]]
    ) -> None:
        """units() partitions any list of messages_strategy() messages."""
        rng = random.Random(0)
        lists = [
            rng.choices(loose_messages, k=rng.randrange(17)) for _ in range(len(convs))
        ]
        lists.sort(key=len)  # the first failure is a shortest one
        for_each(lists, lambda msgs, _: check_partition(msgs))

    def test_partition_of_broken_conversations(
        self, convs: list[list[Message]]
    ) -> None:
        """units() partitions valid conversations and randomly broken ones alike."""

        def check(conv: list[Message], rng: random.Random) -> None:
            check_partition(conv)
            for _ in range(3):
                check_partition(perturb(conv, rng))

        for_each(convs, check)


class TestUnitsIncremental:
    def test_growing_a_conversation_gives_the_units_of_a_fresh_scan(
        self, convs: list[list[Message]]
    ) -> None:
        """units() of a list grown one message at a time (the remembered-prefix
        path) equals a scan from scratch, also for broken lists and a list
        changed in place."""

        def fresh(seq: list[Message]) -> tuple[Unit, ...]:
            messages_module._recent.clear()  # forget: scan from scratch
            return units(list(seq))

        def check(conv: list[Message], rng: random.Random) -> None:
            for seq in (conv, perturb(conv, rng)):
                grown: list[Message] = []
                for m in seq:
                    grown.append(m)
                    assert units(grown) == fresh(grown), grown
                if grown:
                    grown[rng.randrange(len(grown))] = Message.tool("zz", "late")
                    assert units(grown) == fresh(grown), grown

        for_each(convs, check)

    def test_moved_messages_give_the_units_of_a_fresh_scan(
        self, convs: list[list[Message]]
    ) -> None:
        """A list holding a remembered list's messages at other places gets
        the units of a fresh scan: its oldest messages gone, a span of them
        made one message, another message put in, a call's result cut off."""

        def fresh(seq: list[Message]) -> tuple[Unit, ...]:
            messages_module._recent.clear()  # forget: scan from scratch
            return units(list(seq))

        def put_in(rng: random.Random, pool: list[Message]) -> Message:
            """A run's line, or a message from elsewhere in the pool."""
            if rng.random() < 0.5:
                return Message.assistant("[3 earlier tool calls]")
            return rng.choice(pool)

        rng = random.Random(7)
        pool = [m for conv in convs for m in conv]
        while pool and len(pool) < 400:  # the same objects again: jumps may mislead
            pool += pool
        checked = 0
        for _ in range(60):
            size = rng.randrange(64, 240)
            at = rng.randrange(max(1, len(pool) - size))
            base = pool[at : at + size]
            units(base)
            changed = edited(base, rng, lambda: put_in(rng, pool))
            assert units(changed) == fresh(changed), changed
            # A later result of parallel calls cut off, then back: the unit
            # before it ends where the lists part, and grows again.
            later = [
                k
                for k in range(1, len(base))
                if base[k].role == "tool" and base[k - 1].role == "tool"
            ]
            cut = [m for k, m in enumerate(base) if k not in later[:3]]
            units(cut)
            assert units(base) == fresh(base), base
            units(base)
            assert units(cut) == fresh(cut), cut
            checked += 1
        assert checked == 60
        assert len(pool) >= 400

    def test_same_shape_rewrites_reuse_units_and_others_rescan(
        self, convs: list[list[Message]]
    ) -> None:
        """A same-length list whose changed messages keep their roles and call
        ids (contents rewritten, as the tool-result strategies do) gets the
        units of a fresh scan; so does one where a role or call id changed."""

        def fresh(seq: list[Message]) -> tuple[Unit, ...]:
            messages_module._recent.clear()  # forget: scan from scratch
            return units(list(seq))

        def rewrite(m: Message) -> Message:
            parts = [
                replace(p, content="x")
                if isinstance(p, ToolResult)
                else Text("y")
                if isinstance(p, Text)
                else p
                for p in m.parts
            ]
            return m.with_parts(parts)

        def check(conv: list[Message], rng: random.Random) -> None:
            if not conv:
                return
            units(conv)
            same = [rewrite(m) if rng.random() < 0.5 else m for m in conv]
            assert units(same) == fresh(same), same
            units(conv)
            other = list(conv)
            i = rng.randrange(len(other))
            role: Role = rng.choice(("system", "user", "assistant", "tool"))
            other[i] = replace(other[i], role=role)
            if other[i].role == "tool":
                other[i] = other[i].with_parts((ToolResult("zz", "late"),))
            assert units(other) == fresh(other), other
            # A call id changed, the roles kept: calls go unanswered.
            calling = [k for k, m in enumerate(conv) if m.tool_calls]
            if calling:
                units(conv)
                k = rng.choice(calling)
                renamed = list(conv)
                renamed[k] = conv[k].with_parts(
                    replace(p, id=p.id + "!") if isinstance(p, ToolCall) else p
                    for p in conv[k].parts
                )
                assert units(renamed) == fresh(renamed), renamed

        for_each(convs, check)

    def test_rewriting_strategies_outputs_group_as_a_fresh_scan(
        self, convs: list[list[Message]]
    ) -> None:
        """The stages that rewrite results and arguments in place tell
        ``units`` their output groups as their input (``same_units``): what
        it then returns is what a scan of the output from scratch finds."""

        def fresh(seq: Sequence[Message]) -> tuple[Unit, ...]:
            messages_module._recent.clear()  # forget: scan from scratch
            return units(list(seq))

        stages = (
            CompactLossless(),
            Deduplicate(),
            StaleReads(),
            TruncateToolResults(keep_recent=0),
            TruncateToolInputs(keep_recent=0),
            ClearToolResults(keep_recent=0, max_share=1),
        )
        told = 0

        def check(conv: list[Message], rng: random.Random) -> None:
            nonlocal told
            if not conv:
                return
            counter = TokenCounter(FakeTokenizer())
            budget = Budget(rng.randrange(counter.messages(conv) + 1), counter)
            for stage in stages:
                out: Sequence[Message] = stage(conv, budget).messages
                if len(out) == len(conv) and out != conv:
                    told += any(last is out for last, _ in messages_module._recent)
                assert units(out) == fresh(out), (stage, out)

        for_each(convs, check)
        assert told  # the path was taken
        # Told of a list the caller then changes: the units are of the list
        # as it was when told.
        conv = list(convs[-1])
        new = tuple(conv)
        messages_module.same_units(new, conv)
        conv.insert(0, Message.user("a turn put in front later"))
        assert units(new) == fresh(new)
        # Told of themselves, or of each other in a ring: found, not looped.
        a, b = tuple(convs[-1]), tuple(convs[-1])
        messages_module.same_units(a, a)
        messages_module.same_units(a, b)
        messages_module.same_units(b, a)
        assert units(a) == units(b) == fresh(convs[-1])


class TestUnitsOfValidConversations:
    def test_every_unit_complete(self, convs: list[list[Message]]) -> None:
        """Every unit of a generated (valid) conversation is complete."""

        def check(conv: list[Message], rng: random.Random) -> None:
            found = units(conv)
            assert all(u.complete for u in found), found

        for_each(convs, check)

    def test_removing_a_tool_message_leaves_its_calls_unanswered(
        self, convs: list[list[Message]]
    ) -> None:
        """Dropping a tool message leaves exactly its calls unanswered, nothing else."""

        def check(conv: list[Message], rng: random.Random) -> None:
            pairs, _ = oracle_pairs(conv)
            for t, m in enumerate(conv):
                if m.role != "tool":
                    continue
                lost = [call for call, (i, _) in pairs.items() if i == t]
                assert lost, "a valid tool message answers some call"
                call_msg = lost[0][0]
                cut = conv[:t] + conv[t + 1 :]
                found = units(cut)
                exchange = unit_of(found, call_msg)
                assert exchange.kind == "tool_exchange"
                assert exchange.start == call_msg
                assert exchange.unanswered == tuple(sorted(p for _, p in lost))
                assert [u for u in found if not u.complete] == [exchange]

        for_each(convs, check)

    def test_removing_an_assistant_with_calls_orphans_its_results(
        self, convs: list[list[Message]]
    ) -> None:
        """Dropping an assistant message with calls makes its results orphans."""

        def check(conv: list[Message], rng: random.Random) -> None:
            for u in units(conv):
                if u.kind != "tool_exchange":
                    continue
                cut = conv[: u.start] + conv[u.start + 1 :]
                found = units(cut)
                results = range(u.start, u.stop - 1)  # its tool messages, shifted
                orphans = {unit_of(found, i) for i in results}
                assert all(o.kind == "orphan_results" for o in orphans), orphans
                assert {o for o in found if not o.complete} == orphans

        for_each(convs, check)

    def test_results_share_a_unit_with_the_calls_they_answer(
        self, convs: list[list[Message]]
    ) -> None:
        """Each result lies in the unit of the call it answers (brute-force oracle)."""

        def check(conv: list[Message], rng: random.Random) -> None:
            pairs, unmatched = oracle_pairs(conv)
            assert unmatched == [], "a valid conversation has no orphan results"
            found = units(conv)
            n_calls = sum(len(m.tool_calls) for m in conv if m.role == "assistant")
            assert len(pairs) == n_calls, "every call is answered"
            answered_by: dict[int, set[int]] = {}
            for (call_msg, _), (tool_msg, _) in pairs.items():
                u = unit_of(found, tool_msg)
                assert u.kind == "tool_exchange"
                assert u.start == call_msg
                answered_by.setdefault(call_msg, set()).add(tool_msg)
            for u in found:
                if u.kind == "tool_exchange":
                    assert set(range(u.start + 1, u.stop)) == answered_by[u.start]
                    assert u.unanswered == ()

        for_each(convs, check)


def test_units_after_edits_of_a_small_alphabet() -> None:
    """Lists drawn from a few calls, results and turns (ids that collide,
    results that answer nothing, exchanges cut short), edited after their
    units were found: the units of each edit are a fresh scan's."""
    rng = random.Random(2)
    alphabet: list[Message] = []
    for _ in range(40):
        r = rng.random()
        if r < 0.3:
            ids = rng.sample("xyz", rng.randrange(1, 3))
            alphabet.append(
                Message.assistant(tool_calls=[ToolCall(c, "f") for c in ids])
            )
        elif r < 0.7:
            alphabet.append(Message.tool(rng.choice("xyz"), "r"))
        else:
            alphabet.append(Message.user("u"))
    for trial in range(3000):
        if trial % 3 == 0:
            messages_module._recent.clear()
        base = [rng.choice(alphabet) for _ in range(rng.randrange(64, 90))]
        assert units(base) == messages_module.fresh_units(base)
        changed = edited(base, rng, lambda: rng.choice(alphabet), span=6)
        assert units(changed) == messages_module.fresh_units(changed), trial
