from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from contextwindow import ContextManager, Message, Opaque, Text, Thinking, ToolCall, fit
from contextwindow.formats import from_anthropic, to_openai
from contextwindow.handles import find_handles
from contextwindow.recalling import (
    MIN_RECALL_TOKENS,
    RECALL_TOOL,
    answer_recall,
    context_recall,
    recall_tool,
    render,
)
from contextwindow.strategies import ClearToolResults, DropOldest, Pipeline, Summarize
from contextwindow.summarizers import (
    is_summary,
    recall,
    summary_handle,
    summary_sources,
)
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens import HeuristicTokenizer

FILE = "\n".join(f"def handler_{i}(): return {1000 + i}" for i in range(200))


def session(n: int = 6) -> list[Message]:
    conv = [Message.system("You are a coding agent.")]
    for i in range(n):
        args = json.dumps({"file_path": f"src/mod{i}.py"})
        conv += [
            Message.user(f"look at mod{i}"),
            Message.assistant(tool_calls=[ToolCall(f"c{i}", "Read", args)]),
            Message.tool(f"c{i}", FILE.replace("handler", f"m{i}")),
            Message.assistant(f"mod{i} read"),
        ]
    return conv


def recall_call(handle: str, **extra: object) -> ToolCall:
    return ToolCall("r1", RECALL_TOOL, json.dumps({"handle": handle, **extra}))


