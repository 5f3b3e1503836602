"""Issue 80, item 3: one size per finding, everywhere. A planted claim whose random family
(lhs/rhs 2) beats its targeted search (1.6, the box's maximum, bounded beyond it): the
headline size, the verdict sentence, the figure's title, the errata's Size, the summary and
the findings CSV, audit.html, the README block and ``check`` all quote 2, the measured worst,
and say which family found it."""

from __future__ import annotations

import json
import re

from test_plugins import _bb, _fake_dist

PLANTED = '''
import numpy as np
import pandas as pd
import boundbench as bb
from boundbench.framework.claims.endings import ratio_histogram_outcome

bb.register_paper("sz", "Size et al. (2026): one size per finding")


def _sides(p):  # at most 1.6 inside the box and beyond it
    x = np.clip(np.asarray(p["x"], dtype=float), 0.0, 1.0)
    return 1.0 + 0.6 * x, np.ones_like(x)


@bb.claim("sz.bound", paper="sz", where="Theorem 1", kind="bound",
          statement="f is at most 1.", equation="f(x) <= 1",
          search=bb.Search({"x": (0.0, 1.0)}, _sides, budget=(60, 200)))
def _check(ctx):
    df = pd.DataFrame({"family": ["hand"] * 3, "lhs": [0.5, 1.2, 2.0], "rhs": [1.0, 1.0, 1.0]})
    return ratio_histogram_outcome(ctx, df, what="f <= 1", xlabel="f / 1")
'''


def test_every_output_quotes_the_same_size(tmp_path):
    site = tmp_path / "site"
    _fake_dist(site, "boundbench-sz", "sz = boundbench_sz", "boundbench_sz", PLANTED)
    out = tmp_path / "out"
    _bb("audit", "--only", "sz", "--out", str(out), site=site, cwd=tmp_path)
    rec = json.loads((out / "audit.json").read_text())
    (c,) = [c for c in rec["claims"] if c["id"] == "sz.bound"]
    ev = c["evidence"]
    assert c["verdict"] == "violated"
    assert ev["search_alone_worst_ratio"] < 1.7 and ev["random_family_worst_ratio"] == 2.0
    texts = {
        "verdict sentence": c["reason"],
        "audit.md": (out / "audit.md").read_text(),
        "audit.html": (out / "audit.html").read_text(),
        "errata.md": (out / "errata.md").read_text(),
        "summary": (out / "summary-sz.md").read_text(),
        "findings CSV": (out / "findings-sz.csv").read_text(),
        "check": _bb("check", "sz.bound", "--out", str(tmp_path / "chk"), site=site,
                     cwd=tmp_path, check=False).stdout,
    }
    from boundbench.report.readme import headline, record

    texts["README block"] = headline(record(rec))
    texts["figure title"] = c["figure_title"]
    for name, text in texts.items():
        assert re.search(r"lhs/rhs[^0-9]{0,40}2\b", text), (name, text[-1500:])
        # never the search's (or the characterization's) 1.6 as the finding's size
        assert not re.search(r"largest lhs/rhs found 1\.6", text), (name, text[-1500:])
