"""Start-up of the ``opendp-wasserstein`` program (issue 24, item 5): wall and CPU seconds of
``--help``, ``--version`` and a small ``synth`` started as the console script starts them, and
the same ``synth`` in process, each the median of ``--repeats`` runs (default 5); the program's
``synth`` also from a copy of the package with its bytecode compiled, as ``pip install`` leaves
it (a checkout run with ``PYTHONDONTWRITEBYTECODE`` set compiles the package on every run).

    python benchmarks/bench_startup.py [--repeats 5] [--n 3000] [--d 2] [--importtime] [--csv F]

Each program run is a fresh interpreter running what the installed console script runs
(``from opendp_wasserstein_cli import console_main; sys.exit(console_main())``) with this
checkout first on ``sys.path``; ``--help`` and ``--version`` are also timed through the package's
own ``opendp_wasserstein.cli.console_main`` (the entry point before the launcher), for
comparison.  CPU seconds are the child's user + system time (``os.wait4``).  The in-process
figures run ``opendp_wasserstein.cli.main`` on the same arguments in one interpreter that has
already imported the package: the first call (it still loads what the release imports on first
use, e.g. ``opendp.prelude`` inside OpenDP's ``array2_domain``) and the median of the later ones.
``--importtime`` prints the largest cumulative imports of one program ``synth``
(``python -X importtime``).  Targets: ``--help`` / ``--version`` under 0.3 s; the program's
``synth`` within 1 s of the in-process release.  The data are public test data (a seeded curve);
the release is seeded (``--seed``: NOT private; a benchmark only).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from _common import machine_note, make_data, write_csv

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LAUNCHER = "import sys; from opendp_wasserstein_cli import console_main; sys.exit(console_main())"
PACKAGE = "import sys; from opendp_wasserstein.cli import console_main; sys.exit(console_main())"

IN_PROCESS = """
import json, sys, time
t0 = time.perf_counter()
import opendp_wasserstein.cli as cli
from opendp_wasserstein.core import dp
dp.enable_features("contrib")
imported = time.perf_counter() - t0
argv, repeats = json.loads(sys.argv[1]), int(sys.argv[2])
times = []
for _ in range(repeats + 1):
    t, c = time.perf_counter(), time.process_time()
    assert cli.main(argv) == 0
    times.append((time.perf_counter() - t, time.process_time() - c))
