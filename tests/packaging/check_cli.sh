#!/usr/bin/env bash
# The tools and examples parse their command lines with getopt_long: --help prints the usage on stdout and exits 0; an unknown option, a
# stray argument or a bad value exits 2 at once with the usage line on
# stderr (`mlp_digits --epochs abc` used to train one epoch, then fail), and
# so does a --save or --loss-log path that cannot be written (found before
# training, not after it).
# Usage: check_cli.sh <portable> <example>...  (every example built: the
# ones that train, *_digits, get the --epochs checks too)
set -u
portable=$1; shift
programs=("$@")
fail=0
out=$(mktemp) err=$(mktemp) scratch=$(mktemp -d)
trap 'chmod -R u+w "$scratch"; rm -rf "$out" "$err" "$scratch"' EXIT
# a folder no file can be made in (root ignores the mode, so root skips it)
mkdir "$scratch/read-only" && chmod a-w "$scratch/read-only"

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
    expect 2 stderr "$prog" --epochs
    # the single-process trainers log every step's loss (the tests compare
    # those files), so the bad-path checks below must not skip them
    case $(basename "$prog") in
    mlp_digits | cnn_digits)
      grep -q -- "--loss-log F" < <("$prog" --help) ||
        { echo "FAIL: $prog --help does not offer --loss-log"; fail=1; } ;;
    esac
    for flag in --save --loss-log; do
      grep -q -- "$flag PATH\|$flag F" < <("$prog" --help) || continue
      bads=("$scratch/no-such-folder/out" "$scratch")
      [[ $(id -u) != 0 ]] && bads+=("$scratch/read-only/out")
      for bad in "${bads[@]}"; do
        expect 2 stderr "$prog" --epochs 1 "$flag" "$bad"
        if grep -qi 'epoch [0-9]' "$out"; then echo "FAIL: $prog $flag '$bad' trained"; fail=1; fi
        grep -qF -- "$flag '$bad' cannot be written" "$err" ||
          { echo "FAIL: $prog $flag '$bad' does not name the path"; fail=1; }
      done
    done ;;
  gpu_tour) expect 2 stderr "$prog" --quick extra ;;
  esac
done
exit $fail
