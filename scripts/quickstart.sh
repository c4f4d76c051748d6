#!/usr/bin/env bash
# quickstart.sh: Chalk's main job end to end. Sets the machine up (docker,
# buildx, a base image), builds the chalk binary, then builds and runs the
# example environment on docker and shows the transcript and /out.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh

out=$(mktemp)
trap 'rm -f "$out"' EXIT
# --runtime docker: without it, chalk uses the platform's VM (firecracker on
# Linux with /dev/kvm), which needs its own set-up; see docs/runtimes.md.
bin/chalk run --runtime docker examples/hello | tee "$out"

dir=$(dirname "$(sed -n 's/^transcript: //p' "$out")")
echo
echo "== transcript: $dir/transcript.jsonl"
cat "$dir/transcript.jsonl"
echo
echo "== /out, copied back to $dir/out:"
(cd "$dir/out" && find . -type f | sort | while read -r f; do printf -- '--- %s\n' "$f"; cat "$f"; done)
