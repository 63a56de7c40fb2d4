"""LiteLLM: ``completion`` / ``acompletion`` that fit each model they try.

Contract:

- ``completion(model=..., messages=..., **kwargs)`` takes LiteLLM's
  arguments, fits ``messages`` into ``model``'s window, less the reply's
  room (``max_tokens`` / ``max_completion_tokens`` when given, else the
  model's output limit, at most a quarter of the window), and calls
  ``litellm.completion`` with the fitted messages. Every schema the request
  sends is counted in the budget: ``tools``, the legacy ``functions``, and a
  ``response_format`` schema (see ``_response_schema``). The fitted request
  is valid for the model's provider (``PROVIDER_RULES``), in the OpenAI
  shape LiteLLM takes.
- ``fallbacks=[...]`` (names, or dicts of a ``model`` and its own
  arguments, as LiteLLM takes them) are tried here, in order, after a failed
  call, and each is fitted to its own window: a fallback with a smaller
  window gets a request that fits it, not the one that fit the first model.
  A model whose request cannot fit (``BudgetError``) is skipped as a failure
  is; when every model failed, the last error is raised. Every fallback is
  checked before the first call; a bad one's error shows a dict's keys,
  never its values (they hold an ``api_key``).
- A model's window is, in order: the one ``windows`` gives it, this
  project's registry (the name with or without its ``provider/`` prefix),
  LiteLLM's ``get_model_info``; else ``ContextWindowError`` names the model.
  A name of ``windows`` gives the model its window when it is the model's
  string, else when it names it as the registry resolves names (case, a
  provider's prefix, a date or ``-latest``: ``gpt-4o`` names ``GPT-4o``,
  ``openai/gpt-4o`` and ``gpt-4o-2024-08-06``), else when both resolve to
  one model of the registry (an alias): the rule of the proxy's
  ``--model-window`` (``contextwindow._windows``).
- Each model's reported usage (``response.usage.prompt_tokens``) feeds a
  ``Calibration`` of that model (``calibration(model)``), and the next
  request to it is fitted to the calibrated budget (never above the window
  by this project's count).
  A mocked call (``mock_response=``) teaches it nothing: its usage is
  LiteLLM's estimate, not the model's.
- ``acompletion`` is the same with ``litellm.acompletion``.
- LiteLLM is imported at the first call, so importing this module is cheap.

Example:
    >>> from contextwindow.integrations.litellm import FittingCompletion
    >>> calls = FittingCompletion(windows={"openai/local": 300})
    >>> calls.window("openai/local"), calls.window("openai/gpt-4o")
    (300, 128000)
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Generator, Iterable, Mapping
from functools import lru_cache
from typing import Any, cast

from contextwindow._args import as_strategy, as_tokenizer, check_int, shown
from contextwindow._windows import Windows
from contextwindow.errors import (
    ArgumentTypeError,
    ContextWindowError,
    InvalidMessageError,
    UnknownModelError,
)
from contextwindow.fitting import fit, reply_reserve
from contextwindow.formats import coerce_tools
from contextwindow.messages import Provider, ToolSpec
from contextwindow.models import ModelInfo, get_model, get_tokenizer
from contextwindow.strategies.base import Fitted, Strategy
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.calibration import Calibration

__all__ = ["PROVIDER_RULES", "FittingCompletion", "acompletion", "completion"]

_REPLY_KEYS = ("max_completion_tokens", "max_tokens")
_FALLBACK = "a model name or a dict with 'model'"

PROVIDER_RULES: Mapping[str, Provider] = {
    "anthropic": "anthropic",
    "bedrock": "anthropic",
    "gemini": "anthropic",
    "vertex_ai": "anthropic",
    "vertex_ai_beta": "anthropic",
}
"""Whose rules (``contextwindow.validity``) a LiteLLM provider's requests follow.

The provider is LiteLLM's name for it: ``custom_llm_provider=`` when given,
else what ``litellm.get_llm_provider`` reads from the model name, else the
name's ``provider/`` prefix. Those listed want the first turn after the system
prompt to be the user's: Anthropic; Bedrock's Converse API, for every model it
serves; Gemini, through Google AI Studio and Vertex AI. Each also wants roles
to alternate, and LiteLLM merges consecutive turns of one role for them, as
the Anthropic rules here assume. Any other provider takes OpenAI's rules, and
so does a model whose provider is not known, unless it is a Claude model
(``claude`` in its name), which takes Anthropic's wherever it is served."""


