from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from contextwindow import (
    ContextWindowError,
    Message,
    TokenCounter,
    from_provider,
    get_tokenizer,
    problems,
    read_transcript,
)
from contextwindow.cli import main
from contextwindow.fitting import DEFAULT_STRATEGY
from contextwindow.messages import Provider
from contextwindow.strategies import (
    ClearToolResults,
    CollapseRuns,
    Deduplicate,
    DropOldest,
    Pipeline,
    SlidingWindow,
    TruncateToolResults,
)
from contextwindow.strategies.names import STRATEGY_NAMES, parse_strategy

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "agent_session.json"
EXAMPLE_TOKENS = 2941  # gpt-4o, openai framing (what `inspect` reports)


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), input=stdin)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def fit_json(*args: str) -> tuple[Any, dict[str, Any]]:
    """Run `fit --json`: the fitted conversation (stdout) and the report (stderr)."""
    code, out, err = run("fit", *args, "--json")
    assert code == 0, err
    return json.loads(out), json.loads(err)


def read_back(data: Any, provider: Provider) -> list[Message]:
    """The fitted conversation read back with its provider's reader, checked valid."""
    messages = from_provider(data, provider)
    assert problems(messages, provider) == ()
    return messages


def tau_file(tmp_path: Path, n: int = 3) -> Path:
    runs = [
        {
            "task_id": k,
            "trial": 0,
            "traj": [
                {"role": "system", "content": "You are an airline agent."},
                {"role": "user", "content": f"question {k} " + "word " * 100},
                {"role": "assistant", "content": "answer " * 50},
                {"role": "user", "content": "thanks"},
            ],
        }
        for k in range(n)
    ]
    path = tmp_path / "tau.json"
    path.write_text(json.dumps(runs))
    return path


class TestParseStrategy:
    @pytest.mark.parametrize(
        ("spec", "expected"),
        [
            ("drop-oldest", DropOldest()),
            ("sliding-window", SlidingWindow()),
            ("sliding-window(30)", SlidingWindow(30)),
            ("sliding-window(keep_last=7)", SlidingWindow(7)),
            ("truncate", TruncateToolResults()),
            (
                "truncate(keep_recent=2,max_tokens=300)",
                TruncateToolResults(keep_recent=2, max_tokens=300),
            ),
            ("truncate(max_tokens=1_000)", TruncateToolResults(max_tokens=1000)),
            ("clear(keep_recent=5)", ClearToolResults(keep_recent=5)),
            ("clear()", ClearToolResults()),
            ("dedupe", Deduplicate()),
            ("default", DEFAULT_STRATEGY),
            ("  Drop_Oldest ", DropOldest()),
            ("truncate ( keep_recent = 1 )", TruncateToolResults(keep_recent=1)),
        ],
    )
    def test_one_stage(self, spec: str, expected: object) -> None:
        """One stage builds the strategy itself, arguments and spelling honoured."""
        assert parse_strategy(spec) == expected

    def test_pipeline(self) -> None:
        """Stages joined by commas are a Pipeline, in order."""
        spec = "dedupe, truncate(keep_recent=2, max_tokens=300), drop-oldest"
        assert parse_strategy(spec) == Pipeline(
            Deduplicate(),
            TruncateToolResults(keep_recent=2, max_tokens=300),
            DropOldest(),
        )

    def test_default_in_a_pipeline(self) -> None:
        """`default` may follow other stages; it is fit's own default."""
        pipe = parse_strategy("sliding-window(30),default")
        assert pipe == Pipeline(SlidingWindow(30), DEFAULT_STRATEGY)
        default = parse_strategy("default")
        assert isinstance(default, CollapseRuns)  # the bound on placeholders
        assert default.strategy == parse_strategy(
            "lossless,dedupe,stale,truncate,truncate-inputs,clear,"
            "truncate(keep_recent=0),"
            "summarize(summarizer=names,keep_recent=2,max_tokens=1000,keep_first=1,"
            "read_originals=true),"
            "drop-oldest"
        )

    @pytest.mark.parametrize(
        ("spec", "fragments"),
        [
            ("", ["empty strategy spec", "drop-oldest"]),
            (" , ", ["empty strategy spec"]),
            ("dedupe,,truncate", ["stage 2 is empty"]),
            ("dedupe,shrink", ["'shrink'", "unknown name", "sliding-window", "dedupe"]),
            (
                "truncate(keep=2)",
                ["unknown argument 'keep'", "keep_recent, max_tokens"],
            ),
            ("drop-oldest(3)", ["'3' needs a keyword", "drop-oldest(keep_first=N)"]),
            ("dedupe(shout=1)", ["unknown argument 'shout'", "dedupe takes note"]),
            (
                "relevant(scorer=tfidf)",
                ["scorer='tfidf' is not one of bm25, embeddings"],
            ),
            ("summarize(max_share=nan)", ["max_share='nan' is not a number"]),
            ("clear(placeholder='x)", ["' without its closing '"]),
            ("truncate(2)", ["'2' needs a keyword", "truncate(keep_recent=N"]),
            ("sliding-window(1,2)", ["needs a keyword"]),
            ("sliding-window(x)", ["keep_last='x' is not an integer"]),
            ("clear(keep_recent=1.5)", ["is not an integer"]),
            ("truncate(keep_recent=1,keep_recent=2)", ["'keep_recent' given twice"]),
            ("truncate(max_tokens=0)", ["'truncate(max_tokens=0)'", "max_tokens"]),
            (
                "sliding-window(-1)",
                ["'sliding-window(-1)'", "keep_last: expected an int >= 0"],
            ),
            ("truncate(", ["'(' without ')'"]),
            ("truncate)", ["')' without '('"]),
            ("truncate((1))", ["nested parentheses"]),
            ("9lives", ["'9lives'", "expected name"]),
        ],
    )
    def test_bad_spec(self, spec: str, fragments: list[str]) -> None:
        """A bad spec raises ContextWindowError naming the part at fault."""
        with pytest.raises(ContextWindowError) as info:
            parse_strategy(spec)
        for fragment in fragments:
            assert fragment in str(info.value)

    def test_every_name_has_a_summary(self) -> None:
        """Every name says what it does, and `fit --help` lists it, in 80
        columns (a long usage wraps)."""
        _, out, _ = run("fit", "--help")
        flat = " ".join(out.split())
        for name, entry in STRATEGY_NAMES.items():
            assert entry.summary
            assert " ".join(entry.usage(name).split()) in flat
            assert " ".join(entry.summary.split()) in flat
        assert max(map(len, out.splitlines())) <= 80


