"""``--json``: every command, every shared file, one schema, the same bytes twice."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from contextwindow import read_transcript
from contextwindow.cli import main
from contextwindow.cli._json import SCHEMA_VERSION, schema
from contextwindow.store import SQLiteStore
from contextwindow.transcripts import read_transcripts

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "agent_session.json"
VALIDATOR = jsonschema.Draft202012Validator(schema())


def shared_files(data: Path) -> list[Path]:
    files = [data / "locomo10.json", data / "tau-bench_gpt-4o-airline.json"]
    files += sorted((data / "claude_code_sessions").rglob("*.jsonl"))
    return files


def run_json(*args: str, code: int | None = 0) -> tuple[str, dict[str, Any]]:
    """Run a command with --json: its stdout, parsed and checked against the schema.

    ``code``: the exit status expected (``None``: 0, or 1 with an error document).
    """
    result = CliRunner().invoke(main, [*args, "--json"])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    if code is None:
        assert result.exit_code in (0, 1), result.output
        assert (result.exit_code == 1) == ('"error": {' in result.stdout)
    else:
        assert result.exit_code == code, result.output
    doc = json.loads(result.stdout)
    VALIDATOR.validate(doc)
    assert doc["schema_version"] == SCHEMA_VERSION
    assert list(doc)[:2] == ["schema_version", "command"]
    return result.stdout, doc


def twice(*args: str, code: int | None = 0) -> dict[str, Any]:
    """Run twice: the same output both times."""
    first, doc = run_json(*args, code=code)
    second, _ = run_json(*args, code=code)
    assert first == second
    return doc


class TestSchema:
    def test_is_a_valid_schema(self) -> None:
        """The shipped file is a valid JSON Schema (2020-12)."""
        jsonschema.Draft202012Validator.check_schema(schema())

    def test_every_command_takes_json(self) -> None:
        """Each command has a --json option."""
        for name, cmd in main.commands.items():
            opts = {o for p in cmd.params for o in getattr(p, "opts", ())}
            assert "--json" in opts, name

    def test_rejects_what_is_wrong(self) -> None:
        """The schema is strict enough to fail: a missing field, a wrong version."""
        _, doc = run_json("inspect", str(EXAMPLE))
        del doc["tokens"]
        assert not VALIDATOR.is_valid(doc)
        _, doc = run_json("inspect", str(EXAMPLE))
        doc["schema_version"] = 99
        assert not VALIDATOR.is_valid(doc)


class TestEverySharedFile:
    def test_inspect(self, shared_data: Path) -> None:
        """inspect --json on every shared file: valid, and the same twice."""
        for path in shared_files(shared_data):
            doc = twice("inspect", str(path))
            assert doc["command"] == "inspect"

    def test_fit(self, shared_data: Path, tmp_path: Path) -> None:
        """fit --json on every shared file (its first conversation): ids repeat."""
        fitted = 0
        for path in shared_files(shared_data):
            # With -o the report is stdout's only content.
            out = tmp_path / "fitted.json"
            args = ["fit", str(path), "--budget", "50%", "-o", str(out)]
            if len(read_transcripts(path)) > 1:
                args += ["-c", "0"]
            doc = twice(*args, code=None)
            if "error" in doc:  # the final message alone is over half
                assert doc["error"]["message"].startswith("cannot fit")
                continue
            fitted += 1
            assert doc["tokens_after"] <= doc["budget"]
            ids = [i for c in doc["changes"] for i in c["ids"]]
            assert ids  # half the budget: something changed, with ids
        assert fitted >= len(shared_files(shared_data)) // 2

    def test_report(self, shared_data: Path, tmp_path: Path) -> None:
        """report --json on every shared file (its first conversation)."""
        for path in shared_files(shared_data):
            out = tmp_path / "r.html"
            args = ["report", str(path), "-o", str(out)]
            if len(read_transcripts(path)) > 1:
                args += ["-c", "0"]
            _, doc = run_json(*args)
            assert doc["bytes"] == out.stat().st_size


class TestOtherCommands:
    def test_models(self) -> None:
        """models --json: the entries, the pattern and what it resolved to."""
        doc = twice("models", "gpt-4o")
        assert doc["resolved"] == "gpt-4o"
        assert doc["models"][0]["context_window"] == 128000

    def test_export(self, tmp_path: Path) -> None:
        """export --json: a listing, one conversation inline, or what -o wrote."""
        db = tmp_path / "chats.db"
        log = list(read_transcript(EXAMPLE).messages)
        with SQLiteStore(db) as store:
            store.append("s1", log, expected_version=0)
        url = f"sqlite:///{db}"
        listing = twice("export", url)
        assert [c["id"] for c in listing["conversations"]] == ["s1"]
        one = twice("export", f"{url}#s1")
        assert one["messages"] == len(log)
        assert len(one["body"]) == len(log)
        target = tmp_path / "out.json"
        _, written = run_json("export", f"{url}#s1", "-o", str(target))
        assert "body" not in written
        assert len(json.loads(target.read_text())) == len(log)

    def test_report_of_a_fit(self, tmp_path: Path) -> None:
        """report --json says what the page shows."""
        out = tmp_path / "r.html"
        _, doc = run_json("report", str(EXAMPLE), "--budget", "50%", "-o", str(out))
        assert doc["shows"] == "fit"


class TestErrors:
    @pytest.mark.parametrize(
        ("args", "code", "kind", "names"),
        [
            (["fit", str(EXAMPLE), "--budget", "lots"], 2, "usage", "lots"),
            (["inspect", "missing.json"], 2, "usage", "missing.json"),
            (["models", "zzz-none-zzz"], 2, "usage", "zzz-none-zzz"),
            (["export", str(EXAMPLE)], 2, "usage", "not a store URL"),
            (["report", str(EXAMPLE), "--strategy", "nope"], 2, "usage", "nope"),
            (["inspect", "sqlite:///nowhere/x.db#a"], 1, "error", "x.db"),
        ],
    )
    def test_error_is_json(
        self, args: list[str], code: int, kind: str, names: str
    ) -> None:
        """Under --json an error is one JSON document on stdout, same exit code."""
        _, doc = run_json(*args, code=code)
        assert doc["error"]["type"] == kind
        assert doc["error"]["exit_code"] == code
        assert names in doc["error"]["message"]
        assert "\n" not in doc["error"]["message"]


class TestEveryErrorDocument:
    """Every command's error document validates, proxy's and no command's too."""

    @pytest.mark.parametrize(
        ("args", "command"),
        [
            (["inspect", "missing.json"], "inspect"),
            (["fit", str(EXAMPLE), "--budget", "lots"], "fit"),
            (["export", "nope"], "export"),
            (["models", "--limit", "0"], "models"),
            (["report", str(EXAMPLE), "--strategy", "nope"], "report"),
            (["proxy", "--port", "99999"], "proxy"),
            (["proxy", "--strategy", "bogus"], "proxy"),
            (["nosuchcmd"], None),
            ([], None),
        ],
    )
    def test_validates(self, args: list[str], command: str | None) -> None:
        """A usage error under --json names its command (null: none named) and
        validates against the shipped schema."""
        _, doc = run_json(*args, code=2)
        assert doc["command"] == command
        assert doc["error"]["type"] == "usage"

    def test_a_bug_is_a_document_too(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """An unexpected exception under --json is an error document (exit 1),
        its traceback on stderr; without --json it propagates as Python's."""
        import contextwindow.cli._inspect as inspect_module

        def broken(*args: object, **kw: object) -> None:
            raise RuntimeError("something\nbroke")

        monkeypatch.setattr(inspect_module, "inspect_transcript", broken)
        result = CliRunner().invoke(main, ["inspect", str(EXAMPLE), "--json"])
        assert result.exit_code == 1
        doc = json.loads(result.stdout)
        VALIDATOR.validate(doc)
        assert doc["command"] == "inspect"
        assert doc["error"]["type"] == "error"
        assert "RuntimeError: something broke" in doc["error"]["message"]
        assert "Traceback (most recent call last)" in result.stderr
        result = CliRunner().invoke(main, ["inspect", str(EXAMPLE)])
        assert isinstance(result.exception, RuntimeError)

    def test_empty_conversation_report(self, tmp_path: Path) -> None:
        """report --json on [] prints its document (it crashed with no JSON)."""
        empty = tmp_path / "empty.json"
        empty.write_text("[]")
        _, doc = run_json("report", str(empty), "-o", str(tmp_path / "r.html"))
        assert (doc["messages"], doc["shows"]) == (0, "conversation")


class TestFitDocumentCounts:
    def test_messages_written(self, tmp_path: Path) -> None:
        """fit's document says how many messages the file written holds."""
        out = tmp_path / "a.json"
        _, doc = run_json(
            "fit", str(EXAMPLE), "--budget", "40%", "--to", "anthropic", "-o", str(out)
        )
        assert doc["messages_written"] == len(json.loads(out.read_text())["messages"])
