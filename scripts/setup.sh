#!/usr/bin/env bash
# Set up everything mlc_jupyter needs on a fresh Debian machine, idempotently:
# Debian's Chromium (browser tests) and Graphviz (dataflow graphs as SVG), a virtual environment in .venv with the package (editable),
# its test tools and PyTorch's CPU build, and the JupyterLab extension built from source.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=""
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
command -v dot >/dev/null 2>&1 || missing="$missing graphviz"
if [ -n "$missing" ]; then
  if [ "$(id -u)" = "0" ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
  else
    echo "setup: Debian packages missing (sudo apt-get install$missing): browser tests skip," \
      "graphs show as text without graphviz" >&2
  fi
fi

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# torch first and pinned: 2.13.0 is the CPU build available locally; a bare "torch" pulls CUDA.
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[test,torch]"

# As root (a container, or a machine set up with sudo) Jupyter refuses to start unless allow_root is
# set: the venv's own Jupyter config sets it, read only by this venv's jupyter, so the README's open
# command works as written for root too. Other settings in that file are kept.
if [ "$(id -u)" = "0" ]; then
  .venv/bin/python - <<'PY'
import json
import pathlib

path = pathlib.Path(".venv/etc/jupyter/jupyter_server_config.json")
path.parent.mkdir(parents=True, exist_ok=True)
config = json.loads(path.read_text()) if path.exists() else {}
config.setdefault("ServerApp", {})["allow_root"] = True
path.write_text(json.dumps(config, indent=2) + "\n")
PY
fi

if [ -f labextension/build.sh ]; then
  bash labextension/build.sh --link --test
fi
echo "setup: done (.venv ready)"
