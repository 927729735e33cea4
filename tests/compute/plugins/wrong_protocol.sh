#!/bin/sh
# Speaks another protocol version.
read -r hello
echo '{"protocol": 2, "name": "future"}'
