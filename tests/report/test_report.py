"""The HTML report: its data, its page, and the ``report`` command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwindow import BudgetError, Message, fit, get_tokenizer, inspect_messages
from contextwindow.cli import main
from contextwindow.report import build_report
from contextwindow.report._data import Row, align_fit, align_view
from contextwindow.store import SQLiteStore
from contextwindow.store.base import StoredView, ViewMessage
from contextwindow.testing import conversations
from contextwindow.transcripts import Transcript, read_transcript

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLE = ROOT / "examples" / "agent_session.json"
TOK = get_tokenizer("gpt-4o")


def check_rows(rows: tuple[Row, ...], before: int, after: int) -> None:
    """Each original once and in order; each message sent once and in order."""
    olds = [r.before for r in rows if r.before is not None]
    news = [r.after for r in rows if r.after is not None]
    assert olds == list(range(before))
    assert news == list(range(after))


class TestAlignFit:
    @settings(max_examples=60, deadline=None)
    @given(conversations(min_turns=1, max_turns=8), st.floats(0.2, 1.0))
    def test_lists_every_message_once(self, conv: list[Message], share: float) -> None:
        """Every original and every fitted message is in the comparison once."""
        counter_total = fit(conv, limit=10**9, tokenizer=TOK).report.tokens_before
        try:
            fitted = fit(conv, limit=int(counter_total * share), tokenizer=TOK)
        except BudgetError:  # a budget below the pinned content: nothing to align
            return
        rows = align_fit(conv, fitted.messages, fitted.report.changes)
        check_rows(rows, len(conv), len(fitted.messages))
        touched = {i for c in fitted.report.changes for i in c.ids}
        for r in rows:
            if r.before is not None and r.after is None:
                assert conv[r.before].id in touched  # removed: a change says so
            if r.fate == "kept":
                assert r.before is not None
                assert r.after is not None
                assert conv[r.before] == fitted.messages[r.after]

    def test_dropped_and_truncated(self) -> None:
        """Fates come from the report's changes: the last one made to a message."""
        conv = list(read_transcript(EXAMPLE).messages)
        fitted = fit(conv, limit=1500, tokenizer=TOK)
        rows = align_fit(conv, fitted.messages, fitted.report.changes)
        fates = {r.fate for r in rows}
        kinds = {c.kind for c in fitted.report.changes}
        assert "kept" in fates
        assert fates - {"kept", "added"} <= kinds
        for r in rows:  # a message not sent ends dropped, summarised or collapsed
            if r.after is None:
                assert r.fate in ("dropped", "summarized", "collapsed")

    def test_summary_is_added(self) -> None:
        """A summary is a new row; the messages it stands for are summarised."""
        from contextwindow.strategies.names import parse_strategy

        conv = list(read_transcript(EXAMPLE).messages)
        fitted = fit(
            conv, limit=900, tokenizer=TOK, strategy=parse_strategy("summarize")
        )
        rows = align_fit(conv, fitted.messages, fitted.report.changes)
        check_rows(rows, len(conv), len(fitted.messages))
        added = [r for r in rows if r.before is None]
        assert [r.fate for r in added] == ["added"]
        assert any(r.fate == "summarized" and r.after is None for r in rows)


class TestAlignView:
    def test_summary_and_later(self) -> None:
        """A summary covers its origins; log messages after the view are 'later'."""
        log = [Message.user(f"m{i}") for i in range(6)]
        summary = Message.user("sum")
        view = StoredView(
            4,
            (
                ViewMessage(summary, "new", (0, 1, 2)),
                ViewMessage(log[3], "original", (3,)),
            ),
        )
        rows = align_view(len(log), view)
        check_rows(rows, 6, 4)
        assert [r.fate for r in rows] == [
            "added",
            "summarized",
            "summarized",
            "summarized",
            "kept",
            "later",
            "later",
        ]


