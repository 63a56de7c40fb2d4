"""OpenAI prices images per model: 512 px tiles, or 32 px patches times a rate."""

from __future__ import annotations

import base64
import struct

import pytest

from contextwindow import count_messages
from contextwindow.errors import ArgumentTypeError, ArgumentValueError
from contextwindow.messages import Image, Message, Opaque
from contextwindow.models import get_model
from contextwindow.tokens import BPETokenizer, TokenCounter
from contextwindow.tokens._images import (
    OPENAI_PATCH_MULTIPLIERS,
    openai_image_rule,
    openai_image_tokens,
    openai_patch_tokens,
)

O200K = BPETokenizer("o200k_base")


def _image(width: int, height: int, detail: str | None = "high") -> Image:
    return Image("https://example.com/a.png", detail=detail, width=width, height=height)


def _png_uri(width: int, height: int) -> str:
    head = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR"
    head += struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0) + b"\0" * 4
    return "data:image/png;base64," + base64.b64encode(head).decode()


class TestPatchRule:
    def test_the_guides_examples(self) -> None:
        """1024x1024 is 1,024 patches; 1800x2400 is scaled to 1,452 (the guide's)."""
        assert openai_patch_tokens(1024, 1024, 1.0) == 1024
        assert openai_patch_tokens(1800, 2400, 1.0) == 1452
        assert openai_patch_tokens(1800, 2400, 1.62) == 2353  # 2352.24, up

    def test_small_images_cost_few_patches(self) -> None:
        """A 128x64 image is 8 patches (the tile rule charges it 255)."""
        assert openai_patch_tokens(128, 64, 1.72) == 14
        assert openai_patch_tokens(1, 1, 1.0) == 1

    @pytest.mark.parametrize(
        ("width", "height"),
        [(4000, 3000), (100_000, 1), (1, 100_000), (4_000_000_000, 4_000_000_000)],
    )
    def test_never_past_the_cap(self, width: int, height: int) -> None:
        """However large or narrow the image, at most 1,536 patches, at least 1."""
        assert 1 <= openai_patch_tokens(width, height, 1.0) <= 1536

    def test_unknown_size_costs_the_cap(self) -> None:
        """An image of unknown size (an http URL) costs the most patches."""
        assert openai_patch_tokens(None, None, 2.46) == 3779  # 1536 x 2.46, up


class TestRuleByName:
    @pytest.mark.parametrize(
        ("model", "multiplier"),
        [
            ("gpt-4.1-mini", 1.62),
            ("gpt-4.1-nano", 2.46),
            ("o4-mini", 1.72),
            ("gpt-5-mini", 1.62),
            ("gpt-5-nano", 2.46),
            ("gpt-4.1-mini-2025-04-14", 1.62),
            ("OpenAI/GPT-4.1-nano", 2.46),
            ("ft:gpt-4.1-mini-2025-04-14:acme::abc123", 1.62),
        ],
    )
    def test_patch_models(self, model: str, multiplier: float) -> None:
        """The patch models, by any spelling of their name, count patches."""
        rule = openai_image_rule(model)
        assert rule(1800, 2400, "high") == openai_patch_tokens(1800, 2400, multiplier)
        assert rule(1024, 1024, "low") == rule(1024, 1024, "high")  # no low detail

    def test_the_guides_models(self) -> None:
        """The guide's patch models and their rates."""
        assert {
            "gpt-4.1-mini": 1.62,
            "gpt-4.1-nano": 2.46,
            "o4-mini": 1.72,
        }.items() <= OPENAI_PATCH_MULTIPLIERS.items()

    @pytest.mark.parametrize("model", ["gpt-4o", "gpt-4.1", "o3", "gpt-5", None, ""])
    def test_tile_models(self, model: str | None) -> None:
        """GPT-4o, GPT-4.1 (not its mini) and unknown models count 512 px tiles."""
        rule = openai_image_rule(model)
        assert rule(1800, 2400, "high") == 765
        assert rule(1800, 2400, "low") == 85

    def test_gpt_4o_mini_tiles_cost_more(self) -> None:
        """GPT-4o mini's tiles cost 5,667 and its base 2,833, as OpenAI lists."""
        rule = openai_image_rule("gpt-4o-mini-2024-07-18")
        assert rule(512, 512, "high") == 2833 + 5667
        assert rule(99, 99, "low") == 2833
        assert rule(512, 512, "high") == openai_image_tokens(
            512, 512, "high", base=2833, tile=5667
        )


