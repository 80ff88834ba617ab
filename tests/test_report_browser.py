"""Optional tier: render the hostile report in headless Chromium and read back the DOM it built.

Run with `pytest -m browser`; skipped when /usr/bin/chromium is missing (`apt-get install chromium`).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.compare import load_run
from harness.report import render_report
from tests.test_report import hostile_run

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
pytestmark = [pytest.mark.browser, pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")]


def dump_dom(page: Path, profile: Path) -> str:
    """The DOM after load, as Chromium serialises it (scripts, if any ran, have changed it by then)."""
    result = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
         "--virtual-time-budget=2000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def _title(dom: str) -> str:
    return re.search(r"<title>(.*?)</title>", dom, re.S).group(1)


def test_browser_runs_scripts_in_this_mode(tmp_path):
    # The control: an unescaped page does run the injected script, so the checks below can fail.
    page = tmp_path / "raw.html"
    page.write_text("<!DOCTYPE html><html><head><title>clean</title></head><body>"
                    "<script>document.title='pwned'</script></body></html>")
    assert _title(dump_dom(page, tmp_path / "profile")) == "pwned"


@pytest.mark.parametrize("keep_csp", [True, False], ids=["as-written", "without-csp"])
def test_hostile_pdf_text_stays_text(tmp_path, keep_csp):
    run = hostile_run(tmp_path / "hostile")
    html = render_report(load_run(run))
    if not keep_csp:  # escaping alone must hold, without the Content-Security-Policy behind it
        html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
        assert "Content-Security-Policy" not in html
    page = tmp_path / "report.html"
    page.write_text(html, encoding="utf-8")
    dom = dump_dom(page, tmp_path / "profile")
    assert _title(dom) == f"pdf-rag-eval report: {run.name}"
    assert "<script" not in dom.lower() and "<img" not in dom.lower()
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in dom
    assert "&lt;img src=x onerror=alert(1)&gt;" in dom
    assert "<mark>The attacker wrote &lt;script&gt;" in dom
