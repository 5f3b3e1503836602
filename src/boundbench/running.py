"""Where an audit's claims run: in this process, on a local pool of spawned processes (one torch
thread each), or as Dask tasks; Fig. 5's blocks first. Results come back in order and the
client writes every file."""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from boundbench import catalogue
from boundbench.framework.claims import registry
from boundbench.framework.execution import context
from boundbench.framework.files.atomic import sweep_temporaries, within, write_atomic


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return x


class _DaskShared:
    """Tables shared between the workers of one run through the scheduler: a
    ``distributed.Lock`` per cache key, the parquet bytes in a ``distributed.Variable``, and
    the keys set so far in the scheduler's metadata (asking an unset ``Variable`` with a
    timeout made the scheduler print a ``TimeoutError`` traceback on the user's terminal)."""

    META, LOCKS = "boundbench-shared", "boundbench-locks"

    def __init__(self, run: str) -> None:
        from distributed import get_client

        self.client, self.run = get_client(), run

    @staticmethod
    def _name(run: str, key: str) -> str:
        return f"boundbench-{run}-{key}"

    def lock(self, key: str):
        from distributed import Lock

        self.client.set_metadata([self.LOCKS, self.run, key], True)  # for forget to close
        return Lock(self._name(self.run, key))

    def get(self, key: str) -> bytes | None:
        from distributed import Variable

        if not self.client.get_metadata([self.META, self.run, key], False):
            return None  # nobody has computed it yet
        try:
            return Variable(self._name(self.run, key), client=self.client).get(timeout=60).result()
        except Exception:  # noqa: BLE001 - lost with its worker: this worker computes it
            return None

    def put(self, key: str, data: bytes) -> None:
        from distributed import Variable

        fut = self.client.scatter(data)
        Variable(self._name(self.run, key), client=self.client).set(fut)
        self.client.set_metadata([self.META, self.run, key], True)

    @classmethod
    def forget(cls, client: Any, run: str) -> None:
        """Release the run's shared tables and close its locks: the cluster holds no scattered
        data after the run (a closing local cluster printed an ERROR that it had lost them; a
        running one kept them in its workers' memory) and no semaphore of it."""
        from distributed import Lock, Variable

        held = []
        for key in client.get_metadata([cls.META, run], {}):
            var = Variable(cls._name(run, key), client=client)
            held.append(var.get(timeout=60).key)
            var.delete()
        client.set_metadata([cls.META, run], {})
        for key in client.get_metadata([cls.LOCKS, run], {}):  # kept as semaphores otherwise
            Lock(cls._name(run, key)).close()
        client.set_metadata([cls.LOCKS, run], {})
        # the release is asynchronous: wait for it, or a local cluster closing at once still
        # holds the tables
        deadline = time.monotonic() + 10
        while held and time.monotonic() < deadline:
            try:
                held = client.run_on_scheduler(_still_known, keys=held)
            except Exception:  # noqa: BLE001 - a scheduler that runs no code (pickle off)
                return
            time.sleep(0.05 if held else 0)


def _still_known(keys: list[str], dask_scheduler: Any = None) -> list[str]:
    """Which of ``keys`` the scheduler still knows (run there by ``run_on_scheduler``)."""
    return [k for k in keys if k in dask_scheduler.tasks]


def _remote_claim(task: tuple) -> tuple[dict[str, Any], dict[str, bytes]]:
    """One claim on a Dask worker, in a private folder seeded with the client's cache; returns
    its result and every file it wrote (figure, table, config, new cache entries), which the
    client writes: workers need no shared filesystem."""
    import tempfile

    # the run's options travel whole (issue 83: an 8-tuple of them dropped seeds and sequential)
    cid, spec, cache, run = task
    catalogue.load()
    with tempfile.TemporaryDirectory(prefix="boundbench-") as d:
        root = Path(d)
        for rel, data in cache.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
        ctx = spec.context(out_dir=root, progress=False,
                           tables=context.TableCache(shared=_DaskShared(run)))
        result = registry.run(cid, ctx, catch=True).to_dict()
        files = {}
        for f in root.rglob("*"):
            rel = f.relative_to(root).as_posix()
            if f.is_file() and not f.name.endswith(".lock") and ".tmp" not in f.name and (
                    rel not in cache or f.read_bytes() != cache[rel]):
                files[rel] = f.read_bytes()
    return result, files


