from __future__ import annotations

import base64
import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from contextwindow import (
    ContextManager,
    Image,
    Message,
    Opaque,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    fit,
)
from contextwindow.formats import from_anthropic, to_anthropic, to_openai
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


def reads(gap: str = "", n: int = 30, at: int = 10, lines: int = 12) -> list[Message]:
    """An agent reading ``n`` files; at call ``at``, what ``gap`` names: a call
    with no result (``unanswered``), a stray result (``orphan``) or an empty
    assistant turn (``empty``), each of which a repair leaves out of a view."""
    conv = [Message.system("agent"), Message.user("go")]
    for i in range(n):
        args = json.dumps({"path": f"f{i}.py"})
        conv.append(
            Message.assistant(tool_calls=[ToolCall(f"c{i}", "read_file", args)])
        )
        if not (gap == "unanswered" and i == at):
            body = "\n".join(f"v{i}_{j} = {j}" for j in range(lines))
            conv.append(Message.tool(f"c{i}", f"contents of f{i}.py\n{body}"))
        if i == at and gap == "orphan":
            conv.append(Message.tool("zz", "late result of a call nobody made"))
        if i == at and gap == "empty":
            conv.append(Message.assistant(""))
    conv.append(Message.user("summarise"))
    return conv


def runs_in(messages: Sequence[Message]) -> list[str]:
    return [h for m in messages for h in find_handles(m.text) if "+" in h]


class TestRecallAcrossRepairs:
    @pytest.mark.parametrize("gap", ["unanswered", "orphan", "empty"])
    def test_a_run_over_a_repaired_spot_recalls_through_fit(self, gap: str) -> None:
        """A collapsed run whose messages a repair left apart in the history
        (it dropped what lay between) brings back the stretch of history it
        stood for, the dropped message included, with no view given."""
        conv = reads(gap)
        fitted = fit(conv, limit=400, tokenizer=FakeTokenizer())
        assert "repaired" in fitted.report.totals()
        (run,) = runs_in(fitted.messages)
        (line,) = [m for m in fitted.messages if run in m.text]
        first = next(k for k, m in enumerate(conv) if m.id == line.id)
        count = int(run.partition("+")[2])
        got = context_recall(conv, run, max_tokens=32000, tokenizer=FakeTokenizer())
        assert got == render(conv[first : first + count + 1])
        assert "contents of f9.py" in got
        assert "contents of f11.py" in got
        answer = answer_recall(conv, recall_call(run, max_tokens=32000))
        assert not answer.tool_results[0].is_error, answer.text

    def test_a_run_over_an_interrupted_call_is_answered_by_the_manager(self) -> None:
        """Pushed turn by turn, prepared after each: every handle of the view,
        the run's over the call that got no result too, is answered."""
        conv = reads("unanswered", at=3)
        m = ContextManager(
            token_limit=1000, tokenizer=FakeTokenizer(), offer_recall=True
        )
        m.push_many(conv[:2])
        for message in conv[2:]:
            m.push(message)
            m.prepare()
        handles = [h for v in m.messages for h in find_handles(v.text)]
        assert runs_in(list(m.messages))
        for h in handles:
            answer = m.answer_recall(recall_call(h, max_tokens=32000))
            assert not answer.tool_results[0].is_error, (h, answer.text)
        over = [
            m.answer_recall(recall_call(h, max_tokens=32000)).text
            for h in runs_in(list(m.messages))
        ]
        assert any("contents of f2.py" in t and "contents of f4.py" in t for t in over)

    def test_a_summary_of_a_run_over_a_repaired_spot_names_its_messages(self) -> None:
        """A summary that replaces such a run's line reads, and names, the
        messages the run stood for: its handle brings them back."""
        conv = reads("unanswered", lines=30)
        fitted = fit(conv, limit=200, tokenizer=FakeTokenizer())
        (summary,) = [m for m in fitted.messages if is_summary(m)]
        sources = summary_sources(summary)
        assert conv[19].id in sources  # f8.py's result, inside the run
        handle = str(summary_handle(summary))
        got = context_recall(
            conv,
            handle,
            max_tokens=32000,
            tokenizer=FakeTokenizer(),
            view=fitted.messages,
        )
        assert got is not None
        assert "contents of f9.py" in got
        assert "contents of f11.py" in got

    def test_a_run_over_a_message_a_transform_took_out_recalls_with_the_view(
        self,
    ) -> None:
        """A message taken out of the view (a handler's transform), not by a
        repair: the run's line in the view anchors where its messages start,
        and the stretch of history holding them comes back."""
        conv = reads()
        note = Message.user("(a note a handler took out of the view)")
        history = [*conv[:12], note, *conv[12:]]
        fitted = fit(conv, limit=400, tokenizer=FakeTokenizer())
        (run,) = runs_in(fitted.messages)
        tok = FakeTokenizer()
        assert context_recall(history, run, tokenizer=tok) is None  # no view: no anchor
        got = context_recall(
            history, run, max_tokens=32000, tokenizer=tok, view=fitted.messages
        )
        assert got is not None
        assert note.text in got
        assert "contents of f0.py" in got
        assert "contents of f26.py" in got


