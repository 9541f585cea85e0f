# shellcheck shell=bash
# Sourced by flows.sh and luci/flows.sh: the flows' Debian BIRD. The caller
# sets BIRD_DIR (holding bird.conf), BIRD_SOCK, the STARTED array of the PIDs
# it ends, and die.

# Checks $BIRD_DIR/bird.conf with `bird -p`, starts BIRD on $BIRD_SOCK (its
# PID added to STARTED) and waits, 5 s at most, until it answers.
start_bird() {
	bird -p -c "$BIRD_DIR/bird.conf" || die "BIRD does not take $BIRD_DIR/bird.conf"
	bird -f -c "$BIRD_DIR/bird.conf" -s "$BIRD_SOCK" -P "$BIRD_DIR/bird.pid" >"$BIRD_DIR/bird.out" 2>&1 &
	STARTED+=("$!")
	local _
	for _ in $(seq 1 50); do
		birdc -s "$BIRD_SOCK" show status >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	die "BIRD did not start: $(cat "$BIRD_DIR/bird.out")"
}
