"""What the commands share: the error boundary, inputs, formatting.

Contract: ``cli_errors`` is the one place where library errors
(``ContextWindowError``, ``BudgetError`` included) become one-line
``Error: …`` messages and a non-zero exit, and library warnings become
``warning: …`` lines on stderr (or, for a ``--json`` document that carries
them, a list). Nothing here prints otherwise: the helpers return text for
the commands to print. No ``-o`` replaces what the command reads
(``check_output``), and ``write_text`` writes to a device or a file
descriptor's name (``/dev/stdout``, ``/dev/fd/63``) as it is, never
replacing what it leads to. A ``FILE|URL`` argument is shown
(in errors, progress, listings and JSON) as ``shown_source`` shows it: a
URL with its credentials masked. The names carry no underscore because
the module itself is private: they are shared by this package's command
modules and by nothing else.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys
import tempfile
import warnings
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast
from urllib.parse import unquote

import click

from contextwindow._redact import display_url
from contextwindow.errors import ContextWindowError
from contextwindow.formats import AnthropicRequest, to_provider
from contextwindow.messages import Message, Provider
from contextwindow.store.urls import is_store_url
from contextwindow.tokens import (
    BPETokenizer,
    HeuristicTokenizer,
    HFTokenizer,
    Tokenizer,
)
from contextwindow.tokens.bpe import ENCODINGS
from contextwindow.transcripts import Transcript, read_transcripts

_PROVIDER_OF_FORMAT: dict[str, Provider] = {
    "anthropic": "anthropic",
    "anthropic_request": "anthropic",
    "claude_code": "anthropic",
    "responses": "responses",
}
DEFAULT_MODEL = "gpt-4o"


@contextmanager
def cli_errors(collect: list[str] | None = None) -> Generator[None, None, None]:
    """Turn library errors into click errors, and warnings into stderr lines.

    Args:
        collect: Where the warnings go instead, each once, for a ``--json``
            document to carry (``fit`` prints its document on stderr, where
            a text line would make it no JSON). What the command put there
            itself is printed with the rest if the block fails: an error's
            document has no room for warnings.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        done = False
        try:
            yield
            done = True
        except ContextWindowError as exc:
            raise click.ClickException(str(exc)) from exc
        finally:
            texts = [str(w.message) for w in caught]
            if collect is not None and done:
                collect[:] = list(dict.fromkeys([*collect, *texts]))
            else:
                for text in dict.fromkeys([*(collect or ()), *texts]):
                    click.echo(f"warning: {text}", err=True)


# -- inputs ----------------------------------------------------------------------


