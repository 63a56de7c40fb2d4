"""The ``contextwindow`` command: inspect and fit transcripts, list model windows.

Contract: this is the only module that prints. Library errors
(``ContextWindowError``, ``BudgetError`` included) become one-line
``Error: …`` messages and a non-zero exit; library warnings become
``warning: …`` lines on stderr. ``fit`` writes the fitted conversation to
``-o`` (its report to stdout) or, without ``-o``, to stdout (its report to
stderr), so that it pipes.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Generator, Iterable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import click

from contextwindow import __version__
from contextwindow.errors import ContextWindowError
from contextwindow.fitting import fit
from contextwindow.formats import AnthropicRequest, to_provider
from contextwindow.inspection import Inspection, ToolStats, inspect_messages
from contextwindow.messages import PROVIDERS, Provider
from contextwindow.models import (
    DEFAULT_MODEL_INFO,
    ModelInfo,
    approximation_scale,
    get_model,
    get_tokenizer,
    registry,
)
from contextwindow.strategies.base import Change, Fitted
from contextwindow.strategies.names import STRATEGY_NAMES, parse_strategy
from contextwindow.tokens import (
    BPETokenizer,
    HeuristicTokenizer,
    HFTokenizer,
    TokenCounter,
    Tokenizer,
)
from contextwindow.tokens.bpe import ENCODINGS
from contextwindow.transcripts import Transcript, read_transcripts

__all__ = ["main"]

_PROVIDER_OF_FORMAT: dict[str, Provider] = {
    "anthropic": "anthropic",
    "anthropic_request": "anthropic",
    "claude_code": "anthropic",
    "responses": "responses",
}
DEFAULT_MODEL = "gpt-4o"
MAX_CHANGES_SHOWN = 20
"""Changes ``fit`` lists one by one; the rest are counted (``--json`` has all)."""


def _provider_of(t: Transcript) -> Provider:
    """The provider whose shape a transcript is in (JSONL: the shape of its lines)."""
    fmt = t.format
    if fmt == "jsonl":
        fmt = str(t.meta.get("shape", "openai"))
    return _PROVIDER_OF_FORMAT.get(fmt, "openai")


@contextmanager
def _errors() -> Generator[None, None, None]:
    """Turn library errors into click errors, and warnings into stderr lines."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        except ContextWindowError as exc:
            raise click.ClickException(str(exc)) from exc
        finally:
            seen: set[str] = set()
            for w in caught:
                text = str(w.message)
                if text not in seen:
                    seen.add(text)
                    click.echo(f"warning: {text}", err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="contextwindow")
def main() -> None:
    """Keep LLM conversations inside their model's context window.

    Reads OpenAI chat, Anthropic Messages and OpenAI Responses transcripts,
    JSONL of messages, Claude Code sessions and tau-bench trajectory files;
    the format is detected automatically.
    """


@main.command("inspect")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.option("-m", "--model", help="Model whose window and tokenizer apply.")
@click.option(
    "--provider",
    type=click.Choice(PROVIDERS),
    help="Whose message framing to count (default: the file's own shape).",
)
@click.option(
    "-c",
    "--conversation",
    type=int,
    help="Which conversation of a multi-conversation file (0-based).",
)
@click.option(
    "-t",
    "--tokenizer",
    "tokenizer_spec",
    metavar="NAME|PATH",
    help="Count with o200k_base, cl100k_base, heuristic, or a Hugging Face "
    "tokenizer.json (default: the model's own).",
)
@click.option("--top", default=5, show_default=True, help="Largest messages shown.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
def inspect_cmd(
    file: str,
    model: str | None,
    provider: Provider | None,
    conversation: int | None,
    tokenizer_spec: str | None,
    top: int,
    as_json: bool,
) -> None:
    """Show what is in a conversation: tokens by role, by tool, largest messages.

    FILE is a transcript; use - for standard input.
    """
    with _errors():
        transcripts = read_transcripts(sys.stdin if file == "-" else file)
        if conversation is not None:
            transcripts = [_choose(file, transcripts, conversation)]
        tokenizer = _tokenizer(tokenizer_spec) if tokenizer_spec else None
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


def _choose(file: str, transcripts: Sequence[Transcript], k: int | None) -> Transcript:
    """The ``--conversation`` asked for, or the only one the file holds."""
    n = len(transcripts)
    if k is None and n == 1:
        return transcripts[0]
    if k is None:
        raise click.UsageError(
            f"{file} holds {n} conversations; choose one with --conversation N "
            f"(0 to {n - 1})"
        )
    if not 0 <= k < n:
        choose = f"choose 0 to {n - 1}" if n else "there is none to choose"
        raise click.BadParameter(
            f"{file} holds {n} conversation(s); {choose}",
            param_hint="--conversation",
        )
    return transcripts[k]


def _tokenizer(spec: str) -> Tokenizer:
    """The tokenizer a ``--tokenizer`` value names."""
    if spec == "heuristic":
        return HeuristicTokenizer()
    if spec in ENCODINGS:
        return BPETokenizer(spec)
    if spec.endswith(".json") or Path(spec).exists():
        return HFTokenizer.from_file(spec)
    choices = ", ".join([*ENCODINGS, "heuristic"])
    raise click.BadParameter(
        f"{spec!r} is not one of {choices}, nor a tokenizer.json file",
        param_hint="--tokenizer",
    )


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
        provider=provider or _provider_of(t),
        tokenizer=tokenizer,
        tools=t.tools,
        top=top,
        meta=meta,
        live_from=live_from,
    )


