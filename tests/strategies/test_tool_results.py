from __future__ import annotations

import copy
from typing import Any

import pytest

from contextwindow.errors import ContextWindowError
from contextwindow.handles import content_handle
from contextwindow.messages import Image, Message, Provider, Text, ToolCall, ToolResult
from contextwindow.strategies import (
    Budget,
    ClearToolResults,
    Deduplicate,
    TruncateToolResults,
)
from contextwindow.strategies.tool_results import _Cached, truncate
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens import BPETokenizer, TokenCounter
from contextwindow.tokens.base import Tokenizer
from contextwindow.validity import problems

O200K = BPETokenizer("o200k_base")
IMAGE = Image("https://example.com/chart.png", width=512, height=512)


def budget(limit: int = 0, provider: Provider = "openai", **kw: Any) -> Budget:
    return Budget(limit, TokenCounter(FakeTokenizer(), provider), **kw)


def exchange(
    cid: str,
    output: str | tuple[Text | Image, ...],
    name: str | None = "read",
    call: str | None = None,
    **kw: Any,
) -> list[Message]:
    """A call and its result; the call is named ``call``, else ``name``, else tool."""
    return [
        Message.assistant(tool_calls=[ToolCall(cid, call or name or "tool", "{}")]),
        Message.tool(cid, output, name=name, **kw),
    ]


def three_reads() -> list[Message]:
    """Three exchanges of 100-word results (104 tokens a tool message)."""
    return [
        Message.user("go"),
        *exchange("c1", "w " * 100),
        *exchange("c2", "w " * 100),
        *exchange("c3", "w " * 100, name=None, call="grep"),
        Message.user("ok?"),
    ]


class TestTruncate:
    def test_fits(self) -> None:
        """A text within the limit needs no cut."""
        assert truncate("a b c d", 4, FakeTokenizer()) is None
        assert truncate("", 1, FakeTokenizer()) is None

    def test_head_tail_and_marker(self) -> None:
        """Half the tokens from the start, half from the end, and the count cut."""
        out = truncate("a b c d e f g h i j", 4, FakeTokenizer())
        assert out == "a b\n[... 6 tokens cut ...]\ni j"

    def test_odd_budget(self) -> None:
        """An odd budget gives the extra token to the head."""
        out = truncate("a b c d e f g h i j", 5, FakeTokenizer())
        assert out == "a b c\n[... 5 tokens cut ...]\ni j"

    def test_lines_counted_and_snapped(self) -> None:
        """Cuts land on line ends, and the marker counts the lines cut."""
        log = "\n".join(f"line {i}" for i in range(100))
        out = truncate(log, 8, FakeTokenizer())
        assert out == (
            "line 0\nline 1\n[... 192 tokens (96 lines) cut ...]\nline 98\nline 99"
        )

    def test_far_line_end_not_snapped(self) -> None:
        """A line end far from the cut does not move it."""
        text = "w1 w2 w3\n" + " ".join(f"x{i}" for i in range(20))
        out = truncate(text, 8, FakeTokenizer())
        assert out is not None
        head = out.split("\n[...")[0]
        assert head.startswith("w1 w2 w3\nx0")

    def test_single_huge_line(self) -> None:
        """One long line is cut without a line count, head and tail kept."""
        text = "x" * 10_000
        out = truncate(text, 20, O200K)
        assert out is not None
        head, rest = out.split("\n[... ", 1)
        marker, tail = rest.split(" ...]\n", 1)
        assert marker.endswith(" tokens cut")
        assert "lines" not in marker
        assert set(head) == set(tail) == {"x"}
        assert O200K.count(head) <= 10
        assert O200K.count(tail) <= 10
        cut = O200K.count(text) - O200K.count(head) - O200K.count(tail)
        assert int(marker.split()[0].replace(",", "")) == cut

    def test_cjk(self) -> None:
        """CJK text (no spaces) is cut by tokens, not by words."""
        text = "東京タワーの高さは何メートルですか？" * 200  # noqa: RUF001  # CJK uses the full-width mark
        out = truncate(text, 100, O200K)
        assert out is not None
        head, rest = out.split("\n[... ", 1)
        tail = rest.split(" ...]\n", 1)[1]
        assert text.startswith(head)
        assert text.endswith(tail)
        assert 40 <= O200K.count(head) <= 50
        assert 40 <= O200K.count(tail) <= 50
        assert O200K.count(out) < 130

    def test_keeps_about_max_tokens(self) -> None:
        """Head and tail together stay within the budget, for real BPE counts."""
        text = "\n".join(
            f"2024-01-01 INFO request {i} served in {i % 97} ms" for i in range(400)
        )
        for max_tokens in (10, 100, 500):
            out = truncate(text, max_tokens, O200K)
            assert out is not None
            head = out.split("\n[... ", 1)[0]
            tail = out.split(" ...]\n", 1)[1]
            assert O200K.count(head) <= max_tokens - max_tokens // 2
            assert O200K.count(tail) <= max_tokens // 2
            assert text.startswith(head)
            assert text.endswith(tail)

    def test_max_one(self) -> None:
        """A budget of one token still keeps something of each end."""
        out = truncate("alpha beta gamma delta", 1, FakeTokenizer())
        # The marker gives the text's tokens less the head's and the tail's (4 - 1
        # - 1), not a count of the middle, "lpha beta gamma ", where the cut word
        # counts again.
        assert out == "a\n[... 2 tokens cut ...]\ndelta"

    def test_counts_text_head_and_tail_only(self) -> None:
        """The middle, most of the text, is never counted on its own."""
        tok = FakeTokenizer()
        text = "\n".join(f"line {i}" for i in range(100))
        out = truncate(text, 8, tok)
        assert out is not None
        head, tail = out.split("\n[...")[0], out.split("...]\n")[1]
        middle = text[len(head) : len(text) - len(tail)]
        assert len(middle) > len(text) // 2
        assert middle not in tok.calls
        assert text in tok.calls


