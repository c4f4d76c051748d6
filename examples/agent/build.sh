#!/bin/sh
# build.sh [OUTPUT]: builds the agent (cmd/agent) into bin/agent, or OUTPUT,
# as a static Linux binary for the sandbox. The image has no Go toolchain and
# its build has no network, so the binary is built here and COPYed in. The
# build is reproducible, so an unchanged agent does not change the image.
# GOARCH picks another architecture (default: this machine's).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/bin/agent}
case $out in /*) ;; *) out=$PWD/$out ;; esac
cd "$here/../.."
CGO_ENABLED=0 GOOS=linux GOARCH=${GOARCH:-$(go env GOARCH)} \
	go build -trimpath -buildvcs=false -ldflags='-s -w' -o "$out" ./examples/agent/cmd/agent
echo "$out"
