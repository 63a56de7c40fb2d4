"""``-o``: never over what a command reads; a descriptor's name written as it is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.test_cli import EXAMPLE, run

from contextwindow import Message
from contextwindow.store import SQLiteStore


def store(tmp_path: Path) -> Path:
    """A SQLite file of two conversations, a and b."""
    path = tmp_path / "chats.db"
    with SQLiteStore(path) as s:
        s.append(
            "a", [Message.user("hi"), Message.assistant("hello")], expected_version=0
        )
        s.append("b", [Message.user("another conversation")], expected_version=0)
    return path


def conversations(path: Path) -> list[str]:
    with SQLiteStore(path, readonly=True) as s:
        return [c.id for c in s.list_conversations()]


class TestOutputOverTheInput:
    def test_report_over_its_transcript_is_refused(self, tmp_path: Path) -> None:
        """report FILE -o FILE would turn the transcript into HTML: a usage error."""
        copy = tmp_path / "chat.json"
        copy.write_text(EXAMPLE.read_text())
        code, out, err = run("report", str(copy), "-o", str(copy))
        assert (code, out) == (2, "")
        assert "Invalid value for -o/--output" in err
        assert "is the input file" in err
        assert copy.read_text() == EXAMPLE.read_text()

    def test_another_name_for_the_input_is_refused(self, tmp_path: Path) -> None:
        """A symlink or a hard link to the input is the input too (report, fit)."""
        copy = tmp_path / "chat.json"
        copy.write_text(EXAMPLE.read_text())
        (tmp_path / "soft.json").symlink_to(copy)
        os.link(copy, tmp_path / "hard.json")
        for name in ("soft.json", "hard.json"):
            for command in ("report", "fit"):
                code, _, err = run(command, str(copy), "-o", str(tmp_path / name))
                assert code == 2, (command, name, err)
                assert "is the input file" in err
        assert copy.read_text() == EXAMPLE.read_text()

    @pytest.mark.parametrize("command", ["export", "fit", "report"])
    @pytest.mark.parametrize("suffix", ["", "-wal", "-shm", "-journal"])
    def test_the_store_file_is_refused(
        self, tmp_path: Path, command: str, suffix: str
    ) -> None:
        """-o naming the SQLite file read (or a file SQLite keeps beside it) is
        a usage error: replacing it would lose every conversation, b too."""
        path = store(tmp_path)
        before = path.read_bytes()
        target = f"{path}{suffix}"
        code, _, err = run(command, f"sqlite:///{path}#a", "-o", target)
        assert code == 2, err
        assert f"of the store sqlite:///{path}:" in err
        assert path.read_bytes() == before
        assert conversations(path) == ["a", "b"]

    def test_the_store_file_by_a_relative_name(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """sqlite:///chats.db and -o ./chats.db are one file (the repro's spelling)."""
        store(tmp_path)
        monkeypatch.chdir(tmp_path)
        code, _, err = run("export", "sqlite:///chats.db#a", "-o", "./chats.db")
        assert code == 2
        assert "'./chats.db' is the database of the store sqlite:///chats.db" in err
        assert conversations(tmp_path / "chats.db") == ["a", "b"]

    def test_another_file_beside_the_store_is_written(self, tmp_path: Path) -> None:
        """Only the store's own files are refused: chats.json beside it is written."""
        path = store(tmp_path)
        out = tmp_path / "chats.json"
        code, _, err = run("export", f"sqlite:///{path}#a", "-o", str(out))
        assert code == 0, err
        assert len(json.loads(out.read_text())) == 2

    def test_stdin_redirected_from_the_output_is_refused(self, tmp_path: Path) -> None:
        """fit - -o chat.json < chat.json would replace what standard input read."""
        copy = tmp_path / "chat.json"
        copy.write_text(EXAMPLE.read_text())
        with copy.open("rb") as stdin:
            done = subprocess.run(
                [sys.executable, "-m", "contextwindow", "fit", "-", "-o", str(copy)],
                stdin=stdin,
                capture_output=True,
                text=True,
                check=False,
            )
        assert done.returncode == 2, done.stderr
        assert "is the input file" in done.stderr
        assert copy.read_text() == EXAMPLE.read_text()

    @pytest.mark.parametrize("command", ["fit", "report"])
    def test_empty_output_is_refused(self, command: str) -> None:
        """-o '' names no file: a usage error saying so, not 'Is a directory'."""
        code, _, err = run(command, str(EXAMPLE), "-o", "")
        assert code == 2
        assert "Invalid value for -o/--output: an empty file name" in err
        assert "Is a directory" not in err


