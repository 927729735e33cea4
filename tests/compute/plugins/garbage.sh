#!/bin/sh
# Answers the handshake, then a line that is not JSON.
read -r hello
echo '{"protocol": 1, "name": "garbage"}'
read -r request
echo 'this is not json'
