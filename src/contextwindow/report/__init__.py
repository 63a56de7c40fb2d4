"""An HTML report of a conversation: one self-contained file that opens offline.

Contract: ``build_report`` is pure: it returns the document as text and
neither prints nor writes (the CLI writes it). The page holds its charts as
SVG rendered at build time by pygal (the ``report`` extra), its styles and
one small script; it fetches nothing. It shows the live context over the
messages against the window and its 60/80/90 % thresholds, the compactions
a transcript records and the input tokens the provider reported; tokens by
role, by tool and by message (a treemap whose tiles open the message); and,
for a fit or a stored view, what became of every original message, side by
side with what is sent, and every change with its saving.

Example:
    >>> from contextwindow import Message, fit, inspect_messages, get_tokenizer
    >>> from contextwindow.transcripts import Transcript
    >>> conv = (Message.user("Fix the bug."), Message.assistant("Done. " * 40),
    ...         Message.user("Thanks!"))
    >>> t = Transcript(conv, "openai", "chat.json")
    >>> tok = get_tokenizer("gpt-4o")
    >>> fitted = fit(conv, limit=40, tokenizer=tok)
    >>> html = build_report(t, inspect_messages(conv, model="gpt-4o"), tok,
    ...                     fitted=fitted)
    >>> html.startswith("<!DOCTYPE html>"), 'data-change="0"' in html
    (True, True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contextwindow.errors import ContextWindowError
from contextwindow.inspection import Inspection
from contextwindow.messages import Provider
from contextwindow.store.base import StoredView
from contextwindow.strategies.base import Fitted
from contextwindow.tokens import TokenCounter, Tokenizer
from contextwindow.transcripts import Transcript

if TYPE_CHECKING:
    from contextwindow.report._data import Page

__all__ = ["build_report"]


def build_report(
    transcript: Transcript,
    inspection: Inspection,
    tokenizer: Tokenizer,
    *,
    provider: Provider = "openai",
    fitted: Fitted | None = None,
    view: StoredView | None = None,
) -> str:
    """The HTML report of a conversation (see the module's contract).

    Args:
        transcript: The conversation and what its file records (compactions,
            the provider's usage figures).
        inspection: Its inspection (``inspect_messages``), for the window and
            the tokens by role and by tool.
        tokenizer: The tokenizer the inspection counted with.
        provider: Whose framing to count.
        fitted: A fit of the conversation, to show against the original.
        view: A stored view of it (the conversation being the store's log).

    Returns:
        The HTML document.

    Raises:
        ContextWindowError: Both ``fitted`` and ``view`` given, or pygal (the
            ``report`` extra) missing.
    """
    if fitted is not None and view is not None:
        raise ContextWindowError("a report shows a fit or a stored view, not both")
    page = _page_data(transcript, inspection, tokenizer, provider, fitted, view)
    try:
        from contextwindow.report._page import page_html
    except ImportError as exc:  # pragma: no cover - the extra is installed in tests
        raise ContextWindowError(
            "the HTML report needs pygal: pip install 'contextwindow[report]'"
        ) from exc
    return page_html(page)


def _page_data(
    t: Transcript,
    inspection: Inspection,
    tokenizer: Tokenizer,
    provider: Provider,
    fitted: Fitted | None,
    view: StoredView | None,
) -> Page:
    from contextwindow.report._data import gather

    kind = "exact" if inspection.exact else "approximate"
    subtitle = (
        f"{t.format} · model {inspection.model} "
        f"(window {inspection.context_window:,}) · {provider} framing · "
        f"tokens: {inspection.tokenizer}, {kind}"
    )
    return gather(
        t.messages,
        inspection,
        TokenCounter(tokenizer, provider, model=inspection.model),
        title=t.title,
        subtitle=subtitle,
        tools=t.tools,
        compactions=t.meta.get("compactions") or (),
        fitted=fitted,
        view=view,
    )
