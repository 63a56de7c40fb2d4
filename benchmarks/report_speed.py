"""How long the HTML report of the largest Claude Code session takes, and its size.

Usage::

    python benchmarks/report_speed.py

Reports, median of 5 each, in one process:

- ``contextwindow report`` of the largest shared session, end to end through
  the command (reading, counting, inspecting, rendering the charts, writing
  the file): the target is under 2 s and under 5 MB;
- ``contextwindow inspect`` of the same file through the command, its peer:
  the same reading and counting without the page, so the ratio is what the
  page itself adds.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from _data import data_dir
from click.testing import CliRunner

from contextwindow.cli import main as cli


def _median(args: list[str], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = CliRunner().invoke(cli, args)
        times.append(time.perf_counter() - start)
        if result.exit_code != 0:
            raise SystemExit(result.output)
    return statistics.median(times)


def main() -> None:
    sessions = (data_dir() / "claude_code_sessions").glob("*.jsonl")
    biggest = max(sessions, key=lambda p: p.stat().st_size)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.html"
        report = _median(["report", str(biggest), "-o", str(out)])
        size = out.stat().st_size
    inspect = _median(["inspect", str(biggest)])
    mb = biggest.stat().st_size / 1e6
    print(f"largest session: {biggest.name} ({mb:.1f} MB)")
    print(f"  report   {report:6.2f} s  {size / 1e6:5.2f} MB of HTML")
    print(f"  inspect  {inspect:6.2f} s  (report / inspect: x{report / inspect:.2f})")


if __name__ == "__main__":
    main()
