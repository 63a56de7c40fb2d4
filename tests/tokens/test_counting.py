from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from contextwindow.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    ContextWindowError,
)
from contextwindow.fitting import fit
from contextwindow.formats import (
    from_anthropic,
    from_openai,
    from_responses,
    to_anthropic,
    to_openai,
    to_responses,
)
from contextwindow.messages import (
    Image,
    Message,
    Provider,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    ToolSpec,
)
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens import BPETokenizer, TokenCounter, count_messages
from contextwindow.tokens.counting import (
    ANTHROPIC_TOOLS_OVERHEAD,
    render_openai_tools,
)

CL100K = BPETokenizer("cl100k_base")
O200K = BPETokenizer("o200k_base")


class CountingTokenizer:
    """One token per whitespace-separated word; records every text it counts."""

    name = "words"
    exact = False

    def __init__(self) -> None:
        self.calls: list[str] = []

    def count(self, text: str) -> int:
        self.calls.append(text)
        return len(text.split())


def spec(name: str, description: str = "", **parameters: Any) -> ToolSpec:
    return ToolSpec(name, description, parameters)


# Cases from hmarr/openai-chat-tokens' test suite, whose counts were checked
# against the API's prompt_tokens (gpt-3.5-turbo, cl100k_base).
HMARR_CASES: list[tuple[list[Message], list[ToolSpec], int]] = [
    ([Message.user("hello")], [], 8),
    ([Message.user("hello world")], [], 9),
    ([Message.system("hello")], [], 8),
    ([Message.system("hello:")], [], 9),
    (
        [
            Message.system("# Important: you're the best robot"),
            Message.user("hello robot"),
            Message.assistant("hello world"),
        ],
        [],
        27,
    ),
    ([Message.user("hello")], [spec("foo", type="object", properties={})], 31),
    (
        [Message.user("hello")],
        [spec("foo", "Do a foo", type="object", properties={})],
        36,
    ),
    (
        [Message.user("hello")],
        [
            spec(
                "bing_bong",
                "Do a bing bong",
                type="object",
                properties={"foo": {"type": "string"}},
            )
        ],
        49,
    ),
    (
        [Message.user("hello")],
        [
            spec(
                "bing_bong",
                "Do a bing bong",
                type="object",
                properties={
                    "foo": {"type": "string"},
                    "bar": {"type": "number", "description": "A number"},
                },
            )
        ],
        57,
    ),
    (
        [Message.user("hello")],
        [
            spec(
                "bing_bong",
                "Do a bing bong",
                type="object",
                properties={
                    "foo": {
                        "type": "object",
                        "properties": {
                            "bar": {"type": "string", "enum": ["a", "b", "c"]},
                            "baz": {"type": "boolean"},
                        },
                    }
                },
            )
        ],
        68,
    ),
    (
        [
            Message.assistant(
                tool_calls=[ToolCall("c", "do_stuff", '{"foo": "bar", "baz": 1.5}')]
            )
        ],
        [],
        26,
    ),
    (
        [
            Message.assistant(
                tool_calls=[ToolCall("c", "do_stuff", '{"foo":"bar", "baz":\n\n 1.5}')]
            )
        ],
        [],
        25,
    ),
    (
        [Message.system("Hello"), Message.user("Hi there")],
        [spec("do_stuff", type="object", properties={})],
        35,
    ),
    (
        [Message.system("Hello:"), Message.user("Hi there")],
        [spec("do_stuff", type="object", properties={})],
        35,
    ),
    (
        [Message.system("Hello:"), Message.system("Hello"), Message.user("Hi there")],
        [spec("do_stuff", type="object", properties={})],
        40,
    ),
]

RECIPE = spec(
    "get_recipe",
    type="object",
    required=["ingredients", "instructions", "time_to_cook"],
    properties={
        "ingredients": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "unit", "amount"],
                "properties": {
                    "name": {"type": "string"},
                    "unit": {
                        "enum": ["grams", "ml", "cups", "pieces", "teaspoons"],
                        "type": "string",
                    },
                    "amount": {"type": "number"},
                },
            },
        },
        "instructions": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Steps to prepare the recipe (no numbering)",
        },
        "time_to_cook": {
            "type": "number",
            "description": "Total time to prepare the recipe in minutes",
        },
    },
)


def png(width: int, height: int) -> str:
    header = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
    data = header + width.to_bytes(4, "big") + height.to_bytes(4, "big") + b"\0" * 8
    return "data:image/png;base64," + base64.b64encode(data).decode()


