# shellcheck shell=bash
# Sourced by the BIRD shell tests (bird_recipe_test.sh, qemu_bgp_smoke.sh).

# wait_for SECS REGEX CMD...: polls CMD until its output matches (or, with a
# leading !, stops matching) the extended REGEX, for at most SECS seconds.
# On a timeout the last output is left in $TMP/last.out.
wait_for() {
	local secs=$1 regex=$2 out neg=0
	shift 2
	case "$regex" in '!'*) neg=1; regex=${regex#!} ;; esac
	local deadline=$((SECONDS + secs))
	while [ "$SECONDS" -lt "$deadline" ]; do
		out=$("$@")
		if grep -Eq "$regex" <<<"$out"; then
			[ "$neg" = 0 ] && return 0
		else
			[ "$neg" = 1 ] && return 0
		fi
		sleep 0.2
	done
	printf '%s\n' "$out" >"$TMP/last.out"
	return 1
}
