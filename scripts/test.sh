#!/usr/bin/env bash
# test.sh: the whole test suite, as CI runs it. Sets the machine up first
# (docker, buildx, the base image), then: gofmt, go vet, the macOS build,
# every test (the real-docker ones included), and the run benchmark, which
# prints its ratio.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh

echo "==> gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*'))
if [ -n "$unformatted" ]; then
	echo "these files need gofmt -w:" >&2
	echo "$unformatted" >&2
	exit 1
fi

echo "==> go vet"
go vet ./...

# chalk is also a client on macOS: what only Linux has (the student's box,
# the host compute class) stays in _linux.go files. Cheap: the build cache
# serves both.
echo "==> chalk builds for macOS"
GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 go build -o /dev/null ./cmd/chalk
GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 go vet ./...

echo "==> go test"
# CI=true turns a missing docker into a failure instead of a skip.
CI=${CI:-true} go test -count=1 -timeout 20m ./...

echo "==> benchmark: chalk run against docker run --rm"
CI=${CI:-true} go test -count=1 -run '^$' -bench RunVsDocker -benchtime 10x ./internal/cli/

echo "==> benchmark: what confining the student adds to a run"
CI=${CI:-true} go test -count=1 -run '^$' -bench Confinement -benchtime 10x ./internal/run/

echo "==> benchmark: chalk run -n 8 against 8 runs one after another"
CI=${CI:-true} go test -count=1 -run '^$' -bench ParallelRuns -benchtime 1x ./internal/cli/

echo "==> benchmark: 100 MB of student stdout into the transcript against docker run"
CI=${CI:-true} go test -count=1 -run '^$' -bench TranscriptThroughput -benchtime 2x ./internal/cli/

echo "==> benchmark: chalk session proxy against direct TCP to the same server"
CI=${CI:-true} go test -count=1 -run '^$' -bench SessionProxy -benchtime 1x ./internal/e2e/
