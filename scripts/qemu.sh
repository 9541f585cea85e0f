# shellcheck shell=bash
# Sourced by scripts/cross-build.sh and scripts/test-cross.sh: the qemu-user
# binary (Debian's qemu-user-static) that runs a target triple's binaries.
qemu_of() {
	case "$1" in
		mips-*) echo qemu-mips-static ;;
		mipsel-*) echo qemu-mipsel-static ;;
		armv7-*) echo qemu-arm-static ;;
		aarch64-*) echo qemu-aarch64-static ;;
		x86_64-*) echo qemu-x86_64-static ;;
		*) echo "unknown target $1" >&2; return 1 ;;
	esac
}
