# Sourced by the integration scripts. `failures` counts failed checks.
failures=0

# fail NAME: records a failed check.
fail() {
  echo "FAIL $1"
  failures=$((failures + 1))
}

# expect NAME EXPECTED_EXIT MESSAGE_FRAGMENT -- COMMAND...: runs COMMAND (60 s at most) and checks
# its exit status and that its output (stdout and stderr) contains MESSAGE_FRAGMENT.
expect() {
  local name=$1 code=$2 fragment=$3
  shift 4
  local output status
  output=$(timeout 60 "$@" 2>&1)
  status=$?
  if [[ $status -ne $code ]] || [[ "$output" != *"$fragment"* ]]; then
    fail "$name: exit $status (expected $code), output:"
    echo "$output" | head -20
  else
    echo "ok   $name"
  fi
}