class TestRecallThroughFit:
    def test_every_marker_recalls_its_original(self) -> None:
        """A fitted conversation's markers name handles that bring back originals."""
        conv = session()
        fitted = fit(conv, limit=3000, tokenizer=FakeTokenizer())
        handles = [h for m in fitted.messages for h in find_handles(m.text)]
        assert handles, "the fit cut something"
        originals = {m.text for m in conv if m.role == "tool"}
        for h in handles:
            got = answer_recall(conv, recall_call(h, max_tokens=32000))
            assert not got.tool_results[0].is_error
            assert got.text in originals or got.text.startswith("assistant: ")

    def test_cap_and_errors(self) -> None:
        """Over the cap, head and tail come back; bad calls are error results."""
        conv = session(2)
        strategy = Pipeline(ClearToolResults(keep_recent=0, max_share=1), DropOldest())
        fitted = fit(conv, limit=1000, tokenizer=FakeTokenizer(), strategy=strategy)
        (h, *_) = [h for m in fitted.messages for h in find_handles(m.text)]
        capped = context_recall(conv, h, max_tokens=50, tokenizer=FakeTokenizer())
        assert capped is not None
        assert "tokens cut: lines " in capped
        assert "recall with start_line=" in capped
        assert answer_recall(conv, recall_call("0000000000")).tool_results[0].is_error
        bad = ToolCall("r2", RECALL_TOOL, '{"max_tokens": 3}')
        assert "needs a 'handle'" in answer_recall(conv, bad).text

    def test_every_line_of_a_large_original_can_be_read_page_by_page(self) -> None:
        """Over the cap, the cut names the lines it left out and where to read
        them; reading on from there, page after page, gives back every line of
        the original, also past the largest cap."""
        text = "\n".join(f"line {i}: value {10_000 + i}" for i in range(1, 3001))
        history = [
            Message.user("read it"),
            Message.assistant(tool_calls=[ToolCall("c1", "read")]),
            Message.tool("c1", text),
        ]
        h = history[2].id
        tok = FakeTokenizer()
        first = answer_recall(history, recall_call(h, max_tokens=500), tokenizer=tok)
        hint = re.search(r"recall with start_line=(\d+) to read them", first.text)
        assert hint is not None
        got = first.text.split("\n[... ")[0].split("\n")
        start = int(hint.group(1))
        assert got == text.split("\n")[: start - 1]
        pages = 0
        while True:
            call = recall_call(h, max_tokens=500, start_line=start)
            page = answer_recall(history, call, tokenizer=tok).text
            lines = page.split("\n")
            assert lines[0].startswith(f"[lines {start:,}-")
            more = re.fullmatch(
                r"\[lines [\d,]+-[\d,]+ follow: recall with start_line=(\d+)\]",
                lines[-1],
            )
            body = lines[1:-1] if more else lines[1:]
            got += body
            pages += 1
            if more is None:
                break
            start = int(more.group(1))
        assert got == text.split("\n")
        assert pages > 3
        past = answer_recall(history, recall_call(h, start_line=9999), tokenizer=tok)
        assert (
            past.text
            == "[the original has 3,000 lines; start_line 9,999 is past its end]"
        )
        bad = answer_recall(history, recall_call(h, start_line=0))
        assert bad.tool_results[0].is_error
        assert "start_line must be a positive integer" in bad.text

    def test_a_line_longer_than_a_page_is_read_a_piece_at_a_time(self) -> None:
        """One line of minified JSON (and lines around it): following the notes
        from the first answer on, piece after piece, gives back every character."""
        one = json.dumps(
            [{"sku": f"SKU-{i:05d}", "price": i * 1.5} for i in range(3000)]
        )
        for text in (
            one,
            f"first line\n{one}\n" + "\n".join(f"row {i}" for i in range(300)),
        ):
            history = [Message.tool("c1", text)]
            h = history[0].id
            answer = answer_recall(history, recall_call(h, max_tokens=500)).text
            at = re.search(
                r"recall with start_line=(\d+)(?:, start_char=(\d+))?", answer
            )
            assert at is not None
            line, char = int(at.group(1)), int(at.group(2) or 1)
            got = answer.split("\n[... ")[0]
            pages = 0
            while True:
                call = recall_call(h, max_tokens=500, start_line=line, start_char=char)
                page = answer_recall(history, call).text
                assert HeuristicTokenizer().count(page) <= 500
                lines = page.split("\n")
                more = re.fullmatch(
                    r"\[.*(?:follow|goes on): recall with start_line=(\d+)"
                    r"(?:, start_char=(\d+))?\]",
                    lines[-1],
                )
                ended = more is None and lines[-1] != "[the end of the original]"
                body = lines[1:] if ended else lines[1:-1]
                got += ("\n" if char == 1 else "") + "\n".join(body)
                pages += 1
                if more is None:
                    break
                line, char = int(more.group(1)), int(more.group(2) or 1)
            assert got == text
            assert pages > 10
        past = recall_call(h, start_line=2, start_char=10**6)
        assert answer_recall(history, past).text.startswith("[line 2 has ")
        bad = answer_recall(history, recall_call(h, start_char=0))
        assert bad.tool_results[0].is_error
        assert "start_char must be a positive integer" in bad.text

    @pytest.mark.parametrize("cap", [1, 5, 50, 100, 500, 4000])
    def test_the_notes_fit_the_cap(self, cap: int) -> None:
        """What comes back, the notes included, takes at most ``max_tokens``
        (raised to MIN_RECALL_TOKENS below it)."""
        tok = HeuristicTokenizer()
        one = json.dumps(
            {"rows": [{"id": i, "sku": f"SKU-{i:06d}"} for i in range(3000)]}
        )
        lines = "\n".join(f"line {i}: value {10_000 + i}" for i in range(3000))
        for text in (one, lines):
            history = [Message.tool("c1", text)]
            h = history[0].id
            for extra in ({}, {"start_line": 2}, {"start_char": 40}):
                got = answer_recall(history, recall_call(h, max_tokens=cap, **extra))
                assert tok.count(got.text) <= max(cap, MIN_RECALL_TOKENS), (
                    extra,
                    got.text,
                )

    def test_a_summary_names_a_handle_that_recalls_what_it_replaced(self) -> None:
        """Its header's handle, in the conversation sent, brings the messages back;
        the same messages in another shape (new ids) show the same handle."""
        conv = session(12)
        fitted = fit(conv, limit=300, tokenizer=FakeTokenizer())
        (summary,) = [m for m in fitted.messages if is_summary(m)]
        handle = summary_handle(summary)
        assert handle is not None
        assert find_handles(summary.text.splitlines()[0]) == [handle]
        call = recall_call(handle, max_tokens=32000)
        got = answer_recall(conv, call, view=fitted.messages)
        assert not got.tool_results[0].is_error
        assert got.text == render(recall(conv, summary_sources(summary)))
        assert "m1_199" in got.text  # a result the summary replaced, whole
        assert answer_recall(conv, call).tool_results[0].is_error  # no view given
        dicts = fit(to_openai(conv), limit=300, tokenizer=FakeTokenizer())
        (again,) = [m for m in dicts.messages if is_summary(m)]
        assert summary_handle(again) == handle
        assert again.text == summary.text

    def test_a_summary_recalls_from_provider_dicts_converted_again(self) -> None:
        """Provider dicts carry no ids (each conversion makes new ones): the
        summary's handle still brings back what it replaced, by content, also
        after it was rolled forward into a later summary."""
        hist: list[dict[str, str]] = [{"role": "system", "content": "agent"}]
        for i in range(10):
            hist += [
                {"role": "user", "content": f"Edit src/h_{i}.py " + "pad " * 60},
                {"role": "assistant", "content": f"done {i}"},
            ]
        hist.append({"role": "user", "content": "next"})
        fitted = fit(hist, limit=500, strategy=Summarize(keep_recent=2))
        (summary,) = [m for m in fitted.messages if is_summary(m)]
        call = recall_call(str(summary_handle(summary)), max_tokens=32000)
        got = answer_recall(hist, call, view=fitted.messages)  # type: ignore[arg-type]  # provider dicts, as users hold them
        assert not got.tool_results[0].is_error, got.text
        assert got.text.startswith("user: Edit src/h_0.py pad")
        assert "assistant: done 0" in got.text
        n = len(summary_sources(summary))
        assert got.text.count("\n") + 1 == n  # one line per message replaced
        # Rolled forward: the later summary names the earlier one's messages too.
        grown = [*fitted.messages, Message.assistant("ok " + "pad " * 80)]
        grown += [Message.user(f"more {i} " + "pad " * 80) for i in range(4)]
        later = fit(grown, limit=500, strategy=Summarize(keep_recent=1))
        (rolled,) = [m for m in later.messages if is_summary(m)]
        assert len(summary_sources(rolled)) > n
        full = [*hist, *to_openai(grown[len(fitted.messages) :])]
        call = recall_call(str(summary_handle(rolled)), max_tokens=32000)
        got = answer_recall(full, call, view=later.messages)  # type: ignore[arg-type]  # provider dicts, as users hold them
        assert not got.tool_results[0].is_error, got.text
        assert got.text.startswith("user: Edit src/h_0.py pad")
        assert "user: more 0 pad" in got.text

    def test_schemas(self) -> None:
        """One tool, in each provider's shape."""
        assert recall_tool("openai")["function"]["parameters"]["required"] == ["handle"]
        assert recall_tool("anthropic")["input_schema"]["properties"]["handle"]
        assert recall_tool("responses")["parameters"]["type"] == "object"

    def test_messages_a_repair_changed_recall_their_originals(self) -> None:
        """A repair that drops a blank text block (Anthropic refuses one; Claude
        Code transcripts hold them) keeps the original's handle: a run's line
        standing for such messages names what the history holds."""
        conv = [Message.user("Fix the build.")]
        for i in range(30):
            call = ToolCall(f"c{i}", "Read", json.dumps({"file_path": f"f{i}.py"}))
            conv += [
                Message("assistant", (Text("\n\n"), Thinking(f"part {i}"), call)),
                Message.tool(f"c{i}", "\n".join(f"x{j} = {i}" for j in range(80))),
            ]
        conv.append(Message.user("and now?"))
        fitted = fit(conv, limit=1500, tokenizer=FakeTokenizer(), provider="anthropic")
        handles = [h for m in fitted.messages for h in find_handles(m.text)]
        assert any("+" in h for h in handles), "a run was collapsed"
        for h in handles:
            got = answer_recall(conv, recall_call(h, max_tokens=32000))
            assert not got.tool_results[0].is_error, (h, got.text)
            assert "x79 = " in got.text


