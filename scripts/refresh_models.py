"""Refresh ``src/contextwindow/models/data/models.json`` from litellm's model map.

The source is ``litellm/model_prices_and_context_window_backup.json`` (MIT,
Copyright (c) 2023 Berri AI), read out of the litellm wheel on PyPI with
``zipfile``; litellm itself is never installed or imported. Usage::

    python scripts/refresh_models.py                  # pip download the newest wheel
    python scripts/refresh_models.py --from x.whl     # a wheel already at hand
    python scripts/refresh_models.py --from x.json --litellm-version 1.2.3

What is kept: every entry whose ``mode`` is ``chat``, ``responses`` or
``completion`` and that has a context window, with only the fields the registry
uses (``provider``, ``context_window``, ``max_output_tokens``, and the
``function_calling`` / ``vision`` flags when litellm states them). The context
window is litellm's ``max_input_tokens``; where that is missing, its
``max_tokens`` (older entries used it for the window) and the entry is marked
``"window_from": "max_tokens"``. Entries with neither, or with a window that is
not a positive integer, are left out. Output is one entry per line, sorted, so
refreshes diff well. A wheel's ``LICENSE`` is copied to ``models/data/NOTICE``.

Aliases are kept as litellm's own loader serves them
(``get_model_cost_map._expand_model_aliases``): a row holding only
``"alias_of": target`` is the target's entry under the alias's name, marked
``"alias_of": target``; so is each name in a row's ``aliases`` list. An alias
that is itself a model entry, that another row already claims, or whose target
is missing or is an alias too, is left out, as litellm leaves it out.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "src" / "contextwindow" / "models" / "data"
MEMBER = "litellm/model_prices_and_context_window_backup.json"
MODES = ("chat", "responses", "completion")
SOURCE_URL = (
    "https://github.com/BerriAI/litellm/blob/main/model_prices_and_context_window.json"
)


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and value > 0:
        return value
    return None


def trim_entry(raw: Mapping[str, Any]) -> dict[str, Any] | None:
    """Return the kept fields of one litellm entry, or None to leave it out."""
    if raw.get("mode") not in MODES:
        return None
    window = _positive_int(raw.get("max_input_tokens"))
    entry: dict[str, Any] = {"provider": str(raw.get("litellm_provider") or "unknown")}
    if window is None:
        window = _positive_int(raw.get("max_tokens"))
        if window is None:
            return None
        entry["window_from"] = "max_tokens"
    entry["context_window"] = window
    entry["max_output_tokens"] = _positive_int(raw.get("max_output_tokens"))
    if raw.get("mode") != "chat":
        entry["mode"] = raw["mode"]
    for src, dst in (
        ("supports_function_calling", "function_calling"),
        ("supports_vision", "vision"),
    ):
        if isinstance(raw.get(src), bool):
            entry[dst] = raw[src]
    return entry


def alias_targets(raw: Mapping[str, Any]) -> dict[str, str]:
    """litellm's aliases, each to the entry it is served as.

    The rules of litellm's loader (``_expand_model_aliases``): a row's
    ``aliases`` list is claimed first, in map order, then ``alias_of`` rows; a
    name that is a model entry or already claimed is skipped, and so is an
    ``alias_of`` whose target is missing or is an alias row itself. Without
    this the alias names would be unknown, or worse, reduced to an older
    model's name (``dashscope/qwen-max-latest`` to ``dashscope/qwen-max``).
    """
    rows = {k: v for k, v in raw.items() if isinstance(v, Mapping)}
    pointers = {k: v["alias_of"] for k, v in rows.items() if "alias_of" in v}
    pointers = {k: t for k, t in pointers.items() if isinstance(t, str)}
    owners: dict[str, str] = {}
    for name, value in rows.items():
        aliases = value.get("aliases")
        if name in pointers or not isinstance(aliases, list):
            continue
        for alias in aliases:
            if not isinstance(alias, str) or alias in owners:
                continue
            if alias not in raw or alias in pointers:  # a model keeps its name
                owners[alias] = name
    for alias, target in pointers.items():
        if target in rows and target not in pointers and alias not in owners:
            owners[alias] = target
    return owners


def trim(raw: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Trim litellm's whole map: kept entries by name, sorted by name.

    An alias gets its target's kept entry, marked ``"alias_of": target``; an
    alias of an entry that is not kept (an embedding model) is not kept either.
    """
    kept: dict[str, dict[str, Any]] = {}
    for name, value in raw.items():
        if name == "sample_spec" or not isinstance(value, Mapping):
            continue
        if isinstance(value.get("alias_of"), str):
            continue  # served as its target, or not at all
        entry = trim_entry(value)
        if entry is not None:
            kept[name] = entry
    for alias, target in alias_targets(raw).items():
        if target in kept:
            kept[alias] = {**kept[target], "alias_of": target}
    return {name: kept[name] for name in sorted(kept)}


