"""Figure conventions shared by every claim: paper-like, labelled, readable in grey-scale.

Importing this module leaves matplotlib's backend alone (a notebook keeps its inline one); the
command line picks the non-interactive ``Agg`` backend itself."""

from __future__ import annotations

from typing import Any

import matplotlib  # not pyplot: 0.1 s where pyplot is 0.6 (imported where a figure is made)
import numpy as np

from boundbench.errors import InvalidArgument

# Okabe & Ito (2008): distinguishable under the common colour-vision deficiencies and in grey
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442",
             "#000000")
COLUMN_IN = 3.5  # one column of a two-column paper
PAGE_IN = 7.2  # the full text width of a two-column paper
MIN_FONT_PT = 7.0  # the smallest legible size at print scale
# the formats savefig writes (context.FIGURE_FORMATS, the CLI's, is the same tuple, kept apart)
FORMATS = ("png", "pdf", "svg")

STYLE: dict[Any, Any] = {  # matplotlib types its keys as literals
    "figure.figsize": (COLUMN_IN, 2.6),
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "figure.titlesize": 8,
    "legend.frameon": False,
    "lines.linewidth": 1.2,
    "axes.prop_cycle": __import__("cycler").cycler(color=list(OKABE_ITO)),
    "pdf.fonttype": 42,  # TrueType in PDFs: editable text, accepted by publishers
    "svg.fonttype": "none",  # text stays text in SVGs
}


