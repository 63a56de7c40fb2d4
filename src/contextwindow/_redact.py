"""URLs and connection strings as errors, reprs, logs and the CLI show them.

Contract:

- ``display_url(text)`` is the one form in which the library shows a URL or
  a connection string it was given (a store's, a summarizer's
  ``base_url``, the proxy's upstreams): the password of its userinfo
  (``user:***@``; a Redis URL's lone userinfo, ``redis://***@``, which
  Redis takes for a password), the value of every secret query parameter
  (``password``, ``sslpassword``, ``api-key``, ``key``, ``token``, …: see
  ``SECRET_PARAMS``) and a libpq keyword/value ``password=`` become ``***``.
  It never raises: text that is no URL shows as ``'<unparseable URL>'``,
  and a URL of a scheme the library does not read (``SCHEMES``) only as
  its scheme, ``'mysql://...'`` (who knows where such a URL keeps its
  secrets), and that only when it looks like one (letters, and a
  ``+driver``): text with ``://`` in it may be anything.
- ``url_secrets(text)`` are the secrets ``display_url`` hides, as written
  and percent-decoded, whatever the scheme; ``scrub_url(message, text)`` is
  a driver's message about ``text`` with ``text`` in its display form and
  every piece of 8 or more characters of those secrets masked (a driver
  that splits a URL elsewhere, at another ``@``, shows a piece of the
  password as a host name); a secret shorter than that is masked where it
  stands alone.

Nothing here imports the rest of the library: every layer shows URLs the
same way.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, unquote_plus

__all__ = [
    "MASK",
    "SCHEMES",
    "SECRET_PARAMS",
    "STORE_SCHEMES",
    "display_url",
    "scrub_url",
    "url_secrets",
]

MASK = "***"
"""What a secret is shown as."""

STORE_SCHEMES: tuple[str, ...] = (
    "sqlite",
    "postgresql",
    "postgres",
    "redis",
    "rediss",
    "unix",
    "memory",
)
"""The URL schemes of the stores (``store.urls.SCHEMES``)."""

SCHEMES = frozenset(("http", "https", *STORE_SCHEMES))
"""The schemes the library reads, shown in full (secrets masked)."""

SECRET_PARAMS = frozenset(
    {
        "password",
        "sslpassword",
        "passwd",
        "pass",
        "pwd",
        "key",
        "api_key",
        "apikey",
        "token",
        "access_token",
        "auth",
        "secret",
        "client_secret",
        "sig",
        "signature",
    }
)
"""Query parameters (and libpq keywords) whose values are masked; case and
``-``/``_`` do not matter, and so is any name ending in ``password``,
``token``, ``secret`` or ``_key``."""

UNPARSEABLE = "<unparseable URL>"
"""How text that is neither a URL nor a keyword/value string is shown."""

_LONE_USERINFO_IS_PASSWORD = frozenset({"redis", "rediss", "unix"})
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
_NAMED_SCHEME = re.compile(r"[A-Za-z]{1,16}(\+[A-Za-z0-9_]{1,16})?")
"""An unknown scheme shown: not a key that happens to hold ``://``."""
_KEYWORD = re.compile(r"\s*[A-Za-z_][A-Za-z0-9_]*\s*=")
_PAIR = re.compile(
    r"(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*)(\s*=\s*)('(?:[^'\\]|\\.)*'?|\S*)"
)
"""A libpq ``keyword = value``, the keyword tried only where a word starts (tried
inside words, a long word took quadratic time)."""
_PIECE = 8


def _secret_param(name: str) -> bool:
    key = unquote_plus(name).strip().lower().replace("-", "_")
    return key in SECRET_PARAMS or key.endswith(("password", "token", "secret", "_key"))


