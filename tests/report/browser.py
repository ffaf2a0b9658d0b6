"""Open an HTML file in Debian's headless chromium and watch it through the Chrome DevTools Protocol (CDP).

No dependency beyond the standard library: chromium is started with
``--remote-debugging-port=0`` (it writes the port it chose into
``DevToolsActivePort`` in its profile folder), the page's websocket is
spoken with a small client (RFC 6455 framing: masked text frames out,
fragmented or long frames in), and the page is watched with the Network,
Runtime, Log and Page domains:

- every request the page makes (``Network.requestWillBeSent``: the file
  itself, ``data:`` URIs, and anything else, which the test refuses);
- console errors (``Runtime.consoleAPICalled`` of type error/assert),
  uncaught exceptions (``Runtime.exceptionThrown``) and the browser's own
  error log entries (``Log.entryAdded``: a refused load, a blocked script);
- a full-page screenshot (``Page.captureScreenshot``) and values evaluated
  in the page (``Runtime.evaluate``), such as the figures' boxes.

Host names are mapped to nothing (``--host-resolver-rules``), so even a
request that slipped through would not leave the machine.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path


def chromium() -> str | None:
    """The chromium binary, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


class WebSocket:
    """The client side of one websocket (text frames), enough for CDP."""

    def __init__(self, url: str, timeout: float = 20.0) -> None:
        assert url.startswith("ws://"), url
        hostport, _, path = url[len("ws://"):].partition("/")
        host, _, port = hostport.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("websocket handshake: connection closed")
            head += chunk
        head, _, self.buffer = head.partition(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"websocket handshake refused: {head[:200]!r}")

    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(max(65536, n - len(self.buffer)))
            if not chunk:
                raise ConnectionError("websocket closed")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def send(self, text: str) -> None:
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        header = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else
                                  bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 else
                                  bytes([0x80 | 127]) + struct.pack(">Q", n))
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.sock.sendall(header + mask + masked)

    def receive(self) -> str:
        message = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            payload = self._read(n)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            opcode = b0 & 0x0F
            if opcode == 0x8:
                raise ConnectionError("websocket closed by the browser")
            if opcode in (0x9, 0xA):  # ping/pong: not used by CDP
                continue
            message += payload
            if b0 & 0x80:
                return message.decode()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


@dataclass
class PageVisit:
    """What the browser saw while it showed one page."""

    requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    screenshot: bytes = b""
    values: dict = field(default_factory=dict)


class Browser:
    """Headless chromium with one page, driven over CDP: ``with Browser() as b: visit = b.visit(path, {...})``."""

    def __init__(self, width: int = 1280, height: int = 1400) -> None:
        self.width, self.height = width, height
        self.profile = tempfile.mkdtemp(prefix="wideml-chromium-")
        binary = chromium()
        assert binary, "chromium is not installed"
        self.proc = subprocess.Popen(
            [binary, "--headless=new", "--disable-gpu", "--no-sandbox", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             "--disable-background-networking", "--disable-component-update", "--disable-sync", "--mute-audio",
             "--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars", f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.ws: WebSocket | None = None
        self.next_id = 0
        self.events: list[dict] = []

    def __enter__(self) -> Browser:
        try:
            self._connect()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _connect(self, timeout: float = 20.0) -> None:
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"chromium did not start (exit status {self.proc.poll()})")
            time.sleep(0.05)
        port = int(port_file.read_text().split("\n")[0])
        while True:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as resp:
                pages = [t for t in json.load(resp) if t.get("type") == "page"]
            if pages or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert pages, "chromium shows no page"
        self.ws = WebSocket(pages[0]["webSocketDebuggerUrl"])

    def call(self, method: str, **params) -> dict:
        """Send one CDP command and return its result (events that arrive meanwhile are kept in :attr:`events`)."""
        self.next_id += 1
        my_id = self.next_id
        self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.receive())
            if message.get("id") == my_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def wait_for(self, event: str, timeout: float = 15.0) -> dict:
        """Read events until ``event`` arrives."""
        for message in self.events:
            if message["method"] == event:
                return message
        self.ws.sock.settimeout(timeout)
        while True:
            message = json.loads(self.ws.receive())
            if "method" in message:
                self.events.append(message)
                if message["method"] == event:
                    return message

    def visit(self, path: Path, expressions: dict[str, str] | None = None) -> PageVisit:
        """Load ``path`` (file://), wait for its load event, evaluate ``expressions`` (JSON results) and take a full-page screenshot."""
        for domain in ("Network", "Runtime", "Log", "Page"):
            self.call(f"{domain}.enable")
        self.events.clear()
        self.call("Page.navigate", url=Path(path).resolve().as_uri())
        self.wait_for("Page.loadEventFired")
        values = {}
        for name, expression in (expressions or {}).items():
            result = self.call("Runtime.evaluate", expression=f"JSON.stringify({expression})", returnByValue=True)
            values[name] = json.loads(result["result"]["value"])
        metrics = self.call("Page.getLayoutMetrics")
        height = int(metrics.get("cssContentSize", metrics.get("contentSize"))["height"]) + 1
        self.call("Emulation.setDeviceMetricsOverride", width=self.width, height=height, deviceScaleFactor=1, mobile=False)
        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        visit = PageVisit(screenshot=base64.b64decode(shot["data"]), values=values)
        for message in self.events:
            method, params = message["method"], message.get("params", {})
            if method == "Network.requestWillBeSent":
                visit.requests.append(params["request"]["url"])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                visit.console_errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                visit.console_errors.append(params["exceptionDetails"].get("text", "exception"))
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                visit.console_errors.append(params["entry"].get("text", ""))
        return visit

    def close(self) -> None:
        if self.ws is not None:
            self.ws.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)