class TestFitOutput:
    def test_fitting_input_comes_back_unchanged(self) -> None:
        """Without a budget the example fits its window and is written back as read."""
        code, out, err = run("fit", str(EXAMPLE), "--model", "gpt-4o")
        assert code == 0, err
        assert json.loads(out) == json.loads(EXAMPLE.read_text())
        assert "stages    (none: it already fits)" in err
        assert "changes" not in err

    def test_stdout_stderr_split(self) -> None:
        """Without -o the conversation goes to stdout and the report to stderr."""
        code, out, err = run("fit", str(EXAMPLE), "--budget", "50%")
        assert code == 0
        assert isinstance(json.loads(out), list)
        assert err.startswith("agent_session.json  (openai, fitted for openai)")
        assert "tokens    2,941 → " in err

    def test_output_file(self, tmp_path: Path) -> None:
        """With -o the conversation goes to the file and the report to stdout."""
        target = tmp_path / "fitted.json"
        code, out, err = run("fit", str(EXAMPLE), "--budget", "50%", "-o", str(target))
        assert code == 0
        assert err == ""
        assert out.startswith("agent_session.json")
        assert out.rstrip().endswith(f"wrote {target} (openai shape)")
        text = target.read_text(encoding="utf-8")
        assert text.endswith("]\n")
        # 27 messages; collapsing runs of cleared exchanges leaves 17.
        assert len(read_back(json.loads(text), "openai")) == 17

    def test_output_dash_is_stdout(self) -> None:
        """-o - is standard output, as without -o."""
        _, out, err = run("fit", str(EXAMPLE), "-o", "-")
        assert json.loads(out) == json.loads(EXAMPLE.read_text())
        assert err.startswith("agent_session.json")

    def test_unicode_is_written_as_utf8(self, tmp_path: Path) -> None:
        """Non-ASCII text is written as UTF-8, not escaped."""
        chat = tmp_path / "chat.json"
        chat.write_text(
            json.dumps([{"role": "user", "content": "東京の天気は? ☀"}]),
            encoding="utf-8",
        )
        target = tmp_path / "out.json"
        assert run("fit", str(chat), "-o", str(target))[0] == 0
        assert "東京の天気は? ☀" in target.read_text(encoding="utf-8")

    def test_stdin(self) -> None:
        """FILE - reads standard input."""
        code, out, _ = run("fit", "-", "--budget", "50%", stdin=EXAMPLE.read_text())
        assert code == 0
        assert len(read_back(json.loads(out), "openai")) == 17

    @pytest.mark.parametrize("to", ["openai", "anthropic", "responses"])
    def test_to_provider(self, to: Provider) -> None:
        """--to writes that provider's shape, valid for it and within the budget."""
        data, report = fit_json(str(EXAMPLE), "--budget", "40%", "--to", to)
        assert report["provider"] == to
        if to == "anthropic":
            assert set(data) == {"model", "system", "messages"}
            assert data["messages"][0]["role"] == "user"
        elif to == "responses":
            assert all("type" in item for item in data)
        else:
            assert all("role" in m for m in data)
        messages = read_back(data, to)
        assert report["tokens_after"] <= report["budget"]
        if to == "openai":  # the same messages, so the same count
            counter = TokenCounter(get_tokenizer("gpt-4o"), "openai")
            assert counter.messages(messages) == report["tokens_after"]

    def test_refitting_changes_nothing(self, tmp_path: Path) -> None:
        """The fitted output, fitted again to the same budget, is left as it is."""
        target = tmp_path / "fitted.json"
        _, out, _ = run("fit", str(EXAMPLE), "--budget", "1200", "-o", str(target))
        assert "cleared" in out
        assert "collapsed" in out
        data, report = fit_json(str(target), "--budget", "1200")
        assert data == json.loads(target.read_text())
        assert report["changes"] == []
        assert report["stages"] == []

    def test_anthropic_list_is_fitted_for_anthropic(self, tmp_path: Path) -> None:
        """A JSON list of Anthropic turns keeps the Anthropic shape and rules."""
        turns = [
            {"role": "user", "content": "list files"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "a " * 400}
                ],
            },
            {"role": "assistant", "content": "two files"},
            {"role": "user", "content": "thanks"},
        ]
        path = tmp_path / "turns.json"
        path.write_text(json.dumps(turns))
        data, report = fit_json(str(path), "--budget", "60", "-s", "drop-oldest")
        assert report["provider"] == "anthropic"
        assert set(data) == {"model", "messages"}
        messages = read_back(data, "anthropic")
        assert messages[0].role == "user"  # first turn repaired to a user turn
        assert report["tokens_after"] <= 60

    def test_jsonl_of_responses_items(self, tmp_path: Path) -> None:
        """JSONL takes the provider of the shape its lines are in."""
        lines = [
            {"type": "message", "role": "user", "content": "hi " * 30},
            {"type": "message", "role": "assistant", "content": "hello"},
            {"type": "message", "role": "user", "content": "bye"},
        ]
        path = tmp_path / "items.jsonl"
        path.write_text("\n".join(json.dumps(x) for x in lines))
        data, report = fit_json(str(path), "--budget", "30")
        assert report["provider"] == "responses"
        assert [m.text for m in read_back(data, "responses")] == ["hello", "bye"]


