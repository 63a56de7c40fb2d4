"""Pass-through, errors in the provider's shape, limits, keys, logs, conversations."""

from __future__ import annotations

import itertools
import json
import logging
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anthropic
import httpx
import openai
import pytest
from tests.proxy._upstream import anthropic_turn, free_port
from tests.proxy.conftest import MakeRig, Rig
from tests.proxy.test_sdks import KEY, _ant, _ant_history, _check, _oai

HEADERS = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}


def _post(rig: Rig, path: str, body: Any, **headers: str) -> httpx.Response:
    return httpx.post(
        rig.url + path,
        content=json.dumps(body).encode(),
        headers=HEADERS | headers,
        timeout=10,
    )


@contextmanager
def raw_upstream(*answers: bytes) -> Iterator[str]:
    """An upstream on loopback that answers each connection, in turn, with the
    next of ``answers`` (raw bytes, once it read the request's head), then
    closes it; yields its URL. For answers no server would send: broken off."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        for answer in answers:
            conn, _ = listener.accept()
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        thread.join(10)
        listener.close()


def test_other_paths_pass_through(rig: Rig) -> None:
    r = httpx.get(rig.url + "/v1/models?limit=3", headers=HEADERS)
    assert r.status_code == 200
    # One date and one server: the proxy's, not the upstream's beside them.
    assert len(r.headers.get_list("date")) == 1
    assert len(r.headers.get_list("server")) == 1
    assert r.json()["data"][0]["id"] == "gpt-4o"
    (seen,) = rig.upstream.seen
    assert seen.path == "/v1/models"
    assert seen.headers["authorization"] == f"Bearer {KEY}"


def test_health_and_metrics(rig: Rig) -> None:
    assert httpx.get(rig.url + "/healthz").json() == {"status": "ok"}
    _ant(rig).messages.create(
        model="claude-sonnet-4-6", max_tokens=500, messages=_ant_history(30)
    )
    text = httpx.get(rig.url + "/metrics").text
    assert (
        'contextwindow_proxy_requests_total{endpoint="/v1/messages",status="200"} 1'
        in text
    )
    tokens_in = int(text.split("\ncontextwindow_proxy_tokens_in_total ")[1].split()[0])
    forwarded = int(
        text.split("\ncontextwindow_proxy_tokens_forwarded_total ")[1].split()[0]
    )
    assert forwarded < tokens_in
    assert "contextwindow_proxy_upstream_usage_input_tokens_total 1" in text
    assert "contextwindow_proxy_upstream_seconds_count 1" in text


class TestErrors:
    def test_pinned_content_over_the_window_openai(self, rig: Rig) -> None:
        with pytest.raises(openai.BadRequestError) as caught:
            _oai(rig).chat.completions.create(
                model="gpt-4o",
                max_tokens=500,
                messages=[{"role": "user", "content": "word " * 4_000}],
            )
        assert caught.value.code == "context_length_exceeded"
        assert "contextwindow proxy" in caught.value.message
        assert rig.upstream.seen == []

    def test_pinned_content_over_the_window_responses(self, rig: Rig) -> None:
        """Responses' error names its own field, ``input``."""
        r = _post(rig, "/v1/responses", {"model": "gpt-4o", "input": "word " * 4_000})
        assert r.status_code == 400
        assert r.json()["error"]["code"] == "context_length_exceeded"
        assert r.json()["error"]["param"] == "input"
        assert rig.upstream.seen == []

    def test_instructions_over_the_window(self, rig: Rig) -> None:
        """Responses instructions (counted beside the messages) that leave the
        messages no room are a context-length error, as a system prompt is;
        they were forwarded untouched."""
        body = {"model": "gpt-4o", "instructions": "word " * 4_000, "input": "hi"}
        r = _post(rig, "/v1/responses", body)
        assert r.status_code == 400
        assert r.json()["error"]["code"] == "context_length_exceeded"
        assert "instructions and tools, beside the messages: " in r.text
        assert rig.upstream.seen == []

    def test_pinned_content_over_the_window_anthropic(self, rig: Rig) -> None:
        with pytest.raises(anthropic.BadRequestError) as caught:
            _ant(rig).messages.create(
                model="claude-sonnet-4-6",
                max_tokens=500,
                messages=[{"role": "user", "content": "word " * 4_000}],
            )
        assert caught.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
        assert rig.upstream.seen == []

    def test_upstream_down(self, make_rig: MakeRig) -> None:
        dead = f"http://127.0.0.1:{free_port()}"
        with make_rig(upstream_anthropic=dead, upstream_openai=dead) as rig:
            r = _post(
                rig,
                "/v1/messages",
                {
                    "model": "claude-sonnet-4-6",
                    "max_tokens": 5,
                    "messages": [{"role": "user", "content": "hi"}],
                },
            )
            assert r.status_code == 502
            assert r.json()["type"] == "error"
            assert (
                "Anthropic upstream cannot be reached" in r.json()["error"]["message"]
            )
            r = _post(
                rig,
                "/v1/chat/completions",
                {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
            )
            assert r.status_code == 502
            assert r.json()["error"]["code"] == "upstream_unreachable"
            # It says where and why: the host and port, and the system's reason.
            port = dead.rsplit(":", 1)[1]
            said = r.json()["error"]["message"]
            assert f"cannot connect to 127.0.0.1:{port}" in said, said
            assert "refused" in said.lower() or "failed" in said.lower(), said

    def test_connection_closed_by_the_upstream_is_tried_again(
        self, make_rig: MakeRig
    ) -> None:
        """An upstream that closes the connection before answering (a kept-alive
        one it dropped) gets the request once more, on a new connection."""
        listener = socket.create_server(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        reply = b'{"id":"c1","object":"chat.completion","choices":[]}'
        got: list[bytes] = []

        def serve() -> None:
            for i in range(2):
                conn, _ = listener.accept()
                with conn:
                    data = b""
                    while b"\r\n\r\n" not in data:
                        data += conn.recv(65536)
                    head, _, body = data.partition(b"\r\n\r\n")
                    size = int(
                        head.lower().split(b"content-length: ")[1].split(b"\r\n")[0]
                    )
                    while len(body) < size:
                        body += conn.recv(65536)
                    got.append(body)
                    if i:
                        conn.sendall(
                            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                            + f"content-length: {len(reply)}\r\n".encode()
                            + b"connection: close\r\n\r\n"
                            + reply
                        )

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        up = f"http://127.0.0.1:{port}"
        try:
            with make_rig(upstream_openai=up, upstream_anthropic=up) as rig:
                r = _post(
                    rig,
                    "/v1/chat/completions",
                    {
                        "model": "gpt-4o",
                        "messages": [{"role": "user", "content": "hi"}],
                    },
                )
                metrics = httpx.get(rig.url + "/metrics").text
        finally:
            thread.join(10)
            listener.close()
        assert r.status_code == 200, r.text
        assert r.content == reply
        assert len(got) == 2
        assert got[0] == got[1]
        assert 'kind="upstream_retried"} 1' in metrics

    def test_an_answer_broken_off_is_a_502(self, make_rig: MakeRig) -> None:
        """A JSON answer of known length is read whole before it goes on, so
        one the upstream breaks off comes back as an error, not cut short."""
        reply = b'{"id":"c1","object":"chat.completion","choices":[]}'
        head = (
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            + f"content-length: {len(reply)}\r\n".encode()
            + b"connection: close\r\n\r\n"
        )
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
        with (
            raw_upstream(head + reply, head + reply[:10]) as up,
            make_rig(upstream_openai=up, upstream_anthropic=up) as rig,
        ):
            whole = _post(rig, "/v1/chat/completions", body)
            broken = _post(rig, "/v1/chat/completions", body)
        assert whole.status_code == 200
        assert whole.content == reply
        assert whole.headers["content-length"] == str(len(reply))
        assert "transfer-encoding" not in whole.headers
        assert whole.headers["x-contextwindow-tokens-in"] == "8"
        assert broken.status_code == 502
        assert "OpenAI upstream broke its answer" in broken.json()["error"]["message"]
        assert broken.json()["error"]["code"] == "upstream_failed"  # it was reached

    def test_a_stream_broken_off_is_cut_for_the_client_too(
        self, make_rig: MakeRig
    ) -> None:
        """A streamed answer the upstream breaks off mid-way reaches the
        client cut short (no last chunk: its SDK raises), not as a complete
        answer that merely stops early; the upstream's whole stream passes."""
        event = b'data: {"choices":[{"delta":{"content":"partial"}}]}\n\n'
        done = b"data: [DONE]\n\n"

        def chunk(data: bytes) -> bytes:
            return b"%x\r\n%s\r\n" % (len(data), data)

        head = (
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n" + chunk(event)
        )
        body = {
            "model": "gpt-4o",
            "stream": True,
            "messages": [{"role": "user", "content": "hi"}],
        }
        got: list[bytes] = []
        with (
            raw_upstream(head + chunk(done) + b"0\r\n\r\n", head) as up,
            make_rig(upstream_openai=up, upstream_anthropic=up) as rig,
        ):
            whole = _post(rig, "/v1/chat/completions", body)
            with httpx.stream(
                "POST",
                f"{rig.url}/v1/chat/completions",
                content=json.dumps(body).encode(),
                headers=HEADERS,
                timeout=10,
            ) as held:
                parts = held.iter_raw()
                got.append(next(parts))
                with pytest.raises(httpx.RemoteProtocolError):
                    got.extend(parts)
            metrics = httpx.get(f"{rig.url}/metrics").text
        assert whole.status_code == 200
        assert whole.content == event + done
        assert b"".join(got) == event  # what came before the break, then the cut
        assert 'kind="upstream_failed"} 1' in metrics

    def test_upstream_slow(self, rig: Rig) -> None:
        rig.upstream.delay = 1.5  # the rig's read timeout is 1 s
        r = _post(
            rig,
            "/v1/chat/completions",
            {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
        )
        assert r.status_code == 504
        assert r.json()["error"]["code"] == "upstream_timeout"

    def test_upstream_errors_pass_back_as_they_are(self, rig: Rig) -> None:
        rig.upstream.status = 529
        with pytest.raises(anthropic.APIStatusError) as caught:
            _ant(rig).messages.create(
                model="claude-sonnet-4-6",
                max_tokens=5,
                messages=[{"role": "user", "content": "hi"}],
            )
        assert caught.value.status_code == 529
        assert caught.value.body == {
            "type": "error",
            "error": {"type": "overloaded_error", "message": "upstream says no"},
        }


class TestLimits:
    def test_body_too_large(
        self, make_rig: MakeRig, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.INFO, logger="contextwindow.proxy")
        with make_rig(max_body_bytes=1_000) as rig:
            r = _post(
                rig,
                "/v1/chat/completions",
                {
                    "model": "gpt-4o",
                    "messages": [{"role": "user", "content": "x" * 2_000}],
                },
            )
            assert r.status_code == 413
            assert "over 1,000 bytes" in r.json()["error"]["message"]
            assert rig.upstream.seen == []
            metrics = httpx.get(f"{rig.url}/metrics").text
        # Logged and counted as every request is.
        (line,) = [
            r.getMessage() for r in caplog.records if r.name == "contextwindow.proxy"
        ]
        assert json.loads(line)["status"] == 413
        assert 'status="413"' in metrics

    def test_concurrency(self, make_rig: MakeRig) -> None:
        with make_rig(max_concurrency=1) as rig:
            rig.upstream.arm()
            body = {
                "model": "gpt-4o",
                "stream": True,
                "messages": [{"role": "user", "content": "hi"}],
            }
            with httpx.stream(
                "POST",
                rig.url + "/v1/chat/completions",
                headers=HEADERS,
                content=json.dumps(body).encode(),
            ) as held:
                chunks = held.iter_raw()  # kept: a dropped iterator closes the stream
                first = next(chunks)
                assert first.startswith(b"data: ")
                r = _post(rig, "/v1/chat/completions", body)
                assert r.status_code == 429
                assert r.headers["retry-after"] == "1"
                assert "1 requests already in progress" in r.json()["error"]["message"]
                rig.upstream.open_gate()
                assert b"[DONE]" in b"".join(chunks)
            assert _post(rig, "/v1/models", {}).status_code in (200, 405)


class TestKeys:
    def test_proxy_key_demanded_and_not_forwarded(
        self, make_rig: MakeRig, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.INFO, logger="contextwindow.proxy")
        with make_rig(api_key="proxy-key-0123456789") as rig:
            body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
            r = _post(rig, "/v1/chat/completions", body)
            assert r.status_code == 401
            assert "proxy-key" not in r.text
            logged = [
                json.loads(r.getMessage())
                for r in caplog.records
                if r.name == "contextwindow.proxy"
            ]
            assert [x["status"] for x in logged] == [401]
            r = _post(
                rig, "/v1/chat/completions", body, **{"x-contextwindow-key": "wrong"}
            )
            assert r.status_code == 401
            r = _post(
                rig,
                "/v1/chat/completions",
                body,
                **{"x-contextwindow-key": "proxy-key-0123456789"},
            )
            assert r.status_code == 200
            (seen,) = rig.upstream.seen
            assert "x-contextwindow-key" not in seen.headers
            assert seen.headers["authorization"] == f"Bearer {KEY}"

    def test_log_lines_hold_no_secret(
        self, make_rig: MakeRig, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.INFO, logger="contextwindow.proxy")
        with make_rig(log_bodies=True) as rig:
            body = {
                "model": "gpt-4o",
                "messages": [{"role": "user", "content": f"my key is {KEY}"}],
            }
            r = _post(rig, "/v1/chat/completions", body)
            assert r.status_code == 200
            assert KEY not in r.text
            assert KEY[:8] not in str(r.headers)
        (line,) = [
            r.getMessage() for r in caplog.records if r.name == "contextwindow.proxy"
        ]
        record = json.loads(line)
        assert record["status"] == 200
        assert record["tokens_in"] > 0
        assert "my key is" in record["body"]
        assert KEY[3:11] not in line


class TestConversations:
    def test_prefix_stable_between_compactions(self, rig: Rig) -> None:
        """A conversation growing turn by turn: every forwarded request fits and is
        valid, compactions are few, and between two the forwarded body only grows."""
        client = _ant(rig)
        history: list[dict[str, Any]] = []
        compacted = []
        for i in range(40):
            history += anthropic_turn(i, 60)
            if i:  # the reply to the previous turn, as a client sends it
                history.insert(-3, {"role": "assistant", "content": f"read {i - 1}"})
            reply = client.messages.with_raw_response.create(
                model="claude-sonnet-4-6",
                max_tokens=500,
                system="Be brief.",
                messages=history,
                extra_headers={"x-conversation-id": "conv-1"},
            )
            assert reply.headers["x-contextwindow-conversation"] == "conv-1"
            compacted.append(int(reply.headers["x-contextwindow-compacted"]) > 0)
        bodies = [s.json for s in rig.upstream.seen]
        assert len(bodies) == 40
        breaks = 0
        for before, after in itertools.pairwise(bodies):
            data = {"system": after["system"], "messages": after["messages"]}
            assert _check("anthropic", data, None, "claude-sonnet-4-6") <= 2_500
            n = len(before["messages"])
            if after["messages"][:n] != before["messages"]:
                breaks += 1
        assert any(compacted)
        assert 1 <= breaks <= 6

    def test_two_conversations_kept_apart(self, rig: Rig) -> None:
        client = _ant(rig)
        for who in ("a", "b"):
            client.messages.create(
                model="claude-sonnet-4-6",
                max_tokens=5,
                messages=[{"role": "user", "content": f"I am {who}"}],
            )
        heads = {
            r.headers.get("x-contextwindow-conversation")
            for r in [
                _post(
                    rig,
                    "/v1/messages",
                    {
                        "model": "claude-sonnet-4-6",
                        "max_tokens": 5,
                        "messages": [{"role": "user", "content": f"I am {w}"}],
                    },
                )
                for w in ("a", "b")
            ]
        }
        assert len(heads) == 2


def test_streams_interleave(rig: Rig) -> None:
    """A held stream does not hold another request back (nothing is buffered)."""
    rig.upstream.arm()
    body = {
        "model": "gpt-4o",
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    got: list[bytes] = []
    with httpx.stream(
        "POST",
        rig.url + "/v1/chat/completions",
        headers=HEADERS,
        content=json.dumps(body).encode(),
    ) as held:
        chunks = held.iter_raw()
        got.append(next(chunks))
        t = threading.Thread(
            target=lambda: got.append(_post(rig, "/healthz", {}).content)
        )
        t.start()
        t.join(5)
        rig.upstream.open_gate()
        got.append(b"".join(chunks))
    assert got[0].startswith(b"data: ")
    assert b"[DONE]" in got[-1]


def test_lone_surrogates_pass_and_are_fitted(rig: Rig) -> None:
    """A lone surrogate escape (a JavaScript agent cutting a string inside an
    emoji) is text the providers take: a request holding one goes upstream,
    fitted when over the window, not a 500."""
    raw = b'{"model":"gpt-4o","messages":[{"role":"user","content":"cut \\ud83d"}]}'
    r = httpx.post(rig.url + "/v1/chat/completions", content=raw, headers=HEADERS)
    assert r.status_code == 200, r.text
    assert rig.upstream.seen[-1].body == raw  # it fits: byte for byte
    r = httpx.post(
        rig.url + "/v1/responses",
        content=b'{"model":"gpt-4o","input":"emoji cut \\ud83d"}',
        headers=HEADERS,
    )
    assert r.status_code == 200, r.text
    history: list[dict[str, Any]] = []
    for i in range(30):
        history += [
            {"role": "user", "content": f"question {i} \ud800 " + "word " * 60},
            {"role": "assistant", "content": f"answer {i} " + "word " * 60},
        ]
    history.append({"role": "user", "content": "and now? \udfff"})
    body = json.dumps({"model": "gpt-4o", "messages": history}).encode()
    r = httpx.post(
        rig.url + "/v1/chat/completions",
        content=body,
        headers=HEADERS | {"x-conversation-id": "surrogates"},
    )
    assert r.status_code == 200, r.text
    assert int(r.headers["x-contextwindow-compacted"]) > 0
    sent = rig.upstream.seen[-1].json["messages"]
    assert len(sent) < len(history)
    assert sent[-1] == history[-1]  # the lone surrogate as it came


def test_a_request_that_fits_goes_as_it_came_though_invalid(rig: Rig) -> None:
    """A result answering no call breaks Anthropic's rules, and repairing it
    leaves no turn: the request, which fits, goes as the bytes received, for
    the provider to name the mistake (not with no message at all)."""
    raw = json.dumps(
        {
            "model": "claude-sonnet-4-6",
            "max_tokens": 10,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "r"}
                    ],
                }
            ],
        }
    ).encode()
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    r = httpx.post(rig.url + "/v1/messages", content=raw, headers=headers)
    assert r.status_code == 200, r.text
    assert rig.upstream.seen[-1].body == raw


def test_a_document_is_content_counted_and_sent(rig: Rig) -> None:
    """A user turn holding only a document is content: a request that fits goes
    as it came, and the document's text counts (it was dropped, counted 0)."""
    text = "Clause: the fee is 4,200 EUR. " * 100
    doc = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": text},
    }
    raw = json.dumps(
        {
            "model": "claude-sonnet-4-6",
            "max_tokens": 10,
            "messages": [
                {"role": "user", "content": [doc]},
                {"role": "assistant", "content": "Got it."},
                {"role": "user", "content": "Now summarise it."},
            ],
        }
    ).encode()
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    r = httpx.post(rig.url + "/v1/messages", content=raw, headers=headers)
    assert r.status_code == 200, r.text
    assert rig.upstream.seen[-1].body == raw
    assert int(r.headers["x-contextwindow-tokens-in"]) > 600
