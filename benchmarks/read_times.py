"""How long reading costs: the model table, and the largest Claude Code session.

Usage::

    python benchmarks/read_times.py

Reports, best of 5 each:

- loading the shipped model table and resolving ``gpt-4o`` in a fresh
  ``Registry``, against the floor of parsing the same JSON file with ``json``;
- ``read_transcript`` on the largest Claude Code session of the shared data
  (record parsing, grouping by ``message.id``, conversion to messages), against
  the floor a hand-rolled reader cannot beat: ``json.loads`` on every line.
"""

from __future__ import annotations

import json
from importlib import resources

from _data import best_of, data_dir

from contextwindow.models import Registry
from contextwindow.transcripts import read_transcript


def main() -> None:
    table = resources.files("contextwindow.models") / "data" / "models.json"
    raw = table.read_bytes()
    load = best_of(lambda: Registry().get("gpt-4o"), 5)
    parse = best_of(lambda: json.loads(raw), 5)
    print(f"model table ({len(raw) / 1e6:.2f} MB)")
    print(f"  Registry().get('gpt-4o')   {load * 1e3:8.1f} ms")
    print(f"  json.loads of the file     {parse * 1e3:8.1f} ms  (x{load / parse:.1f})")

    sessions = (data_dir() / "claude_code_sessions").glob("*.jsonl")
    biggest = max(sessions, key=lambda p: p.stat().st_size)
    text = biggest.read_text()
    ours = best_of(lambda: read_transcript(biggest), 5)
    floor = best_of(lambda: [json.loads(ln) for ln in text.split("\n") if ln], 5)
    n = len(read_transcript(biggest).messages)
    print(f"\nlargest Claude Code session ({len(text) / 1e6:.1f} MB, {n} messages)")
    print(f"  read_transcript            {ours * 1e3:8.1f} ms")
    print(f"  json.loads of every line   {floor * 1e3:8.1f} ms  (x{ours / floor:.1f})")


if __name__ == "__main__":
    main()
