#!/usr/bin/env bash
# Regenerates the pictures of the docs from the tour scenarios:
# - docs/img/NAME.svg, the sequence diagram of every tour scenario
#   (verbsim run -svg, profile default), and docs/img/NAME.rxe.svg for the
#   scenario whose point is that the profiles differ;
# - docs/img/NAME.png, screenshots of the stepping page (verbsim run -html,
#   rendered by headless Chromium at the step given) for the scenarios in
#   $shots; the script fails when Chromium logs a console error.
# Needs chromium (apt-get install -y chromium) for the PNGs; without it only
# the SVGs are rewritten. TestDocPictures (internal/scenario) fails when an
# SVG is stale, missing, or left over from a scenario that is gone.
# Run from anywhere: bash scripts/scenario-pictures.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=docs/img
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/verbsim" ./cmd/verbsim
chromium=${CHROMIUM:-/usr/bin/chromium}

for f in internal/scenario/tour/*.scen; do
	name=$(basename "$f" .scen)
	"$tmp/verbsim" run -svg "$out/$name.svg" "$name" >/dev/null
done
"$tmp/verbsim" run -profile rxe -svg "$out/16-profiles-disagree.rxe.svg" 16-profiles-disagree >/dev/null
echo "wrote $(ls "$out"/*.svg | wc -l) diagrams in $out"

# name, the step the screenshot shows
shots=("06-lost-wakeup 8" "13-remote-access 16")
if [ ! -x "$chromium" ]; then
	echo "no $chromium: the PNGs are left as they were" >&2
	exit 0
fi
for pair in "${shots[@]}"; do
	set -- $pair
	name=$1 step=$2
	"$tmp/verbsim" run -html "$tmp/$name.html" "$name" >/dev/null
	"$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$tmp/profile-$name" --enable-logging=stderr --v=0 \
		--screenshot="$out/$name.png" --window-size=1400,900 \
		"file://$tmp/$name.html#$step" 2>"$tmp/$name.log" >/dev/null
	if grep -E 'Uncaught|CONSOLE' "$tmp/$name.log"; then
		echo "$name.html: console errors (above)" >&2
		exit 1
	fi
	echo "wrote $out/$name.png (step $step)"
done
