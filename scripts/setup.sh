#!/usr/bin/env bash
# Set up a checkout: system packages (Debian/Ubuntu, when root or sudo is available) and a
# virtual environment in .venv with openprogram installed in editable mode.
#   scripts/setup.sh        what the demo needs (Xvfb, xdotool, Tk, D-Bus and AT-SPI; the
#                           gui extra)
#   scripts/setup.sh --dev  also what the tests need (PostgreSQL, tesseract, Chromium and
#                           chromedriver, gtk3-widget-factory, dev tools; the postgres, otel,
#                           bench, ray and mcp extras and the dev and bench-apps dependency
#                           groups; node and the MCP reference servers)
set -euo pipefail
cd "$(dirname "$0")/.."

dev=0
[ "${1:-}" = "--dev" ] && dev=1

# libgl1 and libglib2.0-0: opencv-python (the OpenCV that rapidocr requires) links them;
# dbus + at-spi2-core: the private session bus and AT-SPI bus a VirtualDesktop starts, so
# perception reads apps' accessibility trees (docs/gui.md, "Accessibility");
# openbox: the window manager a VirtualDesktop runs (title bars, dialogs that stack and
# take the focus, raise and maximise; docs/gui.md, "VirtualDesktop")
packages=(xvfb xdotool x11-utils python3-tk fonts-dejavu-core tesseract-ocr libgl1 libglib2.0-0
  dbus at-spi2-core openbox)
# gtk-3-examples: gtk3-widget-factory, the GTK app the accessibility tests read;
# chromium-driver: drives MiniWoB++ pages and reads their DOM boxes;
# eslint: lints the views' JavaScript (openprogram/display/view.js), pure JS packages;
# nodejs: runs the MCP reference servers the MCP tests start (below);
# libreoffice-calc: the spreadsheet whose sheet the pixel path reads as one grid;
# libreoffice-writer: the desktop tasks' word processor;
# libreoffice-gtk3: LibreOffice's GTK 3 plugin, the one that publishes an accessibility tree
# (SAL_USE_VCLPLUGIN=gtk3), read by tests/gui_harness/perception/tree/test_desktop_accessibility.py;
# gnome-calculator: a GTK 4 app (no AT-SPI Collection: read by the tree walk);
# featherpad: a small Qt 5 app (Qt's AT-SPI bridge, QT_LINUX_ACCESSIBILITY_ALWAYS_ON);
# mousepad: a GTK 3 text editor whose Save As is GTK's file chooser (the desktop tasks'
# GTK 3 app and file dialog, gui_harness/bench/desktop_tasks);
# xclip: reads the desktop's clipboard for the desktop tasks' clipboard evaluator;
# bubblewrap: the sandbox ProcessOperations uses when it is installed (else rlimits only)
# gnome-text-editor: a GTK 4 / libadwaita editor (popover menu, Save As on top of it);
# libreoffice-impress: slides (and Draw) whose canvas text is not in the tree;
# pcmanfm-qt: a Qt 5 file manager (icon view, rename in place);
# python3-pyqt6: a Qt 6 form with tabs and a dialog (the desktop tasks' settings_app.py);
# python3-gi, gir1.2-gtk-4.0: GTK 4 from Python (panel_app.py: expander, tabs, popover)
# galculator: a GTK 3 calculator, held out of perception's tuning (held_out_controls.json)
# gtk-4-examples: gtk4-widget-factory, the animated GTK 4 app the registration test reads
# openjdk-17-demo, libatk-wrapper-java(-jni): Swing apps (Notepad) read through Debian's ATK
# wrapper, which VirtualDesktop switches on; python3-wxgtk4.0: a wx form; firefox-esr: a
# page in Firefox (tests/gui_harness/desktop/test_toolkit_accessibility.py)
# curl, x11-xserver-utils (xset): what cua-auto-harness's conformance run calls in its
# guest (tests/gui_harness/bench/test_conformance.py; bubblewrap is that guest)
# idle-python3.11 (Tk), mate-calc (GTK 3), poedit (wx), git-gui (Tk): the apps the
# perception tests of issue 41's classes start (a Tk menu bar, lone-symbol keys, captions)
[ "$dev" = 1 ] && packages+=(postgresql chromium chromium-driver gtk-3-examples eslint nodejs
  libreoffice-calc libreoffice-writer libreoffice-gtk3 gnome-calculator featherpad mousepad
  xclip bubblewrap gnome-text-editor libreoffice-impress pcmanfm-qt python3-pyqt6 python3-gi
  gir1.2-gtk-4.0 galculator gtk-4-examples openjdk-17-demo libatk-wrapper-java
  libatk-wrapper-java-jni python3-wxgtk4.0 firefox-esr curl x11-xserver-utils
  idle-python3.11 mate-calc poedit git-gui)

sudo=""
[ "$(id -u)" != 0 ] && sudo="sudo"
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null; then
    echo "setup: please install these system packages yourself: ${missing[*]}" >&2
  else
    echo "setup: installing ${missing[*]}"
    $sudo apt-get -o DPkg::Lock::Timeout=900 update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
# The dependencies come from the lock file, with hashes (scripts/lock.sh writes it: the
# versions the tests passed with); then the package itself in editable mode, which finds
# them all installed. pip >= 25.1 reads pyproject.toml's dependency groups (--group).
extras="gui"
lock=requirements/demo.lock
groups=()
if [ "$dev" = 1 ]; then
  extras="gui,postgres,otel,bench,ray,mcp"
  lock=requirements/dev.lock
  groups=(--group dev --group bench-apps)
fi
stamp=".venv/.installed-$extras-$(cat pyproject.toml "$lock" | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade "pip>=25.1"
  .venv/bin/python -m pip install -q --require-hashes -r "$lock"
  .venv/bin/python -m pip install -q -e ".[$extras]" "${groups[@]}"
  touch "$stamp"
fi

# The MCP reference servers the tests start (tests/support/mcp_servers.py), pinned, from npm
# into .cache/npm-mcp (git-ignored), so the tests need no network. Debian's nodejs package
# leaves npm out; NodeSource's brings it.
if [ "$dev" = 1 ]; then
  if ! command -v npm >/dev/null && command -v apt-get >/dev/null; then
    $sudo apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends npm >/dev/null
  fi
  mcp_servers=(@modelcontextprotocol/server-everything@2026.8.31
    @modelcontextprotocol/server-filesystem@2026.8.31)
  mcp_stamp=".cache/npm-mcp/.installed-$(echo "${mcp_servers[*]}" | sha256sum | cut -c1-16)"
  if [ ! -f "$mcp_stamp" ]; then
    mkdir -p .cache/npm-mcp
    npm install --prefix .cache/npm-mcp --save-exact --no-audit --no-fund --silent "${mcp_servers[@]}"
    touch "$mcp_stamp"
  fi
  # UI component kits for benchmarks/bench_perception.py --kits (prebuilt CSS, UMD and
  # ESM bundles, served as they are: no build step), pinned, into .cache/npm-kits
  kits=(bootstrap@5.3.9 bulma@1.0.4 @shoelace-style/shoelace@2.20.1 @mui/material@5.18.0
    react@18.3.1 react-dom@18.3.1 @picocss/pico@2.1.1 uikit@3.25.29)
  kits_stamp=".cache/npm-kits/.installed-$(echo "${kits[*]}" | sha256sum | cut -c1-16)"
  if [ ! -f "$kits_stamp" ]; then
    mkdir -p .cache/npm-kits
    npm install --prefix .cache/npm-kits --save-exact --no-audit --no-fund --silent "${kits[@]}"
    touch "$kits_stamp"
  fi
fi
