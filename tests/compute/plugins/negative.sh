#!/bin/sh
# Answers every request with a negative time.
read -r hello
echo '{"protocol": 1, "name": "negative"}'
while read -r request; do
  echo '{"id": 1, "time_s": -1}'
done
