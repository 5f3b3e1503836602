"""boundbench's exceptions and exit statuses, in one place (after Hypothesis's ``errors.py`` and
scikit-learn's ``exceptions``).

Every exception boundbench raises on purpose is a :class:`BoundbenchError`. The two a user
meets are also ``ValueError`` s, so code written against a plain ``ValueError`` keeps working:

* :class:`InvalidArgument`: a parameter outside its declared range (the message names the
  parameter and the violated condition; ``tests/test_fuzz_api.py`` holds every public function
  to it), a malformed file of the user's, an unknown name;
* :class:`ClaimError`: a paper's or claim's definition is wrong (a plugin's registration, a
  check that returns something other than an outcome): its author's mistake;
* :class:`ComputationError`: a computation that did not succeed on inputs it accepted (a
  solver's status other than optimal, an iteration that did not converge, training that
  diverged, cells that failed on their workers).

:class:`ExitCode` is the one contract between the command line and a shell: every
``boundbench`` command returns one of its members (``boundbench.cli.COMMAND_EXITS`` says which
each command can return; ``tests/test_exit_codes.py`` drives every command to each).
"""

from __future__ import annotations

import enum

__all__ = ["BoundbenchError", "ClaimError", "ComputationError", "ExitCode", "InvalidArgument",
           "SizeError"]


class BoundbenchError(Exception):
    """The base of every exception boundbench raises on purpose.

    Parameters
    ----------
    message : str
        What went wrong, in one line (the command line prints it as it is).

    Examples
    --------
    >>> from boundbench.errors import BoundbenchError, InvalidArgument
    >>> try:
    ...     raise InvalidArgument("n must be >= 2 (got 1)")
    ... except BoundbenchError as exc:
    ...     print(exc)
    n must be >= 2 (got 1)
    """

    def __init__(self, message: str = "") -> None:
        super().__init__(message)


class InvalidArgument(BoundbenchError, ValueError, TypeError):
    """A parameter, option or input file outside what it accepts: the message names it and
    the condition it violates (exit :attr:`ExitCode.USAGE` on the command line). A
    ``ValueError`` and a ``TypeError`` both, as hypothesis's ``InvalidArgument`` and
    scikit-learn's ``InvalidParameterError`` are: a value of the wrong type or out of range is
    the same mistake, and code that catches either keeps working.

    Parameters
    ----------
    message : str
        The parameter, the condition it violates and the value given.

    Examples
    --------
    >>> import boundbench as bb
    >>> try:
    ...     bb.CheckContext(seed=-1)
    ... except bb.InvalidArgument as exc:
    ...     print(isinstance(exc, ValueError), "seed" in str(exc))
    True True
    """


class SizeError(InvalidArgument):
    """A call whose sizes ask for more memory than the machine has (raised by
    :func:`boundbench.framework.inputs.validate.checked` in place of a ``MemoryError`` or torch's
    allocation error, naming the call's sizes: make them smaller).

    Parameters
    ----------
    message : str
        The call with its sizes, and the allocation that failed.

    Examples
    --------
    >>> from boundbench.errors import InvalidArgument, SizeError
    >>> issubclass(SizeError, InvalidArgument)
    True
    """


class ClaimError(BoundbenchError, ValueError):
    """A paper's or claim's definition is invalid: its registration (an unknown paper, a
    clashing key or id, a field out of range) or its check's return value (exit
    :attr:`ExitCode.USAGE`: the plugin's author fixes it).

    Parameters
    ----------
    message : str
        The claim or paper and what is wrong with its definition.

    Examples
    --------
    >>> import boundbench as bb
    >>> try:
    ...     bb.claim("mynotes.x", paper="mynotes", where="eq. 1", kind="lemma",
    ...              statement="s", equation="e")
    ... except bb.ClaimError as exc:
    ...     print(exc)
    kind must be one of ('bound', 'equality', 'trend') (got 'lemma')
    """


class ComputationError(BoundbenchError, ValueError):
    """A computation that did not succeed on inputs it accepted: a convex solver's status other
    than optimal, a Newton iteration that did not reach its tolerance, training that diverged,
    fine-tuning cells that failed on their workers. Often the inputs' doing (a degenerate
    dataset), so the command line answers it as it answers a ``ValueError``: one line, exit
    :attr:`ExitCode.USAGE`.

    Parameters
    ----------
    message : str
        What did not succeed, with the status or tolerance it ended at.

    Examples
    --------
    >>> from boundbench.errors import ComputationError, InvalidArgument
    >>> issubclass(ComputationError, ValueError), issubclass(ComputationError, InvalidArgument)
    (True, False)
    """


