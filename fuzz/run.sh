#!/usr/bin/env bash
# Fuzzes every text parser and the Parquet readers for a bounded time (default 60 s per target, 4 targets): no crash, no
# hang (10 s per input), no more than 2 GiB. Needs cargo-fuzz (`cargo install cargo-fuzz`); the
# stable toolchain builds libFuzzer targets with RUSTC_BOOTSTRAP=1. A crash leaves its input in
# fuzz/artifacts/<target>/: add it as a regression test before fixing.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-60}"
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR="${FUZZ_TARGET_DIR:-$HOME/.cache/fairshare-fuzz-target}"
for target in tree_text config_text job_files parquet_files; do
    mkdir -p "corpus/$target"
    # A Parquet footer can declare a list of billions of booleans, which the Parquet crate's
    # metadata reader skips one by one (about 90 s for a 5 KB file; upstream, not ours): a hang is
    # therefore only one past 120 s for that target.
    timeout=10
    [ "$target" = parquet_files ] && timeout=120
    # New inputs go to the ignored corpus/; seeds/ is the small committed starting set.
    cargo fuzz run --sanitizer none --release "$target" "corpus/$target" "seeds/$target" -- \
        -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1
done