def one_line_warning(message: Warning | str, category: type[Warning], *args: Any,
                     **kwargs: Any) -> str:
    """A warning as the command line shows it (``warnings.formatwarning``): one line, without
    the source line the default format adds."""
    return f"boundbench: warning: {message}\n"


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (its type's name where it has none)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return " ".join(lines) if lines else type(exc).__name__


def raised_at(exc: BaseException) -> str:
    """Where ``exc`` was raised: its traceback's last frame, ``file:line in function`` (the
    command line's line for a bug of ours, issue 83)."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "an unknown place"
    f = frames[-1]
    return f"{f.filename}:{f.lineno} in {f.name}"


def from_a_ctrl_c(exc: BaseException) -> bool:
    """Whether ``exc`` is a Ctrl-C in another type: a ``KeyboardInterrupt`` that landed while a
    compiled module initialised comes back as that module's ``ImportError("initialization
    failed")`` with the interrupt as its cause (pybind11's modules: matplotlib's ``_image``, CI's
    failure at 1 s in test_interrupts)."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


def _one_line_warnings() -> None:
    """In a worker process, warnings in :func:`one_line_warning`'s form (a spawned process does
    not inherit the parent's ``warnings.formatwarning``)."""
    import warnings

    warnings.formatwarning = one_line_warning


def _failed(cid: str, ctx: registry.CheckContext, why: str, done: Any) -> dict[str, Any]:
    """The report entry of a claim whose task failed away from here (``done``: its
    :class:`~boundbench.framework.execution.executors.Done`): inconclusive, saying where and why."""
    return {**registry.get(cid).describe(), "verdict": "inconclusive",
            "reason": f"{why}: {done.error}", "evidence": {}, "figure": None, "table": None,
            "seconds": 0.0, "seed": ctx.seed, "scale": ctx.scale,
            "error": done.traceback or done.error}


def _remote_block(block: registry.Block) -> Any:
    """One block of a claim's experiment on a worker: its table (the client caches it)."""
    _one_line_warnings()
    return block.run()


def _claim_blocks(ids: list[str], ctx: registry.CheckContext) -> list[registry.Block]:
    """The blocks the claims in ``ids`` declare, each once (claims may share them)."""
    seen, out = set(), []
    for cid in ids:
        fn = registry.get(cid).blocks
        for b in (fn(ctx) if fn is not None else []):
            key = json.dumps({"name": b.name, "config": b.config}, sort_keys=True, default=str)
            if key not in seen:
                seen.add(key)
                out.append(b)
    return out


def compute_blocks(ids: list[str], ctx: registry.CheckContext, ex: Any, *,
                   progress: bool = True, desc: str = "blocks") -> int:
    """Compute on the executor ``ex`` every block the claims in ``ids`` declare and ``ctx``'s
    cache lacks, caching each as it arrives (a killed run resumes with the blocks it has);
    returns how many ran. The claims then read their blocks from the cache."""
    todo = [b for b in _claim_blocks(ids, ctx) if not ctx.is_cached(b.name, b.config)]
    for block, done in ex.map(_remote_block, todo, desc=desc, progress=progress,
                              total=len(todo)):
        if done.error is not None:
            raise RuntimeError(f"a block of {block.name} failed on its worker: {done.error}")
        ctx.cached(block.name, block.config, _constant(done.value))
    return len(todo)



def _pooled_blocks(ids: list[str], ctx: registry.CheckContext, processes: int, *,
                   progress: bool, desc: str, pool: Any = None) -> None:
    """The missing blocks of the claims in ``ids`` on a local process pool (two or more):
    ``pool`` when given (the claims' pool, so that its processes start once), else one of
    its own."""
    from boundbench.framework.execution.executors import LocalPool

    blocked = [cid for cid in ids if registry.get(cid).blocks is not None]
    if not blocked:
        return
    todo = [b for b in _claim_blocks(blocked, ctx) if not ctx.is_cached(b.name, b.config)]
    if len(todo) < 2:
        return  # one block runs as fast here, without a process to start
    with nullcontext(pool) if pool is not None else LocalPool(min(processes, len(todo))) as ex:
        # the run's one progress bar, under its name, before the bar over the claims
        compute_blocks(blocked, ctx, ex, progress=progress, desc=f"{desc}: blocks")


def _local_claim(task: tuple[str, registry.CheckContext]) -> dict[str, Any]:
    """One claim in a pool's process: it writes its files into the run's folder itself (the
    folder's cache entries are locked per key and written atomically, so claims that share a
    table compute it once, whichever process gets there first)."""
    cid, ctx = task
    _one_line_warnings()
    catalogue.load()
    return registry.run(cid, ctx, catch=True).to_dict()


