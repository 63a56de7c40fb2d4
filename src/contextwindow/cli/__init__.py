"""The ``contextwindow`` command: inspect, fit, report, export; list models.

Contract: this package is the only code that prints. Library errors
(``ContextWindowError``, ``BudgetError`` included) become one-line
``Error: …`` messages and a non-zero exit; library warnings become
``warning: …`` lines on stderr. With ``--json``, every output is one JSON
document (``_json``: a ``schema_version``, the command, and the schema
shipped as ``schema.json``), errors included: on stdout, with the same exit;
an unexpected exception (a bug) too, with exit 1 and its traceback on stderr.
``fit`` writes the fitted conversation to ``-o`` (its report to stdout) or,
without ``-o``, to stdout (its report to stderr), so that it pipes.

Each command lives in its own module (``_inspect``, ``_fit``, ``_export``,
``_models``, ``_report``, ``_proxy``)
and is added to ``main`` here, so that no command module imports this one;
what they share (``cli_errors`` among it) is in ``_common``.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Sequence
from typing import Any

import click

from contextwindow import __version__
from contextwindow.cli._export import export_cmd
from contextwindow.cli._fit import fit_cmd
from contextwindow.cli._inspect import inspect_cmd
from contextwindow.cli._json import SCHEMA_VERSION, dumps, error_document
from contextwindow.cli._json import schema as json_schema
from contextwindow.cli._models import models_cmd
from contextwindow.cli._proxy import proxy_cmd
from contextwindow.cli._report import report_cmd

__all__ = ["SCHEMA_VERSION", "json_schema", "main"]


class _Main(click.Group):
    """The command group: every error is one line (under ``--json``, JSON on stdout).

    Under ``--json`` a bug's exception is an error document too (exit 1), its
    traceback on stderr; without it, Python shows the traceback as usual.

    Click would print a usage error with the usage and a hint around it; a
    wrong value here is one line naming the value and what is accepted.
    """

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        if not standalone_mode:
            return super().main(argv, prog_name, complete_var, standalone_mode, **extra)
        as_json = "--json" in argv
        command = argv[0] if argv and argv[0] in self.commands else None
        try:
            code = super().main(argv, prog_name, complete_var, False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:
            exc.show()  # the help, as click shows it
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            kind = "usage" if isinstance(exc, click.UsageError) else "error"
            message = " ".join(_one_line(exc).split())
            if as_json:
                doc = error_document(command, kind, message, exc.exit_code)
                click.echo(dumps(doc))
            else:
                click.echo(f"Error: {message}", err=True)
            sys.exit(exc.exit_code)
        except click.Abort:
            if as_json:
                click.echo(dumps(error_document(command, "error", "aborted", 1)))
            else:
                click.echo("Aborted!", err=True)
            sys.exit(1)
        except Exception as exc:
            # A bug. Its traceback is what a report of it needs, so it is
            # shown (on stderr); under --json stdout still gets its document.
            if not as_json:
                raise
            traceback.print_exc()
            message = " ".join(f"{type(exc).__name__}: {exc}".split())
            doc = error_document(
                command,
                "error",
                f"internal error, a bug in contextwindow (please report it with "
                f"the traceback on stderr): {message}",
                1,
            )
            click.echo(dumps(doc))
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def _one_line(exc: click.ClickException) -> str:
    """The message click would print, without its usage lines and prefix."""
    if isinstance(exc, click.BadParameter) and exc.param_hint is None and exc.param:
        exc.param_hint = exc.param.get_error_hint(exc.ctx) if exc.ctx else None
    text = exc.format_message()
    return text


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="contextwindow")
def main() -> None:
    """Keep LLM conversations inside their model's context window.

    Reads OpenAI chat, Anthropic Messages and OpenAI Responses transcripts,
    JSONL of messages, Claude Code sessions and tau-bench trajectory files;
    the format is detected automatically. Stored conversations are read by
    URL: sqlite:///chats.db#ID, postgresql://...#ID, redis://...#ID.
    """


main.add_command(inspect_cmd)
main.add_command(fit_cmd)
main.add_command(export_cmd)
main.add_command(models_cmd)
main.add_command(report_cmd)
main.add_command(proxy_cmd)
