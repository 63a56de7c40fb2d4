"""The regular expressions ``facts`` and ``extractive`` read text with.

Each pattern is tuned to say no when unsure: a fact record full of noise
costs the tokens it was meant to save. Paths need a known file extension or
an anchored folder (``/``, ``~/``, ``./``); numbers need a unit, a currency
or a date shape; commands come from tool calls or from backtick spans that
start with a known program.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = [
    "CODE_FENCE",
    "COMMAND_KEYS",
    "COMMAND_TOOLS",
    "DECISION",
    "ERROR_LINE",
    "PATH_KEYS",
    "STOPWORDS",
    "TASK",
    "URL",
    "USER_REQUEST",
    "backtick_spans",
    "commands_of",
    "identifiers_in",
    "is_command",
    "is_identifier",
    "numbers_in",
    "paths_in",
    "sentences",
    "without_references",
    "words",
]

CODE_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
URL = re.compile(r"https?://[^\s<>\"'`\])}]+")

_EXT = (
    "py|pyi|pyx|ipynb|js|mjs|cjs|jsx|ts|tsx|vue|svelte|ex|exs|heex|eex|leex|erl|"
    "rb|rake|rs|go|java|kt|kts|scala|c|cc|cpp|cxx|h|hpp|cs|swift|php|pl|sh|bash|"
    "zsh|fish|ps1|lua|dart|jl|sql|json|jsonl|ndjson|yaml|yml|toml|ini|cfg|conf|"
    "lock|md|mdx|rst|txt|csv|tsv|xml|html|htm|css|scss|sass|less|svg|png|jpg|"
    "jpeg|gif|webp|pdf|proto|gradle|tf|log|gguf|whl|zip|tar|gz|db|sqlite"
)
_DIR_PATH = re.compile(
    r"(?<![\w/.:@~$-])((?:~|\.{1,2})?/?(?:[\w@+-][\w@.+-]*/)+[\w@+-][\w@.+-]*)"
)
_BARE_FILE = re.compile(rf"(?<![\w/.@$-])([\w-]+(?:\.[\w-]+)*\.(?:{_EXT}))(?![\w/])")
_HAS_EXT = re.compile(rf"\.(?:{_EXT})$")


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


PATH_KEYS = frozenset(("file_path", "path", "notebook_path", "filename", "file"))
"""Tool-call arguments that name a file."""
COMMAND_KEYS = frozenset(("command", "cmd", "script"))
"""Tool-call arguments that hold a shell command."""
COMMAND_TOOLS = frozenset(
    (
        "bash",
        "shell",
        "sh",
        "run",
        "run_command",
        "run_shell_command",
        "execute",
        "exec",
        "terminal",
        "command",
    )
)
"""Tool names (lower case) whose ``command`` argument is always a command."""

_PROGRAMS = _wordset(
    "git gh python python3 pip pip3 uv pipx pytest tox nox poetry ruff mypy "
    "black flake8 npm npx yarn pnpm node deno bun tsc eslint jest vitest cargo "
    "rustc go make cmake mix iex elixir erl rebar3 docker kubectl helm bundle "
    "rails rake ruby gem gradle mvn java dotnet curl wget ls cat grep rg find "
    "sed awk sh bash zsh psql sqlite3 redis-cli mysql terraform ssh scp rsync "
    "tar unzip chmod mkdir rm mv cp touch head tail wc diff patch"
)

_MONTH = (
    "Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    "Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?"
)
_DATE = re.compile(
    rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s(?:{_MONTH})\.?,?\s\d{{4}}\b"
    rf"|\b(?:{_MONTH})\.?\s\d{{1,2}}(?:st|nd|rd|th)?,?\s\d{{4}}\b"
    rf"|\b(?:{_MONTH})\s\d{{4}}\b"
    r"|\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?\b"
    r"|\b\d{1,2}:\d{2}\s?[ap]\.?m\b\.?"
    r"|\b(?:19|20)\d{2}\b"
    r"|\bv?\d+\.\d+\.\d+(?:-[\w.]+)?\b"
)
_NUM = r"\d+(?:[,.]\d+)*"
_UNIT_WORDS = (
    "ms|milliseconds?|seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|"
    "months?|years?|bytes?|[KMGT]i?B|tokens?|lines?|files?|tests?|doctests?|"
    "failures?|errors?|warnings?|passed|failed|skipped|messages?|items?|records?|"
    "rows?|users?|requests?|calls?|commits?|px|rem|USD|EUR|GBP|dollars?|euros?|"
    "pounds?|km|kg|miles?|meters?|cm|mm|lbs?|percent|times|steps?|pages?|"
    "points?|runs?|attempts?|retries|workers?|cores?|threads?|GPUs?|CPUs?"
)
_NUMBER = re.compile(
    rf"(?<![\w.,$€£])(?:[$€£]\s?{_NUM}(?:\s?(?:k|K|M|bn|million|billion)\b)?"
    rf"|{_NUM}(?:%|ms|s|h|x|k|K|M|[KMGT]i?B)(?![\w%])"
    rf"|{_NUM}\s(?:{_UNIT_WORDS})(?![\w]))"
)

_HEX = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b")
_UUID = re.compile(
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I
)
_CAMEL = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+(?:\.[A-Z]\w*)*\b")
_DOTTED = re.compile(r"\b[A-Z]\w+(?:\.[A-Z]\w+)+\b")
_SNAKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
_TICKET = re.compile(r"\b[A-Z][A-Z0-9]+-\d+\b")
_IDENT = re.compile(r"[A-Za-z_@:$#][\w.:#/@$!?-]*(?:\(\))?(?:/\d+)?")
_BACKTICK = re.compile(r"(?<!`)`([^`\n]{1,80})`(?!`)")

TASK = re.compile(
    r"\b(?:TODO|FIXME|still needs? to|needs? to|next step|remaining|not yet done|"
    r"pending|left to do|will need to|still to do)\b|^\s*[-*]\s*\[ \]",
    re.I,
)
"""Sentences that name work still open."""
USER_REQUEST = re.compile(
    r"\s*(?:please|can you|could you|would you|implement|fix|add|create|write|"
    r"update|remove|delete|refactor|rename|make|build|run|test|check|look|find|"
    r"investigate|tackle|continue|work on|start|deploy|review|explain|show|help|"
    r"let's|lets)\b",
    re.I,
)
"""A user sentence that opens with a request."""
DECISION = re.compile(
    r"\b(?:decided|decide to|decision|we(?:'ll| will) (?:use|go with|keep)|"
    r"let's (?:use|go with|keep|switch)|I'll (?:use|go with)|going with|chose|"
    r"chosen|opted|switch(?:ed|ing)? to|instead of|rather than|settled on|agreed)\b",
    re.I,
)
"""Sentences that record a choice."""
ERROR_LINE = re.compile(
    r"^[ \t]*("
    r"\*\* \([\w.]+\).*"
    r"|[\w.]*(?:Error|Exception)(?::| \().*"
    r"|error(?:\[\w+\])?: .*"
    r"|(?:ERROR|FATAL|FAILED|FAIL)\b.*"
    r"|fatal: .*|panic: .*"
    r"|E {3}\S.*"
    r"|Traceback \(most recent call last\):.*"
    r")$",
    re.M,
)
"""Lines of tool output that report a failure (compilers, test runners, git)."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(`*])|\n+")
_BULLET = re.compile(r"^\s*(?:[-*+>]|\d+[.)]|#+)\s+")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
STOPWORDS = _wordset(
    "the and for are but not you all any can had her was one our out has him "
    "his how its may new now see two way who did get let put say she too use "
    "that with have this will your from they know want been good much some time "
    "very when come here just like long make many more only over such take than "
    "them well were what into also then there their about would these could "
    "which other after first where those should being because while does doing "
    "done i'm it's i'll i've you're that's let's don't"
)
"""Words too common to tell sentences apart."""


