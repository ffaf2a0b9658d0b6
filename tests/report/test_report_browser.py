"""The report in a real headless browser (Debian's chromium, driven over the DevTools protocol: tests/report/browser.py).

It renders with no console error, makes no request but the file itself and its ``data:`` images, runs
no script (an attacker's class label ``<script>`` is shown as text), and the screenshot shows its figures:
every figure's box on the page has varied pixels. Skipped only when chromium is missing outside CI
(``scripts/setup_browser.sh`` installs it in CI, where a missing browser fails the test). The screenshot
is saved under the test's temporary folder (``report.png``) for a person to look at.
"""

from __future__ import annotations

import io
import os

import numpy as np
import pytest

from report.browser import Browser, chromium
from report.evil import EVIL

#: JavaScript evaluated in the page: the figures' boxes (page coordinates), scripts, and what a script would have set.
PROBES = {
    "figures": "[...document.querySelectorAll('figure img')].map(i => { const r = i.getBoundingClientRect(); "
               "return {kind: i.closest('figure').dataset.figure, x: r.left + scrollX, y: r.top + scrollY, w: r.width, "
               "h: r.height, loaded: i.complete && i.naturalWidth > 0}; })",
    "scripts": "document.scripts.length",
    "pwned": "typeof window.__pwned",
    "text": "document.body.innerText",
    "sections": "[...document.querySelectorAll('section')].map(s => s.id)",
}


@pytest.fixture(scope="module")
def browser():
    if chromium() is None:
        reason = "chromium is not installed; run scripts/setup_browser.sh (as root, with apt-get)"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {reason}")
        pytest.skip(reason)
    with Browser() as b:
        yield b


def test_report_renders_offline_without_errors_or_scripts_and_shows_its_figures(browser, run, tmp_path):
    from PIL import Image

    visit = browser.visit(run.report, PROBES)
    assert visit.console_errors == []
    assert visit.requests[0] == run.report.resolve().as_uri()
    others = [url for url in visit.requests[1:] if not url.startswith("data:image/png;base64,")]
    assert others == [], others
    values = visit.values
    assert values["sections"] == ["store", "cv", "model", "maps", "warnings"]
    assert values["scripts"] == 0 and values["pwned"] == "undefined"
    assert EVIL in values["text"]  # the label is shown as text
    figures = values["figures"]
    kinds = {f["kind"] for f in figures}
    assert {"mask", "cv", "map"} <= kinds and all(f["loaded"] for f in figures)
    shot = Image.open(io.BytesIO(visit.screenshot)).convert("L")
    (tmp_path / "report.png").write_bytes(visit.screenshot)
    page = np.asarray(shot, dtype=float)
    assert shot.size[1] >= max(f["y"] + f["h"] for f in figures) - 1  # the whole page was captured
    for f in figures:
        box = page[int(f["y"]) + 2:int(f["y"] + f["h"]) - 2, int(f["x"]) + 2:int(f["x"] + f["w"]) - 2]
        assert box.size > 5000 and box.std() > 8, (f["kind"], box.shape, box.std())
    assert page[:40].std() > 5  # the header bar with its title


def test_the_browser_checks_catch_a_request_a_console_error_and_a_script(browser, tmp_path):
    page = tmp_path / "bad.html"
    page.write_text('<html><body><img src="http://example.invalid/x.png">'
                    '<script>window.__pwned = 1; console.error("boom")</script></body></html>')
    visit = browser.visit(page, PROBES)
    assert "http://example.invalid/x.png" in visit.requests
    assert "boom" in visit.console_errors
    assert visit.values["scripts"] == 1 and visit.values["pwned"] == "number"