class TestTruncateToolResults:
    def test_validation(self) -> None:
        """Bad settings fail at construction."""
        with pytest.raises(
            ContextWindowError, match="max_tokens: expected an int >= 1"
        ):
            TruncateToolResults(max_tokens=0)
        with pytest.raises(
            ContextWindowError, match="keep_recent: expected an int >= 0"
        ):
            TruncateToolResults(keep_recent=-1)
        assert TruncateToolResults() == TruncateToolResults(3, 500)

    def test_truncates_old_results(self) -> None:
        """Every result before the recent ones is cut to head and tail."""
        conv = three_reads()
        fitted = TruncateToolResults(keep_recent=1, max_tokens=10)(conv, budget())
        out = fitted.messages
        h = content_handle(conv[2])
        assert (
            out[2].text
            == f"w w w w w \n[... 90 tokens cut; recall {h} ...]\nw w w w w "
        )
        assert out[4].text == out[2].text.replace(h, content_handle(conv[4]))
        assert out[6] is conv[6]
        assert [(c.kind, c.stage, c.index) for c in fitted.report.changes] == [
            ("truncated", "TruncateToolResults", 2),
            ("truncated", "TruncateToolResults", 4),
        ]

    def test_change_accounting(self) -> None:
        """Each changed message is one change, with its ids and tokens."""
        conv = three_reads()
        b = budget()
        fitted = TruncateToolResults(keep_recent=0, max_tokens=10)(conv, b)
        r = fitted.report
        assert [
            (c.ids, c.index, c.tokens_before, c.tokens_after, c.what) for c in r.changes
        ] == [
            ((conv[2].id,), 2, 104, 21, "tool result: read"),
            ((conv[4].id,), 4, 104, 21, "tool result: read"),
            ((conv[6].id,), 6, 104, 21, "tool result: grep"),
        ]
        assert r.tokens_before - sum(c.saved for c in r.changes) == r.tokens_after
        assert r.tokens_after == b.count(fitted.messages)

    def test_keeps_identity(self) -> None:
        """Calls, call ids, names, error flags and message ids stay."""
        conv = [
            Message.user("go"),
            *exchange("c1", "w " * 50, is_error=True),
            Message.user("?"),
        ]
        out = TruncateToolResults(0, 4)(conv, budget()).messages
        result = out[2].tool_results[0]
        assert (result.call_id, result.name, result.is_error) == ("c1", "read", True)
        assert out[2].id == conv[2].id
        assert out[1] is conv[1]

    def test_keep_recent_counts_results(self) -> None:
        """``keep_recent`` counts results, not messages."""
        batched = Message(
            "tool", (ToolResult("a", "x " * 50), ToolResult("b", "y " * 50))
        )
        conv = [
            Message.user("go"),
            Message.assistant(tool_calls=[ToolCall("a", "f"), ToolCall("b", "g")]),
            batched,
            Message.user("?"),
        ]
        fitted = TruncateToolResults(keep_recent=1, max_tokens=4)(conv, budget())
        first, second = fitted.messages[2].tool_results
        assert "cut" in first.text
        assert second == batched.parts[1]
        fitted = TruncateToolResults(keep_recent=0, max_tokens=4)(conv, budget())
        assert len(fitted.report.changes) == 1
        assert fitted.report.changes[0].what == "tool result: f, g"

    def test_other_parts_kept(self) -> None:
        """Parts beside a result in a tool message stay as they are."""
        tool = Message("tool", (ToolResult("c1", "w " * 100), Text("see above")))
        conv = [*exchange("c1", "")[:1], tool, Message.user("?")]
        out = TruncateToolResults(0, 10)(conv, budget()).messages
        assert "cut" in out[1].tool_results[0].text
        assert out[1].parts[1] == Text("see above")

    def test_pinned_untouched(self) -> None:
        """Results in pinned messages, by flag or marker, are left whole."""
        conv = [
            Message.user("go"),
            *exchange("c1", "w " * 100, pinned=True),
            *exchange("c2", "KEEP " + "w " * 100),
            *exchange("c3", "w " * 100),
            Message.user("?"),
        ]
        fitted = TruncateToolResults(0, 10)(conv, budget(protected=("KEEP",)))
        assert fitted.messages[2] is conv[2]
        assert fitted.messages[4] is conv[4]
        assert [c.index for c in fitted.report.changes] == [6]

    def test_brings_in_no_marker(self) -> None:
        """A cut whose marker text holds a protected marker is not made."""
        conv = three_reads()
        fitted = TruncateToolResults(0, 10)(conv, budget(protected=("tokens cut",)))
        assert fitted.report.changes == ()

    def test_final_result_untouched(self) -> None:
        """The final message is pinned, even with ``keep_recent=0``."""
        conv = [Message.user("go"), *exchange("c1", "w " * 100)]
        fitted = TruncateToolResults(0, 10)(conv, budget())
        assert fitted.messages[2] is conv[2]

    def test_images_dropped_with_the_cut(self) -> None:
        """A cut result becomes text; its images go with the cut."""
        content = (Text("w " * 100), IMAGE)
        conv = [Message.user("go"), *exchange("c1", content), Message.user("?")]
        fitted = TruncateToolResults(0, 10)(conv, budget())
        result = fitted.messages[2].tool_results[0]
        assert isinstance(result.content, str)
        h = content_handle(conv[2])
        assert f"[... 90 tokens cut; recall {h} ...]" in result.content
        assert fitted.report.changes[0].saved > 255

    def test_short_text_with_image_untouched(self) -> None:
        """A result whose text is short is not cut, images or not."""
        content = (Text("small"), IMAGE)
        conv = [Message.user("go"), *exchange("c1", content), Message.user("?")]
        fitted = TruncateToolResults(0, 10)(conv, budget())
        assert fitted.messages[2] is conv[2]

    def test_only_when_it_saves(self) -> None:
        """A cut whose marker costs more than it removes is not made."""
        conv = [Message.user("go"), *exchange("c1", "a b c d e"), Message.user("?")]
        fitted = TruncateToolResults(0, 4)(conv, budget())
        assert fitted.messages[2] is conv[2]
        assert fitted.report.changes == ()

    def test_oldest_first_and_stops(self) -> None:
        """Results are cut oldest first, and no more once the budget is met."""
        conv = three_reads()
        b = budget(300)
        assert b.count(conv) == 352
        fitted = TruncateToolResults(0, 10)(conv, b)
        assert [c.index for c in fitted.report.changes] == [2]
        assert fitted.report.tokens_after == 269
        assert fitted.messages[4] is conv[4]

    def test_nothing_when_it_fits(self) -> None:
        """A conversation within the budget is left alone."""
        conv = three_reads()
        fitted = TruncateToolResults(0, 10)(conv, budget(352))
        assert all(a is b for a, b in zip(fitted.messages, conv, strict=True))

    def test_never_mutates(self) -> None:
        """The input is left as it was."""
        conv = three_reads()
        before = copy.deepcopy(conv)
        TruncateToolResults(0, 10)(conv, budget())
        assert conv == before

    def test_exact_tokenizer(self) -> None:
        """With real BPE and Anthropic framing, the report adds up."""
        log = "\n".join(f"test_{i} PASSED" for i in range(300))
        conv = [Message.user("run"), *exchange("c1", log), Message.user("?")]
        b = Budget(0, TokenCounter(O200K, "anthropic"))
        fitted = TruncateToolResults(0, 50)(conv, b)
        r = fitted.report
        assert r.changes[0].tokens_before == b.counter.message(conv[2])
        assert r.changes[0].tokens_after == b.counter.message(fitted.messages[2])
        assert r.tokens_before - r.changes[0].saved == r.tokens_after
        text = fitted.messages[2].text
        assert "(292 lines) cut, naming test_4, test_5," in text
        assert f"; recall {content_handle(conv[2])} ...]" in text