# -- fit -------------------------------------------------------------------------


def _strategy_help() -> str:
    usages = {name: entry.usage(name) for name, entry in STRATEGY_NAMES.items()}
    width = max(map(len, usages.values()))
    lines = [
        f"  {usages[name]:<{width}}  {entry.summary}"
        for name, entry in STRATEGY_NAMES.items()
    ]
    return "\b\nStrategies (--strategy, stages joined by ','):\n" + "\n".join(lines)


@dataclass(frozen=True, slots=True)
class _Budget:
    """A ``--budget`` value: tokens, or a share of the conversation's own."""

    value: float
    percent: bool

    def tokens(self, current: int) -> int:
        return int(current * self.value / 100) if self.percent else int(self.value)

    def __str__(self) -> str:
        return f"{self.value:g}%" if self.percent else _n(int(self.value))


def _parse_budget(
    _ctx: click.Context, _param: click.Parameter, value: str | None
) -> _Budget | None:
    if value is None:
        return None
    text = value.strip().replace(",", "").replace("_", "")
    percent = text.endswith("%")
    try:
        number = float(text[:-1]) if percent else int(text)
    except ValueError:
        number = -1.0
    if number < 0:
        raise click.BadParameter(
            f"{value!r} is not a number of tokens (N) or a share of the "
            "conversation's tokens (N%)"
        )
    return _Budget(number, percent)


@dataclass(frozen=True, slots=True)
class _FitRun:
    """Everything ``fit`` reports on."""

    file: str
    transcript: Transcript
    model: ModelInfo
    provider: Provider
    tokenizer: Tokenizer
    budget: _Budget | None
    limit: int
    reserve: int
    strategy: str
    fitted: Fitted
    output: str | None


@main.command("fit", epilog=_strategy_help())
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.option("-m", "--model", help="Model whose window and tokenizer apply.")
@click.option(
    "--budget",
    callback=_parse_budget,
    metavar="N|N%",
    help="Tokens the request may take, or N% of the conversation's own tokens "
    "(default: the model's window).",
)
@click.option(
    "--reserve",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Tokens kept free within the budget, e.g. for the reply (up to the "
    "model's max output, which `contextwindow models M` shows).",
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
@click.option(
    "-c",
    "--conversation",
    type=int,
    help="Which conversation of a multi-conversation file (0-based).",
)
@click.option(
    "-t",
    "--tokenizer",
    "tokenizer_spec",
    metavar="NAME|PATH",
    help="Count with o200k_base, cl100k_base, heuristic, or a Hugging Face "
    "tokenizer.json (default: the model's own).",
)
@click.option(
    "--protect",
    multiple=True,
    metavar="MARKER",
    help="Keep every message whose text holds MARKER (repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def fit_cmd(
    file: str,
    model: str | None,
    budget: _Budget | None,
    reserve: int,
    strategy_spec: str,
    to: Provider | None,
    output: str | None,
    conversation: int | None,
    tokenizer_spec: str | None,
    protect: tuple[str, ...],
    as_json: bool,
) -> None:
    """Fit a conversation into a token budget, validly, and report every change.

    FILE is a transcript; use - for standard input. The fitted conversation is
    written as JSON in the provider's shape: a list of messages (openai), a
    list of items (responses) or {"system", "messages"} (anthropic).
    """
    if output == "-":
        output = None
    try:
        strategy = parse_strategy(strategy_spec)
    except ContextWindowError as exc:
        raise click.BadParameter(str(exc), param_hint="--strategy") from exc
    with _errors():
        transcripts = read_transcripts(sys.stdin if file == "-" else file)
        t = _choose(file, transcripts, conversation)
        asked = model or t.model or DEFAULT_MODEL
        info = get_model(asked)
        if info is DEFAULT_MODEL_INFO:  # report the name asked for, not "unknown"
            info = replace(info, name=asked)
        provider = to or _provider_of(t)
        tok = _tokenizer(tokenizer_spec) if tokenizer_spec else get_tokenizer(info)
        counter = TokenCounter(tok, provider)
        current = counter.messages(list(t.messages), tools=t.tools)
        limit = budget.tokens(current) if budget else info.context_window
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
        )
        body = to_provider(fitted.messages, provider)
        data: Any = body.body() if isinstance(body, AnthropicRequest) else body
    text = json.dumps(data, indent=2, ensure_ascii=False)
    if output is not None:
        try:
            Path(output).write_text(text + "\n", encoding="utf-8")
        except OSError as exc:
            raise click.ClickException(
                f"cannot write {output}: {exc.strerror or exc}"
            ) from exc
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
    )
    report = json.dumps(_fit_dict(run), indent=2) if as_json else _render_fit(run)
    click.echo(report, err=output is None)


