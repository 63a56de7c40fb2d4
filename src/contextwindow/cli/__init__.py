"""The ``contextwindow`` command: inspect, fit, report, export; list models.

Contract: this package is the only code that prints. Library errors
(``ContextWindowError``, ``BudgetError`` included) become one-line
``Error: …`` messages and a non-zero exit; library warnings become
``warning: …`` lines on stderr. ``fit`` writes the fitted conversation to
``-o`` (its report to stdout) or, without ``-o``, to stdout (its report to
stderr), so that it pipes.

Each command lives in its own module (``_inspect``, ``_fit``, ``_export``,
``_models``, ``_report``)
and is added to ``main`` here, so that no command module imports this one;
what they share (``cli_errors`` among it) is in ``_common``.
"""

from __future__ import annotations

import click

from contextwindow import __version__
from contextwindow.cli._export import export_cmd
from contextwindow.cli._fit import fit_cmd
from contextwindow.cli._inspect import inspect_cmd
from contextwindow.cli._models import models_cmd
from contextwindow.cli._report import report_cmd

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
