"""Files written so that a killed process never leaves half of one, read back only when their
content hash checks, and computed by one process at a time.

Every result file is written to a temporary name in its folder and renamed onto its own
(:func:`write_atomic`); cache entries also get a ``<name>.sha256`` sidecar, written after the
file, which :func:`read_verified` checks. A file that is missing its sidecar, fails the hash or
cannot be parsed is named in a warning, set aside as ``<name>.bad-<time>`` and treated as
absent, so the caller recomputes it. :func:`key_lock` (``filelock``) keeps two processes from
computing or writing one entry at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from boundbench.errors import InvalidArgument

SIDECAR = ".sha256"


def cache_dir(kind: str) -> Path:
    """The folder of the machine-wide cache ``kind`` (``"features"``, ``"surt"``):
    ``$BOUNDBENCH_CACHE/<kind>``, by default ``~/.cache/boundbench/<kind>``; the one place the
    variable is read (a run's own tables live in its ``--out``'s ``.cache``)."""
    import os

    root = os.environ.get("BOUNDBENCH_CACHE") or Path.home() / ".cache" / "boundbench"
    return Path(root) / kind


def write_atomic(path: Path, write: Callable[[Path], Any]) -> None:
    """``write(tmp)`` to a temporary name in ``path``'s folder, then rename it onto ``path``: a
    killed process leaves the old file or none, never half a file.

    The temporary lives in a private folder that ``tempfile.mkdtemp`` creates with an
    unpredictable name, exclusively and mode 0700 (``.<stem>.<pid>.tmp<random>/``), so nothing
    planted beforehand (a symlink at a guessable name) can redirect the write; the rename onto
    ``path`` replaces a link at ``path`` itself rather than following it."""
    import shutil
    import tempfile

    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        box = Path(tempfile.mkdtemp(prefix=f".{path.stem}.{os.getpid()}.tmp", dir=path.parent))
    except OSError as exc:  # name the file asked for, not a temporary (issue 65)
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
    tmp = box / f".{path.stem}.tmp{path.suffix}"  # the suffix: writers pick a format by it
    try:
        write(tmp)
        os.replace(tmp, path)
    except OSError as exc:
        if exc.filename is not None and str(box) in str(exc.filename):
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
        raise
    finally:
        shutil.rmtree(box, ignore_errors=True)


def write_together(files: dict[Path, str]) -> None:
    """Write several text files of one folder as one change: every text to a temporary in one
    private folder there first (as :func:`write_atomic`), then each renamed onto its name. A
    write that fails (a full disk) replaces none of them, and its error names the file asked
    for; only the renames, each atomic, run once every text is on the disk."""
    import shutil
    import tempfile

    if not files:
        return
    folders = {Path(p).parent for p in files}
    if len(folders) != 1:
        raise InvalidArgument(f"write_together writes into one folder (got {sorted(map(str, folders))})")
    folder = folders.pop()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        box = Path(tempfile.mkdtemp(prefix=f".together.{os.getpid()}.tmp", dir=folder))
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), str(folder)) from None
    try:
        staged = []
        for i, (path, text) in enumerate(files.items()):
            tmp = box / f"{i}{Path(path).suffix}"
            try:
                tmp.write_text(text)
            except OSError as exc:  # name the file asked for, not a temporary
                raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
            staged.append((tmp, Path(path)))
        for tmp, path in staged:
            os.replace(tmp, path)
    finally:
        shutil.rmtree(box, ignore_errors=True)


def sweep_temporaries(folder: Path) -> int:
    """Remove the temporaries (``.<stem>.<pid>.tmp*``, files of older versions and the private
    folders of :func:`write_atomic`) that killed writers left under ``folder``, those whose
    process is gone; return how many. They are never read, only clutter."""
    import re
    import shutil

    folder = Path(folder)
    if not folder.is_dir():
        return 0
    gone = 0
    for f in list(folder.rglob(".*.tmp*")):
        m = re.fullmatch(r"\..+\.(\d+)\.tmp[^/]*", f.name)
        if not m or f.is_symlink() or not (f.is_file() or f.is_dir()):
            continue
        pid = int(m.group(1))
        try:
            os.kill(pid, 0)  # alive (maybe writing it now): leave it
            continue
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        if f.is_dir():
            shutil.rmtree(f, ignore_errors=True)
        else:
            f.unlink(missing_ok=True)
        gone += 1
    return gone + _sweep_locks(folder)


def _sweep_locks(folder: Path) -> int:
    """Remove the zero-byte ``*.lock`` files older versions left (they kept their lock files):
    each one nobody holds, taken and removed while held (:func:`key_lock`'s protocol)."""
    from filelock import FileLock, Timeout

    gone = 0
    for f in list(folder.rglob("*.lock")):
        if f.is_symlink() or not f.is_file() or f.stat().st_size:
            continue
        try:
            with FileLock(str(f), timeout=0):
                f.unlink(missing_ok=True)
                gone += 1
        except (Timeout, OSError):
            continue  # held (a run is using it) or not ours to take
    return gone


def within(root: Path, path: Path, *, what: str = "path") -> Path:
    """``path`` resolved (links followed), if it lies inside ``root`` resolved; else a
    ``ValueError`` naming both. Every file read or written through ``--out`` goes through it:
    a link inside the folder (a ``.cache`` that points elsewhere, a report's ``table`` of
    ``../x.csv``) must not take a read or a write outside it."""
    base = Path(root).resolve()
    full = (Path(root) / path).resolve() if not Path(path).is_absolute() else Path(path).resolve()
    if full != base and not full.is_relative_to(base):
        raise InvalidArgument(f"{what} {path} resolves to {full}, outside the output folder {base}: "
                              "refused (a link, or a path that leaves the folder)")
    return full


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + SIDECAR)