class TestToolNames:
    def test_repeated_names_counted(self) -> None:
        """One message answering several calls names each tool once, with a count."""
        calls = [ToolCall(f"c{k}", n) for k, n in enumerate(["Read", "Read", "Bash"])]
        conv = [
            Message.user("go"),
            Message.assistant(tool_calls=calls),
            Message("tool", tuple(ToolResult(c.id, "w " * 50) for c in calls)),
            Message.user("?"),
        ]
        (c,) = ClearToolResults(0, max_share=1)(conv, budget()).report.changes
        assert c.what == "tool result: Read x2, Bash"

    def test_named_from_the_call(self) -> None:
        """A result without a name is reported under its call's tool name."""
        conv = [
            Message.user("go"),
            *exchange("c1", "w " * 100, name=None, call="read_file"),
            Message.user("?"),
        ]
        for strategy in (TruncateToolResults(0, 10), ClearToolResults(0, max_share=1)):
            (c,) = strategy(conv, budget()).report.changes
            assert c.what == "tool result: read_file"

    def test_result_name_first(self) -> None:
        """A result's own name wins over its call's."""
        conv = [
            Message.user("go"),
            *exchange("c1", "w " * 100, name="search", call="grep"),
            Message.user("?"),
        ]
        (c,) = ClearToolResults(0, max_share=1)(conv, budget()).report.changes
        assert c.what == "tool result: search"

    def test_reused_call_id(self) -> None:
        """A call id used again names the call each result answers."""
        conv = [
            Message.user("go"),
            *exchange("c1", "w " * 100, name=None, call="ls"),
            *exchange("c1", "w " * 100, name=None, call="cat"),
            Message.user("?"),
        ]
        fitted = TruncateToolResults(0, 10)(conv, budget())
        assert [c.what for c in fitted.report.changes] == [
            "tool result: ls",
            "tool result: cat",
        ]

    def test_deduplicated(self) -> None:
        """Deduplicate names the tool the same way."""
        out = "same " * 30
        conv = [
            Message.user("status?"),
            *exchange("c1", out, name=None, call="status"),
            Message.user("again?"),
            *exchange("c2", out, name=None, call="status"),
            Message.user("thanks"),
        ]
        fitted = Deduplicate()(conv, budget())
        assert [c.what for c in fitted.report.changes] == ["tool result: status"]

    def test_orphan_named_by_its_call_id(self) -> None:
        """A result answering no call is named by its call id."""
        conv = [Message.user("go"), Message.tool("zz", "w " * 100), Message.user("?")]
        fitted = TruncateToolResults(0, 10)(conv, budget())
        assert [(c.kind, c.index) for c in fitted.report.changes] == [
            ("truncated", 1),
            ("repaired", 1),  # the orphan itself goes after
        ]
        assert fitted.report.changes[0].what == "tool result: zz"