class TestFitOptions:
    def test_default_budget_is_the_window(self) -> None:
        """Without --budget the budget is the model's window."""
        _, report = fit_json(str(EXAMPLE), "-m", "gpt-4o")
        assert report["limit"] == report["budget"] == 128_000
        assert report["context_window"] == 128_000
        assert report["budget_spec"] is None

    @pytest.mark.parametrize(("spec", "share"), [("50%", 50), ("12.5%", 12.5)])
    def test_percent_budget(self, spec: str, share: float) -> None:
        """N% is that share of the conversation's own tokens."""
        _, report = fit_json(str(EXAMPLE), "--budget", spec)
        assert report["tokens_before"] == EXAMPLE_TOKENS
        assert report["budget"] == int(EXAMPLE_TOKENS * share / 100)
        assert report["budget_spec"] == spec
        assert report["tokens_after"] <= report["budget"]

    @pytest.mark.parametrize("spec", ["1500", "1,500", "1_500"])
    def test_token_budget(self, spec: str) -> None:
        """N is a number of tokens; separators are allowed."""
        _, report = fit_json(str(EXAMPLE), "--budget", spec)
        assert report["budget"] == 1500
        assert report["tokens_after"] <= 1500
        assert report["fits"] is True

    @pytest.mark.parametrize("spec", ["abc", "%", "10q", "1.5"])
    def test_bad_budget(self, spec: str) -> None:
        """A budget that is neither N nor N% is a usage error naming --budget."""
        code, out, err = run("fit", str(EXAMPLE), "--budget", spec)
        assert code == 2
        assert out == ""
        assert "--budget" in err
        assert "N%" in err

    def test_negative_budget(self) -> None:
        """A negative budget is a number: the error says what is wrong with it."""
        code, out, err = run("fit", str(EXAMPLE), "--budget", "-100")
        assert (code, out) == (2, "")
        assert "'-100' is negative: give 0 or more" in err

    def test_budget_over_the_window_is_warned_of(self) -> None:
        """A budget larger than the model's window fits, with a warning that
        the provider refuses what is over its window."""
        code, _, err = run("fit", str(EXAMPLE), "-m", "gpt-4o", "--budget", "200k")
        assert code == 0
        assert (
            "warning: the budget (200,000 tokens) is over gpt-4o's window (128,000)"
            in err
        )
        _, _, err = run("fit", str(EXAMPLE), "-m", "gpt-4o", "--budget", "100k")
        assert "warning" not in err

    def test_reserve(self) -> None:
        """--reserve keeps tokens free within the budget."""
        _, report = fit_json(str(EXAMPLE), "--budget", "2000", "--reserve", "500")
        assert (report["limit"], report["reserve"], report["budget"]) == (
            2000,
            500,
            1500,
        )
        assert report["tokens_after"] <= 1500
        _, _, err = run("fit", str(EXAMPLE), "--budget", "2000", "--reserve", "500")
        assert "budget    1,500 tokens (asked for, less 500 reserved)" in err

    def test_reserve_above_budget(self) -> None:
        """A reserve larger than the budget is a usage error naming --reserve."""
        code, out, err = run("fit", str(EXAMPLE), "--budget", "100", "--reserve", "200")
        assert (code, out) == (2, "")
        assert (
            "Error: Invalid value for --reserve: 200 tokens is more than the budget "
            "(100)" in err
        )

    @pytest.mark.parametrize("command", ["fit", "inspect", "report"])
    def test_empty_model_is_refused(self, command: str) -> None:
        """--model '' is a usage error, not the default model in silence."""
        code, out, err = run(command, str(EXAMPLE), "--model", "")
        assert (code, out) == (2, "")
        assert "Invalid value for --model: an empty model name" in err

    def test_empty_marker_is_refused(self) -> None:
        """An empty --protect marker (it would hold in every text) names --protect."""
        code, out, err = run("fit", str(EXAMPLE), "--protect", " ")
        assert (code, out) == (2, "")
        assert "Invalid value for --protect: a marker must hold some text" in err

    def test_output_over_the_input_is_refused(self, tmp_path: Path) -> None:
        """-o naming the input file would lose the conversation: refused."""
        copy = tmp_path / "chat.json"
        copy.write_text(EXAMPLE.read_text())
        code, _, err = run("fit", str(copy), "--budget", "40%", "-o", str(copy))
        assert code == 2
        assert "is the input file" in err
        assert copy.read_text() == EXAMPLE.read_text()

    def test_strategy(self) -> None:
        """--strategy runs the stages named, DropOldest finishing if they fall short."""
        _, report = fit_json(str(EXAMPLE), "--budget", "90%", "-s", "sliding-window(6)")
        assert report["strategy"] == "sliding-window(6)"
        assert report["stages"] == ["SlidingWindow"]
        assert {c["kind"] for c in report["changes"]} == {"dropped"}
        _, report = fit_json(
            str(EXAMPLE), "--budget", "30%", "-s", "sliding-window(12)"
        )
        assert report["stages"] == ["SlidingWindow", "DropOldest"]

    def test_bad_strategy(self) -> None:
        """A bad --strategy is a usage error that lists the valid arguments."""
        code, out, err = run("fit", str(EXAMPLE), "-s", "truncate(keep=1)")
        assert code == 2
        assert out == ""
        assert "--strategy" in err
        assert "keep_recent, max_tokens" in err

    def test_protect(self) -> None:
        """--protect keeps a message holding the marker as it is."""
        marker = "Rate limiter used by the public API gateway"
        original = json.loads(EXAMPLE.read_text())[5]["content"]
        assert marker in original
        data, report = fit_json(str(EXAMPLE), "--budget", "40%")
        assert 5 in {c["index"] for c in report["changes"]}
        data, report = fit_json(str(EXAMPLE), "--budget", "40%", "--protect", marker)
        assert 5 not in {c["index"] for c in report["changes"]}
        assert original in [m.get("content") for m in data]
        assert report["tokens_after"] <= report["budget"]

    def test_query(self) -> None:
        """--query tells the relevant strategy what to keep."""
        texts = [m.get("content") or "" for m in json.loads(EXAMPLE.read_text())]
        marker = "Rate limiter used by the public API gateway"
        args = (str(EXAMPLE), "--budget", "45%", "-s", "relevant(2)")
        by_default, _ = fit_json(*args)
        asked, report = fit_json(*args, "--query", marker)
        kept = [m.get("content") or "" for m in asked]
        assert any(marker in t for t in kept)
        assert asked != by_default
        assert report["tokens_after"] <= report["budget"]
        assert all(t in texts for t in kept)

    @pytest.mark.parametrize(
        ("args", "label", "exact"),
        [
            (["-t", "heuristic"], "heuristic, APPROXIMATE", False),
            (["-m", "gpt-4", "-t", "cl100k_base"], "cl100k_base, exact", True),
            (["-m", "claude-sonnet-4-5"], "(approximate for claude-sonnet-4-5)", False),
        ],
    )
    def test_tokenizer_label(self, args: list[str], label: str, exact: bool) -> None:
        """The report labels counts exact or APPROXIMATE, as inspect does."""
        _, _, err = run("fit", str(EXAMPLE), *args)
        header = err.splitlines()[1]
        assert label in header
        assert ("APPROXIMATE" in header) is not exact
        _, report = fit_json(str(EXAMPLE), *args)
        assert report["exact"] is exact

    def test_unknown_model_is_refused_without_a_budget(self) -> None:
        """Without --budget the window matters: an unknown model is exit 2."""
        code, out, err = run("fit", str(EXAMPLE), "-m", "gtp-4o")
        assert code == 2
        assert out == ""
        assert "unknown model 'gtp-4o' (did you mean gpt-4o" in err
        assert "--budget" in err

    def test_unknown_model_warns(self) -> None:
        """With a budget, an unknown model warns on stderr and still fits."""
        code, _, err = run("fit", str(EXAMPLE), "-m", "my-own-llm", "--budget", "90%")
        assert code == 0
        assert "warning: unknown model 'my-own-llm'" in err
        assert "model: my-own-llm (window 8,192)" in err

    def test_unwritable_output(self, tmp_path: Path) -> None:
        """An output path that cannot be written is a one-line error."""
        target = tmp_path / "missing" / "out.json"
        code, _, err = run("fit", str(EXAMPLE), "-o", str(target))
        assert code == 1
        assert err.startswith(f"Error: cannot write {target}")