def _change_dict(c: Change) -> dict[str, Any]:
    return {
        "kind": c.kind,
        "stage": c.stage,
        "index": c.index,
        "ids": list(c.ids),
        "what": c.what,
        "tokens_before": c.tokens_before,
        "tokens_after": c.tokens_after,
        "saved": c.saved,
    }


def _fit_dict(run: _FitRun) -> dict[str, Any]:
    r = run.fitted.report
    return {
        "file": run.file,
        "title": run.transcript.title,
        "format": run.transcript.format,
        "output": run.output,
        "model": run.model.name,
        "context_window": run.model.context_window,
        "max_output_tokens": run.model.max_output_tokens,
        "provider": run.provider,
        "tokenizer": run.tokenizer.name,
        "exact": run.tokenizer.exact,
        "strategy": run.strategy,
        "budget_spec": str(run.budget) if run.budget else None,
        "limit": run.limit,
        "reserve": run.reserve,
        "budget": r.limit,
        "tokens_before": r.tokens_before,
        "tokens_after": r.tokens_after,
        "saved": r.saved,
        "fits": r.fits,
        "messages_before": len(run.transcript.messages),
        "messages_after": len(run.fitted.messages),
        "stages": list(r.stages),
        "totals": {
            k: {"changes": n, "saved": saved} for k, (n, saved) in r.totals().items()
        },
        "changes": [_change_dict(c) for c in r.changes],
    }


# -- rendering -------------------------------------------------------------------


def _n(x: int) -> str:
    return f"{x:,}"


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _is_number(cell: str) -> bool:
    return (
        bool(cell)
        and cell.strip("-").replace(",", "").replace(".", "").rstrip("%").isdigit()
    )


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Align columns: numbers to the right, text to the left."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    right = [
        k > 0 and all(_is_number(r[k]) or not r[k] for r in rows)
        for k in range(len(headers))
    ]

    def line(cells: Sequence[str]) -> str:
        out = [
            c.rjust(w) if r else c.ljust(w)
            for c, w, r in zip(cells, widths, right, strict=True)
        ]
        return "  " + "  ".join(out).rstrip()

    return "\n".join([line(headers), *(line(r) for r in rows)])


def _bar(share: float, width: int = 30) -> str:
    filled = min(width, round(share * width))
    return "█" * filled + "░" * (width - filled)


def _label(tokenizer: str, exact: bool) -> str:
    return f"{tokenizer}, exact" if exact else f"{tokenizer}, APPROXIMATE"


def _count_label(r: Inspection) -> str:
    return _label(r.tokenizer, r.exact)


