"""The report's charts, rendered to SVG at build time by pygal.

Contract: each function returns one ``<svg>`` element as text (no XML
declaration), with no script (pygal's own is taken out), nothing fetched and
nothing random (the same chart is the same bytes): the page adds one small
script that shows the values pygal writes into each point's ``<desc>``
elements as tooltips. Chart elements carry ``xlink`` anchors ``#msg-N`` to
the message they stand for.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import pygal  # type: ignore[import-untyped]  # pygal ships no type hints
from pygal.style import Style  # type: ignore[import-untyped]  # as above

from contextwindow.report._data import THRESHOLDS, Page, Side

# pygal appends a sys.meta_path finder for its map plugins (pygal.maps.*), which
# this module does not use; that finder has no find_spec, so every later import
# in the process raises an ImportWarning. Take it out again.
sys.meta_path[:] = [
    f for f in sys.meta_path if type(f).__module__ != "pygal" or hasattr(f, "find_spec")
]

__all__ = [
    "FATE_COLOURS",
    "ROLE_COLOURS",
    "fate_treemap",
    "fit_bars",
    "message_treemap",
    "role_bars",
    "tool_bars",
    "usage_chart",
]

ROLE_COLOURS = {
    "system": "#7b61ff",
    "user": "#1f9d55",
    "assistant": "#2b6cb0",
    "tool": "#dd6b20",
}
FATE_COLOURS = {
    "kept": "#4a9c6d",
    "compacted": "#68b08a",
    "later": "#7fb89a",
    "stale": "#975a16",
    "truncated": "#d69e2e",
    "cleared": "#dd6b20",
    "deduplicated": "#b7791f",
    "summarized": "#805ad5",
    "collapsed": "#b83280",
    "dropped": "#c53030",
    "repaired": "#718096",
    "rewritten": "#3182ce",
    "added": "#38b2ac",
}
_FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"


def _style(colours: Sequence[str]) -> Any:
    return Style(
        background="transparent",
        plot_background="transparent",
        foreground="#2d3748",
        foreground_strong="#1a202c",
        foreground_subtle="#cbd5e0",
        opacity=".85",
        opacity_hover="1",
        colors=tuple(colours),
        font_family=_FONT,
        label_font_family=_FONT,
        major_label_font_family=_FONT,
        legend_font_family=_FONT,
        value_font_family=_FONT,
        tooltip_font_family=_FONT,
        title_font_family=_FONT,
        label_font_size=12,
        major_label_font_size=12,
        legend_font_size=13,
        guide_stroke_color="#e2e8f0",
        major_guide_stroke_color="#cbd5e0",
        guide_stroke_dasharray="2,0",
        major_guide_stroke_dasharray="2,0",
        stroke_width="2",
    )


def _config(series: int, columns: int = 4, **kw: Any) -> dict[str, Any]:
    """Options every chart shares, with room below for ``series`` legend entries."""
    columns = max(1, min(columns, series))
    rows = -(-series // columns)
    # pygal reserves series // columns legend rows (floor): add what it misses.
    reserved = max(series // columns, 1)
    extra = 1.5 * 13 * (rows - reserved) + 12
    base: dict[str, Any] = {
        "js": [],  # nothing fetched: the page's own script shows tooltips
        "disable_xml_declaration": True,
        "show_legend": True,
        "legend_at_bottom": True,
        "legend_at_bottom_columns": columns,
        "print_values": False,
        "truncate_legend": 70,
        "margin": 8,
        "margin_bottom": 8 + extra,
    }
    base.update(kw)
    return base


def _render(chart: Any) -> str:
    """The chart's ``<svg>``, the same for the same chart.

    pygal puts a script of its configuration in every chart (the page's own
    script does not read it), names the chart by a random id, which its
    styles repeat, and dates it in a comment: the script goes, the id is one
    made from the chart's own content, and the comment is dropped, so two
    builds of the same input are the same bytes.
    """
    svg = _PYGAL_SCRIPT.sub("", str(chart.render(is_unicode=True)))
    svg = _GENERATED.sub("", svg)
    found = _CHART_ID.search(svg)
    if found is None:
        return svg
    drawn = svg.replace(found.group(1), "")
    stable = hashlib.sha256(drawn.encode()).hexdigest()[:16]
    return svg.replace(found.group(1), stable)


_PYGAL_SCRIPT = re.compile(r"<script\b[^>]*>.*?</script>|<script\b[^>]*/>", re.S)
_GENERATED = re.compile(r"<!--Generated with pygal [^>]*?-->")
_CHART_ID = re.compile(r'id="chart-([0-9a-f-]+)"')


def _index(x: float) -> str:
    return f"#{x:.0f}"


def _fmt(n: float) -> str:
    return f"{n:,.0f}"


def _ticks(top: float, count: int = 5) -> list[float]:
    """About ``count`` round axis values from 0 to past ``top``."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    mag = 10 ** (len(str(int(raw))) - 1)
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    n = int(top // step) + 1
    return [k * step for k in range(n + 1)]


def _short(n: float) -> str:
    """Axis labels: ``950``, ``12k``, ``1.5M``."""
    a = abs(n)
    if a >= 1e6:
        return f"{n / 1e6:.3g}M"
    if a >= 1e3:
        return f"{n / 1e3:.3g}k"
    return f"{n:.0f}"


def usage_chart(page: Page) -> str:
    """The live context over the messages, against the window and its thresholds."""
    ins = page.inspection
    window = ins.context_window
    peak = max([*page.usage, *(v for _, v in page.reported), 1])
    peak = max(peak, *(c.pre_tokens or 0 for c in page.compactions), 1)
    # A huge window flattens the curve: the chart then stops above the peak
    # and says so in its title.
    top = window if peak >= 0.3 * window else int(peak * 1.25)
    if peak > window:  # over the window: the axis reaches the peak, the window drawn
        top = int(peak * 1.05)
    end = max(len(page.usage) - 1, 1)
    levels = [(p, window * p / 100) for p in (*THRESHOLDS, 100)]
    shown = [(p, v) for p, v in levels if v <= top]
    title = f"Live context against the {_fmt(window)}-token window"
    if len(shown) < len(levels):
        above = ", ".join(f"{p}%" for p, v in levels if v > top)
        title += f" (zoomed; {above} of the window lie above)"
    series: list[tuple[str, list[Any], dict[str, Any], str]] = [
        (
            "counted (messages of the live context)",
            [
                {"value": (i, v), "label": f"#{i}", "xlink": {"href": f"#msg-{i}"}}
                for i, v in enumerate(page.usage)
            ],
            {},
            "#2b6cb0",
        )
    ]
    if page.reported:
        series.append(
            (
                "input tokens the provider reported (with system prompt, tools)",
                [
                    {"value": (i, v), "label": f"#{i}", "xlink": {"href": f"#msg-{i}"}}
                    for i, v in page.reported
                ],
                {"show_dots": True, "stroke": False},
                "#dd6b20",
            )
        )
    if page.compactions:
        series.append(
            (
                "compactions recorded",
                list(_compaction_points(page, top)),
                {
                    "show_dots": True,
                    "allow_interruptions": True,
                    "stroke_style": {"width": 3},
                },
                "#c53030",
            )
        )
    for pct, level in shown:
        series.append(
            (
                f"{pct}% of the window",
                [(0, level), (end, level)],
                {"stroke_style": {"width": 2, "dasharray": "8,5"}},
                {60: "#d69e2e", 80: "#dd6b20", 90: "#c53030", 100: "#1a202c"}.get(
                    pct, "#718096"
                ),
            )
        )
    if page.limit is not None and page.limit <= top:
        series.append(
            (
                f"budget of the fit ({_fmt(page.limit)})",
                [(0, page.limit), (end, page.limit)],
                {"stroke_style": {"width": 2.5, "dasharray": "3,3"}},
                "#805ad5",
            )
        )
    chart: Any = pygal.XY(  # pygal is untyped
        **_config(
            len(series),
            2,
            width=1100,
            height=400,
            title=title,
            range=(0, top),
            xrange=(0, end),
            show_dots=False,
            value_formatter=_short,
            x_value_formatter=_index,
            x_title="message",
            y_title="tokens",
            dots_size=2.5,
        ),
        style=_style([c for *_, c in series]),
    )
    for name, values, opts, _colour in series:
        chart.add(name, values, **opts)
    return _render(chart)


def _compaction_points(page: Page, top: int) -> Iterator[Any]:
    for c in page.compactions:
        label = f"{c.trigger} compaction before #{c.index}"
        if c.pre_tokens:
            label += f", {c.pre_tokens:,} tokens before"
        yield {"value": (c.index, 0), "label": label}
        yield {"value": (c.index, min(c.pre_tokens or top, top)), "label": label}
        yield None


def role_bars(page: Page) -> str:
    """Tokens by role (with tool schemas, when sent); "No messages" for none."""
    ins = page.inspection
    stats = list(ins.by_role)
    colours = [ROLE_COLOURS.get(s.role, "#718096") for s in stats]
    n = len(stats) + (1 if ins.tool_schema_tokens else 0)
    top = max([s.tokens for s in stats] + [ins.tool_schema_tokens, 1])
    # pygal fails on the axis labels of a chart with no series (an empty
    # conversation): it gets none, and says "No messages".
    labels: dict[str, Any] = {"y_labels": _ticks(top)} if n else {}
    chart: Any = pygal.HorizontalBar(  # pygal is untyped
        **_config(
            n,
            n,
            width=540,
            height=max(200, 90 + 40 * n),
            title="Tokens by role",
            value_formatter=_short,
            no_data_text="No messages",
            **labels,
        ),
        style=_style([*colours, "#a0aec0"]),
    )
    for s in stats:
        label = f"{s.messages:,} messages, {s.tokens:,} tokens"
        chart.add(s.role, [{"value": s.tokens, "label": label}])
    if ins.tool_schema_tokens:
        chart.add("(tool schemas)", [ins.tool_schema_tokens])
    return _render(chart)


def tool_bars(page: Page) -> str:
    """Tokens by tool: what the calls cost and what their results cost."""
    stats = list(reversed(list(page.inspection.by_tool)[:15]))
    chart: Any = pygal.HorizontalStackedBar(  # pygal is untyped
        **_config(
            2,
            width=540,
            height=max(200, 100 + 26 * len(stats)),
            title="Tokens by tool (the 15 largest)"
            if len(stats) == 15
            else "Tokens by tool",
            value_formatter=_short,
            y_labels=_ticks(max([s.tokens for s in stats] + [1]), 4),
        ),
        style=_style(["#2b6cb0", "#dd6b20"]),
    )
    chart.x_labels = [s.name for s in stats]
    chart.add(
        "calls",
        [
            {
                "value": s.call_tokens,
                "label": f"{s.name}: {s.calls:,} calls, {s.call_tokens:,} tokens",
            }
            for s in stats
        ],
    )
    chart.add(
        "results",
        [
            {
                "value": s.result_tokens,
                "label": f"{s.name}: {s.result_tokens:,} tokens, {s.errors:,} errors",
            }
            for s in stats
        ],
    )
    return _render(chart)


def message_treemap(page: Page) -> str:
    """Every message as a tile sized by its tokens, by role; a tile links to it."""
    s = page.original
    roles = list(dict.fromkeys(s.roles))
    chart: Any = pygal.Treemap(  # pygal is untyped
        **_config(
            len(roles),
            width=1100,
            height=460,
            title="Tokens by message (click a tile to read it)",
            value_formatter=_fmt,
        ),
        style=_style([ROLE_COLOURS.get(r, "#718096") for r in roles]),
    )
    for role in roles:
        chart.add(role, list(_tiles(s, [r == role for r in s.roles])))
    return _render(chart)


def fate_treemap(page: Page) -> str:
    """Every original message as a tile, coloured by what became of it."""
    s = page.original
    fates = list(dict.fromkeys(r.fate for r in page.rows if r.before is not None))
    fate_of = {r.before: r.fate for r in page.rows if r.before is not None}
    chart: Any = pygal.Treemap(  # pygal is untyped
        **_config(
            len(fates),
            5,
            width=1100,
            height=420,
            title="What became of each original message (click a tile to read it)",
            value_formatter=_fmt,
        ),
        style=_style([FATE_COLOURS.get(f, "#718096") for f in fates]),
    )
    for fate in fates:
        keep = [fate_of.get(i) == fate for i in range(len(s.tokens))]
        chart.add(fate, list(_tiles(s, keep)))
    return _render(chart)


def _tiles(s: Side, keep: Sequence[bool]) -> Iterator[dict[str, Any]]:
    """A tile for each message ``keep`` flags, of any tokens."""
    for i, n in enumerate(s.tokens):
        if keep[i] and n > 0:
            yield {
                "value": n,
                "label": f"#{i} {s.roles[i]}: {s.previews[i][:60]}",
                "xlink": {"href": f"#msg-{i}"},
            }


def fit_bars(page: Page) -> str:
    """The original request against what is sent, the saving split by kind."""
    after = page.after
    if after is None:
        raise ValueError("fit_bars needs a fit or a view")
    saved: dict[str, int] = {}
    for c in page.changes:
        if c.saved > 0:  # a repair's cost shows in what is sent
            saved[c.kind] = saved.get(c.kind, 0) + c.saved
    if not page.changes:  # a stored view: the difference is all there is
        saved["not in the view"] = max(page.original.total - after.total, 0)
    kinds = list(saved)
    colours = ["#4a9c6d", *(FATE_COLOURS.get(k, "#c53030") for k in kinds)]
    chart: Any = pygal.HorizontalStackedBar(  # pygal is untyped
        **_config(
            len(kinds) + 1,
            5,
            width=1100,
            height=250,
            title=f"Tokens: the original against the {page.after_label}",
            value_formatter=_short,
        ),
        style=_style(colours),
    )
    chart.x_labels = [page.after_label, "original"]
    kept = page.original.total - sum(saved.values())
    chart.add(
        "sent",
        [
            {"value": after.total, "label": f"{after.total:,} tokens sent"},
            {"value": max(kept, 0), "label": f"{max(kept, 0):,} tokens kept"},
        ],
    )
    for k in kinds:
        chart.add(
            f"{k} (saved)",
            [None, {"value": saved[k], "label": f"{saved[k]:,} tokens saved"}],
        )
    return _render(chart)