class TestFitConversations:
    def test_many_need_a_choice(self, tmp_path: Path) -> None:
        """A multi-conversation file needs -c; the error gives the range."""
        path = tau_file(tmp_path)
        code, out, err = run("fit", str(path))
        assert code == 2
        assert out == ""
        assert "holds 3 conversations" in err
        assert "--conversation N (0 to 2)" in err

    def test_choice(self, tmp_path: Path) -> None:
        """-c N fits conversation N."""
        data, report = fit_json(str(tau_file(tmp_path)), "-c", "1", "--budget", "80%")
        assert report["title"].startswith("trajectory 1")
        texts = [m.text for m in read_back(data, "openai")]
        assert texts[1].startswith("question 1")  # the task is kept ...
        assert not any(t.startswith("answer") for t in texts)  # ... newer units go
        assert texts[-1] == "thanks"

    @pytest.mark.parametrize("k", ["3", "-1"])
    def test_choice_out_of_range(self, tmp_path: Path, k: str) -> None:
        """-c outside the file's range names the range."""
        code, _, err = run("fit", str(tau_file(tmp_path)), "-c", k)
        assert code == 2
        assert "choose 0 to 2" in err


class TestFitBudgetError:
    def test_pinned_content_exceeds_the_budget(self, tmp_path: Path) -> None:
        """Pinned content over the budget: one `Error: cannot fit` line, no output."""
        target = tmp_path / "out.json"
        code, out, err = run("fit", str(EXAMPLE), "--budget", "50", "-o", str(target))
        assert code == 1
        assert out == ""
        lines = err.strip().splitlines()
        assert len(lines) == 1
        assert lines[0].startswith("Error: cannot fit ")
        assert "system message #0 (system)" in lines[0]
        assert "(final message)" in lines[0]
        assert not target.exists()


