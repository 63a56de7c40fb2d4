"""Model registry: context windows, output limits and tokenizers by model name.

The table ships with the package (``data/models.json``, trimmed from litellm's
model map, MIT; see ``data/NOTICE``) and is read lazily on first use;
``scripts/refresh_models.py`` regenerates it.

Example:
    >>> get_model("gpt-4o").context_window
    128000
"""

from __future__ import annotations

from contextwindow.models._registry import (
    APPROXIMATION_SCALES,
    DEFAULT_MODEL_INFO,
    ModelInfo,
    Registry,
    approximation_scale,
    get_model,
    get_tokenizer,
    register_model,
    registry,
)

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
