# shellcheck shell=bash
# Sourced by the test runners (scripts/test-packaging.sh,
# scripts/test-cross.sh): "ok - NAME" / "not ok - NAME" lines, counted in
# $passed and $failed, which the runner sets to 0 and reports at the end.

ok() { echo "ok - $1"; passed=$((passed + 1)); }

# not_ok NAME [DETAIL...]: each DETAIL printed as a "#" line.
not_ok() {
	echo "not ok - $1"
	shift
	local l
	for l in "$@"; do printf '#   %s\n' "$l"; done
	failed=$((failed + 1))
}

# run_suite NAME CMD...: runs a test program that prints ok/not ok lines and
# counts them. A program that prints none, or fails without a "not ok", is
# one failure, and so is every "ok - ... # SKIP": a test that passes by not
# running is a defect.
run_suite() {
	local name=$1 out rc line n=0
	shift
	out=$("$@" 2>&1)
	rc=$?
	while IFS= read -r line; do
		case "$line" in
			"ok - "*"# SKIP"*) echo "not ${line% \# SKIP*} (skipped)"; failed=$((failed + 1)); n=$((n + 1)) ;;
			"ok - "*) echo "$line"; passed=$((passed + 1)); n=$((n + 1)) ;;
			"not ok - "*) echo "$line"; failed=$((failed + 1)); n=$((n + 1)) ;;
			"#"*) echo "$line" ;;
		esac
	done <<<"$out"
	if [ "$n" = 0 ] || { [ "$rc" != 0 ] && ! grep -q '^not ok - ' <<<"$out"; }; then
		not_ok "$name ran (exit $rc, $n results)"
		printf '%s\n' "$out" | tail -n 30 | sed 's/^/#   /'
	fi
}
