"""The extracted Coq maps (``formal/extraction/owmaps``), queried over a pipe.

Rationals travel as ``num/den`` in binary, both ways: the driver only parses and prints, every
operation on the numbers is the extracted Coq code.
"""

from __future__ import annotations

import math
import os
import subprocess
from collections.abc import Iterable, Sequence
from fractions import Fraction
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORMAL = ROOT / "formal"
BINARY = FORMAL / "extraction" / "owmaps"


def build_hint() -> str:
    return f"build it with: cd {FORMAL} && coq_makefile -f _CoqProject -o Makefile && make"


def require_binary() -> Path:
    """The extracted executable; in CI its absence is a failure, locally a skip."""
    if BINARY.exists():
        return BINARY
    if os.environ.get("CI"):
        pytest.fail(f"the extracted maps are not built ({BINARY}); {build_hint()}")
    pytest.skip(f"the extracted maps are not built; {build_hint()}")


def q(x: Fraction | float | int) -> str:
    """A rational (a float is the exact dyadic rational it denotes) in the driver's format."""
    f = Fraction(x)
    num = ("-" + format(-f.numerator, "b")) if f.numerator < 0 else format(f.numerator, "b")
    return f"{num}/{format(f.denominator, 'b')}"


def qs(xs: Iterable[Fraction | float | int]) -> str:
    out = ",".join(q(x) for x in xs)
    return out or "-"


def root(s0: float) -> str:
    """The root scale, ``-`` for an infinite one (not released, not charged)."""
    return "-" if math.isinf(s0) else q(s0)


def flag(b: bool) -> str:
    return "1" if b else "0"


class Maps:
    """A running driver: ``ask(line) -> Fraction``."""

    def __init__(self, binary: Path) -> None:
        self.proc = subprocess.Popen(
            [str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )

    def ask(self, line: str) -> Fraction:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        out = self.proc.stdout.readline().strip()
        if not out or out.startswith("error"):
            raise RuntimeError(f"extracted map failed on {line!r}: {out!r}")
        num, den = out.split("/")
        return Fraction(int(num, 2), int(den, 2))

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=10)

    # --- one method per extracted map
    def hier_l1(
        self, sym: bool, sized: bool, s0: float, levels: Sequence[float], d: int
    ) -> Fraction:
        return self.ask(f"l1 {flag(sym)} {flag(sized)} {root(s0)} {d} {qs(levels)}")

    def hier_l2(
        self, sym: bool, sized: bool, s0: float, levels: Sequence[float], d: int
    ) -> Fraction:
        return self.ask(f"l2 {flag(sym)} {flag(sized)} {root(s0)} {d} {qs(levels)}")

    def tree_l2(
        self,
        sym: bool,
        sized: bool,
        d: int,
        parent: Sequence[int],
        leaves: Sequence[int],
        depth_scales: Sequence[float],
    ) -> Fraction:
        par = ",".join(str(max(int(p), 0)) for p in parent)
        return self.ask(
            f"tl2 {flag(sym)} {flag(sized)} {d} {par} {','.join(map(str, leaves))} "
            f"{qs(depth_scales)}"
        )

    def zcdp(self, d: Fraction | float) -> Fraction:
        return self.ask(f"zcdp {q(d)}")

    def expsel(self, beta: float, d: Fraction | float) -> Fraction:
        return self.ask(f"expsel {q(beta)} {q(d)}")

    def tree_em(self, eps: float, sym: bool, d: int) -> Fraction:
        return self.ask(f"treeem {q(eps)} {flag(sym)} {d}")

    def privtree(self, lam: float, sc: float, sym: bool, sized: bool, d: int) -> Fraction:
        return self.ask(f"privtree {q(lam)} {q(sc)} {flag(sym)} {flag(sized)} {d}")

    def noisy_size(self, count_map: float, bound: float) -> Fraction:
        return self.ask(f"noisy {q(count_map)} {q(bound)}")

    def occupancy(self, sym: bool, sized: bool, d: int) -> Fraction:
        return self.ask(f"occ {flag(sym)} {flag(sized)} {d}")

    def identity(self, d: Fraction | float | int) -> Fraction:
        return self.ask(f"ident {q(d)}")

    def adaptive(
        self,
        sym: bool,
        sized: bool,
        sens: float,
        beta: float,
        d: int,
        cands: Sequence[Sequence[float]],
    ) -> Fraction:
        return self.ask(
            f"adaptive {flag(sym)} {flag(sized)} {q(sens)} {q(beta)} {d} "
            f"{';'.join(qs(c) for c in cands)}"
        )

    def adaptive_zcdp_main(
        self, sym: bool, sized: bool, d: int, cands: Sequence[Sequence[float]]
    ) -> Fraction:
        return self.ask(f"azmain {flag(sym)} {flag(sized)} {d} {';'.join(qs(c) for c in cands)}")

    def score(
        self,
        capped: bool,
        private: bool,
        L: int,
        J: int,
        top: float,
        rows: Sequence[tuple[float, Sequence[float], Sequence[float]]],
    ) -> Fraction:
        cands = ";".join(f"{q(c)}:{qs(w)}:{qs(caps)}" for c, w, caps in rows)
        return self.ask(f"score {flag(capped)} {flag(private)} {L} {J} {q(top)} {cands}")
