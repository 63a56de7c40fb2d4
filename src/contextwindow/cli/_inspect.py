"""``contextwindow inspect``: what a conversation holds, by role, tool and message.

Contract: the command only reads; it prints one report (or one JSON document)
to stdout, a single conversation's or, for a multi-conversation file without
``--conversation``, a summary of them all. Library errors and warnings reach
the user through ``cli_errors``.
"""

from __future__ import annotations

import json
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
    source_argument,
    table,
    tokenizer_from,
    tokenizer_label,
    tokenizer_option,
    view_option,
)
from contextwindow.inspection import Inspection, ToolStats, inspect_messages
from contextwindow.messages import PROVIDERS, Provider
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
@click.option("--top", default=5, show_default=True, help="Largest messages shown.")
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
        transcripts = read_source(file, view=view)
        if conversation is not None:
            transcripts = [choose_transcript(file, transcripts, conversation)]
        tokenizer = tokenizer_from(tokenizer_spec) if tokenizer_spec else None
        results = [_inspect(t, model, provider, tokenizer, top) for t in transcripts]
    if as_json:
        payload: Any = [
            {"title": t.title, "format": t.format, **r.to_dict()}
            for t, r in zip(transcripts, results, strict=True)
        ]
        click.echo(json.dumps(payload[0] if len(payload) == 1 else payload, indent=2))
    elif len(results) == 1:
        click.echo(_render(transcripts[0], results[0]))
    else:
        click.echo(_render_many(file, transcripts, results, top))


def _inspect(
    t: Transcript,
    model: str | None,
    provider: Provider | None,
    tokenizer: Tokenizer | None,
    top: int,
) -> Inspection:
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


def _count_label(r: Inspection) -> str:
    return tokenizer_label(r.tokenizer, r.exact)


def _render(t: Transcript, r: Inspection) -> str:
    out: list[str] = []
    head = f"{t.title}  ({t.format}, {num(r.messages)} messages, {num(r.units)} units)"
    out.append(head)
    limits = f"window {num(r.context_window)}"
    if r.max_output_tokens:
        limits += f", max output {num(r.max_output_tokens)}"
    out.append(f"model: {r.model} ({limits}); tokens: {_count_label(r)}")
    if r.incomplete_units:
        out.append(
            f"warning: {r.incomplete_units} unit(s) a provider would reject "
            "(orphan tool results or unanswered tool calls)"
        )
    if "compactions" in r.meta:
        out.append(
            f"compactions recorded in the transcript: {r.meta['compactions']}; "
            f"live context since the last: {num(r.meta['live_messages'])} messages, "
            f"{num(r.meta['live_tokens'])} tokens"
        )
    if "recorded_input_tokens" in r.meta:
        out.append(
            "input tokens the provider reported for the last request: "
            f"{num(r.meta['recorded_input_tokens'])} "
            "(system prompt and tools included)"
        )

    out += ["", "by role"]
    rows = [
        [s.role, num(s.messages), num(s.tokens), pct(s.tokens, r.tokens)]
        for s in r.by_role
    ]
    if r.tool_schema_tokens:
        rows.append(["(tool schemas)", "", num(r.tool_schema_tokens), ""])
    out.append(table(["role", "messages", "tokens", "share"], rows))

    if r.by_tool:
        out += ["", "by tool", _tool_table(r.by_tool, r.tokens)]

    if r.largest:
        out += ["", "largest messages"]
        rows = [[f"#{m.index}", m.role, num(m.tokens), m.preview] for m in r.largest]
        out.append(table(["message", "role", "tokens", "preview"], rows))

    out += ["", _usage_line(r)]
    return "\n".join(out)


def _usage_line(r: Inspection) -> str:
    over = "  OVER THE WINDOW" if r.remaining < 0 else ""
    return (
        f"usage  {bar(r.usage)} {num(r.tokens)} / {num(r.context_window)} "
        f"tokens ({100 * r.usage:.1f}%), {num(r.remaining)} left{over}"
    )


def _tool_table(stats: Sequence[ToolStats], total: int) -> str:
    rows = [
        [
            s.name,
            num(s.calls),
            num(s.call_tokens),
            num(s.result_tokens),
            pct(s.tokens, total),
        ]
        for s in stats
    ]
    return table(["tool", "calls", "call tok", "result tok", "share"], rows)


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


def _render_many(
    file: str,
    transcripts: Sequence[Transcript],
    results: Sequence[Inspection],
    top: int,
) -> str:
    total = sum(r.tokens for r in results)
    first = results[0]
    out = [
        f"{file}  ({transcripts[0].format}, {num(len(results))} conversations, "
        f"{num(sum(r.messages for r in results))} messages, {num(total)} tokens)",
        f"model: {first.model} (window {num(first.context_window)}); "
        f"tokens: {_count_label(first)}",
    ]
    over = sum(1 for r in results if r.remaining < 0)
    incomplete = sum(r.incomplete_units for r in results)
    sizes = sorted(r.tokens for r in results)
    out.append(
        f"tokens per conversation: min {num(sizes[0])}, "
        f"median {num(sizes[len(sizes) // 2])}, max {num(sizes[-1])}; "
        f"{over} over the window; {incomplete} invalid unit(s)"
    )
    roles: dict[str, list[int]] = {}
    for r in results:
        for s in r.by_role:
            acc = roles.setdefault(s.role, [0, 0])
            acc[0] += s.messages
            acc[1] += s.tokens
    out += ["", "by role (all conversations)"]
    rows = [[k, num(a[0]), num(a[1]), pct(a[1], total)] for k, a in roles.items()]
    out.append(table(["role", "messages", "tokens", "share"], rows))
    tools = _sum_tools(r.by_tool for r in results)
    if tools:
        out += ["", "by tool (all conversations)", _tool_table(tools, total)]

    order = sorted(range(len(results)), key=lambda i: -results[i].tokens)[:top]
    out += ["", f"largest conversations (of {len(results)})"]
    rows = [
        [
            f"#{i}",
            transcripts[i].title,
            num(results[i].messages),
            num(results[i].tokens),
            f"{100 * results[i].usage:.1f}%",
        ]
        for i in order
    ]
    out.append(table(["#", "title", "messages", "tokens", "usage"], rows))
    out += ["", "use --conversation N to inspect one"]
    return "\n".join(out)