def report_of(*args: str, tmp_path: Path) -> str:
    out = tmp_path / "r.html"
    result = CliRunner().invoke(main, ["report", *args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert f"wrote {out}" in result.stdout
    return out.read_text(encoding="utf-8")


def external_references(html: str) -> list[str]:
    """Anything a browser would fetch: src=, <link>, url(...), http(s) hrefs."""
    found = re.findall(r"""\ssrc\s*=|<link\b|url\(|href=["']https?:""", html)
    return found


class TestPage:
    def test_self_contained(self, tmp_path: Path) -> None:
        """The page fetches nothing: no src, no link, no external href."""
        html = report_of(str(EXAMPLE), "--budget", "40%", tmp_path=tmp_path)
        assert external_references(html) == []
        assert html.count("<svg") >= 5

    def test_every_change_listed(self, tmp_path: Path) -> None:
        """The change list has one row per change of the fit, each with its saving."""
        html = report_of(str(EXAMPLE), "--budget", "1500", tmp_path=tmp_path)
        conv = read_transcript(EXAMPLE).messages
        fitted = fit(conv, limit=1500, tokenizer=TOK)
        rows = re.findall(r'<tr data-change="(\d+)">(.*?)</tr>', html)
        assert [int(k) for k, _ in rows] == list(range(len(fitted.report.changes)))
        for (_, row), c in zip(rows, fitted.report.changes, strict=True):
            assert f'<td class="n">{c.saved:,}</td>' in row

    def test_text_escaped(self) -> None:
        """Conversation text cannot inject markup."""
        conv = (Message.user("<script>alert(1)</script>"), Message.assistant("ok"))
        t = Transcript(conv, "openai", "<b>x</b>")
        html = build_report(t, inspect_messages(conv), TOK)
        assert "<script>alert" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert "<b>x</b>" not in html

    def test_over_the_window_the_chart_reaches_the_peak(self) -> None:
        """A conversation over its window: the usage chart's axis reaches the
        peak and the window itself is drawn (the line ran off the plot)."""
        from contextwindow.models import get_model

        conv = tuple(
            m
            for i in range(60)
            for m in (
                Message.user(f"q{i} " + "lorem ipsum dolor " * 60),
                Message.assistant(f"a{i} " + "sit amet " * 60),
            )
        )
        t = Transcript(conv, "openai", "over")
        info = get_model("gpt-3.5-turbo-0125")  # 16,385 tokens: well under it
        ins = inspect_messages(conv, model=info.name)
        assert ins.tokens > info.context_window
        html = build_report(t, ins, TOK)
        assert "100% of the window" in html
        assert "zoomed" not in html

    def test_every_message_readable(self, tmp_path: Path) -> None:
        """Each message has an anchor the treemap tiles link to."""
        html = report_of(str(EXAMPLE), tmp_path=tmp_path)
        n = len(read_transcript(EXAMPLE).messages)
        anchors = set(re.findall(r'<details id="msg-(\d+)"', html))
        assert anchors == {str(i) for i in range(n)}
        links = set(re.findall(r'href="#msg-(\d+)"', html))
        assert links
        assert links <= anchors

    def test_fit_and_view_exclusive(self) -> None:
        """A page shows a fit or a stored view, not both."""
        from contextwindow.errors import ContextWindowError

        conv = (Message.user("hi"),)
        t = Transcript(conv, "openai", "t")
        fitted = fit(conv, limit=100, tokenizer=TOK)
        with pytest.raises(ContextWindowError, match="not both"):
            build_report(
                t, inspect_messages(conv), TOK, fitted=fitted, view=StoredView(0, ())
            )


class TestCommand:
    def test_stored_view(self, tmp_path: Path) -> None:
        """URL#ID shows the log against the saved view."""
        db = tmp_path / "chats.db"
        log = list(read_transcript(EXAMPLE).messages)
        summary = Message.user("Summary: the agent fixed the rate limiter.")
        with SQLiteStore(db) as store:
            store.append("s1", log, expected_version=0)
            store.save_view(
                "s1",
                [log[0], summary, *log[12:18]],
                version=18,
                sources={summary.id: [m.id for m in log[1:12]]},
            )
        html = report_of(f"sqlite:///{db}#s1", tmp_path=tmp_path)
        assert "Original against saved view" in html
        fates = re.findall(r'<tr data-fate="(\w+)">', html)
        assert fates.count("summarized") == 11
        assert fates.count("added") == 1
        assert fates.count("later") == len(log) - 18

    def test_store_url_takes_conversation_as_fit_does(self, tmp_path: Path) -> None:
        """URL with --conversation N reports the Nth stored conversation."""
        db = tmp_path / "chats.db"
        with SQLiteStore(db) as store:
            store.append("a", [Message.user("first chat")], expected_version=0)
            store.append("b", [Message.user("second chat")], expected_version=0)
        html = report_of(f"sqlite:///{db}", "--conversation", "1", tmp_path=tmp_path)
        assert "second chat" in html
        assert "first chat" not in html
        result = CliRunner().invoke(main, ["report", f"sqlite:///{db}", "-o", "x.html"])
        assert result.exit_code == 2
        assert "choose one with --conversation N (0 to 1)" in result.output

    def test_bad_strategy(self, tmp_path: Path) -> None:
        """A wrong --strategy is a usage error naming it."""
        result = CliRunner().invoke(
            main, ["report", str(EXAMPLE), "--strategy", "nope", "-o", "x.html"]
        )
        assert result.exit_code == 2
        assert "nope" in result.output


class TestEmptyConversation:
    def test_page_of_no_messages(self) -> None:
        """A conversation of no messages ([] is a valid transcript) gets a page:
        the role chart says "No messages" (pygal raised AttributeError)."""
        t = Transcript((), "openai", "empty.json")
        html = build_report(t, inspect_messages(()), TOK)
        assert html.startswith("<!DOCTYPE html>")
        roles = html.split('data-chart="roles"')[1].split('data-chart="')[0]
        assert "No messages" in roles

    @pytest.mark.parametrize("args", [[], ["--budget", "10"], ["--strategy", "dedupe"]])
    def test_command_on_an_empty_file(self, tmp_path: Path, args: list[str]) -> None:
        """report on [] writes its page, with a fit or without, exit 0."""
        empty = tmp_path / "empty.json"
        empty.write_text("[]")
        html = report_of(str(empty), *args, tmp_path=tmp_path)
        assert "No messages" in html


class TestReportFitAgreesWithFit:
    def test_default_budget_reserves_nothing(self, tmp_path: Path) -> None:
        """report --strategy without --budget fits into the model's window with
        nothing reserved, as fit --strategy does: a conversation under the
        window is not cut by either (report took off a reply reserve)."""
        import json

        from contextwindow.models import get_model

        window = get_model("gpt-4").context_window
        conv = [Message.system("Be brief.")]
        while inspect_messages(conv, model="gpt-4").tokens < 0.9 * window:
            i = len(conv)
            conv += [
                Message.user(f"q{i} " + "lorem ipsum dolor " * 40),
                Message.assistant(f"a{i} " + "sit amet " * 40),
            ]
        tokens = inspect_messages(conv, model="gpt-4").tokens
        assert 0.8 * window < tokens <= window
        chat = tmp_path / "chat.json"
        chat.write_text(json.dumps([{"role": m.role, "content": m.text} for m in conv]))
        args = [str(chat), "-m", "gpt-4", "--strategy", "drop-oldest"]
        result = CliRunner().invoke(main, ["fit", *args, "--json", "-o", "/dev/null"])
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        assert (report["budget"], report["reserve"]) == (window, 0)
        assert report["tokens_after"] == report["tokens_before"] == tokens
        html = report_of(*args, tmp_path=tmp_path)
        assert f"{tokens:,} → {tokens:,}" in html
        assert "<tr data-change=" not in html


class TestImportSideEffects:
    def test_no_finder_left_without_find_spec(self) -> None:
        """pygal's plugin finder is removed: later imports raise no ImportWarning."""
        import sys

        import contextwindow.report._charts  # noqa: F401  # the import under test

        assert all(hasattr(f, "find_spec") for f in sys.meta_path)


def test_two_builds_of_the_same_input_are_the_same_bytes() -> None:
    """No pygal script, random chart id or build date: a report is reproducible."""
    import re

    from contextwindow import fit, get_tokenizer, inspect_messages, read_transcript
    from contextwindow.report import build_report

    t = read_transcript(EXAMPLE)
    tok = get_tokenizer("gpt-4o")
    fitted = fit(t.messages, limit=1500, tokenizer=tok)
    info = inspect_messages(t.messages, model="gpt-4o")
    first = build_report(t, info, tok, fitted=fitted)
    assert first == build_report(t, info, tok, fitted=fitted)
    svgs = re.findall(r"<svg\b.*?</svg>", first, re.S)
    assert svgs
    assert not any("<script" in s for s in svgs)
    assert len(re.findall(r"<script\b", first)) == 1  # the page's own