def _split(text: str) -> tuple[str, str, str, str, str] | None:
    """``(scheme, userinfo or None-marker, host, rest before ?, query#fragment)``.

    Split by hand, so that nothing raises: the authority ends at the first
    ``/``, ``?`` or ``#``, and the userinfo at its last ``@`` (as
    ``urllib.parse`` splits it).
    """
    scheme, sep, rest = text.partition("://")
    if not sep or not _SCHEME.fullmatch(scheme):
        return None
    end = min((i for i in map(rest.find, "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:end], rest[end:]
    userinfo, at, host = authority.rpartition("@")
    if not at:
        userinfo = "\0"  # no userinfo (distinct from an empty one)
    path, q, query = tail.partition("?")
    if not q:
        path, query = tail, ""
    return scheme, userinfo, host, path, (q + query)


def _userinfo(scheme: str, userinfo: str) -> tuple[str, str | None]:
    """The userinfo as shown (with its ``@``) and the secret it holds."""
    if userinfo == "\0":
        return "", None
    user, colon, password = userinfo.partition(":")
    if colon:
        return f"{user}:{MASK}@", password
    if scheme.lower() in _LONE_USERINFO_IS_PASSWORD and userinfo:
        return f"{MASK}@", userinfo
    return f"{userinfo}@", None


def _query(query: str) -> tuple[str, list[str]]:
    """The query (``?...#...``) as shown, and the secret values it holds."""
    if not query.startswith("?"):
        return query, []
    body, hash_, fragment = query[1:].partition("#")
    shown: list[str] = []
    secrets: list[str] = []
    for item in body.split("&"):
        name, eq, value = item.partition("=")
        if eq and _secret_param(name):
            shown.append(f"{name}={MASK}")
            secrets.append(value)
        else:
            shown.append(item)
    return "?" + "&".join(shown) + hash_ + fragment, secrets


def _keywords(text: str) -> tuple[str, list[str]]:
    """A libpq ``key=value`` string as shown, and its secret values."""
    secrets: list[str] = []

    def mask(m: re.Match[str]) -> str:
        if not _secret_param(m.group(1)):
            return m.group(0)
        value = m.group(3)
        if value.startswith("'"):
            value = re.sub(r"\\(.)", r"\1", value[1:].removesuffix("'"))
        secrets.append(value)
        return f"{m.group(1)}{m.group(2)}{MASK}"

    return _PAIR.sub(mask, text), secrets


def _parse(text: str) -> tuple[str, list[str]]:
    if not isinstance(text, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # never raises, whatever it is given
        return UNPARSEABLE, []
    split = _split(text)
    if split is None:
        if "://" not in text and _KEYWORD.match(text):
            return _keywords(text)
        return UNPARSEABLE, []
    scheme, userinfo, host, path, query = split
    user_shown, password = _userinfo(scheme, userinfo)
    query_shown, secrets = _query(query)
    if password is not None:
        secrets.insert(0, password)
    if scheme.lower() not in SCHEMES:
        shown = f"{scheme}://..." if _NAMED_SCHEME.fullmatch(scheme) else UNPARSEABLE
        return shown, secrets
    return f"{scheme}://{user_shown}{host}{path}{query_shown}", secrets


def display_url(text: str) -> str:
    r"""``text`` as it may be shown: its secrets masked (see the module's contract).

    Example:
        >>> display_url("postgresql://ada:s3cret@db:5432/chats?sslmode=require")
        'postgresql://ada:***@db:5432/chats?sslmode=require'
        >>> display_url("http://127.0.0.1:8000/v1?api-key=abc#x")
        'http://127.0.0.1:8000/v1?api-key=***#x'
        >>> display_url("host=db user=ada password='a b\\'c' dbname=chats")
        'host=db user=ada password=*** dbname=chats'
        >>> display_url("mysql://ada:s3cret@db/chats"), display_url("sk-proj-abc")
        ('mysql://...', '<unparseable URL>')
    """
    try:
        return _parse(text)[0]
    except Exception:  # never: but a message about a URL must not fail on it
        return UNPARSEABLE


def url_secrets(text: str) -> tuple[str, ...]:
    """The secrets ``text`` holds, as written and percent-decoded.

    Example:
        >>> url_secrets("redis://:pa%40ss@h/0?token=t0k")
        ('pa%40ss', 'pa@ss', 't0k')
    """
    try:
        found = _parse(text)[1]
    except Exception:  # never, as above
        return ()
    out: dict[str, None] = {}
    for s in found:
        for form in (s, unquote(s, errors="replace"), unquote_plus(s)):
            if form:
                out[form] = None
    return tuple(out)


def scrub_url(message: str, text: str) -> str:
    """``message`` (a driver's, about ``text``) with ``text``'s secrets masked.

    Example:
        >>> url = "postgresql://ada:Wrong@Passw0rdXYZ@db/chats"
        >>> scrub_url("failed to resolve host 'Passw0rdXYZ@db'", url)
        "failed to resolve host '***@db'"
    """
    if not isinstance(text, str) or not isinstance(message, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # never raises, whatever it is given
        return message
    if text and text in message:
        message = message.replace(text, display_url(text))
    secrets = url_secrets(text)
    if not secrets:
        return message
    grams = {
        s[i : i + _PIECE]
        for s in secrets
        if len(s) >= _PIECE
        for i in range(len(s) - _PIECE + 1)
    }
    for s in sorted((s for s in secrets if len(s) < _PIECE), key=len, reverse=True):
        message = re.sub(
            rf"(?<![A-Za-z0-9]){re.escape(s)}(?![A-Za-z0-9])", MASK, message
        )
    if not grams:
        return message
    marked = [False] * len(message)
    for i in range(len(message) - _PIECE + 1):
        if message[i : i + _PIECE] in grams:
            marked[i : i + _PIECE] = [True] * _PIECE
    out: list[str] = []
    for i, ch in enumerate(message):
        if not marked[i]:
            out.append(ch)
        elif i == 0 or not marked[i - 1]:
            out.append(MASK)
    return "".join(out)