class TestOpenAIFraming:
    def test_cookbook_example(self) -> None:
        """The OpenAI cookbook's example conversation is 129 prompt tokens (cl100k)."""
        conv = [
            Message.system(
                "You are a helpful, pattern-following assistant that translates "
                "corporate jargon into plain English."
            ),
            Message.system(
                "New synergies will help drive top-line growth.", name="example_user"
            ),
            Message.system(
                "Things working well together will increase revenue.",
                name="example_assistant",
            ),
            Message.system(
                "Let's circle back when we have more bandwidth to touch base on "
                "opportunities for increased leverage.",
                name="example_user",
            ),
            Message.system(
                "Let's talk later when we're less busy about how to do better.",
                name="example_assistant",
            ),
            Message.user(
                "This late pivot means we don't have time to boil the ocean for the "
                "client deliverable."
            ),
        ]
        assert TokenCounter(CL100K).messages(conv) == 129

    @pytest.mark.parametrize(("conv", "tools", "expected"), HMARR_CASES)
    def test_api_verified_cases(
        self, conv: list[Message], tools: list[ToolSpec], expected: int
    ) -> None:
        """Requests whose prompt_tokens were checked against the API count the same."""
        assert count_messages(conv, CL100K, tools=tools) == expected

    def test_nested_tool_schema(self) -> None:
        """The recipe tool (arrays of objects, enums, required) is 106 tokens."""
        assert count_messages([Message.user("hello")], CL100K, tools=[RECIPE]) == 106

    def test_each_tool_result_is_its_own_message(self) -> None:
        """A tool message with two results pays the message framing twice."""
        counter = TokenCounter(O200K)
        one = counter.message(Message.tool("a", "sunny"))
        two = Message("tool", (ToolResult("a", "sunny"), ToolResult("b", "sunny")))
        assert counter.message(two) == 2 * one
        assert one == 3 + 1 + O200K.count("sunny")

    def test_parallel_tool_calls(self) -> None:
        """Each tool call adds its name, its arguments and 3 tokens."""
        counter = TokenCounter(O200K)
        calls = [ToolCall("1", "search", '{"q": "a"}'), ToolCall("2", "fetch", "{}")]
        msg = Message.assistant(tool_calls=calls)
        parts = sum(3 + O200K.count(c.name) + O200K.count(c.arguments) for c in calls)
        assert counter.message(msg) == 3 + O200K.count("assistant") + parts

    def test_thinking_counts_its_text(self) -> None:
        """A thinking part sent as ``reasoning_content`` counts its text."""
        counter = TokenCounter(O200K)
        (msg,) = from_openai(
            [
                {
                    "role": "assistant",
                    "content": "Done.",
                    "reasoning_content": "First check the booking date.",
                }
            ]
        )
        thought = msg.parts[0]
        assert isinstance(thought, Thinking)
        assert counter.part(thought) == O200K.count(thought.text)
        assert counter.breakdown(msg)["thinking"] == O200K.count(thought.text)

    def test_responses_uses_openai_framing(self) -> None:
        """The Responses provider frames messages like Chat Completions."""
        conv = [Message.system("Be brief."), Message.user("hi")]
        assert count_messages(conv, O200K, provider="responses") == count_messages(
            conv, O200K
        )


SIGNED: list[dict[str, Any]] = [
    {"role": "user", "content": "Plan the refactor."},
    {
        "role": "assistant",
        "content": [
            {
                "type": "thinking",
                "thinking": "Let me think about the modules. " * 100,
                "signature": "sig",
            },
            {"type": "text", "text": "Here is the plan."},
        ],
    },
    {"role": "user", "content": "Go on."},
]
"""An Anthropic conversation with a long signed thinking block."""


def _written(conv: list[Message], provider: Provider) -> list[Message]:
    """``conv`` as ``to_<provider>`` writes it, read back."""
    if provider == "openai":
        return from_openai(to_openai(conv))
    if provider == "responses":
        return from_responses(to_responses(conv))
    req = to_anthropic(conv)
    return from_anthropic(req.messages, system=req.system)


