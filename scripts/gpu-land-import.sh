#!/bin/bash
# Here, after a device call of scripts/gpu-landscape.sh: what it brought back (land.tgz) into its tests/data folder.
#   bash scripts/gpu-land-import.sh LAND_TGZ FIXTURE PLAN [PLAN ...]
# For each PLAN: its campaign.yml, calls.txt and results folder(s) (all but work/, the runs' scratch), and the GPU's
# gpu.csv, copied over FIXTURE's, with the device's two path prefixes renamed in every file as the fixtures write
# them: <device root>/.gpu/models/ -> /models/, /tmp/redline-land/ -> /tmp/redline/ (gpu-landscape.sh renames them
# back when it restores a run from FIXTURE). Nothing else in a file changes.
set -eu
usage="usage: gpu-land-import.sh LAND_TGZ FIXTURE PLAN [PLAN ...]"
TGZ=${1:?$usage}; FIXTURE=${2:?$usage}; shift 2
[ $# -gt 0 ] || { echo "gpu-land-import.sh: name at least one PLAN; $usage" >&2; exit 2; }
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
tar -C "$TMP" -xzf "$TGZ"
for plan in "$@"; do
  [ -f "$TMP/$plan/campaign.yml" ] || { echo "gpu-land-import.sh: $TGZ has no $plan/campaign.yml" >&2; exit 2; }
  rm -rf "$TMP/$plan/work"
done
grep -rlZ "/\.gpu/models/\|/tmp/redline-land/" "$TMP" | xargs -0r sed -i -E \
  "s#(/[^/[:space:]\"',=:]+)+/\.gpu/models/#/models/#g; s#/tmp/redline-land/#/tmp/redline/#g"
mkdir -p "$FIXTURE"
[ ! -f "$TMP/gpu.csv" ] || cp "$TMP/gpu.csv" "$FIXTURE/gpu.csv"
for plan in "$@"; do
  mkdir -p "$FIXTURE/$plan" && cp -r "$TMP/$plan"/. "$FIXTURE/$plan"/
  echo "$FIXTURE/$plan: $(ls "$FIXTURE/$plan" | tr '\n' ' ')"
done