def write_verified(path: Path, write: Callable[[Path], Any]) -> str:
    """:func:`write_atomic`, then the file's sha256 into its sidecar (also atomically; a kill in
    between leaves a file without a valid sidecar, which a read sets aside). Returns the hash."""
    path = Path(path)
    write_atomic(path, write)
    digest = sha256_file(path)
    write_atomic(_sidecar(path), lambda t: t.write_text(f"{digest}  {path.name}\n"))
    return digest


KEEP_BAD = 3  # set-aside copies kept per file name: enough to inspect, never a pile


def set_aside(path: Path, why: str, *, then: str = "recomputing") -> Path:
    """Rename a bad file (and its sidecar) out of the way, with a warning naming both and the
    folder and what happens ``then``; only the newest :data:`KEEP_BAD` set-aside copies of a
    name are kept."""
    path = Path(path)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    bad = path.with_name(f"{path.name}.bad-{stamp}-{os.getpid()}-{time.time_ns() % 10**9}")
    with contextlib.suppress(FileNotFoundError):
        os.replace(path, bad)
    _sidecar(path).unlink(missing_ok=True)
    def mtime(p: Path) -> int:
        try:
            return p.stat().st_mtime_ns
        except FileNotFoundError:  # removed by a concurrent run
            return -1

    old = sorted(path.parent.glob(f"{path.name}.bad-*"), key=mtime)
    for extra in old[:-KEEP_BAD]:
        extra.unlink(missing_ok=True)
    warnings.warn(f"{path}: {why}; set aside as {bad} (the newest {KEEP_BAD} such copies are "
                  f"kept), {then}", stacklevel=3)
    return bad


def read_verified(path: Path, read: Callable[[Path], Any], *,
                  check: Callable[[Any], str | None] | None = None) -> Any | None:
    """``read(path)`` if ``path`` exists, its sidecar hash matches and ``check(value)`` (a
    description of what is wrong, or ``None``) passes; ``None`` if the file is absent; a file
    that fails any of these is set aside (:func:`set_aside`) and ``None`` returned."""
    path = Path(path)
    if not path.exists():
        return None
    side = _sidecar(path)
    if not side.exists():
        set_aside(path, f"no {SIDECAR} sidecar (unverifiable: an interrupted or foreign write)")
        return None
    want = side.read_text().split()[0] if side.read_text().strip() else ""
    got = sha256_file(path)
    if got != want:
        set_aside(path, f"sha256 {got[:12]}... does not match its sidecar's {want[:12]}... "
                  "(truncated or edited)")
        return None
    try:
        value = read(path)
    except Exception as exc:  # a file that hashes right but does not parse is still bad
        set_aside(path, f"unreadable ({type(exc).__name__}: {exc})")
        return None
    problem = check(value) if check is not None else None
    if problem:
        set_aside(path, problem)
        return None
    return value


def write_json(path: Path, obj: Any) -> str:
    """``obj`` as JSON, written with :func:`write_verified`."""
    text = json.dumps(obj, default=str)
    return write_verified(path, lambda t: t.write_text(text))


def read_json(path: Path, *, required: tuple[str, ...] = ()) -> Any | None:
    """A JSON object written by :func:`write_json`, verified, with the ``required`` keys, or
    ``None`` (absent, or set aside)."""
    def check(obj: Any) -> str | None:
        if required and not isinstance(obj, dict):
            return f"expected a JSON object, found {type(obj).__name__}"
        missing = [k for k in required if k not in obj]
        return f"missing keys {missing}" if missing else None

    return read_verified(path, lambda p: json.loads(p.read_text()), check=check)


@contextlib.contextmanager
def key_lock(path: Path, *, timeout: float = -1) -> Iterator[None]:
    """Hold ``<path>.lock`` (a ``filelock.FileLock``) so that two processes never compute or
    write the entry ``path`` at once; the second waits, then finds the first one's result.

    The lock file is removed on release, while still held, so no zero-byte ``*.lock`` stays in
    ``--out``. That is safe only because filelock >= 4.3.1 re-opens a lock file whose inode was
    unlinked before its ``flock`` succeeded (``st_nlink == 0``); a plain ``flock`` without that
    check lets two holders in at once (tests/test_files.py has both, the control too).
    """
    from filelock import FileLock

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.with_name(path.name + ".lock")
    with FileLock(str(lock_path), timeout=timeout):
        try:
            yield
        finally:
            lock_path.unlink(missing_ok=True)
