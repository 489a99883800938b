#!/usr/bin/env bash
# Runs every lab scenario with two builds of rpcscope-cli and compares their JSON exports apart from times,
# ports and ids (scripts/exportshape.py says exactly what it ignores and why). For a refactor that must not
# change behaviour: an empty difference for every scenario is the proof.
#
#   scripts/compare-exports.sh OLD_CLI NEW_CLI [SCENARIO ...]
#
# Some scenarios race by nature (gateway-drops-deadline and deadline-reset: the client's deadline and a reset arrive
# within a millisecond of each other). A scenario whose exports differ is run again, up to 5 rounds in all, and
# passes if the new build's export equals any export the old build gave (each form turns up in about 1 run of 6 on
# the old build too). Exits 1 if any scenario never matched.
set -uo pipefail
old=${1:?usage: compare-exports.sh OLD_CLI NEW_CLI [SCENARIO ...]}
new=${2:?usage: compare-exports.sh OLD_CLI NEW_CLI [SCENARIO ...]}
shift 2
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

scenarios=("$@")
if ((${#scenarios[@]} == 0)); then
  mapfile -t scenarios < <("$old" list | awk '/^[a-z]/ {print $1}')
fi

run() { # cli scenario out.json
  "$1" run "$2" --json "$3" >"$3.log" 2>&1 || { echo "  $2: exit $? ($(tail -n 1 "$3.log"))"; return 1; }
}

failed=0
for s in "${scenarios[@]}"; do
  verdict="differs"
  for round in 1 2 3 4 5; do
    run "$old" "$s" "$work/$s.old$round.json" || { verdict="old build failed"; break; }
    run "$new" "$s" "$work/$s.new$round.json" || { verdict="new build failed"; break; }
    for o in "$work/$s".old*.json; do
      for n in "$work/$s".new*.json; do
        if python3 "$here/exportshape.py" "$o" "$n" >/dev/null; then verdict="same"; break 3; fi
      done
    done
  done
  if [ "$verdict" = "same" ]; then
    echo "same      $s${round:+ (round $round)}"
  else
    echo "DIFFERENT $s: $verdict"
    [ "$verdict" = "differs" ] && python3 "$here/exportshape.py" "$work/$s.old1.json" "$work/$s.new1.json" | sed 's/^/    /'
    failed=$((failed + 1))
  fi
done
echo "scenarios: $(( ${#scenarios[@]} - failed )) same, $failed different"
[ "$failed" -eq 0 ]
