"""Model names: how they normalise, rank and map to a tokenizer encoding.

Contract: pure functions of a name (and a provider), no data. ``variants(name)``
lists the lower-cased name and every form it normalises to, nearest first;
``encoding_for`` says which shipped BPE encoding counts a model and whether that
count is exact. The rules are described in ``contextwindow.models._registry``.

Example:
    >>> variants("openai/gpt-4o-2024-08-06")
    ['openai/gpt-4o-2024-08-06', 'gpt-4o-2024-08-06', 'openai/gpt-4o', 'gpt-4o']
    >>> encoding_for("azure/gpt-35-turbo")
    ('cl100k_base', True)
"""

from __future__ import annotations

import re

__all__ = ["bare_name", "encoding_for", "maker_of", "name_date", "tier", "variants"]

# -- encodings -----------------------------------------------------------------

_O200K = re.compile(
    r"^(gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|o1|o3|o4)(?=$|[-.:@_])"
)
_CL100K = re.compile(r"^(gpt-4|gpt-3\.5|gpt-35|davinci-002|babbage-002)(?=$|-)")


def encoding_for(name: str) -> tuple[str, bool]:
    """The encoding to count ``name`` with, and whether it is exact."""
    bare = bare_name(name)
    if _O200K.match(bare):
        return "o200k_base", True
    if _CL100K.match(bare):
        return "cl100k_base", True
    return "o200k_base", False


# -- name normalisation ----------------------------------------------------------

_REGION = re.compile(r"^(?:us-gov|us|eu|apac|au|jp|ca|global)\.")
_VENDOR = re.compile(
    r"^(?:anthropic|meta|amazon|mistral|cohere|ai21|deepseek|qwen|openai|google"
    r"|moonshot|moonshotai|minimax|zai|xai|writer|nvidia|twelvelabs)\."
)
_BEDROCK_VERSION = re.compile(r"-v\d+(?::\d+)?$")
_COLON_VERSION = re.compile(r"(?:-v\d+)?:\d+$")
_DATE_SUFFIX = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$")
_FINE_TUNE = re.compile(r"^ft:([^:]+):")
_DATE = re.compile(r"(?:^|[-@])(20\d\d)-?([01]\d)-?([0-3]\d)(?=$|[-@:])")
_VERSION_DOT = re.compile(r"(?<=\d)\.(?=\d)")
# Vertex's "@version": only in the last path segment, after a name, and only a
# date, a number or Vertex's "default" / "latest" ("cloudflare/@cf/meta/..."
# is a path, not a version).
_AT_VERSION = re.compile(r"(?<=[^/@])@(\d+(?:-\d+)*|default|latest)$")
_CLAUDE_MINOR_0 = re.compile(r"claude.*-\d+-0$")


def bare_name(name: str) -> str:
    """The model part of a name: no provider path, region or vendor prefix."""
    s = name.lower()
    if s.startswith("ft:"):
        s = s[3:]
    s = s.rsplit("/", 1)[-1]
    s = _REGION.sub("", s)
    return _VENDOR.sub("", s)


def _claude_dashed(s: str) -> list[str]:
    """A Claude name with its version dots as dashes (``4.5`` -> ``4-5``), if any.

    Anthropic names versions with dashes (``claude-sonnet-4-5``); the dotted
    form is how routers and resellers spell them. It is the first step, so the
    maker's own entry is found before a reseller's dotted one
    (``gmi/anthropic/claude-sonnet-4.5``: twice the window).
    """
    if "claude" not in s.rsplit("/", 1)[-1]:
        return []
    dashed = _VERSION_DOT.sub("-", s)
    return [dashed] if dashed != s else []


def _steps(s: str) -> list[str]:
    """The forms one normalisation step away from ``s``, nearest first."""
    out = _claude_dashed(s)
    if s.startswith("ft:"):
        m = _FINE_TUNE.match(s)
        if m:
            out.append("ft:" + m.group(1))
        out.append(s[3:].split(":", 1)[0])
    if "/" in s:
        out.append(s.split("/", 1)[1])
    vendor = False
    if "." in s:
        for rx in (_REGION, _VENDOR):
            stripped = rx.sub("", s)
            if stripped != s:
                out.append(stripped)
        vendor = _VENDOR.match(s) is not None
    # "-v1" alone is a Bedrock version only after a vendor ("anthropic.claude-v2");
    # elsewhere it is part of the name ("deepseek-v3").
    if vendor or ":" in s:
        rx = _BEDROCK_VERSION if vendor else _COLON_VERSION
        stripped = rx.sub("", s)
        if stripped != s and stripped:
            out.append(stripped)
    return out + _suffix_steps(s)


