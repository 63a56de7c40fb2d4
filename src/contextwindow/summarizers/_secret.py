"""API keys: read and checked before use, and kept out of every error and log line.

Contract:

- ``read_key(env)`` is the key in the environment variable ``env``, stripped
  of surrounding whitespace (a key read from a file often ends in a
  newline); ``None`` when unset or blank. A key holding anything but
  printable ASCII without spaces (what an HTTP header carries, what every
  provider's keys are made of) is refused with a ``SummarizerError`` naming
  the variable, never the value nor where in it the fault is.
- ``scrub(text, secrets)`` replaces, in ``text``, every run of 8 or more
  characters taken from a secret, in each form it may be shown in (as is,
  escaped as ``repr``, JSON, a ``bytes`` literal, HTML or a URL would), by
  ``[API key]``; a secret shorter than 8 characters is replaced whole. So a
  key echoed in full, cut, masked in the middle (``sk-proj-****abcd``
  keeps ``sk-proj-``) or escaped never shows. Text is scrubbed before it is
  cut for display: a cut cannot leave a piece behind.
- ``hidden(secret)`` scrubs ``secret`` from the records of the HTTP stack's
  loggers (``httpx``, ``httpcore``, ``h11``, ``h2``, ``hpack``) while a
  request runs: httpcore logs response headers and exceptions at DEBUG,
  and a server may echo the key in either. Records of other loggers are
  not touched; a record without a secret is left as it is.
"""

from __future__ import annotations

import functools
import html
import json
import logging
import os
import threading
from collections.abc import Generator, Iterable
from contextlib import contextmanager
from urllib.parse import quote

from contextwindow.errors import SummarizerError

__all__ = ["MASK", "MIN_PIECE", "hidden", "read_key", "scrub"]

MASK = "[API key]"
"""What a secret, or a piece of one, is replaced by."""

MIN_PIECE = 8
"""The shortest run of a secret's characters that is scrubbed."""

LOGGERS = ("httpx", "httpcore", "h11", "h2", "hpack")
"""The loggers (and their children) whose records are scrubbed during a request."""

SCRUB_CHARS = 20_000
"""Of a long text, how much is scrubbed (and may be shown): the rest is cut first."""