def cli(*args: str, **kw: Any) -> subprocess.CompletedProcess[bytes]:
    """Run the command in a process of its own: real descriptors 1 and 2."""
    done: subprocess.CompletedProcess[bytes] = subprocess.run(
        [sys.executable, "-m", "contextwindow", *args], check=False, **kw
    )
    return done


class TestDescriptorNames:
    """``-o /dev/stdout`` and ``>(cmd)``: written to where they lead, never replaced."""

    def test_dev_stdout_appended_to_a_log(self, tmp_path: Path) -> None:
        """With stdout appended to a log, the log keeps its lines; the fitted
        conversation and then the report follow them."""
        log = tmp_path / "app.log"
        log.write_text("LOG LINE 1\nLOG LINE 2\n")
        with log.open("ab") as out:
            done = cli(
                "fit", str(EXAMPLE), "--budget", "50%", "-o", "/dev/stdout", stdout=out
            )
        assert done.returncode == 0
        text = log.read_text()
        assert text.startswith("LOG LINE 1\nLOG LINE 2\n[\n")
        body, end = json.JSONDecoder().raw_decode(text, len("LOG LINE 1\nLOG LINE 2\n"))
        assert body[0]["role"] == "system"
        assert "wrote /dev/stdout (openai shape)" in text[end:]

    def test_dev_stdout_into_a_pipe(self) -> None:
        """Piped, /dev/stdout is the pipe: written to, where realpath found no file."""
        done = cli(
            "fit",
            str(EXAMPLE),
            "--budget",
            "50%",
            "-o",
            "/dev/stdout",
            "--json",
            capture_output=True,
        )
        assert done.returncode == 0, done.stderr
        decoder = json.JSONDecoder()
        text = done.stdout.decode()
        body, end = decoder.raw_decode(text)
        report = json.loads(text[end:])
        assert report["output"] == "/dev/stdout"
        assert report["messages_written"] == len(body)

    def test_dev_stderr(self) -> None:
        """-o /dev/stderr writes the conversation on stderr, the report on stdout."""
        done = cli(
            "fit", str(EXAMPLE), "-o", "/dev/stderr", "--json", capture_output=True
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stderr)[0]["role"] == "system"
        assert json.loads(done.stdout)["output"] == "/dev/stderr"

    def test_a_descriptor_of_a_pipe(self) -> None:
        """/dev/fd/N of a pipe (a shell's >(cmd)) is written to."""
        read, write = os.pipe()
        try:
            done = cli(
                "fit",
                str(EXAMPLE),
                "-o",
                f"/dev/fd/{write}",
                pass_fds=(write,),
                capture_output=True,
            )
            os.close(write)
            write = -1
            with os.fdopen(read, "rb") as f:
                read = -1
                data = f.read()
        finally:
            for fd in (read, write):
                if fd >= 0:
                    os.close(fd)
        assert done.returncode == 0, done.stderr
        assert json.loads(data)[0]["role"] == "system"

    def test_report_to_dev_stdout_counts_what_it_wrote(self) -> None:
        """report -o /dev/stdout: the page on stdout, and bytes = what was written
        (the size of a pipe is 0)."""
        done = cli(
            "report", str(EXAMPLE), "-o", "/dev/stdout", "--json", capture_output=True
        )
        assert done.returncode == 0, done.stderr
        text = done.stdout.decode()
        start = text.rindex('{\n  "schema_version"')
        doc = json.loads(text[start:])
        assert text.startswith("<!DOCTYPE html>")
        assert doc["bytes"] == len(text[:start].encode())

    def test_a_file_under_dev_shm_is_still_replaced(self) -> None:
        """Only a descriptor's name is written through: a file in /dev/shm is a
        file, replaced whole as any other (not appended to)."""
        shm = Path("/dev/shm")
        if not shm.is_dir() or not os.access(shm, os.W_OK):
            pytest.skip("no writable /dev/shm")
        out = shm / f"contextwindow-test-{os.getpid()}.json"
        try:
            out.write_text("old content\n")
            code, _, err = run("fit", str(EXAMPLE), "-o", str(out))
            assert code == 0, err
            assert json.loads(out.read_text())[0]["role"] == "system"
        finally:
            out.unlink(missing_ok=True)
