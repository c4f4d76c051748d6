#!/bin/sh
# The grader runs after the student, as root, and writes the reward as a
# number into /out/reward.
set -eu
if grep -q 42 /out/answer.txt 2>/dev/null; then
	echo 1 > /out/reward
	echo "correct"
else
	echo 0 > /out/reward
	echo "wrong or missing answer"
fi
