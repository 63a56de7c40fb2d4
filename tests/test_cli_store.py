"""The commands on stored conversations, on real SQLite files."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from contextwindow import (
    Message,
    Text,
    ToolCall,
    ToolResult,
    from_provider,
    problems,
    read_transcript,
)
from contextwindow.cli import main
from contextwindow.messages import Provider
from contextwindow.store import SQLiteStore
from contextwindow.wire import message_to_dict

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "agent_session.json"


def contents(messages: Sequence[Message]) -> list[object]:
    """Texts, calls and results in order (Anthropic merges tool results into turns)."""
    out: list[object] = []
    for m in messages:
        for p in m.parts:
            if isinstance(p, Text):
                out.append(p.text)
            elif isinstance(p, ToolCall):
                out.append((p.id, p.name, p.input))  # Anthropic compacts the JSON
            elif isinstance(p, ToolResult):
                out.append((p.call_id, p.text))
    return out


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def db(tmp_path: Path) -> str:
    """A SQLite file: the example session (with a saved view) and a short chat."""
    path = tmp_path / "chats.db"
    messages = list(read_transcript(EXAMPLE).messages)
    with SQLiteStore(path) as store:
        store.append("session-1", messages, expected_version=0)
        store.update_meta("session-1", {"model": "gpt-4o", "provider": "openai"})
        store.save_view("session-1", [messages[0], messages[-1]], version=20)
        chat = [Message.user("Is the build green?"), Message.assistant("Yes.")]
        store.append("chat/2", chat, expected_version=0)
        store.update_meta("chat/2", {"provider": "anthropic"})
    return f"sqlite:///{path}"


class TestInspectStored:
    def test_one_conversation(self, db: str) -> None:
        """URL#ID inspects that conversation like the file it came from."""
        code, out, _ = run("inspect", f"{db}#session-1")
        assert code == 0, out
        _, from_file, _ = run("inspect", str(EXAMPLE), "--model", "gpt-4o")
        assert out.splitlines()[0] == "session-1  (store, 27 messages, 15 units)"
        assert out.splitlines()[1:] == from_file.splitlines()[1:]

    def test_every_conversation(self, db: str) -> None:
        """URL alone gives the overview of all the store holds."""
        code, out, _ = run("inspect", db, "--json")
        assert code == 0, out
        data = json.loads(out)["conversations"]
        assert [d["title"] for d in data] == ["chat/2", "session-1"]
        assert [d["messages"] for d in data] == [2, 27]

    def test_the_saved_view(self, db: str) -> None:
        """--view inspects the saved view and what came after it (7 messages)."""
        code, out, _ = run("inspect", f"{db}#session-1", "--view", "--json")
        assert code == 0, out
        assert json.loads(out)["messages"] == 2 + 27 - 20

    def test_errors(self, db: str, tmp_path: Path) -> None:
        """An unknown id, a view on a file, a missing file: one-line errors."""
        code, _, err = run("inspect", f"{db}#nope")
        assert code == 1
        assert "Error: no conversation 'nope'" in err
        code, _, err = run("inspect", str(EXAMPLE), "--view")
        assert code == 2
        assert "--view applies to a stored conversation" in err
        code, _, err = run("inspect", str(tmp_path / "none.json"))
        assert code == 2
        assert "no such file, nor a store URL" in err
        code, _, err = run("inspect", str(tmp_path))
        assert code == 2
        assert "a directory, not a file; give a transcript file, - for" in err
        code, _, err = run("inspect", f"sqlite:///{tmp_path / 'empty.db'}")
        assert code == 1
        assert "no such file (reading creates none)" in err
        for url in ("sqlite:///", "sqlite:///#c"):
            code, _, err = run("export", url)
            assert code == 1
            assert "'sqlite:///': no database path given" in err

    def test_reading_creates_nothing(self, tmp_path: Path) -> None:
        """inspect of a mistyped database names it, and leaves no file behind."""
        typo = tmp_path / "typo.db"
        code, _, err = run("inspect", f"sqlite:///{typo}#c1")
        assert code == 1
        assert "typo.db" in err
        assert "no such file" in err
        assert list(tmp_path.iterdir()) == []


class TestFitStored:
    def test_fits_a_stored_conversation(self, db: str, tmp_path: Path) -> None:
        """fit URL#ID writes the same fitted conversation as fit FILE."""
        stored, from_file = tmp_path / "stored.json", tmp_path / "file.json"
        code, out, _ = run(
            "fit", f"{db}#session-1", "--budget", "40%", "-o", str(stored)
        )
        assert code == 0, out
        assert "messages  27 → 15" in out
        run(
            "fit",
            str(EXAMPLE),
            "--model",
            "gpt-4o",
            "--budget",
            "40%",
            "-o",
            str(from_file),
        )
        assert json.loads(stored.read_text()) == json.loads(from_file.read_text())

    def test_the_provider_comes_from_metadata(self, db: str) -> None:
        """A conversation whose metadata says anthropic is fitted for Anthropic."""
        code, out, err = run("fit", f"{db}#chat%2F2")
        assert code == 0, err
        assert "fitted for anthropic" in err
        assert (
            from_provider(json.loads(out), "anthropic")[0].text == "Is the build green?"
        )


