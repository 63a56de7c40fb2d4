r"""``StaleReads``: a file read that a later read or write supersedes becomes a marker.

Contract:

- File tools are known by name (``FileTool``: whether the tool reads or
  writes, which argument holds the path, which arguments make a read partial);
  ``DEFAULT_FILE_TOOLS`` covers Claude Code (``Read``, ``Write``, ``Edit``,
  ``MultiEdit``, ``NotebookEdit``), the generic ``read_file`` / ``write_file``
  / ``str_replace`` shapes (and ``str_replace_editor``'s ``view``), and shell
  tools (``SHELL_TOOLS``: Codex's ``shell``, ``Bash``, ...) whose command is a
  plain read (``cat``, ``nl``, ``head``, ``tail``, ``sed -n``) or an
  ``apply_patch``.
- A read is stale when a later call writes the same path, or reads it whole,
  or reads the same part of it again. Its result becomes one line naming the
  path, its lines, a short hash of what was read, which later message (and
  tool) superseded it, the paths the read named that the superseding call
  does not show (a later read or a ``Write`` shows the new version, so the
  paths it lacks; an ``Edit`` shows only its strings, so most of them:
  ``digest``, within a quarter of the read's tokens, 600 at most), and the
  original's handle (``context_recall`` brings it back).
  Errors, pinned messages and results that would not shrink stay.
- Like every stage it works oldest first and stops once the conversation
  fits; the decision for a read depends only on the calls after it, so a
  memo per message stays valid while nothing after it changes. Each changed
  message is one ``stale`` change.

Example:
    >>> import json
    >>> from contextwindow import Message, TokenCounter, ToolCall
    >>> from contextwindow.strategies import Budget
    >>> from contextwindow.testing import FakeTokenizer
    >>> def read(i):
    ...     args = json.dumps({"file_path": "src/app.py"})
    ...     return [Message.assistant(tool_calls=[ToolCall(f"r{i}", "Read", args)]),
    ...             Message.tool(f"r{i}", "import os\n" * 40)]
    >>> conv = [Message.user("fix it"), *read(1), *read(2), Message.assistant("ok")]
    >>> fitted = StaleReads()(conv, Budget(0, TokenCounter(FakeTokenizer())))
    >>> print(fitted.messages[2].text.replace("; ", ";\n"))
    [stale read of src/app.py: 40 lines, sha bd8ce531;
    superseded by Read at message 3;
    recall 505ea0963f]
    >>> def write(i, text):
    ...     args = json.dumps({"file_path": "src/app.py", "content": text})
    ...     return [Message.assistant(tool_calls=[ToolCall(f"w{i}", "Write", args)]),
    ...             Message.tool(f"w{i}", "done")]
    >>> old = "CONFIG = 'etc/app.toml'\nLOG = 'var/app.log'\n" * 20
    >>> conv = [Message.user("fix it"), *read(1)[:1], Message.tool("r1", old),
    ...         *write(2, "CONFIG = 'etc/app.toml'\n")]
    >>> fitted = StaleReads()(conv, Budget(0, TokenCounter(FakeTokenizer())))
    >>> print(fitted.messages[2].text.replace("; ", ";\n"))
    [stale read of src/app.py: 40 lines, sha deadbe34;
    superseded by Write at message 3, naming var/app.log;
    recall 8418520ee0]
    >>> [(c.kind, c.index) for c in fitted.report.changes]
    [('stale', 2)]
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

from contextwindow._args import check_str, check_strs, shown
from contextwindow.errors import ArgumentTypeError, ContextWindowError
from contextwindow.messages import Message, ToolResult, units
from contextwindow.strategies._rescan import Origin, Resumed, Rewrite, rewrite_results
from contextwindow.strategies.base import Budget, Fitted, strategy_input, unit_start
from contextwindow.strategies.digest import (
    Counted,
    digest,
    digest_tokens,
    path_tokens,
)
from contextwindow.strategies.files import (
    DEFAULT_FILE_TOOLS,
    SHELL_TOOLS,
    FileAction,
    FileTool,
    file_actions,
)
from contextwindow.tokens.base import Tokenizer

__all__ = [
    "DEFAULT_FILE_TOOLS",
    "SHELL_TOOLS",
    "FileAction",
    "FileTool",
    "StaleReads",
    "file_actions",
]


def _strings(value: object) -> Iterator[str]:
    """The strings in a call's arguments (what a write brings)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in cast("Mapping[str, object]", value).values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in cast("list[object]", value):
            yield from _strings(v)


