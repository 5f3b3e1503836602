"""No-effect bands: the smallest change of a measured effect that counts, declared per claim
before any seed is run, and the four outcomes an interval has against it.

A claim about an effect ("MHLoss lowers the spread across seeds") can end as ``no-effect``
only against a declared band: an interval that lies inside it says that whatever the effect
is, it is smaller than the band (Lakens, Scheel & Isager 2018, *AMPPS* 1: 259-269, on
equivalence testing). Against a band an interval has four outcomes (:func:`band_outcome`):

- inside the band: ``no-effect`` (an interval that excludes the null but lies inside the band
  is still ``no-effect``, its sign stated; it is not evidence *for* the claim);
- wholly beyond the band on the paper's side: ``supported``;
- wholly beyond the band on the other side: ``contradicted``;
- otherwise undecided (``None``).

The band itself follows the order of precedence of issue 39: half the effect the paper
reports for that comparison (:meth:`Band.half_paper_difference`, :meth:`Band.half_paper_ratio`),
or, where the paper reports none, ten per cent of the baseline's value for a scale-free metric
(:meth:`Band.relative`), one accuracy point for an accuracy (:meth:`Band.accuracy_point`) and
the bioequivalence interval [0.8, 1.25] for a ratio of standard deviations
(:meth:`Band.std_ratio_default`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from boundbench.errors import InvalidArgument

PAPER = "half the paper's effect"
DEFAULT = "default"

BIOEQUIVALENCE = (0.8, 1.25)  # FDA's interval for a ratio (a std ratio's default band)
RELATIVE = 0.10  # a scale-free metric's default band: +-10% of the baseline's value
ACCURACY_POINT = 0.01  # an accuracy's (or an accuracy drop's) default band: +-1 point


@dataclass(frozen=True)
class Band:
    """The band ``[low, high]`` around the null (0 for a difference, 1 for a ratio) inside
    which an effect counts as none.

    ``kind``: ``"difference"`` (a paired difference, null 0) or ``"ratio"`` (null 1).
    ``rule``: :data:`PAPER` or :data:`DEFAULT`. ``source``: where the numbers come from (the
    paper's table and its two numbers, or the measured baseline value). ``paper_effect``: the
    effect the paper reports in the same units (a difference, or a ratio), ``None`` where it
    reports none; what a budget projects the seeds to detect.
    """

    low: float
    high: float
    kind: str
    rule: str
    source: str
    paper_effect: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("difference", "ratio"):
            raise InvalidArgument(f"kind must be 'difference' or 'ratio' (got {self.kind!r})")
        null = self.null
        if not (math.isfinite(self.low) and math.isfinite(self.high)
                and self.low < null < self.high):
            raise InvalidArgument(f"a band must contain its null {null:g} strictly inside (got "
                                  f"[{self.low:g}, {self.high:g}])")
        if self.kind == "ratio" and self.low <= 0:
            raise InvalidArgument(f"a ratio's band must be positive (got low={self.low:g})")

    @property
    def null(self) -> float:
        return 0.0 if self.kind == "difference" else 1.0

    @property
    def edges(self) -> tuple[float, float]:
        return (self.low, self.high)

    def text(self) -> str:
        """The band in words, with where it comes from."""
        iv = (f"[{self.low:+.4g}, {self.high:+.4g}]" if self.kind == "difference"
              else f"[{self.low:.4g}, {self.high:.4g}]")
        return f"no-effect band {iv} ({self.rule}: {self.source})"

    def to_dict(self) -> dict:
        return asdict(self)

    # the rules of precedence -------------------------------------------------------------

    @classmethod
    def half_paper_difference(cls, baseline: float, method: float, source: str) -> Band:
        """Half the paper's reported change ``method - baseline``, either side of 0."""
        effect = method - baseline
        if effect == 0:
            raise InvalidArgument(f"the paper's effect must be nonzero to halve (got {source})")
        h = abs(effect) / 2
        return cls(-h, h, "difference", PAPER, source, paper_effect=effect)

    @classmethod
    def half_paper_ratio(cls, ratio: float, source: str) -> Band:
        """Half the paper's reported ratio on the log scale: ``ratio^(+-1/2)`` (halving the
        log keeps a ratio and its inverse alike)."""
        if not (ratio > 0 and ratio != 1):
            raise InvalidArgument(f"the paper's ratio must be positive and not 1 (got {ratio!r})")
        h = abs(math.log(ratio)) / 2
        return cls(math.exp(-h), math.exp(h), "ratio", PAPER, source, paper_effect=ratio)

    @classmethod
    def relative(cls, baseline_value: float, source: str) -> Band:
        """+-10% of the baseline method's value of a scale-free metric (distance, margin, ECE,
        Brier, CKA), on the paired difference."""
        if not (math.isfinite(baseline_value) and baseline_value != 0):
            raise InvalidArgument(f"baseline_value must be finite and nonzero (got "
                                  f"{baseline_value!r})")
        h = RELATIVE * abs(baseline_value)
        return cls(-h, h, "difference", DEFAULT,
                   f"+-10% of the baseline's {baseline_value:.4g} ({source})")

    @classmethod
    def relative_ratio(cls, source: str) -> Band:
        """+-10% on a ratio of a scale-free metric (its value at one end of a range over the
        other)."""
        return cls(1 - RELATIVE, 1 + RELATIVE, "ratio", DEFAULT, f"+-10% ({source})")

    @classmethod
    def accuracy_point(cls, source: str = "the paper reports no number") -> Band:
        """+-1 accuracy point on a paired accuracy (or accuracy-drop) difference."""
        return cls(-ACCURACY_POINT, ACCURACY_POINT, "difference", DEFAULT,
                   f"+-1 accuracy point ({source})")

    @classmethod
    def std_ratio_default(cls, source: str = "the paper reports no number") -> Band:
        """The bioequivalence interval [0.8, 1.25] for a ratio of standard deviations."""
        return cls(*BIOEQUIVALENCE, "ratio", DEFAULT,
                   f"the bioequivalence interval [0.8, 1.25] ({source})")


def band_outcome(low: float, high: float, band: Band, *, expected: str) -> str | None:
    """What an interval ``[low, high]`` of the effect decides against ``band`` for an effect
    the paper expects to ``increase`` or ``decrease``: ``no-effect`` inside the band,
    ``supported`` wholly beyond it on the expected side, ``contradicted`` wholly beyond it on
    the other, ``None`` otherwise (it straddles an edge of the band).

    >>> b = Band(-0.01, 0.01, "difference", DEFAULT, "example")
    >>> band_outcome(0.002, 0.008, b, expected="increase")  # excludes 0, inside the band
    'no-effect'
    >>> band_outcome(0.02, 0.05, b, expected="increase"), band_outcome(-0.05, -0.02, b,
    ...                                                                 expected="increase")
    ('supported', 'contradicted')
    >>> band_outcome(0.005, 0.05, b, expected="increase") is None  # straddles the edge
    True
    """
    if expected not in ("increase", "decrease"):
        raise InvalidArgument(f"expected must be 'increase' or 'decrease' (got {expected!r})")
    if not low <= high:
        raise InvalidArgument(f"low must be <= high (got {low:g} > {high:g})")
    if band.low <= low and high <= band.high:
        return "no-effect"
    if low > band.high or high < band.low:
        up = low > band.high
        return "supported" if up == (expected == "increase") else "contradicted"
    return None


def band_margin(low: float, high: float, band: Band) -> float | None:
    """How far the interval ``[low, high]`` is from changing its outcome against ``band`` (what
    makes a banded verdict *fragile*), as a fraction of the band's half-width (on the log scale
    for a ratio band): inside the band, the distance to the nearer edge; wholly beyond it, the
    distance to the edge it passed; ``None`` when it straddles an edge (nothing is decided).

    >>> b = Band(-0.01, 0.01, "difference", DEFAULT, "example")
    >>> round(band_margin(0.002, 0.008, b), 6), round(band_margin(0.0105, 0.05, b), 6)
    (0.2, 0.05)
    >>> band_margin(0.005, 0.05, b) is None
    True
    """
    if not low <= high:
        raise InvalidArgument(f"low must be <= high (got {low:g} > {high:g})")
    if band.kind == "ratio":
        def f(v: float) -> float:
            return math.log(v) if v > 0 else -math.inf
    else:
        def f(v: float) -> float:
            return v
    lo_e, hi_e = f(band.low), f(band.high)
    half = (hi_e - lo_e) / 2
    if band.low <= low and high <= band.high:
        return min(f(low) - lo_e, hi_e - f(high)) / half
    if low > band.high:
        return (f(low) - hi_e) / half
    if high < band.low:
        return (lo_e - f(high)) / half
    return None


def sign_inside(low: float, high: float, band: Band) -> str:
    """For a ``no-effect`` interval: which side of the null it lies on, in words (an interval
    that excludes the null inside the band is reported with its sign)."""
    null = band.null
    if low > null:
        return "above the null, but inside the band"
    if high < null:
        return "below the null, but inside the band"
    return "containing the null"
