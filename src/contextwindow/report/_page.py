"""The report's HTML page: one self-contained file, opened offline.

Contract: ``page_html`` returns a complete HTML document holding its styles,
its charts (SVG from ``_charts``) and one small script (tooltips, opening
the message a link points to); it links to nothing outside itself. Every
text from the conversation is HTML-escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from contextwindow.report import _charts
from contextwindow.report._data import Page, Row, Side

__all__ = ["page_html"]

_CSS = """
:root{--fg:#1a202c;--muted:#4a5568;--line:#e2e8f0;--bg:#f7fafc;--card:#fff}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;
color:var(--fg);background:var(--bg)}
header{padding:20px 32px 12px;background:#1a365d;color:#fff}
header h1{margin:0 0 4px;font-size:22px;font-weight:600;word-break:break-all}
header p{margin:0;color:#cbd5e0}
main{padding:16px 32px 48px;max-width:1240px}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;
padding:16px 20px;margin:16px 0}
h2{font-size:17px;margin:0 0 10px}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:0}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;
padding:10px 16px;min-width:150px}
.card b{display:block;font-size:20px}
.card span{color:var(--muted);font-size:12px}
.card.warn b{color:#c53030}
.row2{display:grid;grid-template-columns:1fr 1fr;gap:16px}
.chart svg{width:100%;height:auto;display:block}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid var(--line);
vertical-align:top}
th{background:#edf2f7;position:sticky;top:0}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.p{color:var(--muted);max-width:420px;overflow:hidden;text-overflow:ellipsis;
white-space:nowrap}
.scroll{max-height:560px;overflow:auto;border:1px solid var(--line)}
table.sbs{table-layout:fixed}
table.sbs td.p{max-width:none}
.badge{display:inline-block;padding:1px 7px;border-radius:9px;color:#fff;
font-size:12px;white-space:nowrap}
details{border-bottom:1px solid var(--line);padding:3px 0}
details summary{cursor:pointer;white-space:nowrap;overflow:hidden;
text-overflow:ellipsis}
details pre{white-space:pre-wrap;word-break:break-word;background:#f1f5f9;
padding:10px;border-radius:6px;max-height:480px;overflow:auto;font-size:12px}
details:target,details.hit{background:#fefcbf}
a{color:#2b6cb0}
.muted{color:var(--muted)}
#tip{position:fixed;pointer-events:none;background:#1a202c;color:#fff;
padding:4px 8px;border-radius:4px;font-size:12px;max-width:420px;display:none;
z-index:9}
"""

_JS = """
(function(){
  var tip=document.getElementById('tip');
  document.addEventListener('mouseover',function(e){
    var t=e.target.closest&&e.target.closest('.tooltip-trigger');
    if(!t){tip.style.display='none';return;}
    var g=t.parentNode,parts=[];
    ['label','value'].forEach(function(c){
      var d=g.querySelector('desc.'+c);if(d&&d.textContent)parts.push(d.textContent);
    });
    var s=g.closest('.series'),n=s&&s.getAttribute('data-name');
    if(n)parts.unshift(n);
    if(!parts.length){tip.style.display='none';return;}
    tip.textContent=parts.join(' \\u2014 ');tip.style.display='block';
  });
  document.addEventListener('mousemove',function(e){
    tip.style.left=(e.clientX+14)+'px';tip.style.top=(e.clientY+10)+'px';
  });
  function openTarget(){
    var id=decodeURIComponent(location.hash.slice(1));
    var el=id&&document.getElementById(id);
    if(el&&el.tagName==='DETAILS'){
      el.open=true;el.classList.add('hit');el.scrollIntoView({block:'center'});
    }
  }
  window.addEventListener('hashchange',openTarget);openTarget();
  document.querySelectorAll('svg .series').forEach(function(s,k){
    var svg=s.closest('svg'),names=svg.querySelectorAll('.legends .legend text');
    var m=/serie-(\\d+)/.exec(s.getAttribute('class')||'');
    if(m&&names[+m[1]])s.setAttribute('data-name',names[+m[1]].textContent);
  });
})();
"""


def _n(x: int) -> str:
    return f"{x:,}"


def _card(value: str, label: str, warn: bool = False) -> str:
    cls = "card warn" if warn else "card"
    return (
        f'<div class="{cls}"><b>{escape(value)}</b><span>{escape(label)}</span></div>'
    )


def _badge(fate: str) -> str:
    colour = _charts.FATE_COLOURS.get(fate, "#718096")
    return f'<span class="badge" style="background:{colour}">{escape(fate)}</span>'


def _chart(svg: str, name: str) -> str:
    return f'<div class="chart" data-chart="{name}">{svg}</div>'


def _summary(page: Page) -> str:
    ins = page.inspection
    left = ins.remaining
    cards = [
        _card(_n(ins.tokens), f"tokens ({'exact' if ins.exact else 'approximate'})"),
        _card(f"{100 * ins.usage:.1f}%", f"of the {_n(ins.context_window)} window"),
        _card(
            f"{_n(abs(left))} {'over' if left < 0 else 'left'}",
            "in the window",
            warn=left < 0,
        ),
        _card(_n(ins.messages), _plural(ins.messages, "message")),
        _card(_n(ins.units), _plural(ins.units, "unit") + " (a tool exchange is one)"),
    ]
    if page.compactions:
        cards.append(_card(_n(len(page.compactions)), "compactions recorded"))
    if page.reported:
        cards.append(_card(_n(page.reported[-1][1]), "input tokens last reported"))
    if ins.incomplete_units:
        cards.append(
            _card(_n(ins.incomplete_units), "units a provider would reject", True)
        )
    return '<div class="cards">' + "".join(cards) + "</div>"


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"


def _messages(side: Side, prefix: str, title: str) -> str:
    items: list[str] = []
    for i, (role, n, prev, text) in enumerate(
        zip(side.roles, side.tokens, side.previews, side.texts, strict=True)
    ):
        items.append(
            f'<details id="{prefix}-{i}"><summary><b>#{i}</b> {escape(role)} · '
            f'{_n(n)} tokens · <span class="muted">{escape(prev)}</span></summary>'
            f"<pre>{escape(text)}</pre></details>"
        )
    return (
        f'<section id="{prefix}-list"><h2>{escape(title)} '
        f'<span class="muted">({_n(len(side.roles))})</span></h2>'
        f'<div class="scroll" data-messages="{prefix}">{"".join(items)}</div></section>'
    )


def _changes(page: Page) -> str:
    rows: list[str] = []
    for k, c in enumerate(page.changes):
        rows.append(
            f'<tr data-change="{k}"><td>{_badge(c.kind)}</td><td>{escape(c.stage)}</td>'
            f'<td><a href="#msg-{c.index}">#{c.index}</a></td>'
            f'<td>{escape(c.what)}</td><td class="n">{_n(c.units)}</td>'
            f'<td class="n">{_n(c.tokens_before)}</td>'
            f'<td class="n">{_n(c.tokens_after)}</td>'
            f'<td class="n">{_n(c.saved)}</td></tr>'
        )
    totals: dict[str, list[int]] = {}
    for c in page.changes:
        t = totals.setdefault(c.kind, [0, 0])
        t[0] += 1
        t[1] += c.saved
    foot = "".join(
        f"<tr><td>{_badge(kind)}</td><td colspan=6>{_n(n)} "
        f"{_plural(n, 'change')}</td><td class='n'>{_n(saved)}</td></tr>"
        for kind, (n, saved) in totals.items()
    )
    head = (
        "<tr><th>kind</th><th>stage</th><th>message</th><th>what</th>"
        "<th class='n'>units</th><th class='n'>before</th><th class='n'>after</th>"
        "<th class='n'>saved</th></tr>"
    )
    return (
        f'<section id="changes"><h2>Every change <span class="muted">'
        f"({_n(len(page.changes))})</span></h2>"
        f'<div class="scroll"><table id="change-list"><thead>{head}</thead>'
        f"<tbody>{''.join(rows)}</tbody><tfoot>{foot}</tfoot></table></div></section>"
    )


def _cell(side: Side, i: int | None, prefix: str) -> str:
    if i is None:
        return '<td class="n">&ndash;</td><td class="p muted">not sent</td>'
    return (
        f'<td class="n"><a href="#{prefix}-{i}">#{i}</a> {_n(side.tokens[i])}</td>'
        f'<td class="p" title="{escape(side.previews[i])}">'
        f"{escape(side.previews[i])}</td>"
    )


def _side_by_side(page: Page, rows: Sequence[Row], after: Side) -> str:
    body: list[str] = []
    for r in rows:
        role = (
            page.original.roles[r.before]
            if r.before is not None
            else (after.roles[r.after] if r.after is not None else "")
        )
        left = (
            _cell(page.original, r.before, "msg")
            if r.before is not None
            else '<td class="n">&ndash;</td><td class="p muted">(new)</td>'
        )
        body.append(
            f'<tr data-fate="{escape(r.fate)}"><td>{_badge(r.fate)}</td>'
            f"<td>{escape(role)}</td>{left}{_cell(after, r.after, 'sent')}</tr>"
        )
    head = (
        "<tr><th>fate</th><th>role</th><th class='n'>original</th><th></th>"
        f"<th class='n'>{escape(page.after_label)}</th><th></th></tr>"
    )
    return (
        '<section id="side-by-side"><h2>Original and '
        f"{escape(page.after_label)}, side by side</h2>"
        '<div class="scroll"><table class="sbs"><colgroup>'
        '<col style="width:110px"><col style="width:90px">'
        '<col style="width:100px"><col><col style="width:100px"><col>'
        f"</colgroup><thead>{head}</thead>"
        f"<tbody>{''.join(body)}</tbody></table></div></section>"
    )


def _fit_section(page: Page) -> str:
    after = page.after
    if after is None:
        return ""
    counts: dict[str, int] = {}
    for r in page.rows:
        counts[r.fate] = counts.get(r.fate, 0) + 1
    cards = [
        _card(f"{_n(page.original.total)} → {_n(after.total)}", "tokens"),
        _card(f"{_n(len(page.original.roles))} → {_n(len(after.roles))}", "messages"),
    ]
    if page.limit is not None:
        cards.append(_card(_n(page.limit), "budget", warn=after.total > page.limit))
    cards += [_card(_n(n), fate) for fate, n in counts.items()]
    parts = [
        f'<section id="fit"><h2>Original against {escape(page.after_label)}</h2>',
        '<div class="cards">' + "".join(cards) + "</div>",
        _chart(_charts.fit_bars(page), "fit"),
        _chart(_charts.fate_treemap(page), "fates"),
        "</section>",
    ]
    if page.changes:
        parts.append(_changes(page))
    parts.append(_side_by_side(page, page.rows, after))
    return "".join(parts)


def page_html(page: Page) -> str:
    """The whole report as one HTML document."""
    ins = page.inspection
    charts = [
        f'<section id="usage"><h2>Usage over the conversation</h2>'
        f"{_chart(_charts.usage_chart(page), 'usage')}</section>",
        '<section id="composition"><h2>What takes the room</h2><div class="row2">',
        _chart(_charts.role_bars(page), "roles"),
        _chart(_charts.tool_bars(page), "tools")
        if ins.by_tool
        else '<p class="muted">No tool calls.</p>',
        "</div>",
        _chart(_charts.message_treemap(page), "messages"),
        "</section>",
    ]
    blocks = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(page.title)} · contextwindow report</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<header><h1>{escape(page.title)}</h1><p>{escape(page.subtitle)}</p></header>",
        "<main>",
        _summary(page),
        *charts,
        _fit_section(page),
        _messages(page.original, "msg", "Messages"),
    ]
    if page.after is not None:
        blocks.append(
            _messages(page.after, "sent", f"Messages sent ({page.after_label})")
        )
    blocks += [
        "</main>",
        '<div id="tip"></div>',
        f"<script>{_JS}</script>",
        "</body></html>",
    ]
    return "\n".join(blocks)