def paths_in(text: str) -> Iterator[str]:
    """File paths in ``text``: with a known extension, or anchored folders."""
    rest = text
    for m in _DIR_PATH.finditer(text):
        p = m.group(1).rstrip(".,:;!?'\"")
        anchored = p.startswith(("/", "~/", "./", "../"))
        if _HAS_EXT.search(p) or (anchored and p.count("/") >= 2 and _has_name(p)):
            yield p
    rest = _DIR_PATH.sub(" ", text)
    for m in _BARE_FILE.finditer(rest):
        yield m.group(1)


def without_references(text: str) -> str:
    """``text`` with URLs and path-like spans blanked (for identifier search)."""
    return _BARE_FILE.sub(" ", _DIR_PATH.sub(" ", URL.sub(" ", text)))


def _has_name(path: str) -> bool:
    """Whether a path holds a letter (``/2/3`` is a fraction, not a folder)."""
    return any(c.isalpha() for c in path)


def numbers_in(text: str, *, dates: bool) -> Iterator[str]:
    """Numbers with a unit or currency.

    With ``dates``, dates, times, years and versions too: read from prose,
    where they are not line numbers.
    """
    if dates:
        for m in _DATE.finditer(text):
            yield " ".join(m.group(0).split())
        text = _DATE.sub(" ", text)
    for m in _NUMBER.finditer(text):
        yield " ".join(m.group(0).split())


