"""What the proxy forwards: a request as it came, or fitted, per conversation.

Contract:

- ``Fitter.plan(api, raw, body, conversation_id)`` decides what goes
  upstream for one request. The model comes from the body, its window from
  the registry (``windows`` and ``window`` override it), the reply's cap
  (``max_tokens``, ``max_completion_tokens``, ``max_output_tokens``) is
  reserved, and tools and the system prompt are counted.
- A request that fits, and whose conversation was never compacted, is
  forwarded as the bytes received. Otherwise the conversation's compacted
  view is forwarded, written in the same API's shape into the same body:
  only the conversation's fields change, every other field is kept.
- Conversations: the id is the client's ``X-Conversation-Id`` when it sends
  one, else a hash of the model and the leading messages (the system prompt
  and the first user turn). Each has a ``ContextManager`` on the store, so a
  request continuing it pushes only its new messages, a compaction happens
  once, and the forwarded prefix stays byte-identical until the next
  compaction. Before each request the stored version is compared with the
  one this process last saw: another replica's appends are read back first,
  so replicas sharing a store lose and duplicate nothing. A request whose
  history does not extend the stored one (the client rewrote it) is fitted
  on its own, without the conversation.
- Pinned content over the window raises ``BudgetError`` (the app answers the
  provider's context-length error); a body the proxy cannot read raises
  ``PassThrough`` and is forwarded untouched, for the provider to judge.
"""

from __future__ import annotations

import hashlib
import json
import threading
import warnings
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from contextwindow.errors import ContextWindowError
from contextwindow.fitting import fit, reply_reserve
from contextwindow.formats._coerce import coerce_messages, coerce_tools
from contextwindow.manager import CompactionPolicy, ContextManager
from contextwindow.messages import Message, ToolSpec
from contextwindow.models import ModelInfo, get_model, get_tokenizer
from contextwindow.proxy._shapes import Api
from contextwindow.store.base import Store
from contextwindow.strategies.base import Strategy
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.counting import TokenCounter

__all__ = ["POLICY", "Fitter", "FitterConfig", "PassThrough", "Plan"]

POLICY = CompactionPolicy(at=100, to=60)
"""Compact only when a request would not fit, then down to 60 % of the
budget, so that many turns of plain appends (and prompt-cache hits) follow."""

MAX_MANAGERS = 1024
"""Conversations a process keeps in memory (the store keeps them all)."""


class PassThrough(Exception):
    """The body is not one the proxy fits: forward it as it came."""


@dataclass(frozen=True, slots=True)
class FitterConfig:
    """How requests are fitted.

    Example:
        >>> FitterConfig(window=64_000).window
        64000
    """

    window: int | None = None
    """Every model's window (default: the registry's)."""
    windows: Mapping[str, int] = field(default_factory=dict[str, int])
    """Windows by model name, over ``window`` and the registry."""
    reserve: int | None = None
    """Tokens reserved for a reply whose cap the body does not give (default:
    ``reply_reserve``)."""
    strategy: Strategy | str | None = None
    """The strategy (default: ``DEFAULT_STRATEGY``)."""


@dataclass(frozen=True, slots=True)
class Plan:
    """What goes upstream for one request."""

    body: bytes
    tokens_in: int
    """Tokens of the request as received."""
    tokens_forwarded: int
    """Tokens of the request forwarded."""
    rewritten: bool
    """Whether the body was fitted (else it is the bytes received)."""
    conversation: str | None = None
    compactions: int = 0
    """Compactions this request caused."""


@dataclass
class _Entry:
    manager: ContextManager
    key: tuple[Any, ...]
    version: int
    lock: threading.Lock = field(default_factory=threading.Lock)


