"""The proxy's counters, written as Prometheus text (no dependency).

A request's ``endpoint`` label is its path when that is one of the
``endpoints`` named (the APIs the proxy reads), else ``other``: the series
are a fixed few whatever paths clients send. Label values are escaped as the
text format wants (backslash, double quote, line feed).

Example:
    >>> m = Metrics()
    >>> m.request("/v1/messages", 200, tokens_in=120, forwarded=80, compactions=1)
    >>> m.upstream(0.25)
    >>> print(m.text().splitlines()[2])
    contextwindow_proxy_requests_total{endpoint="/v1/messages",status="200"} 1
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable

from contextwindow.proxy._shapes import APIS

__all__ = ["Metrics"]


class Metrics:
    r"""Requests, tokens in and forwarded, compactions, upstream latency, errors.

    ``endpoints``: the paths counted by name (default: the APIs read).

    Example:
        >>> m = Metrics()
        >>> m.request('/x"} 1\nfake_total{a="', 404)
        >>> m.text().splitlines()[2]
        'contextwindow_proxy_requests_total{endpoint="other",status="404"} 1'
    """

    def __init__(self, endpoints: Iterable[str] = APIS) -> None:
        self._endpoints = frozenset(endpoints)
        self._lock = threading.Lock()
        self._requests: Counter[tuple[str, int]] = Counter()
        self._errors: Counter[str] = Counter()
        self._tokens_in = 0
        self._forwarded = 0
        self._compactions = 0
        self._rewritten = 0
        self._upstream_sum = 0.0
        self._upstream_count = 0
        self._usage_in = 0
        self._usage_counted = 0

    def request(
        self,
        endpoint: str,
        status: int,
        *,
        tokens_in: int = 0,
        forwarded: int = 0,
        compactions: int = 0,
        rewritten: bool = False,
    ) -> None:
        """Count one request served (to ``endpoint``, a path)."""
        if endpoint not in self._endpoints:
            endpoint = "other"
        with self._lock:
            self._requests[endpoint, status] += 1
            self._tokens_in += tokens_in
            self._forwarded += forwarded
            self._compactions += compactions
            self._rewritten += rewritten

    def error(self, kind: str) -> None:
        """Count one error of ``kind`` (``upstream_unreachable``, ``too_large``)."""
        with self._lock:
            self._errors[kind] += 1

    def upstream(self, seconds: float) -> None:
        """Record the time an upstream took to answer (to its headers)."""
        with self._lock:
            self._upstream_sum += seconds
            self._upstream_count += 1

    def usage(self, reported: int, counted: int) -> None:
        """Record the input tokens an upstream reported against the proxy's count."""
        with self._lock:
            self._usage_in += reported
            self._usage_counted += counted

    def text(self) -> str:
        """Everything, in the Prometheus text exposition format."""
        p = "contextwindow_proxy_"
        with self._lock:
            lines = [
                f"# HELP {p}requests_total Requests served, by endpoint and status.",
                f"# TYPE {p}requests_total counter",
            ]
            for (endpoint, status), n in sorted(self._requests.items()):
                lines.append(
                    f'{p}requests_total{{endpoint="{_label(endpoint)}",'
                    f'status="{status}"}} {n}'
                )
            for name, value, what in (
                (
                    "tokens_in_total",
                    self._tokens_in,
                    "Tokens of the requests received.",
                ),
                (
                    "tokens_forwarded_total",
                    self._forwarded,
                    "Tokens forwarded upstream.",
                ),
                ("compactions_total", self._compactions, "Compactions made."),
                ("rewritten_total", self._rewritten, "Requests forwarded fitted."),
                (
                    "upstream_usage_input_tokens_total",
                    self._usage_in,
                    "Input tokens the upstreams reported.",
                ),
                (
                    "upstream_usage_counted_tokens_total",
                    self._usage_counted,
                    "The proxy's count of the same requests.",
                ),
            ):
                lines += [
                    f"# HELP {p}{name} {what}",
                    f"# TYPE {p}{name} counter",
                    f"{p}{name} {value}",
                ]
            lines += [
                f"# HELP {p}upstream_seconds Time to the upstream's response headers.",
                f"# TYPE {p}upstream_seconds summary",
                f"{p}upstream_seconds_sum {self._upstream_sum:.6f}",
                f"{p}upstream_seconds_count {self._upstream_count}",
                f"# HELP {p}errors_total Errors, by kind.",
                f"# TYPE {p}errors_total counter",
            ]
            for kind, n in sorted(self._errors.items()):
                lines.append(f'{p}errors_total{{kind="{_label(kind)}"}} {n}')
        return "\n".join(lines) + "\n"


def _label(value: str) -> str:
    r"""``value`` as a label value of the text format (between its quotes).

    Example:
        >>> print(_label('a\\b "c"\nd'))
        a\\b \"c\"\nd
    """
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