class TestTextCache:
    @pytest.mark.parametrize(
        "strategy",
        [TruncateToolResults(0, 10), ClearToolResults(0)],
        ids=["truncate", "clear"],
    )
    def test_each_text_counted_once(
        self, strategy: TruncateToolResults | ClearToolResults
    ) -> None:
        """Results are counted through the counter's text cache."""
        tok = FakeTokenizer()
        b = Budget(0, TokenCounter(tok))
        conv = three_reads()
        first = strategy(conv, b)
        assert tok.calls.count("w " * 100) == 1  # three results, one text
        tok.reset()
        again = strategy(conv, b)
        assert tok.calls == []  # fitting the same conversation again costs nothing
        assert again.messages == first.messages
        assert again.report == first.report

    def test_cached_view_is_a_tokenizer(self) -> None:
        """Truncation's cached view is a Tokenizer named as the counter's."""
        tok = FakeTokenizer("words", exact=False)
        counter = TokenCounter(tok)
        view = _Cached(counter)
        assert isinstance(view, Tokenizer)
        assert (view.name, view.exact) == ("words", False)
        assert view.count("a b c") == view.count("a b c") == 3
        assert tok.calls == ["a b c"]
        assert counter.text("a b c") == 3
        assert tok.calls == ["a b c"]


