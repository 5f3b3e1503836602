"""Print-ready figures: the layout check finds what a reviewer would send back, and every
figure format is written reproducibly."""

import json
import re
import xml.etree.ElementTree as ET

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from boundbench.framework.claims import registry  # noqa: E402
from boundbench.framework.execution import context  # noqa: E402
from boundbench.framework.files import plotting  # noqa: E402


def test_a_clean_figure_has_no_layout_problem():
    fig, (a, b) = plotting.figure(2)
    for ax in (a, b):
        ax.plot([1, 2, 3], [3, 1, 2], label="a line")
        ax.set_xlabel("steps t")
        ax.set_ylabel("normalized leave-one-out stability, a long label")
        ax.set_title("a panel title that is longer than the panel is wide at 7 pt")
        ax.legend()
    fig.suptitle("claim: verdict")
    plotting.finalize(fig)
    assert plotting.layout_problems(fig) == []
    assert fig.get_figwidth() == plotting.PAGE_IN
    plt.close(fig)


@pytest.mark.parametrize("defect, expected", [
    ("overlap", "overlap"), ("small", "under 7 pt"), ("outside", "leaves the canvas"),
    ("wide", "in wide"), ("into", "runs into panel"), ("ticks", "overlap"),
    ("legend", "covers its data")])
def test_the_layout_check_finds_each_defect(defect, expected):
    """Controls: each defect planted alone is reported (a check that cannot fail proves
    nothing)."""
    fig, (a, b) = plotting.figure(2)
    for ax in (a, b):
        ax.plot([0, 1], [0, 1])
    if defect == "overlap":
        a.text(0.5, 0.5, "first text here", transform=a.transAxes)
        a.text(0.52, 0.5, "second text here", transform=a.transAxes)
    elif defect == "small":
        a.set_title("tiny", fontsize=5)
    elif defect == "outside":
        fig.text(0.98, 0.5, "a label that runs off the right edge")
    elif defect == "wide":
        fig.set_figwidth(12)
    elif defect == "into":  # constrained layout would move panel b aside: plant it without
        fig.set_layout_engine("none")
        a.text(1.3, 0.5, "reaches well into the next panel", transform=a.transAxes)
    elif defect == "ticks":
        a.set_xticks(range(0, 40))
        a.set_xticklabels([f"label {i}" for i in range(40)])
    elif defect == "legend":  # a legend placed on the data it labels (issue 63)
        a.plot([0.4 + 0.01 * i for i in range(20)], [0.5] * 20, "o", label="points under it")
        a.legend(loc="center")
    problems = plotting.layout_problems(fig)
    plt.close(fig)
    assert any(expected in p for p in problems), problems


def test_finalize_moves_a_legend_off_its_data_and_the_figure_grows():
    """A legend over its data is moved below the panel, under the axis's labels; the figure
    grows by it, so the panel keeps its size; the check then finds nothing."""
    fig, (a, b) = plotting.figure(2)
    for ax in (a, b):
        ax.plot(range(30), [(i % 7) / 7 for i in range(30)], "o-", label="a dense series")
        ax.plot(range(30), [0.5] * 30, label="a flat series through the middle")
        ax.set_xlabel("steps t")
        ax.legend(loc="center")
    height = fig.get_figheight()
    assert any("covers its data" in p for p in plotting.layout_problems(fig))
    plotting.finalize(fig)
    assert plotting.layout_problems(fig) == [] and fig.get_figheight() > height
    plt.close(fig)


def test_the_palette_is_colour_blind_safe_and_fonts_print():
    assert plotting.STYLE["axes.prop_cycle"].by_key()["color"] == list(plotting.OKABE_ITO)
    sizes = [v for k, v in plotting.STYLE.items() if k.endswith("size") and isinstance(v, int | float)]
    assert min([plotting.STYLE["font.size"], *sizes]) >= plotting.MIN_FONT_PT
    fig, (ax,) = plotting.figure()
    assert fig.get_figwidth() == plotting.COLUMN_IN  # one column of a two-column paper
    plt.close(fig)


def test_formats_are_checked():
    assert plotting.FORMATS == context.FIGURE_FORMATS
    with pytest.raises(ValueError, match="formats must be"):
        registry.CheckContext(formats=("jpg",))
    with pytest.raises(ValueError, match="formats must be"):
        registry.CheckContext(formats="pdf")
    with pytest.raises(ValueError, match="format must be"):
        plotting.savefig(plt.figure(), "x.tiff", fmt="tiff")
    plt.close("all")


