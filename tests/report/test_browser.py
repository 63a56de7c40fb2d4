"""The HTML report in a real browser: headless Chromium (Debian's ``chromium``).

Three reports (a Claude Code session of the shared data, a fitted tau-bench
run, a stored conversation with a saved view) are opened from files with no
network: each must log no error or warning, show every chart with data, list
every change of its fit, and open a message when one of its treemap tiles
is clicked. Screenshots go to ``build/artifacts/report/`` (or
``$CONTEXTWINDOW_ARTIFACTS``), for people to look at.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from contextwindow import Message, fit, get_tokenizer, read_transcript
from contextwindow.cli import main
from contextwindow.store import SQLiteStore
from contextwindow.transcripts import read_transcripts

from ._browser import Browser, chromium

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLE = ROOT / "examples" / "agent_session.json"
ARTIFACTS = (
    Path(os.environ.get("CONTEXTWINDOW_ARTIFACTS", ROOT / "build" / "artifacts"))
    / "report"
)

CHARTS_JS = """
(() => {
  const charts = [...document.querySelectorAll('[data-chart]')].map(d => ({
    name: d.dataset.chart,
    svgs: d.querySelectorAll('svg').length,
    points: d.querySelectorAll('.series .reactive').length,
    named: d.querySelectorAll('.series[data-name]').length,
    width: Math.round(d.getBoundingClientRect().width),
  }));
  const changes = [...document.querySelectorAll('#change-list tbody tr')].map(
    r => [r.cells[0].textContent, Number(r.cells[7].textContent.replace(/,/g, ''))]);
  return {charts, changes,
          messages: document.querySelectorAll('details[id^="msg-"]').length,
          title: document.title};
})()
"""

CLICK_TILE_JS = """
new Promise(done => {
  const a = document.querySelector('[data-chart="messages"] a');
  const href = a.getAttribute('xlink:href') || a.getAttribute('href');
  a.dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true,
                                           view: window}));
  setTimeout(() => {
    const el = document.getElementById(href.slice(1));
    done({href, hash: location.hash, open: el.open});
  }, 300);
})
"""

HOVER_JS = """
(() => {
  const t = document.querySelector('[data-chart="roles"] .tooltip-trigger');
  t.dispatchEvent(new MouseEvent('mouseover', {bubbles: true}));
  const tip = document.getElementById('tip');
  return [tip.style.display, tip.textContent];
})()
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    exe = chromium()
    if exe is None:
        msg = "chromium is not installed (scripts/install_browser.sh installs it)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    b = Browser(exe)
    yield b
    b.close()


def write_report(out: Path, *args: str) -> None:
    result = CliRunner().invoke(main, ["report", *args, "-o", str(out)])
    assert result.exit_code == 0, result.output


def check_page(
    browser: Browser, html: Path, name: str, charts: set[str]
) -> dict[str, Any]:
    """Open the page; assert no problems and every chart drawn; screenshot it."""
    page = browser.open(html.resolve().as_uri())
    facts: dict[str, Any] = page.js(CHARTS_JS)
    page.screenshot(ARTIFACTS / f"{name}.png")
    assert page.problems() == []
    found = {c["name"]: c for c in facts["charts"]}
    assert set(found) == charts
    for c in found.values():
        assert c["svgs"] == 1, c
        assert c["points"] > 0, c  # drawn with data
        assert c["named"] > 0, c  # the page's script ran over it
        assert c["width"] > 300, c
    clicked = page.js(CLICK_TILE_JS)
    assert clicked["hash"] == clicked["href"]
    assert clicked["open"] is True
    display, text = page.js(HOVER_JS)
    assert display == "block"
    assert "tokens" in text
    return facts


class TestInChromium:
    def test_claude_code_session(
        self, browser: Browser, shared_data: Path, tmp_path: Path
    ) -> None:
        """A real session: usage with its compaction and reported input tokens."""
        sessions = sorted((shared_data / "claude_code_sessions").glob("*.jsonl"))
        session = min(sessions, key=lambda p: p.stat().st_size)
        out = tmp_path / "claude_code.html"
        write_report(out, str(session))
        facts = check_page(
            browser, out, "claude_code", {"usage", "roles", "tools", "messages"}
        )
        (t,) = read_transcripts(session)
        assert facts["messages"] == len(t.messages)
        html = out.read_text(encoding="utf-8")
        assert "compactions recorded" in html
        assert "input tokens the provider reported" in html

    def test_fitted_tau_bench_run(
        self, browser: Browser, shared_data: Path, tmp_path: Path
    ) -> None:
        """A fit: the change list holds every change, each with its saving."""
        data = shared_data / "tau-bench_gpt-4o-airline.json"
        out = tmp_path / "tau_bench_fit.html"
        write_report(out, str(data), "-c", "3", "--budget", "50%")
        facts = check_page(
            browser,
            out,
            "tau_bench_fit",
            {"usage", "roles", "tools", "messages", "fit", "fates"},
        )
        t = read_transcripts(data)[3]
        tok = get_tokenizer("gpt-4o")
        whole = fit(t.messages, limit=10**9, tokenizer=tok).report.tokens_before
        fitted = fit(t.messages, limit=whole // 2, tokenizer=tok)
        expected = [[c.kind, c.saved] for c in fitted.report.changes]
        assert facts["changes"] == expected
        assert sum(s for _, s in facts["changes"]) == fitted.report.saved

    def test_stored_conversation(self, browser: Browser, tmp_path: Path) -> None:
        """A store URL: the log against its saved view."""
        db = tmp_path / "chats.db"
        log = list(read_transcript(EXAMPLE).messages)
        summary = Message.user("Summary: the agent fixed the rate limiter.")
        with SQLiteStore(db) as store:
            store.append("session-1", log, expected_version=0)
            store.update_meta("session-1", {"model": "gpt-4o"})
            store.save_view(
                "session-1",
                [log[0], summary, *log[12:18]],
                version=18,
                sources={summary.id: [m.id for m in log[1:12]]},
            )
        out = tmp_path / "stored.html"
        write_report(out, f"sqlite:///{db}#session-1")
        facts = check_page(
            browser,
            out,
            "stored_view",
            {"usage", "roles", "tools", "messages", "fit", "fates"},
        )
        assert facts["messages"] == len(log)

    def test_problems_are_seen(self, browser: Browser, tmp_path: Path) -> None:
        """The checks above can fail: an error, an exception, a failed load."""
        bad = tmp_path / "bad.html"
        bad.write_text(
            "<!DOCTYPE html><html><body><img src='missing.png'>"
            "<script>console.error('boom'); nope();</script></body></html>",
            encoding="utf-8",
        )
        page = browser.open(bad.as_uri())
        found = "\n".join(page.problems())
        assert "boom" in found
        assert "nope" in found
        assert "missing.png" in found or "ERR_FILE_NOT_FOUND" in found