class Fitter:
    """Plans requests (see the module's contract); thread-safe.

    Example:
        >>> import json
        >>> from contextwindow.proxy._shapes import APIS
        >>> body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
        >>> raw = json.dumps(body).encode()
        >>> fitter = Fitter(FitterConfig(), None)
        >>> plan = fitter.plan(APIS["/v1/chat/completions"], raw, body)
        >>> (plan.body == raw, plan.rewritten, plan.tokens_in)
        (True, False, 8)
    """

    def __init__(self, config: FitterConfig, store: Store | None) -> None:
        self.config = config
        self.store = store
        self._lock = threading.Lock()
        self._models: dict[str, tuple[ModelInfo, Tokenizer]] = {}
        self._counters: dict[tuple[str, str], TokenCounter] = {}
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    # -- the model ---------------------------------------------------------------

    def _model(self, name: str) -> tuple[ModelInfo, Tokenizer]:
        with self._lock:
            got = self._models.get(name)
            if got is None:
                with warnings.catch_warnings():
                    # An unknown model gets the default window; the log says so.
                    warnings.simplefilter("ignore")
                    info = get_model(name)
                    got = (info, get_tokenizer(info))
                self._models[name] = got
            return got

    def _counter(self, tok: Tokenizer, api: Api) -> TokenCounter:
        key = (tok.name, api.provider)
        with self._lock:
            counter = self._counters.get(key)
            if counter is None:
                counter = self._counters[key] = TokenCounter(tok, api.provider)
            return counter

    # -- planning ----------------------------------------------------------------

    def plan(
        self,
        api: Api,
        raw: bytes,
        body: Mapping[str, Any],
        conversation_id: str | None = None,
    ) -> Plan:
        """What to forward for ``body`` (``raw`` as received) on ``api``.

        Raises:
            BudgetError: Pinned content alone exceeds the window.
            PassThrough: The body is not one the proxy reads.
        """
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise PassThrough("no model")
        info, tok = self._model(model)
        window = self.config.windows.get(model) or self.config.window
        window = window or info.context_window
        counter = self._counter(tok, api)
        reserve = self._reserve(api, body, info, window)
        messages, specs, extra = self._read(api, body, counter)
        reserve = min(window, reserve + extra)
        tokens_in = counter.messages(messages, tools=specs) + extra
        stateless = (
            not api.stateful
            or self.store is None
            or body.get("previous_response_id") is not None
        )
        if stateless:
            return self._alone(
                api, raw, body, messages, specs, window, reserve, counter, tokens_in
            )
        cid = conversation_id or _derived_id(api, model, messages)
        return self._continued(
            api,
            raw,
            body,
            messages,
            specs,
            window,
            reserve,
            info,
            tok,
            cid,
            tokens_in,
            counter,
        )

    def _reserve(
        self, api: Api, body: Mapping[str, Any], info: ModelInfo, window: int
    ) -> int:
        for name in api.reply_fields:
            value = body.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                return min(value, window)
        if not api.stateful:
            return 0
        if self.config.reserve is not None:
            return min(self.config.reserve, window)
        return reply_reserve(info, window)

    def _read(
        self, api: Api, body: Mapping[str, Any], counter: TokenCounter
    ) -> tuple[list[Message], tuple[ToolSpec, ...], int]:
        """The conversation, its tools, and tokens counted outside both."""
        extra = 0
        if api.provider == "anthropic":
            data: Any = {k: body[k] for k in api.fields if k in body}
            if "messages" not in data:
                raise PassThrough("no messages")
        elif api.provider == "responses":
            data = body.get("input")
            if isinstance(data, str):
                data = [{"role": "user", "content": data}]
            instructions = body.get("instructions")
            if isinstance(instructions, str):
                extra += counter.tokenizer.count(instructions)
        else:
            data = body.get("messages")
        if not isinstance(data, list | dict):
            raise PassThrough("no messages")
        read = cast("object", data)
        try:
            messages = list(coerce_messages(read, provider=api.provider).messages)
        except ContextWindowError as exc:
            raise PassThrough(str(exc)) from exc
        tools = body.get("tools") or ()
        try:
            specs = coerce_tools(tools)
        except ContextWindowError:
            # Server-side tools and shapes the edge does not read are
            # counted as their JSON text.
            specs = ()
            extra += counter.tokenizer.count(json.dumps(tools))
        return messages, specs, extra

    def _alone(
        self,
        api: Api,
        raw: bytes,
        body: Mapping[str, Any],
        messages: list[Message],
        specs: tuple[ToolSpec, ...],
        window: int,
        reserve: int,
        counter: TokenCounter,
        tokens_in: int,
    ) -> Plan:
        if tokens_in <= window - reserve:
            return Plan(raw, tokens_in, tokens_in, False)
        fitted = fit(
            messages,
            limit=window,
            reserve=reserve,
            strategy=self.config.strategy,
            provider=api.provider,
            tokenizer=counter,
            tools=specs,
        )
        out = _written(api, body, fitted.to(api.provider))
        forwarded = counter.messages(fitted.messages, tools=specs) + (
            tokens_in - counter.messages(messages, tools=specs)
        )
        return Plan(out, tokens_in, forwarded, True, None, 1)

    def _continued(
        self,
        api: Api,
        raw: bytes,
        body: Mapping[str, Any],
        messages: list[Message],
        specs: tuple[ToolSpec, ...],
        window: int,
        reserve: int,
        info: ModelInfo,
        tok: Tokenizer,
        cid: str,
        tokens_in: int,
        counter: TokenCounter,
    ) -> Plan:
        assert self.store is not None
        key = (info.name, api.provider, window, specs, self.config.strategy)
        entry = self._entry(cid, key, info, tok, api, window, specs)
        with entry.lock:
            manager = entry.manager
            stored = self.store.version(cid)
            if stored != entry.version:
                entry = self._entry(cid, key, info, tok, api, window, specs, fresh=True)
                manager = entry.manager
            history = manager.history
            n = len(history)
            if n > len(messages) or tuple(messages[:n]) != history:
                # The client rewrote its history: fit this request alone.
                plan = self._alone(
                    api, raw, body, messages, specs, window, reserve, counter, tokens_in
                )
                return replace(plan, conversation=cid)
            if n < len(messages):
                manager.push_many(messages[n:])
            prepared = manager.prepare(reserve=reserve)
            entry.version = self.store.version(cid)
        done = sum(1 for c in prepared.compactions if c.applied)
        if prepared.conversation == manager.history and tokens_in <= window - reserve:
            return Plan(raw, tokens_in, tokens_in, False, cid, done)
        out = _written(api, body, prepared.body())
        forwarded = prepared.tokens + (
            tokens_in - counter.messages(messages, tools=specs)
        )
        return Plan(out, tokens_in, forwarded, True, cid, done)

    def _entry(
        self,
        cid: str,
        key: tuple[Any, ...],
        info: ModelInfo,
        tok: Tokenizer,
        api: Api,
        window: int,
        specs: Sequence[ToolSpec],
        *,
        fresh: bool = False,
    ) -> _Entry:
        with self._lock:
            entry = self._entries.get(cid)
            if entry is not None and entry.key == key and not fresh:
                self._entries.move_to_end(cid)
                return entry
        # Opening a manager reads the stored conversation: outside the lock.
        manager = ContextManager(
            info,
            token_limit=window,
            strategy="default"
            if self.config.strategy is None
            else self.config.strategy,
            tokenizer=tok,
            provider=api.provider,
            tools=specs,
            policy=POLICY,
            store=self.store,
            conversation_id=cid,
        )
        assert self.store is not None
        made = _Entry(manager, key, self.store.version(cid))
        if entry is not None:
            made.lock = entry.lock
        with self._lock:
            self._entries[cid] = made
            self._entries.move_to_end(cid)
            while len(self._entries) > MAX_MANAGERS:
                self._entries.popitem(last=False)
        return made


def _written(api: Api, body: Mapping[str, Any], fields: Mapping[str, Any]) -> bytes:
    """``body`` with its conversation fields replaced by ``fields``."""
    out = dict(body)
    for name in api.fields:
        if name in fields:
            out[name] = fields[name]
        elif name in out and name != "system":
            del out[name]
    if api.provider == "anthropic" and "system" not in fields:
        out.pop("system", None)
    return json.dumps(out, ensure_ascii=False, separators=(",", ":")).encode()


def _derived_id(api: Api, model: str, messages: Sequence[Message]) -> str:
    """A conversation's id from its model and leading messages."""
    lead: list[Message] = []
    for m in messages:
        lead.append(m)
        if m.role == "user":
            break
    h = hashlib.sha256(f"{api.provider}\0{model}".encode())
    for m in lead:
        h.update(b"\0" + m.role.encode() + b"\0" + m.text.encode())
    return "proxy-" + h.hexdigest()[:32]
