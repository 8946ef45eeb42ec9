#!/usr/bin/env bash
# The peers' workload side by side (see src/main.rs): builds the bench in release, runs the
# three kits alternately in one invocation, then counts each row's instructions per turn with
# callgrind as the difference of two runs (1,100 and 100 turns) divided by 1,000, so set-up and
# start-up cancel out.
#
#   benches/peers/run.sh            # both: side by side, then instructions
#   benches/peers/run.sh time       # side by side only (PEERS_ROUNDS, PEERS_TURNS)
#   benches/peers/run.sh count      # instructions only (needs valgrind)
#   benches/peers/run.sh locked     # locked instructions a turn, by function (valgrind, objdump)
#
# Each mode runs every row twice over: with one `block_on` a turn, then with a sample's turns in
# one `block_on` as criterion's async bencher runs them (`PEERS_ENTRY=each-turn` or `once` picks
# one; see src/main.rs).
set -euo pipefail
cd "$(dirname "$0")"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build --release --locked
BIN="$CARGO_TARGET_DIR/release/adk-peers-bench"
what="${1:-all}"
entries="${PEERS_ENTRY:-each-turn once}"

if [ "$what" = all ] || [ "$what" = time ]; then
    for entry in $entries; do
        PEERS_ENTRY="$entry" "$BIN"
        echo
    done
fi

if [ "$what" = all ] || [ "$what" = count ]; then
    if ! command -v valgrind >/dev/null; then
        echo "valgrind is not installed: instruction counts NOT measured" >&2
        exit 1
    fi
    count() { # row iterations -> total instructions
        PEERS_ENTRY="$entry" PEERS_ROW="$1" PEERS_ITERATIONS="$2" valgrind --tool=callgrind \
            --callgrind-out-file=/dev/null "$BIN" 2>&1 |
            sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
    }
    for entry in $entries; do
        echo
        echo "instructions per turn ((1,100 turns - 100 turns) / 1,000, callgrind, PEERS_ENTRY=$entry):"
        PEERS_ROW=list "$BIN" | while read -r row; do
            large=$(count "$row" 1100)
            small=$(count "$row" 100)
            echo "  $row: $(( (large - small) / 1000 ))"
        done
    done
fi

if [ "$what" = locked ]; then
    if ! command -v valgrind >/dev/null || ! command -v objdump >/dev/null; then
        echo "valgrind or objdump is not installed: locked instructions NOT measured" >&2
        exit 1
    fi
    profile() { # row iterations file
        PEERS_ENTRY="${PEERS_ENTRY:-each-turn}" PEERS_ROW="$1" PEERS_ITERATIONS="$2" valgrind --tool=callgrind --dump-instr=yes \
            --callgrind-out-file="$3" "$BIN" >/dev/null 2>&1
    }
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    PEERS_ROW=list "$BIN" | while read -r row; do
        profile "$row" 100 "$work/small.cg"
        profile "$row" 1100 "$work/large.cg"
        echo "== $row"
        python3 locked.py "$BIN" "$work/small.cg" "$work/large.cg" 1000 "${LOCKED_ROWS:-12}"
    done
fi