def figure(ncols: int = 1, *, width: float | None = None, height: float | None = None):
    """A new figure with ``ncols`` panels in the project's style, sized for print: one panel is
    one column wide (3.5 in), more panels fill the page width (7.2 in), three to a row. Returns
    the figure and its ``ncols`` axes (a grid's unused cells are removed). The layout is
    constrained, so labels, titles and legends never overlap or leave the canvas."""
    import matplotlib.pyplot as plt  # lazily: 0.6 s of a command's start
    if ncols < 1:
        raise InvalidArgument(f"ncols must be >= 1 (got {ncols})")
    per_row = min(ncols, 3)
    rows = -(-ncols // per_row)
    w = width if width is not None else (COLUMN_IN if ncols == 1 else PAGE_IN)
    h = height if height is not None else (2.6 if ncols == 1 else 2.5) * rows
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(rows, per_row, figsize=(w, h), squeeze=False,
                                 layout="constrained")
    flat = list(axes.ravel())
    for ax in flat[ncols:]:
        ax.remove()
    return fig, flat[:ncols]


def headline(fig, claim_id: str, status: str) -> str:
    """Title the figure with the claim's final verdict, the one the report gives (a figure drawn
    before the targeted search said "holds" for a bound the search then broke). The figure's
    title is its suptitle, else the first panel's title; a title of the form ``<id>: <status>...``
    has its status replaced, any other gets a suptitle above it. Returns the title."""
    import re

    pat = re.compile(rf"^{re.escape(claim_id)}: [\w-]+")
    head = f"{claim_id}: {status}"
    sup = fig._suptitle
    texts = ([sup] if sup is not None else []) + [ax.title for ax in fig.axes[:1]]
    for t in texts:
        if pat.match(t.get_text()):
            t.set_text(pat.sub(head, t.get_text()))
            return t.get_text()
    if sup is not None and sup.get_text():
        fig.suptitle(f"{head}; {sup.get_text()}", fontsize=sup.get_fontsize())
    else:
        fig.suptitle(head, fontsize=9)
    return fig._suptitle.get_text()


def figure_title(fig) -> str:
    """The figure's title as :func:`headline` reads it."""
    if fig._suptitle is not None and fig._suptitle.get_text():
        return fig._suptitle.get_text()
    return fig.axes[0].title.get_text() if fig.axes else ""


SEARCH_GID = "search-worst-instance"  # the marked point's id, so a test can find it


def search_strip(fig, *, worst_ratio: float, instance: Any, random_worst: float | None,
                 decided: bool) -> None:
    """A strip below the figure's panels with the targeted search's worst instance: its lhs/rhs
    as a marked point on a ratio axis with the bound at 1, the random family's worst beside it,
    and the instance in words, so a bound the search decided shows the instance that decided
    it. The figure grows by the strip's height; the panels keep theirs (the constrained layout
    is confined above it)."""
    import textwrap

    import matplotlib.ticker as mticker

    if isinstance(instance, dict):
        words = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                          for k, v in instance.items())
    else:
        words = str(instance)
    what = "the instance that decided the verdict" if decided else "the worst instance found"
    w, h = fig.get_size_inches()
    per_line = max(30, int(0.85 * w * 72 / (7 * 0.64)))  # 7-pt characters across the strip
    lines = textwrap.wrap(f"lhs/rhs (bound at 1); targeted search, {what}: {words}", per_line)
    if len(lines) > 4:
        lines = lines[:3] + [textwrap.shorten(" ".join(lines[3:]), per_line, placeholder=" ...")]
    label_in = 0.125 * len(lines) + 0.1
    axis_in, legend_in = 0.14, 0.32
    strip_in = label_in + 0.22 + axis_in + legend_in
    H = h + strip_in
    placed = [(a, a.get_position().bounds) for a in fig.axes]
    fig.set_size_inches(w, H)
    engine = fig.get_layout_engine()
    try:  # a constrained or tight layout confines itself above the strip
        if engine is None:
            raise NotImplementedError
        engine.set(rect=(0, strip_in / H, 1, 1 - strip_in / H))
    except NotImplementedError:  # a plugin's plain figure: its panels keep their inches
        fig.set_layout_engine("none")
        for a, (x0, y0, aw, ah) in placed:
            a.set_position((x0, (strip_in + y0 * h) / H, aw, ah * h / H))
    ax = fig.add_axes((0.1, (label_in + 0.22) / H, 0.85, axis_in / H))
    ticks = sorted({float(v) for v in (worst_ratio, random_worst, 1.0)
                    if isinstance(v, int | float) and v > 0})
    lo, hi = min(ticks) / 1.6, max(ticks) * 1.6
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(-1, 1)
    ax.set_yticks([])
    ax.grid(False)
    ax.axvline(1.0, color="k", lw=1)
    ax.axvspan(1.0, hi, color="tab:red", alpha=0.08, lw=0)
    if isinstance(random_worst, int | float) and random_worst > 0:
        ax.plot([random_worst], [0], "o", mfc="none", color=OKABE_ITO[0], ms=5,
                label=f"random family {random_worst:.4g}")
    pt, = ax.plot([worst_ratio], [0], "X", color=OKABE_ITO[3] if worst_ratio > 1 else OKABE_ITO[2],
                  ms=8, label=f"search {worst_ratio:.4g}")
    pt.set_gid(SEARCH_GID)
    ax.xaxis.set_major_locator(mticker.FixedLocator(ticks))
    ax.xaxis.set_major_formatter(mticker.FixedFormatter([f"{t:.3g}" for t in ticks]))
    ax.xaxis.set_minor_locator(mticker.NullLocator())
    ax.set_xlabel("\n".join(lines), fontsize=7)
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.05), ncols=2, fontsize=7, frameon=False,
              borderaxespad=0, handletextpad=0.3, columnspacing=1.0,
              title="worst lhs/rhs:", title_fontsize=7, alignment="left")


def style():
    """The project's style as a context manager, for figures made outside :func:`figure`
    (``with plotting.style(): fig, ax = plt.subplots(layout="constrained")``)."""
    return matplotlib.rc_context(STYLE)


def _lay_out(fig):
    """Run the figure's draw (its layout engine, tick placement and text layout) with the
    painting switched off, on the canvas's own renderer, and return that renderer: its text
    extents are those of a real draw at the figure's dpi. Painting is a third to half a draw
    and nothing measured here needs it; savefig paints once. (Matplotlib's
    ``draw_without_rendering`` does the same on a print's renderer, whose dpi may differ from
    the canvas's.)"""
    renderer = fig.canvas.get_renderer()
    with renderer._draw_disabled():
        fig.draw(renderer)
    return renderer


