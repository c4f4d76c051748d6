#!/bin/sh
# An example container_run_args plugin for Chalk (see docs/plugins.md).
#
# Chalk writes one JSON request on stdin, with the hardware that
# hardware_limits answered under "limits", e.g.
#   {"version":1,"plugin":"container_run_args","environment":"hello",...,
#    "hardware":"gpu-small","runtime":"docker",
#    "limits":{"cpus":8,"memory_bytes":34359738368,"disk_bytes":214748364800,
#              "devices":[{"kind":"gpu","count":1,"passthrough":true}]}}
# and reads {"version": 1, "args": [...]} on stdout: engine flags added to
# the sandbox. Chalk refuses flags that would undo the sandbox's
# confinement (docs/plugins.md lists what is allowed).
set -eu

request=$(cat)
if printf '%s\n' "$request" | grep -q '"kind": *"gpu"'; then
	# docker's NVIDIA support; a larger /dev/shm for data loaders.
	echo '{"version": 1, "args": ["--gpus", "all", "--shm-size", "8g"]}'
else
	echo '{"version": 1, "args": []}'
fi