def _suffix_steps(s: str) -> list[str]:
    """The forms of ``s`` without a version, tag or date at its end."""
    out: list[str] = []
    at = _AT_VERSION.search(s)
    if at:
        head, tail = s[: at.start()], at.group(1)
        if tail.isdigit() and len(tail) == 8:
            out.append(f"{head}-{tail}")
        out.append(head)
    for suffix in ("-latest", ":latest"):  # ":latest": Ollama's default tag
        if s.endswith(suffix) and len(s) > len(suffix):
            out.append(s[: -len(suffix)])
    if s[-1:].isdigit():
        stripped = _DATE_SUFFIX.sub("", s)
        if stripped != s and stripped:
            out.append(stripped)
        # Anthropic's "claude-opus-4-0" is its alias of "claude-opus-4".
        if s.endswith("-0") and _CLAUDE_MINOR_0.search(s.rsplit("/", 1)[-1]):
            out.append(s[:-2])
    return out


def variants(name: str) -> list[str]:
    """``name`` (lower-cased) and every form it normalises to, nearest first.

    No form is empty or ends in ``/``: such a form names no model, and in the
    fuzzy index it would gather every name that reduces to it (a whole
    provider's models under ``cloudflare/``).
    """
    seen = [name.strip().lower()]
    known = set(seen)
    i = 0
    while i < len(seen):
        for v in _steps(seen[i]):
            if v and not v.endswith("/") and v not in known:
                known.add(v)
                seen.append(v)
        i += 1
    return seen


# Which litellm providers are a model family's own, for ranking candidates.
_MAKERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("claude", frozenset({"anthropic"})),
    ("gpt", frozenset({"openai", "text-completion-openai", "chatgpt"})),
    ("chatgpt", frozenset({"openai", "chatgpt"})),
    ("o1", frozenset({"openai"})),
    ("o3", frozenset({"openai"})),
    ("o4", frozenset({"openai"})),
    ("gemini", frozenset({"gemini", "vertex_ai-language-models"})),
    ("gemma", frozenset({"gemini"})),
    ("grok", frozenset({"xai"})),
    ("deepseek", frozenset({"deepseek"})),
    ("command", frozenset({"cohere", "cohere_chat"})),
    ("jamba", frozenset({"ai21"})),
    ("llama", frozenset({"meta_llama", "meta"})),
    ("kimi", frozenset({"moonshot"})),
    ("glm", frozenset({"zai"})),
    ("qwen", frozenset({"dashscope"})),
    ("minimax", frozenset({"minimax"})),
    ("nova", frozenset({"amazon_nova"})),
)
_MISTRAL = ("mistral", "codestral", "devstral", "magistral", "ministral", "pixtral")
_CLOUDS = ("azure", "bedrock", "vertex_ai")


# The maker's provider to name for a bare name no maker's entry serves.
_MAKER_NAMES: dict[str, str] = {
    "claude": "anthropic",
    "gpt": "openai",
    "chatgpt": "openai",
    "o1": "openai",
    "o3": "openai",
    "o4": "openai",
    "gemini": "gemini",
    "gemma": "gemini",
    "grok": "xai",
    "deepseek": "deepseek",
    "command": "cohere",
    "jamba": "ai21",
    "llama": "meta_llama",
    "kimi": "moonshot",
    "glm": "zai",
    "qwen": "dashscope",
    "minimax": "minimax",
    "nova": "amazon_nova",
    "mistral": "mistral",
    "codestral": "mistral",
    "devstral": "mistral",
    "magistral": "mistral",
    "ministral": "mistral",
    "pixtral": "mistral",
}


def maker_of(name: str) -> str | None:
    """The provider that makes the model a bare name names, if known.

    Example:
        >>> maker_of("claude-opus-4-1"), maker_of("my-llm")
        ('anthropic', None)
    """
    bare = bare_name(name)
    for prefix, maker in _MAKER_NAMES.items():
        if bare.startswith(prefix):
            return maker
    return None


def tier(name: str, provider: str) -> int:
    """0: the model maker's own entry; 1: a big cloud; 2: anyone else."""
    bare = bare_name(name)
    for prefix, makers in _MAKERS:
        if bare.startswith(prefix):
            if provider in makers:
                return 0
            break
    else:
        if bare.startswith(_MISTRAL) and provider in {"mistral", "codestral"}:
            return 0
    return 1 if provider.startswith(_CLOUDS) else 2


def name_date(name: str) -> int:
    """The date in a name as YYYYMMDD; undated names count as newest."""
    m = _DATE.search(name.lower())
    return int("".join(m.groups())) if m else 99_999_999
