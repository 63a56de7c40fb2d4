"""Context windows and output limits of known models, and how to count for them.

Contract:

- The shipped table (``data/models.json``, trimmed from litellm's model map, MIT)
  is read once, lazily, on the first lookup; importing this module reads nothing.
  litellm's aliases are in it as their targets' entries, under the alias's
  name (``claude-sonnet-latest``), and count as their targets do.
- ``Registry.get`` never guesses silently: a name it cannot resolve gives
  ``DEFAULT_MODEL_INFO`` under the name it was asked by, with an
  ``UnknownModelWarning`` naming the model, or, with ``default=False``, an
  ``UnknownModelError`` with close matches.
- A bare name (no provider path, region or vendor prefix) is the model
  maker's: when the shipped table lacks the maker's own entry and only a
  cloud or a reseller serves the model (``claude-opus-4-1`` is only on
  Bedrock there), the entry found is given under the bare name and the
  maker's provider (``anthropic``), with that entry's window and output
  limit. So is a bare name under the maker's own provider path
  (``anthropic/claude-opus-4-1``).
- Any other provider's name is that provider's model: its own entry, under
  whatever spelling, wins over another provider's.
- What users register (``register``, ``alias``) wins over the shipped table.
- ``ModelInfo.exact`` is ``True`` only where a shipped BPE file is the model's
  real tokenizer (OpenAI's ``o200k_base`` and ``cl100k_base`` families). Every
  other model is counted with ``o200k_base`` as an approximation, labelled so.

Resolution, in order (case-insensitive throughout):

1. user aliases, then the exact name (user entries before shipped ones);
2. for a name under a provider path (``github_copilot/claude-sonnet-4-6``),
   that provider's entries: the exact name of a normalised form that keeps
   the path (``github_copilot/gpt-5.4`` for ``github_copilot/gpt-5.4-2026-03-05``),
   then, as in step 4, any entry under the path that normalises to one
   (``github_copilot/claude-sonnet-4.6``);
3. the exact name of a normalised form, nearest first: a provider prefix
   removed (``openai/gpt-4o``), Bedrock regions, vendors and versions removed
   (``us.anthropic.claude-...-v1:0``), Vertex ``@date`` turned into ``-date``
   or a Vertex version (``@001``, ``@default``, ``@latest``) removed,
   ``-latest`` or Ollama's ``:latest`` removed, a ``-YYYYMMDD`` /
   ``-YYYY-MM-DD`` date removed, Anthropic's ``-0`` minor version removed
   (``claude-opus-4-0``), an OpenAI fine-tune's ``ft:base:org::id`` reduced
   to its base; Claude's dotted versions read as dashes (``claude-sonnet-4.5``);
4. otherwise any entry that normalises to one of those forms: the model
   maker's own entry first (``anthropic`` for ``claude-*``), then the clouds
   (Azure, Bedrock, Vertex), then resellers; among equals the nearest form, the
   newest date (so an undated name finds the newest dated entry), then the
   smallest window, because a window that is too small only compacts early
   while one that is too large gets the request rejected.

No form is empty or ends in ``/``, so ``""`` and a bare provider path
(``cloudflare/``) resolve to nothing, and an ``@`` inside a path
(``cloudflare/@cf/...``) is part of the name, not a version.

Example:
    >>> get_model("openai/gpt-4o-2024-08-06").context_window
    128000
    >>> registry.resolve("anthropic/claude-opus-4-6-latest")
    'claude-opus-4-6'
    >>> registry.resolve("claude-sonnet-4-5@20250929")
    'claude-sonnet-4-5-20250929'
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import threading
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any, cast

from contextwindow._args import check_bool, check_int, check_str, shown
from contextwindow.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    UnknownModelError,
    UnknownModelWarning,
)
from contextwindow.models._names import (
    bare_name,
    encoding_for,
    maker_of,
    name_date,
    tier,
    variants,
)
from contextwindow.tokens.approx import ApproximateTokenizer
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.bpe import ENCODINGS

__all__ = [
    "APPROXIMATION_SCALES",
    "DEFAULT_MODEL_INFO",
    "ModelInfo",
    "Registry",
    "approximation_scale",
    "get_model",
    "get_tokenizer",
    "register_model",
    "registry",
]


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What contextwindow knows about one model.

    Every field is checked when it is made, as ``register`` checks its
    arguments: what ``fit`` and ``ContextManager`` take a window and a
    reserve from is a valid model, whoever built it.

    Raises:
        ArgumentError: A field of the wrong type or out of range, named (a
            ``TypeError`` or a ``ValueError`` as well).

    Example:
        >>> info = get_model("gpt-4o")
        >>> (info.provider, info.context_window, info.encoding, info.exact)
        ('openai', 128000, 'o200k_base', True)
        >>> ModelInfo("my-m", "custom", 800, -100, "o200k_base", False)
        Traceback (most recent call last):
        ...
        contextwindow.errors.ArgumentValueError: max_output_tokens: expected an int >= 1, got -100
    """  # noqa: E501 -- doctest output lines cannot be wrapped

    name: str
    """The canonical name (the registry's key)."""
    provider: str
    """Who serves it, in litellm's terms: ``openai``, ``anthropic``, ``azure``..."""
    context_window: int
    """Most input tokens a request may hold."""
    max_output_tokens: int | None
    """Most tokens the model may generate; ``None`` when not known."""
    encoding: str | None
    """The tiktoken encoding counted with: the real one when ``exact``, else the
    one used as an approximation."""
    exact: bool
    """Whether ``get_tokenizer(name)`` counts this model's tokens exactly."""
    function_calling: bool | None = None
    """Whether the model takes tools, when the source says."""
    vision: bool | None = None
    """Whether the model takes images, when the source says."""

    def __post_init__(self) -> None:
        _check_fields(self)