def _render(t: Transcript, r: Inspection) -> str:
    out: list[str] = []
    head = f"{t.title}  ({t.format}, {_n(r.messages)} messages, {_n(r.units)} units)"
    out.append(head)
    limits = f"window {_n(r.context_window)}"
    if r.max_output_tokens:
        limits += f", max output {_n(r.max_output_tokens)}"
    out.append(f"model: {r.model} ({limits}); tokens: {_count_label(r)}")
    if r.incomplete_units:
        out.append(
            f"warning: {r.incomplete_units} unit(s) a provider would reject "
            "(orphan tool results or unanswered tool calls)"
        )
    if "compactions" in r.meta:
        out.append(
            f"compactions recorded in the transcript: {r.meta['compactions']}; "
            f"live context since the last: {_n(r.meta['live_messages'])} messages, "
            f"{_n(r.meta['live_tokens'])} tokens"
        )
    if "recorded_input_tokens" in r.meta:
        out.append(
            "input tokens the provider reported for the last request: "
            f"{_n(r.meta['recorded_input_tokens'])} (system prompt and tools included)"
        )

    out += ["", "by role"]
    rows = [
        [s.role, _n(s.messages), _n(s.tokens), _pct(s.tokens, r.tokens)]
        for s in r.by_role
    ]
    if r.tool_schema_tokens:
        rows.append(["(tool schemas)", "", _n(r.tool_schema_tokens), ""])
    out.append(_table(["role", "messages", "tokens", "share"], rows))

    if r.by_tool:
        out += ["", "by tool", _tool_table(r.by_tool, r.tokens)]

    if r.largest:
        out += ["", "largest messages"]
        rows = [[f"#{m.index}", m.role, _n(m.tokens), m.preview] for m in r.largest]
        out.append(_table(["message", "role", "tokens", "preview"], rows))

    out += ["", _usage_line(r)]
    return "\n".join(out)


def _usage_line(r: Inspection) -> str:
    over = "  OVER THE WINDOW" if r.remaining < 0 else ""
    return (
        f"usage  {_bar(r.usage)} {_n(r.tokens)} / {_n(r.context_window)} "
        f"tokens ({100 * r.usage:.1f}%), {_n(r.remaining)} left{over}"
    )


def _tool_table(stats: Sequence[ToolStats], total: int) -> str:
    rows = [
        [
            s.name,
            _n(s.calls),
            _n(s.call_tokens),
            _n(s.result_tokens),
            _pct(s.tokens, total),
        ]
        for s in stats
    ]
    return _table(["tool", "calls", "call tok", "result tok", "share"], rows)


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
        f"{file}  ({transcripts[0].format}, {_n(len(results))} conversations, "
        f"{_n(sum(r.messages for r in results))} messages, {_n(total)} tokens)",
        f"model: {first.model} (window {_n(first.context_window)}); "
        f"tokens: {_count_label(first)}",
    ]
    over = sum(1 for r in results if r.remaining < 0)
    incomplete = sum(r.incomplete_units for r in results)
    sizes = sorted(r.tokens for r in results)
    out.append(
        f"tokens per conversation: min {_n(sizes[0])}, "
        f"median {_n(sizes[len(sizes) // 2])}, max {_n(sizes[-1])}; "
        f"{over} over the window; {incomplete} invalid unit(s)"
    )
    roles: dict[str, list[int]] = {}
    for r in results:
        for s in r.by_role:
            acc = roles.setdefault(s.role, [0, 0])
            acc[0] += s.messages
            acc[1] += s.tokens
    out += ["", "by role (all conversations)"]
    rows = [[k, _n(a[0]), _n(a[1]), _pct(a[1], total)] for k, a in roles.items()]
    out.append(_table(["role", "messages", "tokens", "share"], rows))
    tools = _sum_tools(r.by_tool for r in results)
    if tools:
        out += ["", "by tool (all conversations)", _tool_table(tools, total)]

    order = sorted(range(len(results)), key=lambda i: -results[i].tokens)[:top]
    out += ["", f"largest conversations (of {len(results)})"]
    rows = [
        [
            f"#{i}",
            transcripts[i].title,
            _n(results[i].messages),
            _n(results[i].tokens),
            f"{100 * results[i].usage:.1f}%",
        ]
        for i in order
    ]
    out.append(_table(["#", "title", "messages", "tokens", "usage"], rows))
    out += ["", "use --conversation N to inspect one"]
    return "\n".join(out)