class TestFitReport:
    def test_human_report(self) -> None:
        """The report has the header, the changes, and totals adding up."""
        _, _, err = run("fit", str(EXAMPLE), "-m", "gpt-4o", "--budget", "40%")
        lines = err.splitlines()
        assert lines[1].endswith("tokens: o200k_base, exact")
        assert lines[2] == "budget    1,176 tokens (40% of the conversation's 2,941)"
        assert lines[3].startswith("tokens    2,941 → ")
        assert lines[3].endswith(" / 1,176 (0.9% of the window)")
        # Collapsing a run of cleared exchanges made room: nothing is dropped.
        assert lines[4] == "messages  27 → 15"
        assert lines[5] == (
            "stages    CompactLossless, Deduplicate, StaleReads, TruncateToolResults, "
            "TruncateToolInputs, ClearToolResults"
        )
        assert "changes" in lines
        row = next(ln for ln in lines if ln.lstrip().startswith("truncated  #3"))
        assert row.split()[-3:] == ["554", "472", "TruncateToolResults"]
        all_row = next(ln for ln in lines if ln.lstrip().startswith("all "))
        _, report = fit_json(str(EXAMPLE), "--budget", "40%")
        assert all_row.split()[1:] == [
            str(len(report["changes"])),
            f"{report['saved']:,}",
        ]

    def test_json_report(self) -> None:
        """--json gives every field, and its figures agree with each other."""
        data, report = fit_json(str(EXAMPLE), "--budget", "40%")
        assert report["messages_before"] == 27
        assert report["messages_after"] == len(data)
        assert report["fits"] is True
        assert report["saved"] == report["tokens_before"] - report["tokens_after"]
        assert sum(c["saved"] for c in report["changes"]) == report["saved"]
        totals = report["totals"]
        assert sum(t["changes"] for t in totals.values()) == len(report["changes"])
        assert set(totals) == {
            "compacted",
            "stale",
            "truncated",
            "cleared",
            "collapsed",
        }
        change = report["changes"][0]
        assert set(change) == {
            "kind",
            "stage",
            "index",
            "ids",
            "units",
            "what",
            "tokens_before",
            "tokens_after",
            "saved",
        }
        assert (change["kind"], change["index"], change["stage"]) == (
            "compacted",
            2,
            "CompactLossless",
        )

    def test_json_report_with_output_goes_to_stdout(self, tmp_path: Path) -> None:
        """With -o, --json prints the report to stdout."""
        target = tmp_path / "out.json"
        code, out, err = run("fit", str(EXAMPLE), "-o", str(target), "--json")
        assert code == 0
        assert err == ""
        assert json.loads(out)["output"] == str(target)

    def test_long_lists_show_the_largest(self) -> None:
        """Over 20 changes, the 20 largest are listed; totals count them all."""
        spec = (
            "lossless,truncate(keep_recent=0,max_tokens=5),clear(keep_recent=0),"
            "drop-oldest"
        )
        _, _, err = run("fit", str(EXAMPLE), "--budget", "100", "--strategy", spec)
        assert (
            "changes (the 20 largest of 26, in the order made; --json lists all)"
            in (err)
        )
        section = err.split("in the order made; --json lists all)\n")[1]
        rows = section.split("\n\n")[0].splitlines()[1:]
        assert len(rows) == 20
        assert (
            "truncated  #10 " not in section.split("totals")[0]
        )  # a small one left out
        assert "  all             26" in err


