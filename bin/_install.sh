# Sourced by bin/serve, bin/test and bin/manage: create .venv and install the project into it, but only
# when pyproject.toml changed since the last install (a stamp of its hash inside .venv). When nothing
# changed, no pip and no network at all: the scripts work offline once installed.
# Usage: ensure_installed base|dev
ensure_installed() {
  local extras="$1" stamp want
  local py="${PYTHON:-python3}"
  if [ ! -x .venv/bin/python ]; then
    "$py" -m venv .venv
  fi
  want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
  # The dev install includes everything the base one does.
  for stamp in ".venv/.installed-$extras" .venv/.installed-dev; do
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
      return 0
    fi
  done
  echo "Installing the Python packages into .venv (pyproject.toml is new or changed)..."
  # setuptools warns about every editable install ("Please be careful with folders in your working
  # directory with the same name as your package"): nine lines of stars on a newcomer's first start,
  # about nothing (this project installs no package; manage.py runs from the checkout).
  local quiet="ignore:Editable installation${PYTHONWARNINGS:+,$PYTHONWARNINGS}"
  PYTHONWARNINGS="$quiet" .venv/bin/python -m pip install --quiet --upgrade pip || true
  if [ "$extras" = "dev" ]; then
    PYTHONWARNINGS="$quiet" .venv/bin/python -m pip install --quiet -e ".[dev]"
  else
    PYTHONWARNINGS="$quiet" .venv/bin/python -m pip install --quiet -e .
  fi
  echo "$want" > ".venv/.installed-$extras"
}
