"""What the proxy forwards: a request as it came, or fitted, per conversation.

Contract:

- ``Fitter.plan(api, raw, body, conversation_id)`` decides what goes
  upstream for one request. The model comes from the body, its window from
  the registry (``windows`` and ``window`` override it), the reply's cap
  (``max_tokens``, ``max_completion_tokens``, ``max_output_tokens``) is
  reserved, and tools and the system prompt are counted.
- A name of ``windows`` names the request's model when it is the model's
  string, else when it names it as the registry resolves names (case and
  surrounding spaces, a provider's prefix, a date or ``-latest``, dots or
  dashes in a version: ``gpt-4o`` names ``GPT-4o``, ``openai/gpt-4o`` and
  ``gpt-4o-2024-08-06``), else when both resolve to one model of the
  registry (an alias). A model the registry does not know (an Azure
  deployment's name) gets ``DEFAULT_MODEL_INFO``'s window unless one is
  configured: its plan says so (``model_known``, ``window``), and where the
  default is assumed the first request for it logs a warning, once per
  name, as a JSON line (``"event": "unknown_model"``) on the
  ``contextwindow.proxy.models`` logger (beside, not among, the request
  lines).
- A request that fits, and whose conversation was never compacted, is
  forwarded as the bytes received; one that breaks a provider's rule is
  repaired, unless no turn would be left (then it goes as it came, for the
  provider to judge). Otherwise the conversation's compacted
  view is forwarded, written in the same API's shape into the same body:
  only the conversation's fields change, every other field is kept.
- Conversations: the id is the client's ``X-Conversation-Id`` when it sends
  one, else a hash of the model and the leading messages (the system prompt
  and the first user turn). Each has a ``ContextManager`` on the store, so a
  request continuing it pushes only its new messages, a compaction happens
  once, and the forwarded prefix stays byte-identical until the next
  compaction. A replica keeps, per conversation (the last ``MAX_MANAGERS``),
  the items of the last request it read: the next request's items are
  compared with them as JSON, and only the new ones are read and counted,
  so a continuation costs what it appended. Before each request the stored
  version is compared with the one this replica left: when another replica
  moved it, the conversation is read back first, so replicas sharing a store
  lose and duplicate nothing. Apart from that one read, a request costs the
  store the append of its new messages (and, when it compacted, the new
  view and the manager's state). With ``write_behind`` (the app's choice)
  those writes are queued (``_behind.WriteBehind``) and the plan carries
  their ``commit``, which the app runs while the upstream answers and waits
  for before its response ends: the store's syncs overlap the upstream's
  answer instead of coming before the request is sent.
- A request whose history leaves the stored one (the client edited or
  regenerated a turn) is a fork: a conversation of its own, named by the
  conversation and the first message that differs (``_fork_id``), so its
  next requests continue it; the original's log and view are untouched.
  The fork is fitted from its whole history once (it does not reuse the
  original's compaction of the shared prefix), then extended like any
  conversation. Past ``MAX_FORKS`` forks of forks a request is fitted on
  its own.
- Tools: an agent sends the same ones with every request. Those of the
  last ``TOOL_READS`` requests are kept read; a request whose tools equal
  one of them (as JSON) takes the same specs, which the counter then finds
  counted.
- The input tokens the upstream reports calibrate the model's counts
  (``observe_usage``): an approximate tokenizer's budget is the calibrated
  one from the next request on, for every conversation of the model.
- ``count_tokens`` (``Api.fitted`` false) is counted, never fitted nor
  refused: its client wants the count of the request as it is.
- Pinned content over the window raises ``BudgetError`` (the app answers the
  provider's context-length error); a body the proxy cannot read raises
  ``PassThrough`` and is forwarded untouched, for the provider to judge.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, NoReturn, cast

import orjson

from contextwindow._args import check_int, check_str, shown
from contextwindow._windows import Windows
from contextwindow.errors import ArgumentTypeError, BudgetError, ContextWindowError
from contextwindow.fitting import fit, reply_reserve
from contextwindow.formats._coerce import coerce_messages, coerce_tools
from contextwindow.manager import CompactionPolicy, ContextManager
from contextwindow.messages import Message, ToolSpec
from contextwindow.models import (
    DEFAULT_MODEL_INFO,
    ModelInfo,
    get_model,
    get_tokenizer,
    registry,
)
from contextwindow.proxy._behind import WriteBehind
from contextwindow.proxy._shapes import Api
from contextwindow.store.base import Store
from contextwindow.strategies.base import Strategy
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.calibration import Calibration
from contextwindow.tokens.counting import TokenCounter

__all__ = [
    "PLAUSIBLE",
    "POLICY",
    "Fitter",
    "FitterConfig",
    "PassThrough",
    "Plan",
    "json_line",
    "parse_body",
]

log = logging.getLogger("contextwindow.proxy.models")
"""Where an unknown model is reported, once per name (a child of the request
log's ``contextwindow.proxy``: its handlers get it, its one line per request
stays one)."""

POLICY = CompactionPolicy(at=100, to=60)
"""Compact only when a request would not fit, then down to 60 % of the
budget, so that many turns of plain appends (and prompt-cache hits) follow."""

PLAUSIBLE = (0.5, 2.0)
"""Reported over counted input tokens, the range an observation is fed in.
Outside it the upstream reports something else than the request counted
(another model behind it, a cache's share alone): no tokenizer of the
registry is that far off."""

MAX_FORKS = 8
"""Forks of forks followed before a request is fitted on its own."""

MAX_MANAGERS = 1024
"""Conversations a process keeps in memory (the store keeps them all)."""

TOOL_READS = 8
"""Tool lists of recent requests kept read (``Fitter._tools``)."""


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
    """Windows by model name, over ``window`` and the registry. A name
    matches the request's model as the registry resolves names (the
    module's contract): ``gpt-4o`` matches ``GPT-4o`` and ``openai/gpt-4o``;
    the exact string first."""
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
    calibration: Calibration | None = field(default=None, compare=False, repr=False)
    """The calibration of the model's counts, which the upstream's usage feeds."""
    commit: Callable[[], None] | None = field(default=None, compare=False, repr=False)
    """With ``write_behind``: writes this request's appends to the store (call
    it, from a thread, before the response to the client ends)."""
    window: int = 0
    """The window the request was fitted into (0: not said)."""
    model_known: bool = True
    """Whether the registry knows the model (else its window is
    ``DEFAULT_MODEL_INFO``'s, unless ``windows`` or ``window`` gives one)."""


@dataclass(frozen=True, slots=True)
class _Model:
    """A model name as the fitter reads it, once per name."""

    info: ModelInfo
    tokenizer: Tokenizer
    window: int
    """The window its requests are fitted into."""
    known: bool
    """Whether the registry resolves the name."""


@dataclass
class _Entry:
    manager: ContextManager
    counter: TokenCounter
    """The manager's counter (it counts the requests' messages too, under
    ``lock``: what one counted the other does not count again)."""
    key: tuple[Any, ...]
    version: int
    """The store's version of the conversation as this replica left it."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    seen: _Seen | None = None
    """The last request read for it, while the manager's history equals it."""
    fork: str | None = None
    """The fork of it last served (whose continuations go there at once)."""


class Fitter:
    """Plans requests (see the module's contract); thread-safe.

    Raises:
        ArgumentError: A name of ``config.windows`` is not a ``str``, or its
            window not an int >= 1 (named ``windows['name']``).

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

    def __init__(
        self, config: FitterConfig, store: Store | None, *, write_behind: bool = False
    ) -> None:
        self.config = config
        self._windows = Windows(_checked_windows(config.windows), registry)
        self._behind = (
            WriteBehind(store) if write_behind and store is not None else None
        )
        self.store: Store | None = self._behind if self._behind is not None else store
        self._lock = threading.Lock()
        self._models: dict[str, _Model] = {}
        self._counters: dict[tuple[str, str, str], TokenCounter] = {}
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._calibrations: dict[tuple[str, str, str], Calibration] = {}
        self._tool_reads: list[
            tuple[TokenCounter, Any, Any, tuple[ToolSpec, ...], int]
        ] = []

    # -- the model ---------------------------------------------------------------

    def _model(self, name: str) -> _Model:
        with self._lock:
            got = self._models.get(name)
            if got is not None:
                return got
            known = registry.resolve(name) is not None
            with warnings.catch_warnings():
                # A server warns in its log, once per name (below), not by
                # a Python warning per request.
                warnings.simplefilter("ignore")
                info = get_model(name)
            configured = self._configured(name) or self.config.window
            window = configured or info.context_window
            got = self._models[name] = _Model(info, get_tokenizer(info), window, known)
        if not known and not configured:
            _warn_unknown(name, window)
        return got

    def _configured(self, name: str) -> int | None:
        """The window ``windows`` gives the model ``name`` (under ``_lock``).

        The exact string first; then as the registry resolves names, with
        ``windows``' names as its table; then by the registry's canonical
        name, when the request's and a configured one resolve alike
        (``contextwindow._windows``: the LiteLLM adapter's rule too).
        """
        return self._windows.get(name)

    def window_of(self, model: str) -> tuple[int, bool]:
        """The window ``model``'s requests are fitted into; whether it is known.

        Example:
            >>> fitter = Fitter(FitterConfig(windows={"gpt-4o": 64_000}), None)
            >>> fitter.window_of("OpenAI/GPT-4o-2024-08-06")
            (64000, True)
            >>> fitter.window_of("my-deployment")
            (8192, False)
        """
        m = self._model(model)
        return m.window, m.known

    def _counter(self, tok: Tokenizer, api: Api, info: ModelInfo) -> TokenCounter:
        # By model too: a model's images have their own rule (gpt-4.1-mini's
        # patches, gpt-4o's tiles).
        key = (tok.name, api.provider, info.name)
        with self._lock:
            counter = self._counters.get(key)
            if counter is None:
                counter = self._counters[key] = TokenCounter(
                    tok, api.provider, model=info
                )
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
        m = self._model(model)
        info, tok, window = m.info, m.tokenizer, m.window
        counter = self._counter(tok, api, info)
        calibration = self._calibration(info, tok, api)
        req = _Request(api, raw, body, model, counter, calibration, known=m.known)
        req.reserve = self._reserve(api, body, info, window)
        req.window = window
        req.items, req.fixed = _conversation(api, body)
        req.specs, req.extra = self._tools(body, counter)
        if not api.fitted:
            # Counted (the answer's count calibrates), never fitted nor refused.
            n = counter.messages(req.read(req.items), tools=req.specs) + req.extra
            return Plan(raw, n, n, False, calibration=calibration, **req.said())
        if req.extra and req.reserve + req.extra >= window:
            # What is counted outside the conversation leaves it no room.
            raise BudgetError(
                window - req.reserve,
                req.extra,
                (f"instructions and tools, beside the messages: {req.extra:,} tokens",),
            )
        req.reserve = min(window, req.reserve + req.extra)
        if self.store is None or body.get("previous_response_id") is not None:
            messages = req.read(req.items)
            return self._alone(
                req, messages, counter.messages(messages, tools=req.specs)
            )
        cid = conversation_id or _derived_id(api, model, req.read(_lead(req.items)))
        return self._continued(req, info, tok, cid)

    def _reserve(
        self, api: Api, body: Mapping[str, Any], info: ModelInfo, window: int
    ) -> int:
        for name in api.reply_fields:
            value = body.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                return min(value, window)
        if self.config.reserve is not None:
            return min(self.config.reserve, window)
        return reply_reserve(info, window)

    def _tools(
        self, body: Mapping[str, Any], counter: TokenCounter
    ) -> tuple[tuple[ToolSpec, ...], int]:
        """The request's tools, and tokens counted outside the conversation.

        An agent sends the same tools (and instructions) with every request:
        those of the last ``TOOL_READS`` requests are kept with what they
        read as, and a request whose tools equal one of them (compared as
        JSON, at C speed) takes its specs, the very objects, unread.
        """
        instructions = body.get("instructions")
        tools = body.get("tools") or ()
        with self._lock:
            kept = list(self._tool_reads)
        for read in kept:  # compared outside the lock
            c, t, ins, specs, extra = read
            if c is counter and ins == instructions and t == tools:
                with self._lock:  # the newest first
                    reads = self._tool_reads
                    self._tool_reads = [read, *(r for r in reads if r is not read)]
                return specs, extra
        # Counted by the tokenizer, which keeps nothing: this counter is
        # shared by every conversation's requests, and the read is kept.
        extra = 0
        if isinstance(instructions, str):
            extra += counter.tokenizer.count(instructions)
        try:
            specs = coerce_tools(tools)
        except ContextWindowError:
            # Server-side tools and shapes the edge does not read are
            # counted as their JSON text.
            specs = ()
            extra += counter.tokenizer.count(json.dumps(tools))
        with self._lock:
            # The body's own objects: nothing else holds them, nothing changes them.
            self._tool_reads.insert(0, (counter, tools, instructions, specs, extra))
            del self._tool_reads[TOOL_READS:]
        return specs, extra

    def _alone(self, req: _Request, messages: list[Message], counted: int) -> Plan:
        """The request fitted on its own (``counted``: its messages' tokens)."""
        tokens_in = counted + req.extra
        budget = req.window - req.reserve
        limit = req.window
        if not req.counter.tokenizer.exact:
            # What the provider would bill, as it reported (the calibration).
            budget = req.calibration.limit(budget)
            limit = budget + req.reserve
        if tokens_in <= budget:
            return Plan(
                req.raw,
                tokens_in,
                tokens_in,
                False,
                calibration=req.calibration,
                **req.said(),
            )
        fitted = fit(
            messages,
            limit=limit,
            reserve=req.reserve,
            strategy=self.config.strategy,
            provider=req.api.provider,
            tokenizer=req.counter,
            tools=req.specs,
        )
        shaped = fitted.to(req.api.provider)
        # Anthropic's is a body; Chat's messages and Responses' items are a
        # list, the body's one conversation field.
        fields: Mapping[str, Any] = (
            cast("Mapping[str, Any]", shaped)
            if isinstance(shaped, Mapping)
            else {req.api.fields[0]: shaped}
        )
        out = _written(req.api, req.body, fields)
        forwarded = req.counter.messages(fitted.messages, tools=req.specs) + req.extra
        return Plan(
            out,
            tokens_in,
            forwarded,
            True,
            None,
            1,
            calibration=req.calibration,
            **req.said(),
        )

    def _continued(
        self,
        req: _Request,
        info: ModelInfo,
        tok: Tokenizer,
        cid: str,
        read: list[Message] | None = None,
        depth: int = 0,
    ) -> Plan:
        """``req`` as the next request of ``cid``, or of a fork of it.

        ``read``: the request's messages, when they were read already.
        """
        assert self.store is not None
        api = req.api
        key = (info.name, api.provider, req.window, req.specs, self.config.strategy)
        entry = self._entry(cid, key, info, tok, req)
        with entry.lock:
            stored = self.store.version(cid)
            behind = self._behind
            if stored != entry.version or (behind is not None and behind.failed(cid)):
                # Another replica moved the conversation (or this one's
                # append did not go in): read it again.
                entry = self._entry(cid, key, info, tok, req, fresh=True)
                stored = entry.version
            manager = entry.manager
            seen = entry.seen
            messages = read
            if messages is None and seen is not None:
                messages = seen.extended(req)
            if messages is None and depth < MAX_FORKS and self._forked(entry, req):
                assert entry.fork is not None
                return self._continued(req, info, tok, entry.fork, None, depth + 1)
            if messages is None or read is not None:
                if messages is None:
                    messages = req.read(req.items)
                history = manager.history
                n = len(history)
                if n > len(messages) or tuple(messages[:n]) != history:
                    # The client's history leaves this one: a fork.
                    if depth < MAX_FORKS:
                        entry.fork = _fork_id(cid, messages, history)
                        return self._continued(
                            req, info, tok, entry.fork, messages, depth + 1
                        )
                    counted = req.counter.messages(messages, tools=req.specs)
                    return replace(
                        self._alone(req, messages, counted), conversation=cid
                    )
            entry.seen = None
            n = len(manager.history)
            counted = entry.counter.messages(messages, tools=req.specs)
            try:
                if n < len(messages):
                    manager.push_many(messages[n:])
                prepared = manager.prepare(reserve=req.reserve)
            except BaseException:
                if self._behind is not None:  # no plan carries the commit: now
                    with contextlib.suppress(Exception):
                        self._behind.commit(cid)
                raise
            if len(manager.history) == len(messages):
                entry.version = stored + len(messages) - n
                entry.seen = _Seen.of(req, messages)
            else:  # another writer's messages came in between: read again next time
                entry.version = -1
        tokens_in = counted + req.extra
        done = sum(1 for c in prepared.compactions if c.applied)
        commit = None
        if self._behind is not None and self._behind.queued(cid):
            commit = partial(self._behind.commit, cid)
        if tokens_in <= prepared.budget and _as_given(
            prepared.conversation, manager.history
        ):
            return Plan(
                req.raw,
                tokens_in,
                tokens_in,
                False,
                cid,
                done,
                req.calibration,
                commit,
                **req.said(),
            )
        out = _written(api, req.body, prepared.body(), commit)
        forwarded = prepared.tokens + req.extra
        return Plan(
            out,
            tokens_in,
            forwarded,
            True,
            cid,
            done,
            req.calibration,
            commit,
            **req.said(),
        )

    def _forked(self, entry: _Entry, req: _Request) -> bool:
        """Whether ``req`` continues the fork of ``entry`` last served.

        A hint: the fork's own entry checks it again under its lock.
        """
        if entry.fork is None:
            return False
        with self._lock:
            fork = self._entries.get(entry.fork)
        seen = fork.seen if fork is not None else None
        return seen is not None and seen.extended(req) is not None

    def observe_usage(self, plan: Plan, reported: int) -> None:
        """Feed the input tokens the upstream reported for ``plan``'s request.

        The conversation's manager observes it (``observe_usage``); every
        conversation of the model shares one calibration, which approximate
        tokenizers' budgets follow from then on (exact ones ignore it). A
        report outside ``PLAUSIBLE`` times the count is left out.

        Example:
            >>> fitter = Fitter(FitterConfig(), None)
            >>> plan = Plan(b"", 100, 100, False, calibration=Calibration())
            >>> fitter.observe_usage(plan, 125)
            >>> plan.calibration.ratio
            1.25
        """
        if plan.calibration is None or plan.tokens_forwarded <= 0:
            return
        low, high = PLAUSIBLE
        if not low <= reported / plan.tokens_forwarded <= high:
            return
        cid = plan.conversation
        entry = self._entries.get(cid) if cid is not None else None
        if entry is not None and entry.manager.calibration is plan.calibration:
            # With ``counted`` given the manager reads none of its own state,
            # only the calibration (thread-safe): no lock is taken.
            entry.manager.observe_usage(reported, counted=plan.tokens_forwarded)
        else:
            plan.calibration.observe(plan.tokens_forwarded, reported)

    def calibration(self, model: str, api: Api) -> Calibration:
        """The calibration of ``model``'s counts on ``api``.

        Example:
            >>> from contextwindow.proxy._shapes import APIS
            >>> Fitter(FitterConfig(), None).calibration(
            ...     "claude-sonnet-4-6", APIS["/v1/messages"]).ratio
            1.0
        """
        m = self._model(model)
        return self._calibration(m.info, m.tokenizer, api)

    def _calibration(self, info: ModelInfo, tok: Tokenizer, api: Api) -> Calibration:
        key = (info.name, tok.name, api.provider)
        with self._lock:
            cal = self._calibrations.get(key)
            if cal is None:
                cal = self._calibrations[key] = Calibration()
            return cal

    def _entry(
        self,
        cid: str,
        key: tuple[Any, ...],
        info: ModelInfo,
        tok: Tokenizer,
        req: _Request,
        *,
        fresh: bool = False,
    ) -> _Entry:
        with self._lock:
            entry = self._entries.get(cid)
            if entry is not None and entry.key == key and not fresh:
                self._entries.move_to_end(cid)
                return entry
        # Opening a manager reads the stored conversation: outside the lock.
        # The counter of the conversation's entry before, when its key was
        # the same, keeps what it counted.
        counter = (
            entry.counter
            if entry is not None and entry.key == key
            else TokenCounter(tok, req.api.provider, model=info)
        )
        manager = ContextManager(
            info,
            token_limit=req.window,
            strategy="default"
            if self.config.strategy is None
            else self.config.strategy,
            tokenizer=counter,
            tools=req.specs,
            policy=POLICY,
            # No handlers watch it: firing thresholds would only write state.
            thresholds=(),
            store=self.store,
            conversation_id=cid,
            calibration=req.calibration,
        )
        assert self.store is not None
        made = _Entry(manager, counter, key, self.store.version(cid))
        if entry is not None:
            made.lock = entry.lock
        with self._lock:
            self._entries[cid] = made
            self._entries.move_to_end(cid)
            while len(self._entries) > MAX_MANAGERS:
                self._entries.popitem(last=False)
        return made


@dataclass(slots=True)
class _Request:
    """One request as the fitter reads it."""

    api: Api
    raw: bytes
    body: Mapping[str, Any]
    model: str
    counter: TokenCounter
    calibration: Calibration
    items: list[Any] = field(default_factory=list[Any])
    """The conversation's items (``messages`` or ``input``) as received."""
    fixed: Any = None
    """The other field read with them (Anthropic's ``system``)."""
    specs: tuple[ToolSpec, ...] = ()
    extra: int = 0
    """Tokens counted outside the conversation and its tools."""
    window: int = 0
    reserve: int = 0
    known: bool = True
    """Whether the registry knows the model."""

    def said(self) -> dict[str, Any]:
        """What a plan says of the model: its window, and whether it is known."""
        return {"window": self.window, "model_known": self.known}

    def read(self, items: list[Any], *, tail: bool = False) -> list[Message]:
        """``items`` as neutral messages (``tail``: without the system prompt).

        Raises:
            PassThrough: They are not messages the edge reads.
        """
        api = self.api
        data: object = items
        force = False
        if api.provider == "anthropic" and "system" in self.body:
            if tail:
                force = True  # read as the whole body is: as Anthropic turns
            else:
                data = {"system": self.fixed, "messages": items}
        try:
            return list(
                coerce_messages(data, provider=api.provider, force=force).messages
            )
        except ContextWindowError as exc:
            raise PassThrough(str(exc)) from exc


@dataclass(slots=True)
class _Seen:
    """The last request a replica read for a conversation, kept to read the next.

    ``messages`` are what ``items`` read as (equal to the manager's history);
    ``alone`` is how many of the last messages the last item reads as on its
    own (0: it reads otherwise in context). A request whose items extend
    ``items`` then costs what it appended: the old items are compared as JSON
    (at C speed), and only the new ones are read, together with the last old
    one, which must read as it did (so no message spans the boundary: an item
    that joins the one before it, say a Responses call after a call, sends
    the request down the full path).
    """

    items: list[Any]
    fixed: Any
    messages: list[Message]
    alone: int

    @classmethod
    def of(cls, req: _Request, messages: list[Message]) -> _Seen | None:
        if not req.items or not messages:
            return None
        try:
            last = req.read(req.items[-1:], tail=True)
        except PassThrough:
            return None
        k = len(last)
        alone = k if k and messages[-k:] == last else 0
        return cls(req.items, req.fixed, messages, alone)

    def extended(self, req: _Request) -> list[Message] | None:
        """``req``'s messages when its items extend these, read from the tail."""
        p = len(self.items)
        items = req.items
        if not self.alone or req.fixed != self.fixed or len(items) < p:
            return None
        if items[:p] != self.items:
            return None
        if len(items) == p:
            return self.messages
        tail = items[p - 1 :]
        if req.api.provider == "openai" and any(map(_legacy, tail)):
            return None  # a legacy function call's id is its position in the list
        try:
            read = req.read(tail, tail=True)
        except PassThrough:
            return None
        k = self.alone
        if read[:k] != self.messages[-k:]:
            return None
        return self.messages + read[k:]


def _legacy(item: object) -> bool:
    if not isinstance(item, dict):
        return False
    obj = cast("dict[str, Any]", item)
    return obj.get("role") == "function" or obj.get("function_call") is not None


def _checked_windows(windows: object) -> dict[str, int]:
    """``FitterConfig.windows``, each name and window checked.

    Example:
        >>> _checked_windows({"gpt-4o": 0})
        Traceback (most recent call last):
        ...
        contextwindow.errors.ArgumentValueError: windows['gpt-4o']: expected an int >= 1, got 0
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    if not isinstance(windows, Mapping):
        raise ArgumentTypeError(
            "windows", shown(windows), "a mapping of model names to ints"
        )
    out: dict[str, int] = {}
    for name, size in cast("Mapping[object, object]", windows).items():
        key: str = check_str(
            name, "windows", empty=False, takes="model names (str) as keys"
        )
        out[key] = check_int(size, f"windows[{key!r}]", low=1)
    return out


def _warn_unknown(name: str, window: int) -> None:
    """Log, once per name (the caller's), that ``name`` gets the default window."""
    if not log.isEnabledFor(logging.WARNING):
        return
    close = registry.suggest(name)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    message = (
        f"unknown model {name!r}{hint}: its requests are fitted into the default "
        f"window of {window:,} tokens (DEFAULT_MODEL_INFO), counted approximately "
        f"with {DEFAULT_MODEL_INFO.encoding}; give its window with --model-window "
        "MODEL=TOKENS (FitterConfig.windows)"
    )
    record = {
        "event": "unknown_model",
        "model": name,
        "window": window,
        "message": message,
    }
    log.warning(json_line(record))


def json_line(record: Mapping[str, Any]) -> str:
    r"""``record`` as one line of JSON (the proxy's log lines).

    Example:
        >>> json_line({"model": "claude-\ud83d"})  # a lone surrogate: its escape
        '{"model": "claude-\\ud83d"}'
    """
    try:
        return orjson.dumps(record, default=str).decode()
    except TypeError:  # a lone surrogate (in a model's name): its escape
        return json.dumps(record, default=str)


def _conversation(api: Api, body: Mapping[str, Any]) -> tuple[list[Any], Any]:
    """The conversation's items in ``body``, and the other field read with them.

    Raises:
        PassThrough: The body holds no conversation.
    """
    if api.provider == "responses":
        data = body.get("input")
        if isinstance(data, str):
            data = [{"role": "user", "content": data}]
        fixed = None
    else:
        data = body.get("messages")
        fixed = body.get("system") if api.provider == "anthropic" else None
    if not isinstance(data, list):
        raise PassThrough("no messages")
    return cast("list[object]", data), fixed


def _lead(items: list[Any]) -> list[Any]:
    """The items up to the first user turn (what names a conversation)."""
    for i, item in enumerate(items):
        if (
            isinstance(item, dict)
            and cast("dict[str, Any]", item).get("role") == "user"
        ):
            return items[: i + 1]
    return items


def parse_body(raw: bytes) -> object:
    """``raw`` as JSON: by orjson (a few times faster), else as ``json`` reads it.

    What orjson refuses or would not read exactly and ``json`` reads (a lone
    surrogate escape; an integer past 64 bits, which orjson makes a float:
    ``json`` reads any body holding a run of 20 digits) is read by ``json``,
    and written back as it came (``_dumped``). A number no float holds
    (``NaN``, ``Infinity``, ``1e400``) and nesting too deep to read are not
    read: such a body could not be written back as it came (a rewritten body
    would say ``null`` or ``Infinity`` for it), so it goes upstream untouched.

    Raises:
        ValueError: ``raw`` is not JSON, or not JSON the proxy writes back.

    Example:
        >>> parse_body(b'{"n": 12345678901234567890123, "m": [1]}')
        {'n': 12345678901234567890123, 'm': [1]}
        >>> parse_body(b'{"n": 1e400}')
        Traceback (most recent call last):
        ...
        ValueError: a number no float holds: 1e400
        >>> parse_body(b"[" * 100_000 + b"]" * 100_000)
        Traceback (most recent call last):
        ...
        ValueError: JSON nested too deep to read
    """
    if _LONG_NUMBER not in raw.translate(_DIGITS):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    try:
        return json.loads(raw, parse_constant=_not_finite, parse_float=_finite)
    except RecursionError:
        raise ValueError("JSON nested too deep to read") from None


_DIGITS = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))
"""Every digit to ``0``, every other byte to a space (``bytes.translate``)."""
_LONG_NUMBER = b"0" * 20
"""A run of digits an integer orjson reads exactly may not hold (2**64 has 20)."""


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        _not_finite(text)
    return value


def _not_finite(text: str) -> NoReturn:
    raise ValueError(f"a number no float holds: {text[:40]}")


def _dumped(value: Any) -> bytes:
    r"""``value`` as compact UTF-8 JSON, by orjson when it can write it.

    Example:
        >>> _dumped({"a": "caf\u00e9"})
        b'{"a":"caf\xc3\xa9"}'
        >>> _dumped({"cut": "\ud83d"})  # a lone surrogate: its escape
        b'{"cut":"\\ud83d"}'
    """
    try:
        return orjson.dumps(value)
    except (orjson.JSONEncodeError, TypeError):
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode()
    except UnicodeEncodeError:  # a lone surrogate: written as the escape it came as
        return json.dumps(value, separators=(",", ":")).encode()


def _written(
    api: Api,
    body: Mapping[str, Any],
    fields: Mapping[str, Any],
    commit: Callable[[], None] | None = None,
) -> bytes:
    """``body`` with its conversation fields replaced by ``fields``.

    ``commit``: the plan's store write, run now when this fails (no plan
    carries it then).
    """
    try:
        return _dumped(_replaced(api, body, fields))
    except BaseException:
        if commit is not None:
            with contextlib.suppress(Exception):
                commit()
        raise


def _replaced(
    api: Api, body: Mapping[str, Any], fields: Mapping[str, Any]
) -> dict[str, Any]:
    out = dict(body)
    for name in api.fields:
        if name in fields:
            out[name] = fields[name]
        elif name in out and name != "system":
            del out[name]
    if api.provider == "anthropic" and "system" not in fields:
        out.pop("system", None)
    return out


def _as_given(view: tuple[Message, ...], history: tuple[Message, ...]) -> bool:
    """Whether a request that fits goes as it came: ``view`` is ``history``.

    Or the repairs that make a history valid left no turn of it (a result
    answering no call, alone): the request goes as it came, for the provider
    to name the mistake, not with no message at all.
    """
    return view == history or all(m.role == "system" for m in view)


def _fork_id(cid: str, messages: Sequence[Message], history: Sequence[Message]) -> str:
    """The id of the fork of ``cid`` whose history is ``messages``.

    Named by where they leave ``history`` and the first message that differs,
    so every request of one fork finds the same conversation.
    """
    k = 0
    for k, (a, b) in enumerate(zip(messages, history, strict=False)):  # noqa: B007 -- k is the result
        if a != b:
            break
    else:
        k = min(len(messages), len(history))
    h = hashlib.sha256(f"{cid}\0{k}".encode())
    if k < len(messages):
        m = messages[k]
        h.update(repr((m.role, m.parts)).encode())
    return f"{cid}~{h.hexdigest()[:16]}"


def _derived_id(api: Api, model: str, messages: Sequence[Message]) -> str:
    """A conversation's id from its model and leading messages."""
    lead: list[Message] = []
    for m in messages:
        lead.append(m)
        if m.role == "user":
            break
    h = hashlib.sha256(f"{api.provider}\0{model}".encode())
    for m in lead:
        # A lone surrogate is text a client may send (a string cut in an emoji).
        h.update(
            b"\0" + m.role.encode() + b"\0" + m.text.encode("utf-8", "surrogatepass")
        )
    return "proxy-" + h.hexdigest()[:32]