print(json.dumps({"import": imported, "times": times}))
"""


def _env(root: str = ROOT) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def compiled_copy(tmp: str) -> str:
    """A copy of the checkout's two packages with their bytecode compiled, as ``pip install``
    leaves them: where ``PYTHONDONTWRITEBYTECODE`` is set (as on the project's machine) a
    checkout has no ``__pycache__`` and every run compiles the package's modules again."""
    dest = os.path.join(tmp, "installed")
    for pkg in ("opendp_wasserstein", "opendp_wasserstein_cli"):
        shutil.copytree(
            os.path.join(ROOT, pkg),
            os.path.join(dest, pkg),
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    compileall.compile_dir(dest, quiet=1)  # py_compile writes whatever the flag says
    return dest


def run_once(
    code: str, argv: list[str], cwd: str, extra: list[str] | None = None, root: str = ROOT
) -> tuple:
    """(wall s, CPU s, stderr) of ``python [extra] -c code argv`` in ``cwd``, with ``root``
    first on the path."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, *(extra or []), "-c", code, *argv],
        cwd=cwd,
        env=_env(root),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:2]} exited {proc.returncode}: {err.decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, err.decode()


def median_of(
    code: str, argv: list[str], cwd: str, repeats: int, root: str = ROOT
) -> dict[str, float]:
    runs = [run_once(code, argv, cwd, root=root)[:2] for _ in range(repeats)]
    return {
        "wall_s": statistics.median(r[0] for r in runs),
        "cpu_s": statistics.median(r[1] for r in runs),
    }


def top_imports(stderr: str, k: int) -> list[tuple[float, float, str]]:
    """The ``k`` largest cumulative entries of ``-X importtime`` output: (cum s, self s, name)."""
    rows = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        own, cum, name = line.split(":", 1)[1].split("|")
        if own.strip().isdigit():
            rows.append((int(cum) / 1e6, int(own) / 1e6, name.rstrip()))
    return sorted(rows, reverse=True)[:k]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--n", type=int, default=3000, help="rows of the small synth (default 3000)")
    p.add_argument("--d", type=int, default=2, help="columns of the small synth (default 2)")
    p.add_argument("--importtime", action="store_true", help="print the largest imports of synth")
    p.add_argument("--csv", default=None, help="write the figures here")
    a = p.parse_args()
    print(f"# bench_startup: {machine_note()}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        x = make_data("curve", a.n, a.d, seed=0)
        names = [f"x{j}" for j in range(a.d)]
        with open(os.path.join(tmp, "data.csv"), "w") as f:
            f.write(",".join(names) + "\n")
            f.writelines(",".join(f"{v:.6f}" for v in row) + "\n" for row in x)
        with open(os.path.join(tmp, "bounds.json"), "w") as f:
            json.dump({c: [0, 1] for c in names}, f)
        synth = ["synth", "data.csv", "-o", "out.csv", "--epsilon", "1", "--bounds", "bounds.json"]
        synth += ["--seed", "1", "--quiet"]
        installed = compiled_copy(tmp)
        cases = [
            ("--help", LAUNCHER, ["--help"], ROOT),
            ("--version", LAUNCHER, ["--version"], ROOT),
            ("synth --help", LAUNCHER, ["synth", "--help"], ROOT),
            (f"synth n={a.n} d={a.d}", LAUNCHER, synth, ROOT),
            (f"synth n={a.n} d={a.d}, bytecode", LAUNCHER, synth, installed),
            ("--help (package entry)", PACKAGE, ["--help"], ROOT),
            ("--version (package entry)", PACKAGE, ["--version"], ROOT),
        ]
        for label, code, argv, root in cases:
            rows.append({"case": label, **median_of(code, argv, tmp, a.repeats, root)})
        proc = subprocess.run(
            [sys.executable, "-c", IN_PROCESS, json.dumps(synth), str(a.repeats)],
            cwd=tmp,
            env=_env(),
            capture_output=True,
            text=True,
            check=True,
        )
        inner = json.loads(proc.stdout.strip().splitlines()[-1])
        first, later = inner["times"][0], inner["times"][1:]
        rows.append({"case": "synth in process, first call", "wall_s": first[0], "cpu_s": first[1]})
        rows.append(
            {
                "case": "synth in process, later calls",
                "wall_s": statistics.median(t[0] for t in later),
                "cpu_s": statistics.median(t[1] for t in later),
            }
        )
        if a.importtime:
            err = run_once(LAUNCHER, synth, tmp, ["-X", "importtime"])[2]
    print(f"{'case':36s} {'wall s':>8s} {'CPU s':>8s}   (median of {a.repeats})")
    for r in rows:
        print(f"{r['case']:36s} {r['wall_s']:8.3f} {r['cpu_s']:8.3f}")
    by = {r["case"]: r for r in rows}
    for how in ("", ", bytecode"):
        prog = by[f"synth n={a.n} d={a.d}{how}"]
        for kind in ("first call", "later calls"):
            inner_row = by[f"synth in process, {kind}"]
            print(
                f"synth{how}: program - in process ({kind}): "
                f"{prog['wall_s'] - inner_row['wall_s']:.3f} s wall, "
                f"{prog['cpu_s'] - inner_row['cpu_s']:.3f} s CPU (target <= 1 s)"
            )
    print(
        "(bytecode: the package copied and compiled as pip installs it; without: this "
        "checkout, PYTHONDONTWRITEBYTECODE="
        f"{os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r})"
    )
    for case in ("--help", "--version"):
        met = "met" if by[case]["wall_s"] < 0.3 else "missed"
        print(f"target {case} < 0.3 s wall: {met} ({by[case]['wall_s']:.3f} s)")
    print(f"package import in the in-process run: {inner['import']:.3f} s wall")
    if a.importtime:
        print("largest cumulative imports of the program's synth (s cumulative, s self):")
        for cum, own, name in top_imports(err, 25):
            print(f"  {cum:7.3f} {own:7.3f} {name}")
    if a.csv:
        write_csv(a.csv, rows)


if __name__ == "__main__":
    main()
