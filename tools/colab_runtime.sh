#!/usr/bin/env bash
# Colab's default runtime, rebuilt in a venv: its Python and the versions it pins (tools/colab_versions.txt), then
# the course installed as a notebook's set-up cell installs it there (this checkout's wheel without dependencies,
# then `python -m verlstudy.kit.colab`). Passes when the pinned packages are unmoved and lessons 00, 01, 03, 04 run
# with every claim holding. Usage: tools/colab_runtime.sh PYTHON VENV_DIR   (CI: .github/workflows/colab.yml)
set -euo pipefail
python="${1:?usage: tools/colab_runtime.sh PYTHON VENV_DIR}"
venv="${2:?usage: tools/colab_runtime.sh PYTHON VENV_DIR}"
here="$(cd "$(dirname "$0")/.." && pwd)"
versions="$here/tools/colab_versions.txt"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q -r "$versions"
"$venv/bin/python" -m pip freeze | sort > "$venv/before.txt"
rm -rf "$venv/wheel" && "$venv/bin/python" -m pip wheel -q --no-deps -w "$venv/wheel" "$here"
"$venv/bin/python" -m pip install -q --no-deps "$venv"/wheel/verlstudy-*.whl  # the set-up cell's first command
"$venv/bin/python" -m verlstudy.kit.colab                                      # and its second
"$venv/bin/python" -m pip freeze | sort > "$venv/after.txt"
moved=0
# pip freeze spells names as installed (jupyter_client), the pins as written (jupyter-client): compare PEP 503 names
normalize() { tr 'A-Z_.' 'a-z--'; }
while read -r requirement; do
  case "$requirement" in ''|'#'*) continue ;; esac
  name="${requirement%%==*}"
  if ! normalize < "$venv/after.txt" | grep -qx "$(normalize <<< "$requirement")"; then
    echo "colab runtime: $name moved: pinned $requirement, now $(normalize < "$venv/after.txt" | grep "^$(normalize <<< "$name")==" || echo 'missing')"
    moved=1
  fi
done < "$versions"
[ "$moved" = 0 ] || exit 1
echo "colab runtime: every pinned package unmoved"
cd "$venv" && "$venv/bin/verlstudy" run 00 01 03 04 --no-floor --out "$venv/run"