def _check_source(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """``value`` itself: ``-``, a store URL, or the name of something to read.

    Not only a regular file: ``/dev/stdin``, a named pipe, a shell's
    process substitution (``<(cmd)``, ``/dev/fd/63``) are read too, once,
    from start to end (``read_transcripts`` reads the bytes in one go).
    """
    if value != "-" and not is_store_url(value) and not _readable(value):
        if not value:
            what = "an empty name"
        elif Path(value).is_dir():
            what = "a directory, not a file"
        else:
            what = "no such file, nor a store URL"
        raise click.BadParameter(
            f"{shown_source(value)!r}: {what}; give a transcript file, - for "
            "standard input, or a store URL such as sqlite:///chats.db#ID"
        )
    return value


def _readable(name: str) -> bool:
    """Whether ``name`` is something that exists and is no directory.

    ``os.stat``, not ``Path.is_file``: that is false for a pipe or a
    device, which are read as a file is. Nothing is opened here: a pipe
    gives its bytes once, to the reader.
    """
    if not name:
        return False
    try:
        return not stat.S_ISDIR(os.stat(name).st_mode)
    except (OSError, ValueError):  # no such file; a NUL in the name
        return False


def shown_source(source: str) -> str:
    """How a ``FILE|URL`` argument is shown: a URL with its credentials masked.

    Example:
        >>> shown_source("redis://:s3cret@db:6379/0#c1"), shown_source("a.json")
        ('redis://:***@db:6379/0#c1', 'a.json')
    """
    return display_url(source) if "://" in source else source


source_argument = click.argument("file", metavar="FILE|URL", callback=_check_source)
"""The input of ``inspect`` and ``fit``."""
view_option = click.option(
    "--view",
    is_flag=True,
    help="With a stored conversation: its saved (compacted) view, not its log.",
)


def read_source(source: str, *, view: bool = False) -> list[Transcript]:
    """The conversations a file, standard input or a store URL holds."""
    if is_store_url(source):
        from contextwindow.cli._stored import stored_transcripts

        return stored_transcripts(source, view=view)
    if view:
        raise click.UsageError("--view applies to a stored conversation (URL#id)")
    return read_transcripts(sys.stdin if source == "-" else source)


def provider_of(t: Transcript) -> Provider:
    """The provider whose shape a transcript is in (JSONL: the shape of its lines)."""
    fmt = t.format
    if fmt in ("jsonl", "store"):
        fmt = str(t.meta.get("shape", "openai"))
    return _PROVIDER_OF_FORMAT.get(fmt, "openai")


def provider_body(messages: Sequence[Message], provider: Provider) -> Any:
    """A conversation as JSON-ready data in ``provider``'s shape."""
    body = to_provider(messages, provider)
    return body.body() if isinstance(body, AnthropicRequest) else body


def provider_json(messages: Sequence[Message], provider: Provider) -> str:
    """A conversation as indented UTF-8 JSON in ``provider``'s shape."""
    return body_json(provider_body(messages, provider))


def body_json(body: Any) -> str:
    """A provider's body (``provider_body``) as indented UTF-8 JSON."""
    return json.dumps(body, indent=2, ensure_ascii=False)


def written_messages(body: Any) -> int:
    """The messages of a provider's body: its entries, Anthropic's ``messages``.

    Not the conversation's own count: Chat Completions gives each tool result
    a message of its own, and Anthropic merges neighbours of one role and
    keeps its system prompt apart.

    Example:
        >>> written_messages({"system": "Be brief.", "messages": [{}, {}]})
        2
    """
    entries = (
        cast("dict[str, Any]", body)["messages"] if isinstance(body, dict) else body
    )
    return len(cast("list[Any]", entries))


def check_output(source: str, output: str | None) -> None:
    """Refuse an ``-o`` that would replace what the command reads: a usage error.

    ``output`` may not be empty, nor the input file (by a link or another
    name too), nor the file standard input was redirected from (``-``), nor
    a file of the SQLite store a ``sqlite://`` URL reads: its database, or
    the journal or write-ahead log SQLite keeps beside it (replacing one
    loses every conversation of the store, not only the one read). Checked
    before any work, so that nothing is read in vain.
    """
    if output is None:
        return
    if not output:
        raise click.BadParameter(
            "an empty file name (leave -o out, or give - for standard output)",
            param_hint="-o/--output",
        )
    if is_store_url(source):
        database = _sqlite_file(source)
        if database is None:  # PostgreSQL, Redis, memory: no file here
            return
        for suffix, what in _SQLITE_FILES:
            if _same_path(database + suffix, output):
                store = shown_source(source.partition("#")[0])
                raise click.BadParameter(
                    f"{output!r} is {what} of the store {store}: "
                    "writing it would lose every conversation the store "
                    "holds; write elsewhere",
                    param_hint="-o/--output",
                )
        return
    if _is_stdin(output) if source == "-" else _same_path(source, output):
        raise click.BadParameter(
            f"{output!r} is the input file: write elsewhere",
            param_hint="-o/--output",
        )


_SQLITE_FILES = (
    ("", "the database"),
    ("-wal", "the write-ahead log"),
    ("-shm", "the shared-memory index"),
    ("-journal", "the rollback journal"),
)
"""The files of a SQLite database at a path: what SQLite names beside it."""


def _sqlite_file(url: str) -> str | None:
    """The database file a ``sqlite://`` URL names, as ``open_store`` reads it.

    ``None`` for another scheme, or a database in memory.

    Example:
        >>> _sqlite_file("sqlite:///a.db#c1"), _sqlite_file("sqlite:////v/b.db?mode=ro")
        ('a.db', '/v/b.db')
        >>> _sqlite_file("sqlite://") is None, _sqlite_file("redis://h/0") is None
        (True, True)
    """
    scheme, _, rest = url.partition("#")[0].partition("://")
    if scheme.lower() != "sqlite":
        return None
    path = rest.partition("?")[0]
    path = unquote(path[1:] if path.startswith("/") else path)
    return None if path in ("", ":memory:") else path


def _same_path(a: str, b: str) -> bool:
    """Whether writing ``b`` replaces the file ``a``: its path, or its inode.

    A file descriptor's name is written to, never replaced (``write_text``),
    so it replaces nothing; and only a regular file counts by its inode.
    """
    try:
        if _fd_link(b):
            return False
        if os.path.realpath(a) == os.path.realpath(b):
            return True
        st = os.stat(b)
        return stat.S_ISREG(st.st_mode) and os.path.samestat(os.stat(a), st)
    except (OSError, ValueError):  # not there; a NUL in the name
        return False


def _is_stdin(output: str) -> bool:
    """Whether ``output`` is the file standard input was redirected from."""
    try:
        st = os.fstat(sys.stdin.fileno())
        if not stat.S_ISREG(st.st_mode) or _fd_link(output):
            return False  # a pipe or a terminal; a link is written to, as it is
        return os.path.samestat(st, os.stat(output))
    except (OSError, ValueError, AttributeError):  # no such file; no fd (a test)
        return False


def write_text(output: str, text: str) -> int:
    """Write ``text`` (and a newline) to the file ``output``, or fail clearly.

    Atomic: the bytes go to a temporary file in the same folder, flushed to
    disk, which then replaces ``output`` (``os.replace``). A failure at any
    point (text that is not valid Unicode, a full disk) leaves ``output`` as
    it was, never empty or half-written. A new file gets the usual
    permissions (umask applied), a replaced one keeps its own.

    What is no regular file (``/dev/null``, a named pipe), and a file
    descriptor's name (``/dev/stdout``, ``/dev/fd/63`` from ``>(cmd)``), is
    written to as it is, never replaced: behind a descriptor may be a file
    the shell opened to append to (``>> app.log``), or a pipe that has no
    name at all. The command's own standard output or error is written
    through its stream, where it stands, in order with what the command
    prints there.

    Returns:
        The bytes written.
    """
    try:
        data = (text + "\n").encode("utf-8")
    except UnicodeEncodeError as exc:
        raise click.ClickException(
            f"cannot write {output}: the text holds a lone surrogate at "
            f"character {exc.start}, which UTF-8 cannot carry"
        ) from None
    if _fd_link(output):
        _write_through(output, data)
        return len(data)
    target = os.path.realpath(output)  # through a symlink, as open() would
    try:
        st = os.stat(target)
        if not stat.S_ISREG(st.st_mode):  # a named pipe, a socket
            _write_through(output, data)
            return len(data)
        mode = st.st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    except OSError as exc:
        raise click.ClickException(
            f"cannot write {output}: {exc.strerror or exc}"
        ) from exc
    folder, name = os.path.split(target)
    tmp, done = "", False
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
        done = True
    except OSError as exc:
        raise click.ClickException(
            f"cannot write {output}: {exc.strerror or exc}"
        ) from exc
    finally:
        if tmp and not done:  # interrupted or failed: no stray temporary file
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return len(data)


_FD_LINK = re.compile(
    r"/dev/(fd/\d+|stdin|stdout|stderr)|/proc/[^/]+/(task/\d+/)?fd/\d+"
)
"""A file descriptor's name: what it leads to is open already, as it is."""


def _fd_link(output: str) -> bool:
    """Whether ``output`` names an open file descriptor (its links followed).

    ``/dev/stdout``, ``/dev/fd/63`` (a shell's ``>(cmd)``), ``/proc/self/fd/3``,
    or a link to one. Resolved one link at a time, not with ``realpath``: that
    goes through ``/dev/stdout`` to the file behind it (or to ``pipe:[N]``,
    no name at all), and the name it passed is what tells a descriptor from
    a file. Another name under ``/dev`` (a file in ``/dev/shm``) is a file.

    Example:
        >>> _fd_link("/dev/stdout"), _fd_link("/dev/fd/63"), _fd_link("out.json")
        (True, True, False)
    """
    path = os.path.abspath(output)
    for _ in range(40):  # the kernel's own limit on a chain of links
        folder = os.path.realpath(os.path.dirname(path))
        path = os.path.join(folder, os.path.basename(path))
        if _FD_LINK.fullmatch(path):
            return True
        try:
            link = os.readlink(path)
        except (OSError, ValueError):  # no link (or nothing there): a file
            return False
        path = os.path.normpath(os.path.join(folder, link))
    return False


def _write_through(output: str, data: bytes) -> None:
    """Write ``data`` to ``output`` as it is: a device, a pipe, a stream's link.

    The command's own stdout or stderr (the same file as fd 1 or 2) gets the
    bytes through its stream, at its position and in order with the rest of
    the output; anything else is opened to append, so that a file behind a
    descriptor's link keeps what it held (a pipe or a device ignores that).
    """
    try:
        st = os.stat(output)
    except (OSError, ValueError) as exc:
        raise click.ClickException(
            f"cannot write {output}: {getattr(exc, 'strerror', None) or exc}"
        ) from exc
    for fd, err in ((1, False), (2, True)):
        if _is_fd(st, fd):
            # A closed pipe (| head) raises here, as any output to it does.
            click.echo(data, nl=False, err=err)
            return
    try:
        with open(output, "ab") as f:
            f.write(data)
    except OSError as exc:
        raise click.ClickException(
            f"cannot write {output}: {exc.strerror or exc}"
        ) from exc


def _is_fd(st: os.stat_result, fd: int) -> bool:
    """Whether ``st`` is the file open as descriptor ``fd`` (none: ``False``)."""
    try:
        return os.path.samestat(st, os.fstat(fd))
    except OSError:  # the descriptor is closed
        return False


def choose_transcript(
    file: str, transcripts: Sequence[Transcript], k: int | None
) -> Transcript:
    """The ``--conversation`` asked for, or the only one the file holds."""
    return transcripts[choose(file, len(transcripts), k)]


def choose(file: str, n: int, k: int | None) -> int:
    """Which of the ``n`` conversations ``file`` holds ``--conversation`` names.

    None to choose from (an empty store) is an error, as ``inspect`` says it.
    """
    if n == 0:
        raise click.ClickException(f"{shown_source(file)} holds no conversations")
    if k is None and n == 1:
        return 0
    if k is None:
        raise click.UsageError(
            f"{shown_source(file)} holds {n:,} conversations; choose one with "
            f"--conversation N "
            f"(0 to {n - 1:,})"
        )
    if not 0 <= k < n:
        if n == 1:
            holds = "holds 1 conversation: the only choice is 0"
        else:
            holds = f"holds {n:,} conversations: choose 0 to {n - 1:,}"
        raise click.BadParameter(
            f"{k} is out of range; {shown_source(file)} {holds}",
            param_hint="--conversation",
        )
    return k


def tokenizer_from(spec: str) -> Tokenizer:
    """The tokenizer a ``--tokenizer`` value names."""
    if spec == "heuristic":
        return HeuristicTokenizer()
    if spec in ENCODINGS:
        return BPETokenizer(spec)
    choices = ", ".join([*ENCODINGS, "heuristic"])
    if Path(spec).is_file():
        return HFTokenizer.from_file(spec)
    if spec.endswith(".json") or Path(spec).exists():
        what = "a directory" if Path(spec).is_dir() else "no such file"
        raise click.BadParameter(
            f"{spec!r}: {what} (expected a tokenizer.json file, or one of {choices})",
            param_hint="--tokenizer",
        )
    raise click.BadParameter(
        f"{spec!r} is not one of {choices}, nor a tokenizer.json file",
        param_hint="--tokenizer",
    )


def known_model(model: str | None, *, budget: bool | None = None) -> None:
    """Refuse a ``--model`` the registry does not know: a usage error (exit 2).

    The registry's suggestions are named. With a ``--budget`` the window is
    not needed, and the model's default serves (with a warning);
    ``budget=None``: the command takes no budget.
    """
    from contextwindow.models import registry

    if model is not None and not model.strip():
        raise click.BadParameter(
            "an empty model name (leave --model out for the file's model)",
            param_hint="--model",
        )
    if model is None or budget or model in registry:
        return
    close = registry.suggest(model)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    remedy = "" if budget is None else ", or give --budget in tokens"
    raise click.BadParameter(
        f"unknown model {model!r} ({hint}see `contextwindow models`; "
        f"register it with contextwindow.register_model{remedy})",
        param_hint="--model",
    )


# -- formatting ------------------------------------------------------------------


def num(x: int) -> str:
    """A count with thousands separators: ``12,345``."""
    return f"{x:,}"


def pct(part: int, whole: int) -> str:
    """``part`` as a percentage of ``whole``, or ``-`` when ``whole`` is 0."""
    return f"{100 * part / whole:.1f}%" if whole else "-"


def bar(share: float, width: int = 30) -> str:
    """A text bar ``width`` cells wide, ``share`` of them filled."""
    filled = min(width, round(share * width))
    return "█" * filled + "░" * (width - filled)


def tokenizer_label(tokenizer: str, exact: bool) -> str:
    """How a tokenizer's counts are labelled: exact, or APPROXIMATE."""
    return f"{tokenizer}, exact" if exact else f"{tokenizer}, APPROXIMATE"


# Options more than one command takes, worded once.
conversation_option = click.option(
    "-c",
    "--conversation",
    type=int,
    help="Which conversation of a multi-conversation file (0-based).",
)
tokenizer_option = click.option(
    "-t",
    "--tokenizer",
    "tokenizer_spec",
    metavar="NAME|PATH",
    help="Count with o200k_base, cl100k_base, heuristic, or a Hugging Face "
    "tokenizer.json (default: the model's own).",
)
