"""A headless Chromium driven over the DevTools protocol, for the report tests.

One browser per test module; each page is opened in a fresh tab. What the
page logs (console errors, uncaught exceptions, failed loads) is collected
for the test to assert on; nothing is mocked.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
)


def chromium() -> str | None:
    """The Chromium executable, if installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """A Chromium process and one DevTools connection to it."""

    def __init__(self, exe: str) -> None:
        self._dir = tempfile.mkdtemp(prefix="cw-chromium-")
        self._proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={self._dir}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = Path(self._dir) / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not port_file.exists() or len(port_file.read_text().split()) < 2:
            if time.monotonic() > deadline or self._proc.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not start its DevTools endpoint")
            time.sleep(0.05)
        port, path = port_file.read_text().split()[:2]
        self._ws: ClientConnection = connect(
            f"ws://127.0.0.1:{port}{path}", max_size=None, open_timeout=30
        )
        self._id = 0
        self.events: list[dict[str, Any]] = []

    def close(self) -> None:
        """Stop the browser and remove its profile."""
        ws = getattr(self, "_ws", None)
        if ws is not None:
            ws.close()
        self._proc.terminate()
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(10)
        shutil.rmtree(self._dir, ignore_errors=True)

    def send(self, method: str, session: str | None = None, **params: Any) -> Any:
        """Send one command and return its result; events seen meanwhile are kept."""
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if session is not None:
            msg["sessionId"] = session
        self._ws.send(json.dumps(msg))
        while True:
            reply = json.loads(self._ws.recv(timeout=60))
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 60) -> dict[str, Any]:
        """Wait for an event (or find it among those already seen)."""
        for e in self.events:
            if e.get("method") == method:
                return e
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            e = json.loads(self._ws.recv(timeout=deadline - time.monotonic()))
            self.events.append(e)
            if e.get("method") == method:
                found: dict[str, Any] = e
                return found
        raise TimeoutError(method)

    def open(self, url: str, width: int = 1300, height: int = 900) -> Page:
        """A new tab showing ``url``, loaded."""
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        session = self.send("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            session,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        self.events.clear()
        self.send("Page.navigate", session, url=url)
        self.wait_for("Page.loadEventFired")
        return Page(self, session, width)


class Page:
    """One loaded tab."""

    def __init__(self, browser: Browser, session: str, width: int) -> None:
        self.browser = browser
        self.session = session
        self.width = width

    def js(self, expression: str) -> Any:
        """Evaluate ``expression`` (awaiting a promise) and return its value."""
        result = self.browser.send(
            "Runtime.evaluate",
            self.session,
            expression=expression,
            returnByValue=True,
            awaitPromise=True,
        )
        if "exceptionDetails" in result:
            raise RuntimeError(result["exceptionDetails"])
        return result["result"].get("value")

    def problems(self) -> list[str]:
        """Console errors and warnings, uncaught exceptions, failed loads."""
        out: list[str] = []
        for e in self.browser.events:
            if e.get("sessionId") != self.session:
                continue
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                out.append(f"exception: {p['exceptionDetails']}")
            elif e["method"] == "Runtime.consoleAPICalled" and p["type"] in (
                "error",
                "warning",
                "assert",
            ):
                out.append(f"console.{p['type']}: {p['args']}")
            elif e["method"] == "Log.entryAdded" and p["entry"]["level"] in (
                "error",
                "warning",
            ):
                out.append(f"log: {p['entry']['text']}")
        return out

    def screenshot(self, path: Path, max_height: int = 8000) -> None:
        """A PNG of the whole page (up to ``max_height`` pixels)."""
        size = self.browser.send("Page.getLayoutMetrics", self.session)
        height = min(int(size["cssContentSize"]["height"]), max_height)
        self.browser.send(
            "Emulation.setDeviceMetricsOverride",
            self.session,
            width=self.width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        shot = self.browser.send(
            "Page.captureScreenshot", self.session, format="png", fromSurface=True
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