class TestWhatIsSent:
    """A count covers what the provider's writer sends, nothing it leaves out."""

    @pytest.mark.parametrize("provider", ["openai", "responses", "anthropic"])
    def test_count_equals_what_is_written(self, provider: Provider) -> None:
        """Another provider's thinking is not counted where it is not written."""
        conv = from_anthropic(SIGNED)
        counted = count_messages(conv, O200K, provider=provider)
        sent = count_messages(_written(conv, provider), O200K, provider=provider)
        assert counted == sent
        thinking = O200K.count(SIGNED[1]["content"][0]["thinking"])
        if provider == "anthropic":  # written: counted
            assert counted > thinking
        else:
            assert counted < thinking

    @pytest.mark.parametrize("shift", [0, 5])
    def test_equal_messages_read_otherwise_are_counted_otherwise(
        self, shift: int
    ) -> None:
        """A counter that counted a conversation read from Chat (its reasoning
        not sent to Anthropic) counts the same messages made by hand (their
        thinking sent) anew, not with the running totals it kept by equality:
        a shared counter made fit's pinned content 43 tokens more than a
        fresh count of it. ``shift``: the second conversation starts with
        other messages, so only runs of it match (``best_spans``)."""
        turns = []
        for i in range(40):
            turns += [
                {"role": "user", "content": f"Step {i}?"},
                {
                    "role": "assistant",
                    "content": f"Done {i}.",
                    "reasoning_content": f"Think about step {i} carefully. " * 4,
                },
            ]
        read = from_openai(turns)
        made = [Message.user("A new start.") for _ in range(shift)] + [
            Message(m.role, m.parts, id=m.id) for m in read
        ]
        assert made[shift:] == read  # equal: meta is not compared
        counter = TokenCounter(O200K, "anthropic")
        counter.messages(read)
        assert counter.messages(made) == TokenCounter(O200K, "anthropic").messages(made)
        assert counter.running(made) == TokenCounter(O200K, "anthropic").running(made)

    def test_fit_takes_what_is_sent(self) -> None:
        """fit() for OpenAI no longer refuses a request whose written form fits."""
        conv = from_anthropic(SIGNED)[:2]
        fitted = fit(conv, limit=300, tokenizer=O200K, provider="openai")
        assert fitted.report.tokens_after <= 300
        assert len(fitted.messages) == 2

    @pytest.mark.parametrize("provider", ["openai", "responses", "anthropic"])
    def test_own_reasoning_is_counted(self, provider: Provider) -> None:
        """Reasoning read from the provider's own shape is written and counted."""
        text = "Check the date first. " * 20
        if provider == "openai":
            conv = from_openai(
                [{"role": "assistant", "content": "ok", "reasoning_content": text}]
            )
        elif provider == "responses":
            item = {"type": "reasoning", "id": "rs_1", "encrypted_content": "e"}
            summary = [{"type": "summary_text", "text": text}]
            conv = from_responses([{**item, "summary": summary}])
        else:
            block = {"type": "thinking", "thinking": text, "signature": "s"}
            conv = from_anthropic([{"role": "assistant", "content": [block]}])
        counted = count_messages(conv, O200K, provider=provider)
        assert counted > O200K.count(text)
        assert counted == count_messages(
            _written(conv, provider), O200K, provider=provider
        )

    def test_responses_counts_no_name(self) -> None:
        """Responses items carry no name (to_responses drops it): none is counted."""
        named = from_openai(
            [
                {"role": "user", "name": "alice", "content": "hi"},
                {"role": "user", "name": "bob", "content": "yo"},
            ]
        )
        counted = count_messages(named, O200K, provider="responses")
        sent = count_messages(to_responses(named), O200K, provider="responses")
        assert counted == sent
        assert count_messages(named, O200K) > counted  # Chat sends the names

    def test_equal_messages_from_two_shapes_do_not_share_a_count(self) -> None:
        """One counter, two equal messages: the one whose thinking is sent counts
        it, the one whose thinking is left out does not, in either order."""
        sent = from_openai(
            [{"role": "assistant", "content": "ok", "reasoning_content": "Plan it."}]
        )[0]
        unsent = Message("assistant", sent.parts)  # no meta: not sent to Chat
        assert sent == unsent
        for first, second in ((sent, unsent), (unsent, sent)):
            counter = TokenCounter(O200K)
            a, b = counter.message(first), counter.message(second)
            assert (a > b) == (first is sent)
            assert TokenCounter(O200K).message(second) == b


class TestAnthropicFraming:
    def test_message_framing(self) -> None:
        """Anthropic messages add 3 tokens and do not count the role."""
        counter = TokenCounter(O200K, "anthropic")
        assert counter.message(Message.user("hello world")) == 3 + 2
        assert counter.messages([Message.user("hello world")]) == 5

    def test_tool_blocks(self) -> None:
        """tool_use counts name and input JSON, tool_result its content, +3 each."""
        counter = TokenCounter(O200K, "anthropic")
        call = ToolCall("toolu_1", "Read", '{"file_path":"/a.ex"}')
        result = ToolResult("toolu_1", "defmodule A do\nend")
        assert counter.part(call) == 3 + O200K.count("Read") + O200K.count(
            call.arguments
        )
        assert counter.part(result) == 3 + O200K.count(result.content)  # type: ignore[arg-type]  # content is a str here

    def test_tools_are_json_plus_system_prompt(self) -> None:
        """Tools cost Anthropic's tool-use system prompt plus each schema's JSON."""
        counter = TokenCounter(O200K, "anthropic")
        tool = spec("Read", "Read a file", type="object", properties={})
        schema = {
            "name": "Read",
            "description": "Read a file",
            "input_schema": {"type": "object", "properties": {}},
        }
        expected = ANTHROPIC_TOOLS_OVERHEAD + O200K.count(json.dumps(schema))
        assert counter.tools([tool]) == expected
        assert counter.tools([]) == 0