def _check_fields(info: ModelInfo) -> None:
    """Refuse a ``ModelInfo`` field of the wrong type or out of range.

    The one check of what describes a model: ``ModelInfo`` runs it on every
    instance, so ``register`` (which builds one) checks its arguments here.
    An output limit above the window is taken (the shipped table holds
    some; a reply's reserve is capped at a quarter of the window anyway);
    ``register`` refuses one for the models users describe.
    """
    check_str(info.name, "name", empty=False)
    check_str(info.provider, "provider", empty=False)
    check_int(info.context_window, "context_window", low=1)
    check_int(info.max_output_tokens, "max_output_tokens", low=1, none=True)
    encoding = info.encoding
    if encoding is not None and check_str(encoding, "encoding") not in ENCODINGS:
        known = ", ".join(sorted(ENCODINGS))
        raise ArgumentValueError(
            "encoding", shown(encoding), f"a shipped encoding ({known}) or None"
        )
    check_bool(info.exact, "exact")
    for field in ("function_calling", "vision"):
        value = getattr(info, field)
        if value is not None and not isinstance(value, bool):
            raise ArgumentTypeError(field, shown(value), "True, False or None")


DEFAULT_MODEL_INFO = ModelInfo(
    name="unknown",
    provider="unknown",
    context_window=8192,
    max_output_tokens=None,
    encoding="o200k_base",
    exact=False,
)
"""What an unknown model is taken to be: an 8,192-token window, counted
approximately with ``o200k_base``.

8,192 is the smallest window of the chat models still commonly served (GPT-4,
Llama 3 8B, Gemma), so assuming it for a model nobody described keeps the
conversation inside almost any real window: a window guessed too small costs an
early compaction, one guessed too large costs a rejected request. Register the
model (``register_model``) to use its real window.
"""

# -- the registry ----------------------------------------------------------------

_CACHE_SIZE = 4096


def _load_shipped() -> dict[str, Any]:
    res = resources.files("contextwindow.models") / "data" / "models.json"
    data = json.loads(res.read_bytes())
    models: dict[str, Any] = data["models"]
    return models


def _from_raw(name: str, raw: Mapping[str, Any]) -> ModelInfo:
    # An alias of litellm's ("gpt-mini-latest") counts as the model it names.
    encoding, exact = encoding_for(raw.get("alias_of") or name)
    return ModelInfo(
        name=name,
        provider=raw["provider"],
        context_window=raw["context_window"],
        max_output_tokens=raw.get("max_output_tokens"),
        encoding=encoding,
        exact=exact,
        function_calling=raw.get("function_calling"),
        vision=raw.get("vision"),
    )