def _shown_fallback(extra: object) -> str:
    """A bad fallback as an error shows it: a dict's keys, else only its type.

    A fallback dict carries its own arguments, ``api_key`` among them: no
    value of it is shown.

    Example:
        >>> _shown_fallback({"modle": "gpt-4o", "api_key": "sk-test-0123456789"})
        "a dict with keys ['modle', 'api_key'] (values not shown)"
    """
    if isinstance(extra, Mapping):
        given = cast("Mapping[object, object]", extra)
        keys = [str(k)[:40] for k in list(given)[:10]]
        return f"a dict with keys {keys} (values not shown)"
    return shown(extra, secret=True)


def _fallback_call(extra: object) -> Mapping[str, Any] | None:
    """``extra`` as a fallback dict (one with a ``model`` name), else ``None``."""
    if isinstance(extra, Mapping):
        given = cast("Mapping[str, Any]", extra)
        if isinstance(given.get("model"), str):
            return given
    return None


class FittingCompletion:
    """``litellm.completion`` / ``acompletion`` fitted to each model's window.

    Args:
        windows: Windows of models this project's registry and LiteLLM's do
            not know (or to override them), by the name given to LiteLLM
            or one naming the same model as the registry resolves names
            (``gpt-4o`` for ``openai/gpt-4o-2024-08-06``; the exact name
            first): each an int of at least 1.
        strategy: How to make room (default: the one ``fit`` uses).
        tokenizer: Counts text (default: each model's).

    Raises:
        ArgumentError: ``windows`` is not a mapping of model names to ints of
            at least 1 (a bad value is named ``windows['model']``), or a bad
            ``strategy`` or ``tokenizer``.

    Example:
        >>> calls = FittingCompletion(windows={"openai/local": 2_000})
        >>> calls.calibration("openai/local").ratio
        1.0
    """

    def __init__(
        self,
        *,
        windows: Mapping[str, int] | None = None,
        strategy: Strategy | str | None = None,
        tokenizer: Tokenizer | str | None = None,
    ) -> None:
        if windows is not None and not isinstance(windows, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
            raise ArgumentTypeError(
                "windows", shown(windows), "a mapping of model to int"
            )
        checked: dict[str, int] = {}
        for name, size in (windows or {}).items():
            if not isinstance(name, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
                raise ArgumentTypeError(
                    "windows", f"a key {shown(name)}", "a mapping of model name to int"
                )
            checked[name] = check_int(size, f"windows[{name!r}]", low=1)
        self._windows = Windows(checked)
        self._strategy = None if strategy is None else as_strategy(strategy)
        self._tokenizer = None if tokenizer is None else as_tokenizer(tokenizer)
        self._calibrations: dict[str, Calibration] = {}

    def calibration(self, model: str) -> Calibration:
        """What was learnt of ``model``'s reported usage."""
        return self._calibrations.setdefault(model, Calibration())

    def window(self, model: str) -> int:
        """The window of ``model`` (see the module's contract)."""
        return self._model(model)[0]

    def completion(self, *given: Any, **kwargs: Any) -> Any:
        """``litellm.completion(...)``, fitted to each model tried.

        ``model`` and ``messages`` may come first by position, as LiteLLM
        takes them.
        """
        kwargs = _named(given, kwargs, "completion")
        litellm = _litellm()
        failure: BaseException | None = None
        for model, call in self._attempts(kwargs):
            try:
                fitted, args = self._fitted(model, call)
                response = litellm.completion(**args)
            except Exception as exc:
                failure = exc
                continue
            self._observe(model, call, fitted, response)
            return response
        assert failure is not None
        raise failure

    async def acompletion(self, *given: Any, **kwargs: Any) -> Any:
        """``litellm.acompletion(...)``, fitted to each model tried."""
        kwargs = _named(given, kwargs, "acompletion")
        litellm = _litellm()
        failure: BaseException | None = None
        for model, call in self._attempts(kwargs):
            try:
                fitted, args = self._fitted(model, call)
                response = await litellm.acompletion(**args)
            except Exception as exc:
                failure = exc
                continue
            self._observe(model, call, fitted, response)
            return response
        assert failure is not None
        raise failure

    # -- internals --------------------------------------------------------

    def _attempts(self, kwargs: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        base = dict(kwargs)
        fallbacks: Iterable[object] = base.pop("fallbacks", None) or ()
        model = base.get("model")
        if not isinstance(model, str) or not model:
            raise ArgumentTypeError("model", shown(model), "a model name")
        if "messages" not in base:
            raise ContextWindowError("completion needs messages=")
        # Every fallback is checked before the first call is made.
        attempts = [(model, base)]
        for k, extra in enumerate(fallbacks):
            named = _fallback_call(extra)
            if isinstance(extra, str):
                attempts.append((extra, {**base, "model": extra}))
            elif named is not None:
                attempts.append((named["model"], {**base, **named}))
            else:
                raise ArgumentTypeError(
                    f"fallbacks[{k}]", _shown_fallback(extra), _FALLBACK
                )
        return attempts

    def _model(self, model: str) -> tuple[int, ModelInfo | None, int | None]:
        """The window, the registry's entry, and the output limit of ``model``."""
        known = self._windows.get(model)
        for name in (model, model.split("/", 1)[-1]):
            try:
                info = get_model(name, default=False)
            except UnknownModelError:
                continue
            size = known if known is not None else info.context_window
            return size, info, info.max_output_tokens
        if known is not None:
            return known, None, None
        found: Mapping[str, Any] | None
        litellm = _litellm()
        try:
            with _quiet(litellm):
                found = litellm.get_model_info(model)
        except Exception:
            found = None
        window = (found or {}).get("max_input_tokens")
        if not isinstance(window, int) or window <= 0:
            raise ContextWindowError(
                f"the window of {model!r} is not known; pass windows={{{model!r}: ...}}"
            )
        return window, None, (found or {}).get("max_output_tokens")

    def _fitted(
        self, model: str, call: dict[str, Any]
    ) -> tuple[Fitted, dict[str, Any]]:
        window, info, output = self._model(model)
        reply = next(
            (call[k] for k in _REPLY_KEYS if isinstance(call.get(k), int)), None
        )
        if reply is None:
            reply = min(output, window // 4) if output else reply_reserve(info, window)
        room = max(0, window - reply)
        # Calibrated down only: a report below the count (a cached or a mock
        # reply) must not let the request grow past the window by our count.
        budget = min(room, self.calibration(model).limit(room))
        tokenizer = self._tokenizer or get_tokenizer(info)
        fitted = fit(
            call["messages"],
            limit=budget,
            reserve=0,
            strategy=self._strategy,
            provider=_rules(model, call.get("custom_llm_provider")),
            tokenizer=tokenizer,
            tools=_schemas(call),
        )
        out = fitted.as_input()
        if isinstance(out, Mapping):  # an Anthropic body: LiteLLM takes OpenAI messages
            from contextwindow.formats import to_openai

            out = to_openai(fitted.messages)
        return fitted, {**call, "messages": out}

    def _observe(
        self, model: str, call: Mapping[str, Any], fitted: Fitted, response: Any
    ) -> None:
        if call.get("mock_response") is not None:
            return  # LiteLLM's own estimate, not the model's: nothing to learn
        # A streamed response carries no usage yet.
        with contextlib.suppress(ContextWindowError):
            self.calibration(model).observe(fitted.report.tokens_after, response)


def _schemas(call: Mapping[str, Any]) -> Iterable[Any]:
    """Every schema the request sends, as the tools ``fit`` counts.

    ``tools`` as given (``fit`` names a bad one ``tools[i]``), then the
    legacy ``functions`` (each as the function of a tool, which is how the
    providers that still take them render them) and the ``response_format``
    schema.

    Example:
        >>> schema = {"type": "object", "properties": {"q": {"type": "string"}}}
        >>> [t.name for t in _schemas({
        ...     "functions": [{"name": "search", "parameters": schema}],
        ...     "response_format": {
        ...         "type": "json_schema",
        ...         "json_schema": {"name": "Answer", "schema": schema},
        ...     },
        ... })]
        ['search', 'Answer']
    """
    given = call.get("tools") or ()
    functions = call.get("functions")
    schema = _response_schema(call.get("response_format"))
    if not functions and schema is None:
        return given  # as given: ``fit`` keeps the tools it read last
    out: list[Any] = (
        [*given] if isinstance(given, list | tuple) else [*coerce_tools(given)]
    )
    if functions:
        out.extend(coerce_tools(functions, name="functions"))
    if schema is not None:
        out.append(schema)
    return out


def _response_schema(fmt: object) -> ToolSpec | None:
    """The schema a ``response_format`` sends, as the tool it is counted as.

    A ``json_schema`` format (``{"type": "json_schema", "json_schema":
    {"name", "schema", ...}}``), Gemini's ``response_schema`` in a
    ``json_object`` format, or a pydantic model class (read as LiteLLM reads
    it). LiteLLM sends the schema to Anthropic as a tool of that name whose
    input is the schema; OpenAI and Gemini take it in the request beside the
    messages and publish no rendering of it, so its cost there is
    approximated as that same tool's. ``{"type": "json_object"}`` alone
    carries no schema: nothing is counted.

    Raises:
        InvalidMessageError: The schema is not a JSON object, or not one
            that counting can read (named ``response_format...``).

    Example:
        >>> _response_schema({"type": "json_schema", "json_schema": {
        ...     "name": "Answer", "schema": {"type": "object"}}})
        ToolSpec(name='Answer', description='', parameters={'type': 'object'})
        >>> _response_schema({"type": "json_object"}) is None
        True
    """
    if isinstance(fmt, type) and hasattr(fmt, "model_json_schema"):
        fmt = _litellm().utils.type_to_response_format_param(fmt)
    if not isinstance(fmt, Mapping):
        return None
    spec = cast("Mapping[str, Any]", fmt)
    block = spec.get("json_schema")
    if isinstance(block, Mapping):
        where = "response_format.json_schema"
        named = cast("Mapping[str, Any]", block)
        schema, key = named.get("schema"), "schema"
    elif spec.get("response_schema") is not None:
        where, named = "response_format", spec
        schema, key = spec.get("response_schema"), "response_schema"
    else:
        return None
    if schema is None:
        return None
    name = named.get("name")
    tool = {
        "type": "function",
        "name": name if isinstance(name, str) and name else "response_format",
        "description": named.get("description") or "",
        "parameters": schema,
    }
    try:
        (found,) = coerce_tools([tool])
    except InvalidMessageError as exc:  # named as the caller wrote it
        path = exc.path.replace("tools[0].parameters", f"{where}.{key}", 1)
        path = path.replace("tools[0]", where, 1)
        raise InvalidMessageError(path, exc.reason) from None
    return found


@lru_cache(maxsize=256)
def _litellm_provider(model: str) -> str:
    """LiteLLM's name for the provider serving ``model``, else its prefix."""
    litellm = _litellm()
    try:
        with _quiet(litellm):
            found = litellm.get_llm_provider(model)[1]
    except Exception:  # a model LiteLLM cannot place: its prefix, if any
        found = None
    if isinstance(found, str) and found:
        return found
    return model.split("/", 1)[0] if "/" in model else ""


def _rules(model: str, given: object = None) -> Provider:
    """Whose rules a request to ``model`` follows (see ``PROVIDER_RULES``).

    Example:
        >>> [_rules(m) for m in ("gpt-4o", "bedrock/meta.llama3-8b-instruct-v1:0",
        ...                      "openrouter/anthropic/claude-sonnet-4")]
        ['openai', 'anthropic', 'anthropic']
        >>> _rules("my-llama", given="bedrock")
        'anthropic'
    """
    if "claude" in model.lower():
        return "anthropic"
    name = given if isinstance(given, str) and given else _litellm_provider(model)
    return PROVIDER_RULES.get(name, "openai")


_QUIET = threading.Lock()


@contextlib.contextmanager
def _quiet(litellm: Any) -> Generator[None, None, None]:
    """LiteLLM's debug banner ("Provider List: ...") not printed meanwhile.

    A lookup of a model LiteLLM does not know prints it to stdout before it
    raises, which the caller handles. The lock keeps two threads from
    restoring each other's setting.
    """
    with _QUIET:
        before = litellm.suppress_debug_info
        litellm.suppress_debug_info = True
        try:
            yield
        finally:
            litellm.suppress_debug_info = before


def _litellm() -> Any:
    # LiteLLM fetches its model map from the network at import unless told not to.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError as exc:  # pragma: no cover -- the extra is installed in tests
        raise ImportError(
            "contextwindow.integrations.litellm needs LiteLLM: "
            "pip install 'contextwindow[litellm]'"
        ) from exc
    return litellm


_DEFAULT = FittingCompletion()


def _named(args: tuple[Any, ...], kwargs: dict[str, Any], call: str) -> dict[str, Any]:
    """``kwargs`` with ``model`` and ``messages`` given by position put in.

    Example:
        >>> _named(("gpt-4o", []), {"stream": True}, "completion")
        {'stream': True, 'model': 'gpt-4o', 'messages': []}
    """
    if len(args) > 2:
        raise ArgumentTypeError(
            "args",
            f"{len(args)} positional arguments",
            "model and messages at most by position, the rest by keyword",
        )
    out = dict(kwargs)
    for name, value in zip(("model", "messages"), args, strict=False):
        if name in out:
            raise ArgumentTypeError(
                name, "a value by position and by keyword", f"one {call}() {name}"
            )
        out[name] = value
    return out


def completion(*args: Any, **kwargs: Any) -> Any:
    """``litellm.completion``, fitted to the model's window and to each fallback's.

    Example:
        >>> from contextwindow.integrations.litellm import completion
        >>> history = [{"role": "user", "content": "word " * 5_000},
        ...            {"role": "assistant", "content": "ok"},
        ...            {"role": "user", "content": "Summarise."}]
        >>> r = completion(model="gpt-3.5-turbo", messages=history,
        ...                mock_response="Done.")  # LiteLLM's offline reply
        >>> r.choices[0].message.content
        'Done.'
    """
    return _DEFAULT.completion(*args, **kwargs)


async def acompletion(*args: Any, **kwargs: Any) -> Any:
    """``litellm.acompletion``, fitted as ``completion`` is."""
    return await _DEFAULT.acompletion(*args, **kwargs)
