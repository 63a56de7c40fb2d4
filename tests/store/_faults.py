"""Stores that fail on purpose: a wrapper for every call site, and a TCP proxy.

``FaultyStore`` wraps a real store and, at the calls its plan names, fails
before the call reaches the store (nothing written), after it (written, the
reply lost) or with a timeout (written, the caller told it timed out). Reads
fail the same ways (nothing to lose there but the answer).

``CuttingProxy`` forwards TCP between a client and a real server on
loopback; armed with a byte pattern, it forwards the client's bytes that hold
it, then cuts both connections before any reply comes back: the server has
the statement (and commits it), the client sees its connection die.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

from contextwindow.errors import StoreError
from contextwindow.messages import Message
from contextwindow.store.base import (
    ConversationInfo,
    Store,
    StoredConversation,
    StoredView,
)

Fault = Literal["fail", "lost", "timeout"]
"""``fail``: refused before the store sees it; ``lost``: done, the reply
lost; ``timeout``: done, the caller told it timed out."""
FAULTS: tuple[Fault, ...] = ("fail", "lost", "timeout")

Plan = Callable[[str], Fault | None]
"""Given a call's name, the fault to inject there (``None``: none)."""


class InjectedError(StoreError):
    """What a ``FaultyStore`` raises; a ``StoreError`` as any store failure."""


class FaultyStore:
    """A ``Store`` whose calls fail as ``plan`` says (see the module docstring)."""

    def __init__(self, inner: Store, plan: Plan) -> None:
        self.inner = inner
        self.plan = plan
        self.injected: list[tuple[str, Fault]] = []

    def _call(self, name: str, run: Callable[[], Any]) -> Any:
        fault = self.plan(name)
        if fault is None:
            return run()
        self.injected.append((name, fault))
        if fault == "fail":
            raise InjectedError(f"{name}: connection refused (injected)")
        run()
        if fault == "lost":
            raise InjectedError(f"{name}: connection lost before the reply (injected)")
        raise InjectedError(f"{name}: timed out (injected)")

    def append(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        expected_version: int,
        tokens: Sequence[Mapping[str, int]] | None = None,
    ) -> int:
        result: int = self._call(
            "append",
            lambda: self.inner.append(
                conversation_id,
                messages,
                expected_version=expected_version,
                tokens=tokens,
            ),
        )
        return result

    def version(self, conversation_id: str) -> int:
        result: int = self._call("version", lambda: self.inner.version(conversation_id))
        return result

    def load(
        self, conversation_id: str, *, since: int = 0, view: bool = True
    ) -> StoredConversation:
        result: StoredConversation = self._call(
            "load", lambda: self.inner.load(conversation_id, since=since, view=view)
        )
        return result

    def save_view(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        version: int,
        sources: Mapping[str, Sequence[str]] | None = None,
        report: Mapping[str, Any] | None = None,
    ) -> StoredView:
        result: StoredView = self._call(
            "save_view",
            lambda: self.inner.save_view(
                conversation_id,
                messages,
                version=version,
                sources=sources,
                report=report,
            ),
        )
        return result

    def load_view(self, conversation_id: str) -> StoredView | None:
        result: StoredView | None = self._call(
            "load_view", lambda: self.inner.load_view(conversation_id)
        )
        return result

    def create(
        self, conversation_id: str, *, meta: Mapping[str, Any] | None = None
    ) -> ConversationInfo:
        result: ConversationInfo = self._call(
            "create", lambda: self.inner.create(conversation_id, meta=meta)
        )
        return result

    def info(self, conversation_id: str) -> ConversationInfo | None:
        result: ConversationInfo | None = self._call(
            "info", lambda: self.inner.info(conversation_id)
        )
        return result

    def update_meta(
        self,
        conversation_id: str,
        meta: Mapping[str, Any],
        *,
        replace: bool = False,
    ) -> ConversationInfo:
        result: ConversationInfo = self._call(
            "update_meta",
            lambda: self.inner.update_meta(conversation_id, meta, replace=replace),
        )
        return result

    def list_conversations(self) -> list[ConversationInfo]:
        result: list[ConversationInfo] = self._call(
            "list_conversations", self.inner.list_conversations
        )
        return result

    def delete(self, conversation_id: str) -> bool:
        result: bool = self._call("delete", lambda: self.inner.delete(conversation_id))
        return result

    def close(self) -> None:
        self.inner.close()


def once(name: str, fault: Fault, *, nth: int = 1) -> Plan:
    """A plan that injects ``fault`` at the ``nth`` call of ``name`` only."""
    seen = 0

    def plan(call: str) -> Fault | None:
        nonlocal seen
        if call != name:
            return None
        seen += 1
        return fault if seen == nth else None

    return plan


class _Link:
    """One proxied connection: whether it was cut, whether a reply came since."""

    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        self.client = client
        self.server = server
        self.cut = threading.Event()
        self.replied = threading.Event()


class CuttingProxy:
    """A loopback TCP proxy that can cut a connection once a pattern went by.

    ``arm(pattern)``: the next client bytes holding ``pattern`` are forwarded
    to the server, whose reply is then read and dropped; ``on_cut`` (if
    given) runs once the reply came (a server crash goes there), and the
    client's connection is closed: the server did the work, the client never
    hears of it. ``cuts`` counts the cuts made.
    """

    def __init__(
        self, host: str, port: int, on_cut: Callable[[], None] | None = None
    ) -> None:
        self.target = (host, port)
        self.on_cut = on_cut
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._armed: bytes | None = None
        self._lock = threading.Lock()
        self.cuts = 0
        self._links: list[_Link] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, pattern: bytes) -> None:
        with self._lock:
            self._armed = pattern

    def _take(self, data: bytes) -> bool:
        with self._lock:
            if self._armed is not None and self._armed in data:
                self._armed = None
                self.cuts += 1
                return True
            return False

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            link = _Link(client, server)
            self._links.append(link)
            threading.Thread(target=self._up, args=(link,), daemon=True).start()
            threading.Thread(target=self._down, args=(link,), daemon=True).start()

    def _up(self, link: _Link) -> None:
        try:
            while True:
                data = link.client.recv(65536)
                if not data:
                    break
                if self._take(data):
                    link.cut.set()
                    link.server.sendall(data)
                    link.replied.wait(10)
                    if self.on_cut is not None:
                        self.on_cut()
                    break
                link.server.sendall(data)
        except OSError:
            pass
        finally:
            for s in (link.client, link.server):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    s.close()

    def _down(self, link: _Link) -> None:
        try:
            while True:
                data = link.server.recv(65536)
                if not data:
                    break
                if link.cut.is_set():
                    link.replied.set()  # the server answered: the work is done
                    continue
                link.client.sendall(data)
        except OSError:
            pass
        finally:
            link.replied.set()
            if not link.cut.is_set():  # a cut link is closed by ``_up``, later
                with contextlib.suppress(OSError):
                    link.client.close()

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        for link in self._links:
            for s in (link.client, link.server):
                with contextlib.suppress(OSError):
                    s.close()


@contextlib.contextmanager
def cutting_proxy(
    host: str, port: int, on_cut: Callable[[], None] | None = None
) -> Iterator[CuttingProxy]:
    """A ``CuttingProxy`` to ``host:port``, closed on exit."""
    proxy = CuttingProxy(host, port, on_cut)
    try:
        yield proxy
    finally:
        proxy.close()