class TestImages:
    @pytest.mark.parametrize(
        ("width", "height", "detail", "expected"),
        [
            (512, 512, "high", 255),
            (1024, 1024, "high", 765),
            (2048, 4096, "high", 1105),
            (2048, 4096, "low", 85),
            (1024, 1024, "auto", 765),
            (None, None, None, 765),
        ],
    )
    def test_openai_tile_rule(
        self, width: int | None, height: int | None, detail: str | None, expected: int
    ) -> None:
        """OpenAI images cost 85 + 170 per 512 px tile after scaling (low: 85)."""
        img = Image("https://example.com/x.png", detail, width, height)
        assert TokenCounter(O200K).image(img) == expected

    def test_size_read_from_data_uri(self) -> None:
        """A data: URI without a size is measured from its PNG header."""
        counter = TokenCounter(O200K)
        assert counter.image(Image(png(512, 512))) == 255
        assert counter.image(Image(png(2048, 4096))) == 1105

    def test_anthropic_rule(self) -> None:
        """Anthropic images cost w*h/750, capped at 1600 (unknown size: 1600)."""
        counter = TokenCounter(O200K, "anthropic")
        assert counter.image(Image(png(200, 200))) == 54
        assert counter.image(Image("https://example.com/x.png")) == 1600
        assert counter.image(Image(png(4000, 3000))) == 1600

    def test_images_in_messages_and_results(self) -> None:
        """Images count inside user messages and inside tool results."""
        counter = TokenCounter(O200K)
        img = Image("https://e.com/i.png", "low")
        user = Message.user([Text("look"), img])
        assert counter.breakdown(user)["image"] == 85
        result = Message.tool("c1", (Text("screenshot"), img))
        assert counter.message(result) == 3 + 1 + O200K.count("screenshot") + 85


class TestRenderOpenAITools:
    def test_no_parameters(self) -> None:
        """A tool without properties renders as a function of no arguments."""
        out = render_openai_tools([spec("ping", "Ping.", type="object")])
        assert out == (
            "namespace functions {\n\n// Ping.\ntype ping = () => any;\n\n"
            "} // namespace functions"
        )

    def test_nested_optional_enum_array(self) -> None:
        """Nested objects indent, optional props get '?', enums and arrays render."""
        out = render_openai_tools([RECIPE])
        assert out == (
            "namespace functions {\n\n"
            "type get_recipe = (_: {\n"
            "ingredients: {\n"
            "  name: string,\n"
            '  unit: "grams" | "ml" | "cups" | "pieces" | "teaspoons",\n'
            "  amount: number,\n"
            "}[],\n"
            "// Steps to prepare the recipe (no numbering)\n"
            "instructions: string[],\n"
            "// Total time to prepare the recipe in minutes\n"
            "time_to_cook: number,\n"
            "}) => any;\n\n"
            "} // namespace functions"
        )

    def test_unions_and_unknown_types(self) -> None:
        """Type lists and anyOf render as unions; unknown types as any."""
        tool = spec(
            "f",
            type="object",
            properties={
                "a": {"type": ["string", "null"]},
                "b": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
                "c": {},
                "d": {"type": "array"},
            },
        )
        out = render_openai_tools([tool])
        assert "a?: string | null," in out
        assert "b?: number | boolean," in out
        assert "c?: any," in out
        assert "d?: any[]," in out

    def test_property_that_is_not_a_schema(self) -> None:
        """A property whose schema is not an object renders as any."""
        tool = spec("f", type="object", properties={"x": "text", "y": None})
        out = render_openai_tools([tool])
        assert "x?: any," in out
        assert "y?: any," in out


