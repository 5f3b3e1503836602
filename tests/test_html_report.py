"""``audit.html`` (issues 43, 63): written by the README's main command beside ``audit.md``,
every claim and figure on it (the figures inline, so the page mailed alone shows them), its
text escaped, nothing fetched from a network; and, copied alone into an empty folder, loaded in
a real headless Chromium (Debian's package, driven by Playwright): no console error, every image
loads, the verdict table sorts and filters, a screenshot in the test's folder."""

import copy
import json
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from boundbench.report.html import render_html

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


def _page(audit_run) -> tuple[Path, dict]:
    root, res = audit_run.root, audit_run.res
    assert res["returncode"] == 0, res["stderr"][-3000:]
    figs = root / "figures"
    return figs / "audit.html", json.loads((figs / "audit.json").read_text())


def test_the_audit_writes_a_self_contained_page_with_every_claim(audit_run):
    page, report = _page(audit_run)
    text = page.read_text()
    links = _Links()
    links.feed(text)
    assert {re.sub(r"[^a-z0-9-]", "", c["id"].lower()) for c in report["claims"]} <= links.ids
    assert {f"paper-{c['paper']}" for c in report["claims"]} <= links.ids
    inline = [r for r in links.refs if r.startswith("data:image/png;base64,")]
    local = [r for r in links.refs if not r.startswith("#") and r not in inline]
    assert not [r for r in local if re.match(r"[a-z]+:", r)], "a link leaves the folder"
    missing = [r for r in local if not (page.parent / r).exists()]
    assert not missing, missing
    figures = {c["figure"] for c in report["claims"] if c.get("figure")}
    assert figures and figures <= set(local)  # each full-size figure linked from its image
    assert len(inline) == len(figures)  # and drawn from the page itself
    assert "{'" not in text and "Remake: boundbench" in text
    # one page of reasonable size: figures downscaled for it (the PNGs beside it weigh more)
    size = page.stat().st_size
    beside = sum((page.parent / f).stat().st_size for f in figures)
    print(f"audit.html: {size / 1e6:.2f} MB with {len(inline)} figures inline "
          f"(the figure files: {beside / 1e6:.2f} MB)")
    assert size < 0.6 * beside and size < 4e6, (size, beside)


def test_a_figure_outside_the_folder_is_linked_not_embedded(tmp_path):
    """Embedding reads only inside the report's folder: a figure path that leaves it (a
    crafted report) stays a link, and a missing file too."""
    from boundbench.report.html import inline_figure

    (tmp_path / "out").mkdir()
    (tmp_path / "secret.png").write_bytes(b"not for the page")
    assert inline_figure(tmp_path / "out", "../secret.png") == "../secret.png"
    assert inline_figure(tmp_path / "out", "gone.png") == "gone.png"
    assert inline_figure(None, "x.png") == "x.png"


def test_the_page_escapes_what_it_quotes(audit_run):
    """A reason with markup in it is shown as text, never run (the control: the raw string
    is absent, its escaped form present)."""
    _, report = _page(audit_run)
    report = copy.deepcopy(report)
    report["claims"][0]["reason"] = "<script>alert('x')</script> & <b>"
    text = render_html(report)
    assert "<script>alert" not in text
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &lt;b&gt;" in text


def _chromium() -> str | None:
    return os.environ.get("BOUNDBENCH_CHROMIUM") or shutil.which("chromium") or shutil.which(
        "chromium-browser")


def test_the_page_works_in_headless_chromium(audit_run, tmp_path):
    playwright = pytest.importorskip(
        "playwright.sync_api", reason="Playwright is not installed (pip install -e '.[dev]')")
    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium on this machine: `apt-get install chromium` (.ci/run installs "
                    "it), or set BOUNDBENCH_CHROMIUM to a Chromium binary")
    page_file, report = _page(audit_run)
    # the page alone, as mailed: an empty folder holds nothing but it
    alone = tmp_path / "mailed"
    alone.mkdir()
    shutil.copy(page_file, alone / "audit.html")
    page_file = alone / "audit.html"
    errors: list[str] = []
    outside: list[str] = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("requestfailed", lambda r: errors.append(f"failed: {r.url}"))
        page.on("request", lambda r: outside.append(r.url)
                if not r.url.startswith(("file://", "data:")) else None)
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
