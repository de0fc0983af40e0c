#!/usr/bin/env bash
# Create the peers' virtual environments, each SEPARATE from the package's and from each other
# (their pins clash: smartnoise-synth wants opendp < 0.15 and mbi < 2; dpmm pins its own stack;
# opendp's `mbi` extra pins mbi 1.1.0 and polars 1.36.1), and install one peer into each:
#
#   benchmarks/.venv-peers       smartnoise-synth (MST, AIM)      runner: run_smartnoise*.py
#   benchmarks/.venv-dpmm        dpmm (MST, AIM, PrivBayes)       runner: run_dpmm.py
#   benchmarks/.venv-opendp-mbi  opendp[mbi] (opendp.extras.mbi AIM, MST)   runner: run_opendp_mbi.py
#
#   bash benchmarks/peers/setup.sh                    # all three
#   PEERS="dpmm opendp-mbi" bash benchmarks/peers/setup.sh   # a subset (smartnoise dpmm opendp-mbi)
#   PEERS_LEAN=1 bash benchmarks/peers/setup.sh
#       smartnoise-synth with --no-deps plus every requirement except opacus/torch, which
#       only the GAN synthesizers (DPCTGAN, PATECTGAN) import; MST and AIM do not.
#   PYTHON=/path/to/python3.11 bash benchmarks/peers/setup.sh
#
# Prints the installed versions at the end of each; benchmarks/bench_tables_compare.py finds
# the environments at these paths (or --peer-python-smartnoise / -dpmm / -opendp-mbi).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
py="${PYTHON:-python3}"
peers="${PEERS:-smartnoise dpmm opendp-mbi}"
"$py" -c 'import sys; assert (3, 10) <= sys.version_info[:2] < (3, 14), "the peers need Python >= 3.10, < 3.14"'

make_venv() {
    if [ ! -x "$1/bin/python" ]; then
        "$py" -m venv "$1"
    fi
    "$1/bin/python" -m pip install --quiet --upgrade pip
}

for peer in $peers; do
case "$peer" in
smartnoise)
    venv="$root/.venv-peers"
    make_venv "$venv"
    if [ "${PEERS_LEAN:-0}" = "1" ]; then
        "$venv/bin/python" -m pip install --quiet --no-deps 'smartnoise-synth>=1.0,<1.1'
        "$venv/bin/python" -m pip install --quiet 'smartnoise-sql>=1.0.10' 'mbi>=1.1.0,<2' \
            'disjoint-set>=0.9.0,<0.10.0' 'pac-synth>=0.0.8,<0.0.9' 'Faker>=17.0.0' pandas scipy networkx
    else
        "$venv/bin/python" -m pip install --quiet 'smartnoise-synth>=1.0,<1.1'
    fi
    "$venv/bin/python" - <<'PY'
from importlib.metadata import version
import snsynth.mst, snsynth.aim  # noqa: F401  the two synthesizers the benchmarks run
print({p: version(p) for p in ("smartnoise-synth", "opendp", "mbi", "numpy", "pandas")})
PY
    echo "smartnoise venv ready: $venv/bin/python"
    ;;
dpmm)
    venv="$root/.venv-dpmm"
    make_venv "$venv"
    "$venv/bin/python" -m pip install --quiet 'dpmm>=0.1.9,<0.2'
    "$venv/bin/python" - <<'PY'
from importlib.metadata import version
from dpmm.pipelines import MSTPipeline, AIMPipeline, PrivBayesPipeline  # noqa: F401
print({p: version(p) for p in ("dpmm", "numpy", "pandas")})
PY
    echo "dpmm venv ready: $venv/bin/python"
    ;;
opendp-mbi)
    venv="$root/.venv-opendp-mbi"
    make_venv "$venv"
    # mbi's synthetic_data(...).df imports pandas, which opendp's mbi extra does not list
    "$venv/bin/python" -m pip install --quiet 'opendp[mbi]>=0.16,<0.17' pandas
    "$venv/bin/python" - <<'PY'
from importlib.metadata import version
from opendp.extras.mbi import AIM, MST, make_contingency_table  # noqa: F401
print({p: version(p) for p in ("opendp", "mbi", "polars", "numpy", "pandas")})
PY
    echo "opendp-mbi venv ready: $venv/bin/python"
    ;;
*)
    echo "unknown peer $peer (choose from: smartnoise dpmm opendp-mbi)" >&2
    exit 2
    ;;
esac
done