def checked_claims(ids: list[str], ctx: registry.CheckContext) -> list[dict[str, Any]]:
    """``check``'s runs, in ``ids`` order: the built-in papers' claims here, one after another;
    an installed plugin's in a child process, so that its process ending (``os._exit``, a
    crash, the OOM killer) is that claim's recorded error and the others still run (issue 84;
    ``sys.exit`` is caught either way). The child costs one process start (torch and the
    catalogue), paid once for all of a run's plugin claims and only where there are some."""
    from boundbench.framework.claims.sources import papers

    ours = {k for k, p in papers().items() if p.package in ("", "boundbench")}
    theirs = [cid for cid in ids if registry.get(cid).paper not in ours]
    results: dict[str, dict[str, Any]] = {}
    if theirs:
        from boundbench.framework.execution.executors import LocalPool

        with LocalPool(1) as pool:
            results.update((r["id"], r) for r in _pooled_claims(theirs, ctx, pool,
                                                                progress=False, desc="check"))
    for cid in ids:
        if cid not in results:
            results[cid] = registry.run(cid, ctx, catch=True).to_dict()
    return [results[cid] for cid in ids]


def _pooled_claims(ids: list[str], ctx: registry.CheckContext, pool: Any, *,
                   progress: bool, desc: str) -> list[dict[str, Any]]:
    """Every claim in ``ids`` on the local process ``pool``, one torch thread each: the claims are
    independent units (what a Dask run distributes), and a claim's numbers then depend neither
    on how many cores the machine has nor on the pool's size (a serial run's torch threads do
    follow the cores, and a thread count can move a last bit: the Fig. 5 finding)."""
    quiet = replace(ctx, progress=False)  # one progress bar: the pool's, over the claims
    results: dict[str, dict[str, Any]] = {}
    started = time.time()
    try:
        for (cid, _), done in pool.map(_local_claim, [(c, quiet) for c in _spread(ids)],
                                       desc=desc, progress=progress, total=len(ids)):
            # an error: the process died, or the task did not pickle
            results[cid] = (done.value if done.error is None else
                            _failed(cid, ctx, "the claim's process failed", done))
    except KeyboardInterrupt:
        raise _interrupted(ids, ctx, len(results), started) from None
    return [results[cid] for cid in ids]


def _interrupted(ids: list[str], ctx: registry.CheckContext, returned: int,
                 started: float) -> KeyboardInterrupt:
    """What a Ctrl-C says: how many claims had finished, counted from their files (a pool's
    worker writes a claim's files before its result reaches this process, so results alone
    undercount: "0 of 6" while one claim's files were written)."""
    done = returned
    where = ""
    if ctx.out_dir is not None:
        out = Path(ctx.out_dir)
        on_disk = sum(1 for cid in ids if (f := out / f"{cid}.json").exists()
                      and f.stat().st_mtime >= started)
        done = max(done, on_disk)
        where = f"; their files are in {out}, the experiment tables cached in {out / '.cache'}"
    return KeyboardInterrupt(f"{done} of {len(ids)} claims had finished{where}")


def _constant(value: Any) -> Callable[[], Any]:
    """A computation that returns ``value`` (a block computed on a worker, cached here)."""
    return lambda: value