class TestRecallThroughTheManager:
    def test_answered_from_the_history_after_a_restart(self, tmp_path: Path) -> None:
        """A manager with a store answers a marker's handle, after a restart too."""
        url = f"sqlite:///{tmp_path / 'c.db'}#run"
        m = ContextManager(
            token_limit=5000, tokenizer=FakeTokenizer(), store=url, offer_recall=True
        )
        plain = ContextManager(token_limit=5000, tokenizer=FakeTokenizer())
        assert m.token_estimate() > plain.token_estimate()  # the tool's schema counts
        assert m.recall_schema["function"]["name"] == RECALL_TOOL
        conv = session(10)
        m.push_many(conv)
        p = m.prepare()
        handles = [h for msg in p.conversation for h in find_handles(msg.text)]
        assert handles
        again = ContextManager(
            token_limit=5000, tokenizer=FakeTokenizer(), store=url, offer_recall=True
        )
        tools = [msg.text for msg in conv if msg.role == "tool"]
        for handle in handles:
            call = recall_call(handle, max_tokens=32000)
            answer = again.answer_recall(call)
            assert not answer.tool_results[0].is_error
            # The restarted manager answers from the stored history what the
            # history in memory answers: a result, or a collapsed run of them.
            assert (
                answer.text == answer_recall(conv, call, tokenizer=FakeTokenizer()).text
            )
            assert any(text in answer.text for text in tools)

    def test_a_summarys_handle_is_answered(self) -> None:
        """The manager answers a summary's handle from its history and view."""
        m = ContextManager(token_limit=100_000, tokenizer=FakeTokenizer())
        conv = session(8)
        m.push_many(conv)
        assert m.force_compress_with(Summarize(keep_recent=2), target=0).applied
        (summary,) = [x for x in m.messages if is_summary(x)]
        handle = summary_handle(summary)
        assert handle is not None
        answer = m.answer_recall(recall_call(handle, max_tokens=32000))
        assert not answer.tool_results[0].is_error
        assert answer.text == render(recall(conv, summary_sources(summary)))


