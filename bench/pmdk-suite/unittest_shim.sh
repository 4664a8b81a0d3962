# bench/pmdk-suite/unittest_shim.sh -- stands in for PMDK's src/test/unittest/unittest.sh while
# bench/pmdk-suite/run reads a TEST script: it runs none of the TEST's steps, it writes down what
# the TEST asks for, one record a line in $PMDK_SUITE_OUT (a tag, then the words, each quoted with
# printf %q so that Python's shlex reads them back):
#   setup WORDS...               a set-up step (truncate, touch, pmempool, expect_normal_exit CMD)
#   env NAME=VALUE               a variable the TEST exported before its store log was made
#   writer POOL WORDS...         pmreorder_create_store_log: the pool and the traced command
#   expect success|failure DEFAULT_ENGINE EXTENDED CHECKER   pmreorder_expect_*: pmreorder's
#                                -r, -x and -p, and whether it must find the run consistent
#   unknown WORDS...             a command this shim does not know (reported, never run)
# The TEST's own shell code (its variables, common.sh's functions) runs as written.

: "${PMDK_SUITE_OUT:?PMDK_SUITE_OUT must name the record file}"
UNITTEST_NAME=$(basename "$(pwd)")/$(basename "$0")
UNITTEST_NUM=$(basename "$0" | sed 's/^TEST//')
EXESUFFIX=
PMEMPOOL=pmempool
PYTHON_EXE=python3
GREP=:
DIR=.

_pmdk_suite_env0=" $(compgen -e | tr '\n' ' ') "

_pmdk_suite_record() {
	local tag=$1
	shift
	{ printf '%s' "$tag"; printf ' %q' "$@"; printf '\n'; } >> "$PMDK_SUITE_OUT"
}

# the TEST's requirements, set-up and end: this bench builds and runs what they ask for itself
for _f in require_fs_type require_build_type require_test_type require_pmemcheck_version_ge \
	require_pmemcheck_version_lt require_pmreorder require_valgrind require_free_space \
	require_command require_binary require_node_libfabric check pass disable_exit_on_error \
	restore_exit_on_error; do
	eval "$_f() { :; }"
done

setup() { DIR=.; }

truncate() { _pmdk_suite_record setup truncate "$@"; }
touch() { _pmdk_suite_record setup touch "$@"; }
pmempool() { _pmdk_suite_record setup pmempool "$@"; }
expect_normal_exit() { _pmdk_suite_record setup "$@"; }

pmreorder_create_store_log() {
	local name
	for name in $(compgen -e); do
		case "$_pmdk_suite_env0" in
		*" $name "*) ;;
		*) _pmdk_suite_record env "$name=${!name}" ;;
		esac
	done
	_pmdk_suite_record writer "$1" $2
}

pmreorder_expect_success() { _pmdk_suite_record expect success "$1" "$2" "$3"; }
pmreorder_expect_failure() { _pmdk_suite_record expect failure "$1" "$2" "$3"; }

command_not_found_handle() { _pmdk_suite_record unknown "$@"; return 0; }
