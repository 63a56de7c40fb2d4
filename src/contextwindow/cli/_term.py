"""The terminal: what the commands print, as plain text or with rich.

Contract: a command's human output is a list of blocks (lines, styled lines
and tables) that ``emit`` prints. On a terminal it is rich's: tables, colour,
previews cut to the terminal's width. Piped, redirected or with
``NO_COLOR`` it is plain text, stable for scripts and tests: aligned columns,
numbers to the right, no escape codes. ``working`` shows a progress bar on
stderr for work that runs longer than about a second, and only when stderr is
a terminal.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any

import click

__all__ = [
    "Styled",
    "Table",
    "Working",
    "emit",
    "is_terminal",
    "plural",
    "preview_width",
    "working",
]

ROLE_STYLES = {
    "system": "magenta",
    "user": "green",
    "assistant": "blue",
    "tool": "yellow",
}
KIND_STYLES = {
    "dropped": "red",
    "truncated": "yellow",
    "cleared": "dark_orange",
    "deduplicated": "yellow",
    "summarized": "magenta",
    "repaired": "cyan",
    "rewritten": "cyan",
    "added": "cyan",
}
DELAY = 1.0
"""Seconds of work before a progress bar appears."""


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 message``, ``2 messages``: the count and the word, agreed.

    Example:
        >>> plural(1, "unit"), plural(2, "unit"), plural(3, "match", "matches")
        ('1 unit', '2 units', '3 matches')
    """
    return f"{n:,} {word if n == 1 else words or word + 's'}"


@dataclass(frozen=True, slots=True)
class Styled:
    """One line made of pieces, each with a rich style (``""``: none)."""

    pieces: tuple[tuple[str, str], ...]

    @property
    def text(self) -> str:
        """The line without styles."""
        return "".join(t for t, _ in self.pieces)


@dataclass(frozen=True, slots=True)
class Table:
    """Columns of text; numbers align right; ``flex`` is cut to fit the width."""

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    flex: int | None = None
    """The column that takes what width is left (a preview), if any."""
    row_styles: tuple[str, ...] = field(default=())
    """A rich style per row (``""``: none), e.g. dim for a total."""


Block = str | Styled | Table