WEATHER: dict[str, Any] = {
    "name": "weather",
    "description": "Weather now",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


class TestRequestBodies:
    def test_openai_bodys_tools_count(self) -> None:
        """A Chat body's tools count as if given, system adjustment included."""
        tools = [{"type": "function", "function": WEATHER}]
        msgs = [Message.system("You are terse."), Message.user("Paris?")]
        body = {"model": "gpt-4o", "messages": to_openai(msgs), "tools": tools}
        given = count_messages(msgs, CL100K, tools=tools)
        assert count_messages(body, CL100K) == given
        assert given > count_messages(msgs, CL100K)
        assert fit(body, tokenizer=CL100K, limit=10_000).report.tokens_before == given

    def test_anthropic_bodys_tools_count(self) -> None:
        """An Anthropic body's tools count, with the tool-use system prompt."""
        tool = {
            "name": "weather",
            "description": "Weather now",
            "input_schema": WEATHER["parameters"],
        }
        body: dict[str, Any] = {
            "system": "You are terse.",
            "messages": [{"role": "user", "content": "Paris?"}],
            "tools": [tool],
        }
        counted = count_messages(body, CL100K, provider="anthropic")
        no_tools: dict[str, Any] = {**body, "tools": []}
        bare = count_messages(no_tools, CL100K, provider="anthropic")
        assert counted == count_messages(
            body, CL100K, provider="anthropic", tools=[tool]
        )
        assert counted > bare + ANTHROPIC_TOOLS_OVERHEAD

    def test_tools_given_replace_the_bodys(self) -> None:
        """Tools passed as ``tools=`` are counted instead of the body's own."""
        body = {
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": WEATHER}],
        }
        other = [ToolSpec("ls", "List files.")]
        expected = count_messages([Message.user("hi")], CL100K, tools=other)
        assert count_messages(body, CL100K, tools=other) == expected


class TestTokenCounter:
    def test_same_message_counted_once(self) -> None:
        """Counting the same message twice calls the tokenizer only the first time."""
        tok = CountingTokenizer()
        counter = TokenCounter(tok)
        msg = Message.user("one two three")
        first = counter.message(msg)
        calls = len(tok.calls)
        assert counter.message(msg) == first
        assert len(tok.calls) == calls > 0

    def test_equal_content_shares_cache(self) -> None:
        """A different message object with equal content (new id) hits the cache."""
        tok = CountingTokenizer()
        counter = TokenCounter(tok)
        counter.message(Message.user("one two"))
        calls = len(tok.calls)
        assert counter.message(Message.user("one two")) == 3 + 1 + 2
        assert len(tok.calls) == calls

    def test_recount_after_append_costs_one_message(self) -> None:
        """After one append, only the new message reaches the tokenizer."""
        tok = CountingTokenizer()
        counter = TokenCounter(tok)
        conv = [Message.user(f"message number {i}") for i in range(1000)]
        before = counter.messages(conv)
        tok.calls.clear()
        conv.append(Message.assistant("a brand new reply"))
        after = counter.messages(conv)
        assert after - before == 3 + 1 + 4
        assert tok.calls == ["assistant", "a brand new reply"]

    def test_changed_history_is_recounted(self) -> None:
        """Replacing or dropping an earlier message gives the right total."""
        counter = TokenCounter(CountingTokenizer())
        conv = [Message.user("a b c"), Message.user("d"), Message.user("e f")]
        counter.messages(conv)
        conv[1] = Message.user("x y z w")
        fresh = TokenCounter(CountingTokenizer())
        assert counter.messages(conv) == fresh.messages(conv)
        assert counter.messages(conv[1:]) == fresh.messages(conv[1:])
        assert counter.messages([]) == 3

    def test_cache_is_bounded(self) -> None:
        """A full cache keeps the entries used last and still counts correctly."""
        tok = CountingTokenizer()
        counter = TokenCounter(tok, cache_size=2)
        words = ("alpha", "beta", "gamma", "delta", "epsilon")
        msgs = [Message.user(w) for w in words]
        counts = [counter.message(m) for m in msgs]
        tok.calls.clear()
        # The two used last are kept.
        assert counter.message(msgs[4]) == counts[4]
        assert counter.message(msgs[3]) == counts[3]
        assert tok.calls == []
        # Used four entries ago: evicted, counted again, the same count.
        assert counter.message(msgs[0]) == counts[0]
        assert "alpha" in tok.calls

    def test_clear(self) -> None:
        """clear() forgets cached counts."""
        tok = CountingTokenizer()
        counter = TokenCounter(tok)
        msg = Message.user("x")
        counter.message(msg)
        counter.clear()
        tok.calls.clear()
        counter.message(msg)
        assert tok.calls

    def test_text_counted_once(self) -> None:
        """``text()`` asks the tokenizer once per distinct text."""
        tok = FakeTokenizer()
        counter = TokenCounter(tok)
        assert counter.text("one two three") == 3
        assert counter.text("one two three") == 3
        assert counter.text("") == 0
        assert tok.calls == ["one two three", ""]

    def test_text_cache_is_bounded(self) -> None:
        """The text cache holds ``cache_size`` texts, evicting the oldest."""
        tok = FakeTokenizer()
        counter = TokenCounter(tok, cache_size=2)
        for text in ("alpha", "beta", "gamma"):
            counter.text(text)
        tok.reset()
        assert (counter.text("beta"), counter.text("gamma")) == (1, 1)
        assert tok.calls == []
        assert counter.text("alpha") == 1
        assert tok.calls == ["alpha"]

    def test_clear_empties_the_text_cache(self) -> None:
        """``clear()`` forgets cached texts too."""
        tok = FakeTokenizer()
        counter = TokenCounter(tok)
        counter.text("a b")
        counter.clear()
        tok.reset()
        assert counter.text("a b") == 2
        assert tok.calls == ["a b"]

    @pytest.mark.parametrize("provider", ["openai", "anthropic"])
    def test_tool_result_text_through_the_cache(self, provider: Provider) -> None:
        """A tool result's text, alone or beside an image, is counted via ``text()``."""
        tok = FakeTokenizer()
        counter = TokenCounter(tok, provider)
        img = Image("https://e.com/i.png", "low", 512, 512)
        plain = ToolResult("c1", "w " * 40)
        mixed = ToolResult("c2", (Text("w " * 40), img, Text("tail")))
        overhead = 3 if provider == "anthropic" else 0
        assert counter.part(plain) == overhead + 40
        assert counter.part(mixed) == overhead + 40 + counter.image(img) + 1
        assert tok.calls == ["w " * 40, "tail"]
        tok.reset()
        assert counter.part(plain) == overhead + 40
        assert counter.part(mixed) == overhead + 40 + counter.image(img) + 1
        assert counter.text("tail") == 1
        assert tok.calls == []

    @pytest.mark.parametrize("provider", ["openai", "anthropic"])
    def test_the_same_tools_are_counted_once(self, provider: Provider) -> None:
        """Tools sent again (equal schemas, new objects) reach the tokenizer once;
        a schema changed in place after it was counted is counted anew."""
        tok = CountingTokenizer()
        counter = TokenCounter(tok, provider)
        fresh = TokenCounter(CountingTokenizer(), provider)

        def tools() -> tuple[ToolSpec, ...]:
            return (
                spec(
                    "search",
                    "Find pages",
                    type="object",
                    properties={
                        "q": {"type": "string", "description": "words to look for"}
                    },
                ),
                spec("ls", "List a folder", type="object"),
            )

        first = counter.tools(tools())
        assert first == fresh.tools(tools()) > 0
        tok.calls.clear()
        again = tools()
        assert counter.tools(again) == first
        assert counter.messages([Message.user("hi")], tools=again) == fresh.messages(
            [Message.user("hi")], tools=tools()
        )
        assert all(
            "Find pages" not in c and "List a folder" not in c for c in tok.calls
        )
        # In place: the same objects, a longer description in the schema.
        props = again[0].parameters["properties"]
        props["q"]["description"] = "words to look for " + "and more words " * 20
        grown = counter.tools(again)
        assert grown == TokenCounter(CountingTokenizer(), provider).tools(again)
        assert grown > first

    def test_tools_holding_what_cannot_be_copied(self) -> None:
        """A schema value that cannot be copied (a lock) is counted as before, as
        its text, each time."""
        import threading

        lock = threading.Lock()
        tools = (spec("a", "d", type="object", x=lock),)
        counter = TokenCounter(CountingTokenizer(), "anthropic")
        first = counter.tools(tools)
        assert first == counter.tools(tools) > 0
        assert any(str(lock) in c for c in counter.tokenizer.calls)  # type: ignore[attr-defined]  # the test's tokenizer

    def test_breakdown_sums_to_message(self) -> None:
        """The breakdown's values sum to the message count."""
        counter = TokenCounter(O200K)
        msg = Message.assistant(
            [Thinking("hmm"), Text("Let me look.")],
            tool_calls=[ToolCall("1", "search", '{"q":"x"}')],
            name="bot",
            meta={"openai": {"reasoning_content": True}},  # sent: counted
        )
        parts = counter.breakdown(msg)
        assert set(parts) == {"framing", "thinking", "text", "tool_call"}
        assert sum(parts.values()) == counter.message(msg)
        assert parts["framing"] == 3 + 1 + 1 + O200K.count("bot")

    def test_unhashable_content_still_counted(self) -> None:
        """A message holding a list (unhashable) is counted without the cache."""
        counter = TokenCounter(O200K)
        result = ToolResult("c", [Text("a b")])  # type: ignore[arg-type]  # a list on purpose
        msg = Message("tool", (result,))
        assert counter.message(msg) == 3 + 1 + O200K.count("a b")

    def test_bad_configuration(self) -> None:
        """Unknown providers and empty caches fail at construction."""
        with pytest.raises(ContextWindowError, match="unknown provider"):
            TokenCounter(O200K, "gemini")  # type: ignore[arg-type]  # invalid on purpose
        with pytest.raises(ContextWindowError, match="cache_size"):
            TokenCounter(O200K, cache_size=0)

    def test_unknown_part_type(self) -> None:
        """A part of no known kind is an error naming its type, not a silent 0."""
        counter = TokenCounter(O200K)
        with pytest.raises(ContextWindowError, match="cannot count part of type dict"):
            counter.part({"kind": "audio"})  # type: ignore[arg-type]  # invalid on purpose

    def test_properties(self) -> None:
        """The counter exposes its tokenizer and provider."""
        counter = TokenCounter(O200K, "anthropic")
        assert (counter.tokenizer, counter.provider) == (O200K, "anthropic")

    def test_count_messages_matches_counter(self) -> None:
        """count_messages equals a fresh TokenCounter's messages()."""
        conv = [Message.system("s"), Message.user("u"), Message.assistant("a")]
        tools = [spec("f", "F", type="object", properties={"x": {"type": "string"}})]
        providers: tuple[Provider, ...] = ("openai", "anthropic", "responses")
        for provider in providers:
            expected = TokenCounter(O200K, provider).messages(conv, tools=tools)
            got = count_messages(conv, O200K, provider=provider, tools=tools)
            assert got == expected


class BadTokenizer:
    """Returns ``value`` for any non-empty text (0 for ``""``, so it passes
    the one trial count ``as_tokenizer`` makes)."""

    name = "bad"
    exact = False

    def __init__(self, value: object) -> None:
        self.value = value

    def count(self, text: str) -> object:
        return self.value if text else 0


class TestTokenizerResults:
    @pytest.mark.parametrize(
        ("value", "error"),
        [
            (-3, ArgumentValueError),
            (1.5, ArgumentTypeError),
            (None, ArgumentTypeError),
            (True, ArgumentTypeError),
            ("3", ArgumentTypeError),
        ],
    )
    @pytest.mark.parametrize("provider", ["openai", "anthropic", "responses"])
    def test_a_bad_count_names_the_tokenizer(
        self, value: object, error: type[Exception], provider: Provider
    ) -> None:
        """A count that is not an int >= 0 is refused where it enters the counter."""
        conv = [Message.user("the secret sk-abcdefgh"), Message.assistant("ok")]
        tok = BadTokenizer(value)
        with pytest.raises(error, match=r"^tokenizer: .*returned") as info:
            count_messages(conv, tok, provider=provider)  # type: ignore[arg-type]  # on purpose
        assert "sk-abcdefgh" not in str(info.value)  # the text is not shown
        with pytest.raises(error, match=r"^tokenizer: "):
            fit(conv, limit=10, tokenizer=tok, provider=provider)  # type: ignore[arg-type]  # on purpose

    def test_a_good_user_tokenizer_counts_as_before(self) -> None:
        """A user's tokenizer returning ints is counted as it says."""
        conv = [Message.user("one two three")]
        assert count_messages(conv, CountingTokenizer()) == count_messages(
            conv, FakeTokenizer()
        )


def test_running_totals_of_moved_runs_are_counted_anew() -> None:
    """Running totals of a list holding the last list's messages elsewhere
    (the oldest dropped, a run made one message, messages appended) equal a
    fresh counter's."""
    import random

    rng = random.Random(5)
    pool = [Message.user(f"message {i} " + "word " * (i % 7)) for i in range(400)]
    for _ in range(30):
        tok = CountingTokenizer()
        counter = TokenCounter(tok)
        base = pool[: rng.randrange(100, 400)]
        counter.running(base)
        edited = list(base)
        for _ in range(rng.randrange(1, 4)):
            i = rng.randrange(1, len(edited))
            j = min(len(edited), i + rng.randrange(1, 20))
            kind = rng.random()
            if kind < 0.4:
                del edited[1:i]
            elif kind < 0.7:
                edited[i:j] = [Message.assistant(f"line {i} of a run")]
            else:
                edited += [Message.user(f"new {i} {k}") for k in range(3)]
        got = counter.running(edited)
        assert got == TokenCounter(CountingTokenizer()).running(edited)


def test_running_totals_found_among_several_remembered_lists() -> None:
    """A list made from one of several lists counted before (not the last)
    gets the running totals a fresh counter gives, whichever it was made
    from and whatever else was counted since."""
    import random

    rng = random.Random(11)
    pool = [Message.user(f"message {i} " + "word " * (i % 5)) for i in range(600)]
    for _ in range(30):
        counter = TokenCounter(CountingTokenizer())
        lists = [pool[k * 150 : k * 150 + rng.randrange(90, 150)] for k in range(4)]
        for seq in lists:
            counter.running(seq)
        source = rng.choice(lists)
        cut = rng.randrange(1, len(source) - 10)
        edited = [source[0], *source[cut:], Message.assistant("a line"), pool[-1]]
        got = counter.running(edited)
        assert got == TokenCounter(CountingTokenizer()).running(edited)


class TestArguments:
    """What is not a count, a message or a text is refused, naming it."""

    @pytest.mark.parametrize("bad", [-10_000, -1])
    def test_learn_refuses_a_negative_count(self, bad: int) -> None:
        """A negative count would be summed into every total: it is refused."""
        counter = TokenCounter(O200K)
        m = Message.assistant("word " * 500)
        with pytest.raises(ArgumentValueError, match=r"^tokens: expected an int >= 0"):
            counter.learn(m, bad)
        conv = [Message.user("task"), m, Message.user("final?")]
        fitted = fit(conv, limit=100, tokenizer=counter)
        assert fitted.report.tokens_after == count_messages(fitted.messages, O200K)
        assert fitted.report.tokens_after > 0

    @pytest.mark.parametrize("bad", [True, 1.5, float("nan"), "12", None])
    def test_learn_refuses_what_is_no_count(self, bad: object) -> None:
        """A bool, a float or a str is no count (it failed later, or summed as 1)."""
        with pytest.raises(ArgumentTypeError, match=r"^tokens: "):
            TokenCounter(O200K).learn(Message.user("x"), bad)  # type: ignore[arg-type]  # the wrong type on purpose
        with pytest.raises(ArgumentTypeError, match=r"^msg: expected a Message"):
            TokenCounter(O200K).learn("x", 3)  # type: ignore[arg-type]  # the wrong type on purpose

    def test_learn_takes_a_count(self) -> None:
        """A count >= 0 is taken as it is (the store's)."""
        counter = TokenCounter(O200K)
        m = Message.user("hello world")
        counter.learn(m, 0)
        assert counter.message(m) == 0

    @pytest.mark.parametrize("bad", [None, [], 0, b""])
    def test_text_is_a_str(self, bad: object) -> None:
        """``None`` or ``[]`` is no empty text: refused, not counted as 0."""
        with pytest.raises(ArgumentTypeError, match=r"^text: expected a str"):
            TokenCounter("gpt-4o").text(bad)  # type: ignore[arg-type]  # the wrong type on purpose

    @pytest.mark.parametrize("bad", [False, 0, "", None])
    def test_falsy_tools_are_not_no_tools(self, bad: object) -> None:
        """Only an empty list or tuple is no tools; ``False``, ``0``, ``""`` are not."""
        counter = TokenCounter("gpt-4o")
        conv = [Message.user("hi")]
        with pytest.raises(ContextWindowError, match=r"^tools: "):
            counter.tools(bad)  # type: ignore[arg-type]  # the wrong type on purpose
        with pytest.raises(ContextWindowError, match=r"^tools: "):
            counter.messages(conv, tools=bad)  # type: ignore[arg-type]  # the wrong type on purpose
        with pytest.raises(ContextWindowError, match=r"^tools: "):
            count_messages(conv, "gpt-4o", tools=bad)  # type: ignore[arg-type]  # the wrong type on purpose
        assert counter.tools([]) == counter.tools(()) == 0
        assert counter.messages(conv, tools=[]) == counter.messages(conv)

    @pytest.mark.parametrize("bad", [None, 5, "hi", {"role": "user", "content": "hi"}])
    def test_message_and_breakdown_take_a_message(self, bad: object) -> None:
        """A non-Message is named, not an AttributeError from deep inside."""
        counter = TokenCounter("gpt-4o")
        with pytest.raises(ArgumentTypeError, match=r"^msg: expected a Message"):
            counter.message(bad)  # type: ignore[arg-type]  # the wrong type on purpose
        with pytest.raises(ArgumentTypeError, match=r"^msg: expected a Message"):
            counter.breakdown(bad)  # type: ignore[arg-type]  # the wrong type on purpose
        with pytest.raises(ArgumentTypeError, match=r"^img: expected an Image"):
            counter.image(bad)  # type: ignore[arg-type]  # the wrong type on purpose
