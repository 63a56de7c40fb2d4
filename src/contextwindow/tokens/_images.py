"""What an image costs each provider.

Contract: the cost functions are the providers' published rules; unknown sizes
fall back to documented assumptions.
"""

from __future__ import annotations

import math

__all__ = ["anthropic_image_tokens", "openai_image_tokens"]

OPENAI_DEFAULT_SIZE = (1024, 1024)
"""Assumed size of an image whose size is unknown (an http URL): 765 tokens."""


def openai_image_tokens(
    width: int | None, height: int | None, detail: str | None
) -> int:
    """OpenAI's tile rule (GPT-4o, GPT-4.1, o-series) for one image.

    ``low`` detail costs 85. Otherwise (``high``, ``auto`` or unset, counted as
    high so the estimate never undershoots) the image is scaled to fit 2048x2048,
    then down so its shortest side is at most 768, and costs 170 per 512 px tile
    plus 85. An unknown size is taken as 1024x1024.

    Example:
        >>> openai_image_tokens(512, 512, "high"), openai_image_tokens(1024, 1024, None)
        (255, 765)
        >>> openai_image_tokens(2048, 4096, "auto"), openai_image_tokens(99, 99, "low")
        (1105, 85)
    """
    if detail == "low":
        return 85
    if not width or not height:
        width, height = OPENAI_DEFAULT_SIZE
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        scale = 2048 / max(w, h)
        w, h = w * scale, h * scale
    if min(w, h) > 768:
        scale = 768 / min(w, h)
        w, h = w * scale, h * scale
    return 170 * math.ceil(w / 512) * math.ceil(h / 512) + 85


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