def is_terminal(stream: IO[str]) -> bool:
    """Whether ``stream`` is an interactive terminal."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _stream(err: bool) -> IO[str]:
    # sys's streams, not click's: click.echo and a test runner use those too.
    return sys.stderr if err else sys.stdout


def preview_width(used: int, err: bool = False, default: int = 72) -> int:
    """Characters a preview may take when other columns take ``used``.

    On a terminal, what its width leaves; piped, ``$COLUMNS`` if set, else
    ``default``.
    """
    if is_terminal(_stream(err)):
        columns = shutil.get_terminal_size().columns
    elif os.environ.get("COLUMNS", "").isdigit():
        columns = int(os.environ["COLUMNS"])
    else:
        return default
    return max(16, columns - used)


def _is_number(cell: str) -> bool:
    c = cell.strip().replace(",", "").replace(".", "").rstrip("%")
    return bool(c) and c.lstrip("-").isdigit()


def _right(table: Table) -> list[bool]:
    return [
        k > 0 and all(_is_number(r[k]) or not r[k] for r in table.rows)
        for k in range(len(table.headers))
    ]


def plain(block: Block) -> str:
    """A block as plain text (see the module's contract)."""
    if isinstance(block, str):
        return block
    if isinstance(block, Styled):
        return block.text
    widths = [len(h) for h in block.headers]
    for row in block.rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    right = _right(block)

    def line(cells: Sequence[str]) -> str:
        out = [
            c.rjust(w) if r else c.ljust(w)
            for c, w, r in zip(cells, widths, right, strict=True)
        ]
        return "  " + "  ".join(out).rstrip()

    return "\n".join([line(block.headers), *(line(r) for r in block.rows)])


def _cell_style(header: str, cell: str) -> str:
    if header == "role":
        return ROLE_STYLES.get(cell, "")
    if header == "kind":
        return KIND_STYLES.get(cell, "")
    return ""


MIN_FLEX = 12
"""The narrowest a table's flex column (a preview) is made."""


def _rich(block: Block, width: int = 80) -> Any:
    """``block`` for rich, a table within ``width`` columns where it can be."""
    from rich import box
    from rich.table import Table as RichTable
    from rich.text import Text

    if isinstance(block, str):
        return Text(block)
    if isinstance(block, Styled):
        return Text.assemble(*block.pieces)
    t = RichTable(
        box=box.SIMPLE_HEAD,
        header_style="bold",
        show_edge=False,
        pad_edge=False,
        padding=(0, 1),
    )
    widest = [
        max([len(h), *(len(row[k]) for row in block.rows)])
        for k, h in enumerate(block.headers)
    ]
    flex_width = None
    if block.flex is not None:
        # Only the flex column gives way to a narrow terminal (rich would cut
        # every column alike: a number cut to "24,9…" says nothing).
        # Between two columns: a space of padding each side and one of the box.
        others = sum(w for k, w in enumerate(widest) if k != block.flex)
        room = width - others - 3 * (len(widest) - 1)
        flex_width = max(MIN_FLEX, min(widest[block.flex], room))
    for k, (h, r) in enumerate(zip(block.headers, _right(block), strict=True)):
        flex = k == block.flex
        t.add_column(
            h,
            justify="right" if r else "left",
            no_wrap=True,
            overflow="ellipsis",
            width=flex_width if flex else None,
            style="dim" if flex else None,
        )
    styles = block.row_styles or ("",) * len(block.rows)
    for row, style in zip(block.rows, styles, strict=True):
        cells = [
            Text(c, style=_cell_style(h, c))
            for h, c in zip(block.headers, row, strict=True)
        ]
        t.add_row(*cells, style=style or None)
    return t


def emit(blocks: Sequence[Block], *, err: bool = False) -> None:
    """Print ``blocks`` to stdout (``err``: stderr), rich on a terminal."""
    stream = _stream(err)
    if not is_terminal(stream) or os.environ.get("NO_COLOR"):
        click.echo("\n".join(plain(b) for b in blocks), err=err)
        return
    from rich.console import Console

    console = Console(file=stream, highlight=False, soft_wrap=False)
    for b in blocks:
        console.print(_rich(b, console.width))


class Working:
    """A progress bar that appears after ``DELAY`` seconds of work (stderr, a TTY)."""

    def __init__(self, label: str, total: int | None = None) -> None:
        self._label = label
        self._total = total
        self._done = 0
        self._lock = threading.Lock()
        self._progress: Any = None
        self._task: Any = None
        self._timer: threading.Timer | None = None
        if is_terminal(sys.stderr):
            self._timer = threading.Timer(DELAY, self._start)
            self._timer.daemon = True
            self._timer.start()

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        columns: list[Any] = [
            SpinnerColumn(),
            # Plain text: the label holds a file name or a conversation's
            # title, where "[/x]" would be read as a closing tag and raise.
            TextColumn("{task.description}", markup=False),
            BarColumn(),
        ]
        if self._total is not None:
            columns.append(MofNCompleteColumn())
        columns.append(TimeElapsedColumn())
        with self._lock:
            if self._timer is None:  # finished meanwhile
                return
            progress = Progress(
                *columns, console=Console(file=sys.stderr), transient=True
            )
            self._task = progress.add_task(
                self._label, total=self._total, completed=self._done
            )
            progress.start()
            self._progress = progress

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more items done."""
        with self._lock:
            self._done += n
            if self._progress is not None:
                self._progress.update(self._task, completed=self._done)

    def close(self) -> None:
        """Remove the bar (if shown) and stop its timer."""
        with self._lock:
            timer, self._timer = self._timer, None
            progress, self._progress = self._progress, None
        if timer is not None:
            timer.cancel()
        if progress is not None:
            progress.stop()


@contextmanager
def working(label: str, total: int | None = None) -> Generator[Working, None, None]:
    """Show a progress bar for the work in the block if it lasts (see ``Working``).

    Example:
        >>> with working("reading") as w:
        ...     w.advance()
    """
    w = Working(label, total)
    try:
        yield w
    finally:
        w.close()