class TestClearToolResults:
    @pytest.mark.parametrize("limit", [60, 200])
    def test_a_repaired_message_stays_repaired(self, limit: int) -> None:
        """Room a collapse freed puts back cleared results, not what a repair fixed."""
        dot = (
            "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlE"
            "QVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
        )
        conv = [
            Message.system("be brief"),
            Message("user", (Text(""), Image(dot))),  # a blank text block
            *exchange("c0", "x = 1\n" * 300),
            *exchange("c1", "ok"),
            Message.user("and now?"),
        ]
        assert problems(conv, "anthropic")
        fitted = ClearToolResults(keep_recent=1)(conv, budget(limit, "anthropic"))
        assert "collapsed" in fitted.report.totals()
        assert problems(fitted.messages, "anthropic") == ()

    def test_placeholder(self) -> None:
        """An old result becomes a placeholder giving its size."""
        conv = [Message.user("go"), *exchange("c1", "w " * 1500), Message.user("?")]
        fitted = ClearToolResults(keep_recent=0, max_share=1)(conv, budget())
        h = content_handle(conv[2])
        assert (
            fitted.messages[2].text
            == f"[tool result cleared: 1,500 tokens; recall {h}]"
        )
        c = fitted.report.changes[0]
        assert (c.kind, c.stage, c.ids, c.index, c.what) == (
            "cleared",
            "ClearToolResults",
            (conv[2].id,),
            2,
            "tool result: read",
        )
        assert (c.tokens_before, c.tokens_after) == (1504, 11)

    def test_name_in_placeholder(self) -> None:
        """``{name}`` is the result's tool name, else its call's, else empty."""
        conv = [
            Message.user("go"),
            *exchange("c1", "w " * 50),
            *exchange("c2", "w " * 50, name=None, call="grep"),
            Message.user("?"),
            Message.tool("zz", "w " * 50),  # an orphan: no call names it
        ]
        strategy = ClearToolResults(0, "[{name} output removed, {tokens} tokens]")
        out = strategy(conv, budget()).messages
        assert out[2].text == "[read output removed, 50 tokens]"
        assert out[4].text == "[grep output removed, 50 tokens]"
        assert all(m.text != "[ output removed, 50 tokens]" for m in out)  # repaired

    def test_images_counted(self) -> None:
        """The size given counts the result's images too."""
        conv = [
            Message.user("go"),
            *exchange("c1", (Text("w w"), IMAGE)),
            Message.user("?"),
        ]
        b = budget()
        fitted = ClearToolResults(0, max_share=1)(conv, b)
        n = 2 + b.counter.image(IMAGE)
        h = content_handle(conv[2])
        assert (
            fitted.messages[2].text == f"[tool result cleared: {n} tokens; recall {h}]"
        )

    @pytest.mark.parametrize(
        "placeholder", ["{size}", "{0}", "{tokens", "{tokens:d}", "{name.size}"]
    )
    def test_bad_placeholder(self, placeholder: str) -> None:
        """A placeholder that cannot be filled in fails at construction."""
        with pytest.raises(ContextWindowError, match="may use only"):
            ClearToolResults(placeholder=placeholder)

    def test_keep_recent(self) -> None:
        """The most recent results stay whole."""
        conv = three_reads()
        fitted = ClearToolResults(keep_recent=2, max_share=1)(conv, budget())
        assert [c.index for c in fitted.report.changes] == [2]
        assert fitted.messages[4] is conv[4]
        with pytest.raises(ContextWindowError, match="keep_recent"):
            ClearToolResults(keep_recent=-1)

    def test_keeps_identity(self) -> None:
        """Call id, name and error flag survive; the call stays."""
        conv = [
            Message.user("go"),
            *exchange("c1", "w " * 50, is_error=True),
            Message.user("?"),
        ]
        out = ClearToolResults(0, max_share=1)(conv, budget()).messages
        result = out[2].tool_results[0]
        assert (result.call_id, result.name, result.is_error) == ("c1", "read", True)
        assert out[1] is conv[1]

    def test_only_when_it_saves(self) -> None:
        """A result shorter than the placeholder is left alone."""
        conv = [Message.user("go"), *exchange("c1", "ok"), Message.user("?")]
        fitted = ClearToolResults(0, max_share=1)(conv, budget())
        assert fitted.messages[2] is conv[2]

    def test_brings_in_no_marker(self) -> None:
        """A placeholder holding a protected marker is not put in."""
        conv = three_reads()
        fitted = ClearToolResults(0, max_share=1)(conv, budget(protected=("cleared",)))
        assert fitted.report.changes == ()

    def test_stops_once_it_fits(self) -> None:
        """Clearing stops as soon as the budget is met."""
        conv = three_reads()
        fitted = ClearToolResults(0, max_share=1)(conv, budget(300))
        assert [c.index for c in fitted.report.changes] == [2]

    def test_pinned_untouched(self) -> None:
        """Results in pinned messages are never cleared."""
        conv = [
            Message.user("go"),
            *exchange("c1", "w " * 50, pinned=True),
            Message.user("?"),
        ]
        fitted = ClearToolResults(0, max_share=1)(conv, budget())
        assert fitted.messages[2] is conv[2]


