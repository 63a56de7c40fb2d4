"""``python -m contextwindow``: the same as the ``contextwindow`` command."""

from contextwindow.cli import main

main(prog_name="contextwindow")