class TestFitSharedData:
    def test_claude_code_session_to_a_quarter(self, shared_data: Path) -> None:
        """A real Claude Code session fits 25 % of its tokens, valid for Anthropic."""
        session = sorted((shared_data / "claude_code_sessions").glob("*.jsonl"))[0]
        data, report = fit_json(str(session), "--budget", "25%")
        assert report["provider"] == "anthropic"
        assert report["exact"] is False
        assert report["model"].startswith("claude")
        assert report["budget"] == report["tokens_before"] // 4
        assert report["tokens_after"] <= report["budget"]
        assert report["messages_after"] < report["messages_before"]
        assert {"truncated", "cleared"} <= set(report["totals"])
        messages = read_back(data, "anthropic")
        final = read_transcript(session).messages[-1]
        assert messages[-1].parts == final.parts  # the final message is kept

    def test_tau_bench_conversation(self, shared_data: Path) -> None:
        """A tau-bench trajectory fits half its tokens and reads back valid."""
        path = shared_data / "tau-bench_gpt-4o-airline.json"
        data, report = fit_json(str(path), "-c", "3", "--budget", "50%")
        assert report["title"].startswith("trajectory 3")
        messages = read_back(data, "openai")
        counter = TokenCounter(get_tokenizer("gpt-4o"), "openai")
        assert counter.messages(messages) == report["tokens_after"]
        assert report["tokens_after"] <= report["budget"]
        assert messages[0].role == "system"


