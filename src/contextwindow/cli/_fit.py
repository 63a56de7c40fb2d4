"""``contextwindow fit``: fit a conversation into a token budget and report it.

Contract: ``fit`` writes the fitted conversation to ``-o`` (its report to
stdout) or, without ``-o``, to stdout (its report to stderr), so that it
pipes. The report lists every change (the largest ``MAX_CHANGES_SHOWN`` in
text; ``--json`` has all). A bad ``--budget`` or ``--strategy`` is a usage
error, and so is an ``-o`` that would replace the input (``check_output``);
library errors and warnings reach the user through ``cli_errors``. Under
``--json`` the warnings are in the document's ``warnings``, not printed:
without ``-o`` the document is on stderr, which a text line would make no
JSON. Message counts are the conversation's (``messages_after``) and, where
the provider's shape splits or merges them, the written file's too
(``messages_written``).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import click

from contextwindow.cli._common import (
    DEFAULT_MODEL,
    body_json,
    check_output,
    choose_transcript,
    cli_errors,
    conversation_option,
    known_model,
    num,
    pct,
    provider_body,
    provider_of,
    read_source,
    shown_source,
    source_argument,
    tokenizer_from,
    tokenizer_label,
    tokenizer_option,
    view_option,
    write_text,
    written_messages,
)
from contextwindow.cli._json import document, dumps
from contextwindow.cli._term import Block, Styled, Table, emit, preview_width, working
from contextwindow.cli._values import Amount, AmountType
from contextwindow.errors import ContextWindowError
from contextwindow.fitting import fit
from contextwindow.inspection import counted_as
from contextwindow.messages import PROVIDERS, Provider
from contextwindow.models import ModelInfo, get_model, get_tokenizer
from contextwindow.strategies.base import Change, Fitted
from contextwindow.strategies.names import STRATEGY_NAMES, parse_strategy
from contextwindow.tokens import TokenCounter, Tokenizer
from contextwindow.transcripts import Transcript

MAX_CHANGES_SHOWN = 20
"""Changes ``fit`` lists one by one; the rest are counted (``--json`` has all)."""


HELP_WIDTH = 78
"""Columns the strategies' list in ``fit --help`` fits in (a terminal of 80)."""


def _strategy_help() -> str:
    """Each strategy's usage on a line, what it does wrapped below it."""
    lines: list[str] = []
    for name, entry in STRATEGY_NAMES.items():
        lines += textwrap.wrap(
            entry.usage(name), HELP_WIDTH, initial_indent="  ", subsequent_indent="    "
        )
        lines += textwrap.wrap(
            entry.summary,
            HELP_WIDTH,
            initial_indent="      ",
            subsequent_indent="      ",
        )
    return "\b\nStrategies (--strategy, stages joined by ','):\n" + "\n".join(lines)


@dataclass(frozen=True, slots=True)
class _FitRun:
    """Everything ``fit`` reports on."""

    file: str
    transcript: Transcript
    model: ModelInfo
    provider: Provider
    tokenizer: Tokenizer
    budget: Amount | None
    limit: int
    reserve: int
    strategy: str
    fitted: Fitted
    output: str | None
    written: int
    """Messages of the body written (items, for responses): see ``written_messages``."""
    warnings: tuple[str, ...]
    """The command's and the library's warnings, under ``--json`` (else printed)."""


