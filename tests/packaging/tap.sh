# shellcheck shell=sh
# Sourced by the packaging tests (sh, busybox ash and bash alike): "ok - NAME"
# and "not ok - NAME" lines, the failures counted in $failures, which each
# test turns into its exit status at the end. TAP_PREFIX (empty by default)
# goes before every NAME (the qemu smoke test's target).

failures=0

ok() { echo "ok - ${TAP_PREFIX:-}$1"; }

# not_ok NAME [DETAIL...]: every line of each DETAIL printed as a "#" line,
# so that a quoted "ok - " in a detail is never counted as a result.
not_ok() {
	echo "not ok - ${TAP_PREFIX:-}$1"
	shift
	for tap_detail in "$@"; do printf '%s\n' "$tap_detail" | sed 's/^/#   /'; done
	failures=$((failures + 1))
}

# same NAME GOT WANT
same() {
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "got:" "$2" "want:" "$3"; fi
}
