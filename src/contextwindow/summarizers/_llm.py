"""What the LLM summarizers share: the prompt, the transcript, HTTP with retries.

Contract:

- ``prepare`` turns messages (and a previous summary) into one request: the
  system prompt (``DEFAULT_PROMPT`` unless given), the transcript as plain
  text (tool results cut to ``MAX_RESULT_CHARS``, system messages left out:
  they stay in the conversation), a generation cap, and the fact record of
  what is summarised; ``conclude`` checks the model's answer against that
  record and re-attaches what it dropped.
- ``post``/``apost`` send JSON with ``httpx``: a timeout per attempt (for
  the whole attempt, not for each read: an answer trickled a byte at a time
  fails at it; only the status line and headers of a sync call are bounded
  per read, as ``httpx`` reads them), retries with exponential backoff (or
  the server's ``Retry-After``) on connection errors, timeouts, 429 and
  5xx; any other 4xx fails at once, and so do a redirect (not followed: the
  error says where it points), an answer whose body cannot be read (bad
  gzip) and one that holds no text (``empty_answer``). Every failure is a
  ``SummarizerError`` naming the endpoint and the HTTP status, with none of
  the HTTP stack's exceptions chained to it.
- The API key is read at each call and checked before use
  (``contextwindow.summarizers._secret``): stripped, refused with an error
  naming its variable when no header can carry it. No piece of it appears in
  an error (what the server said is scrubbed, then cut) or in the HTTP
  stack's log records while a request runs. An endpoint known to need a key
  (``KEYED_HOSTS``: OpenAI's, Anthropic's) fails at once, with no request
  sent, when its variable is unset. ``api_key_env`` must be a variable's
  name: a key given there by mistake is refused, not shown.
- Credentials in ``base_url`` are secrets too: ``user:password@`` is sent as
  a ``Basic`` authorization header (as ``httpx`` would send it), so the URL
  that goes out, and that ``httpx`` logs at INFO, holds none; the values of
  secret query parameters (``?api-key=``, ``?key=``, ``?token=``: see
  ``contextwindow._redact``) must stay in the URL, and are scrubbed like
  the key from the HTTP stack's records and from every error. Errors,
  ``SummarizerError.endpoint`` and the ``repr`` show ``base_url`` in its
  display form (``display_url``), credentials masked.
- After a call fails (every retry spent, or a failure no retry fixes), the
  next one within ``cooldown`` seconds fails at once, saying so; each
  failure in a row doubles the wait, up to ``MAX_COOLDOWN``; a success
  resets it. A caller that compacts again soon (a manager's next turn) does
  not wait on a dead endpoint every time.
- ``httpx`` is the optional extra ``llm``: a summarizer built without it
  raises ``SummarizerError`` naming ``pip install 'contextwindow[llm]'``.
"""

from __future__ import annotations

import abc
import asyncio
import base64
import functools
import json
import re
import ssl
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, cast
from urllib.parse import unquote, urlsplit, urlunsplit

from contextwindow._args import (
    as_tokenizer,
    check_bool,
    check_int,
    check_messages,
    check_number,
    check_str,
)
from contextwindow._args import shown as shown_value
from contextwindow._redact import display_url, scrub_url, url_secrets
from contextwindow.errors import ArgumentValueError, SummarizerError
from contextwindow.messages import Image, Message, Text, ToolCall, ToolResult
from contextwindow.summarizers._secret import hidden, read_key, scrub, shown
from contextwindow.summarizers.base import summary_input
from contextwindow.summarizers.extractive import DEFAULT_MAX_TOKENS
from contextwindow.summarizers.facts import (
    FactCheck,
    Facts,
    check_facts,
    extract_facts,
    invented,
)
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.heuristic import HeuristicTokenizer

__all__ = [
    "DEFAULT_PROMPT",
    "MAX_RESULT_CHARS",
    "Call",
    "LLMSummarizer",
    "Request",
    "apost",
    "check_env_name",
    "check_prompt",
    "conclude",
    "empty_answer",
    "endpoint_url",
    "post",
    "prepare",
    "render_transcript",
    "require_httpx",
]