def read_key(env: str | None) -> str | None:
    r"""The key in ``env``, stripped; ``None`` when unset or blank.

    Raises:
        SummarizerError: The key holds a character no HTTP header carries (a
            control character, a space inside it, anything not ASCII). The
            message names the variable; the key is not shown.

    Example:
        >>> os.environ["CW_DOC_KEY"] = "sk-doc-0123456789\n"
        >>> read_key("CW_DOC_KEY")
        'sk-doc-0123456789'
        >>> os.environ["CW_DOC_KEY"] = "sk-dóc-0123456789"
        >>> read_key("CW_DOC_KEY")
        Traceback (most recent call last):
        ...
        contextwindow.errors.SummarizerError: CW_DOC_KEY holds a character an API key cannot hold (a control character, a space inside it, or a character that is not ASCII); the key is not used (check how the variable was set)
        >>> del os.environ["CW_DOC_KEY"]
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    if env is None:
        return None
    raw = os.environ.get(env)
    if raw is None:
        return None
    key = raw.strip()
    if not key:
        return None
    if not all("!" <= c <= "~" for c in key):
        raise SummarizerError(
            f"{env} holds a character an API key cannot hold (a control "
            "character, a space inside it, or a character that is not ASCII); "
            "the key is not used (check how the variable was set)"
        ) from None
    return key


def _forms(secret: str) -> set[str]:
    """The ways ``secret`` may be written in an error or a log line."""
    forms = {
        secret,
        secret.strip(),
        repr(secret)[1:-1],
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        repr(secret.encode("utf-8", "backslashreplace"))[2:-1],
        html.escape(secret),
        quote(secret, safe=""),
    }
    forms.discard("")
    return forms


@functools.lru_cache(maxsize=8)
def _pieces(secrets: tuple[str, ...]) -> tuple[tuple[str, ...], frozenset[str]]:
    """The short forms (longest first) and the 8-character pieces of the rest."""
    whole: set[str] = set()
    grams: set[str] = set()
    for secret in secrets:
        for form in _forms(secret):
            if len(form) < MIN_PIECE:
                whole.add(form)
            else:
                grams.update(
                    form[i : i + MIN_PIECE] for i in range(len(form) - MIN_PIECE + 1)
                )
    return tuple(sorted(whole, key=len, reverse=True)), frozenset(grams)


def scrub(text: str, secrets: Iterable[str]) -> str:
    r"""``text`` with every piece of 8+ characters of each secret masked.

    Example:
        >>> key = "sk-test-0123456789abcdef"
        >>> scrub(f"bad key {key!r}; try sk-test-****cdef", [key])
        "bad key '[API key]'; try [API key]****cdef"
        >>> scrub("Bearer b'sk-test-0123456789abcdef\\n'", [key + "\n"])
        "Bearer b'[API key]'"
    """
    whole, grams = _pieces(tuple(secrets))
    if not grams and not whole:
        return text
    for form in whole:
        text = text.replace(form, MASK)
    if not grams or len(text) < MIN_PIECE:
        return text
    marked = bytearray(len(text))
    for i in range(len(text) - MIN_PIECE + 1):
        if text[i : i + MIN_PIECE] in grams:
            marked[i : i + MIN_PIECE] = b"\x01" * MIN_PIECE
    if not any(marked):
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        if marked[i]:
            while i < len(text) and marked[i]:
                i += 1
            out.append(MASK)
        else:
            j = marked.find(1, i)
            j = len(text) if j < 0 else j
            out.append(text[i:j])
            i = j
    return "".join(out)


def shown(text: str, secrets: Iterable[str], limit: int) -> str:
    """``text`` scrubbed, then cut to ``limit`` characters for display.

    Example:
        >>> key = "sk-test-0123456789abcdef"
        >>> shown("key: " + key, [key], 10)  # cut after scrubbing: no prefix left
        'key: [API '
    """
    keys = tuple(secrets)
    longest = max((len(k) for k in keys), default=0)
    # Scrub what can be shown and a margin: a piece cut off there is never shown.
    head = text[: max(SCRUB_CHARS, limit + 8 * longest)]
    return scrub(head, keys)[:limit]


# -- logging -------------------------------------------------------------------


class _Redact(logging.Filter):
    """Scrubs the secrets of the requests now running from a log record."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.active: dict[str, int] = {}
        self.secrets: tuple[str, ...] = ()  # replaced whole: read without the lock

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = self.secrets
        if not secrets:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a record that cannot be formatted: shown as its template
            message = str(record.msg)
        clean = scrub(message, secrets)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info:
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_info, record.exc_text = None, scrub(text, secrets)
        elif record.exc_text:
            record.exc_text = scrub(record.exc_text, secrets)
        if record.stack_info:
            record.stack_info = scrub(record.stack_info, secrets)
        return True


_REDACT = _Redact()


def _install() -> None:
    """Put the filter on the HTTP stack's loggers, those made since included.

    A logger's filters see only the records made on that logger, not its
    children's: each one is filtered.
    """
    manager = logging.Logger.manager
    names = {*LOGGERS, "httpcore.connection", "httpcore.http11", "httpcore.http2"}
    names.update(n for n in tuple(manager.loggerDict) if n.split(".", 1)[0] in LOGGERS)
    for name in names:
        log = logging.getLogger(name)
        if _REDACT not in log.filters:
            log.addFilter(_REDACT)


@contextmanager
def hidden(secret: str | None) -> Generator[None, None, None]:
    """While the block runs, ``secret`` is scrubbed from the HTTP loggers' records."""
    if not secret:
        yield
        return
    _install()
    with _REDACT.lock:
        _REDACT.active[secret] = _REDACT.active.get(secret, 0) + 1
        _REDACT.secrets = tuple(_REDACT.active)
    try:
        yield
    finally:
        with _REDACT.lock:
            left = _REDACT.active[secret] - 1
            if left:
                _REDACT.active[secret] = left
            else:
                del _REDACT.active[secret]
            _REDACT.secrets = tuple(_REDACT.active)
