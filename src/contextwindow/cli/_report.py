"""``contextwindow report``: a conversation as one self-contained HTML file.

Contract: the command reads a transcript or a stored conversation, builds
the page with ``contextwindow.report.build_report`` and writes it to ``-o``
(default ``report.html``); stdout gets one line saying what was written.
An ``-o`` that would replace the input (the transcript, or the SQLite file
of a store) is a usage error (``check_output``). With ``--budget`` or
``--strategy`` the page shows that fit against the original, the budget
read as ``fit`` reads it: what the request may take (default: the model's
window), nothing reserved; a stored conversation with a saved view shows
its log against the view. Library errors and warnings reach the user
through ``cli_errors``.
"""

from __future__ import annotations

from dataclasses import replace

import click

from contextwindow.cli._common import (
    DEFAULT_MODEL,
    check_output,
    choose,
    choose_transcript,
    cli_errors,
    conversation_option,
    known_model,
    num,
    provider_of,
    read_source,
    shown_source,
    source_argument,
    tokenizer_from,
    tokenizer_option,
    write_text,
)
from contextwindow.cli._inspect import inspect_transcript
from contextwindow.cli._json import document, dumps
from contextwindow.cli._term import working
from contextwindow.cli._values import Amount, AmountType
from contextwindow.errors import ContextWindowError
from contextwindow.fitting import fit
from contextwindow.messages import PROVIDERS, Provider
from contextwindow.models import DEFAULT_MODEL_INFO, get_model, get_tokenizer
from contextwindow.store.base import StoredView
from contextwindow.store.urls import is_store_url, split_url
from contextwindow.strategies.base import Fitted
from contextwindow.strategies.names import parse_strategy
from contextwindow.tokens import TokenCounter


@click.command("report")
@source_argument
@click.option(
    "-o",
    "--output",
    default="report.html",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="The HTML file to write.",
)
@click.option("-m", "--model", help="Model whose window and tokenizer apply.")
@click.option(
    "--budget",
    type=AmountType("the conversation's tokens"),
    metavar="N|N%",
    help="Show a fit into this budget: tokens, or N% of the conversation's own "
    "(what the request may take, nothing reserved, as `fit --budget`).",
)
@click.option(
    "-s",
    "--strategy",
    "strategy_spec",
    metavar="SPEC",
    help="Show a fit with this strategy (as `fit --strategy`; default budget: "
    "the model's window, nothing reserved, as fit's default).",
)
@click.option(
    "--provider",
    type=click.Choice(PROVIDERS),
    help="Whose framing and rules apply (default: the file's own shape).",
)
@conversation_option
@tokenizer_option
@click.option("--json", "as_json", is_flag=True, help="Say what was written, as JSON.")
def report_cmd(
    file: str,
    output: str,
    model: str | None,
    budget: Amount | None,
    strategy_spec: str | None,
    provider: Provider | None,
    conversation: int | None,
    tokenizer_spec: str | None,
    as_json: bool,
) -> None:
    """Write an HTML report of a conversation: usage, composition, a fit.

    FILE is a transcript (- for standard input), or URL#ID a stored
    conversation, e.g. sqlite:///chats.db#support-42, whose log is shown
    against its saved view. The page is one file that opens offline.
    """
    check_output(file, output)
    try:
        strategy = parse_strategy(strategy_spec) if strategy_spec else None
    except ContextWindowError as exc:
        raise click.BadParameter(str(exc), param_hint="--strategy") from exc
    from contextwindow.report import build_report

    known_model(model, budget=True)  # an unknown one is reported by its name
    with cli_errors():
        view: StoredView | None = None
        if is_store_url(file):
            from contextwindow.cli._stored import list_conversations, stored_view

            if split_url(file)[1] is None:  # as fit and inspect: --conversation N
                ids = [c.id for c in list_conversations(file)]
                file = f"{file}#{ids[choose(file, len(ids), conversation)]}"
            t, view = stored_view(file)
        else:
            with working(f"reading {shown_source(file)}"):
                transcripts = read_source(file)
            t = choose_transcript(file, transcripts, conversation)
        asked = model or t.model or DEFAULT_MODEL
        info = get_model(asked)
        if info is DEFAULT_MODEL_INFO:  # report the name asked for, not "unknown"
            info = replace(info, name=asked)
        wire = provider or provider_of(t)
        tok = tokenizer_from(tokenizer_spec) if tokenizer_spec else get_tokenizer(info)
        inspection = inspect_transcript(t, asked, wire, tok, 0)
        fitted: Fitted | None = None
        if budget is not None or strategy is not None:
            counter = TokenCounter(tok, wire, model=info)
            current = counter.messages(list(t.messages), tools=t.tools)
            limit = budget.tokens(current) if budget else info.context_window
            fitted = fit(
                t.messages,
                model=info,
                limit=limit,
                # As ``fit`` reads its budget, given or the window: what the
                # request may take, nothing reserved (``fit --reserve 0``).
                reserve=0,
                strategy=strategy,
                provider=wire,
                tokenizer=counter,
                tools=t.tools,
            )
            view = None
        with working(f"drawing the report of {t.title}"):
            html = build_report(
                t, inspection, tok, provider=wire, fitted=fitted, view=view
            )
    size = write_text(output, html)  # not the file's size: /dev/stdout has none
    shows = "fit" if fitted is not None else "saved view" if view else "conversation"
    if as_json:
        doc = document(
            "report",
            output=output,
            bytes=size,
            title=t.title,
            shows=shows,
            messages=inspection.messages,
            tokens=inspection.tokens,
        )
        click.echo(dumps(doc))
        return
    note = {"fit": ", with a fit", "saved view": ", with its saved view"}
    click.echo(
        f"wrote {output} ({num(size // 1024)} KB; {t.title}{note.get(shows, '')})"
    )