class TestTokenizerOverrideLabel:
    """--tokenizer naming an encoding that is not the model's is APPROXIMATE."""

    def test_fit_json_and_text(self, tmp_path: Path) -> None:
        """fit labels o200k_base for Claude approximate, saying why, in JSON and
        in text; the model's own encoding stays exact."""
        args = (str(EXAMPLE), "-m", "claude-sonnet-4-5", "-t", "o200k_base")
        _, report = fit_json(*args)
        assert report["exact"] is False
        assert report["tokenizer"] == "o200k_base (not claude-sonnet-4-5's tokenizer)"
        code, out, _ = run("fit", *args, "-o", str(tmp_path / "out.json"))
        assert code == 0
        assert (
            "tokens: o200k_base (not claude-sonnet-4-5's tokenizer), APPROXIMATE"
        ) in out
        _, report = fit_json(str(EXAMPLE), "-m", "gpt-4", "-t", "cl100k_base")
        assert (report["tokenizer"], report["exact"]) == ("cl100k_base", True)

    def test_inspect_and_report(self, tmp_path: Path) -> None:
        """inspect and report label it alike (they share the inspection)."""
        args = (str(EXAMPLE), "-m", "gpt-4", "-t", "o200k_base")
        code, out, _ = run("inspect", *args, "--json")
        assert code == 0
        doc = json.loads(out)
        assert (doc["tokenizer"], doc["exact"]) == (
            "o200k_base (not gpt-4's tokenizer: cl100k_base)",
            False,
        )
        code, out, _ = run("inspect", *args)
        assert "o200k_base (not gpt-4's tokenizer: cl100k_base), APPROXIMATE" in out
        page = tmp_path / "r.html"
        code, _, _ = run("report", *args, "-o", str(page))
        assert code == 0
        assert "tokens (approximate)" in page.read_text()


