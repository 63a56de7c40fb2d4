"""Windows configured by model name, matched as the registry resolves names.

Contract:

- ``Windows(windows).get(model)`` is the window ``windows`` gives the model
  ``model``: under its exact string first; else under the name ``model``
  resolves to with the configured names as a registry of their own (case
  and surrounding spaces, a provider's prefix, a date or ``-latest``, dots
  or dashes in a version: ``gpt-4o`` names ``GPT-4o``, ``openai/gpt-4o``
  and ``gpt-4o-2024-08-06``); else under a name that resolves, in this
  project's registry, to the model ``model`` resolves to (an alias);
  ``None`` when none does.
- What is matched is the proxy's ``--model-window`` and the LiteLLM
  adapter's ``windows=``: one rule for both, so a name configured for one
  means the same model in the other.
- The names and windows are taken as checked (each caller checks them
  where they are given, naming its own argument). The tables behind the
  second and third steps are made on first use, once; ``get`` is
  thread-safe.

Example:
    >>> windows = Windows({"gpt-4o": 64_000, "my-deployment": 32_000})
    >>> windows.get("OpenAI/GPT-4o-2024-08-06"), windows.get("my-deployment")
    (64000, 32000)
    >>> windows.get("gpt-4o-mini") is None
    True
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from contextwindow.models import ModelInfo, Registry, registry

__all__ = ["Windows"]


class Windows:
    """Configured windows by model name (see the module's contract).

    Args:
        windows: Model names to windows, already checked.
        models: The registry whose models the third step compares
            (default: this project's).
    """

    def __init__(
        self, windows: Mapping[str, int], models: Registry | None = None
    ) -> None:
        self._windows = dict(windows)
        self._registry = registry if models is None else models
        self._lock = threading.Lock()
        self._names: Registry | None = None
        """The configured names as a registry of their own (made on first use)."""
        self._models: dict[str, int] | None = None
        """The windows by the registry's canonical name (made on first use)."""

    def __bool__(self) -> bool:
        """Whether any window is configured."""
        return bool(self._windows)

    def get(self, model: str) -> int | None:
        """The window configured for ``model``; ``None`` when none is.

        The exact string first; then as the registry resolves names, with
        the configured names as its table; then by the registry's canonical
        name, when ``model`` and a configured name resolve alike.
        """
        if not self._windows:
            return None
        got = self._windows.get(model)
        if got is not None:
            return got
        hit = self._own().resolve(model)
        if hit is not None:
            return self._windows[hit]
        canonical = self._registry.resolve(model)
        return None if canonical is None else self._canonical().get(canonical)

    def _own(self) -> Registry:
        with self._lock:
            if self._names is None:
                self._names = Registry(
                    {
                        name: ModelInfo(
                            name=name,
                            provider="custom",
                            context_window=size,
                            max_output_tokens=None,
                            encoding=None,
                            exact=False,
                        )
                        for name, size in self._windows.items()
                    }
                )
            return self._names

    def _canonical(self) -> dict[str, int]:
        with self._lock:
            if self._models is None:
                found: dict[str, int] = {}
                for name, size in self._windows.items():
                    canonical = self._registry.resolve(name)
                    if canonical is not None:
                        found.setdefault(canonical, size)  # the first one given
                self._models = found
            return self._models
