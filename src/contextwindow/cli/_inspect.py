"""``contextwindow inspect``: what a conversation holds, by role, tool and message.

Contract: the command only reads; it prints one report (or one JSON document)
to stdout, a single conversation's or, for a multi-conversation file without
``--conversation``, a summary of them all. Library errors and warnings reach
the user through ``cli_errors``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

import click

from contextwindow.cli._common import (
    DEFAULT_MODEL,
    bar,
    choose_transcript,
    cli_errors,
    conversation_option,
    known_model,
    num,
    pct,
    provider_of,
    read_source,
    shown_source,
    source_argument,
    tokenizer_from,
    tokenizer_label,
    tokenizer_option,
    view_option,
)
from contextwindow.cli._json import document, dumps
from contextwindow.cli._term import (
    Block,
    Styled,
    Table,
    emit,
    plural,
    preview_width,
    working,
)
from contextwindow.formats._opaque import opaque_text
from contextwindow.inspection import Inspection, ToolStats, inspect_messages
from contextwindow.messages import PROVIDERS, Message, Opaque, Provider
from contextwindow.tokens import Tokenizer
from contextwindow.transcripts import Transcript


@click.command("inspect")
@source_argument
@click.option("-m", "--model", help="Model whose window and tokenizer apply.")
@click.option(
    "--provider",
    type=click.Choice(PROVIDERS),
    help="Whose message framing to count (default: the file's own shape).",
)
@conversation_option
@view_option
@tokenizer_option
@click.option(
    "--top",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="Largest messages (or conversations) shown; 0 for none.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
def inspect_cmd(
    file: str,
    model: str | None,
    provider: Provider | None,
    conversation: int | None,
    view: bool,
    tokenizer_spec: str | None,
    top: int,
    as_json: bool,
) -> None:
    """Show what is in a conversation: tokens by role, by tool, largest messages.

    FILE is a transcript (- for standard input), or a store's URL: URL#ID one
    stored conversation (e.g. sqlite:///chats.db#support-42), URL all of them.
    """
    known_model(model)
    with cli_errors():
        tokenizer = tokenizer_from(tokenizer_spec) if tokenizer_spec else None
        with working(f"reading {shown_source(file)}"):
            transcripts = read_source(file, view=view)
        if conversation is not None:
            transcripts = [choose_transcript(file, transcripts, conversation)]
        results: list[Inspection] = []
        with working("counting", total=len(transcripts)) as w:
            for t in transcripts:
                results.append(inspect_transcript(t, model, provider, tokenizer, top))
                w.advance()
    if as_json:
        payload = [
            {"title": t.title, "format": t.format, **r.to_dict()}
            for t, r in zip(transcripts, results, strict=True)
        ]
        doc = (
            document("inspect", **payload[0])
            if len(payload) == 1
            else document("inspect", source=shown_source(file), conversations=payload)
        )
        click.echo(dumps(doc))
    elif len(results) == 1:
        emit(_render(transcripts[0], results[0]))
    else:
        emit(_render_many(shown_source(file), transcripts, results, top))


def inspect_transcript(
    t: Transcript,
    model: str | None,
    provider: Provider | None,
    tokenizer: Tokenizer | None,
    top: int,
) -> Inspection:
    """What ``t`` holds; ``report`` shares it, so both count alike."""
    meta: dict[str, Any] = {}
    live_from = None
    compactions: Sequence[Mapping[str, Any]] = t.meta.get("compactions") or []
    if compactions:
        meta["compactions"] = len(compactions)
        live_from = int(compactions[-1]["index"])
    usage = t.meta.get("usage")
    if isinstance(usage, dict):
        usage = cast("Mapping[str, Any]", usage)
        keys = (
            "input_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        )
        meta["recorded_input_tokens"] = sum(int(usage.get(k) or 0) for k in keys)
    return inspect_messages(
        t.messages,
        model=model or t.model or DEFAULT_MODEL,
        provider=provider or provider_of(t),
        tokenizer=tokenizer,
        tools=t.tools,
        top=top,
        meta=meta,
        live_from=live_from,
    )


# -- rendering -------------------------------------------------------------------


def _count_label(r: Inspection) -> Styled:
    label = tokenizer_label(r.tokenizer, r.exact)
    return Styled(((label, "green" if r.exact else "yellow"),))


def _model_line(r: Inspection, limits: str) -> Styled:
    return Styled(
        ((f"model: {r.model} ({limits}); tokens: ", ""), *_count_label(r).pieces)
    )


def _limits(r: Inspection) -> str:
    limits = f"window {num(r.context_window)}"
    if r.max_output_tokens:
        limits += f", max output {num(r.max_output_tokens)}"
    return limits


def _preview(m: Message, width: int) -> str:
    """The message's text on one line, cut to ``width`` characters."""
    text = m.text or " ".join(opaque_text(p) for p in m.parts if isinstance(p, Opaque))
    if not text and m.tool_calls:
        c = m.tool_calls[0]
        text = f"{c.name}({c.arguments})"
    flat = " ".join(text[: width * 8].split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _render(t: Transcript, r: Inspection) -> list[Block]:
    out: list[Block] = [
        Styled(
            (
                (t.title, "bold"),
                (
                    f"  ({t.format}, {plural(r.messages, 'message')}, "
                    f"{plural(r.units, 'unit')})",
                    "",
                ),
            )
        ),
        _model_line(r, _limits(r)),
    ]
    if r.incomplete_units:
        out.append(
            Styled(
                (
                    (
                        f"warning: {plural(r.incomplete_units, 'unit')} a provider "
                        "would reject (orphan tool results or unanswered tool "
                        "calls)",
                        "yellow",
                    ),
                )
            )
        )
    if "compactions" in r.meta:
        out.append(
            f"compactions recorded in the transcript: {r.meta['compactions']}; "
            f"live context since the last: "
            f"{plural(r.meta['live_messages'], 'message')}, "
            f"{num(r.meta['live_tokens'])} tokens"
        )
    if "recorded_input_tokens" in r.meta:
        out.append(
            "input tokens the provider reported for the last request: "
            f"{num(r.meta['recorded_input_tokens'])} "
            "(system prompt and tools included)"
        )

    rows = [
        (s.role, num(s.messages), num(s.tokens), pct(s.tokens, r.tokens))
        for s in r.by_role
    ]
    if r.tool_schema_tokens:
        rows.append(("(tool schemas)", "", num(r.tool_schema_tokens), ""))
    out += [
        "",
        _heading("by role"),
        Table(("role", "messages", "tokens", "share"), tuple(rows)),
    ]

    if r.by_tool:
        out += ["", _heading("by tool"), _tool_table(r.by_tool, r.tokens)]

    if r.largest:
        width = preview_width(8 + max(len(s.role) for s in r.largest) + 30)
        rows = [
            (f"#{m.index}", m.role, num(m.tokens), _preview(t.messages[m.index], width))
            for m in r.largest
        ]
        out += [
            "",
            _heading("largest messages"),
            Table(("message", "role", "tokens", "preview"), tuple(rows), flex=3),
        ]

    out += ["", _usage_line(r)]
    return out


def _heading(text: str) -> Styled:
    return Styled(((text, "bold cyan"),))


def _usage_line(r: Inspection) -> Styled:
    share = r.usage
    colour = (
        "green"
        if share < 0.6
        else "yellow"
        if share < 0.8
        else "dark_orange"
        if share < 0.9
        else "red"
    )
    left = (
        (f"{num(-r.remaining)} over the window", "bold red")
        if r.remaining < 0
        else (f"{num(r.remaining)} left", "")
    )
    return Styled(
        (
            ("usage  ", "bold"),
            (bar(share), colour),
            (
                f" {num(r.tokens)} / {num(r.context_window)} tokens "
                f"({100 * share:.1f}%), ",
                "",
            ),
            left,
        )
    )


def _tool_table(stats: Sequence[ToolStats], total: int) -> Table:
    rows = tuple(
        (
            s.name,
            num(s.calls),
            num(s.call_tokens),
            num(s.result_tokens),
            pct(s.tokens, total),
        )
        for s in stats
    )
    return Table(("tool", "calls", "call tok", "result tok", "share"), rows)


def _sum_tools(groups: Iterable[Sequence[ToolStats]]) -> list[ToolStats]:
    """Per-tool totals over many conversations, largest first."""
    acc: dict[str, list[int]] = {}
    for stats in groups:
        for t in stats:
            a = acc.setdefault(t.name, [0, 0, 0, 0])
            a[0] += t.calls
            a[1] += t.call_tokens
            a[2] += t.result_tokens
            a[3] += t.errors
    out = [ToolStats(name, *a) for name, a in acc.items()]
    out.sort(key=lambda t: (-t.tokens, t.name))
    return out


MODELS_NAMED = 3
"""Models the overview of a store names one by one when they differ."""


def _models_line(results: Sequence[Inspection]) -> Styled:
    """The overview's model line: the one model, or that there are several.

    A store's conversations may each name their own model (and so window and
    tokenizer); one conversation's line would misstate the others.
    """
    first = results[0]
    same = {(r.model, r.context_window, r.tokenizer, r.exact) for r in results}
    if len(same) == 1:
        return _model_line(first, f"window {num(first.context_window)}")
    names = list(dict.fromkeys(r.model for r in results))
    shown = ", ".join(names[:MODELS_NAMED])
    if len(names) > MODELS_NAMED:
        shown += f" and {num(len(names) - MODELS_NAMED)} more"
    exact = all(r.exact for r in results)
    label = "exact" if exact else "APPROXIMATE for some"
    return Styled(
        (
            (
                f"models: several ({shown}); each conversation counted with its "
                "own model's window and tokenizer, ",
                "",
            ),
            (label, "green" if exact else "yellow"),
        )
    )


def _render_many(
    file: str,
    transcripts: Sequence[Transcript],
    results: Sequence[Inspection],
    top: int,
) -> list[Block]:
    total = sum(r.tokens for r in results)
    out: list[Block] = [
        Styled(
            (
                (file, "bold"),
                (
                    f"  ({transcripts[0].format}, "
                    f"{plural(len(results), 'conversation')}, "
                    f"{plural(sum(r.messages for r in results), 'message')}, "
                    f"{num(total)} tokens)",
                    "",
                ),
            )
        ),
        _models_line(results),
    ]
    over = sum(1 for r in results if r.remaining < 0)
    incomplete = sum(r.incomplete_units for r in results)
    sizes = sorted(r.tokens for r in results)
    out.append(
        f"tokens per conversation: min {num(sizes[0])}, "
        f"median {num(sizes[len(sizes) // 2])}, max {num(sizes[-1])}; "
        f"{num(over)} over the window; "
        f"{plural(incomplete, 'invalid unit')}"
    )
    roles: dict[str, list[int]] = {}
    for r in results:
        for s in r.by_role:
            acc = roles.setdefault(s.role, [0, 0])
            acc[0] += s.messages
            acc[1] += s.tokens
    rows = tuple((k, num(a[0]), num(a[1]), pct(a[1], total)) for k, a in roles.items())
    out += [
        "",
        _heading("by role (all conversations)"),
        Table(("role", "messages", "tokens", "share"), rows),
    ]
    tools = _sum_tools(r.by_tool for r in results)
    if tools:
        out += ["", _heading("by tool (all conversations)"), _tool_table(tools, total)]

    order = sorted(range(len(results)), key=lambda i: -results[i].tokens)[:top]
    if order:
        out += ["", _heading(f"largest conversations (of {len(results):,})")]
        top_rows = tuple(
            (
                f"#{i}",
                transcripts[i].title,
                num(results[i].messages),
                num(results[i].tokens),
                f"{100 * results[i].usage:.1f}%",
            )
            for i in order
        )
        out.append(
            Table(("#", "title", "messages", "tokens", "usage"), top_rows, flex=1)
        )
    out += ["", "use --conversation N to inspect one"]
    return out