def finalize(fig) -> None:
    """Fit the figure's text to print: a legend that covers its panel's data moves below the
    panel (the figure grows by it), titles and axis labels longer than their panel are broken
    into lines, and crowded tick labels are thinned (the registry calls this before saving; a
    notebook may call it too). Matplotlib's own ``wrap=True`` is not used: the layout engine
    and the text's extent ignore it."""
    renderer = _lay_out(fig)
    # legends first (a legend placed at "best" may land on data once another moved): then the
    # labels fit the panels as they are
    for _ in range(3):
        if not _legends_off_data(fig, renderer):
            break
        renderer = _lay_out(fig)
    fits = []
    if fig._suptitle is not None:
        fits.append((fig._suptitle, fig.bbox.width * 0.95, "width"))
    for ax in fig.axes:
        area = ax.get_window_extent(renderer)
        fits += [(ax.title, area.width, "width"), (ax.xaxis.label, area.width, "width"),
                 (ax.yaxis.label, area.height, "height")]
    wrapped = [_wrap_to(t, room, side, renderer) for t, room, side in fits]
    # crowded tick labels (a log axis spanning under two decades labels its minor ticks): drop
    # the minor labels, then thin the major ticks, until the labels no longer overlap
    from matplotlib.ticker import LogLocator, MaxNLocator, NullFormatter

    if any(wrapped):  # a draw of a figure with many artists costs seconds: only when changed
        renderer = _lay_out(fig)
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for fix in ("minor", "major"):
                if not _ticklabels_overlap(axis, renderer):
                    break
                if fix == "minor":
                    axis.set_minor_formatter(NullFormatter())
                elif axis.get_scale() == "log":
                    axis.set_major_locator(LogLocator(numticks=4))
                else:
                    axis.set_major_locator(MaxNLocator(4))
                renderer = _lay_out(fig)
    # a legend at "best" is placed again at every draw: once more, on the final layout
    for _ in range(2):
        if not _legends_off_data(fig, renderer):
            break
        renderer = _lay_out(fig)


def _legends_off_data(fig, renderer) -> bool:
    """Move each legend that covers its panel's data (:func:`_covers_data`) below the panel,
    under its x axis's labels, centred; whether one moved. The offset is in points, so it holds
    when the layout engine then shrinks the panel to make room."""
    from matplotlib.transforms import offset_copy

    grow_px, changed = 0.0, False
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is None:
            continue
        box = leg.get_window_extent(renderer)
        moved = getattr(leg, "_boundbench_drop", None)  # points below the panel, once moved
        if moved is None and not _covers_data(ax, box, 1.0):
            continue
        area = ax.get_window_extent(renderer)
        below = ax.xaxis.get_tightbbox(renderer)
        drop_px = max(0.0, area.y0 - below.y0) if below is not None else 0.0
        drop = drop_px * 72.0 / fig.dpi + 3.0
        if moved is not None and abs(moved - drop) < 1.0:
            continue  # already below the axis's labels as they are now
        leg.set_loc("upper center")
        leg.set_bbox_to_anchor((0.5, 0.0), transform=offset_copy(
            ax.transAxes, fig=fig, x=0.0, y=-drop, units="points"))
        leg._boundbench_drop = drop
        changed = True
        if moved is None:
            grow_px = max(grow_px, box.height + 6.0)
    if grow_px:  # the figure grows by the legend, so its panels keep their size
        fig.set_figheight(fig.get_figheight() + grow_px / fig.dpi)
    return changed


def _wrap_to(t, room: float, side: str, renderer) -> bool:
    """Break ``t`` into lines that fit ``room`` pixels; whether its text changed."""
    import textwrap

    text = t.get_text()
    if not text or "$" in text or room <= 0:  # never break inside mathtext
        return False
    size = getattr(t.get_window_extent(renderer), side)
    if size <= room:
        return False
    lines = text.split("\n")
    longest = max(len(ln) for ln in lines)
    chars = max(8, int(longest * room / size * 0.95))
    t.set_text("\n".join(textwrap.fill(ln, chars) for ln in lines))
    return True


def _ticklabels_overlap(axis, renderer) -> bool:
    if not axis.get_visible():
        return False
    boxes = [t.get_window_extent(renderer) for tick in axis._update_ticks()
             for t in (tick.label1, tick.label2) if t.get_visible() and t.get_text().strip()]
    return any(min(a.x1, b.x1) - max(a.x0, b.x0) > 1 and min(a.y1, b.y1) - max(a.y0, b.y0) > 1
               for i, a in enumerate(boxes) for b in boxes[i + 1:])


