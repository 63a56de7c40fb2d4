"""What an image costs each provider, and each OpenAI model.

Contract: the cost functions are the providers' published rules; unknown sizes
fall back to documented assumptions. OpenAI counts images by two rules
(its vision guide, "Calculating costs"): 512 px tiles (GPT-4o, GPT-4.1, the
o-series but o4-mini, and most models) and 32 px patches (gpt-4.1-mini,
gpt-4.1-nano, o4-mini, gpt-5-mini, gpt-5-nano). ``openai_image_rule(model)``
gives the rule of a model by its name; without a model, the tile rule.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import TypeVar

__all__ = [
    "OPENAI_PATCH_MULTIPLIERS",
    "OPENAI_TILE_TOKENS",
    "anthropic_image_tokens",
    "openai_image_rule",
    "openai_image_tokens",
    "openai_patch_tokens",
]

OPENAI_DEFAULT_SIZE = (1024, 1024)
"""Assumed size of an image whose size is unknown (an http URL): 765 tokens
by the tile rule, the cost of a photo of any common size (its shortest side
is scaled to 768 px)."""

OPENAI_TILE_TOKENS: dict[str, tuple[int, int]] = {"gpt-4o-mini": (2833, 5667)}
"""The models whose tiles cost other than 85 base + 170 a tile: OpenAI's
vision guide (GPT-4o mini's images cost what GPT-4o's do, at its lower
price per token). Models it gives lower figures (o1, o3: 75 + 150; gpt-5:
70 + 140) keep 85 + 170, which leans high."""

OPENAI_PATCH_MULTIPLIERS: dict[str, float] = {
    "gpt-4.1-mini": 1.62,
    "gpt-4.1-nano": 2.46,
    "o4-mini": 1.72,
    "gpt-5-mini": 1.62,
    "gpt-5-nano": 2.46,
}
"""The models OpenAI's vision guide counts by 32 px patches, and the tokens
a patch costs each. For gpt-5-mini and gpt-5-nano these are the guide's
figures; usage measured on the API shows lower ones (1.2, 1.5), so they lean
high."""

OPENAI_MAX_PATCHES = 1536
"""The most patches an image costs: a larger one is scaled down to fit."""

_PATCH = 32
_V = TypeVar("_V")


def openai_image_tokens(
    width: int | None,
    height: int | None,
    detail: str | None,
    *,
    base: int = 85,
    tile: int = 170,
) -> int:
    """OpenAI's tile rule (GPT-4o, GPT-4.1, the o-series but o4-mini) for one image.

    ``low`` detail costs ``base``. Otherwise (``high``, ``auto`` or unset,
    counted as high so the estimate never undershoots) the image is scaled to
    fit 2048x2048, then down so its shortest side is at most 768, and costs
    ``tile`` per 512 px tile plus ``base`` (85 and 170 unless a model's
    differ: ``OPENAI_TILE_TOKENS``). An unknown size is taken as 1024x1024.
    The patch models count otherwise: ``openai_patch_tokens``.

    Example:
        >>> openai_image_tokens(512, 512, "high"), openai_image_tokens(1024, 1024, None)
        (255, 765)
        >>> openai_image_tokens(2048, 4096, "auto"), openai_image_tokens(99, 99, "low")
        (1105, 85)
    """
    if detail == "low":
        return base
    if not width or not height:
        width, height = OPENAI_DEFAULT_SIZE
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        scale = 2048 / max(w, h)
        w, h = w * scale, h * scale
    if min(w, h) > 768:
        scale = 768 / min(w, h)
        w, h = w * scale, h * scale
    return tile * math.ceil(w / 512) * math.ceil(h / 512) + base


def openai_patch_tokens(
    width: int | None, height: int | None, multiplier: float
) -> int:
    """OpenAI's patch rule (gpt-4.1-mini, gpt-4.1-nano, o4-mini...) for one image.

    The image is covered by 32x32 px patches; past ``OPENAI_MAX_PATCHES`` it
    is scaled down (keeping its aspect ratio, then to a whole number of
    patches on its tighter side) until it fits. The patches times the
    model's ``multiplier`` (``OPENAI_PATCH_MULTIPLIERS``), rounded up, is its
    cost. ``detail`` does not change it. An unknown size costs the most
    patches: a photo of any common size reaches them.

    Example:
        >>> openai_patch_tokens(1800, 2400, 1.62)  # the guide's: 1452 patches
        2353
        >>> openai_patch_tokens(1024, 1024, 1.0), openai_patch_tokens(None, None, 1.0)
        (1024, 1536)
    """
    if not width or not height:
        return math.ceil(OPENAI_MAX_PATCHES * multiplier)
    w, h = float(width), float(height)
    patches = _cover(w / _PATCH) * _cover(h / _PATCH)
    if patches > OPENAI_MAX_PATCHES:
        scale = math.sqrt(OPENAI_MAX_PATCHES * _PATCH * _PATCH / (w * h))
        # Down to a whole number of patches on the side that needs it most;
        # a side under one patch (an extreme aspect ratio) is left as it is.
        sides = [x / _PATCH for x in (w * scale, h * scale) if x >= _PATCH]
        scale *= min(math.floor(x) / x for x in sides)
        cols = max(1, _cover(w * scale / _PATCH))
        rows = max(1, _cover(h * scale / _PATCH))
        patches = min(OPENAI_MAX_PATCHES, cols * rows)
    return math.ceil(patches * multiplier)


def _cover(patches: float) -> int:
    """Whole patches that cover ``patches``.

    A float a rounding error above a whole number needs only that number.
    """
    return math.ceil(patches - 1e-9)


ImageRule = Callable[[int | None, int | None, str | None], int]
"""An OpenAI model's cost of one image: ``(width, height, detail) -> tokens``."""


