#!/bin/sh
# The feed's Makefiles, run by GNU make against a stub OpenWrt build tree
# (rules.mk, package.mk, rust-package.mk and luci.mk reduced to the
# variables and macros these Makefiles use, with OpenWrt's install modes):
# Build/Prepare copies the crate, Package/pathosd/install lays out the
# package, and the metadata follows the OpenWrt conventions. The real SDK
# build is manual (docs/openwrt.md). Prints "ok - NAME" / "not ok - NAME".

ROOT=$(cd "$(dirname "$0")/../.." && pwd -P)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/pathosd-feed.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT

# shellcheck source=tests/packaging/tap.sh
. "$ROOT/tests/packaging/tap.sh"
check() {
	name=$1
	shift
	if "$@"; then ok "$name"; else not_ok "$name" "failed: $*"; fi
}

# --- the stub build tree -------------------------------------------------

TOP="$TMP/sdk"
mkdir -p "$TOP/include" "$TOP/feeds/packages/lang/rust" "$TOP/feeds/luci" "$TOP/package/feeds" "$TOP/build_dir"
# Like `scripts/feeds install`: package/feeds/NAME/PKG -> feeds/NAME/PKG,
# and a src-link feed is itself a symlink to the repository's openwrt-feed.
ln -s "$ROOT/openwrt-feed" "$TOP/feeds/pathosd"
mkdir -p "$TOP/package/feeds/pathosd"
ln -s ../../../feeds/pathosd/pathosd "$TOP/package/feeds/pathosd/pathosd"
ln -s ../../../feeds/pathosd/luci-app-pathosd "$TOP/package/feeds/pathosd/luci-app-pathosd"

cat >"$TOP/rules.mk" <<'EOF'
INCLUDE_DIR:=$(TOPDIR)/include
BUILD_DIR:=$(TOPDIR)/build_dir
INSTALL_DIR:=install -d -m0755
INSTALL_BIN:=install -m0755
INSTALL_DATA:=install -m0644
INSTALL_CONF:=install -m0600
TARGET_LINKER?=bfd
EOF

cat >"$TOP/include/package.mk" <<'EOF'
PKG_BUILD_DIR?=$(BUILD_DIR)/$(PKG_NAME)-$(PKG_VERSION)
PKG_INSTALL_DIR?=$(PKG_BUILD_DIR)/ipkg-install

# BuildPackage: evaluates the package's definition, then offers targets;
# of a Makefile with variants, only for package $(PKG) (default PKG_NAME).
define BuildPackage
ifeq ($(1),$(or $(PKG),$(PKG_NAME)))
$$(eval $$(Package/$(1)))
.PHONY: prepare install meta conffiles compile
prepare:
	$$(Build/Prepare)
install:
	$$(call Package/$(1)/install,$$(DEST))
meta:
	@echo 'PKG_NAME=$(PKG_NAME)'
	@echo 'PKG_VERSION=$(PKG_VERSION)'
	@echo 'PKG_RELEASE=$(PKG_RELEASE)'
	@echo 'PKG_LICENSE=$(PKG_LICENSE)'
	@echo 'PKG_MAINTAINER=$(PKG_MAINTAINER)'
	@echo 'PKG_BUILD_DEPENDS=$(PKG_BUILD_DEPENDS)'
	@echo 'PKG_BUILD_PARALLEL=$(PKG_BUILD_PARALLEL)'
	@echo 'SECTION=$$(SECTION)'
	@echo 'CATEGORY=$$(CATEGORY)'
	@echo 'DEPENDS=$$(DEPENDS)'
	@echo 'VARIANT=$$(VARIANT)'
	@echo 'PROVIDES=$$(PROVIDES)'
	@echo 'CONFLICTS=$$(CONFLICTS)'
conffiles:
	@printf '%s\n' '$$(subst $$(newline),' ',$$(Package/$(1)/conffiles))'
compile:
	$$(Build/Compile)
endif
endef
define newline


endef
EOF

