"""What the commands share: the error boundary, inputs, formatting.

Contract: ``cli_errors`` is the one place where library errors
(``ContextWindowError``, ``BudgetError`` included) become one-line
``Error: …`` messages and a non-zero exit, and library warnings become
``warning: …`` lines on stderr. Nothing here prints otherwise: the helpers
return text for the commands to print. A ``FILE|URL`` argument is shown
(in errors, progress, listings and JSON) as ``shown_source`` shows it: a
URL with its credentials masked. The names carry no underscore because
the module itself is private: they are shared by this package's command
modules and by nothing else.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import tempfile
import warnings
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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
def cli_errors() -> Generator[None, None, None]:
    """Turn library errors into click errors, and warnings into stderr lines."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        except ContextWindowError as exc:
            raise click.ClickException(str(exc)) from exc
        finally:
            seen: set[str] = set()
            for w in caught:
                text = str(w.message)
                if text not in seen:
                    seen.add(text)
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


def provider_json(messages: Sequence[Message], provider: Provider) -> str:
    """A conversation as indented UTF-8 JSON in ``provider``'s shape."""
    body = to_provider(messages, provider)
    data: Any = body.body() if isinstance(body, AnthropicRequest) else body
    return json.dumps(data, indent=2, ensure_ascii=False)


def write_text(output: str, text: str) -> None:
    """Write ``text`` (and a newline) to the file ``output``, or fail clearly.

    Atomic: the bytes go to a temporary file in the same folder, flushed to
    disk, which then replaces ``output`` (``os.replace``). A failure at any
    point (text that is not valid Unicode, a full disk) leaves ``output`` as
    it was, never empty or half-written. A new file gets the usual
    permissions (umask applied), a replaced one keeps its own.
    """
    try:
        data = (text + "\n").encode("utf-8")
    except UnicodeEncodeError as exc:
        raise click.ClickException(
            f"cannot write {output}: the text holds a lone surrogate at "
            f"character {exc.start}, which UTF-8 cannot carry"
        ) from None
    target = os.path.realpath(output)  # through a symlink, as open() would
    try:
        st = os.stat(target)
        if not stat.S_ISREG(st.st_mode):
            # A device, a pipe or a terminal (/dev/null, /dev/stdout) is
            # written to, never replaced by a file.
            _write_through(output, target, data)
            return
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


def _write_through(output: str, target: str, data: bytes) -> None:
    try:
        with open(target, "wb") as f:
            f.write(data)
    except OSError as exc:
        raise click.ClickException(
            f"cannot write {output}: {exc.strerror or exc}"
        ) from exc


def choose_transcript(
    file: str, transcripts: Sequence[Transcript], k: int | None
) -> Transcript:
    """The ``--conversation`` asked for, or the only one the file holds."""
    return transcripts[choose(file, len(transcripts), k)]


def choose(file: str, n: int, k: int | None) -> int:
    """Which of the ``n`` conversations ``file`` holds ``--conversation`` names."""
    if k is None and n == 1:
        return 0
    if k is None:
        raise click.UsageError(
            f"{shown_source(file)} holds {n:,} conversations; choose one with "
            f"--conversation N "
            f"(0 to {n - 1:,})"
        )
    if not 0 <= k < n:
        if n == 0:
            holds = "holds no conversation"
        elif n == 1:
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
