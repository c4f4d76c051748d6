#!/bin/sh
# The student: an agent would go here. This one answers a question by
# writing a file into /out, where the grader looks for it.
set -eu
echo "hello from the student, running as uid $(id -u)"
echo "the answer is 42" > /out/answer.txt
mkdir -p /out/notes
echo "worked in $PWD" > /out/notes/log.txt