class Registry:
    """Model names to ``ModelInfo``, with the resolution rules of this module.

    Args:
        entries: The base table; ``None`` reads the shipped one on first use.

    Example:
        >>> reg = Registry({})
        >>> reg.register("my-llm", context_window=32_000).context_window
        32000
        >>> reg.alias("mine", "my-llm")
        >>> reg.get("MINE").name
        'my-llm'
        >>> [m.name for m in reg.search("my-*")]
        ['my-llm']
    """

    def __init__(self, entries: Mapping[str, ModelInfo] | None = None) -> None:
        self._lock = threading.RLock()
        self._base: dict[str, ModelInfo | Mapping[str, Any]] | None = (
            None if entries is None else _checked_entries(entries)
        )
        self._base_lower: dict[str, str] = {}
        if self._base is not None:
            self._base_lower = {k.lower(): k for k in self._base}
        self._user: dict[str, ModelInfo] = {}
        self._user_lower: dict[str, str] = {}
        self._aliases: dict[str, str] = {}
        self._infos: dict[str, ModelInfo] = {}
        self._index: dict[str, list[str]] | None = None
        self._cache: dict[str, str | None] = {}
        self._generation = 0
        """Bumped by every change to what names resolve to (``register``,
        ``alias``): a resolution computed across one is not cached."""

    # -- loading --------------------------------------------------------------

    def _table(self) -> dict[str, ModelInfo | Mapping[str, Any]]:
        base = self._base
        if base is None:
            with self._lock:
                if self._base is None:
                    shipped = _load_shipped()
                    self._base_lower = {k.lower(): k for k in shipped}
                    self._base = shipped
                base = self._base
        return base

    def _info(self, name: str) -> ModelInfo:
        user = self._user.get(name)
        if user is not None:
            return user
        info = self._infos.get(name)
        if info is None:
            entry = self._table()[name]
            info = entry if isinstance(entry, ModelInfo) else _from_raw(name, entry)
            self._infos[name] = info
        return info

    def _names(self) -> set[str]:
        return set(self._table()) | set(self._user)

    # -- resolution -----------------------------------------------------------

    def _exact(self, lowered: str) -> str | None:
        return self._user_lower.get(lowered) or self._base_lower.get(lowered)

    def _fuzzy_index(self) -> dict[str, list[str]]:
        with self._lock:
            if self._index is None:
                index: dict[str, list[str]] = {}
                for name in self._names():
                    for v in variants(name)[1:]:
                        index.setdefault(v, []).append(name)
                self._index = index
            return self._index

    def _rank(self, name: str, nearness: int) -> tuple[int, int, int, int, int, str]:
        info = self._info(name)
        rank = -1 if name in self._user else tier(name, info.provider)
        return (
            rank,
            nearness,
            -name_date(name),
            info.context_window,
            len(name),
            name,
        )

    def resolve(self, model: str) -> str | None:
        """Return the canonical name ``model`` resolves to, or ``None``.

        Example:
            >>> registry.resolve("OpenAI/GPT-4o")
            'gpt-4o'
            >>> registry.resolve("no-such-model") is None
            True
        """
        check_str(model, "model", takes="a model name")
        self._table()
        key = model.strip().lower()
        while True:
            with self._lock:
                if key in self._cache:
                    return self._cache[key]
                generation = self._generation
            # Resolved outside the lock (the fuzzy pass ranks many names); a
            # register or alias meanwhile makes the answer stale: caching it
            # would hide the new model until the next change.
            try:
                found = self._resolve(key)
            except KeyError:  # a user entry renamed (re-registered) meanwhile
                with self._lock:
                    if self._generation == generation:
                        raise
                continue
            with self._lock:
                if self._generation != generation:
                    continue  # resolve again, against what is registered now
                if len(self._cache) >= _CACHE_SIZE:  # bound it: names can be anything
                    self._cache.clear()
                self._cache[key] = found
            return found

    def _resolve(self, key: str) -> str | None:
        if key in self._aliases:
            return self._aliases[key]
        if not key:
            return None  # "" would otherwise match whatever normalises to nothing
        forms = variants(key)
        # A provider's name is that provider's model: its own entry, under any
        # spelling, before another provider's (github_copilot/claude-sonnet-4-6
        # is Copilot's 200,000 tokens, not Anthropic's 1,000,000).
        path = key.split("/", 1)[0] + "/" if "/" in key else ""
        own = [v for v in forms if path and v.startswith(path)]
        for group, under in ((own, path), (forms, "")):
            for v in group:
                hit = self._exact(v)
                if hit is not None:
                    return hit
            best = self._nearest(group, forms, under)
            if best is not None:
                return best
        return None

    def _nearest(self, group: list[str], forms: list[str], under: str) -> str | None:
        """The best-ranked entry under ``under`` that normalises to a form in ``group``.

        ``under`` is a provider path (or ``""``, any): another provider's
        ``vercel_ai_gateway/openai/gpt-4o`` also normalises to
        ``openai/gpt-4o``, and is not OpenAI's.
        """
        index = self._fuzzy_index()
        best: tuple[tuple[int, int, int, int, int, str], str] | None = None
        for v in group:
            nearness = forms.index(v)
            for name in index.get(v, ()):
                if not name.lower().startswith(under):
                    continue
                rank = self._rank(name, nearness)
                if best is None or rank < best[0]:
                    best = (rank, name)
        return None if best is None else best[1]

    def suggest(self, model: str, n: int = 3) -> tuple[str, ...]:
        """Names close to ``model`` (by ``difflib``), best first.

        Example:
            >>> "gpt-4o-mini" in registry.suggest("gpt-4o-mni")
            True
        """
        names = {n.lower(): n for n in self._names()}
        close = difflib.get_close_matches(model.strip().lower(), names, n=n)
        return tuple(names[c] for c in close)

    def get(
        self, model: str, *, default: bool = True, window_given: bool = False
    ) -> ModelInfo:
        """Return the ``ModelInfo`` for ``model``.

        Args:
            model: Any name the resolution rules accept.
            default: Whether an unknown model gets ``DEFAULT_MODEL_INFO`` (with
                an ``UnknownModelWarning``) instead of an error.
            window_given: Whether the caller has a window of its own for the
                model (``fit``'s ``limit``, a manager's ``token_limit``), so
                the default's 8,192 tokens are not used: the warning for an
                unknown model then says the window given is, and that only
                the count and the output limit are defaults.

        Raises:
            UnknownModelError: Unknown model and ``default=False``; it carries
                close matches.

        Example:
            >>> registry.get("claude-sonnet-4-5-20250929").context_window
            200000
        """
        return self._get(
            model, default=default, stacklevel=3, window_given=window_given
        )

    def _get(
        self,
        model: str,
        *,
        default: bool,
        stacklevel: int,
        window_given: bool = False,
    ) -> ModelInfo:
        check_str(model, "model", empty=False, takes="a model name")
        check_bool(default, "default")
        check_bool(window_given, "window_given")
        name = self.resolve(model)
        if name is not None:
            return self._first_party(model, self._info(name))
        suggestions = self.suggest(model)
        if not default:
            raise UnknownModelError(model, suggestions)
        hint = f" (did you mean {', '.join(suggestions)}?)" if suggestions else ""
        count = f"counted approximately with {DEFAULT_MODEL_INFO.encoding}"
        if window_given:
            # The window is the caller's: claiming 8,192 would misstate it.
            told = (
                f"the window given is used, but its tokens are {count} and its "
                "output limit is unknown (DEFAULT_MODEL_INFO); register it with "
                "contextwindow.models.register_model() to describe it"
            )
        else:
            told = (
                f"using the default of {DEFAULT_MODEL_INFO.context_window:,} "
                f"tokens of context (DEFAULT_MODEL_INFO), {count}; register it "
                "with contextwindow.models.register_model() to use its real window"
            )
        warnings.warn(
            f"unknown model {model!r}{hint}: {told}",
            UnknownModelWarning,
            stacklevel=stacklevel,
        )
        return replace(DEFAULT_MODEL_INFO, name=model.strip())

    def _first_party(self, asked: str, info: ModelInfo) -> ModelInfo:
        """``info`` as the model maker's own entry, when ``asked`` names the maker's.

        A bare name is the maker's model, and so is one under the maker's own
        provider path (``anthropic/claude-opus-4-1``): both are given as the
        bare name, under the maker's provider.
        """
        if info.name in self._user or tier(info.name, info.provider) == 0:
            return info
        name = asked.strip()
        head, slash, rest = name.partition("/")
        if slash and tier(rest, head.lower()) == 0:
            name = rest  # the maker's own path: as the bare name
        bare = name.lower()
        if bare_name(bare) != bare or "/" in bare:
            return info  # another provider's name: that provider's entry
        maker = maker_of(bare)
        if maker is None:
            return info
        return replace(info, name=name, provider=maker)

    # -- user data ------------------------------------------------------------

    def register(
        self,
        name: str,
        *,
        context_window: int,
        max_output_tokens: int | None = None,
        provider: str = "custom",
        encoding: str | None = None,
        exact: bool = False,
    ) -> ModelInfo:
        """Add or override a model; it wins over the shipped table.

        Args:
            name: The model's name, as it will be looked up.
            context_window: Its window in tokens (positive).
            max_output_tokens: Its output limit, if known (positive, at most
                ``context_window``).
            provider: Who serves it.
            encoding: The tiktoken encoding to count with. ``None`` infers it
                from the name, as for shipped models (``exact`` is then
                inferred too, and the argument is ignored).
            exact: Whether ``encoding`` is the model's real tokenizer.

        Raises:
            ArgumentError: A limit that is not a positive integer, an output
                limit above the window, an empty name, or an encoding that
                is not shipped (a ``ValueError`` or a ``TypeError`` as well).

        Example:
            >>> reg = Registry({})
            >>> reg.register("gpt-4o-proxy", context_window=64_000).encoding
            'o200k_base'
        """
        check_str(name, "name", empty=False)  # before inferring from it
        check_bool(exact, "exact")  # checked even where it is inferred
        if encoding is None:
            encoding, exact = encoding_for(name)
        info = ModelInfo(  # checks every field
            name=name,
            provider=provider,
            context_window=context_window,
            max_output_tokens=max_output_tokens,
            encoding=encoding,
            exact=exact,
        )
        # A reply never outgrows the window it is written in.
        check_int(
            max_output_tokens,
            "max_output_tokens",
            low=1,
            high=context_window,
            none=True,
        )
        self._table()
        with self._lock:
            old = self._user_lower.get(name.lower())
            if old is not None:
                del self._user[old]
            self._user[name] = info
            self._user_lower[name.lower()] = name
            self._aliases.pop(name.lower(), None)
            self._index = None
            self._changed()
        return info

    def _changed(self) -> None:
        """What names resolve to changed: forget what was resolved (locked)."""
        self._generation += 1
        self._cache.clear()

    def alias(self, alias: str, target: str) -> None:
        """Make ``alias`` resolve to what ``target`` resolves to now.

        Raises:
            UnknownModelError: ``target`` does not resolve.

        Example:
            >>> reg = Registry({})
            >>> _ = reg.register("big-model-2", context_window=1_000_000)
            >>> reg.alias("big", "big-model-2")
            >>> reg.resolve("big")
            'big-model-2'
        """
        check_str(alias, "alias", empty=False)
        name = self.resolve(target)
        if name is None:
            raise UnknownModelError(target, self.suggest(target))
        with self._lock:
            self._aliases[alias.strip().lower()] = name
            self._changed()

    # -- listing --------------------------------------------------------------

    def search(self, pattern: str) -> list[ModelInfo]:
        """Models whose name contains ``pattern``, or matches it as a glob.

        Matching ignores case; a pattern with ``*``, ``?`` or ``[`` is a glob
        (``fnmatch``) over the whole name. The model makers' own entries come
        first, then the big clouds', then everyone else's; by name within each.

        Example:
            >>> [m.name for m in registry.search("claude-sonnet-4-5*")][:2]
            ['claude-sonnet-4-5', 'claude-sonnet-4-5-20250929']
        """
        p = pattern.strip().lower()
        if any(c in p for c in "*?["):
            hits = [n for n in self._names() if fnmatch.fnmatchcase(n.lower(), p)]
        else:
            hits = [n for n in self._names() if p in n.lower()]
        infos = [self._info(n) for n in hits]
        infos.sort(key=lambda m: (tier(m.name, m.provider), m.name))
        return infos

    def __iter__(self) -> Iterator[ModelInfo]:
        """Every model, sorted by name (user entries in place of shipped ones)."""
        return iter([self._info(n) for n in sorted(self._names())])

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, model: object) -> bool:
        """Whether ``model`` (a name) resolves."""
        return isinstance(model, str) and self.resolve(model) is not None

    def __repr__(self) -> str:
        state = "not loaded" if self._base is None else f"{len(self)} models"
        return f"<Registry {state}>"


