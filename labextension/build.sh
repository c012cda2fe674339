#!/usr/bin/env bash
# Build the prebuilt JupyterLab extension into mlc_jupyter/labextension/ (shipped in the wheel).
# Building a wheel or sdist (pip wheel ., python -m build) runs the same build through the
# hatch-jupyter-builder hook in pyproject.toml; this script is for development.
#
# Needs Node >= 18 with npm (the npm registry), and JupyterLab in the venv (its
# `jupyter labextension build` does the webpack build). Usage:
#   labextension/build.sh          install npm packages (from package-lock.json), compile, build
#                                  (skipped when the build is newer than every source file)
#   labextension/build.sh --link   also make the venv's JupyterLab load the build from this tree
#   labextension/build.sh --test   also run the Jest unit tests
# MLC_VENV picks the venv (default: .venv at the repository root).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
venv="${MLC_VENV:-$root/.venv}"
export PATH="$venv/bin:$PATH"
cd "$here"

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
built="$root/mlc_jupyter/labextension/static/style.js"
if [ -f "$built" ] && [ -z "$(find src style schema package.json -newer "$built" -print -quit)" ]; then
  echo "build.sh: the lab extension is up to date"
else
  npx tsc --sourceMap false
  jupyter labextension build --development False .
fi

for arg in "$@"; do
  case "$arg" in
    --link)
      target="$venv/share/jupyter/labextensions/mlc-jupyter"
      mkdir -p "$(dirname "$target")"
      rm -rf "$target"
      ln -s "$root/mlc_jupyter/labextension" "$target"
      ;;
    --test) npx jest --ci ;;
    *) echo "build.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done