class ExitCode(enum.IntEnum):
    """What a ``boundbench`` command tells the shell, as pytest's statuses do: a researcher's
    CI job fails on a finding, and a finding, a usage error and our bug are told apart.

    * ``OK`` (0): done; nothing went against its paper (``check``), no ratio above 1
      (``falsify``);
    * ``FINDING`` (1): a bound violated or a trend contradicted (``check``: a claim whose
      verdict, or a decided reading of it, goes against its paper; ``falsify``: a ratio above 1);
    * ``USAGE`` (2): a usage error, one line naming the parameter or file
      (:class:`InvalidArgument`, a malformed input, a folder the file system refuses);
    * ``CHECK_RAISED`` (3): a check raised, or boundbench failed in another way: our bug,
      please report it (``falsify FILE:FUNC``: your bound raised on every instance, or returned
      no finite ``(lhs, rhs)``);
    * ``TIME_LIMIT`` (4): ``check`` only: a claim ran past its time limit and was stopped, so it
      has no verdict (a claim's ``time_limit`` or a faster machine would let it finish);
    * ``DISK_FULL`` (5): the disk (or a quota) is full: the file is named, and the files being
      replaced are left as they were (a partial write is never renamed into place);
    * ``INTERRUPTED`` (130): stopped by Ctrl-C or SIGTERM; finished work is kept and a rerun
      resumes.

    Parameters
    ----------
    value : int
        The status, as a shell sees it.

    Examples
    --------
    >>> from boundbench.errors import ExitCode
    >>> ExitCode(1).name, int(ExitCode.CHECK_RAISED)
    ('FINDING', 3)
    >>> from boundbench import cli
    >>> [c.name for c in cli.COMMAND_EXITS["check"]]
    ['OK', 'FINDING', 'USAGE', 'CHECK_RAISED', 'TIME_LIMIT', 'DISK_FULL', 'INTERRUPTED']
    """

    OK = 0
    FINDING = 1
    USAGE = 2
    CHECK_RAISED = 3
    TIME_LIMIT = 4
    DISK_FULL = 5
    INTERRUPTED = 130

    @property
    def meaning(self) -> str:
        """The status in a few words (each command's ``--help`` lists its own with these)."""
        return _MEANINGS[self]


_MEANINGS = {
    ExitCode.OK: "done",
    ExitCode.FINDING: "a finding (a bound violated or a trend contradicted)",
    ExitCode.USAGE: "a usage error (one line naming it)",
    ExitCode.CHECK_RAISED: "a check raised or boundbench failed (our bug: report it)",
    ExitCode.TIME_LIMIT: "a claim stopped by its time limit (no verdict)",
    ExitCode.DISK_FULL: "the disk is full (the file named, nothing half-written)",
    ExitCode.INTERRUPTED: "interrupted (finished work is kept)",
}


_EVERY = (ExitCode.OK, ExitCode.USAGE, ExitCode.CHECK_RAISED, ExitCode.DISK_FULL,
          ExitCode.INTERRUPTED)
_FINDS = (ExitCode.OK, ExitCode.FINDING, ExitCode.USAGE, ExitCode.CHECK_RAISED,
          ExitCode.DISK_FULL, ExitCode.INTERRUPTED)
# check's own: a claim stopped by its time limit never finished, which a CI step must see
_CHECK = (*_FINDS[:4], ExitCode.TIME_LIMIT, *_FINDS[4:])
_READS = (ExitCode.OK, ExitCode.USAGE, ExitCode.CHECK_RAISED, ExitCode.INTERRUPTED)

#: The exit statuses each command returns (:class:`ExitCode` says what each means;
#: each command's ``--help`` lists its own, ``tests/test_exit_codes.py`` drives every command
#: to each). Only ``check``, ``falsify`` and ``prove`` report a finding by their status: an audit's
#: findings are its report (the papers contain errors; an audit that always failed would tell
#: a CI job nothing).
COMMAND_EXITS: dict[str, tuple[ExitCode, ...]] = {
    "claims": _READS, "check": _CHECK, "audit": _EVERY, "errata": _EVERY, "findings": _EVERY,
    "new-paper": _EVERY, "regenerate": _EVERY, "falsify": _FINDS, "prove": _FINDS,
    "figures": _EVERY, "decide": _EVERY,
    "plm run": _EVERY, "plm sweep": _EVERY,
}


def exits_epilog(command: str) -> str:
    """The ``--help`` line of ``command``'s exit statuses, from :data:`COMMAND_EXITS`."""
    return "exit status: " + "; ".join(f"{int(c)} {c.meaning}" for c in COMMAND_EXITS[command])