def _checked_entries(
    entries: object,
) -> dict[str, ModelInfo | Mapping[str, Any]]:
    """``Registry``'s ``entries`` as its table, each name and value checked."""
    if not isinstance(entries, Mapping):
        raise ArgumentTypeError(
            "entries", shown(entries), "a mapping of names to ModelInfo, or None"
        )
    table: dict[str, ModelInfo | Mapping[str, Any]] = {}
    for key, info in cast("Mapping[object, object]", entries).items():
        name: str = check_str(
            key, "entries", empty=False, takes="model names (str) as keys"
        )
        if not isinstance(info, ModelInfo):
            raise ArgumentTypeError(f"entries[{name!r}]", shown(info), "a ModelInfo")
        table[name] = info
    return table


registry = Registry()
"""The process-wide registry that ``get_model`` and ``register_model`` use."""


def get_model(
    model: str, *, default: bool = True, window_given: bool = False
) -> ModelInfo:
    """``registry.get(model, default=default, window_given=window_given)``.

    Example:
        >>> get_model("gpt-4o").context_window
        128000
    """
    get = registry._get  # pyright: ignore[reportPrivateUsage]  # same-module helper; stacklevel-aware lookup
    return get(model, default=default, stacklevel=3, window_given=window_given)


def register_model(
    name: str,
    *,
    context_window: int,
    max_output_tokens: int | None = None,
    provider: str = "custom",
    encoding: str | None = None,
    exact: bool = False,
) -> ModelInfo:
    """``registry.register(...)``: add or override a model process-wide."""
    return registry.register(
        name,
        context_window=context_window,
        max_output_tokens=max_output_tokens,
        provider=provider,
        encoding=encoding,
        exact=exact,
    )