def _drawn_texts(fig) -> list:
    """Every text the figure draws: titles, labels, legends, annotations and the tick labels of
    the ticks inside each axis' view (other tick labels exist but are not drawn)."""
    from matplotlib.text import Text

    tick_labels, drawn = set(), []
    for ax in fig.axes:
        for axis in ax._axis_map.values():
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                tick_labels.update({id(tick.label1), id(tick.label2)})
            if not axis.get_visible():  # e.g. a twin's shared axis
                continue
            for tick in axis._update_ticks():  # the ticks drawn (matplotlib's own selection)
                drawn += [t for t in (tick.label1, tick.label2) if t.get_visible()]
    drawn += [t for t in fig.findobj(Text) if id(t) not in tick_labels]
    return [t for t in drawn if t.get_visible() and t.get_text().strip()
            and (t.axes is None or t.axes.get_visible()) and t.get_gid() != BEHIND_GID]


BEHIND_GID = "behind-the-data"
"""A text drawn faintly behind a panel's data on purpose (the smoke-run mark): the layout check
leaves it out of its overlap tests."""


def layout_problems(fig, *, min_font: float = MIN_FONT_PT, max_width: float = PAGE_IN,
                    tol_px: float = 1.0, drawn: bool = False) -> list[str]:
    """What a reviewer would send back about ``fig``'s layout, drawn as it will be saved:
    texts that overlap one another, a text that runs into another panel's plotting area, any
    text, legend or panel outside the canvas, fonts under ``min_font`` pt, and a figure wider
    than ``max_width`` in. Empty when the figure is print-ready. ``drawn``: the figure has
    been drawn since its last change (as :func:`finalize` leaves it), so it is not drawn again."""
    renderer = fig.canvas.get_renderer() if drawn else _lay_out(fig)
    canvas = fig.bbox
    problems: list[str] = []
    if fig.get_figwidth() > max_width + 1e-9:
        problems.append(f"figure is {fig.get_figwidth():.2f} in wide, over {max_width} in")
    texts = _drawn_texts(fig)
    boxes = [t.get_window_extent(renderer) for t in texts]

    def name(t) -> str:
        return repr(t.get_text()[:40])

    def outside(b) -> bool:
        return (b.x0 < canvas.x0 - tol_px or b.y0 < canvas.y0 - tol_px
                or b.x1 > canvas.x1 + tol_px or b.y1 > canvas.y1 + tol_px)

    for t, b in zip(texts, boxes, strict=True):
        if t.get_fontsize() < min_font - 1e-9:
            problems.append(f"text {name(t)} is {t.get_fontsize():g} pt, under {min_font:g} pt")
        if outside(b):
            problems.append(f"text {name(t)} leaves the canvas")
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            a, b = boxes[i], boxes[j]
            if (min(a.x1, b.x1) - max(a.x0, b.x0) > tol_px
                    and min(a.y1, b.y1) - max(a.y0, b.y0) > tol_px):
                problems.append(f"texts {name(texts[i])} and {name(texts[j])} overlap")
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        area = ax.get_window_extent(renderer)
        if outside(area):
            problems.append(f"panel {ax.get_title()!r} leaves the canvas")
        leg = ax.get_legend()
        if leg is not None and outside(leg.get_window_extent(renderer)):
            problems.append(f"the legend of panel {ax.get_title()!r} leaves the canvas")
        if leg is not None and _covers_data(ax, leg.get_window_extent(renderer), tol_px):
            problems.append(f"the legend of panel {ax.get_title()!r} covers its data")
        for t, b in zip(texts, boxes, strict=True):
            if t.axes is not None and ax._twinned_axes.joined(ax, t.axes):
                continue  # its own panel, or a twin drawn on the same area
            # a text of another panel (or of the figure) inside this panel's plotting area
            if (min(area.x1, b.x1) - max(area.x0, b.x0) > tol_px
                    and min(area.y1, b.y1) - max(area.y0, b.y0) > tol_px
                    and not _inside_legend_of(t, ax)):
                problems.append(f"text {name(t)} runs into panel {ax.get_title()!r}")
    return problems


