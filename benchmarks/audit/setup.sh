#!/usr/bin/env bash
# Install the apps the perception audit runs (benchmarks/audit/apps.py), on Debian 12 as
# root (or with sudo): Debian's packages, and the PyPI ones into .cache/audit-venv (kept
# apart from the project's venv: an app's pins must not move the project's). Run once:
#   bash benchmarks/audit/setup.sh        then   .venv/bin/python benchmarks/audit/run.py
# scripts/setup.sh --dev installs the project's own test apps; this adds the rest.
set -euo pipefail
cd "$(dirname "$0")/../.."

# GTK 3, GTK 4/libadwaita, Qt 5, Qt 6 (qt6-tools), wxWidgets (wxGTK 3 apps, and Python's
# wx for wxGlade), Tk (IDLE, Thonny, gitk, git gui, tkcon), Java Swing (with
# Debian's ATK wrapper, the bridge VirtualDesktop switches on), the browsers and the
# Debian-packaged Python web apps (radicale, glances' web UI, mkdocs' dev server);
# FLTK, Motif and Xaw apps, which have no accessibility tree at all.
packages=(
  gtk-3-examples mousepad galculator gucharmap pluma mate-calc xfce4-dict gnome-mines ristretto
  gtk-4-examples gnome-calculator gnome-text-editor gnome-font-viewer gnome-characters
  gnome-clocks baobab gnome-console gnome-sudoku
  featherpad pcmanfm-qt lximage-qt qterminal qpdfview speedcrunch
  designer-qt6 assistant-qt6 linguist-qt6 qt6-base-dev-tools libqt6sql6-sqlite
  python3-wxgtk4.0 filezilla poedit xchm wxglade
  python3-tk idle-python3.11 thonny gitk git-gui tkcon
  default-jre libatk-wrapper-java libatk-wrapper-java-jni gpsprune jedit openjdk-17-demo
  chromium firefox-esr radicale glances python3-bottle mkdocs
  # benchmarks/desktop_fresh's apps: GTK 3, Qt 5, Qt 6, wx, Tk, Swing, FLTK, Motif, Xaw,
  # Jupyter Notebook in Chromium and Syncthing in Firefox
  geany gtkhash juffed sqlitebrowser focuswriter qt6ct xmlcopyeditor rhinote logisim basex
  fluid nedit x11-apps jupyter-notebook syncthing
  xvfb openbox dbus at-spi2-core tesseract-ocr
)
sudo=""
[ "$(id -u)" != 0 ] && sudo="sudo"
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "audit setup: installing ${missing[*]}"
  $sudo apt-get -o DPkg::Lock::Timeout=900 update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=900 install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
fi

# PyPI's apps, in a venv of their own: datasette (an ASGI data browser).
venv=.cache/audit-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q "datasette==0.65.5"
echo "audit setup: done"
