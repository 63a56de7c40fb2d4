"""A recording upstream on loopback, servers run in threads, agents' histories.

``Recorder`` is a small Starlette app that answers the OpenAI Chat
Completions, Responses and Anthropic Messages APIs (streamed or not, with
``usage``) and keeps each request it got (path, headers, body bytes).
``running(app)`` serves an ASGI app with uvicorn in a thread on a free
loopback port and yields its base URL. ``openai_turn`` and
``anthropic_turn`` write one turn of a coding agent (a question, a file
read, its result) as each API carries it; ``repeated_prefix`` measures how
much of a forwarded request repeats the previous one. The proxy's tests
and ``benchmarks/proxy_latency.py`` share all of it.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from contextwindow import TokenCounter
from contextwindow.formats._coerce import coerce_messages


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def recorder_command(port: int, *paths: str) -> list[str]:
    """The command that serves a ``Recorder(keep=0)`` on ``port`` in its own process.

    ``paths`` go first on that process's ``sys.path`` (the project's root, for
    this module, and its ``src``).
    """
    return [
        sys.executable,
        "-c",
        "import sys; sys.path[:0] = sys.argv[2:]; import uvicorn; "
        "from tests.proxy._upstream import Recorder; "
        "uvicorn.run(Recorder(keep=0).app, host='127.0.0.1', "
        "port=int(sys.argv[1]), log_level='warning', access_log=False)",
        str(port),
        *paths,
    ]


@contextmanager
def running(app: Any) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 in a thread; yield ``http://127.0.0.1:PORT``."""
    port = free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="on",
        access_log=False,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: bytes
    raw_path: bytes = b""
    """The path as it came, percent-escapes and all."""

    @property
    def json(self) -> Any:
        return json.loads(self.body)


def _sse(events: Sequence[tuple[str | None, Any]]) -> list[bytes]:
    out = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {text}\n\n".encode())
    return out