def identifiers_in(text: str) -> Iterator[str]:
    """Names outside backticks that are surely identifiers.

    Hashes, UUIDs, ``CamelCase``, ``dotted.Module`` and ``snake_case`` names,
    ticket ids.
    """
    for pattern in (_UUID, _HEX, _DOTTED, _CAMEL, _SNAKE, _TICKET):
        for m in pattern.finditer(text):
            yield m.group(0)
        text = pattern.sub(" ", text)


def backtick_spans(text: str) -> list[str]:
    """The contents of inline code spans (not fenced blocks), stripped."""
    prose = CODE_FENCE.sub(" ", text)
    return [s.strip() for s in _BACKTICK.findall(prose) if s.strip()]


def is_command(text: str) -> bool:
    """Whether ``text`` starts with a known program (or ``./``, ``$ ``)."""
    head = text.lstrip().removeprefix("$ ").split(maxsplit=1)
    if not head:
        return False
    word = head[0]
    return word in _PROGRAMS or word.startswith(("./", "scripts/", "bin/"))


def is_identifier(text: str) -> bool:
    """Whether a code span names something (``close_session``, ``:state``)."""
    return bool(_IDENT.fullmatch(text)) and not text.isdigit()


def commands_of(command: str) -> list[str]:
    """The commands of a shell line, as written (split at ``&&``, ``||``, ``;``).

    Without ``cd``, ``echo`` and the like; a pipeline and its redirections
    stay as the agent wrote them (``mix test 2>&1 | tail -20``), so it can
    run the same again.

    Example:
        >>> commands_of('cd /repo && mix test 2>&1 | tail -20; git commit -m "a; b"')
        ['mix test 2>&1 | tail -20', 'git commit -m "a; b"']
    """
    first = command.split("<<", 1)[0]
    out: list[str] = []
    for seg in _split_shell(first):
        seg = " ".join(seg.removeprefix("$ ").split())
        if not seg or len(seg) > 200 or seg.startswith("#"):
            continue
        if seg.count('"') % 2 or seg.count("'") % 2:  # a quote cut by the heredoc
            seg = seg[: min(i for i in (seg.find('"'), seg.find("'")) if i >= 0)]
            seg = seg.strip()
        word = seg.split(maxsplit=1)[0] if seg else ""
        if word and word not in _SKIPPED:
            out.append(seg)
    return out


_SKIPPED = frozenset(
    ("cd", "echo", "export", "sleep", "true", "false", "set", "source", ".", "printf")
)


def _split_shell(line: str) -> list[str]:
    """Split at ``&&``, ``||``, ``;`` and newlines outside quotes."""
    parts: list[str] = []
    quote = ""
    start = 0
    i = 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in ";\n" or line.startswith(("&&", "||"), i):
            parts.append(line[start:i])
            i += 1 if ch in ";\n" else 2
            start = i
            continue
        i += 1
    parts.append(line[start:])
    return [p.strip() for p in parts if p.strip()]


def sentences(text: str) -> Iterator[str]:
    """Sentences and lines of prose, list markers removed, two words or more."""
    for piece in _SENTENCE_END.split(text):
        s = _BULLET.sub("", piece).strip()
        if s.startswith("|") or len(s.split()) < 2:
            continue
        yield s


def words(text: str) -> list[str]:
    """Lower-case words of three letters or more, stopwords removed."""
    return [
        w for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in STOPWORDS
    ]
