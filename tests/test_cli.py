from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from contextwindow.cli import main

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

    def test_unknown_model_warns(self) -> None:
        """An unknown model prints a warning and still reports."""
        code, out, err = run("inspect", str(EXAMPLE), "--model", "my-own-llm")
        assert code == 0
        assert "warning:" in err
        assert "my-own-llm" in err
        assert "usage" in out


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
        rows = json.loads(out)
        assert rows[0]["name"] == "gpt-4o"
        assert rows[0]["context_window"] == 128000

    def test_no_match(self) -> None:
        """A pattern matching nothing exits non-zero."""
        code, _, err = run("models", "zzz-no-such-model-zzz")
        assert code != 0
        assert "zzz-no-such-model-zzz" in err