# rust-package.mk (with the part of rust-values.mk it includes that reaches
# cargo): Build/Compile/Cargo runs `cargo install` with CARGO_PKG_VARS in
# its environment, RUSTFLAGS among them, built from CARGO_RUSTFLAGS when the
# recipe runs; RustBinPackage: a default install to /usr/bin unless the
# package defines its own. `cargo` is tests' stub (below): it prints what
# it was given.
cat >"$TOP/feeds/packages/lang/rust/rust-package.mk" <<'EOF'
CARGO_RUSTFLAGS+=-Ctarget-feature=-crt-static
CARGO_PKG_CONFIG_VARS= \
	CARGO_PROFILE_RELEASE_PANIC=unwind \
	RUSTFLAGS="$(CARGO_RUSTFLAGS)"
CARGO_PKG_VARS= \
	$(CARGO_PKG_CONFIG_VARS) \
	MAKEFLAGS="$(PKG_JOBS)"
# $(2): more arguments to cargo install, as in the real one.
define Build/Compile/Cargo
	+$(CARGO_PKG_VARS) \
	cargo install --root $(PKG_INSTALL_DIR) \
		--path "$(PKG_BUILD_DIR)/$(if $(strip $(1)),$(strip $(1)),$(strip $(MAKE_PATH)))" \
		--locked $(2)
endef
Build/Compile=$(call Build/Compile/Cargo)
RUST_ARCH_DEPENDS:=@(aarch64||arm||i386||loongarch64||mips||mips64||mips64el||mipsel||powerpc||powerpc64||riscv64||x86_64)
define RustBinPackage
  ifndef Package/$(1)/install
    define Package/$(1)/install
	$$(INSTALL_DIR) $$(1)/usr/bin/
	$$(INSTALL_BIN) $$(PKG_INSTALL_DIR)/bin/* $$(1)/usr/bin/
    endef
  endif
endef
EOF

# The stub cargo: its arguments, RUSTFLAGS one word a line, and each linker
# script (-Wl,-T,FILE) that does not exist when cargo starts.
mkdir -p "$TMP/cargo-bin"
cat >"$TMP/cargo-bin/cargo" <<'EOF'
#!/bin/sh
echo "cargo $*"
for f in $RUSTFLAGS; do
	echo "RUSTFLAGS: $f"
	case $f in
		-Clink-arg=-Wl,-T,*) [ -f "${f#-Clink-arg=-Wl,-T,}" ] || echo "missing link script: ${f#-Clink-arg=-Wl,-T,}" ;;
	esac
done
EOF
chmod +x "$TMP/cargo-bin/cargo"

cat >"$TOP/feeds/luci/luci.mk" <<'EOF'
LUCI_NAME?=$(notdir ${CURDIR})
PKG_NAME?=$(LUCI_NAME)
.PHONY: meta
meta:
	@echo 'PKG_NAME=$(PKG_NAME)'
	@echo 'PKG_VERSION=$(PKG_VERSION)'
	@echo 'PKG_RELEASE=$(PKG_RELEASE)'
	@echo 'LUCI_DEPENDS=$(LUCI_DEPENDS)'
	@echo 'LUCI_PKGARCH=$(LUCI_PKGARCH)'
	@echo 'CURDIR=$(CURDIR)'
EOF

run_make() {
	dir=$1
	shift
	make --no-print-directory -C "$TOP/package/feeds/pathosd/$dir" TOPDIR="$TOP" "$@"
}

meta_of() { # DIR VAR
	run_make "$1" meta 2>/dev/null | sed -n "s/^$2=//p"
}

# --- versions ------------------------------------------------------------

CARGO_VERSION=$(sed -n 's/^version *= *"\([^"]*\)".*/\1/p' "$ROOT/Cargo.toml" | head -n 1)
PKG_VERSION=$(meta_of pathosd PKG_VERSION)
LUCI_VERSION=$(meta_of luci-app-pathosd PKG_VERSION)

if [ -n "$CARGO_VERSION" ] && [ "$PKG_VERSION" = "$CARGO_VERSION" ]; then
	ok "PKG_VERSION ($PKG_VERSION) equals Cargo.toml's version"
else
	not_ok "PKG_VERSION equals Cargo.toml's version" "PKG_VERSION=$PKG_VERSION Cargo.toml=$CARGO_VERSION"
fi
if [ "$LUCI_VERSION" = "$CARGO_VERSION" ]; then
	ok "luci-app-pathosd PKG_VERSION equals Cargo.toml's version"
else
	not_ok "luci-app-pathosd PKG_VERSION equals Cargo.toml's version" "luci=$LUCI_VERSION Cargo.toml=$CARGO_VERSION"
fi

