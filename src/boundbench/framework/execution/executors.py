"""Where units of work run: in this process (the default), or on a Dask cluster.

``executor(workers=None, scheduler=None)`` gives :class:`Serial` (no Dask import, exactly the
behaviour of a plain loop) unless ``workers`` (a ``LocalCluster`` of that many processes) or
``scheduler`` (the address of a running Dask scheduler: a ``dask-jobqueue`` cluster, Kubernetes,
...) is given. Both map a picklable function over items and yield ``(item, Done)`` as results
arrive; the caller writes them (results travel back to the client, so workers need no shared
filesystem), with the same atomic writes, hash checks and locks as a serial run.

A task that raises comes back as a failure carrying its remote traceback's last line; a worker
that dies mid-task has its task retried elsewhere (Dask's ``retries``).
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from boundbench.errors import InvalidArgument


@dataclass(frozen=True)
class Done:
    """One unit's outcome: ``value`` or, when it raised, ``error`` (the traceback's last line)
    and ``traceback``."""

    value: Any = None
    error: str | None = None
    traceback: str | None = None


def _threads_for(share: int | None) -> None:
    """Give torch (and BLAS) this task's share of the cores, so processes do not oversubscribe."""
    if share:
        import torch

        torch.set_num_threads(share)


class one_torch_thread:  # noqa: N801 - used as a context manager, like torch.no_grad
    """Torch on one thread inside the block, the count restored after: what every claim runs
    with (:func:`~boundbench.framework.claims.registry.run`), so that its bits do not follow the
    caller's core count.

    Where torch is not imported yet it is left alone (importing it costs seconds, and a bound
    written in numpy, as ``falsify FILE.py:FUNCTION`` runs, never touches it): every claim's
    module imports torch when the catalogue loads, so a claim always runs on one thread."""

    def __enter__(self) -> None:
        import sys

        self.torch = sys.modules.get("torch")
        if self.torch is not None:
            self.before = self.torch.get_num_threads()
            self.torch.set_num_threads(1)

    def __exit__(self, *exc: object) -> None:
        if self.torch is not None:
            self.torch.set_num_threads(self.before)


def _pin_gpu() -> None:
    """On a local cluster's worker ``i``, make ``cuda:(i mod #GPUs)`` the current device, so a
    node with k GPUs runs k cells at once, each on its own device."""
    import torch

    if not torch.cuda.is_available():
        return
    from distributed import get_worker

    name = get_worker().name
    if isinstance(name, int):
        torch.cuda.set_device(name % torch.cuda.device_count())


def _call(fn: Callable[[Any], Any], item: Any, share: int | None, pin: bool = False) -> Done:
    import traceback

    _threads_for(share)
    if pin:
        _pin_gpu()
    try:
        return Done(fn(item))
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - travels back as a reported failure
        # (a unit's sys.exit too, issue 84: it left the parent's map as SystemExit, ending it)
        tb = traceback.format_exc()
        return Done(error=f"{type(exc).__name__}: {exc}".splitlines()[0], traceback=tb)


class Serial:
    """Runs every unit here, one after another (the default)."""

    workers = 1

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], *, desc: str = "",
            progress: bool = True, resources: dict[str, float] | None = None,
            total: int | None = None) -> Iterator[tuple[Any, Done]]:
        from tqdm.auto import tqdm

        for item in tqdm(items, desc=desc, disable=not progress, total=total):
            yield item, _call(fn, item, None)

    def close(self) -> None:
        pass

    def __enter__(self) -> Serial:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


