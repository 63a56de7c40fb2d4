"""A continued conversation is read from its tail; the upstream's usage calibrates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.proxy._upstream import Recorder, anthropic_turn, openai_turn, running

from contextwindow import Message, TokenCounter
from contextwindow.formats._coerce import coerce_messages, coerce_tools
from contextwindow.formats.anthropic import to_anthropic
from contextwindow.formats.openai_chat import to_openai
from contextwindow.formats.openai_responses import to_responses
from contextwindow.models import get_tokenizer
from contextwindow.proxy import FitterConfig, ProxyConfig, create_app
from contextwindow.proxy._fitter import Fitter, _conversation, _Request, _Seen
from contextwindow.proxy._shapes import APIS, Api
from contextwindow.store import open_store
from contextwindow.testing import conversations
from contextwindow.tokens.calibration import Calibration

# Generated tool results hold images, which a Chat tool message cannot carry:
# written for Chat they are left out with this warning (formats.openai_chat).
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*an image has no equivalent in the openai tool result"
    ":contextwindow.errors.ContentDroppedWarning"
)


PATHS = {
    "openai": "/v1/chat/completions",
    "anthropic": "/v1/messages",
    "responses": "/v1/responses",
}
CLAUDE = "claude-sonnet-4-6"
N = 5
"""Turns of the calibration test's first request (it fits, the next too)."""


def _body(provider: str, conv: list[Message]) -> dict[str, Any]:
    """``conv`` as a request body of ``provider``'s API, as JSON would bring it."""
    if provider == "openai":
        body: dict[str, Any] = {"messages": to_openai(conv)}
    elif provider == "anthropic":
        body = dict(to_anthropic(conv).body())
    else:
        body = {"input": to_responses(conv)}
    doc: dict[str, Any] = json.loads(json.dumps({"model": "gpt-4o", **body}))
    return doc


def _request(api: Api, body: dict[str, Any]) -> _Request:
    counter = TokenCounter(get_tokenizer("gpt-4o"), api.provider)
    req = _Request(api, b"", body, "gpt-4o", counter, Calibration())
    req.items, req.fixed = _conversation(api, body)
    return req


class TestTail:
    @settings(max_examples=60, deadline=None)
    @given(
        st.sampled_from(sorted(PATHS)),
        conversations(min_turns=1, max_turns=5),
        st.data(),
    )
    def test_tail_reads_as_the_whole(
        self, provider: str, conv: list[Message], data: st.DataObject
    ) -> None:
        """Reading only the items after the last request's gives the messages
        reading the whole request gives (or says it cannot, and the whole is read)."""
        api = APIS[PATHS[provider]]
        whole = _request(api, _body(provider, conv))
        items = whole.items
        k = data.draw(st.integers(1, len(items)), label="items seen before")
        before = _request(api, dict(whole.body))
        before.items = items[:k]
        seen = _Seen.of(before, before.read(items[:k]))
        if seen is None:
            return
        got = seen.extended(whole)
        if got is not None:
            assert got == whole.read(items)

    @pytest.mark.parametrize("provider", sorted(PATHS))
    def test_an_agents_turn_is_read_from_the_tail(self, provider: str) -> None:
        """An agent's next turn (its reply, a tool exchange) takes the fast path,
        which keeps the earlier messages as the very objects read before."""
        api = APIS[PATHS[provider]]
        conv = [Message.system("Be brief."), Message.user("read a")]
        conv2 = [*conv, Message.assistant("read."), Message.user("read b")]
        first = _request(api, _body(provider, conv))
        old = first.read(first.items)
        seen = _Seen.of(first, old)
        assert seen is not None
        got = seen.extended(_request(api, _body(provider, conv2)))
        assert got is not None
        assert [m.text for m in got] == [m.text for m in conv2]
        assert all(a is b for a, b in zip(got, old, strict=False))

    def test_a_call_joining_the_last_one_reads_the_whole(self) -> None:
        """A Responses call item after a call item joins it in one message: the
        boundary check sees it, and the whole request is read."""
        api = APIS["/v1/responses"]
        call = {"type": "function_call", "name": "f", "arguments": "{}"}
        items = [
            {"role": "user", "content": "go"},
            call | {"call_id": "a"},
            call | {"call_id": "b"},
        ]
        first = _request(api, {"model": "gpt-4o", "input": items[:2]})
        seen = _Seen.of(first, first.read(first.items))
        assert seen is not None
        whole = _request(api, {"model": "gpt-4o", "input": items})
        assert seen.extended(whole) is None
        assert len(whole.read(items)) == 2  # the two calls are one message


