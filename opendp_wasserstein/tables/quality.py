r"""A quality figure of a synthetic table that costs no privacy.

:func:`marginal_agreement` compares the joint release *before* calibration with the DP first
look, column by column: the total variation distance between the synthetic rows' 1-way
marginal and the released one (numeric columns in :data:`QUALITY_BINS` bins cut at the
released quantiles, so each bin holds ``1/B`` of the released mass; categorical columns by
category; the is-missing share as one more cell).  Both are DP releases, so the figure is
post-processing and public.  It measures how well the joint mechanism resolved each column:
near 0 the joint tree kept the column's distribution, near 1 it flattened it (the calibration
then restores the 1-way marginal, but the joint structure in that column is weak).

:data:`QUALITY_WARNING` is the mean above which the release warns, naming the options to change.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from opendp_wasserstein.tables.encoding import TableEncoding
from opendp_wasserstein.tables.marginals import TableMarginals

__all__ = [
    "MarginalAgreement",
    "agreement_counts",
    "agreement_from_counts",
    "marginal_agreement",
    "QUALITY_BINS",
    "QUALITY_WARNING",
]

#: bins of a numeric column's agreement (cut at the released quantiles)
QUALITY_BINS = 10

#: the mean agreement TVD above which a release warns
QUALITY_WARNING = 0.15


@dataclass(frozen=True)
class MarginalAgreement:
    """Per column, the TVD of the joint release's marginal to the DP marginal, and their mean.

    :param columns: column names
    :param tvd: per column, in ``[0, 1]``
    """

    columns: tuple[str, ...]
    tvd: tuple[float, ...]

    @property
    def mean(self) -> float:
        """The mean over columns."""
        return float(np.mean(self.tvd)) if self.tvd else 0.0

    def worst(self, k: int = 3) -> tuple[str, ...]:
        """The ``k`` columns the joint release kept worst."""
        order = np.argsort(-np.asarray(self.tvd), kind="stable")[:k]
        return tuple(self.columns[i] for i in order)


def _tvd(p: np.ndarray, q: np.ndarray) -> float:
    p = p / max(p.sum(), 1e-300)
    q = q / max(q.sum(), 1e-300)
    return float(0.5 * np.abs(p - q).sum())


def agreement_counts(
    points: np.ndarray, enc: TableEncoding, marginals: TableMarginals
) -> list[np.ndarray]:
    """The counts that :func:`marginal_agreement` reads, per column (int64): a categorical
    column's rows per category; a numeric column's present rows in each of the
    :data:`QUALITY_BINS` bins cut at the released quantiles, then its missing rows.  Counts of
    disjoint row sets add up: the figure of a release drawn block by block is
    :func:`agreement_from_counts` of the blocks' summed counts, equal to the figure of all its
    rows at once."""
    p = np.asarray(points, dtype=np.float64)
    out = []
    for c, plan in enumerate(marginals.plans):
        if plan.kind == "category":
            codes = enc._lookup(p[:, plan.value_axis], plan.cells)
            out.append(np.bincount(codes, minlength=plan.cells).astype(np.int64))
            continue
        present = (
            p[:, plan.axes[plan.missing_axis]] < 0.5
            if plan.missing_axis is not None
            else np.ones(len(p), bool)
        )
        cuts = marginals.quantiles(c, np.linspace(0, 1, QUALITY_BINS + 1)[1:-1])
        syn = np.bincount(
            np.searchsorted(cuts, p[present, plan.value_axis], side="right"), minlength=QUALITY_BINS
        ).astype(np.int64)
        out.append(np.append(syn, np.int64(len(p) - int(present.sum()))))
    return out


def agreement_from_counts(counts: list[np.ndarray], marginals: TableMarginals) -> MarginalAgreement:
    """:func:`marginal_agreement` from the counts of :func:`agreement_counts` (summed over
    blocks of rows)."""
    tvds = []
    for plan, freq, miss, k in zip(
        marginals.plans, marginals.masses, marginals.missing, counts, strict=True
    ):
        if plan.kind == "category":
            tvds.append(_tvd(k.astype(float), np.asarray(freq, float)))
            continue
        syn = k[:QUALITY_BINS].astype(float)
        present, total = int(k[:QUALITY_BINS].sum()), int(k.sum())
        share = present / total if total else 1.0
        syn = np.append(syn / max(syn.sum(), 1e-300) * share, 1.0 - share)
        ref = np.full(QUALITY_BINS, 1.0)
        ref = np.append(ref / max(ref.sum(), 1e-300) * (1.0 - miss), miss)
        tvds.append(_tvd(syn, ref))
    return MarginalAgreement(tuple(pl.name for pl in marginals.plans), tuple(tvds))


def marginal_agreement(
    points: np.ndarray, enc: TableEncoding, marginals: TableMarginals
) -> MarginalAgreement:
    """The agreement of the synthetic ``points`` (encoded, before calibration) with the DP
    marginals (module docstring)."""
    return agreement_from_counts(agreement_counts(points, enc, marginals), marginals)