SHOT = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" * 400).decode()


class TestImagesInRecall:
    def test_a_cleared_screenshot_says_an_image_was_there(self) -> None:
        """A cleared result that held an image recalls its caption and a label
        of the image (its size and type), not the caption alone."""
        conv = [Message.user("take screenshots")]
        for i in range(4):
            shot = Image(SHOT, width=1024, height=768)
            conv += [
                Message.assistant(tool_calls=[ToolCall(f"c{i}", "screenshot", "{}")]),
                Message("tool", (ToolResult(f"c{i}", (Text(f"screen {i}:"), shot)),)),
            ]
        conv.append(Message.user("what changed?"))
        fitted = fit(conv, limit=3000, strategy=ClearToolResults(keep_recent=1))
        (h, *_) = [h for m in fitted.messages for h in find_handles(m.text)]
        assert context_recall(conv, h) == "screen 0:\n[image 1024x768, image/png]"
        answer = answer_recall(conv, recall_call(h))
        assert answer.text == "screen 0:\n[image 1024x768, image/png]"

    def test_a_dropped_image_turn_says_what_it_held(self) -> None:
        """A dropped user turn holding only an image recalls a label, its size
        read from the image's header when the part does not give it."""
        png = base64.b64encode(
            b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
            + (800).to_bytes(4, "big")
            + (600).to_bytes(4, "big")
        ).decode()
        turn = Message("user", (Image(f"data:image/png;base64,{png}"),))
        url = Message("user", (Image("https://example.com/chart.png"), Text("see")))
        assert render([turn]) == "user: [image 800x600, image/png]"
        assert render([url]) == "user: [image, https://example.com/chart.png]\nsee"


class TestRecallFromWhatWasSent:
    @pytest.mark.parametrize("shape", ["openai", "anthropic"])
    def test_a_summary_is_found_in_the_provider_shape_fit_returned(
        self, shape: str
    ) -> None:
        """``view=fitted.as_input()`` (provider dicts, no meta): the summary is
        known by its header, and its handle brings back what the neutral
        view's does."""
        conv = session(12)
        data = to_openai(conv) if shape == "openai" else to_anthropic(conv)
        fitted = fit(data, limit=300, tokenizer=FakeTokenizer())
        (summary,) = [m for m in fitted.messages if is_summary(m)]
        call = recall_call(str(summary_handle(summary)), max_tokens=32000)
        tok = FakeTokenizer()
        sent = answer_recall(data, call, view=fitted.as_input(), tokenizer=tok)  # type: ignore[arg-type]  # provider shapes, as users hold them
        neutral = answer_recall(data, call, view=fitted.messages, tokenizer=tok)  # type: ignore[arg-type]  # provider shapes, as users hold them
        assert not sent.tool_results[0].is_error, sent.text
        assert sent.text == neutral.text
        assert "m1_199" in sent.text


class TestRecallArguments:
    def test_null_max_tokens_is_the_default(self) -> None:
        """``max_tokens: null`` (a model's way to leave it out, OpenAI strict
        mode's too) is taken as absent, as a null ``start_line`` is."""
        text = "\n".join(f"line {i}" for i in range(1, 3001))
        history = [Message.tool("c1", text)]
        h = history[0].id
        plain = answer_recall(history, recall_call(h))
        for extra in (
            {"max_tokens": None},
            {"max_tokens": None, "start_line": None, "start_char": None},
        ):
            got = answer_recall(history, recall_call(h, **extra))
            assert not got.tool_results[0].is_error, got.text
            assert got.text == plain.text

    def test_a_handle_pasted_with_the_markers_words(self) -> None:
        """``recall 3f2a9c1b0d`` (the marker's word copied with it), or the
        whole marker, names the handle it shows."""
        conv = session()
        fitted = fit(conv, limit=3000, tokenizer=FakeTokenizer())
        (marker, *_) = [m.text for m in fitted.messages if find_handles(m.text)]
        (h, *_) = find_handles(marker)
        want = answer_recall(conv, recall_call(h)).text
        for pasted in (f"recall {h}", f" recall {h} ", marker):
            got = answer_recall(conv, recall_call(pasted))
            assert not got.tool_results[0].is_error, (pasted, got.text)
            assert got.text == want
        bad = answer_recall(conv, recall_call("recall 0000000000"))
        assert bad.tool_results[0].is_error


class TestPagingCost:
    def test_a_page_counts_what_it_holds_not_the_rest(self) -> None:
        """Reading one page of a large original counts about what the page
        holds: a few times its size, whatever the size of the rest."""
        for n in (5_000, 40_000):
            text = "\n".join(f"{i}: " + "word " * 6 for i in range(n))
            history = [Message.tool("c1", text)]
            tok = FakeTokenizer()
            page = context_recall(
                history, history[0].id, max_tokens=500, tokenizer=tok, start_line=2
            )
            assert page is not None
            assert page.startswith("[lines 2-")
            counted = sum(len(t) for t in tok.calls)
            assert counted < 40 * len(page), (n, counted, len(page))