def repeated(
    *outputs: str | tuple[Text | Image, ...], error: int = -1
) -> list[Message]:
    conv: list[Message] = []
    for i, output in enumerate(outputs, 1):
        conv += [
            Message.user("status?"),
            *exchange(f"c{i}", output, is_error=i == error),
        ]
    return [*conv, Message.user("thanks")]


class TestDeduplicate:
    def test_latest_copy_kept(self) -> None:
        """Earlier copies point to the latest call holding the same output."""
        up = "all services up " * 20
        conv = repeated(up, up, "other " * 30, up)
        fitted = Deduplicate()(conv, budget())
        texts = [fitted.messages[i].text for i in (2, 5, 8, 11)]
        note = "[same output as the later result of call c4; recall {}]"
        notes = [note.format(content_handle(conv[i])) for i in (2, 5)]
        assert texts == [*notes, "other " * 30, up]
        r = fitted.report
        assert [(c.kind, c.stage, c.index, c.ids) for c in r.changes] == [
            ("deduplicated", "Deduplicate", 2, (conv[2].id,)),
            ("deduplicated", "Deduplicate", 5, (conv[5].id,)),
        ]
        assert r.changes[0].what == "tool result: read"
        assert r.tokens_before - sum(c.saved for c in r.changes) == r.tokens_after

    def test_refit_after_the_latest_copy_went(self) -> None:
        """A re-fit of a list whose latest copy was replaced undoes the notes.

        The list shares its first messages with the one fitted before (the
        scan resumes there), and the copy the notes pointed to is gone: the
        earlier copy is the latest now, and stays whole, as a fresh fit says.
        """
        up = "all services up " * 20
        conv = repeated(up, "other " * 30, up)
        counter = TokenCounter(FakeTokenizer())
        first = Deduplicate()(conv, Budget(0, counter))
        assert [c.index for c in first.report.changes] == [2]
        edited = [*conv[:-3], *exchange("c9", "new " * 30), Message.user("thanks")]
        warm = Deduplicate()(edited, Budget(0, counter))
        cold = Deduplicate()(edited, budget())
        assert warm.messages[2].text == up
        assert warm.messages == cold.messages
        assert warm.report == cold.report

    def test_error_flag_distinguishes(self) -> None:
        """The same text as an error and as a success are different outputs."""
        out = "connection refused " * 10
        conv = repeated(out, out, error=1)
        fitted = Deduplicate()(conv, budget())
        assert fitted.report.changes == ()

    def test_tuple_contents(self) -> None:
        """Text-and-image contents are compared whole."""
        a = (Text("chart " * 20), IMAGE)
        b = (Text("chart " * 20), Image("https://example.com/other.png"))
        fitted = Deduplicate()(repeated(a, b, a), budget())
        assert [c.index for c in fitted.report.changes] == [2]
        assert fitted.messages[2].tool_results[0].content == (
            f"[same output as the later result of call c3; recall "
            f"{content_handle(repeated(a, b, a)[2])}]"
        )

    def test_pinned_untouched(self) -> None:
        """An earlier copy in a pinned message stays."""
        up = "all services up " * 20
        conv = repeated(up, up)
        conv[2] = Message.tool("c1", up, name="read", pinned=True)
        fitted = Deduplicate()(conv, budget())
        assert fitted.messages[2] is conv[2]
        assert fitted.report.changes == ()

    def test_keeps_identity(self) -> None:
        """The earlier copy keeps its call id, name, flag and message id."""
        out = "same " * 30
        conv = repeated(out, out, error=0)
        fitted = Deduplicate()(conv, budget())
        result = fitted.messages[2].tool_results[0]
        assert (result.call_id, result.name, result.is_error) == ("c1", "read", False)
        assert fitted.messages[2].id == conv[2].id

    def test_custom_note(self) -> None:
        """The note is a template naming the call with the latest copy."""
        out = "same " * 30
        fitted = Deduplicate("(see {call_id})")(repeated(out, out), budget())
        assert fitted.messages[2].text == "(see c2)"
        with pytest.raises(
            ContextWindowError,
            match=r"may use only \{call_id\}, \{handle\} and \{but\}",
        ):
            Deduplicate("(see {id})")

    def test_stops_once_it_fits(self) -> None:
        """Copies are replaced oldest first, and no more once it fits."""
        out = "same " * 30
        conv = repeated(out, out, out)
        b = budget()
        limit = b.count(conv) - 1
        fitted = Deduplicate()(conv, budget(limit))
        assert [c.index for c in fitted.report.changes] == [2]

    def test_brings_in_no_marker(self) -> None:
        """A note holding a protected marker is not put in."""
        out = "same " * 30
        fitted = Deduplicate()(repeated(out, out), budget(protected=("same output",)))
        assert fitted.report.changes == ()

    def test_short_output_kept(self) -> None:
        """A copy shorter than the note is left as it is."""
        fitted = Deduplicate()(repeated("ok", "ok"), budget())
        assert fitted.report.changes == ()


def test_a_resumed_scan_sends_its_unchanged_rewrites_again() -> None:
    """A scan resumed early (the limit moved) rewrites the results after its
    start anew: those that come out as before go out as the very objects of
    the last output, so the stages after it find their input the same."""
    conv = [Message.user("go")]
    for k in range(12):  # the cuts a larger limit needs end before the last
        conv += exchange(f"c{k}", f"result {k} " + "w " * 100)
    conv.append(Message.user("ok?"))
    counter = TokenCounter(FakeTokenizer())
    whole = counter.messages(conv)
    strategy = TruncateToolResults(keep_recent=0, max_tokens=20)
    first = strategy(conv, Budget(whole // 4, counter))
    # A larger limit needs fewer cuts: the scan resumes at the last one it
    # keeps, and rewrites that one again.
    again = strategy(conv, Budget(whole // 2, counter))
    fresh = strategy(conv, Budget(whole // 2, TokenCounter(FakeTokenizer())))
    assert [(m, m.id) for m in again.messages] == [(m, m.id) for m in fresh.messages]
    cut = [c.index for c in again.report.changes]
    assert 0 < len(cut) < len(first.report.changes)
    assert all(again.messages[i] is first.messages[i] for i in cut)
