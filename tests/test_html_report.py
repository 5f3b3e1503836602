"""``audit.html`` (issue 43): written by the README's main command beside ``audit.md``, every
claim and figure on it, its text escaped, nothing fetched from a network; and loaded in a real
headless Chromium (Debian's package, driven by Playwright): no console error, every image
loads, the verdict table sorts and filters, a screenshot in the test's folder."""

import copy
import json
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from boundbench.html_report import render_html

# the flags that keep Chromium off the network at start-up (the machines reach only the
# package registries) and let it run as root in a container
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.refs += [a[k] for k in ("src", "href") if a.get(k)]
        if a.get("id"):
            self.ids.add(a["id"])


def _page(readme_audit) -> tuple[Path, dict]:
    root, res = readme_audit
    assert res["returncode"] == 0, res["stderr"][-3000:]
    figs = root / "figures"
    return figs / "audit.html", json.loads((figs / "audit.json").read_text())


def test_the_audit_writes_a_self_contained_page_with_every_claim(readme_audit):
    page, report = _page(readme_audit)
    text = page.read_text()
    links = _Links()
    links.feed(text)
    assert {re.sub(r"[^a-z0-9-]", "", c["id"].lower()) for c in report["claims"]} <= links.ids
    assert {f"paper-{c['paper']}" for c in report["claims"]} <= links.ids
    local = [r for r in links.refs if not r.startswith("#")]
    assert not [r for r in local if re.match(r"[a-z]+:", r)], "a link leaves the folder"
    missing = [r for r in local if not (page.parent / r).exists()]
    assert not missing, missing
    figures = {c["figure"] for c in report["claims"] if c.get("figure")}
    assert figures and figures <= set(local)
    assert "{'" not in text and "Remake: boundbench" in text


def test_the_page_escapes_what_it_quotes(readme_audit):
    """A reason with markup in it is shown as text, never run (the control: the raw string
    is absent, its escaped form present)."""
    _, report = _page(readme_audit)
    report = copy.deepcopy(report)
    report["claims"][0]["reason"] = "<script>alert('x')</script> & <b>"
    text = render_html(report)
    assert "<script>alert" not in text
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &lt;b&gt;" in text


def _chromium() -> str | None:
    return os.environ.get("BOUNDBENCH_CHROMIUM") or shutil.which("chromium") or shutil.which(
        "chromium-browser")


def test_the_page_works_in_headless_chromium(readme_audit, tmp_path):
    playwright = pytest.importorskip(
        "playwright.sync_api", reason="Playwright is not installed (pip install -e '.[dev]')")
    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium on this machine: `apt-get install chromium` (.ci/run installs "
                    "it), or set BOUNDBENCH_CHROMIUM to a Chromium binary")
    page_file, report = _page(readme_audit)
    errors: list[str] = []
    outside: list[str] = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("requestfailed", lambda r: errors.append(f"failed: {r.url}"))
        page.on("request", lambda r: outside.append(r.url)
                if not r.url.startswith("file://") else None)
        page.goto(page_file.as_uri(), wait_until="load")
        broken = page.evaluate("Array.from(document.images).filter(i => !(i.complete && "
                               "i.naturalWidth > 0)).map(i => i.getAttribute('src'))")
        n_images = page.evaluate("document.images.length")
        page.screenshot(path=tmp_path / "audit.png")

        def verdicts():
            return page.locator("#verdicts tbody td[data-key=verdict] .verdict").all_inner_texts()

        before = verdicts()
        page.click("#verdicts th[data-key=verdict]")
        ascending = verdicts()
        page.click("#verdicts th[data-key=verdict]")
        descending = verdicts()
        page.select_option("#filter-paper", "ad")
        visible = page.locator("#verdicts tbody tr:visible td[data-key=paper]").all_inner_texts()
        shown = page.inner_text("#shown")
        browser.close()
    assert not errors, errors
    assert not outside, outside
    assert n_images == len([c for c in report["claims"] if c.get("figure")]) and not broken
    assert (tmp_path / "audit.png").stat().st_size > 10_000
    # sorting changes the order (the registry's order is not sorted by verdict), both ways
    assert ascending != before and sorted(before) == sorted(ascending)
    assert ascending == sorted(ascending) and descending == ascending[::-1]
    n_ad = sum(c["paper"] == "ad" for c in report["claims"])
    assert visible == ["ad"] * n_ad and shown == f"{n_ad} of {len(report['claims'])} claims shown"