class TestWarningsUnderJson:
    """fit --json: warnings in the document's ``warnings``, no text lines."""

    def test_stderr_is_one_document(self) -> None:
        """Without -o the report is on stderr: it parses (no 'warning:' line
        before it), and its warnings hold the budget over the window."""
        code, out, err = run(
            "fit", str(EXAMPLE), "-m", "gpt-4o", "--budget", "1M", "--json"
        )
        assert code == 0
        assert json.loads(out)[0]["role"] == "system"
        report = json.loads(err)
        assert report["warnings"] == [
            "the budget (1,000,000 tokens) is over gpt-4o's window (128,000): "
            "the provider refuses a request larger than its window"
        ]

    def test_library_warnings_too(self, tmp_path: Path) -> None:
        """The library's warnings (an unknown model) go there as well, with -o
        and without; the text report still prints them as lines."""
        args = ("fit", str(EXAMPLE), "-m", "mystery-llm", "--budget", "2000")
        code, _, err = run(*args, "--json")
        assert code == 0
        (warning,) = json.loads(err)["warnings"]
        assert warning.startswith("unknown model 'mystery-llm'")
        code, out, err = run(*args, "--json", "-o", str(tmp_path / "out.json"))
        assert (code, err) == (0, "")
        assert json.loads(out)["warnings"] == [warning]
        code, _, err = run(*args)
        assert f"warning: {warning}" in err

    def test_warnings_before_an_error_are_printed(self) -> None:
        """A run that fails after a warning prints it on stderr: the error's
        document has no room for it."""
        code, out, err = run(
            "fit",
            str(EXAMPLE),
            "-m",
            "gpt-4o",
            "--budget",
            "1M",
            "--reserve",
            "2M",
            "--json",
        )
        assert code == 2
        assert json.loads(out)["error"]["type"] == "usage"
        assert err == ""  # the reserve is refused before the budget is weighed
        code, out, err = run(
            "fit", str(EXAMPLE), "-m", "mystery-llm", "--budget", "20", "--json"
        )
        assert code == 1
        assert "cannot fit" in json.loads(out)["error"]["message"]
        assert err.startswith("warning: unknown model 'mystery-llm'")


class TestWrittenMessageCounts:
    """The messages of the file written are counted, where the shape differs."""

    def test_anthropic_merges_neighbours(self, tmp_path: Path) -> None:
        """--to anthropic merges messages of one role: messages_written is the
        body's messages, and the text line says it beside the conversation's."""
        out = tmp_path / "a.json"
        args = (
            "fit",
            str(EXAMPLE),
            "--budget",
            "40%",
            "--to",
            "anthropic",
            "-o",
            str(out),
        )
        code, stdout, _ = run(*args, "--json")
        assert code == 0
        report = json.loads(stdout)
        written = len(json.loads(out.read_text())["messages"])
        assert report["messages_written"] == written
        assert report["messages_written"] < report["messages_after"]
        code, stdout, _ = run(*args)
        assert (
            f"messages  {report['messages_before']} → {report['messages_after']} "
            f"({written} messages as written in the anthropic shape)"
        ) in stdout

    def test_openai_splits_tool_results(self, tmp_path: Path) -> None:
        """An Anthropic turn of two tool results is two OpenAI tool messages."""
        body = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 100,
            "messages": [
                {"role": "user", "content": "Read both files."},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": f"t{i}", "name": "read", "input": {}}
                        for i in (1, 2)
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": f"t{i}", "content": "x"}
                        for i in (1, 2)
                    ],
                },
                {"role": "assistant", "content": "Both read."},
            ],
        }
        source = tmp_path / "request.json"
        source.write_text(json.dumps(body))
        data, report = fit_json(str(source), "--to", "openai")
        assert (report["messages_after"], report["messages_written"]) == (4, 5)
        assert len(data) == 5
        code, _, err = run("fit", str(source), "--to", "openai")
        assert code == 0
        assert "messages  4 → 4 (5 messages as written in the openai shape)" in err

    def test_same_count_says_nothing_more(self) -> None:
        """Where the shape keeps every message, the line is as it was."""
        code, _, err = run("fit", str(EXAMPLE), "--budget", "40%")
        assert code == 0
        assert "\nmessages  27 → 15\n" in err


def test_a_written_body_names_its_model(tmp_path: Path, shared_data: Path) -> None:
    """An Anthropic body ``fit`` writes names the model; fitting it again keeps it.

    Without the model the file read back as a request for gpt-4o (its window,
    its tokenizer), and a body of plain text messages as an OpenAI one.
    """
    session = (
        shared_data
        / "claude_code_sessions"
        / ("258c7280-ae70-4798-800f-63464d01a85d.jsonl")
    )
    out = tmp_path / "fitted.json"
    code, doc, err = run(
        "fit", str(session), "--budget", "50%", "-o", str(out), "--json"
    )
    assert code == 0, err
    first = json.loads(doc)
    body = json.loads(out.read_text())
    assert body["model"] == first["model"]
    again = tmp_path / "again.json"
    code, doc, err = run("fit", str(out), "-o", str(again), "--json")
    assert code == 0, err
    second = json.loads(doc)
    assert (second["model"], second["provider"]) == (first["model"], "anthropic")
    assert second["context_window"] == first["context_window"]
