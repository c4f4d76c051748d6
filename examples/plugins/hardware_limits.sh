#!/bin/sh
# An example hardware_limits plugin for Chalk (see docs/plugins.md).
#
# Chalk writes one JSON request on stdin, e.g.
#   {"version":1,"plugin":"hardware_limits","environment":"hello",
#    "environment_dir":"/src/hello","hardware":"gpu-small","runtime":"docker",
#    "defaults":{"cpus":2,"memory_bytes":4294967296,"disk_bytes":0}}
# and reads one JSON answer on stdout. Anything for people goes to stderr.
#
# This one maps the hardware name of chalk.toml ([hardware] name = "...")
# to a fixed table. A real one might ask a scheduler or read an inventory.
set -eu

request=$(cat)
hardware=$(printf '%s\n' "$request" | sed -n 's/.*"hardware": *"\([^"]*\)".*/\1/p')

case "$hardware" in
default | "")
	# Keep what chalk.toml says (2 CPUs and 4 GiB unless it says more).
	echo '{"version": 1}'
	;;
large)
	echo '{"version": 1, "cpus": 16, "memory": "64GiB", "disk": "500GiB"}'
	;;
gpu-small)
	# A GPU is passed through from the host: Chalk runs such a task only
	# under docker, and container_run_args adds the device flags.
	echo '{"version": 1, "cpus": 8, "memory": "32GiB", "disk": "200GiB",'
	echo ' "devices": [{"kind": "gpu", "count": 1, "passthrough": true}]}'
	;;
*)
	echo "hardware_limits: no hardware named \"$hardware\"; this plugin knows default, large and gpu-small" >&2
	exit 1
	;;
esac
