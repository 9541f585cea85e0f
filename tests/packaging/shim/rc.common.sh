# Appended to an init script before shellcheck reads it (line numbers stay
# those of the script): what /etc/rc.common and procd.sh do around it, in
# terms shellcheck can see.

# rc.common reads these to order and select the service.
: "$START" "$STOP" "$USE_PROCD"
# uci_load_validate declares and sets each validated option with eval.
enabled=''
export enabled
