#!/bin/sh
# Answers the handshake, then never answers.
read -r hello
echo '{"protocol": 1, "name": "hangs"}'
read -r request
exec sleep 30