@contextlib.contextmanager
def _sigint_deferred() -> Iterator[None]:
    """A Ctrl-C held back while the pool's state changes (its processes starting, its units
    submitted) and delivered after, where :class:`LocalPool` can stop cleanly: one that
    landed half-way left a pool that neither ran nor shut down (leaked semaphores, a hang)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _worker_start(parent: int) -> None:
    """Each pool worker's start (issue 65): a terminal's Ctrl-C reaches the whole process
    group, and a worker that raised it in the middle of a claim (holding a file lock) hung the
    run; the parent alone answers it (:meth:`LocalPool.stop`). And a worker exits when its
    parent is gone (a ``kill -9`` of the run), checked every half second by a daemon thread:
    a ``prctl(PR_SET_PDEATHSIG)`` would follow the thread that spawned it, not the process."""
    import signal
    import threading

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # tqdm's default write lock is a multiprocessing RLock, a named semaphore that a worker
    # terminated by a stop never unlinks ("leaked semaphore objects" at exit): a thread lock
    # does here, where the bars are off anyway
    from tqdm import tqdm

    tqdm.set_lock(threading.RLock())

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)  # the parent died: nothing will read this worker's result

    threading.Thread(target=watch, name="boundbench-parent-watch", daemon=True).start()


class LocalPool:
    """Units on ``workers`` processes of this machine (spawned, one torch thread each), as
    results arrive: what the command line uses to spread a claim's blocks over the cores
    without Dask. A unit that raises, or whose process dies, comes back as a failure.

    Interruption is one state machine (issue 65): the workers ignore SIGINT and exit when the
    parent dies (:func:`_worker_start`); a Ctrl-C in the parent leaves :meth:`map` as a
    ``KeyboardInterrupt``, and leaving the pool's ``with`` on it calls :meth:`stop`: pending
    units cancelled, the running ones' processes terminated within :data:`STOP_SECONDS` (their
    files are written atomically, so what finished is kept and a rerun resumes), a second
    Ctrl-C meanwhile kills them at once."""

    STOP_SECONDS = 3.0
    #: the command line is on its way out after a stop: a later Ctrl-C (the second of a
    #: double one) must not interrupt its last line and exit (set by ``boundbench.cli``)
    ignore_after_stop = False

    def __init__(self, workers: int) -> None:
        if not (isinstance(workers, int) and workers >= 1):
            raise InvalidArgument(f"workers must be an integer >= 1 (got {workers!r})")
        self.workers = workers
        self._start()

    def _start(self) -> None:
        """A new pool of :attr:`workers` processes (at the start, and after one broke)."""
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        # spawned, not forked: a fork after torch's thread pool started can hang
        with _sigint_deferred():
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers, mp_context=mp.get_context("spawn"),
                initializer=_worker_start, initargs=(os.getpid(),))

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], *, desc: str = "",
            progress: bool = True, resources: dict[str, float] | None = None,
            total: int | None = None) -> Iterator[tuple[Any, Done]]:
        from tqdm.auto import tqdm

        items = list(items)
        left, strikes = list(range(len(items))), [0] * len(items)
        with tqdm(desc=desc, disable=not progress, total=len(items)) as bar:
            while left:
                # a process that ends (os._exit, a crash, the OOM killer) breaks the whole pool:
                # it is rebuilt and what had not finished runs again; a unit unfinished at two
                # breaks runs alone, so its own end is its failure, not its neighbours' (issue
                # 84: one plugin claim's os._exit was every claim's error)
                batch = [i for i in left if strikes[i] >= 2][:1] or [i for i in left]
                for i, done in self._batch(fn, items, batch):
                    if done is None:
                        strikes[i] += 1
                        continue
                    left.remove(i)
                    bar.update(1)
                    yield items[i], done

    def _batch(self, fn: Callable[[Any], Any], items: list[Any], batch: list[int]
               ) -> Iterator[tuple[int, Done | None]]:
        """``batch``'s units on the pool as they finish: each one's result, or ``None`` for a
        unit the pool's breaking left unfinished (a unit alone: its failure); a broken pool is
        rebuilt before this returns."""
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        with _sigint_deferred():  # the workers start on the first submit
            futures = {self._pool.submit(_call, fn, items[i], 1): i for i in batch}
        pending, broken = set(futures), False
        while pending:
            # a bounded wait: a Ctrl-C that the kernel handed to another thread (torch's) is
            # only seen when this thread runs Python again; an unbounded wait saw it when the
            # next claim finished, up to a minute later (issue 65)
            done_now, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
            for f in done_now:
                try:
                    result: Done | None = f.result()
                except BrokenProcessPool as exc:
                    broken = True
                    result = None if len(batch) > 1 else Done(
                        error=f"its process ended abruptly (os._exit, a crash or the OOM "
                              f"killer): {exc}")
                except Exception as exc:  # noqa: BLE001 - the unit did not pickle
                    result = Done(error=f"{type(exc).__name__}: {exc}")
                yield futures[f], result
        if broken:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._start()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def stop(self) -> None:
        """Stop now: cancel what has not started, terminate the workers (SIGTERM, then SIGKILL
        after :data:`STOP_SECONDS`); a Ctrl-C while this runs kills them at once."""
        import signal

        procs = [p for p in list((getattr(self._pool, "_processes", None) or {}).values())
                 if p.is_alive()]

        def kill(*_: Any) -> None:
            for p in procs:
                if p.is_alive():
                    p.kill()

        old = signal.signal(signal.SIGINT, kill)
        try:
            self._pool.shutdown(wait=False, cancel_futures=True)
            for p in procs:
                p.terminate()
            deadline = time.monotonic() + self.STOP_SECONDS
            for p in procs:
                p.join(max(0.0, deadline - time.monotonic()))
            kill()
            for p in procs:
                p.join(1.0)
            # the call queue's feeder thread may wait forever to flush into a pipe no worker
            # reads any more; joining it (here, or at exit) would hang the run
            queue = getattr(self._pool, "_call_queue", None)
            if queue is not None:
                queue.cancel_join_thread()
        finally:
            signal.signal(signal.SIGINT, signal.SIG_IGN if self.ignore_after_stop else old)

    def __enter__(self) -> LocalPool:
        return self

    def __exit__(self, kind: Any, *exc: Any) -> None:
        if kind is not None and issubclass(kind, KeyboardInterrupt | SystemExit):
            self.stop()
        else:
            self.close()


def cores() -> int:
    """The cores this process may run on (its affinity, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class DaskExecutor:
    """Units as Dask tasks: on a ``LocalCluster`` of ``workers`` processes (one task at a time
    each, torch on ``cores / workers`` threads), or on the cluster at ``scheduler``."""

    def __init__(self, *, workers: int | None = None, scheduler: str | None = None,
                 retries: int = 2) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError as exc:
            raise InvalidArgument("--workers/--scheduler need Dask: pip install -e '.[dist]'") from exc
        if (workers is None) == (scheduler is None):
            raise InvalidArgument("give exactly one of workers (a local cluster) and scheduler "
                                  "(an address)")
        self.retries = retries
        self._cluster = None
        # task keys unique over this executor's life: Dask gives a submitted key that is still
        # held the result it already has, so a second map restarting a count at 0 got the
        # first map's results back (a counter per map did; id(self) can be reused)
        self._token, self._submitted = uuid.uuid4().hex[:12], 0
        self.pin = False  # a cluster of your own pins its workers (e.g. CUDA_VISIBLE_DEVICES)
        if workers is not None:
            if not (isinstance(workers, int) and workers >= 1):
                raise InvalidArgument(f"workers must be an integer >= 1 (got {workers!r})")
            import torch

            # one worker per GPU holds that GPU (a "GPU" resource, which a GPU cell asks for)
            # and is pinned to it by its index; workers beyond the GPUs hold none, so they run
            # CPU cells and never stack GPU cells on a device another worker owns
            gpus = torch.cuda.device_count()
            first = min(workers, gpus) if gpus else workers
            self._cluster = LocalCluster(n_workers=first, threads_per_worker=1,
                                         processes=True, dashboard_address=None,
                                         **({"resources": {"GPU": 1}} if gpus else {}))
            self.pin = bool(gpus)
            self.client = Client(self._cluster)
            if workers > first:
                spec = self._cluster.new_spec
                options = {k: v for k, v in spec["options"].items() if k != "resources"}
                self._cluster.new_spec = {**spec, "options": options}
                self._cluster.scale(workers)
                self.client.wait_for_workers(workers, timeout=120)
            self.share: int | None = max(1, (os.cpu_count() or 1) // workers)
        else:
            self.client = Client(scheduler, timeout="30s")
            self.share = None  # each worker's own thread count (its --nthreads)
        self.workers = len(self.client.scheduler_info()["workers"])

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], *, desc: str = "",
            progress: bool = True, resources: dict[str, float] | None = None,
            total: int | None = None) -> Iterator[tuple[Any, Done]]:
        """As results arrive. At most one task per worker is in flight and the next item is
        drawn from ``items`` only when one finishes, so a lazy ``items`` can carry what the
        finished ones produced (the audit passes each claim the cache so far)."""
        from distributed import as_completed
        from tqdm.auto import tqdm

        if resources:
            workers = self.client.scheduler_info()["workers"].values()
            if not any(all(w.get("resources", {}).get(k, 0) >= v for k, v in resources.items())
                       for w in workers):
                import warnings

                # a task asking for what no worker has would wait forever
                warnings.warn(f"no Dask worker declares the resources {resources} (start them "
                              "with --resources GPU=1): running without them", stacklevel=2)
                resources = None
        it = iter(items)
        futures: dict[Any, Any] = {}
        n = 0

        def submit() -> bool:
            nonlocal n
            try:
                item = next(it)
            except StopIteration:
                return False
            fut = self.client.submit(_call, fn, item, self.share, self.pin,
                                     retries=self.retries,
                                     resources=resources, pure=False,
                                     key=f"{desc or 'unit'}-{self._submitted}-{self._token}")
            futures[fut] = item
            n += 1
            self._submitted += 1
            return True

        for _ in range(max(1, self.workers)):
            if not submit():
                break
        pending = as_completed(list(futures))
        failed = done_n = 0
        bar = tqdm(total=total, desc=desc, disable=not progress)
        try:
            for fut in pending:
                try:
                    done = fut.result()
                except Exception as exc:  # noqa: BLE001 - a worker lost beyond the retries
                    done = Done(error=f"{type(exc).__name__}: {exc}".splitlines()[0])
                failed += done.error is not None
                done_n += 1
                bar.update(1)
                bar.set_postfix(running=n - done_n, failed=failed)
                yield futures.pop(fut), done
                if submit():
                    pending.add(list(futures)[-1])
        finally:
            bar.close()

    def close(self) -> None:
        self.client.close()
        if self._cluster is not None:
            self._cluster.close()

    def __enter__(self) -> DaskExecutor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def executor(*, workers: int | None = None, scheduler: str | None = None
             ) -> Serial | DaskExecutor:
    """:class:`Serial` when neither is given (Dask is not imported), else a
    :class:`DaskExecutor`."""
    if workers is None and scheduler is None:
        return Serial()
    return DaskExecutor(workers=workers, scheduler=scheduler)


def deterministic(on: bool = True) -> None:
    """Bitwise-reproducible torch on one machine (``--deterministic``): deterministic kernels
    (``torch.use_deterministic_algorithms``; an op without one raises instead of varying),
    cuBLAS's fixed workspace (``CUBLAS_WORKSPACE_CONFIG=:4096:8``, set before CUDA starts),
    no cuDNN autotuning, no TF32. On the CPU boundbench is deterministic without it; on a GPU
    the same seed otherwise gives the same numbers only up to the order of parallel sums (a
    few units in the last place per step, which long training can grow)."""
    import torch

    if on:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(on)
    torch.backends.cudnn.benchmark = not on and torch.backends.cudnn.benchmark
    torch.backends.cudnn.deterministic = on
    if on:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