def _supersedes(later: FileAction, read: FileAction) -> bool:
    if later.path != read.path:
        return False
    return later.action == "write" or later.part is None or later.part == read.part


@dataclass(frozen=True, slots=True)
class StaleReads:
    """Replace file reads that a later read or write supersedes with a marker.

    See the module's contract.

    Args:
        tools: File tools by name (default ``DEFAULT_FILE_TOOLS``).
        shell: Tools whose ``command`` is read for plain reads and patches.
        marker: The line put in place of a stale read: ``{path}``,
            ``{lines}``, ``{sha}``, ``{by}`` (the superseding tool),
            ``{index}`` (its message), ``{naming}`` (``", naming ..."``:
            the paths only the read named, or nothing), ``{handle}``.

    Raises:
        ContextWindowError: A marker using other fields.
    """

    tools: Mapping[str, FileTool] = field(default_factory=lambda: DEFAULT_FILE_TOOLS)
    """File tools by name."""
    shell: tuple[str, ...] = SHELL_TOOLS
    """Shell tools whose commands are read."""
    marker: str = (
        "[stale read of {path}: {lines} lines, sha {sha}; "
        "superseded by {by} at message {index}{naming}; recall {handle}]"
    )
    """The line put in place of a stale read."""

    def __post_init__(self) -> None:
        if not isinstance(self.tools, Mapping) or not all(  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
            isinstance(k, str) and isinstance(v, FileTool)  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
            for k, v in self.tools.items()
        ):
            raise ArgumentTypeError(
                "tools", shown(self.tools), "a mapping of tool names to FileTool"
            )
        object.__setattr__(self, "shell", check_strs(self.shell, "shell"))
        check_str(self.marker, "marker")
        sample = {
            "path": "a",
            "lines": "1",
            "sha": "0",
            "by": "Read",
            "index": "1",
            "naming": "",
        }
        try:
            self.marker.format(handle="0123456789", **sample)
        except (KeyError, IndexError, ValueError, AttributeError) as exc:
            raise ContextWindowError(
                f"marker {self.marker!r} may use only {{path}}, {{lines}}, {{sha}}, "
                f"{{by}}, {{index}}, {{naming}} and {{handle}}: {exc!r}"
            ) from exc

    def __call__(self, messages: Sequence[Message], budget: Budget, /) -> Fitted:
        """Mark every stale read, oldest first, until the budget is met.

        Incremental (``strategies._rescan``): a grown conversation's new
        calls mark what they supersede, and the scan resumes from the first
        read that became stale.
        """
        messages = strategy_input(messages, budget)
        key = (StaleReads, tuple(self.tools.items()), self.shell, self.marker)
        policy = _Superseded(self, Counted(budget.counter.text))
        return rewrite_results(messages, budget, "StaleReads", "stale", policy, key)

    def rewrite(self, reads: _Reads, tokenizer: Tokenizer) -> Rewrite:
        """The rewrite marking what ``reads`` found stale."""
        stale = reads.stale

        def rewrite(result: ToolResult, position: int, origin: Origin) -> str | None:
            found = stale.get(position)
            if found is None or result.is_error:
                return None
            action, by, index, later, _ = found
            text = result.text
            size = tokenizer.count(text)
            named = digest(
                text,
                0,
                tokenizer,
                kept=f"{action.path}\n{later}",
                paths=path_tokens(size) + digest_tokens(size),
            )
            return self.marker.format(
                path=action.path,
                lines=f"{text.rstrip(chr(10)).count(chr(10)) + 1:,}",
                sha=hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()[:8],
                by=by,
                index=index,
                naming=f", naming {named}" if named else "",
                handle=origin.handle,
            )

        return rewrite