class TestExport:
    @pytest.mark.parametrize("provider", ["openai", "anthropic", "responses"])
    def test_each_provider(self, db: str, tmp_path: Path, provider: Provider) -> None:
        """export --to P writes the log in P's shape: it reads back equal, and valid."""
        out_file = tmp_path / f"{provider}.json"
        code, out, _ = run(
            "export", f"{db}#session-1", "--to", provider, "-o", str(out_file)
        )
        assert code == 0, out
        assert f"wrote {out_file} ({provider} shape; session-1: 27 messages" in out
        back = from_provider(json.loads(out_file.read_text()), provider)
        assert contents(back) == contents(read_transcript(EXAMPLE).messages)
        assert problems(back, provider) == ()

    def test_to_stdout_and_the_view(self, db: str) -> None:
        """Without -o the JSON goes to stdout; --view: the view and what follows."""
        code, out, _ = run("export", f"{db}#session-1", "--view")
        assert code == 0
        back = from_provider(json.loads(out), "openai")
        expected = read_transcript(EXAMPLE).messages
        assert [m.text for m in back] == [
            m.text for m in (expected[0], expected[-1], *expected[20:])
        ]

    def test_lists_without_an_id(self, db: str) -> None:
        """URL alone lists the conversations, as a table or as JSON."""
        code, out, _ = run("export", db)
        assert code == 0
        assert "(2 conversations)" in out
        assert any(
            line.split()[:3] == ["session-1", "27", "at"] for line in out.splitlines()
        )
        code, out, _ = run("export", db, "--json")
        rows = json.loads(out)["conversations"]
        assert [(r["id"], r["messages"], r["view_version"]) for r in rows] == [
            ("chat/2", 2, None),
            ("session-1", 27, 20),
        ]
        assert rows[1]["meta"] == {"model": "gpt-4o", "provider": "openai"}

    def test_refuses_what_is_not_a_store(self, tmp_path: Path) -> None:
        """A file name is not a store URL; a stored conversation keeps its ids."""
        code, _, err = run("export", str(EXAMPLE))
        assert code == 2
        assert "is not a store URL" in err
        url = f"sqlite:///{tmp_path / 'x.db'}"
        with SQLiteStore(tmp_path / "x.db") as store:
            msg = Message.user("hi", id="u-1", meta={"openai": {"name_hint": 1}})
            store.append("c", [msg], expected_version=0)
            assert message_to_dict(store.load("c").messages[0]) == message_to_dict(msg)
        code, out, _ = run("export", url)
        assert code == 0
        assert "c " in out


class TestReportStored:
    def test_reading_creates_nothing(self, tmp_path: Path) -> None:
        """report of a mistyped database fails as inspect does, leaving no file."""
        typo = tmp_path / "typo.db"
        code, _, err = run(
            "report", f"sqlite:///{typo}#c1", "-o", str(tmp_path / "r.html")
        )
        assert code == 1
        assert "no such file (reading creates none)" in err
        assert list(tmp_path.iterdir()) == []

    @pytest.mark.parametrize("args", [["report", "-o", "r.html"], ["inspect"], ["fit"]])
    def test_empty_store(self, tmp_path: Path, args: list[str]) -> None:
        """A store of no conversations says so (exit 1), not "(0 to -1)"."""
        path = tmp_path / "empty.db"
        SQLiteStore(path).close()
        code, _, err = run(args[0], f"sqlite:///{path}", *args[1:])
        assert code == 1
        assert err == f"Error: sqlite:///{path} holds no conversations\n"

    def test_empty_store_with_a_conversation_number(self, tmp_path: Path) -> None:
        """--conversation 0 of an empty store says it holds none, as inspect does."""
        path = tmp_path / "empty.db"
        SQLiteStore(path).close()
        code, _, err = run("report", f"sqlite:///{path}", "-c", "0", "-o", "r.html")
        assert code == 1
        assert "holds no conversations" in err


class TestOverviewOfManyModels:
    def test_models_named_when_they_differ(self, tmp_path: Path) -> None:
        """A store whose conversations name different models: the overview says
        there are several, not the first one's model and tokenizer."""
        path = tmp_path / "m.db"
        with SQLiteStore(path) as s:
            s.append("a", [Message.user("hi")], expected_version=0)
            s.update_meta("a", {"model": "claude-sonnet-4-5"})
            s.append("b", [Message.user("x " * 1000)], expected_version=0)
            s.update_meta("b", {"model": "gpt-4o"})
        code, out, _ = run("inspect", f"sqlite:///{path}", "--top", "0")
        assert code == 0
        line = out.splitlines()[1]
        assert line.startswith("models: several (claude-sonnet-4-5, gpt-4o); ")
        assert line.endswith("APPROXIMATE for some")
        assert "window 200,000" not in out

    def test_one_model_keeps_its_line(self, db: str) -> None:
        """Conversations of one model (and tokenizer) keep the model's line."""
        path = db.partition(":///")[2]
        with SQLiteStore(path) as s:
            s.update_meta("chat/2", {"provider": "anthropic", "model": "gpt-4o"})
        code, out, _ = run("inspect", db, "--top", "0")
        assert code == 0
        assert out.splitlines()[1].startswith("model: gpt-4o (window 128,000); tokens:")
