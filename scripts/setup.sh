#!/usr/bin/env bash
# setup.sh: make this Debian/Ubuntu machine ready to build and run Chalk
# environments on docker. Idempotent: each step checks before it acts.
#
#   - installs docker.io and starts dockerd when no daemon answers
#   - installs the buildx plugin (from Debian/Ubuntu's package when it exists,
#     else builds it with Go)
#   - makes debian:bookworm-slim locally with debootstrap when it cannot be
#     pulled (machines with no registry)
#   - installs podman and loads the same base image into it
#   - installs chromium, for the browser tests of chalk view
#   - installs tmux, for the terminal tests of chalk run's live view
#   - builds the chalk binary (static) into ./bin/chalk
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
BUILDX_VERSION=v0.38.2
BASE_IMAGE=${CHALK_BASE_IMAGE:-debian:bookworm-slim}

say() { printf '==> %s\n' "$*" >&2; }
need_root() {
	if [ "$(id -u)" != 0 ]; then
		echo "setup.sh: this step needs root: $*; run it with sudo" >&2
		exit 1
	fi
}

apt_updated=
apt_install() {
	need_root "apt-get install $*"
	if [ -z "$apt_updated" ]; then
		apt-get update -qq
		apt_updated=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# 1. docker and its daemon.
if ! command -v dockerd >/dev/null 2>&1; then
	say "installing docker.io"
	apt_install docker.io
fi
for tool in debootstrap:debootstrap socat:socat ps:procps nc:netcat-openbsd ssh:openssh-client sshd:openssh-server curl:curl rsync:rsync; do
	command -v "${tool%%:*}" >/dev/null 2>&1 || { say "installing ${tool#*:}"; apt_install "${tool#*:}"; }
done
if ! docker info >/dev/null 2>&1; then
	say "starting dockerd"
	need_root "start dockerd"
	if command -v systemctl >/dev/null 2>&1 && systemctl is-system-running >/dev/null 2>&1; then
		systemctl start docker
	else
		nohup dockerd >/var/log/chalk-dockerd.log 2>&1 &
	fi
	for _ in $(seq 1 60); do
		docker info >/dev/null 2>&1 && break
		sleep 0.5
	done
	docker info >/dev/null 2>&1 || { echo "setup.sh: dockerd did not start; see /var/log/chalk-dockerd.log" >&2; exit 1; }
fi

# 2. buildx.
if ! docker buildx version >/dev/null 2>&1; then
	if apt-cache show docker-buildx >/dev/null 2>&1 || { apt-get update -qq && apt_updated=1 && apt-cache show docker-buildx >/dev/null 2>&1; }; then
		say "installing docker-buildx"
		apt_install docker-buildx
	else
		say "building buildx $BUILDX_VERSION with go (no docker-buildx package here; about 2 minutes)"
		need_root "install the buildx plugin"
		tmp=$(mktemp -d)
		GOBIN="$tmp" go install "github.com/docker/buildx/cmd/buildx@$BUILDX_VERSION"
		install -D -m 0755 "$tmp/buildx" /usr/local/lib/docker/cli-plugins/docker-buildx
		rm -rf "$tmp"
	fi
fi

# 3. the base image the examples and tests start FROM.
if ! docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
	if timeout 60 docker pull -q "$BASE_IMAGE" >/dev/null 2>&1; then
		say "pulled $BASE_IMAGE"
	else
		say "no registry reachable: making $BASE_IMAGE with debootstrap"
		need_root "debootstrap"
		mirror=$(grep -rhoE '^(URIs:|deb) +https?://[^ ]+' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null |
			grep -v security | grep -E 'debian(/)?$' | head -1 | awk '{print $2}' || true) 
		mirror=${mirror:-http://deb.debian.org/debian}
		dir=$(mktemp -d)
		debootstrap --variant=minbase bookworm "$dir" "$mirror" >/dev/null
		rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
		tar -C "$dir" -c . | docker import -c 'CMD ["bash"]' - "$BASE_IMAGE" >/dev/null
		rm -rf "$dir"
	fi
fi

# 4. podman, with the same base image, for its real-engine tests.
if ! command -v podman >/dev/null 2>&1; then
	say "installing podman"
	apt_install podman
fi
if ! podman image exists "$BASE_IMAGE" 2>/dev/null; then
	say "loading $BASE_IMAGE into podman"
	docker save "$BASE_IMAGE" | podman load -q >/dev/null
fi

# 5. chromium, which the browser tests of chalk view drive headless.
if ! command -v chromium >/dev/null 2>&1; then
	say "installing chromium"
	apt_install chromium
fi

# 6. tmux, the terminal the tests of chalk run's live view draw in.
if ! command -v tmux >/dev/null 2>&1; then
	say "installing tmux"
	apt_install tmux
fi

# 7. the chalk binary, static so it runs inside any sandbox.
say "building bin/chalk"
(cd "$root" && CGO_ENABLED=0 go build -trimpath -o bin/chalk ./cmd/chalk)