@click.command("fit", epilog=_strategy_help())
@source_argument
@click.option("-m", "--model", help="Model whose window and tokenizer apply.")
@click.option(
    "--budget",
    type=AmountType("the conversation's tokens"),
    metavar="N|N%",
    help="Tokens the request may take (1500, 10k, 1.5M), or N% of the "
    "conversation's own tokens (default: the model's window).",
)
@click.option(
    "--reserve",
    "reserve_amount",
    type=AmountType("the budget"),
    default="0",
    show_default=True,
    metavar="N|N%",
    help="Tokens kept free within the budget, e.g. for the reply (up to the "
    "model's max output, which `contextwindow models M` shows), or N% of it.",
)
@click.option(
    "-s",
    "--strategy",
    "strategy_spec",
    default="default",
    metavar="SPEC",
    help="How to make room: stages tried in order until the budget is met, "
    "e.g. 'dedupe,truncate(max_tokens=300),drop-oldest' (names below; "
    "default: 'default'). drop-oldest finishes the job if they leave it unmet.",
)
@click.option(
    "--to",
    "to",
    type=click.Choice(PROVIDERS),
    help="Provider whose rules, framing and shape apply (default: the file's).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write the fitted conversation here and the report to stdout "
    "(default: the conversation to stdout, the report to stderr).",
)
@conversation_option
@view_option
@tokenizer_option
@click.option(
    "--protect",
    multiple=True,
    metavar="MARKER",
    help="Keep every message whose text holds MARKER (repeatable).",
)
@click.option(
    "--query",
    metavar="TEXT",
    help="What the next request is about, for the relevant strategy "
    "(default: the final message).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def fit_cmd(
    file: str,
    model: str | None,
    budget: Amount | None,
    reserve_amount: Amount,
    strategy_spec: str,
    to: Provider | None,
    output: str | None,
    conversation: int | None,
    view: bool,
    tokenizer_spec: str | None,
    protect: tuple[str, ...],
    query: str | None,
    as_json: bool,
) -> None:
    """Fit a conversation into a token budget, validly, and report every change.

    FILE is a transcript (- for standard input), or URL#ID a stored
    conversation, e.g. sqlite:///chats.db#support-42. The fitted conversation is
    written as JSON in the provider's shape: a list of messages (openai), a
    list of items (responses) or {"system", "messages"} (anthropic).
    """
    if output == "-":
        output = None
    check_output(file, output)
    if any(not marker.strip() for marker in protect):
        raise click.BadParameter(
            "a marker must hold some text (it keeps messages whose text holds it)",
            param_hint="--protect",
        )
    try:
        strategy = parse_strategy(strategy_spec)
    except ContextWindowError as exc:
        raise click.BadParameter(str(exc), param_hint="--strategy") from exc
    known_model(model, budget=budget is not None)
    warned: list[str] = []
    with cli_errors(collect=warned if as_json else None):
        with working(f"reading {shown_source(file)}"):
            transcripts = read_source(file, view=view)
        t = choose_transcript(file, transcripts, conversation)
        asked = model or t.model or DEFAULT_MODEL
        info = get_model(asked)  # an unknown model keeps the name asked for
        provider = to or provider_of(t)
        tok = tokenizer_from(tokenizer_spec) if tokenizer_spec else get_tokenizer(info)
        counter = TokenCounter(tok, provider, model=info)
        current = counter.messages(list(t.messages), tools=t.tools)
        limit = budget.tokens(current) if budget else info.context_window
        reserve = reserve_amount.tokens(limit)
        if reserve > limit:
            raise click.BadParameter(
                f"{num(reserve)} tokens is more than the budget ({num(limit)})",
                param_hint="--reserve",
            )
        if limit > info.context_window:
            over = (
                f"the budget ({num(limit)} tokens) is over {info.name}'s "
                f"window ({num(info.context_window)}): the provider refuses a "
                "request larger than its window"
            )
            if as_json:
                warned.append(over)
            else:
                click.echo(f"warning: {over}", err=True)
        with working(f"fitting {t.title}"):
            fitted = fit(
                t.messages,
                model=info,
                limit=limit,
                reserve=reserve,
                strategy=strategy,
                provider=provider,
                tokenizer=counter,
                tools=t.tools,
                protected=protect,
                query=query,
            )
        body = provider_body(fitted.messages, provider)
        if isinstance(body, dict):
            # A request body names its model (Anthropic's must): fitting the
            # file again then counts for that model, in that window.
            body = {"model": info.name, **cast("dict[str, Any]", body)}
        text = body_json(body)
        # Written inside: a failure to write prints the warnings gathered so
        # far, where the error's document has no room for them.
        if output is not None:
            write_text(output, text)
        else:
            click.echo(text)
    run = _FitRun(
        file,
        t,
        info,
        provider,
        tok,
        budget,
        limit,
        reserve,
        strategy_spec,
        fitted,
        output,
        written_messages(body),
        tuple(warned),
    )
    if as_json:
        click.echo(dumps(document("fit", **_fit_dict(run))), err=output is None)
    else:
        emit(_render_fit(run), err=output is None)


# -- JSON ------------------------------------------------------------------------


