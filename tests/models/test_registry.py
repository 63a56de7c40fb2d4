from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import math
import re
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from contextwindow.errors import (
    ArgumentValueError,
    ContextWindowError,
    UnknownModelError,
    UnknownModelWarning,
)
from contextwindow.models import (
    DEFAULT_MODEL_INFO,
    ModelInfo,
    Registry,
    get_model,
    get_tokenizer,
    register_model,
    registry,
)
from contextwindow.tokens.approx import ApproximateTokenizer
from contextwindow.tokens.bpe import BPETokenizer

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "src" / "contextwindow" / "models" / "data"
registry_module = importlib.import_module("contextwindow.models._registry")
names = importlib.import_module("contextwindow.models._names")


def info(name: str, window: int = 100_000, provider: str = "custom") -> ModelInfo:
    return ModelInfo(name, provider, window, None, "o200k_base", False)


def small(*entries: ModelInfo) -> Registry:
    return Registry({e.name: e for e in entries})


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Registry:
    """A process-wide registry of its own, so tests never leak registrations."""
    reg = Registry()
    monkeypatch.setattr(registry_module, "registry", reg)
    return reg


class TestShippedData:
    def raw(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((DATA / "models.json").read_text("utf-8"))
        return data

    def test_every_window_positive(self) -> None:
        """Every shipped entry has a positive integer window and sane fields."""
        models = self.raw()["models"]
        assert len(models) > 1000
        for name, entry in models.items():
            window = entry["context_window"]
            assert type(window) is int, name
            assert window > 0, name
            out = entry["max_output_tokens"]
            assert out is None or (type(out) is int and out > 0), name
            assert isinstance(entry["provider"], str), name
            assert entry["provider"], name

    def test_header_names_source_and_license(self) -> None:
        """The file says where it came from, which version, when, and its license."""
        data = self.raw()
        assert "litellm" in data["_source"]
        assert re.fullmatch(r"\d+\.\d+\.\d+.*", data["litellm_version"])
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", data["retrieved"])
        assert "MIT" in data["_license"]
        notice = (DATA / "NOTICE").read_text("utf-8")
        assert "MIT License" in notice
        assert "Berri AI" in notice

    def test_one_sorted_entry_per_line(self) -> None:
        """Entries are sorted, one per line, so refreshes diff well."""
        lines = (DATA / "models.json").read_text("utf-8").splitlines()
        start = lines.index('"models": {') + 1
        names = [json.loads("{" + ln.rstrip(",") + "}") for ln in lines[start:-2]]
        keys = [next(iter(d)) for d in names]
        assert keys == sorted(keys)
        assert len(keys) == len(self.raw()["models"])

    def test_litellm_aliases_are_their_targets(self) -> None:
        """litellm's alias rows ship as their target's entry, marked alias_of."""
        models = self.raw()["models"]
        aliases = {n: e for n, e in models.items() if "alias_of" in e}
        assert len(aliases) >= 90
        for name, entry in aliases.items():
            target = models[entry["alias_of"]]
            assert {**target, "alias_of": entry["alias_of"]} == entry, name
        for alias, target in [
            ("claude-sonnet-latest", "claude-sonnet-5-5"),
            ("dashscope/qwen-max-latest", "dashscope/qwen3.8-max"),
            ("together_ai/qwen-flash-latest", "together_ai/Qwen/Qwen3.8-Flash"),
        ]:
            got, want = get_model(alias), get_model(target)
            assert got.name == alias
            assert (got.provider, got.context_window, got.max_output_tokens) == (
                want.provider,
                want.context_window,
                want.max_output_tokens,
            )
        assert get_model("dashscope/qwen-max-latest").context_window == 991_808

    def test_an_alias_counts_as_its_target(self) -> None:
        """gpt-mini-latest is gpt-5.4-mini: exact o200k_base, like its target."""
        m = get_model("gpt-mini-latest")
        assert (m.encoding, m.exact) == ("o200k_base", True)

    def test_notice_names_the_version_shipped(self) -> None:
        """NOTICE is litellm's licence for the very version models.json is from."""
        version = self.raw()["litellm_version"]
        notice = (DATA / "NOTICE").read_text("utf-8")
        assert notice.startswith("models.json is derived from litellm's ")
        assert f"(litellm {version}, https://github.com/BerriAI/litellm)" in notice
        assert "Copyright (c) 2023 Berri AI" in notice

    def test_loaded_lazily(self) -> None:
        """Importing and constructing read nothing; the first lookup does."""
        code = (
            "import contextwindow.models as m; "
            "print(repr(m.registry)); m.get_model('gpt-4o'); print(repr(m.registry))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.splitlines()
        assert out[0] == "<Registry not loaded>"
        assert re.fullmatch(r"<Registry \d+ models>", out[1])


class TestResolution:
    def test_exact_name(self) -> None:
        """An exact name gives its entry: gpt-4o has 128,000 tokens."""
        m = get_model("gpt-4o")
        assert (m.name, m.provider, m.context_window) == ("gpt-4o", "openai", 128_000)

    def test_case_insensitive(self) -> None:
        """Names match regardless of case."""
        assert registry.resolve("GPT-4O") == "gpt-4o"
        assert registry.resolve("Claude-Sonnet-4-5") == "claude-sonnet-4-5"

    def test_provider_prefix_stripped(self) -> None:
        """A provider prefix with no entry of its own is removed."""
        assert registry.resolve("openai/gpt-4o") == "gpt-4o"
        assert registry.resolve("anthropic/claude-sonnet-4-5") == "claude-sonnet-4-5"

    def test_prefixed_key_kept_when_it_exists(self) -> None:
        """A prefixed name with its own entry (azure/...) resolves to that entry."""
        assert registry.resolve("azure/gpt-4o") == "azure/gpt-4o"
        assert get_model("azure/gpt-4o").provider == "azure"

    def test_dated_claude(self) -> None:
        """claude-sonnet-4-5-20250929 resolves, with 200,000 tokens."""
        assert get_model("claude-sonnet-4-5-20250929").context_window == 200_000

    def test_unknown_date_falls_back_to_undated(self) -> None:
        """A date the table lacks (-YYYYMMDD or -YYYY-MM-DD) is removed."""
        assert registry.resolve("claude-sonnet-4-5-20991231") == "claude-sonnet-4-5"
        assert registry.resolve("gpt-4o-2099-01-01") == "gpt-4o"
        reg = small(info("model-a"))
        assert reg.resolve("model-a-20250101") == "model-a"
        assert reg.resolve("model-a-2025-01-01") == "model-a"

    def test_undated_finds_newest_dated(self) -> None:
        """With only dated entries, an undated name gets the newest one."""
        reg = small(
            info("model-b-20240101"),
            info("model-b-20250301"),
            info("model-b-2024-12-31"),
        )
        assert reg.resolve("model-b") == "model-b-20250301"

    def test_latest_suffix(self) -> None:
        """A -latest suffix resolves to the undated (or newest dated) entry."""
        assert small(info("model-c")).resolve("model-c-latest") == "model-c"
        assert registry.resolve("claude-opus-4-6-latest") == "claude-opus-4-6"

    def test_bedrock_names(self) -> None:
        """Bedrock region, vendor and version parts are removed when needed."""
        reg = small(info("claude-x-1"))
        assert reg.resolve("anthropic.claude-x-1-v1:0") == "claude-x-1"
        assert reg.resolve("us.anthropic.claude-x-1-v2:0") == "claude-x-1"
        assert reg.resolve("bedrock/eu.anthropic.claude-x-1-v1") == "claude-x-1"
        name = "anthropic.claude-sonnet-4-5-20250929-v1:0"
        assert registry.resolve(name) == name
        assert registry.resolve("bedrock/" + name) == name

    def test_version_suffix_is_kept_in_plain_names(self) -> None:
        """-v3 is part of a plain name (deepseek-v3), not a Bedrock version."""
        assert small(info("deepseek")).resolve("deepseek-v3") is None
        reg = small(info("deepseek"), info("deepseek-v3"))
        assert reg.resolve("deepseek-v3") == "deepseek-v3"

    def test_vertex_at_date(self) -> None:
        """claude-...@20250929 becomes claude-...-20250929, or drops the @ part."""
        assert (
            registry.resolve("claude-sonnet-4-5@20250929")
            == "claude-sonnet-4-5-20250929"
        )
        assert registry.resolve("claude-opus-4-6@default") == "claude-opus-4-6"
        assert small(info("claude-y")).resolve("claude-y@20250101") == "claude-y"

    def test_fine_tune(self) -> None:
        """An OpenAI fine-tune name resolves to its base model's entry."""
        name = "ft:gpt-4o-2024-08-06:my-org::abc123"
        assert registry.resolve(name) == "ft:gpt-4o-2024-08-06"
        assert small(info("gpt-x")).resolve("ft:gpt-x:org:tag:id") == "gpt-x"

    def test_prefers_the_makers_own_entry(self) -> None:
        """The maker's entry wins over clouds, and clouds over resellers."""
        reg = small(
            info("reseller/claude-z", 100_000, "reseller"),
            info("vertex_ai/claude-z", 150_000, "vertex_ai-anthropic_models"),
            info("anthropic/claude-z", 200_000, "anthropic"),
        )
        assert reg.resolve("claude-z") == "anthropic/claude-z"
        del reg  # the same without the maker:
        reg = small(
            info("reseller/claude-z", 100_000, "reseller"),
            info("vertex_ai/claude-z", 150_000, "vertex_ai-anthropic_models"),
        )
        assert reg.resolve("claude-z") == "vertex_ai/claude-z"
        assert registry.resolve("grok-4.3") == "xai/grok-4.3"
        assert (
            registry.resolve("mistral-large-latest") == "mistral/mistral-large-latest"
        )

    @pytest.mark.parametrize(
        ("dotted", "dashed"),
        [
            ("claude-sonnet-4.5", "claude-sonnet-4-5"),
            ("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
            ("openrouter/anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
            ("claude-opus-4.5", "claude-opus-4-5"),
            ("claude-3.7-sonnet", "claude-3-7-sonnet"),
            ("claude-haiku-4.5", "claude-haiku-4-5"),
        ],
    )
    def test_claude_version_dots_read_as_dashes(self, dotted: str, dashed: str) -> None:
        """A dotted Claude version is Anthropic's dashed name, never a reseller's."""
        got, want = get_model(dotted), get_model(dashed)
        assert got.provider == "anthropic"
        assert (got.context_window, got.max_output_tokens) == (
            want.context_window,
            want.max_output_tokens,
        )
        assert registry.resolve(dotted) == registry.resolve(dashed)
        assert get_model("openrouter/anthropic/claude-sonnet-4.5").name == (
            "claude-sonnet-4-5"
        )

    def test_a_resellers_own_dotted_name_is_kept(self) -> None:
        """Asking for a reseller's entry by its exact name gives that entry."""
        name = "gmi/anthropic/claude-sonnet-4.5"
        assert registry.resolve(name) == name
        assert small(info("claude-2.1")).resolve("claude-2.1") == "claude-2.1"

    @pytest.mark.parametrize("name", ["gpt-4.1", "gemini-2.5-pro", "llama-3.1-8b"])
    def test_other_families_keep_their_dots(self, name: str) -> None:
        """Only Claude names read dots as dashes."""
        assert "." in (registry.resolve(name) or "")
        assert "-".join(name.split(".")) not in names.variants(name)

    def test_resellers_resolve_to_smallest_window(self) -> None:
        """Among equal candidates, the smallest window wins (never overflow)."""
        reg = small(
            info("r1/llama-q", 131_072, "r1"),
            info("r2/llama-q", 16_384, "r2"),
            info("r3/llama-q", 65_536, "r3"),
        )
        assert reg.get("llama-q").context_window == 16_384

    def test_alias(self) -> None:
        """A user alias resolves, case-insensitively, to its target's entry."""
        reg = small(info("model-d-20250101"))
        reg.alias("Dee", "model-d")
        assert reg.resolve("dee") == "model-d-20250101"
        assert reg.get("DEE").name == "model-d-20250101"

    def test_alias_to_unknown_raises(self) -> None:
        """Aliasing a name that does not resolve raises UnknownModelError."""
        with pytest.raises(UnknownModelError, match="nope"):
            small(info("model-e")).alias("e", "nope")

    def test_unknown_returns_none(self) -> None:
        """resolve() answers None for an unknown name, without warning."""
        assert registry.resolve("zzz-no-such-model") is None
        assert "zzz-no-such-model" not in registry
        assert "gpt-4o" in registry
        assert 42 not in registry

    @pytest.mark.parametrize(
        ("asked", "own", "window"),
        [
            (
                "github_copilot/claude-sonnet-4-6",
                "github_copilot/claude-sonnet-4.6",
                200_000,
            ),
            (
                "github_copilot/claude-haiku-4-5",
                "github_copilot/claude-haiku-4.5",
                128_000,
            ),
            ("chatgpt/gpt-5.2-2025-12-11", "chatgpt/gpt-5.2", 128_000),
            ("github_copilot/gpt-5.4-2026-03-05", "github_copilot/gpt-5.4", 272_000),
            ("azure/gpt-5-pro-2025-10-06", "azure/gpt-5-pro", 272_000),
        ],
    )
    def test_a_providers_name_gets_its_own_entry(
        self, asked: str, own: str, window: int
    ) -> None:
        """A provider's name under another spelling is still that provider's entry."""
        assert registry.resolve(asked) == own
        m = get_model(asked)
        assert (m.name, m.context_window) == (own, window)

    def test_the_named_provider_before_the_maker(self) -> None:
        """The named provider's entry wins over a larger one without its prefix."""
        reg = small(
            info("claude-q-4-6", 1_000_000, "anthropic"),
            info("copilot/claude-q-4.6", 200_000, "copilot"),
            info("gpt-q", 400_000, "openai"),
            info("gpt-q-2025-01-01", 400_000, "openai"),
            info("copilot/gpt-q", 128_000, "copilot"),
        )
        assert reg.get("copilot/claude-q-4-6").context_window == 200_000
        assert reg.get("copilot/gpt-q-2025-01-01").context_window == 128_000
        assert reg.get("claude-q-4.6").context_window == 1_000_000  # bare: the maker

    def test_another_providers_path_is_not_the_named_one(self) -> None:
        """gw/openai/gpt-q also reduces to openai/gpt-q, but is not OpenAI's."""
        reg = small(info("gpt-q", 128_000, "openai"), info("gw/openai/gpt-q", 64, "gw"))
        assert reg.resolve("openai/gpt-q-2025-01-01") == "gpt-q"
        assert registry.resolve("openai/gpt-4o-2024-08-06") == "gpt-4o-2024-08-06"

    def test_an_at_inside_a_path_is_not_a_version(self) -> None:
        """cloudflare/@cf/... names that are not in the table are unknown."""
        reg = small(info("cf/@cf/meta/llama-2-7b", 2_048, "cf"))
        assert reg.resolve("cf/@cf/meta/llama-3-8b") is None
        assert reg.resolve("cf/@cf/meta/llama-2-7b") == "cf/@cf/meta/llama-2-7b"
        assert registry.resolve("cloudflare/@cf/nope") is None
        with pytest.warns(UnknownModelWarning, match="openinfer/@oi/qwen3.5-122b"):
            assert get_model("openinfer/@oi/qwen3.5-122b").context_window == 8_192

    def test_only_a_version_after_an_at(self) -> None:
        """@ followed by a number, a date, default or latest is Vertex's version."""
        reg = small(info("jamba-q"))
        for version in ("001", "2411-001", "20250101", "default", "latest"):
            assert reg.resolve(f"jamba-q@{version}") == "jamba-q"
        assert reg.resolve("jamba-q@someone") is None

    @pytest.mark.parametrize("name", ["", "   ", "cloudflare/", "/"])
    def test_nothing_and_a_bare_path_resolve_to_nothing(self, name: str) -> None:
        """An empty name or a provider path alone names no model."""
        assert registry.resolve(name) is None
        assert name not in registry
        forms = names.variants("cloudflare/@cf/meta/llama-3.1-8b-instruct-fast")
        assert all(f and not f.endswith("/") for f in forms)

    @pytest.mark.parametrize("family", ["sonnet", "opus"])
    def test_anthropic_minor_zero_alias(self, family: str) -> None:
        """claude-opus-4-0, Anthropic's alias, is claude-opus-4 (no warning)."""
        want = get_model(f"claude-{family}-4")
        got = get_model(f"claude-{family}-4-0")
        assert (got.context_window, got.max_output_tokens) == (
            want.context_window,
            want.max_output_tokens,
        )
        assert got.context_window == 200_000
        reg = small(info("claude-q-4-20250101"), info("model-q-4"))
        assert reg.resolve("claude-q-4-0") == "claude-q-4-20250101"
        assert reg.resolve("model-q-4-0") is None  # only Claude's names

    def test_ollama_latest_tag(self) -> None:
        """ollama/llama3:latest is ollama/llama3; another tag is another model."""
        assert registry.resolve("ollama/llama3:latest") == "ollama/llama3"
        assert get_model("Ollama/Llama3:latest").provider == "ollama"
        reg = small(info("ollama/q"))
        assert reg.resolve("ollama/q:latest") == "ollama/q"
        assert reg.resolve("ollama/q:8b") is None


class TestUnknownModels:
    def test_warns_and_gives_default(self) -> None:
        """An unknown model warns, naming it and the default, and gets the default."""
        with pytest.warns(UnknownModelWarning, match=r"'my-own-llm'.*8,192"):
            m = get_model("my-own-llm")
        assert m == dataclasses.replace(DEFAULT_MODEL_INFO, name="my-own-llm")
        assert (m.name, m.context_window, m.exact) == ("my-own-llm", 8192, False)

    def test_bare_name_is_the_makers(self) -> None:
        """A bare name is the maker's model, even where only a cloud serves it."""
        m = get_model("claude-opus-4-1")
        assert (m.name, m.provider, m.context_window) == (
            "claude-opus-4-1",
            "anthropic",
            200_000,
        )
        bedrock = get_model("anthropic.claude-opus-4-1-20250805-v1:0")
        assert bedrock.provider == "bedrock_converse"  # a cloud's name: its entry
        assert get_model("claude-sonnet-4-5").name == "claude-sonnet-4-5"
        assert get_model("azure/gpt-4o").provider == "azure"

    @pytest.mark.parametrize(
        ("asked", "bare"),
        [
            ("anthropic/claude-opus-4-1", "claude-opus-4-1"),
            ("openai/o1-mini", "o1-mini"),
        ],
    )
    def test_the_makers_path_is_the_bare_name(self, asked: str, bare: str) -> None:
        """Naming the maker (anthropic/...) gives what the bare name gives."""
        got, want = get_model(asked), get_model(bare)
        assert (got.name, got.provider) == (bare, want.provider)
        assert got == want
        reg = small(info("vertex_ai/claude-q", 100_000, "vertex_ai-anthropic_models"))
        assert reg.get("anthropic/claude-q").provider == "anthropic"
        assert reg.get("reseller/claude-q").provider == "vertex_ai-anthropic_models"

    def test_a_window_given_is_not_claimed_to_be_the_default(self) -> None:
        """With window_given, the warning says the caller's window is used."""
        with pytest.warns(UnknownModelWarning) as record:
            m = get_model("my-azure-deployment", window_given=True)
        text = str(record[0].message)
        assert "'my-azure-deployment'" in text
        assert "the window given is used" in text
        assert "8,192" not in text
        assert "o200k_base" in text
        assert m == dataclasses.replace(DEFAULT_MODEL_INFO, name="my-azure-deployment")
        with pytest.raises(ContextWindowError, match=r"^window_given: "):
            get_model("gpt-4o", window_given="yes")  # type: ignore[arg-type]  # the bad value tested

    def test_a_model_is_a_name(self) -> None:
        """None, a number or an empty name is an argument error, not a lookup."""
        for bad in (None, 4, "", " "):
            with pytest.raises(ContextWindowError, match=r"^model: "):
                get_model(bad)  # type: ignore[arg-type]  # on purpose

    def test_warning_suggests_close_names(self) -> None:
        """The warning for a typo names the model it probably meant."""
        with pytest.warns(UnknownModelWarning, match=r"did you mean gpt-4o\b"):
            get_model("gpt4o")

    def test_resolution_cache_is_bounded(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Looking up endless distinct names does not grow memory without bound."""
        monkeypatch.setattr(registry_module, "_CACHE_SIZE", 8)
        reg = small(info("m"))
        for i in range(50):
            reg.resolve(f"name-{i}")
        assert len(reg._cache) <= 8
        assert reg.resolve("M") == "m"

    def test_warning_points_at_the_caller(self) -> None:
        """The warning is attributed to the line calling get_model."""
        with pytest.warns(UnknownModelWarning) as record:
            Registry({}).get("nothing-here")
        assert record[0].filename == __file__

    def test_no_default_raises_with_suggestions(self) -> None:
        """default=False raises UnknownModelError (a KeyError) with close names."""
        with pytest.raises(UnknownModelError) as exc:
            get_model("gpt-4o-mni", default=False)
        assert isinstance(exc.value, KeyError)
        assert "gpt-4o-mini" in exc.value.suggestions
        assert "did you mean" in str(exc.value)


class TestRegister:
    def test_override_wins_over_shipped(self) -> None:
        """A registered entry replaces the shipped one, also via prefixes."""
        reg = Registry()
        reg.register("gpt-4o", context_window=1000, provider="proxy")
        assert reg.get("gpt-4o").context_window == 1000
        assert reg.get("openai/gpt-4o").provider == "proxy"
        assert [m.context_window for m in reg.search("gpt-4o") if m.name == "gpt-4o"]
        assert get_model("gpt-4o").context_window == 128_000  # others untouched

    def test_register_model_uses_process_registry(self, fresh: Registry) -> None:
        """register_model() adds to the registry get_model() reads."""
        register_model("house-llm", context_window=12_000, max_output_tokens=2_000)
        m = get_model("House-LLM")
        assert (m.context_window, m.max_output_tokens, m.provider) == (
            12_000,
            2_000,
            "custom",
        )
        assert fresh.resolve("house-llm") == "house-llm"

    def test_encoding_inferred_from_name(self) -> None:
        """Without an encoding, the name decides it, as for shipped models."""
        reg = Registry({})
        a = reg.register("gpt-4o-proxy", context_window=64_000)
        b = reg.register("my-llm", context_window=64_000, exact=True)
        assert (a.encoding, a.exact) == ("o200k_base", True)
        assert (b.encoding, b.exact) == ("o200k_base", False)

    def test_explicit_encoding(self) -> None:
        """An explicit shipped encoding is used with the exactness given."""
        reg = Registry({})
        m = reg.register("x", context_window=10, encoding="cl100k_base", exact=True)
        assert (m.encoding, m.exact) == ("cl100k_base", True)

    @pytest.mark.parametrize(
        "kwargs",
        [
            {"context_window": 0},
            {"context_window": -5},
            {"context_window": True},
            {"context_window": 10, "max_output_tokens": 0},
            {"context_window": 10, "encoding": "p50k_base"},
        ],
    )
    def test_bad_values_raise(self, kwargs: dict[str, Any]) -> None:
        """Non-positive limits and unshipped encodings raise ValueError."""
        with pytest.raises(
            (ValueError, TypeError), match=r"context_window|max_output|encoding"
        ):
            Registry({}).register("x", **kwargs)

    def test_max_output_above_the_window_raises(self, fresh: Registry) -> None:
        """An output limit above the window is refused, naming it; equal is fine."""
        with pytest.raises(
            ArgumentValueError,
            match=r"^max_output_tokens: expected an int in \[1, 1000\]",
        ):
            register_model("m-x", context_window=1000, max_output_tokens=5000)
        assert fresh.resolve("m-x") is None
        info = register_model("m-x", context_window=1000, max_output_tokens=1000)
        assert info.max_output_tokens == 1000

    def test_empty_name_raises(self) -> None:
        """A blank name is refused."""
        with pytest.raises(ValueError, match="name: expected a non-empty str"):
            Registry({}).register("  ", context_window=10)

    def test_register_again_in_other_case_replaces(self) -> None:
        """Registering a name again in another case replaces the entry."""
        reg = Registry({})
        reg.register("my-llm", context_window=10)
        reg.register("My-LLM", context_window=20)
        assert [(m.name, m.context_window) for m in reg] == [("My-LLM", 20)]
        assert reg.get("my-llm").context_window == 20

    def test_register_replaces_alias_and_listing(self) -> None:
        """A later register() of an alias's name wins, and lists once."""
        reg = small(info("base-1"))
        reg.alias("short", "base-1")
        reg.register("short", context_window=5)
        assert reg.get("short").context_window == 5
        assert len(reg) == 2
        assert [m.name for m in reg] == ["base-1", "short"]


class TestRaces:
    def test_a_registration_during_a_lookup_is_not_lost(self) -> None:
        """A register() landing while a lookup resolves is seen by the next lookup."""
        reg = Registry({})
        resolve = reg._resolve
        raced: list[str] = []

        def racing(key: str) -> str | None:
            found = resolve(key)  # the answer before the registration
            if not raced:
                raced.append(key)
                reg.register("late-model", context_window=50_000)
            return found

        reg._resolve = racing  # type: ignore[method-assign]  # a lookup overtaken
        reg.resolve("late-model")
        assert raced == ["late-model"]
        assert reg.get("late-model", default=False).context_window == 50_000

    def test_an_alias_during_a_lookup_is_not_lost(self) -> None:
        """An alias() landing while a lookup resolves is seen by the next lookup."""
        reg = small(info("base-1", 40_000))
        resolve = reg._resolve
        raced: list[str] = []

        def racing(key: str) -> str | None:
            found = resolve(key)
            if key == "nick" and not raced:
                raced.append(key)
                reg.alias("nick", "base-1")
            return found

        reg._resolve = racing  # type: ignore[method-assign]  # a lookup overtaken
        reg.resolve("nick")
        assert raced == ["nick"]
        assert reg.resolve("nick") == "base-1"


class TestModelInfoChecked:
    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("name", ""),
            ("name", 5),
            ("provider", None),
            ("context_window", 0),
            ("context_window", 800.5),
            ("context_window", math.nan),
            ("context_window", math.inf),
            ("context_window", "12"),
            ("context_window", True),
            ("max_output_tokens", -100),
            ("max_output_tokens", 2.0),
            ("encoding", "p50k_base"),
            ("encoding", 5),
            ("exact", "yes"),
            ("function_calling", 1),
            ("vision", "no"),
        ],
    )
    def test_bad_field_refused_naming_it(self, field: str, value: object) -> None:
        """Every field is checked on construction; the error names the field."""
        good = dataclasses.asdict(info("my-m", 800))
        with pytest.raises(ContextWindowError, match=rf"^{field}: expected"):
            ModelInfo(**{**good, field: value})

    def test_replace_is_checked_too(self) -> None:
        """dataclasses.replace builds a checked ModelInfo as well."""
        with pytest.raises(ArgumentValueError, match=r"^context_window"):
            dataclasses.replace(DEFAULT_MODEL_INFO, context_window=-1)

    def test_fit_never_sees_a_bad_model(self) -> None:
        """A negative output limit cannot reach fit's reserve (it used to overflow)."""
        from contextwindow import Message, fit

        with pytest.raises(ArgumentValueError, match=r"^max_output_tokens"):
            fit(
                [Message.user("word " * 100)],
                model=ModelInfo("my-m", "custom", 800, -100, "o200k_base", True),
            )

    def test_a_good_model_still_fits(self) -> None:
        """A valid hand-made ModelInfo is taken; the fitted request is in its window."""
        from contextwindow import Message, count_messages, fit

        conv = [Message.system("s")] + [Message.user("word " * 100) for _ in range(20)]
        model = ModelInfo("my-m", "custom", 800, 100, "o200k_base", True)
        fitted = fit(conv, model=model)
        assert count_messages(fitted.messages, "gpt-4o") <= 800 - 100

    def test_the_shipped_table_is_valid(self) -> None:
        """Every shipped entry passes the checks (some outputs exceed the window)."""
        assert len(list(Registry())) > 1_000

    def test_approximation_scale_takes_a_model_info(self) -> None:
        """approximation_scale refuses what is not a ModelInfo, naming it."""
        with pytest.raises(ContextWindowError, match=r"^info: expected a ModelInfo"):
            registry_module.approximation_scale(5)

    @pytest.mark.parametrize(
        ("entries", "named"),
        [(5, "entries"), ({"a": 1}, r"entries\['a'\]"), ({5: info("x")}, "entries")],
    )
    def test_registry_entries_checked(self, entries: Any, named: str) -> None:
        """Registry(entries) refuses what is not a mapping of names to ModelInfo."""
        with pytest.raises(ContextWindowError, match=rf"^{named}: expected"):
            Registry(entries)

    def test_default_is_a_bool(self) -> None:
        """get_model(default="no") is refused, not read as True."""
        with pytest.raises(ContextWindowError, match=r"^default: expected True"):
            get_model("no-such-model-x", default="no")  # type: ignore[arg-type]  # the bad value tested


class TestLoading:
    def test_concurrent_first_lookups_load_once(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Threads racing on the first lookup read the shipped table once."""
        real = registry_module._load_shipped
        loads: list[int] = []

        def slow_load() -> dict[str, Any]:
            loads.append(1)
            time.sleep(0.2)  # long enough for every thread to reach the lock
            table: dict[str, Any] = real()
            return table

        monkeypatch.setattr(registry_module, "_load_shipped", slow_load)
        reg = Registry()
        barrier = threading.Barrier(4)
        found: list[int] = []

        def lookup() -> None:
            barrier.wait()
            found.append(reg.get("gpt-4o").context_window)

        threads = [threading.Thread(target=lookup) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert loads == [1]
        assert found == [128_000] * 4

    def test_repr_says_whether_loaded(self) -> None:
        """The repr tells a registry not yet loaded from one holding models."""
        assert repr(Registry()) == "<Registry not loaded>"
        assert repr(small(info("a"), info("b"))) == "<Registry 2 models>"


class TestSearch:
    def test_substring_ignores_case(self) -> None:
        """A plain pattern matches names containing it, in any case."""
        found = registry.search("SONNET-4-5")
        names = [m.name for m in found]
        assert "claude-sonnet-4-5" in names
        assert all("sonnet-4-5" in n.lower() for n in names)

    def test_makers_entries_first(self) -> None:
        """The maker's own entries come first, then clouds, then resellers."""
        found = registry.search("claude")
        providers = [m.provider for m in found]
        first_other = next(i for i, p in enumerate(providers) if p != "anthropic")
        assert first_other > 0
        assert "anthropic" not in providers[first_other:]
        anthropic = [m.name for m in found[:first_other]]
        assert anthropic == sorted(anthropic)

    def test_glob(self) -> None:
        """A pattern with * is a glob over the whole name."""
        names = [m.name for m in registry.search("claude-*-4-5")]
        assert "claude-sonnet-4-5" in names
        assert "claude-opus-4-5" in names
        assert all(n.startswith("claude-") and n.endswith("-4-5") for n in names)

    def test_no_match(self) -> None:
        """A pattern matching nothing gives an empty list."""
        assert registry.search("zzz-nothing-*") == []

    def test_iteration_and_len(self) -> None:
        """Iterating yields every ModelInfo, sorted by name; len agrees."""
        reg = small(info("b"), info("a"))
        assert [m.name for m in reg] == ["a", "b"]
        assert len(reg) == 2


class TestEncodings:
    @pytest.mark.parametrize(
        "name",
        [
            "gpt-4o",
            "gpt-4o-mini",
            "chatgpt-4o-latest",
            "gpt-4.1",
            "gpt-4.5-preview",
            "gpt-5",
            "gpt-5.1-codex",
            "o1",
            "o3-mini",
            "o4-mini",
            "gpt-oss-120b",
            "azure/gpt-4o",
            "ft:gpt-4o-2024-08-06",
        ],
    )
    def test_o200k_exact(self, name: str) -> None:
        """OpenAI's o200k families count exactly with o200k_base."""
        assert names.encoding_for(name) == ("o200k_base", True)

    @pytest.mark.parametrize(
        "name", ["gpt-4", "gpt-4-turbo", "gpt-4-0613", "gpt-3.5-turbo", "gpt-35-turbo"]
    )
    def test_cl100k_exact(self, name: str) -> None:
        """GPT-4 (not 4o/4.1/4.5) and GPT-3.5 count exactly with cl100k_base."""
        assert names.encoding_for(name) == ("cl100k_base", True)

    @pytest.mark.parametrize(
        "name",
        [
            "claude-sonnet-4-5",
            "gemini/gemini-2.5-pro",
            "mistral/mistral-large-latest",
            "deepseek-chat",
            "o1x",
            "gpt-6-sol",
        ],
    )
    def test_others_approximate(self, name: str) -> None:
        """Every other model is approximated with o200k_base, exact=False."""
        assert names.encoding_for(name) == ("o200k_base", False)

    def test_agrees_with_tiktoken(self) -> None:
        """For every shipped model tiktoken knows, the exact encoding matches it."""
        from tiktoken.model import encoding_name_for_model

        checked = 0
        for m in registry:
            try:
                theirs = encoding_name_for_model(names.bare_name(m.name))
            except KeyError:
                continue
            theirs = {"o200k_harmony": "o200k_base"}.get(theirs, theirs)
            if theirs in ("o200k_base", "cl100k_base"):
                checked += 1
                assert (m.encoding, m.exact) == (theirs, True), m.name
        assert checked > 100


class TestGetTokenizer:
    def test_exact_for_openai(self) -> None:
        """gpt-4o gets the exact o200k_base BPE, gpt-4 the cl100k_base one."""
        tok = get_tokenizer("gpt-4o")
        assert isinstance(tok, BPETokenizer)
        assert (tok.name, tok.exact, tok.count("hello world")) == (
            "o200k_base",
            True,
            2,
        )
        assert get_tokenizer("gpt-4").name == "cl100k_base"

    def test_approximate_for_claude(self) -> None:
        """Claude gets o200k_base counts scaled by the measured 1.17, labelled."""
        tok = get_tokenizer("claude-sonnet-4-5")
        assert isinstance(tok, ApproximateTokenizer)
        assert tok.exact is False
        assert tok.name == "o200k_base x1.17 (approximate for claude-sonnet-4-5)"
        text = "Les tokens de Claude ne sont pas ceux d'OpenAI."
        base = BPETokenizer("o200k_base").count(text)
        assert tok.count(text) == math.ceil(base * 1.17)
        opus = get_tokenizer("anthropic/claude-opus-4-6")
        assert isinstance(opus, ApproximateTokenizer)
        assert opus.scale == 1.17

    def test_model_info_needs_no_lookup(self) -> None:
        """A ModelInfo is used as given: no lookup, no warning, its own name."""
        info = dataclasses.replace(DEFAULT_MODEL_INFO, name="my-own-llm")
        tok = get_tokenizer(info)  # filterwarnings=error: a warning would fail
        assert tok.name == "o200k_base (approximate for my-own-llm)"
        assert get_tokenizer(get_model("gpt-4o")).name == "o200k_base"

    def test_unmeasured_family_is_not_scaled(self) -> None:
        """A family without a measured ratio counts plain o200k_base."""
        tok = get_tokenizer("gemini-2.5-pro")
        assert isinstance(tok, ApproximateTokenizer)
        assert tok.scale == 1.0
        assert tok.name == "o200k_base (approximate for gemini-2.5-pro)"

    def test_none_is_approximate_without_warning(self) -> None:
        """No model at all gives the approximation, and no warning."""
        tok = get_tokenizer(None)
        assert tok.exact is False
        assert "approximate" in tok.name

    def test_unknown_warns_and_names_model(self) -> None:
        """An unknown model warns and its tokenizer names it."""
        with pytest.warns(UnknownModelWarning, match="my-own-llm"):
            tok = get_tokenizer("my-own-llm")
        assert tok.name == "o200k_base (approximate for my-own-llm)"


def load_script() -> ModuleType:
    path = ROOT / "scripts" / "refresh_models.py"
    spec = importlib.util.spec_from_file_location("refresh_models", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SAMPLE = {
    "sample_spec": {"mode": "chat", "max_input_tokens": "doc"},
    "b-chat": {
        "litellm_provider": "openai",
        "mode": "chat",
        "max_input_tokens": 1000,
        "max_output_tokens": 100,
        "supports_vision": True,
        "input_cost_per_token": 1e-6,
    },
    "a-old": {"litellm_provider": "x", "mode": "completion", "max_tokens": 2048},
    "c-embed": {"litellm_provider": "x", "mode": "embedding", "max_input_tokens": 8},
    "d-none": {"litellm_provider": "x", "mode": "chat"},
    "e-zero": {"litellm_provider": "x", "mode": "chat", "max_input_tokens": 0},
}


class TestRefreshScript:
    def test_trim(self) -> None:
        """Keeps chat/responses/completion with a window; max_tokens is a fallback."""
        models = load_script().trim(SAMPLE)
        assert list(models) == ["a-old", "b-chat"]
        assert models["b-chat"] == {
            "provider": "openai",
            "context_window": 1000,
            "max_output_tokens": 100,
            "vision": True,
        }
        assert models["a-old"]["window_from"] == "max_tokens"
        assert models["a-old"]["context_window"] == 2048
        assert models["a-old"]["mode"] == "completion"

    def test_aliases_are_their_targets(self) -> None:
        """An alias_of row (or an aliases list) is kept as its target's entry."""
        raw = {
            **SAMPLE,
            "b-latest": {"alias_of": "b-chat"},
            "c-latest": {"alias_of": "c-embed"},  # its target is not kept
            "x-latest": {"alias_of": "missing"},
            "y-latest": {"alias_of": "b-latest"},  # an alias of an alias
            "f-chat": {
                "litellm_provider": "y",
                "mode": "chat",
                "max_input_tokens": 500,
                "aliases": ["f", "b-chat"],  # b-chat: a model, not an alias
            },
        }
        models = load_script().trim(raw)
        assert list(models) == sorted(models)
        assert set(models) == {"a-old", "b-chat", "b-latest", "f", "f-chat"}
        assert models["b-latest"] == {**models["b-chat"], "alias_of": "b-chat"}
        assert models["b-chat"]["provider"] == "openai"  # a real entry is no alias
        assert models["f"] == {**models["f-chat"], "alias_of": "f-chat"}
        assert "aliases" not in models["f-chat"]

    def test_from_wheel(self, tmp_path: Path) -> None:
        """--from a wheel writes models.json and NOTICE, recording the version."""
        wheel = tmp_path / "litellm-9.8.7-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr(
                "litellm/model_prices_and_context_window_backup.json",
                json.dumps(SAMPLE),
            )
            zf.writestr("litellm-9.8.7.dist-info/licenses/LICENSE", "MIT License\n")
        out = tmp_path / "data"
        args = ["--from", str(wheel), "--out", str(out), "--date", "2025-01-02"]
        assert load_script().main(args) == 0
        data = json.loads((out / "models.json").read_text("utf-8"))
        assert data["litellm_version"] == "9.8.7"
        assert data["retrieved"] == "2025-01-02"
        assert list(data["models"]) == ["a-old", "b-chat"]
        assert "MIT License" in (out / "NOTICE").read_text("utf-8")
        reg = Registry(
            {n: registry_module._from_raw(n, e) for n, e in data["models"].items()}
        )
        assert reg.get("b-chat").vision is True