def _render_fit(run: _FitRun) -> str:
    r = run.fitted.report
    t = run.transcript
    window = run.model.context_window
    limits = f"window {_n(window)}"
    if run.model.max_output_tokens:
        limits += f", max output {_n(run.model.max_output_tokens)}"
    if run.budget is None:
        source = "the model's window"
    elif run.budget.percent:
        source = f"{run.budget} of the conversation's {_n(r.tokens_before)}"
    else:
        source = "asked for"
    if run.reserve:
        source += f", less {_n(run.reserve)} reserved"
    out = [
        f"{t.title}  ({t.format}, fitted for {run.provider})",
        f"model: {run.model.name} ({limits}); "
        f"tokens: {_label(run.tokenizer.name, run.tokenizer.exact)}",
        f"budget    {_n(r.limit)} tokens ({source})",
        f"tokens    {_n(r.tokens_before)} → {_n(r.tokens_after)} / {_n(r.limit)} "
        f"({_pct(r.tokens_after, window)} of the window)",
        f"messages  {_n(len(t.messages))} → {_n(len(run.fitted.messages))}",
        f"stages    {', '.join(r.stages) or '(none: it already fits)'}",
    ]
    if r.changes:
        out += ["", *_changes_table(r.changes)]
        rows = [[k, _n(n), _n(saved)] for k, (n, saved) in r.totals().items()]
        rows.append(["all", _n(len(r.changes)), _n(r.saved)])
        out += ["", "totals", _table(["kind", "changes", "saved"], rows)]
    if run.output is not None:
        out += ["", f"wrote {run.output} ({run.provider} shape)"]
    return "\n".join(out)


def _changes_table(changes: Sequence[Change]) -> tuple[str, str]:
    """The heading and table of changes: all, or the largest in the order made."""
    heading = "changes"
    shown = list(changes)
    if len(changes) > MAX_CHANGES_SHOWN:
        order = sorted(range(len(changes)), key=lambda k: -abs(changes[k].saved))
        shown = [changes[k] for k in sorted(order[:MAX_CHANGES_SHOWN])]
        heading = (
            f"changes (the {MAX_CHANGES_SHOWN} largest of {_n(len(changes))}, "
            "in the order made; --json lists all)"
        )
    rows = [
        [
            c.kind,
            f"#{c.index}",
            _clip(c.what, 60),
            _n(c.tokens_before),
            _n(c.tokens_after),
            c.stage,
        ]
        for c in shown
    ]
    table = _table(["kind", "message", "what", "before", "after", "stage"], rows)
    return heading, table


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _tokens_label(m: ModelInfo) -> str:
    if m.exact:
        return m.encoding or "-"
    scale = approximation_scale(m)
    factor = "" if scale == 1.0 else f" x{scale:g}"
    return f"{m.encoding or 'o200k_base'}{factor} (approx.)"


def _names_it(pattern: str, resolved: str) -> bool:
    """Whether ``pattern`` names ``resolved`` rather than searching for it."""
    p, r = pattern.lower(), resolved.lower()
    return p == r or p not in r


@main.command("models")
@click.argument("pattern", required=False)
@click.option("--limit", default=40, show_default=True, help="Most rows shown.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
def models_cmd(pattern: str | None, limit: int, as_json: bool) -> None:
    """List models with their context window and output limit.

    PATTERN is a model name (aliases and dated variants resolve), a substring,
    or a glob such as 'claude-*-4-5*'.
    """
    with _errors():
        resolved = registry.resolve(pattern) if pattern else None
        found = registry.search(pattern) if pattern else list(registry)
        if resolved is not None and pattern and not _names_it(pattern, resolved):
            resolved = None  # a search term such as "claude", not a model name
        if resolved is not None:
            exact = get_model(resolved)
            found = [exact] + [m for m in found if m.name != exact.name]
    if not found:
        raise click.ClickException(f"no model matches {pattern!r}")
    shown = found[:limit]
    if as_json:
        rows_json = [
            {
                "name": m.name,
                "provider": m.provider,
                "context_window": m.context_window,
                "max_output_tokens": m.max_output_tokens,
                "encoding": m.encoding,
                "exact": m.exact,
            }
            for m in shown
        ]
        click.echo(json.dumps(rows_json, indent=2))
        return
    if resolved is not None and pattern and resolved != pattern:
        click.echo(f"{pattern} -> {resolved}")
    rows = [
        [
            m.name,
            m.provider,
            _n(m.context_window),
            _n(m.max_output_tokens) if m.max_output_tokens else "-",
            _tokens_label(m),
        ]
        for m in shown
    ]
    click.echo(_table(["model", "provider", "window", "max output", "tokens"], rows))
    if len(found) > limit:
        click.echo(f"  … {len(found) - limit} more (use --limit)")