def _fit_dict(run: _FitRun) -> dict[str, Any]:
    r = run.fitted.report
    tokenizer, exact = counted_as(run.tokenizer, run.model)
    return {
        "file": shown_source(run.file),
        "title": run.transcript.title,
        "format": run.transcript.format,
        "output": run.output,
        "model": run.model.name,
        "context_window": run.model.context_window,
        "max_output_tokens": run.model.max_output_tokens,
        "provider": run.provider,
        "tokenizer": tokenizer,
        "exact": exact,
        "strategy": run.strategy,
        "budget_spec": str(run.budget) if run.budget else None,
        "limit": run.limit,
        "reserve": run.reserve,
        "budget": r.limit,
        "messages_before": len(run.transcript.messages),
        "messages_after": len(run.fitted.messages),
        "messages_written": run.written,
        **{
            k: [*run.warnings, *v] if k == "warnings" else v
            for k, v in r.to_dict().items()
            if k != "limit"
        },
    }


# -- rendering -------------------------------------------------------------------


def _render_fit(run: _FitRun) -> list[Block]:
    r = run.fitted.report
    t = run.transcript
    window = run.model.context_window
    limits = f"window {num(window)}"
    if run.model.max_output_tokens:
        limits += f", max output {num(run.model.max_output_tokens)}"
    if run.budget is None:
        source = "the model's window"
    elif run.budget.percent:
        source = f"{run.budget} of the conversation's {num(r.tokens_before)}"
    else:
        source = "asked for"
    if run.reserve:
        source += f", less {num(run.reserve)} reserved"
    # A --tokenizer that is not the model's own is labelled approximate.
    tokenizer, exact = counted_as(run.tokenizer, run.model)
    label = tokenizer_label(tokenizer, exact)
    fits = r.tokens_after <= r.limit
    out: list[Block] = [
        Styled(((t.title, "bold"), (f"  ({t.format}, fitted for {run.provider})", ""))),
        Styled(
            (
                (f"model: {run.model.name} ({limits}); tokens: ", ""),
                (label, "green" if exact else "yellow"),
            )
        ),
        f"budget    {num(r.limit)} tokens ({source})",
        Styled(
            (
                ("tokens    ", ""),
                (f"{num(r.tokens_before)} → {num(r.tokens_after)}", "bold"),
                (f" / {num(r.limit)} ", ""),
                (
                    f"({pct(r.tokens_after, window)} of the window)",
                    "green" if fits else "red",
                ),
            )
        ),
        _messages_line(run),
        f"stages    {', '.join(r.stages) or '(none: it already fits)'}",
    ]
    if r.changes:
        out += ["", *_changes_table(r.changes)]
        rows: list[tuple[str, str, str]] = [
            (k, num(n), num(saved)) for k, (n, saved) in r.totals().items()
        ]
        rows.append(("all", num(len(r.changes)), num(r.saved)))
        styles = ("",) * (len(rows) - 1) + ("bold",)
        out += [
            "",
            Styled((("totals", "bold cyan"),)),
            Table(("kind", "changes", "saved"), tuple(rows), row_styles=styles),
        ]
    if run.output is not None:
        out += ["", f"wrote {run.output} ({run.provider} shape)"]
    return out


def _messages_line(run: _FitRun) -> str:
    """Messages before and after, and the file's own count where it differs."""
    after = len(run.fitted.messages)
    line = f"messages  {num(len(run.transcript.messages))} → {num(after)}"
    if run.written != after:
        what = "items" if run.provider == "responses" else "messages"
        line += f" ({num(run.written)} {what} as written in the {run.provider} shape)"
    return line


def _changes_table(changes: Sequence[Change]) -> tuple[Styled, Table]:
    """The heading and table of changes: all, or the largest in the order made."""
    heading = "changes"
    shown = list(changes)
    if len(changes) > MAX_CHANGES_SHOWN:
        order = sorted(range(len(changes)), key=lambda k: -abs(changes[k].saved))
        shown = [changes[k] for k in sorted(order[:MAX_CHANGES_SHOWN])]
        heading = (
            f"changes (the {MAX_CHANGES_SHOWN} largest of {num(len(changes))}, "
            "in the order made; --json lists all)"
        )
    width = preview_width(60, err=True, default=60)
    rows = tuple(
        (
            c.kind,
            f"#{c.index}",
            _clip(c.what, width),
            num(c.tokens_before),
            num(c.tokens_after),
            c.stage,
        )
        for c in shown
    )
    return Styled(((heading, "bold cyan"),)), Table(
        ("kind", "message", "what", "before", "after", "stage"), rows, flex=2
    )


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