DEFAULT_PROMPT = """\
You summarise the earlier part of a conversation between a user and an AI \
assistant that uses tools, so that the assistant can continue the work from \
your summary alone.

Write a concise summary in plain text. Keep exactly as written:
- every file path that was read, created or changed;
- every command that was run, and its outcome (passed or failed, with the numbers);
- numbers with their units, identifiers and URLs;
- errors, and how they were resolved or that they are not;
- decisions that were made, and why;
- what the user asked for, and the tasks that are still open.
Do not invent anything. Do not address the user. Use at most {words} words."""
"""The system prompt of the LLM summarizers; ``{words}`` is filled in."""

MAX_RESULT_CHARS = 2000
"""Characters of one tool result shown to the model (head and tail)."""

MAX_ARGUMENT_CHARS = 500
"""Characters of one tool call's arguments shown to the model."""

FACT_SHARE = 0.4
"""The share of ``max_tokens`` kept for re-attached facts: the model is asked
for the rest."""


@dataclass(frozen=True, slots=True)
class Request:
    """One summarisation request, in no provider's shape."""

    system: str
    """The system prompt."""
    user: str
    """The transcript (and the previous summary) to summarise."""
    max_tokens: int
    """The generation cap sent to the model."""
    limit: int
    """The summary's target size, facts included."""
    facts: Facts
    """The fact record of what is summarised."""
    carried: Facts
    """The previous summary's facts: re-attached whatever the room."""


def check_url(value: object, name: str) -> None:
    """Fail now, not at each call, on a URL no request can be sent to.

    An ``http`` or ``https`` URL with a host: ``localhost:8000/v1`` (no
    scheme) would fail every call after its retries, as an outage.

    Example:
        >>> check_url("localhost:8000/v1", "base_url")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        contextwindow.errors.ArgumentValueError: base_url: expected an http or https URL with a host..., got '<unparseable URL>' (no scheme:// in it)

    The URL is shown as ``display_url`` shows it, credentials masked (and
    text with no scheme, which may be anything, not at all).
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    takes = "an http or https URL with a host (http://localhost:8000/v1)"
    url: str = check_str(value, name, empty=False, takes=takes, secret=True)
    try:
        parts = urlsplit(url)
        host, _ = parts.hostname, parts.port  # a bad port fails here
    except ValueError as exc:
        why = scrub_url(str(exc), url) or type(exc).__name__
    else:
        spaced = any(ch.isspace() for ch in url)
        if parts.scheme.lower() in ("http", "https") and host and not spaced:
            return
        why = "" if "://" in url else "no scheme:// in it"
    # Raised here, the parser's exception not kept as the context.
    raise ArgumentValueError(name, shown_value(display_url(url)), takes, why)


ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""What the name of an environment variable holding a key looks like."""