def _cache_files(out: Path, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    """The client's cache entries (tables, sidecars, configs) as bytes by relative path,
    leaving out the entries named ``skip`` (``<name>-<key>.*``)."""
    cache = out / ".cache"
    if not cache.exists():
        return {}
    return {f.relative_to(out).as_posix(): f.read_bytes() for f in cache.iterdir()
            if f.is_file() and not f.name.endswith(".lock") and ".tmp" not in f.name
            and ".bad-" not in f.name and not any(f.name.startswith(f"{n}-") for n in skip)}


def _spread(ids: list[str]) -> list[str]:
    """``ids`` round-robin over their claim modules: claims that share a table sit in one
    module, so spreading them keeps them from running at the same time on two workers (the
    later one then starts with the earlier one's cached table)."""
    groups: dict[str, list[str]] = {}
    for cid in ids:
        groups.setdefault(registry.get(cid).check.__module__, []).append(cid)
    lanes = list(groups.values())
    return [lane[i] for i in range(max(map(len, lanes), default=0)) for lane in lanes
            if i < len(lane)]


def _write_bytes(path: Path, *, data: bytes) -> None:
    path.write_bytes(data)



def run_claims(ids: list[str], ctx: registry.CheckContext, *, workers: int | None = None,
               scheduler: str | None = None, progress: bool = True,
               desc: str = "audit", processes: int | None = None) -> list[dict[str, Any]]:
    """Every claim in ``ids`` with ``ctx``: here, one after another (the default), or as Dask
    tasks (``workers``: a local cluster of that many processes; ``scheduler``: a running
    cluster's address). Results come back in ``ids`` order; the client writes every file.
    ``processes``: in a run here, the blocks of the claims that declare them (Fig. 5's heads)
    are computed first, then the claims themselves, on a
    :class:`~boundbench.framework.execution.executors.LocalPool` of up to that many processes (the
    command line gives the cores), which needs a script's ``if __name__ == "__main__":``
    guard, hence not by default; ``processes=1`` runs them here. Every claim runs on one torch
    thread wherever it runs (:func:`~boundbench.framework.claims.registry.run`), so its bits do not
    depend on the path or the machine's core count."""
    if ctx.out_dir is not None:
        sweep_temporaries(Path(ctx.out_dir))  # what killed runs left half-written
    if workers is None and scheduler is None:
        if processes is not None and processes > 1 and ctx.out_dir is not None:
            if len(ids) > 1:
                from boundbench.framework.execution.executors import LocalPool

                # one pool for the blocks and then the claims: a process's start (torch and
                # the catalogue, ~4 s of a core) is paid once, not twice
                with LocalPool(min(processes, len(ids))) as pool:
                    _pooled_blocks(ids, ctx, processes, progress=progress, desc=desc, pool=pool)
                    return _pooled_claims(ids, ctx, pool, progress=progress, desc=desc)
            _pooled_blocks(ids, ctx, processes, progress=progress, desc=desc)
        finished: list[dict[str, Any]] = []
        started = time.time()
        try:
            for cid in tqdm(ids, desc=desc, unit="claim", disable=not progress):
                finished.append(registry.run(cid, ctx, catch=True).to_dict())
        except KeyboardInterrupt:
            raise _interrupted(ids, ctx, len(finished), started) from None
        return finished
    from boundbench.framework.execution.executors import DaskExecutor, executor

    out = Path(ctx.out_dir) if ctx.out_dir is not None else None
    results: dict[str, dict[str, Any]] = {}
    # claims that declare blocks (Fig. 5's heads): their blocks are the cluster's tasks, then
    # the claims read them here; the other claims are tasks themselves
    blocked = [cid for cid in ids if registry.get(cid).blocks is not None] if out else []
    spread = [cid for cid in ids if cid not in blocked]
    skip = tuple({b.name for b in _claim_blocks(blocked, ctx)}) if blocked else ()
    # each task carries the cache as it stands when the task starts, so a table one claim
    # computed is reused by the claims that start after it (as in a serial run); blocks stay
    # with the client, which is the only one to read them
    cache = _cache_files(out, skip) if out is not None else {}
    run = f"{os.getpid()}-{time.time_ns()}"  # names this run's shared tables on the cluster
    tasks = ((cid, ctx.spec, dict(cache), run) for cid in _spread(spread))
    with executor(workers=workers, scheduler=scheduler) as ex:
        if blocked:
            compute_blocks(blocked, ctx, ex, progress=progress)
            for cid in blocked:
                results[cid] = registry.run(cid, ctx, catch=True).to_dict()
        try:
            for task, done in ex.map(_remote_claim, tasks, desc=desc, progress=progress,
                                     total=len(spread)):
                cid = task[0]
                if done.error is not None:
                    results[cid] = _failed(cid, ctx, "the task failed on its worker", done)
                    continue
                result, files = done.value
                if out is not None:
                    for rel, data in files.items():
                        # a worker names the files it wrote: none may land outside the folder
                        write_atomic(within(out, rel, what="a worker's file"),
                                     partial(_write_bytes, data=data))
                cache.update({rel: data for rel, data in files.items()
                              if rel.startswith(".cache/")})
                results[cid] = result
        finally:
            if isinstance(ex, DaskExecutor):  # always, with workers or a scheduler
                _DaskShared.forget(ex.client, run)
    return [results[cid] for cid in ids]


# what every claim entry of a report holds (what the report's renderers read)
