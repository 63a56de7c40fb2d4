"""``contextwindow proxy``: serve the fitting proxy (``contextwindow.proxy``).

Contract: the options are checked before anything is served (a bad strategy,
store URL, upstream URL, ``--model-window`` or key variable is one
``Error: …`` line, a URL shown with its credentials masked, an
``--api-key-env`` that is no variable's name not shown at all);
binding beyond loopback needs ``--api-key-env``, so that the proxy is no
open relay. The first line on stderr is the address served, as a client
writes it: the port the system chose for ``--port 0``, an IPv6 address in
brackets. The command then serves until interrupted, one JSON line per
request on stderr.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
import sys
from urllib.parse import urlsplit

import click

from contextwindow._redact import display_url
from contextwindow.cli._common import cli_errors
from contextwindow.errors import ContextWindowError
from contextwindow.strategies.names import parse_strategy


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_upstream(url: str, option: str) -> None:
    """Refuse an upstream that is no http(s) URL with a host: a usage error.

    Checked here, not at the first request (each would get a 502). What is
    no URL at all is not shown: it may be a key given by mistake.
    """
    try:
        parts = urlsplit(url)
        good = parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018  # raises ValueError for a port out of range
    except ValueError:
        good = False
    if not good:
        what = f"{display_url(url)!r} is" if "://" in url else "the value given is"
        raise click.BadParameter(
            f"{what} not an http(s) URL with a host, e.g. https://api.openai.com",
            param_hint=option,
        )


def _windows(values: tuple[str, ...]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        model, sep, n = v.rpartition("=")
        if not sep or not model or not n.isdigit() or int(n) < 1:
            raise click.BadParameter(
                f"{v!r}: expected MODEL=TOKENS, e.g. gpt-4o=64000",
                param_hint="--model-window",
            )
        out[model] = int(n)
    return out


@click.command("proxy")
@click.option(
    "--upstream-openai",
    default="https://api.openai.com",
    show_default=True,
    help="Where OpenAI requests go (chat completions, responses).",
)
@click.option(
    "--upstream-anthropic",
    default="https://api.anthropic.com",
    show_default=True,
    help="Where Anthropic requests go (messages).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", type=click.IntRange(0, 65535), default=8787, show_default=True)
@click.option(
    "--strategy",
    "strategy_spec",
    default=None,
    help="How to fit (a spec such as 'dedupe,drop-oldest'; default: the "
    "default pipeline).",
)
@click.option(
    "--store",
    default="sqlite:///contextwindow-proxy.db",
    show_default=True,
    help="Where conversations are kept (sqlite:///..., postgresql://..., "
    "redis://...); 'none' fits each request alone.",
)
@click.option(
    "--reserve",
    type=click.IntRange(min=0),
    default=None,
    help="Tokens kept for a reply whose request gives no max_tokens "
    "(default: the model's output limit, at most a quarter of the window).",
)
@click.option(
    "--window",
    type=click.IntRange(min=1),
    default=None,
    help="Every model's window in tokens (default: the model registry's).",
)
@click.option(
    "--model-window",
    "model_windows",
    multiple=True,
    metavar="MODEL=TOKENS",
    help="One model's window (repeatable). MODEL matches a request's model as "
    "the registry resolves names: in any case, with or without a provider "
    "prefix (openai/gpt-4o), and a dated variant (gpt-4o-2024-08-06) as its "
    "model.",
)
@click.option(
    "--api-key-env",
    default=None,
    metavar="VAR",
    help="Demand the key in $VAR from clients (header x-contextwindow-key).",
)
@click.option(
    "--log-bodies", is_flag=True, help="Log request bodies too (credentials scrubbed)."
)
@click.option(
    "--max-body-bytes",
    type=click.IntRange(min=1),
    default=32 * 1024 * 1024,
    show_default=True,
)
@click.option(
    "--max-concurrency",
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="Requests served at once; more get 429.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=600.0,
    show_default=True,
    help="Seconds an upstream may take to answer.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Errors as JSON (request log lines are JSON already).",
)
def proxy_cmd(
    upstream_openai: str,
    upstream_anthropic: str,
    host: str,
    port: int,
    strategy_spec: str | None,
    store: str,
    reserve: int | None,
    window: int | None,
    model_windows: tuple[str, ...],
    api_key_env: str | None,
    log_bodies: bool,
    max_body_bytes: int,
    max_concurrency: int,
    timeout: float,
    as_json: bool,
) -> None:
    """Serve an HTTP proxy that fits every request to its model's window.

    Point an agent at it: OPENAI_BASE_URL=http://127.0.0.1:8787/v1, or
    ANTHROPIC_BASE_URL=http://127.0.0.1:8787. Requests that fit go upstream
    byte for byte; others are fitted, conversation by conversation.
    """
    try:
        from contextwindow.proxy import FitterConfig, ProxyConfig, serve
        from contextwindow.summarizers._secret import read_key
    except ImportError as exc:  # pragma: no cover - the extra is missing
        raise click.ClickException(
            f"the proxy needs its extra: pip install 'contextwindow[proxy]' ({exc})"
        ) from exc
    from contextwindow.summarizers._llm import ENV_NAME

    if api_key_env is not None and not ENV_NAME.fullmatch(api_key_env):
        # Not echoed: what was given may be the key itself ("$PROXY_KEY").
        raise click.BadParameter(
            "expected the name of an environment variable, e.g. PROXY_KEY (the "
            "value given is not shown: is it the key itself?)",
            param_hint="--api-key-env",
        )
    _check_upstream(upstream_openai, "--upstream-openai")
    _check_upstream(upstream_anthropic, "--upstream-anthropic")
    windows = _windows(model_windows)
    try:
        strategy = parse_strategy(strategy_spec) if strategy_spec else None
    except ContextWindowError as exc:
        raise click.BadParameter(str(exc), param_hint="--strategy") from exc
    with cli_errors():
        key = read_key(api_key_env) if api_key_env else None
        if api_key_env and key is None:
            raise click.BadParameter(
                f"${api_key_env} is not set", param_hint="--api-key-env"
            )
        if key is None and not _loopback(host):
            raise click.BadParameter(
                f"binding {host} beyond loopback needs --api-key-env, so that the "
                "proxy is no open relay",
                param_hint="--host",
            )
        stored = None if store.lower() == "none" else store
        if stored is not None:
            from contextwindow.store.urls import open_store

            open_store(stored).close()  # a bad URL fails here, before serving
        config = ProxyConfig(
            upstream_openai=upstream_openai,
            upstream_anthropic=upstream_anthropic,
            fitting=FitterConfig(
                window=window, windows=windows, reserve=reserve, strategy=strategy
            ),
            store=stored,
            api_key=key,
            log_bodies=log_bodies,
            max_body_bytes=max_body_bytes,
            max_concurrency=max_concurrency,
            read_timeout=timeout,
        )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("contextwindow.proxy")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    port = _free_port(host, port)
    click.echo(f"contextwindow proxy on http://{_address(host, port)}", err=True)
    serve(config, host, port)


def _address(host: str, port: int) -> str:
    """``host:port`` as a URL writes it: an IPv6 address in brackets.

    Example:
        >>> _address("::1", 8787), _address("127.0.0.1", 8787)
        ('[::1]:8787', '127.0.0.1:8787')
    """
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _free_port(host: str, port: int) -> int:
    """The port to serve on ``host``: ``port``, or the system's choice for 0.

    A usage error when nothing can listen there (a port taken). For 0 the
    port the system gives a probe is the one served and announced, so that
    a script can read it; ``serve`` binds it anew once the probe is closed
    (another process taking it in between fails the start, never silently).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.create_server((host, port), family=family) as probe:
            bound: int = probe.getsockname()[1]
    except OSError as exc:
        why = os.strerror(exc.errno) if exc.errno else str(exc)
        raise click.BadParameter(
            f"cannot listen on {_address(host, port)}: {why}",
            param_hint="--host/--port",
        ) from exc
    return bound
