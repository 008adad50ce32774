#!/usr/bin/env bash
# The browser tests need a Chromium (tests/conftest.py finds $CHROMIUM_PATH, Debian's
# /usr/bin/chromium or one Playwright installed); a CJK font makes the Chinese UI legible in their
# screenshots. As root on Debian, install what is missing; anywhere else only say what is missing:
# without a Chromium the browser tests skip (REQUIRE_BROWSER=1 makes that a failure).
set -euo pipefail
have_chromium() {
  [ -n "${CHROMIUM_PATH:-}" ] && [ -x "${CHROMIUM_PATH}" ] && return 0
  [ -x /usr/bin/chromium ] && return 0
  compgen -G "${PLAYWRIGHT_BROWSERS_PATH:-$HOME/.cache/ms-playwright}/chromium-*" >/dev/null && return 0
  compgen -G "$HOME/Library/Caches/ms-playwright/chromium-*" >/dev/null && return 0
  return 1
}
need=()
have_chromium || need+=(chromium)
if [ -d /usr/share/fonts ] && [ ! -d /usr/share/fonts/truetype/wqy ]; then need+=(fonts-wqy-microhei); fi
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "Missing for the browser tests: ${need[*]}." >&2
  if [[ " ${need[*]} " == *" chromium "* ]]; then
    echo "They will be skipped. Install a Chromium with: .venv/bin/python -m playwright install chromium" >&2
    echo "(Debian: sudo apt-get install -y ${need[*]}), or set CHROMIUM_PATH." >&2
  else
    echo "Install with: sudo apt-get install -y ${need[*]}" >&2
  fi
  exit 0
fi
echo "Installing Debian packages for the browser tests: ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${need[@]}" >/dev/null
