#!/usr/bin/env bash
# The tools and examples parse their command lines with getopt_long (issue
# 11): --help prints the usage on stdout and exits 0; an unknown option, a
# stray argument or a bad value exits 2 at once with the usage line on
# stderr (`mlp_digits --epochs abc` used to train one epoch, then fail).
# Usage: check_cli.sh <portable> <example>...  (every example built: the
# ones that train, *_digits, get the --epochs checks too)
set -u
portable=$1; shift
programs=("$@")
fail=0
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

# expect <status> <stream that must show "usage:"> <command...>
expect() {
  local want=$1 stream=$2; shift 2
  "$@" >"$out" 2>"$err" </dev/null
  local got=$?
  local file=$out; [[ $stream == stderr ]] && file=$err
  if [[ $got != "$want" ]] || ! grep -q '^usage: ' "$file"; then
    echo "FAIL: $* -> status $got (want $want), usage on $stream: $(grep -c '^usage: ' "$file")"
    sed 's/^/  stdout: /' "$out" | head -5; sed 's/^/  stderr: /' "$err" | head -5
    fail=1
  else
    echo "ok: $* -> $got"
  fi
}

for prog in "$portable" "${programs[@]}"; do
  expect 0 stdout "$prog" --help
  expect 0 stdout "$prog" -h
  expect 2 stderr "$prog" --no-such-option
  expect 2 stderr "$prog" stray-argument
done
for command in devices bench version; do
  expect 0 stdout "$portable" "$command" --help
  expect 2 stderr "$portable" "$command" --bogus
done
expect 2 stderr "$portable" no-such-command
for prog in "${programs[@]}"; do
  case $(basename "$prog") in
  *_digits)
    for bad in abc 0 -3 3x "" 1e3; do
      expect 2 stderr "$prog" --epochs "$bad"
      # it stopped before training: no epoch was reported
      if grep -qi 'epoch [0-9]' "$out"; then echo "FAIL: $prog --epochs '$bad' trained"; fail=1; fi
    done
    grep -q "epochs 'abc'" < <("$prog" --epochs abc 2>&1) ||
      { echo "FAIL: $prog --epochs abc does not name the bad value"; fail=1; }
    expect 2 stderr "$prog" --epochs ;;
  gpu_tour) expect 2 stderr "$prog" --quick extra ;;
  esac
done
exit $fail