def render(models: Mapping[str, Mapping[str, Any]], *, version: str, date: str) -> str:
    """The models.json text: a header, then one model per line."""
    header = {
        "_source": (
            f"litellm {version} (PyPI wheel), {MEMBER}; upstream {SOURCE_URL}; "
            f"retrieved {date} by scripts/refresh_models.py"
        ),
        "_license": (
            "MIT License, Copyright (c) 2023 Berri AI; the full text is in NOTICE "
            "beside this file"
        ),
        "_fields": (
            "context_window is litellm's max_input_tokens, or its max_tokens where "
            'max_input_tokens is missing (marked "window_from": "max_tokens"); '
            "max_output_tokens is null when litellm does not state it; mode is "
            "given when it is not chat; alias_of names the entry an alias of "
            "litellm's is served as (its fields are that entry's)"
        ),
        "litellm_version": version,
        "retrieved": date,
    }
    lines = ["{"]
    for key, value in header.items():
        lines.append(f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False)},")
    lines.append('"models": {')
    items = [
        f"{json.dumps(name, ensure_ascii=False)}: "
        f"{json.dumps(entry, ensure_ascii=False, separators=(', ', ': '))}"
        for name, entry in models.items()
    ]
    lines.append(",\n".join(items))
    lines.append("}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def read_wheel(wheel: Path) -> tuple[dict[str, Any], str, str | None]:
    """The model map, the litellm version and the LICENSE text from a wheel."""
    with zipfile.ZipFile(wheel) as zf:
        raw = json.loads(zf.read(MEMBER))
        licence = None
        for info in zf.infolist():
            if re.search(r"\.dist-info/(licenses/)?LICENSE[^/]*$", info.filename):
                licence = zf.read(info).decode("utf-8")
                break
    match = re.match(r"litellm-([^-]+)-", wheel.name)
    version = match.group(1) if match else "unknown"
    return raw, version, licence


def download_wheel(dest: Path, spec: str) -> Path:
    """``pip download --no-deps`` one litellm wheel into ``dest``."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "-d",
            str(dest),
            spec,
        ],
        check=True,
    )
    wheels = sorted(dest.glob("litellm-*.whl"))
    if not wheels:
        raise SystemExit(f"pip download left no litellm wheel in {dest}")
    return wheels[-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--from",
        dest="source",
        type=Path,
        help="a litellm wheel (.whl) or the model map JSON itself",
    )
    parser.add_argument(
        "--litellm-version",
        help="the version to record when --from is a JSON file",
    )
    parser.add_argument(
        "--spec", default="litellm", help="pip requirement to download (litellm)"
    )
    parser.add_argument("--date", help="retrieval date to record (default: today, UTC)")
    parser.add_argument("--out", type=Path, default=DATA, help="output folder")
    args = parser.parse_args(argv)

    licence: str | None = None
    if args.source is None:
        with tempfile.TemporaryDirectory() as tmp:
            wheel = download_wheel(Path(tmp), args.spec)
            raw, version, licence = read_wheel(wheel)
    elif args.source.suffix == ".whl":
        raw, version, licence = read_wheel(args.source)
    else:
        raw = json.loads(args.source.read_text(encoding="utf-8"))
        version = args.litellm_version or "unknown"
    date = args.date or dt.datetime.now(dt.timezone.utc).date().isoformat()

    models = trim(raw)
    args.out.mkdir(parents=True, exist_ok=True)
    text = render(models, version=version, date=date)
    (args.out / "models.json").write_text(text, encoding="utf-8")
    if licence is not None:
        notice = (
            "models.json is derived from litellm's "
            "model_prices_and_context_window_backup.json\n"
            f"(litellm {version}, https://github.com/BerriAI/litellm), "
            "under this license:\n\n" + licence.strip() + "\n"
        )
        (args.out / "NOTICE").write_text(notice, encoding="utf-8")
    print(
        f"wrote {len(models)} models (litellm {version}, {date}) to "
        f"{args.out / 'models.json'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
