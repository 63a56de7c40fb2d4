"""``contextwindow export``: a stored conversation in a provider's shape, or a listing.

Contract: the command only reads the store. ``URL#ID`` writes that
conversation (its log, or with ``--view`` its saved view and what came
after) as UTF-8 JSON in the provider's shape, as ``fit`` writes its output:
to ``-o`` (with a one-line note on stdout) or to stdout; an ``-o`` naming
the store's own SQLite file is a usage error. ``URL`` alone lists
the store's conversations (a table, or ``--json``). Library errors reach the
user through ``cli_errors``.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import click

from contextwindow._redact import display_url
from contextwindow.cli._common import (
    check_output,
    cli_errors,
    num,
    provider_json,
    provider_of,
    view_option,
    write_text,
)
from contextwindow.cli._json import document, dumps
from contextwindow.cli._stored import list_conversations, stored_transcripts
from contextwindow.cli._term import Block, Styled, Table, emit, plural
from contextwindow.messages import PROVIDERS, Provider
from contextwindow.store import ConversationInfo, split_url
from contextwindow.store.urls import SCHEMES, is_store_url


def _when(seconds: float) -> str:
    stamp = dt.datetime.fromtimestamp(seconds, dt.timezone.utc)
    return stamp.strftime("%Y-%m-%d %H:%M UTC")


def _listing(url: str, infos: list[ConversationInfo]) -> list[Block]:
    url = display_url(url)
    if not infos:
        return [f"{url}: no conversations"]
    rows = tuple(
        (
            i.id,
            num(i.version),
            "-" if i.view_version is None else f"at {num(i.view_version)}",
            _when(i.updated),
            str(i.meta.get("model", "-")),
        )
        for i in infos
    )
    head = Styled(((url, "bold"), (f"  ({plural(len(infos), 'conversation')})", "")))
    body = Table(("conversation", "messages", "view", "updated", "model"), rows)
    return [head, body, "", "use URL#ID to export one"]


@click.command("export")
@click.argument("url", metavar="URL[#ID]")
@click.option(
    "--to",
    "to",
    type=click.Choice(PROVIDERS),
    help="Provider shape to write (default: the conversation's 'provider' "
    "metadata, else openai).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write the conversation here (default: stdout).",
)
@view_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print JSON for machines: the listing, or the conversation with its "
    "version (with -o, what was written).",
)
def export_cmd(
    url: str, to: Provider | None, output: str | None, view: bool, as_json: bool
) -> None:
    """Write a stored conversation in a provider's shape, or list a store's.

    URL#ID is one conversation, e.g. sqlite:///chats.db#support-42 (three
    slashes: a path relative to here; four: an absolute one); URL alone lists
    the conversations. postgresql:// and redis:// URLs work the same.
    """
    if not is_store_url(url):
        # Only a URL's scheme is shown: what is no store URL may be anything.
        what = f"{display_url(url)!r} is" if "://" in url else "it is"
        raise click.BadParameter(
            f"{what} not a store URL (schemes: {', '.join(SCHEMES)})",
            param_hint="URL",
        )
    if output == "-":
        output = None
    check_output(url, output)
    with cli_errors():
        if split_url(url)[1] is None:
            infos = list_conversations(url)
            if as_json:
                rows = [
                    {
                        "id": i.id,
                        "messages": i.version,
                        "view_version": i.view_version,
                        "created": i.created,
                        "updated": i.updated,
                        "meta": dict(i.meta),
                    }
                    for i in infos
                ]
                click.echo(
                    dumps(document("export", url=display_url(url), conversations=rows))
                )
            else:
                emit(_listing(url, infos))
            return
        (t,) = stored_transcripts(url, view=view)
        provider = to or provider_of(t)
        text = provider_json(t.messages, provider)
    if as_json:
        fields: dict[str, Any] = {
            "url": display_url(url),
            "conversation": t.title,
            "provider": provider,
            "view": view,
            "version": t.meta["version"],
            "messages": len(t.messages),
            "output": output,
        }
        if output is None:
            fields["body"] = json.loads(text)
        else:
            write_text(output, text)
        click.echo(dumps(document("export", **fields)))
        return
    if output is None:
        click.echo(text)
        return
    write_text(output, text)
    what = "view" if view else "log"
    click.echo(
        f"wrote {output} ({provider} shape; {t.title}: {num(len(t.messages))} "
        f"messages of its {what}, version {num(t.meta['version'])})"
    )
