# bench/toolchain.sh -- sourced by the bench scripts that compile natively: sets CLANG and CLANGXX
# to the clang the pass was built for (the record make writes, build/toolchain.env; the harness
# reads the same, harness/target/toolchain.py), unless CRASHCHECK_CLANG / CRASHCHECK_CLANGXX say
# otherwise. The script sets ROOT (the repository) first.
_cc_record=${CRASHCHECK_BUILD:-$ROOT/build}/toolchain.env
CLANG=${CRASHCHECK_CLANG:-$(sed -n 's/^CLANG=//p' "$_cc_record" 2>/dev/null)}
CLANGXX=${CRASHCHECK_CLANGXX:-$(sed -n 's/^CLANGXX=//p' "$_cc_record" 2>/dev/null)}
# a build from before the record is clang-16's
CLANG=${CLANG:-clang-16}
CLANGXX=${CLANGXX:-clang++-16}
