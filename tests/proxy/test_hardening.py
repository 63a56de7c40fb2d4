"""Bodies and headers that once broke the proxy: it forwards or refuses them cleanly."""

from __future__ import annotations

import gzip
import json
import logging
import time
import zlib
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from tests.proxy.conftest import MakeRig, Rig
from tests.proxy.test_behaviour import HEADERS, _post
from tests.proxy.test_sdks import _ant_history, _chat_history

from contextwindow.proxy._fitter import Fitter
from contextwindow.store import SQLiteStore

NEST = "[" * 1000 + "]" * 1000


def _send(rig: Rig, path: str, content: bytes, **headers: str) -> httpx.Response:
    return httpx.post(
        rig.url + path, content=content, headers=HEADERS | headers, timeout=20
    )


def _raw(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    return [(k.encode(), v.encode()) for k, v in headers.items()]


def _long_chat(**extra: Any) -> dict[str, Any]:
    """A chat request over the rig's 3,000-token window: it is fitted."""
    return {"model": "gpt-4o", "max_tokens": 500, "messages": _chat_history(30)} | extra


DEEP = {
    "messages": (
        "/v1/chat/completions",
        b'{"model":"gpt-4o","messages":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    ),
    "tools": (
        "/v1/chat/completions",
        '{"model":"gpt-4o","messages":[{"role":"user","content":"x"}],'
        '"tools":[{"type":"function","function":{"name":"f","parameters":'
        '{"type":"object","properties":{"a":NEST}}}}]}'.replace("NEST", NEST).encode(),
    ),
    "tool_use input": (
        "/v1/messages",
        '{"model":"claude-sonnet-4-6","max_tokens":5,"messages":['
        '{"role":"user","content":"x"},{"role":"assistant","content":'
        '[{"type":"tool_use","id":"t","name":"f","input":{"a":NEST}}]},'
        '{"role":"user","content":[{"type":"tool_result",'
        '"tool_use_id":"t","content":"ok"}]}]}'.replace("NEST", NEST).encode(),
    ),
    "metadata": (
        "/v1/chat/completions",
        '{"model":"gpt-4o","messages":[{"role":"user","content":"x"}],'
        '"metadata":{"a":NEST}}'.replace("NEST", NEST).encode(),
    ),
}
"""Bodies nested 1,000 deep or more, by where the nesting is, with their path."""


class TestUnreadableBodies:
    def test_deep_nesting_goes_as_it_came_and_frees_its_slot(
        self, make_rig: MakeRig
    ) -> None:
        """JSON nested past what Python reads is forwarded untouched, never a 500,
        and each request's slot is freed: the proxy keeps serving."""
        with make_rig(max_concurrency=2) as rig:
            for _ in range(2):
                for name, (path, content) in DEEP.items():
                    r = _send(rig, path, content, **{"anthropic-version": "x"})
                    assert r.status_code != 500, name
                    assert "x-contextwindow-error" not in r.headers, name
                    assert rig.upstream.seen[-1].body == content, name
            r = _post(
                rig,
                "/v1/chat/completions",
                {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
            )
            assert r.status_code == 200
            assert "x-contextwindow-tokens-in" in r.headers

    def test_a_fitting_that_fails_forwards_the_body_and_frees_its_slot(
        self,
        make_rig: MakeRig,
        monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        """Any error the fitting raises sends the request on as it came, logged."""

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("a bug in the fitting")

        monkeypatch.setattr(Fitter, "plan", broken)
        caplog.set_level(logging.INFO, logger="contextwindow.proxy")
        body = json.dumps(_long_chat()).encode()
        with make_rig(max_concurrency=1) as rig:
            for _ in range(3):
                r = _send(rig, "/v1/chat/completions", body)
                assert r.status_code == 200
                assert rig.upstream.seen[-1].body == body
            metrics = httpx.get(rig.url + "/metrics").text
        assert 'contextwindow_proxy_errors_total{kind="fitting"} 3' in metrics
        lines = [
            json.loads(r.getMessage())
            for r in caplog.records
            if r.name == "contextwindow.proxy"
        ]
        assert [x["fitting_error"] for x in lines] == ["RuntimeError"] * 3

    def test_a_body_that_cannot_be_written_anew_goes_as_it_came(
        self, rig: Rig, tmp_path: Path
    ) -> None:
        """Fitted, but too deep to write back: it goes as it came, and its turn's
        append is in the store at once, as after any request."""
        text = json.dumps(_long_chat())[:-1] + ', "metadata": {"a": ' + NEST + "}}"
        r = _send(
            rig, "/v1/chat/completions", text.encode(), **{"x-conversation-id": "c"}
        )
        assert r.status_code != 500
        assert "x-contextwindow-tokens-in" not in r.headers
        assert rig.upstream.seen[-1].body == text.encode()
        store = SQLiteStore(tmp_path / "proxy.db")
        try:
            assert store.version("c") == len(_long_chat()["messages"])
        finally:
            store.close()

    def test_a_number_no_float_holds_is_not_rewritten(self, rig: Rig) -> None:
        """A body that would be fitted but holds 1e400 goes as it came: written
        anew it would say Infinity or null."""
        text = json.dumps(_long_chat())[:-1] + ', "x_num": 1e400, "y": NaN}'
        r = _send(rig, "/v1/chat/completions", text.encode())
        assert "x-contextwindow-tokens-in" not in r.headers
        assert rig.upstream.seen[-1].body == text.encode()

    def test_a_long_integer_is_written_back_exactly(self, rig: Rig) -> None:
        """An integer past 64 bits in a fitted body is forwarded as it was, not as
        the float a fast parser reads it as."""
        seed = 123456789012345678901234567890
        r = _post(rig, "/v1/chat/completions", _long_chat(seed=seed))
        assert r.status_code == 200
        assert int(r.headers["x-contextwindow-compacted"]) > 0
        assert f'"seed":{seed}'.encode() in rig.upstream.seen[-1].body
        assert rig.upstream.seen[-1].json["seed"] == seed

    def test_a_lone_surrogate_model_is_logged(
        self, rig: Rig, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A model name no UTF-8 holds is still one JSON log line."""
        caplog.set_level(logging.INFO, logger="contextwindow.proxy")
        body = {
            "model": "claude-\ud83d",
            "messages": [{"role": "user", "content": "x"}],
        }
        r = _post(rig, "/v1/messages/count_tokens", body)
        assert r.status_code == 200
        (line,) = [
            r.getMessage() for r in caplog.records if r.name == "contextwindow.proxy"
        ]
        assert json.loads(line)["model"] == "claude-\ud83d"


class TestMetrics:
    def test_paths_are_labelled_by_name_or_other(self, rig: Rig) -> None:
        """A path sent to inject labels is one more ``other`` request; the text
        stays valid and its series few."""
        evil = '/v1/x"} 1 \\ fake_total{a="b'  # sent percent-encoded
        for i in range(5):
            httpx.get(rig.url + f"/v1/path-{i}", headers=HEADERS)
        r = httpx.get(rig.url + quote(evil), headers=HEADERS)
        assert r.status_code == 404
        assert rig.upstream.seen == []  # not a path the recorder serves
        _post(rig, "/v1/chat/completions", _long_chat())
        want = [
            'contextwindow_proxy_requests_total{endpoint="/v1/chat/completions",'
            'status="200"} 1',
            'contextwindow_proxy_requests_total{endpoint="other",status="404"} 6',
        ]
        deadline = time.monotonic() + 5
        while True:  # a request is counted as its response ends, just after
            text = httpx.get(rig.url + "/metrics").text
            requests = sorted(
                line
                for line in text.splitlines()
                if not line.startswith("#") and "requests_total" in line
            )
            if requests == want or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        assert requests == want
        assert "fake_total" not in text


class TestHeaders:
    def test_a_non_ascii_conversation_id_is_kept_as_sent(
        self, rig: Rig, tmp_path: Path
    ) -> None:
        """``café-1`` is stored and echoed as ``café-1``, not as its latin-1 reading."""
        cid = "café-1"
        r = httpx.post(
            rig.url + "/v1/messages",
            content=json.dumps(
                {
                    "model": "claude-sonnet-4-6",
                    "max_tokens": 5,
                    "messages": [{"role": "user", "content": "hi"}],
                }
            ).encode(),
            headers=[
                *_raw(HEADERS | {"anthropic-version": "2023-06-01"}),
                (b"x-conversation-id", cid.encode()),
            ],
            timeout=10,
        )
        assert r.status_code == 200
        echoed = dict(r.headers.raw)[b"x-contextwindow-conversation"]
        assert echoed == cid.encode()
        store = SQLiteStore(tmp_path / "proxy.db")
        try:
            ids = {c.id for c in store.list_conversations()}
        finally:
            store.close()
        assert cid in ids

    def test_a_conversation_id_not_utf8_is_refused(self, rig: Rig) -> None:
        """Bytes that are not UTF-8 get a 400 naming the header, in the API's shape."""
        r = httpx.post(
            rig.url + "/v1/chat/completions",
            content=json.dumps(_long_chat()).encode(),
            headers=[*_raw(HEADERS), (b"x-conversation-id", b"caf\xe9")],
            timeout=10,
        )
        assert r.status_code == 400
        assert "x-conversation-id" in r.json()["error"]["message"]
        assert rig.upstream.seen == []

    def test_a_path_goes_upstream_as_written(self, rig: Rig) -> None:
        """Its percent-escapes kept: ``%2F`` is not a ``/`` for the upstream."""
        r = httpx.get(rig.url + "/v1/mod%65ls?limit=3", headers=HEADERS)
        assert r.status_code == 200
        (seen,) = rig.upstream.seen
        assert seen.raw_path == b"/v1/mod%65ls"

    def test_head_keeps_the_upstream_length(self, rig: Rig) -> None:
        """A HEAD answer says the length a GET would get, as the upstream said."""
        got = httpx.get(rig.url + "/v1/models", headers=HEADERS)
        head = httpx.head(rig.url + "/v1/models", headers=HEADERS)
        assert head.status_code == 200
        assert head.headers["content-length"] == str(len(got.content))

    def test_expect_is_not_forwarded(self, rig: Rig) -> None:
        """The server answered the client's 100-continue: the upstream is not asked."""
        r = _post(rig, "/v1/chat/completions", _long_chat(), expect="100-continue")
        assert r.status_code == 200
        assert "expect" not in rig.upstream.seen[-1].headers


def _deflate_raw(data: bytes) -> bytes:
    c = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


class TestContentEncoding:
    @pytest.mark.parametrize(
        ("coding", "encode"),
        [
            ("gzip", gzip.compress),
            ("deflate", zlib.compress),
            ("deflate", _deflate_raw),
            ("identity, gzip", gzip.compress),
        ],
    )
    def test_an_encoded_body_is_fitted_and_sent_plain(
        self, rig: Rig, coding: str, encode: Any
    ) -> None:
        """Decoded and fitted; the rewritten body goes unencoded."""
        plain = json.dumps(_long_chat()).encode()
        r = _send(
            rig, "/v1/chat/completions", encode(plain), **{"content-encoding": coding}
        )
        assert r.status_code == 200
        assert int(r.headers["x-contextwindow-compacted"]) > 0
        seen = rig.upstream.seen[-1]
        assert "content-encoding" not in seen.headers
        assert int(seen.headers["content-length"]) == len(seen.body) < len(plain)
        assert seen.json["messages"][-1] == _long_chat()["messages"][-1]

    def test_an_encoded_body_that_fits_goes_as_it_came(self, rig: Rig) -> None:
        """Read (counted), and forwarded as the bytes received, still encoded."""
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
        sent = gzip.compress(json.dumps(body).encode())
        r = _send(rig, "/v1/chat/completions", sent, **{"content-encoding": "gzip"})
        assert int(r.headers["x-contextwindow-tokens-in"]) > 0
        seen = rig.upstream.seen[-1]
        assert seen.body == sent
        assert seen.headers["content-encoding"] == "gzip"

    def test_a_zip_bomb_is_over_the_limit(self, make_rig: MakeRig) -> None:
        """The size limit holds for the body decoded, without decoding it all."""
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]}
        body["pad"] = "0" * 10_000_000
        sent = gzip.compress(json.dumps(body).encode())
        with make_rig(max_body_bytes=100_000) as rig:
            assert len(sent) < 100_000
            r = _send(rig, "/v1/chat/completions", sent, **{"content-encoding": "gzip"})
            assert r.status_code == 413
            assert "over 100,000 bytes decoded" in r.json()["error"]["message"]
            assert rig.upstream.seen == []

    @pytest.mark.parametrize("coding", ["br", "zstd"])
    def test_another_encoding_goes_as_it_came(self, rig: Rig, coding: str) -> None:
        """An encoding the proxy does not read: forwarded untouched, not read."""
        sent = b"\x8b\x00 not json"
        r = _send(rig, "/v1/chat/completions", sent, **{"content-encoding": coding})
        assert "x-contextwindow-tokens-in" not in r.headers
        seen = rig.upstream.seen[-1]
        assert seen.body == sent
        assert seen.headers["content-encoding"] == coding

    def test_a_broken_gzip_body_goes_as_it_came(self, rig: Rig) -> None:
        sent = gzip.compress(b'{"model": "gpt-4o", "messages": []}')[:-6]
        r = _send(rig, "/v1/chat/completions", sent, **{"content-encoding": "gzip"})
        assert r.status_code != 500
        assert rig.upstream.seen[-1].body == sent


class TestCountTokens:
    def test_a_final_message_over_the_window_is_counted_not_refused(
        self, rig: Rig
    ) -> None:
        """count_tokens wants the count of the request as it is: no 400 of the
        proxy's own, and the body goes as it came."""
        body = {
            "model": "claude-sonnet-4-6",
            "messages": [{"role": "user", "content": "word " * 5_000}],
        }
        content = json.dumps(body).encode()
        r = _send(
            rig,
            "/v1/messages/count_tokens",
            content,
            **{"anthropic-version": "2023-06-01"},
        )
        assert r.status_code == 200
        assert r.json()["input_tokens"] > 3_000
        assert int(r.headers["x-contextwindow-tokens-in"]) > 3_000
        assert rig.upstream.seen[-1].body == content

    def test_a_long_history_is_counted_not_fitted(self, rig: Rig) -> None:
        body = {"model": "claude-sonnet-4-6", "messages": _ant_history(30)}
        content = json.dumps(body).encode()
        r = _send(
            rig,
            "/v1/messages/count_tokens",
            content,
            **{"anthropic-version": "2023-06-01"},
        )
        assert r.status_code == 200
        assert r.headers["x-contextwindow-compacted"] == "0"
        assert rig.upstream.seen[-1].body == content