def test_figures_in_pdf_and_svg_are_vector_and_reproducible(tmp_path):
    """``--format png pdf svg`` writes all three; the vector files are valid, keep their text as
    text, and are byte-identical when written again into the same folder (no dates, no random
    ids; the metadata's remake command names the folder)."""
    from boundbench import catalogue

    catalogue.load()
    cid = "fu.fig8.distance"
    paths = {}
    for run in ("a", "b"):
        ctx = registry.CheckContext(out_dir=tmp_path / "out", formats=("png", "pdf", "svg"))
        r = registry.run(cid, ctx).to_dict()
        assert r["figure_files"] == [f"{cid}.png", f"{cid}.pdf", f"{cid}.svg"]
        assert r["figure"] == f"{cid}.png" and r["layout_problems"] == []
        paths[run] = {f: (tmp_path / "out" / f).read_bytes() for f in r["figure_files"]}
    pdf, svg = paths["a"][f"{cid}.pdf"], paths["a"][f"{cid}.svg"]
    assert pdf.startswith(b"%PDF-") and b"/FontFile2" in pdf  # TrueType embedded (fonttype 42)
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    texts = [t for t in root.iter() if t.tag.endswith("text")]
    assert any("steps" in "".join(t.itertext()) or "distance" in "".join(t.itertext())
               for t in texts)
    assert paths["a"][f"{cid}.pdf"] == paths["b"][f"{cid}.pdf"]
    assert paths["a"][f"{cid}.svg"] == paths["b"][f"{cid}.svg"]
    assert not re.search(rb"CreationDate", pdf)
    meta = json.loads((tmp_path / "out" / f"{cid}.json").read_text())
    assert meta["claim"] == cid
    # the remake command is in each file's metadata (PDF: Subject; SVG: Description)
    assert meta["provenance"]["command"].encode() in pdf.replace(b"\\", b"")
    assert "Remake: " + meta["provenance"]["command"] in svg.decode()


def test_plm_grid_figures_draw_without_warnings(tmp_path):
    """The plm grid's figures are made with the print-size constrained layout; drawing them must
    not warn (a ``tight_layout`` on top did, and the audit's terminal showed it; so did JACHESS's
    long method names as rotated x labels: the axes collapsed to zero)."""
    import warnings

    import pandas as pd

    from boundbench.plm.grid.figures import plot_grid

    rel = json.dumps({"count": [3, 5], "mean_predicted": [0.3, 0.8],
                      "fraction_positive": [0.2, 0.9]})
    rows = [dict(task="sst2", method=m, seed=s, test_accuracy=0.8 + 0.01 * s, test_ece=0.05,
                 test_brier=0.1, noise_acc_0=0.8, noise_acc_1=0.7, corrupt_acc_0=0.8,
                 corrupt_acc_1=0.6, cka_layer_0=1.0, cka_layer_1=0.9, test_reliability=rel)
            for m in ("finetune", "jachess-unlab:layer_weights=uniform,dims=1,reg_batch=2",
                      "jachess-unlab:layer_weights=logits,dims=1,reg_batch=2",
                      "jachess-unlab:layer_weights=inverse,dims=1,reg_batch=2") for s in (0, 1)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        written = plot_grid(pd.DataFrame(rows), tmp_path)
    assert {p.name for p in written} == {"accuracy_calibration.png", "robustness.png",
                                         "cka_layers.png", "reliability.png"}


def test_a_smoke_run_says_so_on_every_panel_and_in_its_title():
    """A quick-scale fine-tuning figure read alone must not suggest an effect (issue 63)."""
    from types import SimpleNamespace

    from boundbench.framework.claims.outputs import say_what_was_decided
    from boundbench.framework.verdicts.rules import Verdict

    def outcome(ev):
        fig, axes = plotting.figure(2)
        for ax in axes:
            ax.plot([0, 1], [0, 1])
            ax.set_title("x.plm.y: inconclusive (2 seeds)")
        return SimpleNamespace(figure=fig, verdict=Verdict("inconclusive", "r", ev))

    c = SimpleNamespace(id="x.plm.y", search=None)
    smoke = outcome({"smoke_run": True})
    title, _ = say_what_was_decided(c, smoke)
    assert title == "x.plm.y: inconclusive, smoke run (2 seeds)"
    marks = [t for ax in smoke.figure.axes for t in ax.texts if "SMOKE RUN" in t.get_text()]
    assert len(marks) == 2 and all(t.get_zorder() < 1 for t in marks)  # behind the data
    smoke.figure.axes[0].legend(["mean +- std"], loc="center")  # on the mark: allowed
    plotting.finalize(smoke.figure)
    assert plotting.layout_problems(smoke.figure) == []
    decided = outcome({})
    assert say_what_was_decided(c, decided)[0] == "x.plm.y: inconclusive (2 seeds)"
    assert not any(t.get_text() for ax in decided.figure.axes for t in ax.texts)


def test_the_ratio_histogram_has_the_bound_as_an_edge_and_draws_a_tie_as_holding():
    """Issue 84: a bin straddled the bound, so holding instances looked violated. Read from
    the drawn outline: 1 is an edge, the 6 holding instances (5 of them at exactly 1) are left
    of it, the 2 violations right of it."""
    import numpy as np

    from boundbench.framework.files.plotting import ratio_histogram

    for top in (1.0, 1.3, 2.0, 7.5, 40.0):
        ratio = np.r_[np.full(5, 1.0), 0.5, 1.0 + 1e-9, max(top, 1.01)]
        fig, ax = plt.subplots()
        ratio_histogram(ax, ratio, np.zeros(ratio.size), xlabel="lhs/rhs")
        xy = ax.patches[0].get_xy()  # the step outline: (edge, 0), (edge, h), (edge', h), ...
        edges, heights = xy[0::2, 0], xy[1::2, 1][: len(xy[0::2]) - 1]
        assert 1.0 in edges, (top, edges[:5])
        left = heights[edges[1:] <= 1.0].sum()
        assert left == 6 and heights[edges[:-1] >= 1.0].sum() == 2, (top, left)
        plt.close(fig)
