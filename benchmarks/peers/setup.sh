#!/usr/bin/env bash
# Create benchmarks/.venv-peers, a virtual environment SEPARATE from the package's, and install
# smartnoise-synth (MST, AIM) into it.  smartnoise-synth pins its own opendp (through
# smartnoise-sql: opendp >= 0.14.1, < 0.15) and mbi < 2, which clash with this package's
# opendp 0.16: never install it into the package's environment or as a dependency.
#
#   bash benchmarks/peers/setup.sh            # full install (pulls torch through opacus)
#   PEERS_LEAN=1 bash benchmarks/peers/setup.sh
#       smartnoise-synth with --no-deps plus every requirement except opacus/torch, which
#       only the GAN synthesizers (DPCTGAN, PATECTGAN) import; MST and AIM do not.
#   PYTHON=/path/to/python3.11 bash benchmarks/peers/setup.sh
#
# Prints the installed versions at the end; the runner is benchmarks/peers/run_smartnoise.py.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$(dirname "$here")/.venv-peers"
py="${PYTHON:-python3}"
"$py" -c 'import sys; assert (3, 10) <= sys.version_info[:2] < (3, 15), "smartnoise-synth 1.0.x needs Python >= 3.10, < 3.15"'
if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
if [ "${PEERS_LEAN:-0}" = "1" ]; then
    "$venv/bin/python" -m pip install --quiet --no-deps 'smartnoise-synth>=1.0,<1.1'
    "$venv/bin/python" -m pip install --quiet 'smartnoise-sql>=1.0.10' 'mbi>=1.1.0,<2' \
        'disjoint-set>=0.9.0,<0.10.0' 'pac-synth>=0.0.8,<0.0.9' 'Faker>=17.0.0' pandas scipy networkx
else
    "$venv/bin/python" -m pip install --quiet 'smartnoise-synth>=1.0,<1.1'
fi
"$venv/bin/python" - <<'PY'
from importlib.metadata import version
import snsynth.mst, snsynth.aim  # noqa: F401  the two synthesizers the benchmark runs
print({p: version(p) for p in ("smartnoise-synth", "opendp", "mbi", "numpy", "pandas")})
PY
echo "peers venv ready: $venv/bin/python"
