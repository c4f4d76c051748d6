#!/usr/bin/env bash
# quickstart.sh: Chalk's main job end to end. Sets the machine up (docker,
# buildx, a base image), builds the chalk binary and the example agent,
# starts a scripted model offline, then builds and runs the agent
# environment on docker, confined, and shows the transcript and /out.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh

# The student is an agent (examples/agent/cmd/agent), built here: the
# image has no Go toolchain.
examples/agent/build.sh >/dev/null

# The model: a scripted OpenAI-compatible server, on the docker bridge's
# address so that the sandbox's harness can reach it (the student reaches
# it only through the harness).
tmp=$(mktemp -d)
model_pid=
cleanup() {
	[ -n "$model_pid" ] && kill "$model_pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
gateway=$(docker network inspect bridge --format '{{(index .IPAM.Config 0).Gateway}}')
bin/chalk model-proxy --script examples/agent/model.toml --listen "$gateway:0" >"$tmp/url" 2>"$tmp/model.log" &
model_pid=$!
for _ in $(seq 100); do
	[ -s "$tmp/url" ] && break
	sleep 0.1
done
url=$(head -n1 "$tmp/url")
[ -n "$url" ] || { cat "$tmp/model.log" >&2; echo "the scripted model did not start" >&2; exit 1; }

# --runtime docker: without it, chalk uses the platform's VM (firecracker on
# Linux with /dev/kvm), which needs its own set-up; see docs/runtimes.md.
bin/chalk run --runtime docker --plain --model-proxy "$url" examples/agent | tee "$tmp/out"

dir=$(dirname "$(sed -n 's/^transcript: //p' "$tmp/out")")
echo
echo "== transcript: $dir/transcript.jsonl"
cat "$dir/transcript.jsonl"
echo
echo "== /out, copied back to $dir/out:"
(cd "$dir/out" && find . -type f | sort | while read -r f; do printf -- '--- %s\n' "$f"; cat "$f"; echo; done)
