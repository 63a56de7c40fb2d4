"""Deep, huge or odd input: a clear error with the path, never a raw exception.

And outputs written atomically: a failed ``fit -o`` leaves the file as it was.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from contextwindow import AsyncContextManager, ContextManager, Message, fit
from contextwindow._json import MAX_DEPTH, check_tree
from contextwindow.cli import main
from contextwindow.cli._common import write_text
from contextwindow.errors import (
    ArgumentTypeError,
    ContextWindowError,
    InvalidMessageError,
)
from contextwindow.strategies import (
    Budget,
    CollapseRuns,
    DropOldest,
    Fitted,
    Pipeline,
    Report,
    Summarize,
)
from contextwindow.summarizers.base import summary_text
from contextwindow.transcripts import read_transcripts


def nested(levels: int) -> dict[str, object]:
    root: dict[str, object] = {}
    node = root
    for _ in range(levels):
        child: dict[str, object] = {}
        node["a"] = child
        node = child
    return root


def deep_unmodelled() -> str:
    """Valid JSON: a message with an unmodelled key nested 600 levels."""
    return json.dumps([{"role": "user", "content": "hi", "extra": nested(600)}])


CASES = {
    "deep under an unmodelled key": (
        deep_unmodelled(),
        "chat.json: [0].extra.a.a...",
        f"nested deeper than {MAX_DEPTH} levels",
    ),
    "too deep for the parser": (
        '[{"role": "user", "content": "hi", "x": '
        + "[" * 100_000
        + "]" * 100_000
        + "}]",
        "chat.json",
        "not readable JSON: nested deeper than",
    ),
    "a 5,000-digit integer": (
        '[{"role": "user", "content": "hi", "n": ' + "9" * 5000 + "}]",
        "chat.json",
        "not readable JSON: a number too long",
    ),
    "a lone surrogate": (
        '[{"role": "user", "content": "a\\ud800b"}]',
        "chat.json: [0].content",
        "a lone surrogate (\\ud800) at character 1",
    ),
    "a lone surrogate in a JSONL line": (
        '{"role": "user", "content": "ok"}\n{"role": "user", "content": "\\udfff"}\n',
        "chat.json:2: content",
        "a lone surrogate (\\udfff)",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
class TestReading:
    def test_library(self, case: str, tmp_path: Path) -> None:
        """read_transcripts raises InvalidMessageError naming the path."""
        text, path, reason = CASES[case]
        file = tmp_path / "chat.json"
        file.write_text(text, encoding="utf-8")
        with pytest.raises(InvalidMessageError) as info:
            read_transcripts(file)
        assert info.value.path.startswith(path)
        assert reason in info.value.reason

    def test_cli(self, case: str, tmp_path: Path) -> None:
        """inspect and fit -o: an error line, no traceback, the output untouched."""
        text, path, reason = CASES[case]
        file = tmp_path / "chat.json"
        file.write_text(text, encoding="utf-8")
        out = tmp_path / "out.json"
        out.write_text("before\n")
        runner = CliRunner()
        for args in (["inspect", str(file)], ["fit", "-o", str(out), str(file)]):
            result = runner.invoke(main, args)
            assert result.exit_code == 1, result.output
            assert not isinstance(result.exception, RecursionError | UnicodeError)
            assert f"Error: {path}" in result.output
            assert reason in result.output
        assert out.read_text() == "before\n"


class TestText:
    def test_stdin_is_read_as_a_file_is(self, tmp_path: Path) -> None:
        """Non-UTF-8 bytes on standard input are refused, as in a file."""
        data = '[{"role": "user", "content": "caf\xe9"}]'.encode("latin-1")
        file = tmp_path / "chat.json"
        file.write_bytes(data)
        env = {**os.environ, "LC_ALL": "C", "PYTHONIOENCODING": ""}
        base = [sys.executable, "-m", "contextwindow", "fit"]
        piped = subprocess.run(
            [*base, "-"], input=data, capture_output=True, env=env, check=False
        )
        named = subprocess.run(
            [*base, str(file)], capture_output=True, env=env, check=False
        )
        assert piped.returncode == named.returncode == 1
        assert piped.stdout == b""
        why = "not UTF-8 text: 'utf-8' codec can't decode byte 0xe9 in position 33"
        assert why in piped.stderr.decode()
        assert why in named.stderr.decode()

    def test_a_text_stream(self) -> None:
        """A text stream holding what no UTF-8 can carry is refused."""
        with pytest.raises(InvalidMessageError, match="not UTF-8 text"):
            read_transcripts(io.StringIO('[{"role": "user", "content": "\udce9"}]'))


class TestAtomicWrite:
    def test_a_failed_write_leaves_the_file(self, tmp_path: Path) -> None:
        """Text UTF-8 cannot carry: an error, the old file intact, no temp file."""
        out = tmp_path / "out.json"
        out.write_text("before\n")
        with pytest.raises(click.ClickException, match="lone surrogate"):
            write_text(str(out), "a\ud800b")
        assert out.read_text() == "before\n"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]

    def test_replaces_and_keeps_the_mode(self, tmp_path: Path) -> None:
        """The new text replaces the old whole; the file keeps its permissions."""
        out = tmp_path / "out.json"
        out.write_text("x" * 10_000)
        out.chmod(0o640)
        write_text(str(out), "short")
        assert out.read_text() == "short\n"
        assert out.stat().st_mode & 0o777 == 0o640
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]

    def test_a_pipe_is_written_to_not_replaced(self, tmp_path: Path) -> None:
        """A FIFO (like /dev/null or /dev/stdout, no regular file) stays what it is."""
        fifo = tmp_path / "pipe"
        os.mkfifo(fifo)
        got: list[bytes] = []
        reader = threading.Thread(
            target=lambda: got.append(fifo.read_bytes()), daemon=True
        )
        reader.start()
        write_text(str(fifo), "through")
        reader.join(timeout=10)
        assert got == [b"through\n"]
        assert stat.S_ISFIFO(fifo.stat().st_mode)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]

    def test_a_folder_that_is_not_there(self, tmp_path: Path) -> None:
        """An unwritable place: a clear error."""
        with pytest.raises(click.ClickException, match="cannot write"):
            write_text(str(tmp_path / "no" / "out.json"), "x")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=20,
)


class TestProperties:
    @given(st.binary(max_size=200))
    def test_any_bytes(self, data: bytes) -> None:
        """Any bytes: transcripts, or a ContextWindowError; nothing else escapes."""
        with contextlib.suppress(ContextWindowError):
            read_transcripts(io.BytesIO(data))

    @given(json_values, st.integers(0, MAX_DEPTH + 5), st.booleans())
    def test_check_tree(self, value: object, wraps: int, with_text: bool) -> None:
        """Refused exactly when too deep or holding a lone surrogate."""
        for _ in range(wraps):
            value = [value]
        bad = levels(value) > MAX_DEPTH or lone(value)
        text = json.dumps(value) if with_text else None
        try:
            check_tree(value, "x", text)
        except InvalidMessageError:
            assert bad
        else:
            assert not bad


def levels(value: object) -> int:
    """How many containers deep ``value`` is."""
    if isinstance(value, list):
        return 1 + max((levels(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((levels(v) for v in value.values()), default=0)
    return 0


def lone(value: object) -> bool:
    """Whether a string or key in ``value`` holds a lone surrogate."""
    if isinstance(value, str):
        return any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, list):
        return any(lone(v) for v in value)
    if isinstance(value, dict):
        return any(lone(k) or lone(v) for k, v in value.items())
    return False


async def keep_tail(messages: Sequence[Message], budget: Budget, /) -> Fitted:
    return Fitted(tuple(messages[-3:]), Report(0, 0, budget.limit))


class AsyncCall:
    async def __call__(self, messages: Sequence[Message], budget: Budget, /) -> Fitted:
        return await keep_tail(messages, budget)


class AsyncSummarizer:
    async def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous: str | None = None,
        max_tokens: int | None = None,
    ) -> str:
        return "summary"


class TestAsyncCallables:
    @pytest.mark.parametrize(
        "strategy",
        [keep_tail, AsyncCall(), functools.partial(keep_tail)],
        ids=["function", "__call__", "partial"],
    )
    @pytest.mark.parametrize(
        ("use", "argument"),
        [
            (lambda s: ContextManager(token_limit=2000, strategy=s), "strategy"),
            (lambda s: AsyncContextManager(token_limit=2000, strategy=s), "strategy"),
            (lambda s: Pipeline(DropOldest(), s), "stages[1]"),
            (lambda s: CollapseRuns(s), "strategy"),
            (lambda s: fit([Message.user("hi")], limit=100, strategy=s), "strategy"),
        ],
        ids=["manager", "async manager", "pipeline", "collapse", "fit"],
    )
    def test_an_async_strategy_is_refused_when_given(
        self, strategy: Any, use: Callable[[Any], object], argument: str
    ) -> None:
        """An async def strategy: refused at once, naming the argument, no warning."""
        with pytest.raises(ArgumentTypeError, match="an async def") as caught:
            use(strategy)
        assert caught.value.argument == argument

    @pytest.mark.parametrize(
        "use",
        [
            lambda s: Summarize(s),
            lambda s: ContextManager(token_limit=2000, summarizer=s),
            lambda s: AsyncContextManager(token_limit=2000, summarizer=s),
        ],
        ids=["Summarize", "manager", "async manager"],
    )
    def test_an_async_summarize_is_refused_when_given(
        self, use: Callable[[Any], object]
    ) -> None:
        """A summarizer whose summarize is async def: refused at once, named."""
        with pytest.raises(ArgumentTypeError, match="summarize is an async def") as e:
            use(AsyncSummarizer())
        assert e.value.argument == "summarizer"

    def test_a_coroutine_returned_is_closed(self) -> None:
        """A summarize that returned a coroutine: closed, and the error names it."""

        async def text() -> str:
            return "summary"

        coro = text()
        with pytest.raises(ArgumentTypeError, match="returning <coroutine"):
            summary_text(object(), coro)
        assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED
