"""``contextwindow models``: list models with their window, output limit and tokens.

Contract: the command only reads the model registry; it prints a table (or
JSON) to stdout, with the model a pattern names first, as ``get_model`` gives
it. A pattern that matches nothing is a one-line ``Error: …`` and a non-zero
exit.
"""

from __future__ import annotations

import click

from contextwindow.cli._common import cli_errors, num
from contextwindow.cli._json import document, dumps
from contextwindow.cli._term import Block, Table, emit
from contextwindow.models import ModelInfo, approximation_scale, get_model, registry


def _tokens_label(m: ModelInfo) -> str:
    if m.exact:
        return m.encoding or "-"
    scale = approximation_scale(m)
    factor = "" if scale == 1.0 else f" x{scale:g}"
    return f"{m.encoding or 'o200k_base'}{factor} (approx.)"


def _names_it(pattern: str, resolved: str) -> bool:
    """Whether ``pattern``, which resolves to ``resolved``, names a model.

    A single word inside the name it resolves to ("claude", "mistral") is a
    search for a family; anything more ("claude-opus-4", "codestral-2501") is
    a model's name, even inside another ("anthropic.claude-opus-4-...-v1:0"),
    and is shown as the library resolves it.
    """
    p, r = pattern.strip().lower(), resolved.lower()
    return p == r or p not in r or not p.isalpha()


@click.command("models")
@click.argument("pattern", required=False)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=40,
    show_default=True,
    help="Most rows shown.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
def models_cmd(pattern: str | None, limit: int, as_json: bool) -> None:
    """List models with their context window and output limit.

    PATTERN is a model name (aliases and dated variants resolve, and the
    model it names comes first), a substring or a single word such as
    'claude' (a search), or a glob such as 'claude-*-4-5*'.
    """
    with cli_errors():
        glob = pattern is not None and any(c in pattern for c in "*?[")
        resolved = registry.resolve(pattern) if pattern and not glob else None
        found = registry.search(pattern) if pattern else list(registry)
        if resolved is not None and pattern and not _names_it(pattern, resolved):
            resolved = None  # a search term such as "claude", not a model name
        if resolved is not None and pattern:
            # What the library gives for the name (get_model(pattern)), which
            # may be the maker's relabel of the entry it resolved to.
            exact = get_model(pattern)
            rest = [
                m for m in found if (m.name, m.provider) != (exact.name, exact.provider)
            ]
            found = [exact, *rest]
    if not found:
        close = registry.suggest(pattern) if pattern else ()
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise click.BadParameter(
            f"no model matches {pattern!r}{hint}", param_hint="PATTERN"
        )
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
        doc = document(
            "models",
            pattern=pattern,
            resolved=resolved,
            total=len(found),
            models=rows_json,
        )
        click.echo(dumps(doc))
        return
    blocks: list[Block] = []
    if resolved is not None and pattern and resolved != pattern:
        blocks.append(f"{pattern} -> {resolved}")
    rows = tuple(
        (
            m.name,
            m.provider,
            num(m.context_window),
            num(m.max_output_tokens) if m.max_output_tokens else "-",
            _tokens_label(m),
        )
        for m in shown
    )
    blocks.append(Table(("model", "provider", "window", "max output", "tokens"), rows))
    if len(found) > limit:
        blocks.append(f"  … {num(len(found) - limit)} more (use --limit)")
    emit(blocks)
