"""The single-machine kernel of the PMM family: time against the physical floor, memory
against the input.

1. **Time** (issue 24: at most 2.5x at ``n = 10^6``, ``d = 3``, at most 3x at ``d = 10``):
   Adaptive Pruned-PMM (``epsilon_select = 0.2``, ``epsilon_main = 0.8``, change-one, bounds
   ``(0, 1)``) on ``--n`` rows of dimension ``--d`` (each a list; default ``10^6`` and ``3 10``)
   against the **physical floor**: Morton codes of the rows by the fastest plain-numpy method
   found, with ``B = max(ceil(L / d), floor(64 / d))`` bits per axis (``d = 3``: 21 bits, one
   63-bit word; ``d = 10``, ``L = 196``: 20 bits, four words: what the release's deepest
   candidate ``L`` needs), plus one ``np.sort`` of the first uint64 word.  The codes are timed
   three ways, each on chunks of rows that stay in cache: magic bits by shift-or-mask (the
   classic ``part1by2``: ``x = (x | x << s) & m``), magic bits by multiply-mask (``x = (x *
   (1 + 2^s)) & m``, exact when the shifted copies cannot carry; one step for a field of at
   most ``d - 1`` bits), a 256-entry lookup table per byte, and the release's own code kernel
   (``row_codes`` at depth ``L``, every word: measured faster than the other three at ``d = 3``
   and ``d = 10``, so by the definition above it belongs to the floor); the floor of a run is
   the fastest of the four in that run.  Where the codes need more than one word, the one-word
   floor (``floor(64 / d)`` bits per axis, e.g. 6 x 10 = 60 bits) is printed too, and always
   the **package floor** of issue 12
   (``grid_codes`` + ``morton_words`` at depth ``L`` plus one sort of the first word), and,
   for reference, the cost of writing the ``(n, d)`` float64 output once into fresh anonymous
   memory (a private ``mmap`` advised huge pages, as numpy's large buffers, filled once: page
   faults included, as for a release's output, which the floor does not write).
   Everything is timed in the same runs, interleaved (``--runs``, default 5): minimum and
   median of each, and the ratios of the medians and of the minima.
2. **Memory** (issue 12: at most 2x the input): one release on ``--mem-n`` rows (default
   ``10^7``) of dimension ``--mem-d`` (default 10), in a fresh subprocess: the peak of the
   memory the release allocates (``tracemalloc``; numpy reports its buffers) over the input
   array's size, and the process's peak RSS growth during the release (``ru_maxrss``) over it,
   plus the time of an untraced release.

Data: the smooth closed curve of ``_common.sample_curve`` (``--data curve``, intrinsic dimension 1,
many shared code prefixes) or uniform (``--data uniform``).  ``--quick``: ``n = 10^5``, ``d = 3``,
``mem-n = 2 10^5``, 2 runs.  ``--no-memory`` skips part 2.  Each release line lists the depth
the selection chose in every run (an exponential mechanism: at ``d = 10`` it moves a release more
than anything else), and ``--seed S`` runs the releases inside ``reproducible(S)`` (the same depth
and noise in every run: **not private**, for A/B figures of the kernel at one depth).
``python benchmarks/bench_kernel.py [--quick] [--n 1e6 1e7] [--d 3 10]``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import mmap
import os
import resource
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from functools import partial

import numpy as np
import opendp.prelude as dp
from _common import machine_note, make_data

from opendp_wasserstein.core.box import as_box
from opendp_wasserstein.hierarchy.cells import build_count_tree, grid_codes, morton_words, row_codes
from opendp_wasserstein.measurements import make_adaptive_pruned_pmm
from opendp_wasserstein.runtime import diagnostics, reproducible
from opendp_wasserstein.schedules.pure import max_candidate_depth

EPS_SELECT, EPS_MAIN = 0.2, 0.8
#: the code kernels of the physical floor (each + one sort of the first word; the fastest per run)
FLOOR_METHODS = ("shift", "mul", "lut", "rows")
_CHUNK = 1 << 15  # rows per chunk of the floor's code kernels (temporaries stay in cache)
_FULL = (1 << 64) - 1


def adaptive(n: int, d: int, placement: str):  # type: ignore[no-untyped-def]
    return make_adaptive_pruned_pmm(
        dp.numpy.array2_domain(num_columns=d, size=n, T=float),
        dp.change_one_distance(),
        EPS_SELECT,
        EPS_MAIN,
        bounds=(0.0, 1.0),
        placement=placement,
    )


# ------------------------------------------------------------------------- the physical floor


def floor_fields(B: int, d: int) -> list[list[tuple[int, int, int, int]]]:
    """Per word of a ``B d``-bit Morton code: ``(c, src, m, dst)`` for each coordinate ``c``
    whose ``m`` bits ``U_c >> src`` land ``d`` apart from bit ``dst`` up (level ``j = c + d t``
    is bit ``B - 1 - t`` of ``U_c`` and bit ``63 - j % 64`` of word ``j // 64``)."""
    words: list[list[tuple[int, int, int, int]]] = [[] for _ in range(-(-B * d // 64))]
    for w, plan in enumerate(words):
        for c in range(d):
            ts = [t for t in range(B) if 64 * w <= c + d * t < 64 * w + 64]
            if ts:
                t1 = ts[-1]
                plan.append((c, B - 1 - t1, len(ts), 63 - (c + d * t1 - 64 * w)))
    return words


def shift_steps(m: int, d: int) -> list[tuple[int, int]]:
    """The classic magic numbers: ``(s, mask)`` steps ``x = (x | x << s) & mask`` moving bit
    ``i`` of an ``m``-bit field to bit ``i d`` (``part1by2`` for ``d = 3``, ``m = 21``)."""
    pos, steps = list(range(m)), []
    for k in range((m - 1).bit_length() - 1, -1, -1) if m > 1 and d > 1 else ():
        s = (1 << k) * (d - 1)
        pos = [p + s if (i >> k) & 1 else p for i, p in enumerate(pos)]
        steps.append((s, sum(1 << p for p in pos)))
    return steps


def mul_steps(m: int, d: int) -> list[tuple[int, int]]:
    """The same spread as ``(a, mask)`` steps ``x = (x * a) & mask``: one product for ``m <=
    d - 1`` (copies ``d - 1`` apart cannot overlap), else ``a = 1 + 2^s`` per classic step
    where the copies' possible bits are disjoint (so the product is their OR); a step whose
    copies overlap (``d = 2``, ``m = 32``: the first, by 16) stays a shift-or, given as
    ``(-s, mask)``."""
    if m <= 1 or d == 1:
        return []
    if m <= d - 1:
        return [(sum(1 << ((d - 1) * i) for i in range(m)), sum(1 << (d * i) for i in range(m)))]
    out, support = [], (1 << m) - 1
    for s, mask in shift_steps(m, d):
        out.append(((1 + (1 << s)) & _FULL, mask) if support & (support << s) == 0 else (-s, mask))
        support = mask
    return out


def lut(d: int) -> np.ndarray:
    """``T[v]`` = the byte ``v`` spread ``d`` apart (bits past 63 dropped)."""
    return np.array(
        [sum(1 << (d * i) for i in range(8) if (v >> i) & 1) & _FULL for v in range(256)],
        dtype=np.uint64,
    )


def physical_codes(x: np.ndarray, B: int, method: str) -> np.ndarray:
    """Morton codes (``(W, n)`` uint64) of rows ``x`` in ``[0, 1]^d`` at ``B`` bits per axis:
    ``U = min(floor(x 2^B), 2^B - 1)`` (through int32, int64 when ``B > 31``), each coordinate's
    field of each word spread by ``method`` (``"shift"``, ``"mul"`` or ``"lut"``) and OR-ed in,
    chunk by chunk."""
    n, d = x.shape
    plan = floor_fields(B, d)
    out = np.empty((len(plan), n), dtype=np.uint64)
    R = min(_CHUNK, max(n, 1))
    v, gi = np.empty((d, R)), np.empty(R, dtype=np.int32 if B <= 31 else np.int64)
    g, f, t = (np.empty(R, dtype=np.uint64) for _ in range(3))
    table = lut(d)
    steps = {(m, "mul"): mul_steps(m, d) for w in plan for _, _, m, _ in w}
    steps |= {(m, "shift"): shift_steps(m, d) for w in plan for _, _, m, _ in w}
    per_coord: list[list[tuple[int, int, int, int]]] = [[] for _ in range(d)]
    for w, fields in enumerate(plan):
        for c, src, m, dst in fields:
            per_coord[c].append((w, src, m, dst))
    for a in range(0, n, R):
        b = min(n, a + R)
        k = b - a
        vv, gg, ff, tt = v[:, :k], g[:k], f[:k], t[:k]
        np.multiply(x[a:b].T, float(2**B), out=vv)
        np.minimum(vv, float(2**B - 1), out=vv)
        for c in range(d):
            np.copyto(gi[:k], vv[c], casting="unsafe")
            np.copyto(gg, gi[:k], casting="unsafe")
            for w, src, m, dst in per_coord[c]:
                np.right_shift(gg, np.uint64(src), out=ff)
                if src + m < B:
                    ff &= np.uint64((1 << m) - 1)
                if method == "lut":
                    res = t2 = np.take(table, (ff & np.uint64(255)).astype(np.intp))
                    for byte in range(1, -(-m // 8)):
                        part = np.take(
                            table, ((ff >> np.uint64(8 * byte)) & np.uint64(255)).astype(np.intp)
                        )
                        part <<= np.uint64(8 * byte * d)
                        t2 |= part
                    res <<= np.uint64(dst)
                else:
                    for s_or_a, mask in steps[(m, method)]:
                        if method == "mul" and s_or_a > 0:
                            ff *= np.uint64(s_or_a)
                        elif method == "mul":
                            np.left_shift(ff, np.uint64(-s_or_a), out=tt)
                            ff |= tt
                        else:
                            np.left_shift(ff, np.uint64(s_or_a), out=tt)
                            ff |= tt
                        ff &= np.uint64(mask)
                    ff <<= np.uint64(dst)
                    res = ff
                if c == plan[w][0][0]:  # the word's first coordinate assigns it
                    out[w, a:b] = res
                else:
                    out[w, a:b] |= res
    return out


def fresh_output(n: int, d: int) -> None:
    """Write ``(n, d)`` float64 values once into fresh anonymous memory (page faults included;
    huge pages advised where the platform has them, as numpy does for large arrays), as a
    release's output is: what any release pays beyond the floor.  The mapping is private, as
    the allocator's (a shared anonymous mapping is shared memory, whose huge pages Linux
    governs by ``shmem_enabled``, off by default: it faulted 4 KB pages, 5,860 for 24 MB in
    24-26 ms on the project's VM, where a private mapping advised huge pages faulted 239 in
    2.4-2.7 ms; 80 MB: 79-83 ms shared, 6.4-6.7 ms private, once 104 ms where the VM's host
    backed the pages afresh)."""
    flags = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
    buf = mmap.mmap(-1, max(8 * n * d, 1), **({"flags": flags} if flags else {}))
    if hasattr(mmap, "MADV_HUGEPAGE"):  # as numpy advises its own large buffers
        buf.madvise(mmap.MADV_HUGEPAGE)
    np.frombuffer(buf, dtype=np.float64, count=n * d).fill(0.5)
    buf.close()


def physical_floor(x: np.ndarray, B: int, method: str) -> None:
    words = physical_codes(x, B, method)
    words[0].sort()


# ------------------------------------------------------------------------- timing


def interleaved(fns: dict[str, Callable[[], object]], runs: int) -> dict[str, list[float]]:
    """Each function once per run, in turn (so load on a shared machine hits them alike)."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(runs):
        for name, fn in fns.items():
            gc.collect()
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return times


def seeded(seed: int | None) -> contextlib.AbstractContextManager[None]:
    """``reproducible(seed)`` (the selected depth and the noise fixed: **not private**, for A/B
    figures of one code path), or nothing (the secure release, as issue 24 measures it)."""
    return contextlib.nullcontext() if seed is None else reproducible(seed)


def timing(n: int, d: int, data: str, runs: int, seed: int | None = None) -> None:
    x = make_data(data, n, d, 0)
    L = max_candidate_depth(d, n, EPS_MAIN)
    B = max(-(-L // d), 64 // d)
    B1 = 64 // d  # the one-word floor
    box = as_box((0.0, 1.0), d)
    for method in ("shift", "mul", "lut"):  # the three methods give the same codes
        assert np.array_equal(
            physical_codes(x[:5000], B, method), physical_codes(x[:5000], B, "shift")
        )
    assert np.array_equal(
        physical_codes(x[:5000], B, "shift"), morton_words(grid_codes(x[:5000], B * d), B * d)
    )
    words_at_L = list(range(-(-L // 64)))
    for got, want in zip(  # the release's codes are the depth-L Morton words, every word
        row_codes(x[:5000], box, L, words_at_L),
        morton_words(grid_codes(x[:5000], L), L),
        strict=True,
    ):
        assert np.array_equal(got, want)
    fns: dict[str, Callable[[], object]] = {}
    for m in ("shift", "mul", "lut"):
        fns[f"floor_{m}"] = partial(physical_floor, x, B, m)
    if B1 != B:
        fns["floor_1word"] = lambda: physical_floor(x, B1, "mul")
    fns["package_floor"] = lambda: np.sort(morton_words(grid_codes(x, L), L)[0])
    fns["floor_rows"] = lambda: row_codes(x, box, L, words_at_L)[0].sort()
    fns["tree"] = lambda: build_count_tree(x, L, box).release()
    fns["output"] = lambda: fresh_output(n, d)
    info: dict[str, list[dict[str, object]]] = {"center": [], "uniform": []}
    for placement in ("center", "uniform"):
        meas = adaptive(n, d, placement)

        def release(meas=meas, placement=placement) -> None:  # type: ignore[no-untyped-def]
            with diagnostics() as rec, seeded(seed):
                meas(x)
            info[placement].append(rec[-1])

        fns[f"release_{placement}"] = release
    t = interleaved(fns, runs)
    floor = np.minimum.reduce([np.array(t[f"floor_{m}"]) for m in FLOOR_METHODS])
    t["floor"] = list(floor)
    med = {k: float(np.median(v)) for k, v in t.items()}
    low = {k: float(np.min(v)) for k, v in t.items()}

    def row(label: str, key: str, over: str | None = "floor") -> str:
        line = f"   {label:<50} {low[key]:8.3f} s {med[key]:8.3f} s"
        if over:
            line += f"   {med[key] / med[over]:5.2f}x {low[key] / low[over]:5.2f}x"
        return line

    W = -(-B * d // 64)
    print(
        f"\n1. time: adaptive Pruned-PMM, n = {n:,}, d = {d}, L = {L}, data = {data}, {runs} "
        "runs interleaved"
    )
    print(f"   {'':<50} {'min':>10} {'median':>10}   ratio (median, min) over the physical floor")
    print(
        f"   physical floor: codes at {B} bits/axis ({W} word{'s' if W > 1 else ''}) + one "
        "np.sort of the first word"
    )
    print(row("  magic bits, shift-or-mask (part1by2)", "floor_shift", None))
    print(row("  magic bits, multiply-mask", "floor_mul", None))
    print(row("  256-entry lookup table", "floor_lut", None))
    print(row("  the release's own codes (row_codes at L)", "floor_rows", None))
    print(row("  = physical floor (fastest of the four per run)", "floor", None))
    if B1 != B:
        print(row(f"one-word floor: {B1} bits/axis ({B1 * d} bits) + sort", "floor_1word"))
    print(row("package floor: grid_codes + morton_words at L + sort", "package_floor"))
    print(row("count tree at L (once per release)", "tree"))
    print(row("writing the (n, d) float64 output once (fresh pages)", "output"))
    for placement in ("center", "uniform"):
        key = f"release_{placement}"
        runs_info = info[placement]
        print(
            row(f"release, placement={placement}", key)
            + "   (depths "
            + ", ".join(str(r["depth"]) for r in runs_info)
            + "; noisy nodes "
            + ", ".join(f"{r['visited_nodes']:,}" for r in runs_info)
            + ")"
        )
    for placement in ("center", "uniform"):
        key = f"release_{placement}"
        extra = [f"{med[key] / med['package_floor']:.2f}x the package floor"]
        if B1 != B:
            extra.insert(0, f"{med[key] / med['floor_1word']:.2f}x the one-word floor")
        print(
            f"   release {placement} (medians): {med[key] / med['floor']:.2f}x the physical floor, "
            + ", ".join(extra)
        )
    print("   load average after the runs: " + " ".join(f"{v:.2f}" for v in os.getloadavg()))


def memory_child(n: int, d: int, data: str) -> None:
    """Runs in a fresh process: one traced release, one untraced; prints a JSON line."""
    x = make_data(data, n, d, 0)
    meas = adaptive(n, d, "center")
    gc.collect()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t0 = time.perf_counter()
    meas(x)
    seconds = time.perf_counter() - t0
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    gc.collect()
    tracemalloc.start()
    meas(x)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(
        json.dumps(
            {
                "input": x.nbytes,
                "traced_peak": peak,
                "rss_growth": rss1 - rss0,
                "rss_before": rss0,
                "seconds": seconds,
            }
        )
    )


def memory(n: int, d: int, data: str) -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    cmd = [sys.executable, os.path.join(here, "bench_kernel.py"), "--child", str(n), str(d), data]
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    r = json.loads(res.stdout.strip().splitlines()[-1])
    mb = 2.0**20
    print(f"\n2. memory: adaptive Pruned-PMM, n = {n:,}, d = {d}, data = {data} (fresh process)")
    print(f"   input array                     {r['input'] / mb:8.0f} MB")
    print(
        f"   release allocations, peak       {r['traced_peak'] / mb:8.0f} MB   "
        f"{r['traced_peak'] / r['input']:5.2f}x input   (tracemalloc)"
    )
    print(
        f"   process RSS growth, peak        {r['rss_growth'] / mb:8.0f} MB   "
        f"{r['rss_growth'] / r['input']:5.2f}x input   (ru_maxrss; before: "
        f"{r['rss_before'] / mb:.0f} MB)"
    )
    print(f"   time (untraced)                 {r['seconds']:8.1f} s")


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        dp.enable_features("contrib")
        memory_child(int(argv[1]), int(argv[2]), argv[3])
        return
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--n", type=float, nargs="+", default=[1e6])
    p.add_argument("--d", type=int, nargs="+", default=[3, 10])
    p.add_argument("--mem-n", type=float, default=1e7)
    p.add_argument("--mem-d", type=int, default=10)
    p.add_argument("--data", choices=("curve", "uniform"), default="curve")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-memory", action="store_true")
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="releases inside reproducible(seed): the same depth and noise every run (NOT "
        "private; for A/B figures of the kernel at one depth)",
    )
    a = p.parse_args(argv)
    if a.quick:
        a.n, a.d, a.mem_n, a.runs = [1e5], [3], 2e5, 2
    dp.enable_features("contrib")
    print(machine_note())
    for n in a.n:
        for d in a.d:
            timing(int(n), d, a.data, a.runs, a.seed)
    if not a.no_memory:
        memory(int(a.mem_n), a.mem_d, a.data)


if __name__ == "__main__":
    main()
