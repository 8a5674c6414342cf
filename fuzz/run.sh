#!/usr/bin/env bash
# `make fuzz`: runs each cargo-fuzz target for FUZZ_SECONDS (default 600), one
# at a time, at low priority, seeded from fixtures/idoc, fixtures/bad and fixtures/edifact/real.
#
#   fuzz/run.sh                  all five targets
#   fuzz/run.sh idoc_xml key_path some of them
#   FUZZ_SECONDS=60 fuzz/run.sh  a short run
#
# Toolchain: cargo-fuzz needs nightly flags (-Zsanitizer=address). A nightly
# toolchain is used when rustup has one; otherwise the stable toolchain runs
# with RUSTC_BOOTSTRAP=1, which unlocks the same flags (see RELIABILITY.md).
# cargo-fuzz itself is installed from crates.io when missing.
# Corpora grow in fuzz/corpus/<target>, crashes land in fuzz/artifacts/<target>,
# logs in fuzz/logs/<target>.log (all git-ignored). Exits non-zero on a crash.
set -euo pipefail
cd "$(dirname "$0")"

SECS=${FUZZ_SECONDS:-600}
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(idoc_xml idoc_json key_path fingerprint edi)

log() { printf '[make fuzz] %s\n' "$*" >&2; }

if ! cargo fuzz --version >/dev/null 2>&1; then
    log "installing cargo-fuzz from crates.io"
    cargo install cargo-fuzz --locked
fi
TOOLCHAIN=()
if rustup run nightly rustc --version >/dev/null 2>&1; then
    TOOLCHAIN=(+nightly)
    log "toolchain: $(rustup run nightly rustc --version)"
else
    export RUSTC_BOOTSTRAP=1
    log "toolchain: $(rustc --version) with RUSTC_BOOTSTRAP=1"
fi

# Seeds: the IDoc fixtures and the hostile corpus. The fingerprint target reads
# its first byte as the Content-Type selector (0 XML, 1 JSON, 2 octet-stream, 3 none).
seed() {
    local target=$1 dir=seeds/$1 f
    rm -rf "$dir" && mkdir -p "$dir"
    case $target in
        idoc_xml) cp ../fixtures/idoc/*.xml ../fixtures/idoc/real/*.xml "$dir"/
                  for f in ../fixtures/bad/*; do case $f in *.py|*.json) ;; *) cp "$f" "$dir"/ ;; esac; done ;;
        idoc_json) cp ../fixtures/idoc/*.json "$dir"/
                   for f in ../fixtures/bad/*.json; do [ "${f##*/}" = manifest.json ] || cp "$f" "$dir"/; done ;;
        key_path) local i=0 p
                  while IFS= read -r p; do printf '%s' "$p" >"$dir/path-$i"; i=$((i + 1)); done <<'PATHS'
E1EDK01.BELNR
E1EDK02[QUALF=001].BELNR
E1EDP01.E1EDP19[QUALF='002'][IDTNR="MAT-100200"].KTEXT
EDI_DC40.@SEGMENT
$
$.order.id
$..BELNR
$.E1EDK02[?(@.QUALF=='001')].BELNR
$.order.lines[*].sku
$['E1EDK01']['BELNR']
$.order.lines[0:2:1]
$[?length(@.lines) > 1]
$..[?search(@, 'M')]
PATHS
                  ;;
        edi) for f in ../fixtures/edifact/real/*.edi ../fixtures/edifact/real/*.x12; do
                 { printf '\2'; cat "$f"; } >"$dir/s-${f##*/}"; done ;;
        fingerprint) for f in ../fixtures/idoc/*.xml ../fixtures/bad/xml-* ../fixtures/bad/inject-*.xml; do
                         { printf '\0'; cat "$f"; } >"$dir/x-${f##*/}"; done
                     for f in ../fixtures/idoc/*.json ../fixtures/bad/inject-*.json ../fixtures/bad/json-*; do
                         { printf '\1'; cat "$f"; } >"$dir/j-${f##*/}"; done
                     for f in ../fixtures/idoc/orders05-utf16.xml ../fixtures/idoc/orders05.json; do
                         { printf '\3'; cat "$f"; } >"$dir/n-${f##*/}"; done ;;
    esac
}

dict() {
    case $1 in
        idoc_xml) echo dict/xml.dict ;;
        idoc_json) echo dict/json.dict ;;
        key_path) echo dict/key_path.dict ;;
        fingerprint) echo dict/json.dict ;;
        edi) echo dict/edi.dict ;;
    esac
}

mkdir -p logs
status=0
for t in "${TARGETS[@]}"; do
    seed "$t"
    mkdir -p "corpus/$t" "artifacts/$t"
    log "$t: ${SECS}s (log: fuzz/logs/$t.log)"
    start=$(date +%s)
    set +e
    nice -n 10 cargo "${TOOLCHAIN[@]}" fuzz run "$t" "corpus/$t" "seeds/$t" -- \
        -max_total_time="$SECS" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
        -dict="$(dict "$t")" -print_final_stats=1 >"logs/$t.log" 2>&1
    rc=$?
    set -e
    end=$(date +%s)
    # A crash ends the run without final stats: the last status line counts then.
    execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "logs/$t.log" | grep -Eo '[0-9]+$' | tail -1 || true)
    last=$(grep -E '^#[0-9]+' "logs/$t.log" | tail -1 || true)
    log "$t: exit $rc after $((end - start))s, ${execs:-?} executions, corpus $(ls "corpus/$t" | wc -l) files, crashes $(ls "artifacts/$t" | wc -l)"
    log "$t: ${last:-no status line}"
    if [ $rc -ne 0 ]; then
        log "$t: CRASH, see fuzz/logs/$t.log; reproduce: cargo fuzz run $t $(grep -Eo 'artifacts/[^ ]*(crash|timeout|oom|leak)-[0-9a-f]+' "logs/$t.log" | tail -1 || true)"
    fi
    [ $rc -eq 0 ] || status=1
done
exit $status