class TestContentHandle:
    def test_computed_once_per_message(self) -> None:
        """A message's handle is kept with it: the same string each time,
        equal to an equal message's, not carried by a copy or a pickle."""
        import pickle

        from contextwindow.handles import content_handle

        m = Message.tool("c1", FILE)
        first = content_handle(m)
        assert content_handle(m) is first
        equal = Message.tool("c1", FILE)
        assert content_handle(equal) == first
        assert content_handle(equal) is not first
        back = pickle.loads(pickle.dumps(m))
        assert back == m
        assert content_handle(back) == first
        assert content_handle(Message.tool("c1", FILE + " ")) != first


class TestOpaqueRecall:
    def test_dropped_document_turn_recalls_its_text(self) -> None:
        """A dropped turn holding only a text document recalls the document."""
        source = {
            "type": "text",
            "media_type": "text/plain",
            "data": "The fee is 4,200 EUR. " + "pad " * 400,
        }
        history = from_anthropic(
            [
                {"role": "user", "content": [{"type": "document", "source": source}]},
                {"role": "assistant", "content": "noted " * 300},
                {"role": "user", "content": "What is the fee?"},
            ]
        )
        fitted = fit(
            history,
            model="claude-sonnet-4-5",
            limit=400,
            reserve=0,
            strategy=DropOldest(),
        )
        ids = [i for c in fitted.report.changes if c.kind == "dropped" for i in c.ids]
        assert history[0].id in ids
        recalled = context_recall(history, history[0].id)
        assert recalled is not None
        assert recalled.startswith("user: The fee is 4,200 EUR.")

    def test_pdf_renders_as_a_label(self) -> None:
        """A PDF is rendered as a label naming it and its pages."""
        pdf = base64.b64encode(b"%PDF-1.4 <</Type /Pages /Count 12>>").decode()
        source = {"type": "base64", "media_type": "application/pdf", "data": pdf}
        doc = {"type": "document", "title": "Terms", "source": source}
        msg = Message("user", (Opaque.of("anthropic", doc), Text("Summarise.")))
        assert render([msg]) == "user: [document 'Terms', PDF, 12 pages]\nSummarise."
