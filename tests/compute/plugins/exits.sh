#!/bin/sh
# Answers the handshake, then dies on the first request with a message on stderr.
read -r hello
echo '{"protocol": 1, "name": "exits"}'
read -r request
echo "boom: cannot cost this op" >&2
exit 3