def _covers_data(ax, box, tol_px: float) -> bool:
    """Whether a drawn point of ``ax``'s data (a line's vertices, a scatter's markers) lies
    under the legend's box ``box`` (display coordinates): a legend that hides what it labels."""
    def under(xy) -> bool:
        xy = np.asarray(xy, dtype=float).reshape(-1, 2)
        xy = xy[np.all(np.isfinite(xy), axis=1)]
        return bool(np.any((xy[:, 0] > box.x0 + tol_px) & (xy[:, 0] < box.x1 - tol_px)
                           & (xy[:, 1] > box.y0 + tol_px) & (xy[:, 1] < box.y1 - tol_px)))

    for line in ax.get_lines():
        # a reference line drawn across the panel (axhline, axvline) has only its two ends
        if line.get_visible() and len(line.get_xydata()) > 2 and under(
                line.get_transform().transform(line.get_xydata())):
            return True
    for c in ax.collections:
        offsets = c.get_offsets() if hasattr(c, "get_offsets") else []
        if c.get_visible() and len(offsets) and type(c).__name__ == "PathCollection" and under(
                c.get_offset_transform().transform(offsets)):
            return True
    return False


def _inside_legend_of(t, ax) -> bool:
    leg = ax.get_legend()
    return leg is not None and (t in leg.get_texts() or t is leg.get_title())


def savefig(fig, path, *, fmt: str, claim_id: str = "", description: str = "") -> None:
    """Save ``fig`` as ``fmt`` (png at 200 dpi, or vector pdf/svg) with reproducible bytes: no
    creation date, and SVG element ids salted by ``claim_id`` rather than drawn at random.
    ``description`` (how to remake it) goes into the file's metadata: PNG's ``Description``,
    PDF's ``Subject``, SVG's ``Description``."""
    if fmt not in FORMATS:
        raise InvalidArgument(f"format must be one of {FORMATS} (got {fmt!r})")
    fixed: dict[str, dict[str, str | None]] = {
        "png": {"Software": None}, "pdf": {"CreationDate": None, "Producer": None},
        "svg": {"Date": None}}
    meta = dict(fixed[fmt])
    if description:
        meta[{"png": "Description", "pdf": "Subject", "svg": "Description"}[fmt]] = description
    with matplotlib.rc_context({"svg.hashsalt": claim_id or "boundbench"}):
        fig.savefig(path, format=fmt, dpi=200, metadata=meta)


def ratio_histogram(ax, ratio: np.ndarray, groups: np.ndarray, *, xlabel: str) -> None:
    """Distribution of lhs/rhs per problem family, with the bound at 1: 1 is a bin edge and the
    bins are closed on the right, so a bar right of the line holds only violations (issue 84: a
    bin straddling 1 drew about 50 instances as violated where 1 of 180 was)."""
    ratio = np.asarray(ratio, dtype=float)
    top = max(1.05, float(np.nanmax(ratio)) * 1.02)
    per_unit = max(1, round(39 / top))  # bins below 1; edges i / per_unit hit 1 exactly
    bins = np.arange(int(np.ceil(top * per_unit)) + 1) / per_unit
    shown = np.nextafter(ratio, -np.inf)  # [a, b) bins read as (a, b]: a tie at 1 holds
    for g in np.unique(groups):
        ax.hist(shown[groups == g], bins=bins, histtype="step", lw=1.4, label=str(g))
    ax.axvline(1.0, color="k", ls="--", lw=1, label="bound (ratio = 1)")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("instances")
    ax.legend()


def median_band(ax, x, y, *, group=None, label: str | None = None, color=None,
                q: float = 0.25):
    """Median of ``y`` per distinct ``x`` (or per ``group``, drawn at the group's median x) with
    an interquartile band: the spread over datasets. Returns the median's line."""
    import pandas as pd

    df = pd.DataFrame({"x": np.asarray(x), "y": np.asarray(y)})
    df["g"] = df["x"] if group is None else np.asarray(group)
    g = df.groupby("g")
    xs, med = g["x"].median(), g["y"].median()
    lo, hi = g["y"].quantile(q), g["y"].quantile(1 - q)
    (line,) = ax.plot(xs.values, med.values, marker="o", ms=3, label=label, color=color)
    ax.fill_between(xs.values, lo.values, hi.values, alpha=0.2, color=line.get_color(), lw=0)
    return line


def plain_log_axis(ax, which: str = "x", ticks=None) -> None:
    """Log scale with plain-number labels (at ``ticks`` if given) and no minor labels."""
    from matplotlib.ticker import FormatStrFormatter, NullFormatter

    getattr(ax, f"set_{which}scale")("log")
    axis = ax.xaxis if which == "x" else ax.yaxis
    if ticks is not None:
        axis.set_ticks(list(ticks))
    axis.set_major_formatter(FormatStrFormatter("%g"))
    axis.set_minor_formatter(NullFormatter())
