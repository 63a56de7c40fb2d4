"""LiteLLM: ``completion`` / ``acompletion`` that fit each model they try.

Contract:

- ``completion(model=..., messages=..., **kwargs)`` takes LiteLLM's
  arguments, fits ``messages`` (and ``tools``) into ``model``'s window, less
  the reply's room (``max_tokens`` / ``max_completion_tokens`` when given,
  else the model's output limit, at most a quarter of the window), and calls
  ``litellm.completion`` with the fitted messages. The fitted request is
  valid for the model's provider (Claude's rules for ``anthropic/`` and
  Claude models), in the OpenAI shape LiteLLM takes.
- ``fallbacks=[...]`` (names, or dicts of a ``model`` and its own
  arguments, as LiteLLM takes them) are tried here, in order, after a failed
  call, and each is fitted to its own window: a fallback with a smaller
  window gets a request that fits it, not the one that fit the first model.
  A model whose request cannot fit (``BudgetError``) is skipped as a failure
  is; when every model failed, the last error is raised. Every fallback is
  checked before the first call; a bad one's error shows a dict's keys,
  never its values (they hold an ``api_key``).
- A model's window is, in order: ``windows[model]``, this project's
  registry (the name with or without its ``provider/`` prefix), LiteLLM's
  ``get_model_info``; else ``ContextWindowError`` names the model.
- Each model's reported usage (``response.usage.prompt_tokens``) feeds a
  ``Calibration`` of that model (``calibration(model)``), and the next
  request to it is fitted to the calibrated budget (never above the window
  by this project's count).
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
from collections.abc import Iterable, Mapping
from typing import Any, cast

from contextwindow._args import as_strategy, as_tokenizer, shown
from contextwindow.errors import (
    ArgumentTypeError,
    ContextWindowError,
    UnknownModelError,
)
from contextwindow.fitting import fit, reply_reserve
from contextwindow.messages import Provider
from contextwindow.models import ModelInfo, get_model, get_tokenizer
from contextwindow.strategies.base import Fitted, Strategy
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.calibration import Calibration

__all__ = ["FittingCompletion", "acompletion", "completion"]

_REPLY_KEYS = ("max_completion_tokens", "max_tokens")
_FALLBACK = "a model name or a dict with 'model'"


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
            not know (or to override them), by the name given to LiteLLM.
        strategy: How to make room (default: the one ``fit`` uses).
        tokenizer: Counts text (default: each model's).

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
        self._windows = dict(windows or {})
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
            self._observe(model, fitted, response)
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
            self._observe(model, fitted, response)
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
            return known or info.context_window, info, info.max_output_tokens
        if known is not None:
            return known, None, None
        found: Mapping[str, Any] | None
        try:
            found = _litellm().get_model_info(model)
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
        provider: Provider = (
            "anthropic"
            if "claude" in model.lower() or model.startswith("anthropic/")
            else "openai"
        )
        fitted = fit(
            call["messages"],
            limit=budget,
            reserve=0,
            strategy=self._strategy,
            provider=provider,
            tokenizer=tokenizer,
            tools=call.get("tools") or (),
        )
        out = fitted.as_input()
        if isinstance(out, Mapping):  # an Anthropic body: LiteLLM takes OpenAI messages
            from contextwindow.formats import to_openai

            out = to_openai(fitted.messages)
        return fitted, {**call, "messages": out}

    def _observe(self, model: str, fitted: Fitted, response: Any) -> None:
        # A streamed response carries no usage yet.
        with contextlib.suppress(ContextWindowError):
            self.calibration(model).observe(fitted.report.tokens_after, response)


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
