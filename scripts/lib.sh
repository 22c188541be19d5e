# Shared by the scripts: a virtual environment in .venv with the project installed.
# Reinstalls only when pyproject.toml changed since the last install.

ensure_venv() {  # ensure_venv [EXTRAS]   e.g. ensure_venv dev
    local extras="${1:-}" python="${PYTHON:-python3}"
    local spec="." stamp=".venv/.installed${extras:+-$extras}"
    [ -n "$extras" ] && spec=".[$extras]"
    if [ ! -x .venv/bin/python ]; then
        echo "suspended-runs: making .venv with $python" >&2
        "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
            || { echo "suspended-runs needs Python 3.11 or newer ($python)" >&2; exit 1; }
        "$python" -m venv .venv
    fi
    # An install with more extras (scripts/test's) holds one with fewer.
    local held
    for held in .venv/.installed-*; do
        if [ -f "$held" ] && [ ! pyproject.toml -nt "$held" ] && _holds "${held#.venv/.installed-}" "$extras"; then
            stamp="$held"
        fi
    done
    if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
        # setuptools' notes on an editable install of a package-dir layout ("Editable
        # installation ...") are not for a user: the output is shown only when pip fails.
        local log=".venv/install.log"
        echo "suspended-runs: installing ${spec} into .venv (the first time: a minute or two)" >&2
        if ! { .venv/bin/python -m pip install --quiet --upgrade pip \
            && .venv/bin/python -m pip install --quiet -e "$spec"; } >"$log" 2>&1; then
            cat "$log" >&2
            echo "suspended-runs: installing into .venv failed (the output above is in $log)" >&2
            exit 1
        fi
        touch "$stamp"
    fi
}

_holds() {  # _holds INSTALLED WANTED: every extra of WANTED (comma-separated) is in INSTALLED
    local extra
    for extra in ${2//,/ }; do
        [[ ",$1," == *",$extra,"* ]] || return 1
    done
}