def check_env_name(value: object, name: str) -> str | None:
    """``value`` if it is the name of an environment variable (or ``None``).

    Anything else is refused without being shown: a key given where its
    variable's name was asked for (``api_key_env=os.environ["..."]``) must
    not reach an error.

    Example:
        >>> check_env_name("OPENAI_API_KEY", "api_key_env")
        'OPENAI_API_KEY'
        >>> check_env_name("sk-proj-0123456789", "api_key_env")
        Traceback (most recent call last):
        ...
        contextwindow.errors.ArgumentValueError: api_key_env: expected the name of an environment variable ([A-Za-z_][A-Za-z0-9_]*), got a str (not shown) (is it the key itself? name the variable that holds it)
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    takes = "the name of an environment variable ([A-Za-z_][A-Za-z0-9_]*)"
    env: str | None = check_str(
        value, name, empty=False, none=True, secret=True, takes=takes
    )
    if env is not None and not ENV_NAME.fullmatch(env):
        raise ArgumentValueError(
            name,
            shown_value(env, secret=True),
            takes,
            "is it the key itself? name the variable that holds it",
        )
    return env


def endpoint_url(base_url: str, path: str) -> str:
    """``base_url`` with ``path`` added to its path; its query kept after it.

    Example:
        >>> endpoint_url("http://h:8000/v1/?api-version=2", "/chat/completions")
        'http://h:8000/v1/chat/completions?api-version=2'
    """
    head, _, _ = base_url.partition("#")  # a fragment is never sent
    head, q, query = head.partition("?")
    return head.rstrip("/") + path + q + query


def _wire(url: str) -> tuple[str, str | None]:
    """``url`` without its userinfo, and that as a ``Basic`` authorization.

    What ``httpx`` does with a URL's userinfo, done before it sees the URL:
    its INFO log line then shows no password.
    """
    parts = urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at:
        return url, None
    user, _, password = userinfo.partition(":")
    pair = f"{unquote(user)}:{unquote(password)}".encode()
    basic = "Basic " + base64.b64encode(pair).decode("ascii")
    return urlunsplit(parts._replace(netloc=host)), basic


def check_prompt(prompt: str) -> None:
    """Fail now, not mid-request, on a prompt that cannot be filled in."""
    check_str(prompt, "prompt")
    try:
        prompt.format(words=100)
    except (KeyError, IndexError, ValueError) as exc:
        raise SummarizerError(f"prompt may use only {{words}}: {exc!r}") from exc


def prepare(
    messages: Sequence[Message],
    previous: str | None,
    max_tokens: int | None,
    prompt: str,
) -> Request:
    """The request for ``messages`` (see the module's contract)."""
    limit = DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens
    generate = max(32, round(limit * (1 - FACT_SHARE)))
    share = int(limit * FACT_SHARE)
    carried = Facts.parse(previous).limited(share, _HEURISTIC) if previous else Facts()
    facts = carried.merged(extract_facts(messages))
    transcript = render_transcript(messages)
    user = (
        f"Summary so far:\n{previous}\n\nConversation since then:\n{transcript}"
        if previous
        else f"Conversation:\n{transcript}"
    )
    # About 0.7 words per token, and a margin so the model ends its sentence.
    words = max(20, round(generate * 0.6))
    return Request(prompt.format(words=words), user, generate, limit, facts, carried)


def conclude(
    request: Request, text: str, keep_facts: bool, tokenizer: Tokenizer | None
) -> FactCheck:
    """Check the model's ``text`` against the request's facts.

    A fact record the model wrote is no fact: of it only what the request's
    facts hold is kept (``check_facts``). What its text names that the
    request does not is in ``FactCheck.invented``.

    The dropped ones are re-attached (unless ``keep_facts`` is false) in the
    room the model left. A model that wrote more than asked (a server that
    ignores ``max_tokens``) has its text cut, at a word, to its share of the
    target (``1 - FACT_SHARE`` of it, all of it without ``keep_facts``), so
    that the summary and the fact record still fit the target: a summary
    over it would be refused by ``Summarize``, and every fact lost with it.
    """
    tok = tokenizer or _HEURISTIC
    text = text.strip()
    made_up = invented(text, request.user)
    if not keep_facts:
        text = cut_to(text, request.limit, tok)
        return FactCheck(
            text,
            text,
            request.facts,
            request.facts.missing_from(text),
            Facts(),
            made_up,
        )
    text = cut_to(text, request.limit - int(request.limit * FACT_SHARE), tok)
    room = request.limit - tok.count(text)
    check = check_facts(
        text, request.facts, max_tokens=room, tokenizer=tok, keep=request.carried
    )
    return replace(check, invented=made_up)


_HEURISTIC = HeuristicTokenizer()

CUT_MARK = " [...]"
"""What ends a model's text cut to its share (``cut_to``)."""


def cut_to(text: str, limit: int, tok: Tokenizer) -> str:
    """``text`` if it takes at most ``limit`` tokens, else its head cut at a word.

    The longest head (ending before a run of whitespace) that fits with
    ``CUT_MARK`` after it, found by bisection; ``""`` when none does.

    Example:
        >>> cut_to("one two three four five six seven eight", 6, _HEURISTIC)
        'one two three [...]'
        >>> cut_to("short", 6, _HEURISTIC)
        'short'
    """
    if tok.count(text) <= limit:
        return text
    ends = [m.start() for m in _SPACE.finditer(text)]
    lo, hi = 0, len(ends)  # heads ending at ends[:lo] fit; ends[hi:] do not
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if tok.count(text[: ends[mid - 1]] + CUT_MARK) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return text[: ends[lo - 1]].rstrip() + CUT_MARK if lo else ""


_SPACE = re.compile(r"\s+")


def render_transcript(messages: Sequence[Message]) -> str:
    r"""The messages as plain text, one line per turn, for a summarising model.

    Example:
        >>> conv = [Message.user("List the files."),
        ...         Message.assistant(tool_calls=[ToolCall("c1", "ls", '{}')]),
        ...         Message.tool("c1", "a.py\nb.py")]
        >>> print(render_transcript(conv))
        user: List the files.
        assistant called ls({})
        tool result (ls): a.py
        b.py
    """
    messages = check_messages(messages)
    names: dict[str, str] = {}
    lines: list[str] = []
    for m in messages:
        if m.role == "system":
            continue
        who = m.name or m.role
        for part in m.parts:
            if isinstance(part, Text) and part.text.strip():
                lines.append(f"{who}: {part.text.strip()}")
            elif isinstance(part, Image):
                lines.append(f"{who}: [image]")
            elif isinstance(part, ToolCall):
                names[part.id] = part.name
                args = _cut(part.arguments, MAX_ARGUMENT_CHARS)
                lines.append(f"{who} called {part.name}({args})")
            elif isinstance(part, ToolResult):
                name = part.name or names.get(part.call_id, part.call_id)
                flag = ", error" if part.is_error else ""
                body = _cut(part.text.strip(), MAX_RESULT_CHARS)
                lines.append(f"tool result ({name}{flag}): {body}")
    return "\n".join(lines)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return (
        f"{text[:half]} [... {len(text) - limit:,} characters cut ...] {text[-half:]}"
    )


# -- HTTP --------------------------------------------------------------------------


def require_httpx(who: str) -> Any:
    """The ``httpx`` module, or ``SummarizerError`` naming the extra to install."""
    try:
        import httpx
    except ImportError as exc:
        raise SummarizerError(
            f"{who} needs the 'httpx' package: pip install 'contextwindow[llm]'"
        ) from exc
    return httpx


def api_key(env: str | None) -> str | None:
    """The key in ``env``, stripped (``None`` when unset or blank).

    Raises:
        SummarizerError: A key no HTTP header can carry (see ``read_key``).
    """
    return read_key(env)


@dataclass(frozen=True, slots=True)
class Call:
    """One HTTP call's settings."""

    url: str
    headers: Mapping[str, str] = field(repr=False)
    body: Mapping[str, Any] = field(repr=False)
    timeout: float
    retries: int
    backoff: float
    secret: str | None = field(repr=False)
    key_env: str | None
    transport: Any = field(default=None, repr=False)
    hide: tuple[str, ...] = field(default=(), repr=False)
    """Other secrets: the URL's (its password, secret query values)."""


def _hidden(call: Call) -> ExitStack:
    """Every secret of ``call`` scrubbed from the HTTP stack's records."""
    stack = ExitStack()
    for secret in _secrets(call):
        stack.enter_context(hidden(secret))
    return stack


def post(call: Call) -> Any:
    """POST ``call.body`` as JSON; the decoded answer (see the module's contract)."""
    with _hidden(call):
        return _post(call)


async def apost(call: Call) -> Any:
    """``post`` for async callers (``httpx.AsyncClient``, ``asyncio.sleep``)."""
    with _hidden(call):
        return await _apost(call)


@functools.cache
def _tls(httpx: Any) -> Any:
    """One TLS context for every call: loading the CA bundle takes 0.1-0.2 s."""
    make = getattr(httpx, "create_ssl_context", None)  # public from httpx 0.28
    if make is not None:
        return make()
    import certifi  # a dependency of httpx

    return ssl.create_default_context(cafile=certifi.where())


def _post(call: Call) -> Any:
    httpx = require_httpx("an LLM summarizer")
    failure = ""
    with httpx.Client(
        timeout=call.timeout, transport=call.transport, verify=_tls(httpx)
    ) as client:
        for attempt in range(call.retries + 1):
            try:
                response = _send(httpx, client, call)
            except httpx.TransportError as exc:
                failure, delay = _transport_failure(call, exc), _delay(call, attempt)
            else:
                value, failure, delay = _outcome(call, response, attempt)
                if not failure:
                    return value
            if attempt < call.retries:
                time.sleep(delay)
    raise _exhausted(call, failure)


async def _apost(call: Call) -> Any:
    httpx = require_httpx("an LLM summarizer")
    failure = ""
    async with httpx.AsyncClient(
        timeout=call.timeout, transport=call.transport, verify=_tls(httpx)
    ) as client:
        for attempt in range(call.retries + 1):
            try:
                # The whole attempt within ``timeout``, not each read: a
                # server that trickles its answer would hold it much longer.
                response = await asyncio.wait_for(
                    _asend(httpx, client, call), call.timeout
                )
            except asyncio.TimeoutError:
                failure = (
                    f"no answer within {call.timeout:g} s (the attempt's deadline)"
                )
                delay = _delay(call, attempt)
            except httpx.TransportError as exc:
                failure, delay = _transport_failure(call, exc), _delay(call, attempt)
            else:
                value, failure, delay = _outcome(call, response, attempt)
                if not failure:
                    return value
            if attempt < call.retries:
                await asyncio.sleep(delay)
    raise _exhausted(call, failure)


def _send(httpx: Any, client: Any, call: Call) -> Any:
    """The answer to ``call``, its body read.

    Raises:
        httpx.TransportError: The connection failed (retried).
        SummarizerError: Any other failure of the HTTP stack (a body that
            cannot be decoded, too many redirects): no retry fixes it.
    """
    request = client.build_request(
        "POST", call.url, headers=dict(call.headers), json=call.body
    )
    deadline = time.monotonic() + call.timeout
    status = None
    try:
        response = client.send(request, stream=True)
        status = response.status_code
        try:
            # Each read waits up to ``timeout``; the attempt as a whole must
            # end by ``deadline`` too, however slowly the bytes come.
            _past(httpx, deadline, call)
            response.stream = _timed(httpx)(response.stream, deadline, call)
            response.read()
        finally:
            response.close()
    except httpx.TransportError:
        raise
    except httpx.RequestError as exc:
        failure = f"{type(exc).__name__}: {exc}"
    else:
        return response
    # Raised here, with no exception of the HTTP stack chained.
    raise _unread(call, status, failure)


async def _asend(httpx: Any, client: Any, call: Call) -> Any:
    """``_send`` for async callers."""
    request = client.build_request(
        "POST", call.url, headers=dict(call.headers), json=call.body
    )
    status = None
    try:
        response = await client.send(request, stream=True)
        status = response.status_code
        try:
            await response.aread()
        finally:
            await response.aclose()
    except httpx.TransportError:
        raise
    except httpx.RequestError as exc:
        failure = f"{type(exc).__name__}: {exc}"
    else:
        return response
    raise _unread(call, status, failure)


def _past(httpx: Any, deadline: float, call: Call) -> None:
    """Raise ``httpx.ReadTimeout`` (retried as a timeout) once ``deadline`` is past."""
    if time.monotonic() > deadline:
        raise httpx.ReadTimeout(f"no complete answer within {call.timeout:g} s")


@functools.cache
def _timed(httpx: Any) -> Any:
    """A stream class that ends an answer arriving after the attempt's deadline.

    Built once, from ``httpx`` (an optional extra, imported at the call).
    """

    class Timed(httpx.SyncByteStream):  # type: ignore[misc]  # httpx is Any here
        def __init__(self, stream: Any, deadline: float, call: Call) -> None:
            self.stream, self.deadline, self.call = stream, deadline, call

        def __iter__(self) -> Iterator[bytes]:
            for chunk in self.stream:
                _past(httpx, self.deadline, self.call)
                yield chunk

        def close(self) -> None:
            self.stream.close()

    return Timed


def _unread(call: Call, status: int | None, failure: str) -> SummarizerError:
    """A failure of the HTTP stack that is not the connection's (see ``_send``)."""
    what = f"the answer cannot be read ({failure})"
    if status is not None:
        what = f"HTTP {status}: {what}"
    return _error(call, status, what)


MAX_RETRY_AFTER = 30.0
"""The longest ``Retry-After`` honoured, in seconds."""


def _delay(call: Call, attempt: int) -> float:
    return call.backoff * float(1 << attempt)


def _outcome(call: Call, response: Any, attempt: int) -> tuple[Any, str, float]:
    """``(value, "", 0)`` on success; ``(None, failure, delay)`` to retry.

    Raises:
        SummarizerError: A failure a retry cannot fix (4xx but 429, bad JSON).
    """
    status: int = response.status_code
    if 300 <= status < 400:
        # Not followed: a POST redirected may be sent on as a GET, or its key
        # to another host. Where it points is what the user should set.
        where = response.headers.get("location")
        to = f"to {shown(where, _secrets(call), DETAIL_CHARS)}" if where else ""
        raise _error(
            call,
            status,
            f"HTTP {status} {response.reason_phrase}: redirected "
            f"{to or 'with no Location'} (redirects are not followed: "
            "point base_url where the server says)",
        )
    if status < 400:
        value, ok = _json(response)
        if not ok:
            raise _error(call, status, "the answer is not JSON")
        return value, "", 0.0
    detail = _detail(call, response)
    if status == 429 or status >= 500:
        delay = _delay(call, attempt)
        after = response.headers.get("retry-after", "")
        if after.replace(".", "", 1).isdigit():
            delay = min(float(after), MAX_RETRY_AFTER)
        return None, f"HTTP {status} {response.reason_phrase}: {detail}", delay
    hint = ""
    if status in (401, 403):
        hint = f" (is {call.key_env} set to a valid key?)" if call.key_env else ""
    raise _error(
        call, status, f"HTTP {status} {response.reason_phrase}: {detail}{hint}"
    )


DETAIL_CHARS = 300
"""Characters of what the server said shown in an error."""


def _json(response: Any) -> tuple[Any, bool]:
    """The answer's JSON and ``True``, or ``(None, False)``: no exception kept.

    The decoder's exception holds the whole body, which may echo the key.
    """
    try:
        return response.json(), True
    except ValueError:
        return None, False


def _detail(call: Call, response: Any) -> str:
    """What the server said (its error message, or its text), scrubbed, then cut."""
    data, _ = _json(response)
    text: str | None = None
    if isinstance(data, dict):
        err = cast("Mapping[str, Any]", data).get("error")
        if isinstance(err, dict):
            message = cast("Mapping[str, Any]", err).get("message")
            if isinstance(message, str):
                text = message
        if isinstance(err, str):
            text = err
    if text is None:
        text = " ".join(str(response.text).split())
    return shown(text, _secrets(call), DETAIL_CHARS)


def _secrets(call: Call) -> tuple[str, ...]:
    return tuple(s for s in (call.secret, *call.hide) if s)


def _transport_failure(call: Call, exc: Exception) -> str:
    kind = type(exc).__name__
    if "Timeout" in kind:
        return f"no answer within {call.timeout:g} s ({kind})"
    return f"{kind}: {exc}"


def _exhausted(call: Call, failure: str) -> SummarizerError:
    tries = call.retries + 1
    what = f"{failure} (after {tries} attempt{'s' if tries > 1 else ''})"
    status = None
    if failure.startswith("HTTP "):
        status = int(failure.split()[1])
    return _error(call, status, what)


def _error(call: Call, status: int | None, what: str) -> SummarizerError:
    secrets = _secrets(call)
    endpoint = display_url(call.url)
    text = scrub(f"POST {endpoint}: {what}", secrets)
    return SummarizerError(text, endpoint=scrub(endpoint, secrets), status=status)


def parse_error(call: Call, what: str, value: Any) -> SummarizerError:
    """A ``SummarizerError`` for an answer of an unexpected shape."""
    answer = shown(json.dumps(value, ensure_ascii=False), _secrets(call), 200)
    return _error(call, 200, f"unexpected answer ({what}): {answer}")


def empty_answer(call: Call, data: Any) -> SummarizerError:
    """A ``SummarizerError`` for an answer with no text, naming why it stopped.

    Example:
        >>> call = Call("http://h/v1/messages", {}, {}, 1.0, 0, 0.0, None, None)
        >>> print(empty_answer(call, {"content": [], "stop_reason": "max_tokens"}))
        POST http://h/v1/messages: the answer holds no text (stop reason: max_tokens)
    """
    why: Any = None
    if isinstance(data, dict):
        answer = cast("Mapping[str, Any]", data)
        why = answer.get("stop_reason")
        choices = answer.get("choices")
        if why is None and isinstance(choices, list) and choices:
            first: Any = cast("Sequence[Any]", choices)[0]
            if isinstance(first, dict):
                why = cast("Mapping[str, Any]", first).get("finish_reason")
    said = f" (stop reason: {shown(str(why), _secrets(call), 40)})" if why else ""
    return _error(call, 200, f"the answer holds no text{said}")


# -- waiting after a failure -----------------------------------------------------

MAX_COOLDOWN = 600.0
"""The longest wait, in seconds, before a summarizer that failed is tried again."""


class Cooldown:
    """When a summarizer that failed may be tried again (shared by its calls).

    Example:
        >>> c = Cooldown()
        >>> c.failed(10.0, now=100.0); c.failed(10.0, now=100.0)
        >>> (c.failures, c.wait(now=105.0))
        (2, 15.0)
        >>> c.succeeded(); c.wait(now=105.0)
        0.0
    """

    __slots__ = ("_lock", "failures", "until")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.failures = 0
        self.until = 0.0

    def wait(self, now: float | None = None) -> float:
        """Seconds until the next attempt is allowed (0: now)."""
        now = time.monotonic() if now is None else now
        return max(0.0, self.until - now)

    def failed(self, cooldown: float, now: float | None = None) -> None:
        """One more failure in a row: the wait doubles (from ``cooldown``)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            self.failures += 1
            if cooldown > 0:
                delay = min(cooldown * 2.0 ** (self.failures - 1), MAX_COOLDOWN)
                self.until = now + delay

    def succeeded(self) -> None:
        """A call went through: the next one need not wait."""
        with self._lock:
            self.failures, self.until = 0, 0.0


# -- the summarizers' shared body ------------------------------------------------


@dataclass(frozen=True, eq=False)
class LLMSummarizer(abc.ABC):
    """The shared body of the LLM summarizers.

    Settings, their checks, the sync and async paths; each subclass adds its
    endpoint, request shape and answer parsing.

    Each summarizer is equal only to itself (``eq=False``, hashed by
    identity): it holds a transport and the state of its failures (the
    cooldown), which two with equal settings do not share. A strategy
    holding it (``Summarize(summarizer)``) is then equal to another only
    when both hold this very summarizer, so ``fit``'s cache of built
    strategies and a budget's memo never hand one summarizer's work to
    another; reusing the same summarizer keeps them. A subclass keeps this
    by declaring itself ``@dataclass(eq=False)`` too.

    Args:
        model: The model name the endpoint expects.
        base_url: The API root.
        api_key_env: The environment variable holding the key (``None``:
            never send one).
        timeout: Seconds each attempt may take.
        retries: Attempts after the first, on connection errors, timeouts,
            429 and 5xx, waiting ``backoff * 2**attempt`` seconds between
            (or the server's ``Retry-After``, up to ``MAX_RETRY_AFTER``).
        backoff: The first wait, in seconds.
        temperature: Sampling temperature (0: the most repeatable summary).
        prompt: The system prompt; ``{words}`` becomes the word budget.
        keep_facts: Re-attach the facts the model dropped.
        tokenizer: Counts tokens for the budget (default: the heuristic).
        transport: An ``httpx`` transport to send through (for tests).
        cooldown: After a failed call, seconds during which the next ones
            fail at once (doubled for each failure in a row, up to
            ``MAX_COOLDOWN``; 0: always try).
    """

    KEYED_HOSTS: ClassVar[frozenset[str]] = frozenset()
    """Hosts that always need a key: a call there without one fails at once."""

    model: str
    base_url: str
    api_key_env: str | None
    timeout: float = 60.0
    retries: int = 2
    backoff: float = field(default=0.5, repr=False)
    temperature: float = field(default=0.0, repr=False)
    prompt: str = field(default=DEFAULT_PROMPT, repr=False)
    keep_facts: bool = field(default=True, repr=False)
    tokenizer: Tokenizer | None = field(default=None, repr=False, compare=False)
    transport: Any = field(default=None, repr=False, compare=False)
    cooldown: float = field(default=30.0, repr=False)
    _cooldown: Cooldown = field(
        default_factory=Cooldown, init=False, repr=False, compare=False, hash=False
    )

    def __post_init__(self) -> None:
        require_httpx(type(self).__name__)
        check_str(self.model, "model", empty=False)
        check_url(self.base_url, "base_url")
        check_env_name(self.api_key_env, "api_key_env")
        check_number(self.timeout, "timeout", low=0, high=1e6, open_low=True)
        check_int(self.retries, "retries", low=0)
        check_number(self.backoff, "backoff", low=0)
        check_number(self.cooldown, "cooldown", low=0)
        check_number(self.temperature, "temperature", low=0)
        check_bool(self.keep_facts, "keep_facts")
        if self.tokenizer is not None:
            object.__setattr__(self, "tokenizer", as_tokenizer(self.tokenizer))
        check_prompt(self.prompt)

    def __repr__(self) -> str:
        # The dataclass's fields, base_url in its display form. A subclass
        # keeps this repr by declaring itself @dataclass(repr=False).
        shown: list[str] = []
        for f in fields(self):
            if f.repr:
                value = getattr(self, f.name)
                if f.name == "base_url":
                    value = display_url(value)
                shown.append(f"{f.name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"

    @property
    @abc.abstractmethod
    def endpoint(self) -> str:
        """The URL requests go to."""

    @abc.abstractmethod
    def _shape(
        self, request: Request, key: str | None
    ) -> tuple[dict[str, str], dict[str, Any]]:
        """The headers and body of the provider's request."""

    @abc.abstractmethod
    def _answer(self, call: Call, data: Any) -> str:
        """The summary text in the provider's answer."""

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous: str | None = None,
        max_tokens: int | None = None,
    ) -> str:
        """Return the model's summary, with the facts it dropped re-attached."""
        return self.check(messages, previous=previous, max_tokens=max_tokens).text

    async def asummarize(
        self,
        messages: Sequence[Message],
        *,
        previous: str | None = None,
        max_tokens: int | None = None,
    ) -> str:
        """``summarize``, without blocking the event loop."""
        check = await self.acheck(messages, previous=previous, max_tokens=max_tokens)
        return check.text

    def check(
        self,
        messages: Sequence[Message],
        *,
        previous: str | None = None,
        max_tokens: int | None = None,
    ) -> FactCheck:
        """Summarise, and say which facts the model kept and which it dropped.

        ``messages`` in any shape a user holds, as every summarizer takes them
        (``summary_input``).
        """
        read = summary_input(messages, previous, max_tokens)
        request = prepare(read, previous, max_tokens, self.prompt)
        call = self._call(request)
        try:
            text = self._text(call, post(call))
        except SummarizerError:
            self._cooldown.failed(self.cooldown)
            raise
        self._cooldown.succeeded()
        return conclude(request, text, self.keep_facts, self.tokenizer)

    async def acheck(
        self,
        messages: Sequence[Message],
        *,
        previous: str | None = None,
        max_tokens: int | None = None,
    ) -> FactCheck:
        """``check``, without blocking the event loop."""
        read = summary_input(messages, previous, max_tokens)
        request = prepare(read, previous, max_tokens, self.prompt)
        call = self._call(request)
        try:
            text = self._text(call, await apost(call))
        except SummarizerError:
            self._cooldown.failed(self.cooldown)
            raise
        self._cooldown.succeeded()
        return conclude(request, text, self.keep_facts, self.tokenizer)

    def _text(self, call: Call, data: Any) -> str:
        """The answer's text; ``SummarizerError`` when it holds none.

        An empty answer (blank text, or only thinking: a model that spent
        its ``max_tokens`` thinking) is a failure, not a summary: the
        strategy keeps the history as it was and says why.
        """
        text = self._answer(call, data)
        if not text.strip():
            raise empty_answer(call, data)
        return text

    def _call(self, request: Request) -> Call:
        """The call to make, or ``SummarizerError`` when none should be sent."""
        key = api_key(self.api_key_env)
        url, basic = _wire(self.endpoint)
        host = urlsplit(url).hostname or ""
        shown = display_url(url)
        if key is None and self.api_key_env and host in self.KEYED_HOSTS:
            raise SummarizerError(
                f"{self.api_key_env} is not set: {host} needs an API key "
                "(set the variable, or point base_url at a server that needs none)",
                endpoint=shown,
            )
        wait = self._cooldown.wait()
        if wait > 0:
            failures = self._cooldown.failures
            raise SummarizerError(
                f"POST {shown}: not tried: the last {failures} "
                f"call{'s' if failures > 1 else ''} failed; next attempt in "
                f"{wait:.0f} s",
                endpoint=shown,
            )
        headers, body = self._shape(request, key)
        if basic is not None:  # as httpx sends a URL's userinfo: it wins
            headers = {**headers, "authorization": basic}
        return Call(
            url,
            headers,
            body,
            self.timeout,
            self.retries,
            self.backoff,
            key,
            self.api_key_env,
            self.transport,
            (*url_secrets(self.endpoint), *([basic] if basic else [])),
        )