class TestFitter:
    def _chat(self, turns: int) -> dict[str, Any]:
        msgs: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
        for i in range(turns):
            msgs += openai_turn(i, f"part {i}: " + "data " * 200)
            msgs.append({"role": "assistant", "content": f"read {i}"})
        return {"model": "gpt-4o", "max_tokens": 500, "messages": msgs}

    def _plan(self, fitter: Fitter, body: dict[str, Any], cid: str) -> Any:
        raw = json.dumps(body).encode()
        return fitter.plan(APIS["/v1/chat/completions"], raw, json.loads(raw), cid)

    def test_replicas_alternating_on_one_sqlite_store(self, tmp_path: Path) -> None:
        """Two fitters on one store, each continuing the conversation the other
        moved: the log holds every message once, in order."""
        store = open_store(f"sqlite:///{tmp_path / 'p.db'}")
        try:
            fitters = [Fitter(FitterConfig(window=3_000), store) for _ in range(2)]
            for t in range(1, 13):
                plan = self._plan(fitters[t % 2], self._chat(t), "c")
                assert plan.tokens_forwarded <= 2_500
            # Three requests in a row on one replica: the fast path, no reload.
            for t in range(13, 16):
                plan = self._plan(fitters[0], self._chat(t), "c")
            entry = fitters[0]._entries["c"]
            assert entry.seen is not None
            assert entry.version == store.version("c")
            read = _request(APIS["/v1/chat/completions"], self._chat(15))
            assert store.load("c").messages == tuple(read.read(read.items))
        finally:
            store.close()

    def test_continuation_keeps_the_objects_read_before(self, tmp_path: Path) -> None:
        """The 2nd request's earlier messages are the objects the 1st read: only
        the appended items were read."""
        store = open_store(f"sqlite:///{tmp_path / 'p.db'}")
        try:
            fitter = Fitter(FitterConfig(window=3_000), store)
            self._plan(fitter, self._chat(3), "c")
            seen = fitter._entries["c"].seen
            assert seen is not None
            old = seen.messages
            self._plan(fitter, self._chat(4), "c")
            now = fitter._entries["c"].seen
            assert now is not None
            assert len(now.messages) == len(old) + 4
            assert all(a is b for a, b in zip(now.messages, old, strict=False))
        finally:
            store.close()

    def test_the_same_tools_are_read_once(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An agent sends the same tools with every turn: they are read (and
        counted) for the first request only; tools that change are read again,
        and the requests' token counts are those of a fresh read."""
        import contextwindow.proxy._fitter as fitter_module

        read: list[object] = []
        coerce = coerce_tools  # the one the module imports

        def counted(tools: object) -> Any:
            read.append(tools)
            return coerce(tools)

        monkeypatch.setattr(fitter_module, "coerce_tools", counted)

        def tool(name: str, words: int) -> dict[str, Any]:
            schema = {"type": "object", "properties": {"q": {"type": "string"}}}
            return {
                "type": "function",
                "function": {
                    "name": name,
                    "description": "look it up " * words,
                    "parameters": schema,
                },
            }

        store = open_store(f"sqlite:///{tmp_path / 'p.db'}")
        try:
            fitter = Fitter(FitterConfig(window=3_000), store)
            tools = [tool("search", 50), tool("fetch", 80)]
            plans = [
                self._plan(fitter, self._chat(t) | {"tools": tools}, "c")
                for t in range(1, 5)
            ]
            assert len(read) == 1
            changed = [tool("search", 50), tool("fetch", 90)]
            plans.append(self._plan(fitter, self._chat(5) | {"tools": changed}, "c"))
            assert len(read) == 2
            for t, plan in enumerate(plans, 1):
                body = self._chat(t) | {"tools": tools if t < 5 else changed}
                alone = Fitter(FitterConfig(window=3_000), None)
                raw = json.dumps(body).encode()
                want = alone.plan(APIS["/v1/chat/completions"], raw, json.loads(raw))
                assert plan.tokens_in == want.tokens_in, t
        finally:
            store.close()

    def test_a_fork_is_a_conversation_of_its_own(self, tmp_path: Path) -> None:
        """A history that leaves the known one at some turn is kept as its own
        conversation (named by the fork), which its next turns continue; the
        original's log is untouched, and it goes on as before."""
        store = open_store(f"sqlite:///{tmp_path / 'p.db'}")
        try:
            fitter = Fitter(FitterConfig(window=3_000), store)
            original = self._chat(10)
            self._plan(fitter, original, "c")
            fork = self._chat(5)
            fork["messages"] = [*fork["messages"], {"role": "user", "content": "no"}]
            plans = []
            for extra in range(3):
                fork["messages"] = [
                    *fork["messages"],
                    *openai_turn(90 + extra, "other data " * 150),
                ]
                plans.append(self._plan(fitter, fork, "c"))
            ids = {p.conversation for p in plans}
            assert len(ids) == 1
            (fid,) = ids
            assert fid is not None
            assert fid.startswith("c~")
            assert all(p.tokens_forwarded <= 2_500 for p in plans)
            read = _request(APIS["/v1/chat/completions"], fork)
            assert store.load(fid).messages == tuple(read.read(read.items))
            # The original goes on where it was, from its tail.
            seen = fitter._entries["c"].seen
            assert seen is not None
            plan = self._plan(fitter, self._chat(11), "c")
            assert plan.conversation == "c"
            now = fitter._entries["c"].seen
            assert now is not None
            assert all(
                a is b for a, b in zip(now.messages, seen.messages, strict=False)
            )
            read = _request(APIS["/v1/chat/completions"], self._chat(11))
            assert store.load("c").messages == tuple(read.read(read.items))
        finally:
            store.close()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("provider", sorted(PATHS))
def test_upstream_usage_calibrates_the_next_fit(
    provider: str, stream: bool, upstream: tuple[Recorder, str], tmp_path: Path
) -> None:
    """The input tokens the upstream reports (streamed or not) move the model's
    calibration, and the next request is fitted to the calibrated budget."""
    rec, url = upstream
    rec.seen.clear()
    rec.status, rec.delay, rec.gate, rec.usage_input = 200, 0.0, None, 1
    api = APIS[PATHS[provider]]
    app = create_app(
        ProxyConfig(
            upstream_openai=url,
            upstream_anthropic=url,
            fitting=FitterConfig(window=3_000),
            store=f"sqlite:///{tmp_path / 'p.db'}",
        )
    )
    turns = [anthropic_turn(i, 250) for i in range(8)]
    chat = [openai_turn(i, f"part {i}: " + "data " * 250) for i in range(8)]

    def body(n: int) -> bytes:
        if provider == "anthropic":
            msgs = [m for t in turns[:n] for m in t]
            doc: dict[str, Any] = {"max_tokens": 500, "messages": msgs}
        else:
            msgs = [m for t in chat[:n] for m in t]
            if provider == "openai":
                doc = {"max_tokens": 500, "messages": msgs}
            else:
                read = coerce_messages(msgs, provider="openai").messages
                doc = {"max_output_tokens": 500, "input": to_responses(read)}
        return json.dumps({"model": CLAUDE, "stream": stream, **doc}).encode()

    headers = {"content-type": "application/json", "x-conversation-id": "cal"}
    with running(app) as proxy, httpx.Client(timeout=30) as http:

        def send(n: int) -> httpx.Response:
            r = http.post(proxy + api.path, content=body(n), headers=headers)
            assert r.status_code == 200, r.text
            r.read()
            return r

        first = send(N)
        assert int(first.headers["x-contextwindow-compacted"]) == 0
        counted = int(first.headers["x-contextwindow-tokens-forwarded"])
        assert 1_600 < counted <= 2_500
        calibration = app.state.proxy.fitter.calibration(CLAUDE, api)
        assert calibration.ratio == 1.0  # 1 reported: no plausible report
        rec.usage_input = round(counted * 1.5)
        send(N)  # the same request again, now billed at 1.5 times the count
        assert calibration.ratio == pytest.approx(1.5, rel=0.01)
        nxt = send(N + 1)
        forwarded = int(nxt.headers["x-contextwindow-tokens-forwarded"])
        assert int(nxt.headers["x-contextwindow-compacted"]) > 0
        # ... which it needed only calibrated: as counted, it fits.
        assert int(nxt.headers["x-contextwindow-tokens-in"]) <= 2_500
        assert forwarded <= calibration.limit(2_500)