def openai_image_rule(model: str | None) -> ImageRule:
    """How OpenAI counts ``model``'s images (its name; the tile rule for ``None``).

    The name is read without a provider path (``openai/``, ``azure/``), a
    fine-tune's ``ft:`` or a suffix after the base name (a date, a
    variant): ``gpt-4.1-mini-2025-04-14`` counts as ``gpt-4.1-mini``.

    Example:
        >>> openai_image_rule("openai/gpt-4.1-mini-2025-04-14")(1024, 1024, "low")
        1659
        >>> openai_image_rule("gpt-4o")(1024, 1024, "high")
        765
    """
    name = _bare(model) if model else ""
    multiplier = _by_name(name, OPENAI_PATCH_MULTIPLIERS)
    if multiplier is not None:
        return partial(_patch_rule, multiplier=multiplier)
    tiles = _by_name(name, OPENAI_TILE_TOKENS)
    if tiles is not None:
        return partial(openai_image_tokens, base=tiles[0], tile=tiles[1])
    return openai_image_tokens


def _patch_rule(
    width: int | None, height: int | None, detail: str | None, *, multiplier: float
) -> int:
    del detail  # the patch models read every image at full detail
    return openai_patch_tokens(width, height, multiplier)


def _bare(model: str) -> str:
    name = model.strip().lower()
    name = name.removeprefix("ft:")
    return name.rsplit("/", 1)[-1]


def _by_name(name: str, table: dict[str, _V]) -> _V | None:
    """The entry for ``name`` or for the longest base name it extends (``-...``)."""
    found = table.get(name)
    if found is not None:
        return found
    best = ""
    for key in table:
        if name.startswith(key + "-") and len(key) > len(best):
            best = key
    return table[best] if best else None


ANTHROPIC_MAX_IMAGE_TOKENS = 1600
"""Anthropic resizes images above about 1,600 tokens; also the cost assumed for
an image whose size is unknown."""


def anthropic_image_tokens(width: int | None, height: int | None) -> int:
    """Anthropic's rule: ``width * height / 750``, after the long edge is cut to 1568.

    Example:
        >>> [anthropic_image_tokens(200, 200), anthropic_image_tokens(1000, 1000)]
        [54, 1334]
        >>> [anthropic_image_tokens(4000, 3000), anthropic_image_tokens(None, None)]
        [1600, 1600]
    """
    if not width or not height:
        return ANTHROPIC_MAX_IMAGE_TOKENS
    w, h = float(width), float(height)
    if max(w, h) > 1568:
        scale = 1568 / max(w, h)
        w, h = w * scale, h * scale
    return min(ANTHROPIC_MAX_IMAGE_TOKENS, math.ceil(w * h / 750))