class Recorder:
    """The upstream: records requests, answers each API in its shape."""

    def __init__(self, keep: int | None = None) -> None:
        self.seen: list[Seen] = []
        self.keep = keep
        """How many requests ``seen`` keeps, the latest (``None``: all)."""
        self.usage_input = 1
        """The input tokens every answer reports in its ``usage`` (1: too few
        for any request, so the proxy calibrates nothing on it)."""
        self.gate: asyncio.Event | None = None
        """When set up, a stream waits on it after its first chunk."""
        self.gate_loop: asyncio.AbstractEventLoop | None = None
        self.status = 200
        self.delay = 0.0
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/v1/responses", self.responses, methods=["POST"]),
                Route("/v1/messages", self.messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", self.count, methods=["POST"]),
                Route("/v1/models", self.models, methods=["GET"]),
            ]
        )

    async def _record(self, request: Request) -> Any:
        body = await request.body()
        self.seen.append(
            Seen(
                request.url.path, dict(request.headers), body, request.scope["raw_path"]
            )
        )
        if self.keep is not None:
            del self.seen[: len(self.seen) - self.keep]
        if self.delay:
            await asyncio.sleep(self.delay)
        try:
            return json.loads(body)
        except (ValueError, RecursionError):  # encoded, nested too deep: a 400
            raise HTTPException(400, "the recorder cannot read this body") from None

    def open_gate(self) -> None:
        assert self.gate is not None
        assert self.gate_loop is not None
        self.gate_loop.call_soon_threadsafe(self.gate.set)

    async def _stream(self, chunks: list[bytes]) -> AsyncIterator[bytes]:
        for i, c in enumerate(chunks):
            yield c
            if i == 0 and self.gate is not None:
                await self.gate.wait()

    def arm(self) -> None:
        """Make the next stream wait after its first chunk until ``open_gate``."""
        self.gate = asyncio.Event()

    async def models(self, request: Request) -> Response:
        self.seen.append(
            Seen(
                request.url.path, dict(request.headers), b"", request.scope["raw_path"]
            )
        )
        return JSONResponse(
            {
                "object": "list",
                "data": [
                    {"id": "gpt-4o", "object": "model", "created": 0, "owned_by": "x"}
                ],
            }
        )

    async def count(self, request: Request) -> Response:
        body = await self._record(request)
        return JSONResponse({"input_tokens": len(json.dumps(body)) // 4})

    def _failing(self) -> Response | None:
        if self.status != 200:
            return JSONResponse(
                {
                    "error": {
                        "message": "upstream says no",
                        "type": "server_error",
                        "code": None,
                    }
                },
                status_code=self.status,
            )
        return None

    async def chat(self, request: Request) -> Response:
        body = await self._record(request)
        if (r := self._failing()) is not None:
            return r
        self.gate_loop = asyncio.get_running_loop()
        model = body["model"]
        tools = bool(body.get("tools"))
        n = self.usage_input
        usage = {"prompt_tokens": n, "completion_tokens": 2, "total_tokens": n + 2}
        if body.get("stream"):
            base = {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
            }
            delta: dict[str, Any] = {"role": "assistant", "content": "Hel"}
            events = [
                (
                    None,
                    base
                    | {
                        "choices": [{"index": 0, "delta": delta, "finish_reason": None}]
                    },
                ),
                (
                    None,
                    base
                    | {
                        "choices": [
                            {
                                "index": 0,
                                "delta": {"content": "lo"},
                                "finish_reason": "stop",
                            }
                        ]
                    },
                ),
                (None, base | {"choices": [], "usage": usage}),
                (None, "[DONE]"),
            ]
            return StreamingResponse(
                self._stream(_sse(events)), media_type="text/event-stream"
            )
        message: dict[str, Any] = {"role": "assistant", "content": "Hello"}
        if tools:
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path":"a"}'},
                    }
                ],
            }
        return JSONResponse(
            {
                "id": "c1",
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if tools else "stop",
                    }
                ],
                "usage": usage,
            }
        )

    async def responses(self, request: Request) -> Response:
        body = await self._record(request)
        if (r := self._failing()) is not None:
            return r
        self.gate_loop = asyncio.get_running_loop()
        item = {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Hello", "annotations": []}],
        }
        resp = {
            "id": "resp_1",
            "object": "response",
            "created_at": 0,
            "model": body["model"],
            "status": "completed",
            "output": [item],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": self.usage_input,
                "output_tokens": 2,
                "total_tokens": self.usage_input + 2,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }
        if body.get("stream"):
            events = [
                (
                    "response.created",
                    {
                        "type": "response.created",
                        "sequence_number": 0,
                        "response": resp | {"status": "in_progress", "output": []},
                    },
                ),
                (
                    "response.output_item.added",
                    {
                        "type": "response.output_item.added",
                        "sequence_number": 1,
                        "output_index": 0,
                        "item": item | {"content": [], "status": "in_progress"},
                    },
                ),
                (
                    "response.content_part.added",
                    {
                        "type": "response.content_part.added",
                        "sequence_number": 1,
                        "item_id": "msg_1",
                        "output_index": 0,
                        "content_index": 0,
                        "part": {"type": "output_text", "text": "", "annotations": []},
                    },
                ),
                (
                    "response.output_text.delta",
                    {
                        "type": "response.output_text.delta",
                        "sequence_number": 1,
                        "item_id": "msg_1",
                        "output_index": 0,
                        "content_index": 0,
                        "delta": "Hello",
                        "logprobs": [],
                    },
                ),
                (
                    "response.completed",
                    {
                        "type": "response.completed",
                        "sequence_number": 2,
                        "response": resp,
                    },
                ),
            ]
            return StreamingResponse(
                self._stream(_sse(events)), media_type="text/event-stream"
            )
        return JSONResponse(resp)

    async def messages(self, request: Request) -> Response:
        body = await self._record(request)
        if self.status != 200:
            return JSONResponse(
                {
                    "type": "error",
                    "error": {
                        "type": "overloaded_error",
                        "message": "upstream says no",
                    },
                },
                status_code=self.status,
            )
        self.gate_loop = asyncio.get_running_loop()
        usage = {"input_tokens": self.usage_input, "output_tokens": 2}
        msg = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "text", "text": "Hello"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
        if body.get("stream"):
            events = [
                (
                    "message_start",
                    {
                        "type": "message_start",
                        "message": msg | {"content": [], "stop_reason": None},
                    },
                ),
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "text", "text": ""},
                    },
                ),
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": "Hello"},
                    },
                ),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                (
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                        "usage": {"output_tokens": 2},
                    },
                ),
                ("message_stop", {"type": "message_stop"}),
            ]
            return StreamingResponse(
                self._stream(_sse(events)), media_type="text/event-stream"
            )
        return JSONResponse(msg)


# -- agents' histories -------------------------------------------------------------


def openai_turn(i: int, result: str, ask: str | None = None) -> list[dict[str, Any]]:
    """Turn ``i`` in Chat Completions: a question, a ``read_file`` call, its result."""
    return [
        {"role": "user", "content": ask or f"read part {i}"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"c{i}",
                    "type": "function",
                    "function": {
                        "name": "read_file",
                        "arguments": json.dumps({"path": f"p{i}"}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": f"c{i}", "content": result},
    ]


def anthropic_turn(i: int, words: int, who: str = "") -> list[dict[str, Any]]:
    """Turn ``i`` in Anthropic Messages (``who`` names the client in each text)."""
    call = f"t{who.strip().replace(' ', '_')}{i}"
    return [
        {"role": "user", "content": f"{who}read part {i}"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": call,
                    "name": "read_file",
                    "input": {"path": f"p{i}"},
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": call,
                    "content": f"{who}part {i}: " + "data " * words,
                }
            ],
        },
    ]


def repeated_prefix(
    previous: list[str], sent: list[Any], counter: TokenCounter
) -> tuple[int, list[str]]:
    """Tokens of the Anthropic ``sent`` messages repeating ``previous`` byte for byte.

    ``previous`` is what the last call returned second (each message as
    canonical JSON); pass ``[]`` for a conversation's first request.
    """
    now = [json.dumps(m, sort_keys=True) for m in sent]
    same = 0
    for a, b in zip(previous, now, strict=False):
        if a != b:
            break
        same += 1
    if not same:
        return 0, now
    kept = coerce_messages(sent[:same], provider="anthropic")
    return counter.messages(kept.messages), now