@dataclass(slots=True)
class _Reads:
    """The file actions of a conversation, read in order (``StaleReads``).

    A read is stale once a later call (in a later unit) supersedes it: the
    nearest such call, which the first one met going forward is.
    """

    messages: int
    """Messages read."""
    results: int
    """Result positions counted."""
    stale: dict[int, tuple[FileAction, str, int, str, str | None]]
    """Result position -> (its read, the superseding tool, that call's message,
    the text it brought: a read's result, a write's string arguments; and the
    superseding read's call id, ``None`` for a write)."""
    open: dict[str, list[tuple[FileAction, int, int]]]
    """Per path, the reads not superseded yet: (read, result position, message)."""
    last: _Undo | None = None
    """What reading the last unit did, to read it again (``undo``)."""

    def copy(self) -> _Reads:
        return _Reads(
            self.messages,
            self.results,
            dict(self.stale),
            {k: list(v) for k, v in self.open.items()},
            self.last,
        )

    def undo(self) -> None:
        """Be as before the last unit was read (``last`` says what it did)."""
        last = self.last
        assert last is not None
        for path, before in last.open.items():
            if before is None:
                self.open.pop(path, None)
            else:
                self.open[path] = list(before)
        for position in last.stale:
            self.stale.pop(position, None)
        self.messages, self.results, self.last = last.start, last.results, None


@dataclass(frozen=True, slots=True)
class _Undo:
    """What reading one unit did to a ``_Reads``: enough to take it back."""

    start: int
    """The unit's first message."""
    results: int
    """Result positions before it."""
    open: dict[str, list[tuple[FileAction, int, int]] | None]
    """Each path it touched, with its reads before (``None``: none listed)."""
    stale: tuple[int, ...]
    """The result positions it made stale."""


def _brought(messages: Sequence[Message], index: int, call: str) -> str:
    """The text the first result of ``call`` in the exchange at ``index`` holds."""
    for i in range(index + 1, len(messages)):
        m = messages[i]
        if m.role != "tool":
            break
        for r in m.tool_results:
            if r.call_id == call:
                return r.text
    return ""


def _first_change(
    old: Mapping[int, object], new: Mapping[int, object], results: int
) -> int:
    """The first result position marked in one map and not alike in the other."""
    moved = [p for p in old.keys() | new.keys() if old.get(p) != new.get(p)]
    return min(moved, default=results)


