"""``contextwindow proxy``: an HTTP proxy that fits every request to its model's window.

Point an agent's base URL at it (``OPENAI_BASE_URL=http://127.0.0.1:8787/v1``,
``ANTHROPIC_BASE_URL=http://127.0.0.1:8787``) and each request reaches the
provider fitted, valid, with a prefix stable for the provider's prompt cache.
Needs the ``proxy`` extra (``pip install 'contextwindow[proxy]'``): Starlette,
uvicorn, and aiohttp's client for the upstream (``_http``).

- ``create_app(ProxyConfig(...))`` is the ASGI app (``_app`` holds its
  contract: endpoints, streaming, headers, errors, security).
- ``FitterConfig`` says how requests are fitted (``_fitter``: windows, the
  reserve, conversations on the store; ``_behind``: a turn's append written
  while the upstream answers).
- ``serve(config, host, port)`` runs it with uvicorn.

Example:
    >>> from starlette.testclient import TestClient
    >>> app = create_app(ProxyConfig(store=None))
    >>> with TestClient(app) as client:
    ...     client.get("/metrics").text.splitlines()[0]
    '# HELP contextwindow_proxy_requests_total Requests served, by endpoint and status.'
"""

from __future__ import annotations

try:
    from contextwindow.proxy._app import ProxyConfig, create_app
    from contextwindow.proxy._fitter import FitterConfig
except ModuleNotFoundError as exc:  # the extra's packages, not ours
    if exc.name is None or exc.name.startswith("contextwindow"):
        raise
    raise ImportError(
        f"contextwindow.proxy needs {exc.name}: pip install 'contextwindow[proxy]'"
    ) from exc

__all__ = ["FitterConfig", "ProxyConfig", "create_app", "serve"]


def serve(config: ProxyConfig, host: str = "127.0.0.1", port: int = 8787) -> None:
    """Serve the proxy with uvicorn until interrupted.

    Example:
        >>> callable(serve)
        True
    """
    import uvicorn

    uvicorn.run(
        create_app(config),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        # Client addresses are not used: no X-Forwarded-For to read.
        proxy_headers=False,
    )
