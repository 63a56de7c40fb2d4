from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from contextwindow.cli import main
from contextwindow.tokens import count_messages

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "agent_session.json"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def shared_files(data: Path) -> list[Path]:
    files = [data / "locomo10.json", data / "tau-bench_gpt-4o-airline.json"]
    files += sorted((data / "claude_code_sessions").rglob("*.jsonl"))
    return files


class TestInspect:
    def test_example(self) -> None:
        """The shipped example inspects with a role table and a usage line."""
        code, out, _ = run("inspect", str(EXAMPLE), "--model", "gpt-4o")
        assert code == 0, out
        assert "by role" in out
        assert "by tool" in out
        assert "o200k_base, exact" in out
        assert "/ 128,000 tokens" in out

    def test_example_json(self) -> None:
        """--json gives machine-readable counts that add up."""
        code, out, _ = run("inspect", str(EXAMPLE), "--json")
        assert code == 0
        data = json.loads(out)
        assert data["messages"] == 27
        assert data["incomplete_units"] == 0
        by_role = sum(r["tokens"] for r in data["by_role"])
        assert 0 < by_role < data["tokens"]  # the rest is reply priming
        assert data["tokens"] - by_role == 3
        assert {t["name"] for t in data["by_tool"]} >= {"run", "read_file"}

    def test_every_shared_file(self, shared_data: Path) -> None:
        """Every file of the shared data inspects with exit code 0."""
        for path in shared_files(shared_data):
            code, out, err = run("inspect", str(path))
            assert code == 0, f"{path}: {out}{err}"
            assert "usage" in out or "largest conversations" in out

    def test_overview_sums_tools(self, shared_data: Path) -> None:
        """A many-conversation file's overview totals calls per tool (1,164)."""
        path = shared_data / "tau-bench_gpt-4o-airline.json"
        code, out, _ = run("inspect", str(path))
        assert code == 0
        section = out.split("by tool (all conversations)\n")[1].split("\n\n")[0]
        rows = section.splitlines()[1:]
        calls = {r.split()[0]: int(r.split()[1].replace(",", "")) for r in rows}
        assert sum(calls.values()) == 1164
        assert calls["get_reservation_details"] == 377

    def test_one_of_many(self, shared_data: Path) -> None:
        """--conversation picks one trajectory of a multi-conversation file."""
        path = shared_data / "tau-bench_gpt-4o-airline.json"
        code, out, _ = run("inspect", str(path), "-c", "3")
        assert code == 0
        assert "by tool" in out
        code, _, err = run("inspect", str(path), "-c", "999")
        assert code != 0
        assert "--conversation" in err

    def test_claude_code_is_labelled_approximate(self, shared_data: Path) -> None:
        """Counts for a Claude model say they are approximate."""
        session = next((shared_data / "claude_code_sessions").glob("*.jsonl"))
        code, out, _ = run("inspect", str(session))
        assert code == 0
        assert "APPROXIMATE" in out
        assert "compactions recorded" in out

    @pytest.mark.parametrize(
        ("content", "where"),
        [
            ('[{"role": "user", "content": "hi"}, {"role": "robot"}]', "[1]"),
            (
                '[{"role": "assistant", "content": null, "tool_calls": [{"id": "c",'
                ' "type": "function", "function": {"name": "f", "arguments": "{x"}}]}]',
                "arguments",
            ),
            ('{"role": "user", "content": "unterminated', "bad.json:1: not valid JSON"),
        ],
    )
    def test_malformed_file(self, tmp_path: Path, content: str, where: str) -> None:
        """A malformed file exits non-zero with a one-line error naming the place."""
        bad = tmp_path / "bad.json"
        bad.write_text(content)
        code, _out, err = run("inspect", str(bad))
        assert code != 0
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1, err
        assert lines[0].startswith("Error: ")
        assert where in lines[0]

    def test_missing_file(self, tmp_path: Path) -> None:
        """A missing file is a one-line error, not a traceback."""
        code, _, err = run("inspect", str(tmp_path / "nope.json"))
        assert code != 0
        assert "nope.json" in err

    def test_unknown_model_is_refused(self) -> None:
        """An unknown --model is a usage error (exit 2) with suggestions."""
        code, out, err = run("inspect", str(EXAMPLE), "--model", "gpt4o")
        assert code == 2
        assert out == ""
        assert "unknown model 'gpt4o' (did you mean gpt-4o" in err
        assert "--budget" not in err  # inspect takes none

    def test_incomplete_units_are_warned(self, tmp_path: Path) -> None:
        """A tool result answering no call is flagged above the tables."""
        path = tmp_path / "orphan.json"
        path.write_text(
            json.dumps(
                [
                    {"role": "tool", "tool_call_id": "x", "content": "lost"},
                    {"role": "user", "content": "hi"},
                ]
            )
        )
        code, out, _ = run("inspect", str(path))
        assert code == 0
        assert "warning: 1 unit a provider would reject" in out

    def test_total_agrees_with_count_messages(self, tmp_path: Path) -> None:
        """A body with a system message and tools totals what count_messages says."""
        tool = {
            "type": "function",
            "function": {"name": "ls", "description": "List files."},
        }
        body = {
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Oslo?"},
            ],
            "tools": [tool],
        }
        path = tmp_path / "req.json"
        path.write_text(json.dumps(body))
        _, out, _ = run("inspect", str(path), "--json")
        assert json.loads(out)["tokens"] == count_messages(body, "gpt-4o")
        assert count_messages(body, "gpt-4o") == count_messages(
            body["messages"], "gpt-4o", tools=[tool]
        )

    def test_tool_schemas_row(self, tmp_path: Path) -> None:
        """Tool schemas of a request body get their own row in the role table."""
        tool = {
            "type": "function",
            "function": {
                "name": "weather",
                "description": "Weather for a city.",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                },
            },
        }
        body = {
            "model": "gpt-4o",
            "messages": [{"role": "user", "content": "Oslo?"}],
            "tools": [tool],
        }
        path = tmp_path / "req.json"
        path.write_text(json.dumps(body))
        _, out, _ = run("inspect", str(path), "--json")
        schema = json.loads(out)["tool_schema_tokens"]
        assert schema > 0
        _, out, _ = run("inspect", str(path))
        row = next(ln for ln in out.splitlines() if "(tool schemas)" in ln)
        assert row.split()[-1] == str(schema)
        _, out, _ = run("inspect", str(EXAMPLE))
        assert "(tool schemas)" not in out

    def test_top_zero_hides_largest(self) -> None:
        """--top 0 leaves out the largest-messages table but keeps the usage line."""
        _, out, _ = run("inspect", str(EXAMPLE), "--top", "0")
        assert "largest messages" not in out
        assert out.rstrip().splitlines()[-1].startswith("usage")

    def test_repeated_warning_printed_once(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The same warning for every conversation of a file is printed once."""
        # An unknown --model is refused now; let one through to warn per run.
        monkeypatch.setattr(
            "contextwindow.cli._inspect.known_model", lambda *a, **k: None
        )
        runs = [
            {"task_id": k, "traj": [{"role": "user", "content": "hi"}]}
            for k in range(3)
        ]
        path = tmp_path / "tau.json"
        path.write_text(json.dumps(runs))
        code, out, err = run("inspect", str(path), "-m", "my-own-llm")
        assert code == 0
        assert "3 conversations" in out
        lines = [ln for ln in err.splitlines() if ln.startswith("warning:")]
        assert len(lines) == 1
        assert "my-own-llm" in lines[0]

    @pytest.mark.parametrize(
        ("spec", "label"),
        [
            ("heuristic", "heuristic, APPROXIMATE"),
            # Not gpt-4o's (the file's model) own encoding: approximate.
            (
                "cl100k_base",
                "cl100k_base (not gpt-4o's tokenizer: o200k_base), APPROXIMATE",
            ),
        ],
    )
    def test_tokenizer_option(self, spec: str, label: str) -> None:
        """--tokenizer counts with the named tokenizer and labels the counts."""
        _, out, _ = run("inspect", str(EXAMPLE), "--tokenizer", spec)
        assert f"tokens: {label}" in out

    def test_tokenizer_json(self, tmp_path: Path) -> None:
        """--tokenizer PATH counts with a Hugging Face tokenizer.json, exactly."""
        from tokenizers import Tokenizer, models, pre_tokenizers

        tok = Tokenizer(models.WordLevel({"[UNK]": 0, "hi": 1}, unk_token="[UNK]"))
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        folder = tmp_path / "tiny-words"
        folder.mkdir()
        tok.save(str(folder / "tokenizer.json"))
        chat = tmp_path / "chat.json"
        chat.write_text(json.dumps([{"role": "user", "content": "hi there you"}]))
        spec = str(folder / "tokenizer.json")
        code, out, _ = run("inspect", str(chat), "-t", spec, "--json")
        assert code == 0
        data = json.loads(out)
        assert (data["tokenizer"], data["exact"]) == ("tiny-words", True)
        # 3 framing + "user" + three words + 3 reply priming: one token a word.
        assert data["tokens"] == 3 + 1 + 3 + 3

    def test_unknown_tokenizer(self) -> None:
        """An unknown --tokenizer value exits non-zero listing the choices."""
        code, _, err = run("inspect", str(EXAMPLE), "--tokenizer", "gpt2")
        assert code != 0
        assert "--tokenizer" in err
        assert "o200k_base" in err
        assert "heuristic" in err


class TestModels:
    def test_gpt_4o(self) -> None:
        """`models gpt-4o` shows the 128,000 window."""
        code, out, _ = run("models", "gpt-4o")
        assert code == 0
        first = out.splitlines()[1]
        assert first.split()[0] == "gpt-4o"
        assert "128,000" in first

    def test_dated_variant_resolves(self) -> None:
        """A dated Claude name resolves to its entry."""
        code, out, _ = run("models", "claude-sonnet-4-5-20250929")
        assert code == 0
        assert "200,000" in out

    def test_json(self) -> None:
        """--json lists entries with their limits."""
        _code, out, _ = run("models", "gpt-4o", "--json")
        rows = json.loads(out)["models"]
        assert rows[0]["name"] == "gpt-4o"
        assert rows[0]["context_window"] == 128000

    def test_no_match(self) -> None:
        """A pattern matching nothing exits non-zero."""
        code, _, err = run("models", "zzz-no-such-model-zzz")
        assert code != 0
        assert "zzz-no-such-model-zzz" in err

    def test_no_match_suggests(self) -> None:
        """A misspelt model name gets the registry's suggestions, exit 2."""
        code, _, err = run("models", "gpt4o")
        assert code == 2
        assert "no model matches 'gpt4o' (did you mean gpt-4o" in err

    def test_other_spelling_shows_resolution(self) -> None:
        """A name spelled otherwise than its entry prints `asked -> entry` first."""
        code, out, _ = run("models", "openai/gpt-4o")
        assert code == 0
        lines = out.splitlines()
        assert lines[0] == "openai/gpt-4o -> gpt-4o"
        assert lines[2].split()[0] == "gpt-4o"

    def test_family_word_is_a_search(self) -> None:
        """A bare family word lists matches without claiming to name one model."""
        code, out, _ = run("models", "claude")
        assert code == 0
        assert "->" not in out
        rows = out.splitlines()[1:]
        names = [ln.split()[0] for ln in rows if not ln.lstrip().startswith("…")]
        assert names
        assert all("claude" in n for n in names)
        assert names[0] != "anthropic.claude-v1"  # what "claude" would resolve to

    @pytest.mark.parametrize(
        "name", ["claude-opus-4", "codestral-2501", "claude-3-5-sonnet-latest"]
    )
    def test_first_row_is_what_the_library_gives(self, name: str) -> None:
        """A model's name inside longer names still shows get_model(name) first."""
        from contextwindow.models import get_model, registry

        _code, out, _ = run("models", name, "--json")
        doc = json.loads(out)
        want = get_model(name)
        first = doc["models"][0]
        assert doc["resolved"] == registry.resolve(name)
        assert (
            first["name"],
            first["provider"],
            first["context_window"],
            first["max_output_tokens"],
        ) == (
            want.name,
            want.provider,
            want.context_window,
            want.max_output_tokens,
        )
        code, text, _ = run("models", name)
        assert code == 0
        assert text.splitlines()[0] == f"{name} -> {registry.resolve(name)}"
        assert text.splitlines()[2].split()[:2] == [want.name, want.provider]


class TestModuleEntry:
    def test_python_dash_m(self) -> None:
        """`python -m contextwindow` runs the same command line."""
        import subprocess
        import sys

        done = subprocess.run(
            [sys.executable, "-m", "contextwindow", "models", "gpt-4o", "--json"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert json.loads(done.stdout)["models"][0]["context_window"] == 128000


def test_proxy_bad_strategy_is_a_usage_error() -> None:
    """`proxy --strategy` is checked before anything is served, as `fit`'s is:
    a usage error (exit 2) naming the option and the known names."""
    code, out, err = run("proxy", "--strategy", "bogus")
    assert (code, out) == (2, "")
    assert "Invalid value for --strategy: strategy 'bogus': unknown name" in err


def test_a_narrow_terminal_cuts_only_the_flex_column() -> None:
    """On 80 columns a table's numbers and names stay whole: only its flex
    column (the preview, what was changed) is cut."""
    import io

    from rich.console import Console

    from contextwindow.cli._term import Table, _rich

    rows = tuple(
        (
            "deduplicated",
            f"#{i}",
            "tool result: TaskOutput " * 3,
            "24,980",
            "21,073",
            "TruncateToolResults",
        )
        for i in (10, 117)
    )
    table = Table(("kind", "message", "what", "before", "after", "stage"), rows, flex=2)
    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(_rich(table, 80))
    lines = out.getvalue().splitlines()
    assert max(map(len, lines)) <= 80
    body = "\n".join(lines)
    for whole in ("deduplicated", "#117", "24,980", "21,073", "TruncateToolResults"):
        assert whole in body
    assert "tool result: TaskOutput tool result: TaskOutput" not in body  # cut


def test_proxy_port_taken_is_a_usage_error() -> None:
    """A port something else listens on is named before anything is announced."""
    import socket

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = str(taken.getsockname()[1])
        code, out, err = run("proxy", "--port", port, "--store", "none")
    assert (code, out) == (2, "")
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in err
    assert "contextwindow proxy on" not in err


class TestStreamSources:
    """A FILE that is a pipe or a device is read once, as a file is."""

    CHAT = json.dumps(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    )

    @staticmethod
    def _inspect(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "contextwindow", "inspect", *args, "--json"],
            capture_output=True,
            text=True,
            timeout=120,
            **kw,
        )

    def test_dev_stdin(self) -> None:
        """/dev/stdin names standard input (a pipe here), not 'no such file'."""
        done = self._inspect("/dev/stdin", input=self.CHAT)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["messages"] == 2

    def test_a_named_pipe(self, tmp_path: Path) -> None:
        """A FIFO is read to its end, once."""
        fifo = tmp_path / "chat.json"
        os.mkfifo(fifo)
        writer = threading.Thread(
            target=lambda: fifo.write_text(self.CHAT), daemon=True
        )
        writer.start()
        done = self._inspect(str(fifo))
        writer.join(timeout=10)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["messages"] == 2

    @pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
    def test_process_substitution(self, tmp_path: Path) -> None:
        """bash's <(cmd) (a /dev/fd/N pipe) is read."""
        chat = tmp_path / "chat.json"
        chat.write_text(self.CHAT)
        python, path = shlex.quote(sys.executable), shlex.quote(str(chat))
        line = f"{python} -m contextwindow inspect <(cat {path}) --json"
        done = subprocess.run(
            ["bash", "-c", line], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["messages"] == 2

    def test_a_directory_is_still_refused(self, tmp_path: Path) -> None:
        """A directory is no source: a usage error saying so."""
        code, _, err = run("inspect", str(tmp_path))
        assert code == 2
        assert "a directory, not a file" in err


def test_nan_arguments_are_an_error_not_invalid_json(tmp_path: Path) -> None:
    """A tool call's NaN arguments are refused, named; no output with NaN is written."""
    chat = tmp_path / "nan.json"
    chat.write_text(
        json.dumps(
            [
                {"role": "user", "content": "q"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "f", "arguments": '{"a": NaN}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "r"},
            ]
        )
    )
    out = tmp_path / "out.json"
    code, _, err = run(
        "fit",
        str(chat),
        "--model",
        "claude-sonnet-4",
        "--to",
        "anthropic",
        "-o",
        str(out),
    )
    assert code == 1
    assert (
        "[1].tool_calls[0].function.arguments: not valid JSON: NaN is not JSON" in err
    )
    assert not out.exists()


class TestProgressLabel:
    def test_markup_in_a_label_is_plain_text(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A file name or title holding "[/x]" is shown as it is on a terminal
        (rich read it as a closing tag and raised in the timer's thread)."""
        import io

        from contextwindow.cli import _term

        class Terminal(io.StringIO):
            def isatty(self) -> bool:
                return True

        err = Terminal()
        monkeypatch.setattr(sys, "stderr", err)
        monkeypatch.setattr(_term, "DELAY", 3600.0)  # its timer never fires here
        w = _term.Working("reading t[/x].json")
        try:
            w._start()  # what the timer runs: here, in this thread
        finally:
            w.close()
        assert "reading t[/x].json" in err.getvalue()


class TestProxyAddress:
    """The announced address is one a client can use."""

    @staticmethod
    def served(monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[str, list[Any]]:
        """Run proxy with serve() replaced: its stderr, and serve's arguments."""
        import contextwindow.proxy

        calls: list[Any] = []
        monkeypatch.setattr(
            contextwindow.proxy, "serve", lambda *a, **kw: calls.append((a, kw))
        )
        code, out, err = run("proxy", "--store", "none", *args)
        assert (code, out) == (0, ""), err
        return err, calls

    def test_port_zero_announces_the_port_served(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """--port 0: the port the system chose is served and announced, not 0."""
        err, calls = self.served(monkeypatch, "--port", "0")
        (_config, host, port), _ = calls[0]
        assert host == "127.0.0.1"
        assert 0 < port <= 65535
        assert err.splitlines()[0] == f"contextwindow proxy on http://127.0.0.1:{port}"

    def test_ipv6_in_brackets(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """An IPv6 host is written in brackets, as a URL needs it."""
        import socket

        try:
            with socket.create_server(("::1", 0), family=socket.AF_INET6):
                pass
        except OSError:
            pytest.skip("no IPv6 loopback here")
        err, calls = self.served(monkeypatch, "--host", "::1", "--port", "0")
        port = calls[0][0][2]
        assert err.splitlines()[0] == f"contextwindow proxy on http://[::1]:{port}"

    @pytest.mark.parametrize(
        ("option", "value", "shown"),
        [
            ("--upstream-openai", "notaurl", "the value given is not"),
            ("--upstream-openai", "ftp://files.example", "'ftp://...' is not"),
            ("--upstream-anthropic", "https://", "'https://' is not"),
            ("--upstream-anthropic", "http://h:99999", "'http://h:99999' is not"),
            (
                "--upstream-openai",
                "http//user:s3cret@h",
                "the value given is not",
            ),
        ],
    )
    def test_upstream_not_a_url_is_refused(
        self, monkeypatch: pytest.MonkeyPatch, option: str, value: str, shown: str
    ) -> None:
        """An upstream that is no http(s) URL with a host is a usage error before
        serving (each request got a 502), what is no URL not echoed."""
        import contextwindow.proxy

        monkeypatch.setattr(contextwindow.proxy, "serve", lambda *a, **kw: None)
        code, out, err = run("proxy", "--store", "none", option, value)
        assert (code, out) == (2, "")
        assert f"Invalid value for {option}: {shown} an http(s) URL" in err
        assert "s3cret" not in err
        assert "contextwindow proxy on" not in err

    def test_model_window_help_says_how_names_match(self) -> None:
        """--model-window's help says names match as the registry resolves them."""
        code, out, _ = run("proxy", "--help")
        assert code == 0
        flat = " ".join(out.split())
        assert "as the registry resolves names" in flat
        assert "provider prefix" in flat
