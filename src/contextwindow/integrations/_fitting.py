"""What every adapter does once it holds neutral messages: fit them, incrementally.

Contract:

- ``Conversations`` keeps one ``ContextManager`` per conversation a
  framework hands over: the history it passes only grows, so what is new is
  pushed and the manager compacts incrementally (the prefix sent stays
  stable, and a long run costs what each step adds). A history that does
  not extend one fed before starts a manager of its own (at most ``keep``
  are kept, least recently used dropped).
- ``prepare(messages, extra)`` returns the request: ``extra`` tokens (the
  framework's instructions and tool definitions, counted with
  ``extra_tokens``) are kept free besides the reply's reserve, scaled by the
  calibration's ratio when the tokenizer is approximate, so what is sent
  plus them fits the window in the provider's tokens.
- ``observe(usage, run)`` feeds the provider's reported input tokens to
  the calibration, paired with the count of the request last prepared for
  the same ``run`` (``extra`` included), once: concurrent runs sharing one
  adapter each pair their own request with their own response. A report
  without a request pending for its run is ignored (a wrong pairing would
  teach the calibration a ratio thousands of times off). At most ``keep``
  runs' counts are kept pending, least recently used dropped.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from contextwindow._args import as_model, check_int
from contextwindow._lru import LRU
from contextwindow.errors import ContextWindowError
from contextwindow.fitting import provider_of, reply_reserve
from contextwindow.manager import ContextManager, Prepared
from contextwindow.messages import Message, Provider, ToolSpec
from contextwindow.models import ModelInfo, get_tokenizer
from contextwindow.strategies.base import Strategy
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.calibration import Calibration, reported_input_tokens
from contextwindow.tokens.counting import TokenCounter

__all__ = ["Conversations"]


class Conversations:
    """Managers for the conversations one adapter serves (see the module)."""

    def __init__(
        self,
        model: str | ModelInfo | None = None,
        *,
        limit: int | None = None,
        reserve: int | None = None,
        strategy: Strategy | str | None = None,
        provider: Provider | None = None,
        tokenizer: Tokenizer | str | None = None,
        calibration: Calibration | None = None,
        keep: int = 64,
    ) -> None:
        self.info = as_model(model)
        limit = check_int(limit, "limit", low=1, none=True)
        reserve = check_int(reserve, "reserve", low=0, none=True)
        if limit is None:
            if self.info is None:
                raise ContextWindowError("an adapter needs a model or a limit")
            limit = self.info.context_window
        self.window: int = limit
        if reserve is None:
            reserve = reply_reserve(self.info, limit)
        self.reserve: int = check_int(reserve, "reserve", low=0, high=limit - 1)
        if calibration is not None and not isinstance(calibration, Calibration):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
            from contextwindow.errors import ArgumentTypeError

            raise ArgumentTypeError("calibration", repr(calibration), "a Calibration")
        self.provider: Provider = provider or (
            provider_of(self.info) if self.info is not None else "openai"
        )
        chosen = get_tokenizer(self.info) if tokenizer is None else tokenizer
        self.counter = TokenCounter(chosen, self.provider, model=self.info)
        self.strategy: Strategy | str = "default" if strategy is None else strategy
        self.calibration = calibration if calibration is not None else Calibration()
        self._managers: LRU[int, tuple[ContextManager, list[Message]]] = LRU(keep)
        self._pending: LRU[object, int] = LRU(keep)
        """Per run: the count of its request awaiting the reported usage."""
        self.last: Prepared | None = None
        """The last request prepared."""
        self.last_tokens: int | None = None
        """The last request's count: messages, instructions and tools."""

    @property
    def ratio(self) -> float:
        """The calibration's ratio, or 1.0 when the tokenizer is exact."""
        return 1.0 if self.counter.tokenizer.exact else self.calibration.ratio

    def extra_tokens(
        self, instructions: str | None, tools: Iterable[ToolSpec] = ()
    ) -> int:
        """The count of what a framework sends besides the messages."""
        extra = 0
        if instructions:
            extra += self.counter.message(Message.system(instructions))
        specs = list(tools)
        if specs:
            extra += self.counter.tools(specs)
        return extra

    def manager(self, messages: Sequence[Message]) -> ContextManager:
        """The manager of the conversation ``messages`` continues, fed up to date."""
        key = hash(messages[0]) if messages else 0
        entry = self._managers.get(key)
        if entry is None or not _extends(messages, entry[1]):
            fresh: list[Message] = []
            entry = (self._new(), fresh)
            self._managers.put(key, entry)
        manager, fed = entry
        if len(messages) > len(fed):
            new = list(messages[len(fed) :])
            manager.push_many(new)
            fed.extend(new)
        return manager

    def prepare(
        self, messages: Sequence[Message], extra: int = 0, run: object = None
    ) -> Prepared:
        """The next request of the conversation ``messages`` is (see the module).

        Args:
            messages: The conversation so far.
            extra: Tokens sent besides the messages (``extra_tokens``).
            run: What identifies the run the request is for (hashable): the
                ``observe`` naming it pairs its usage with this request.
        """
        manager = self.manager(messages)
        reserve = min(self.window - 1, self.reserve + math.ceil(extra * self.ratio))
        prepared = manager.prepare(reserve=reserve)
        self.last_tokens = prepared.tokens + extra
        self._pending.put(run, self.last_tokens)
        self.last = prepared
        return prepared

    def observe(self, usage: Any, run: object = None) -> None:
        """Feed a reported usage to the calibration (see the module).

        Args:
            usage: The provider's (or the framework's) usage report.
            run: The run it was reported for, as given to ``prepare``.
        """
        if usage is None:
            return
        counted = self._pending.get(run)
        if counted is None:
            return
        try:
            reported = reported_input_tokens(usage)
        except ContextWindowError:
            return  # a framework's report without input tokens teaches nothing
        self._pending.pop(run)
        self.calibration.observe(counted, reported)

    def _new(self) -> ContextManager:
        return ContextManager(
            self.info,
            token_limit=self.window,
            reserve=self.reserve,
            strategy=self.strategy,
            provider=self.provider,
            tokenizer=self.counter.tokenizer,
            calibration=self.calibration,
        )


def _extends(messages: Sequence[Message], fed: Sequence[Message]) -> bool:
    """Whether ``messages`` starts with the messages ``fed``."""
    if len(messages) < len(fed):
        return False
    return all(a is b or a == b for a, b in zip(fed, messages, strict=False))