class TestCounterModel:
    def test_counter_prices_images_by_its_model(self) -> None:
        """A counter told its model counts gpt-4.1-mini's images by patches."""
        mini = TokenCounter(O200K, model="gpt-4.1-mini")
        assert mini.model == "gpt-4.1-mini"
        assert mini.image(_image(1800, 2400)) == 2353
        assert mini.image(_image(1800, 2400, detail="low")) == 2353
        assert TokenCounter(O200K).image(_image(1800, 2400)) == 765

    def test_model_from_a_model_info(self) -> None:
        """A ``ModelInfo`` gives its name."""
        nano = TokenCounter(O200K, "responses", model=get_model("gpt-4.1-nano"))
        assert nano.model == "gpt-4.1-nano"
        assert nano.image(_image(1024, 1024)) == 2520  # 1024 x 2.46, up

    def test_model_from_a_tokenizer_named_by_it(self) -> None:
        """A tokenizer named by a model names the counter's model too."""
        counter = TokenCounter("o4-mini")
        assert counter.model == "o4-mini"
        assert counter.image(_image(1800, 2400)) == 2498  # 1452 x 1.72, up
        # A counter passes for its tokenizer (as_tokenizer), and gives its model.
        again = TokenCounter(counter)  # type: ignore[arg-type]  # not in the signature
        assert again.model == "o4-mini"
        assert TokenCounter("o200k_base").model is None
        assert TokenCounter("heuristic").model is None

    def test_size_read_from_a_data_uri(self) -> None:
        """An image of no given size is measured from its header, as before."""
        mini = TokenCounter(O200K, model="gpt-4.1-mini")
        assert mini.image(Image(_png_uri(1024, 1024))) == 1659  # 1024 x 1.62, up

    def test_image_by_file_id(self) -> None:
        """An image sent by file id costs the patch rule's unknown size."""
        mini = TokenCounter(O200K, "responses", model="gpt-4.1-mini")
        part = Opaque.of("responses", {"type": "input_image", "file_id": "f1"})
        assert mini.part(part) == 2489  # 1536 x 1.62, up

    def test_anthropic_ignores_an_openai_model(self) -> None:
        """Anthropic's rule prices Anthropic's images, whatever the model."""
        counter = TokenCounter(O200K, "anthropic", model="gpt-4.1-mini")
        assert counter.image(_image(1000, 1000)) == 1334

    def test_count_messages_by_model_name(self) -> None:
        """``count_messages`` named by a patch model counts its images so."""
        msg = Message.user([_image(1800, 2400)])
        by_4o = count_messages([msg], "gpt-4o")
        by_mini = count_messages([msg], "gpt-4.1-mini")
        assert by_mini - by_4o == 2353 - 765

    @pytest.mark.parametrize("bad", [5, b"gpt-4o", ["gpt-4o"]])
    def test_model_of_the_wrong_type(self, bad: object) -> None:
        """A model that is neither a name nor a ``ModelInfo`` is named."""
        with pytest.raises(ArgumentTypeError, match=r"^model: expected a model name"):
            TokenCounter(O200K, model=bad)  # type: ignore[arg-type]  # the wrong type on purpose

    def test_blank_model(self) -> None:
        """A blank model name is refused, naming ``model``."""
        with pytest.raises(ArgumentValueError, match=r"^model: "):
            TokenCounter(O200K, model="  ")
