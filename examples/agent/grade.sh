#!/bin/sh
# The grader runs after the student, as root: the answer must be the number
# of ERROR lines in the log. It writes the reward into /out/reward.
# TASK_DIR and OUT_DIR move it out of the sandbox, for tests.
set -u
task=${TASK_DIR:-/task}
out=${OUT_DIR:-/out}
want=$(grep -c ' ERROR ' "$task/app.log")
got=$(tr -d '[:space:]' < "$out/answer.txt" 2>/dev/null || true)
if [ "$got" = "$want" ]; then
	echo 1 > "$out/reward"
	echo "correct: $want ERROR lines"
else
	echo 0 > "$out/reward"
	echo "wrong: the log has $want ERROR lines, answer.txt says '$got'"
fi