class _Superseded:
    """StaleReads' rule as a ``_rescan.Policy``.

    Results an earlier stage rewrote in place (``in_place``) change no
    verdict, only what a superseding read brought: the reads it superseded
    are decided again alone, with the rewritten results themselves.
    """

    __slots__ = ("strategy", "tokenizer")

    def __init__(self, strategy: StaleReads, tokenizer: Tokenizer) -> None:
        self.strategy = strategy
        self.tokenizer = tokenizer

    def _add(self, reads: _Reads, messages: Sequence[Message]) -> int:
        """Read ``messages[reads.messages:]``; the first position newly stale."""
        start = reads.messages
        since = reads.results
        positions: dict[int, int] = {}  # message index -> its first result's position
        position = reads.results
        for i in range(start, len(messages)):
            positions[i] = position
            position += len(messages[i].tool_results)
        grouped = units(messages[start:])
        for n, u in enumerate(grouped, 1):
            at_unit = u.start + start
            touched: dict[str, list[tuple[FileAction, int, int]] | None] | None = None
            if n == len(grouped):
                # The last unit: what it does is kept, so that a conversation
                # that changes it (a result rewritten once no longer final,
                # results appended to its calls) reads it again, not all.
                touched = {}
            made: list[int] = []
            if u.kind == "tool_exchange":
                self._exchange(
                    reads, messages, (at_unit, u.stop + start), positions, touched, made
                )
                since = min((since, *made))
            if touched is not None:
                reads.last = _Undo(at_unit, positions[at_unit], touched, tuple(made))
        reads.messages = len(messages)
        reads.results = position
        return since

    def _exchange(
        self,
        reads: _Reads,
        messages: Sequence[Message],
        span: tuple[int, int],
        positions: Mapping[int, int],
        touched: dict[str, list[tuple[FileAction, int, int]] | None] | None,
        made: list[int],
    ) -> None:
        """Read the tool exchange ``messages[span[0]:span[1]]`` into ``reads``.

        ``made``: the result positions it makes stale; ``touched``: each path
        it touches with its reads before (when kept, for ``_Reads.undo``).
        """
        at_unit, stop = span
        tools, shell = self.strategy.tools, self.strategy.shell
        where: dict[str, int] = {}
        got: dict[str, str] = {}
        for k in range(at_unit + 1, stop):
            for j, r in enumerate(messages[k].tool_results):
                where.setdefault(r.call_id, positions[k] + j)
                got.setdefault(r.call_id, r.text)
        for c in messages[at_unit].tool_calls:
            for a in file_actions(c, tools, shell):
                pending = reads.open.get(a.path)
                if touched is not None and a.path not in touched:
                    touched[a.path] = None if pending is None else list(pending)
                if pending:
                    reading = a.action == "read"
                    brought = (
                        got.get(c.id, "") if reading else "\n".join(_strings(c.input))
                    )
                    left: list[tuple[FileAction, int, int]] = []
                    for read, at, index in pending:
                        if index < at_unit and _supersedes(a, read):
                            reads.stale[at] = (
                                read,
                                c.name,
                                at_unit,
                                brought,
                                c.id if reading else None,
                            )
                            made.append(at)
                        else:
                            left.append((read, at, index))
                    reads.open[a.path] = left
                if a.action == "read":
                    found = where.get(c.id)
                    if found is not None:
                        reads.open.setdefault(a.path, []).append((a, found, at_unit))

    def _all(self, messages: Sequence[Message]) -> _Reads:
        """The file actions of all of ``messages``."""
        reads = _Reads(0, 0, {}, {})
        self._add(reads, messages)
        return reads

    def fresh(
        self, messages: Sequence[Message], results: int
    ) -> tuple[Rewrite, object]:
        reads = self._all(messages)
        return self.strategy.rewrite(reads, self.tokenizer), reads

    def in_place(
        self,
        kept: object,
        messages: Sequence[Message],
        results: int,
        shared: int,
        changed: Sequence[int],
    ) -> Resumed | None:
        """``resume`` when tool messages were rewritten in place (``changed``).

        The first ``shared`` messages are the last conversation's but for
        those (answering the same calls). ``None`` when one is no tool
        message or lies in the last unit read.
        """
        if not isinstance(kept, _Reads) or kept.messages != shared:
            return None
        if any(messages[i].role != "tool" for i in changed):
            return None
        if kept.last is not None and changed[-1] >= kept.last.start:
            return None
        starts = {unit_start(messages, i) for i in changed}
        reads = kept.copy()
        points: list[int] = []
        for at, (read, by, index, brought, call) in kept.stale.items():
            if call is None or index not in starts:
                continue
            now = _brought(messages, index, call)
            if now != brought:
                reads.stale[at] = (read, by, index, now, call)
                points.append(at)
        plan = self.resume(reads, messages, results, shared, True)
        if plan is None:
            return None
        rewrite, since, found = plan
        return Resumed(rewrite, since, found, points)

    def resume(
        self,
        kept: object,
        messages: Sequence[Message],
        results: int,
        shared: int,
        extends: bool,
    ) -> tuple[Rewrite, int, object] | None:
        if not isinstance(kept, _Reads):
            return None
        if (
            extends
            and kept.messages == shared
            and not (shared < len(messages) and messages[shared].role == "tool")
        ):
            reads = kept.copy()
            since = self._add(reads, messages)
        elif kept.last is not None and kept.last.start <= shared <= kept.messages:
            # Only the last unit read changed (its final result rewritten
            # once no longer final, results appended to its calls): it is
            # read again, and what follows.
            reads = kept.copy()
            reads.undo()
            # What it made stale may be so no more, or name another text.
            since = min((self._add(reads, messages), *kept.last.stale))
        else:
            # Changed before its end (an earlier stage rewrote a result), or
            # a unit may span the old end: the calls are read again, which
            # costs little beside rewriting every result, and the scan
            # resumes at the first read whose verdict moved.
            reads = self._all(messages)
            since = _first_change(kept.stale, reads.stale, results)
        return self.strategy.rewrite(reads, self.tokenizer), since, reads