# apk: <major>.<minor>.<fixup>[.<sub>...], no '-'; PKG_RELEASE an integer.
apk_valid() { echo "$1" | grep -E '^[0-9]+(\.[0-9]+)+$' >/dev/null; }
check "PKG_VERSION is apk-valid" apk_valid "$PKG_VERSION"
release=$(meta_of pathosd PKG_RELEASE)
check "PKG_RELEASE is an integer ($release)" test -n "$(echo "$release" | grep -E '^[0-9]+$')"

# --- metadata ------------------------------------------------------------

meta=$(run_make pathosd meta 2>&1)
want_line() { printf '%s\n' "$meta" | grep -Fx "$1" >/dev/null; }
check "DEPENDS is \$(RUST_ARCH_DEPENDS)" want_line 'DEPENDS=@(aarch64||arm||i386||loongarch64||mips||mips64||mips64el||mipsel||powerpc||powerpc64||riscv64||x86_64)'
check "PKG_BUILD_DEPENDS is rust/host" want_line 'PKG_BUILD_DEPENDS=rust/host'
check "PKG_BUILD_PARALLEL is 1" want_line 'PKG_BUILD_PARALLEL=1'
check "PKG_LICENSE is Cargo.toml's license" want_line "PKG_LICENSE=$(sed -n 's/^license *= *"\([^"]*\)".*/\1/p' "$ROOT/Cargo.toml")"
check "PKG_MAINTAINER is set" test -n "$(printf '%s\n' "$meta" | sed -n 's/^PKG_MAINTAINER=\(..*<..*@..*>\)$/\1/p')"
check "SECTION net" want_line 'SECTION=net'
check "CATEGORY Network" want_line 'CATEGORY=Network'
conffiles=$(run_make pathosd conffiles 2>&1)
check "conffiles is /etc/config/pathosd" test "$(printf '%s' "$conffiles" | tr -d '[:space:]')" = "/etc/config/pathosd"

# --- Build/Prepare -------------------------------------------------------

BUILD="$TMP/build/pathosd"
if out=$(run_make pathosd prepare PKG_BUILD_DIR="$BUILD" 2>&1); then
	ok "Build/Prepare runs (source found through the feed symlinks)"
else
	not_ok "Build/Prepare runs (source found through the feed symlinks)" "$out"
fi
check "Build/Prepare copied Cargo.lock" \
	cmp -s "$ROOT/Cargo.lock" "$BUILD/Cargo.lock"
check "Build/Prepare copied src/main.rs" test -f "$BUILD/src/main.rs"
check "Build/Prepare copied Cargo.toml" cmp -s "$ROOT/Cargo.toml" "$BUILD/Cargo.toml"
check "Build/Prepare copied the workspace crate pathosd-core" test -f "$BUILD/crates/pathosd-core/src/lib.rs"

# A developer's tree: build output and fuzzing data stay behind.
SRC="$TMP/devtree"
mkdir -p "$SRC/src" "$SRC/target/release" "$SRC/fuzz/target" "$SRC/fuzz/corpus" "$SRC/openwrt-feed" "$SRC/.git"
echo 'fn main() {}' >"$SRC/src/main.rs"
echo '[package]' >"$SRC/Cargo.toml"
: >"$SRC/Cargo.lock"
: >"$SRC/target/release/pathosd"
: >"$SRC/fuzz/Cargo.toml"
BUILD2="$TMP/build/devtree"
run_make pathosd prepare PKG_BUILD_DIR="$BUILD2" PATHOSD_SRC="$SRC" >/dev/null 2>&1
got=$(cd "$BUILD2" 2>/dev/null && find . | sort | tr '\n' ' ')
want='. ./Cargo.lock ./Cargo.toml ./fuzz ./fuzz/Cargo.toml ./src ./src/main.rs '
if [ "$got" = "$want" ]; then
	ok "Build/Prepare leaves out target/ (any depth), .git, the feed and fuzz/corpus"
else
	not_ok "Build/Prepare leaves out target/ (any depth), .git, the feed and fuzz/corpus" "got: $got" "want: $want"
fi

# --- Package/pathosd/install ---------------------------------------------

mkdir -p "$BUILD/ipkg-install/bin"
printf '#!/bin/sh\necho pathosd %s\n' "$CARGO_VERSION" >"$BUILD/ipkg-install/bin/pathosd"
chmod 0755 "$BUILD/ipkg-install/bin/pathosd"
DEST="$TMP/ipkg"
if out=$(run_make pathosd install PKG_BUILD_DIR="$BUILD" DEST="$DEST" 2>&1); then
	ok "Package/pathosd/install runs"
else
	not_ok "Package/pathosd/install runs" "$out"
fi

tree=$(cd "$DEST" && find . -type f -exec stat -c '%a %n' {} + | sort)
want_tree="600 ./etc/config/pathosd
644 ./usr/share/acl.d/pathosd.json
755 ./etc/init.d/pathosd
755 ./usr/libexec/rpcd/pathosd-staged
755 ./usr/sbin/pathosd"
if [ "$tree" = "$want_tree" ]; then
	ok "package files and modes: /usr/sbin/pathosd, init script, config, ubusd ACL (0644, as ubusd demands), rpcd plugin (0755, as rpcd demands)"
else
	not_ok "package files and modes" "got: $tree" "want: $want_tree"
fi
check "the hooks directory /etc/hotplug.d/pathosd (hooks_dir) is in the package, 0755" \
	test "$(stat -c %a "$DEST/etc/hotplug.d/pathosd" 2>/dev/null)" = 755
check "installed config is files/pathosd.config" cmp -s "$ROOT/files/pathosd.config" "$DEST/etc/config/pathosd"
check "installed init script is files/pathosd.init" cmp -s "$ROOT/files/pathosd.init" "$DEST/etc/init.d/pathosd"
check "installed rpcd plugin is files/pathosd-staged.rpcd" cmp -s "$ROOT/files/pathosd-staged.rpcd" "$DEST/usr/libexec/rpcd/pathosd-staged"

# --- the pathosd-nossl variant (pathosd without TLS) --------------------

nmeta=$(run_make pathosd meta PKG=pathosd-nossl 2>&1)
nwant() { printf '%s\n' "$nmeta" | grep -Fx "$1" >/dev/null; }
tls_variant() { want_line 'VARIANT=tls' && want_line 'PROVIDES=' && want_line 'CONFLICTS='; }
check "pathosd: VARIANT tls, no PROVIDES/CONFLICTS" tls_variant
check "pathosd-nossl: VARIANT nossl" nwant 'VARIANT=nossl'
check "pathosd-nossl: PROVIDES pathosd (luci-app-pathosd's dependency)" nwant 'PROVIDES=pathosd'
check "pathosd-nossl: CONFLICTS pathosd" nwant 'CONFLICTS=pathosd'
check "pathosd-nossl: same DEPENDS" nwant "$(printf '%s\n' "$meta" | grep '^DEPENDS=')"
check "pathosd-nossl: conffiles is /etc/config/pathosd" \
	test "$(run_make pathosd conffiles PKG=pathosd-nossl 2>&1 | tr -d '[:space:]')" = "/etc/config/pathosd"
DEST2="$TMP/ipkg-nossl"
run_make pathosd install PKG=pathosd-nossl PKG_BUILD_DIR="$BUILD" DEST="$DEST2" >/dev/null 2>&1
check "pathosd-nossl: the same files and modes as pathosd" \
	test "$(cd "$DEST2" 2>/dev/null && find . -type f -exec stat -c '%a %n' {} + | sort)" = "$want_tree"
check "pathosd-nossl: the hooks directory /etc/hotplug.d/pathosd too" test -d "$DEST2/etc/hotplug.d/pathosd"

# The SDK build links with scripts/hot-text.ld (the running daemon's code
# first and together, as scripts/cross-build.sh does), from the copy in
# PKG_BUILD_DIR, with v0 symbol names (the list's), keeping OpenWrt's own
# RUSTFLAGS; both variants.
compile_of() { # OUT-NAME [make args...]
	out=$1
	shift
	env PATH="$TMP/cargo-bin:$PATH" make --no-print-directory -C "$TOP/package/feeds/pathosd/pathosd" \
		TOPDIR="$TOP" PKG_BUILD_DIR="$BUILD" compile "$@" >"$TMP/$out" 2>&1
}
has() { grep -Fx -- "$2" "$TMP/$1" >/dev/null; }
lacks() { ! grep -F -- "$2" "$TMP/$1" >/dev/null; }
compile_of compile-tls
compile_of compile-nossl PKG=pathosd-nossl BUILD_VARIANT=nossl
check "pathosd builds with the default features (TLS)" \
	has compile-tls "cargo install --root $BUILD/ipkg-install --path $BUILD/ --locked"
check "pathosd-nossl builds with --no-default-features" \
	has compile-nossl "cargo install --root $BUILD/ipkg-install --path $BUILD/ --locked --no-default-features"
for v in tls nossl; do
	check "$v: linked with PKG_BUILD_DIR's scripts/hot-text.ld" \
		has "compile-$v" "RUSTFLAGS: -Clink-arg=-Wl,-T,$BUILD/scripts/hot-text.ld"
	check "$v: the link script is there when cargo runs (Build/Prepare copied it)" \
		lacks "compile-$v" "missing link script"
	check "$v: v0 symbol names, which scripts/hot-text.ld's patterns match" \
		has "compile-$v" "RUSTFLAGS: -Csymbol-mangling-version=v0"
	check "$v: OpenWrt's RUSTFLAGS kept (-Ctarget-feature=-crt-static)" \
		has "compile-$v" "RUSTFLAGS: -Ctarget-feature=-crt-static"
done
check "the link script in PKG_BUILD_DIR is scripts/hot-text.ld" cmp -s "$ROOT/scripts/hot-text.ld" "$BUILD/scripts/hot-text.ld"
# OpenWrt's TARGET_LINKER (rules.mk: bfd unless CONFIG_USE_MOLD): lld reads
# the script's INSERT BEFORE as GNU ld does; gold refuses the script and
# mold reads no SECTIONS, so with them the build links without it.
compile_of compile-lld TARGET_LINKER=lld
compile_of compile-mold TARGET_LINKER=mold
compile_of compile-gold TARGET_LINKER=gold
check "TARGET_LINKER=lld: linked with the script" \
	has compile-lld "RUSTFLAGS: -Clink-arg=-Wl,-T,$BUILD/scripts/hot-text.ld"
check "TARGET_LINKER=mold: linked without the script" lacks compile-mold "hot-text.ld"
check "TARGET_LINKER=gold: linked without the script" lacks compile-gold "hot-text.ld"
check "TARGET_LINKER=mold: still builds (cargo install runs)" \
	has compile-mold "cargo install --root $BUILD/ipkg-install --path $BUILD/ --locked"

# --- test.sh (OpenWrt CI's version check) --------------------------------

mkdir -p "$TMP/bin"
printf '#!/bin/sh\necho "pathosd %s"\n' "$CARGO_VERSION" >"$TMP/bin/pathosd"
chmod +x "$TMP/bin/pathosd"
if env PATH="$TMP/bin:$PATH" sh "$ROOT/openwrt-feed/pathosd/test.sh" pathosd "$PKG_VERSION" >/dev/null 2>&1; then
	ok "test.sh passes when pathosd --version prints PKG_VERSION"
else
	not_ok "test.sh passes when pathosd --version prints PKG_VERSION"
fi
printf '#!/bin/sh\necho "pathosd 0.0.0-wrong"\n' >"$TMP/bin/pathosd"
if env PATH="$TMP/bin:$PATH" sh "$ROOT/openwrt-feed/pathosd/test.sh" pathosd "$PKG_VERSION" >/dev/null 2>&1; then
	not_ok "test.sh fails when the version differs"
else
	ok "test.sh fails when the version differs"
fi

# --- luci-app-pathosd ----------------------------------------------------

lmeta=$(run_make luci-app-pathosd meta 2>&1)
lwant() { printf '%s\n' "$lmeta" | grep -Fx "$1" >/dev/null; }
check "luci-app-pathosd: package name survives the symlink (CURDIR is luci-app)" lwant 'PKG_NAME=luci-app-pathosd'
check "luci-app-pathosd: CURDIR is the repository's luci-app" lwant "CURDIR=$ROOT/luci-app"
check "luci-app-pathosd: LUCI_DEPENDS +luci-base +pathosd" lwant 'LUCI_DEPENDS=+luci-base +pathosd'

# --- feed layout ---------------------------------------------------------

# A src-git feed of the whole repository scans Makefiles from its root.
check "no Makefile at the repository root" test ! -e "$ROOT/Makefile"
check "feed name pathosd matches ^\\w+\$" test -d "$ROOT/openwrt-feed/pathosd"

[ "$failures" = 0 ]