def get_tokenizer(model: str | ModelInfo | None) -> Tokenizer:
    """The tokenizer to count ``model``'s tokens with.

    Exact BPE for OpenAI models whose encoding ships; for every other model,
    ``o200k_base`` wrapped as an ``ApproximateTokenizer`` whose ``exact`` is
    ``False``, scaled where the ratio was measured (``APPROXIMATION_SCALES``).
    ``None`` (no model given) gets the approximation too; an unknown name
    warns, as ``get_model`` does. A ``ModelInfo`` is used as it is, without a
    lookup (and so without a second warning).

    Example:
        >>> get_tokenizer("gpt-4o").name
        'o200k_base'
        >>> tok = get_tokenizer("claude-sonnet-4-5")
        >>> (tok.name, tok.exact)
        ('o200k_base x1.17 (approximate for claude-sonnet-4-5)', False)
    """
    from contextwindow.tokens.bpe import BPETokenizer

    if model is None:
        return ApproximateTokenizer(BPETokenizer("o200k_base"), "an unnamed model")
    if isinstance(model, ModelInfo):
        info = model
    else:
        info = registry._get(model, default=True, stacklevel=3)  # pyright: ignore[reportPrivateUsage]  # same-module helper; stacklevel-aware lookup
    bpe = BPETokenizer(info.encoding or "o200k_base")
    if info.exact:
        return bpe
    return ApproximateTokenizer(bpe, info.name, scale=approximation_scale(info))


APPROXIMATION_SCALES: dict[str, float] = {"claude": 1.17}
"""Measured ratio of a model family's real token counts to o200k's, by a word
in the model's name. Claude: 1.17, the Theil-Sen slope of real prompt growth (the API's
``usage``) against o200k counts of the added content over 774 consecutive API
calls of the Claude Code sessions in the shared data (Opus 4.6: 1.16, Haiku
4.5: 1.21); reproduce with ``python scripts/calibrate_claude.py``. Undercounting
is the costly error (the provider rejects the request), so no family without a
measurement is scaled below 1."""


def approximation_scale(info: ModelInfo) -> float:
    """The factor applied to o200k counts for an approximated model (1.0 if none).

    Example:
        >>> approximation_scale(get_model("claude-opus-4-6"))
        1.17
        >>> approximation_scale(get_model("gemini-2.5-pro"))
        1.0
    """
    if not isinstance(info, ModelInfo):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
        raise ArgumentTypeError("info", shown(info), "a ModelInfo")
    name = info.name.lower()
    for family, scale in APPROXIMATION_SCALES.items():
        if family in name:
            return scale
    return 1.0
