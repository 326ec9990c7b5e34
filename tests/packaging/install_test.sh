#!/usr/bin/env bash
# install_test.sh - install mrtx into a temporary prefix and build a small
# consumer program against it four ways:
#
#   1 pkg-config, shared     cc app.c $(pkg-config --cflags --libs mrtx)
#   2 pkg-config, static     the archive, with pkg-config --static --libs mrtx
#   3 find_package, shared   target_link_libraries(app mrtx::mrtx)
#   4 find_package, static   target_link_libraries(app mrtx::mrtx_static)
#
# Each program opens a store in a fresh directory, creates two tables,
# commits one transaction over three rows in both, reads them back in a new
# transaction and exits 0 only if everything is there.  Also checked: what
# each program links (libmrtx.so.0.2 or nothing), that the installed archive
# holds no LTO sections, that the versions of the .pc file, the CMake
# package, the header and `mrtx --version` agree, and that the man pages and
# the bash completion are installed.
#
#   usage: install_test.sh [BUILD_DIR]
#     BUILD_DIR given: install that (already built) build tree (ctest does)
#     otherwise: configure and build a fresh Release tree first (.ci/run)
#
# A tree configured with -DBUILD_SHARED_LIBS=ON (shared only) or OFF (the
# archive only) is tested the ways that apply: then mrtx::mrtx and a plain
# `pkg-config --libs` link whichever library is installed.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/mrtx-install.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
CC=${CC:-cc}

if [ $# -ge 1 ]; then
	BUILD=$(cd "$1" && pwd)
else
	BUILD=$TMP/build
	echo "== configure and build (Release, no tests) in $BUILD"
	# prefix /usr at configure time: the multiarch libdir (lib/<triplet>)
	cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DMRTX_TESTS=OFF \
		-DCMAKE_INSTALL_PREFIX=/usr >/dev/null
	if ! cmake --build "$BUILD" -j"${JOBS:-2}" >"$TMP/build.log" 2>&1; then
		tail -40 "$TMP/build.log"
		echo "FAIL build"
		exit 1
	fi
fi
PREFIX=$TMP/prefix
cmake --install "$BUILD" --prefix "$PREFIX" >/dev/null
pc=$(find "$PREFIX" -name mrtx.pc)
[ -n "$pc" ] || { echo "FAIL no mrtx.pc installed"; exit 1; }
LIBDIR=$(dirname "$(dirname "$pc")")
echo "== installed into $PREFIX (libdir ${LIBDIR#"$PREFIX"/})"

# ------------------------------------------------------------ what is there
HAVE_A=0
HAVE_SO=0
[ -e "$LIBDIR/libmrtx.a" ] && HAVE_A=1
[ -e "$LIBDIR/libmrtx.so" ] && HAVE_SO=1
libs=()
[ $HAVE_A = 1 ] && libs+=("$LIBDIR/libmrtx.a")
[ $HAVE_SO = 1 ] && libs+=("$LIBDIR/libmrtx.so.0.2")
[ $HAVE_A = 1 ] || [ $HAVE_SO = 1 ] || bad "neither libmrtx.a nor libmrtx.so installed"
for f in "${libs[@]}" \
	"$LIBDIR/cmake/mrtx/mrtxConfig.cmake" "$LIBDIR/cmake/mrtx/mrtxConfigVersion.cmake" \
	"$PREFIX/include/mrtx.h" "$PREFIX/bin/mrtx" "$PREFIX/share/man/man1/mrtx.1" \
	"$PREFIX/share/man/man3/mrtx.3" "$PREFIX/share/bash-completion/completions/mrtx"; do
	[ -e "$f" ] && ok "installed ${f#"$PREFIX"/}" || bad "missing ${f#"$PREFIX"/}"
done
if [ $HAVE_SO = 1 ]; then
	soname=$(readelf -d "$LIBDIR/libmrtx.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
	[ "$soname" == libmrtx.so.0.2 ] && ok "SONAME $soname" || bad "SONAME '$soname'"
fi
if [ $HAVE_A = 1 ]; then
	if objdump -h "$LIBDIR/libmrtx.a" | grep -q '\.gnu\.lto_'; then
		bad "the installed archive carries LTO (GIMPLE) sections"
	else
		ok "the installed archive is plain object code ($(ar t "$LIBDIR/libmrtx.a" | wc -l) members)"
	fi
	# and linking it with plain gcc never starts the LTO machinery
	if command -v strace >/dev/null && command -v gcc >/dev/null; then
		echo 'int main(void) { return 0; }' >"$TMP/probe.c"
		if strace -f -e trace=execve -o "$TMP/strace.log" gcc -o "$TMP/probe" \
			"$TMP/probe.c" -Wl,--whole-archive "$LIBDIR/libmrtx.a" -Wl,--no-whole-archive \
			-Wl,--unresolved-symbols=ignore-all >/dev/null 2>&1; then
			grep -q 'execve(".*lto-wrapper' "$TMP/strace.log" &&
				bad "linking the archive ran lto-wrapper" ||
				ok "linking the archive with plain gcc runs no lto-wrapper"
		else
			bad "probe link of the archive failed"
		fi
	fi
fi

# ------------------------------------------------------------ versions
export PKG_CONFIG_PATH=$LIBDIR/pkgconfig
ver=$("$PREFIX/bin/mrtx" --version | sed -n 's/^mrtx //p')
hdr=$(sed -n 's/^#define MRTX_VERSION_STRING "\(.*\)".*/\1/p' "$PREFIX/include/mrtx.h")
pcv=$(pkg-config --modversion mrtx)
[ -n "$ver" ] && [ "$ver" == "$hdr" ] && [ "$ver" == "$pcv" ] &&
	ok "versions agree: mrtx --version, mrtx.h, mrtx.pc: $ver" ||
	bad "versions: mrtx --version '$ver', mrtx.h '$hdr', mrtx.pc '$pcv'"

# ------------------------------------------------------------ the consumer
mkdir "$TMP/app"
cat >"$TMP/app/app.c" <<'APP'
/* A user of the installed library: one multi-row, two-table transaction. */
#include <stdio.h>
#include <string.h>

#include <mrtx.h>

static int transfer(mrtx_txn *txn, void *payload)
{
	int rc;

	(void)payload;
	if ((rc = mrtx_put(txn, "acct", MRTX_CSTR("alice"), "bal", MRTX_CSTR("v"),
	                   MRTX_CSTR("90"))) ||
	    (rc = mrtx_put(txn, "acct", MRTX_CSTR("bob"), "bal", MRTX_CSTR("v"),
	                   MRTX_CSTR("110"))))
		return rc;
	return mrtx_put(txn, "ledger", MRTX_CSTR("t1"), "log", MRTX_CSTR("x"),
	                MRTX_CSTR("alice->bob 10"));
}

static int is(mrtx_txn *txn, const char *table, const char *row, const char *fam,
              const char *want)
{
	mrtx_bytes v;

	return mrtx_get(txn, table, MRTX_CSTR(row), fam, MRTX_CSTR(strcmp(fam, "log") ? "v" : "x"),
	                &v) == MRTX_OK &&
	       v.size == strlen(want) && memcmp(v.data, want, v.size) == 0;
}

int main(int argc, char **argv)
{
	const char *fams[] = { "bal", "log" };
	mrtx_db *db;
	mrtx_txn *txn;
	int rc, good;

	if (argc != 2)
		return 2;
	if ((rc = mrtx_open(&db, argv[1], NULL)) ||
	    (rc = mrtx_create_table(db, "acct", fams, 2)) ||
	    (rc = mrtx_create_table(db, "ledger", fams, 2)) ||
	    (rc = mrtx_run(db, transfer, NULL, 10))) {
		fprintf(stderr, "app: %s: %s\n", mrtx_strerror(rc), mrtx_errmsg());
		return 1;
	}
	if ((rc = mrtx_begin(db, &txn))) {
		fprintf(stderr, "app: begin: %s\n", mrtx_strerror(rc));
		return 1;
	}
	good = is(txn, "acct", "alice", "bal", "90") && is(txn, "acct", "bob", "bal", "110") &&
	       is(txn, "ledger", "t1", "log", "alice->bob 10");
	mrtx_abort(txn);
	mrtx_close(db);
	if (!good)
		return 1;
	printf("ok %s\n", MRTX_VERSION_STRING);
	return 0;
}
APP

run_app() { # name, binary, expect_libmrtx_so (1/0)
	local name=$1 bin=$2 want_so=$3 out needs
	needs=$(readelf -d "$bin" | grep -c 'NEEDED.*libmrtx\.so' || true)
	if [ "$want_so" == 1 ] && [ "$needs" -ne 1 ]; then
		bad "$name: does not link libmrtx.so"
	elif [ "$want_so" == 0 ] && [ "$needs" -ne 0 ]; then
		bad "$name: links libmrtx.so, wanted the archive"
	fi
	if out=$("$bin" "$TMP/store-$name") && [ "$out" == "ok $ver" ]; then
		ok "$name: transaction committed and read back ($out)"
	else
		bad "$name: exit $?, output '$out'"
	fi
}

# 1 pkg-config, shared (rpath, as a prefix outside the loader's path needs);
# with the archive only, the same command links it (and needs --static)
# shellcheck disable=SC2046
if [ $HAVE_SO = 0 ]; then
	if $CC -std=c11 -Wall -Werror -o "$TMP/app/pc-only-a" "$TMP/app/app.c" \
		$(pkg-config --cflags --static --libs mrtx); then
		run_app pkgconfig-archive-only "$TMP/app/pc-only-a" 0
	else
		bad "pkgconfig (archive only): link failed"
	fi
elif $CC -std=c11 -Wall -Werror -o "$TMP/app/pc-shared" "$TMP/app/app.c" \
	$(pkg-config --cflags --libs mrtx) -Wl,-rpath,"$LIBDIR"; then
	run_app pkgconfig-shared "$TMP/app/pc-shared" 1
else
	bad "pkgconfig-shared: link failed"
fi

# 2 pkg-config --static, the archive: with both installed, -lmrtx would pick
# the .so, so ask the linker for the archive around -lmrtx only
if [ $HAVE_A = 1 ] && [ $HAVE_SO = 1 ]; then
	static_libs=$(pkg-config --static --libs mrtx |
		sed 's/\(^\| \)-lmrtx\( \|$\)/ -Wl,-Bstatic -lmrtx -Wl,-Bdynamic /')
	# shellcheck disable=SC2046,SC2086
	if $CC -std=c11 -Wall -Werror -o "$TMP/app/pc-static" "$TMP/app/app.c" \
		$(pkg-config --cflags mrtx) $static_libs 2>"$TMP/link.err"; then
		run_app pkgconfig-static "$TMP/app/pc-static" 0
	else
		cat "$TMP/link.err"
		bad "pkgconfig-static: link failed"
	fi
	# plain -lmrtx without the private libs fails, the .pc's --static list
	# links
	if $CC -o "$TMP/app/naive" "$TMP/app/app.c" -I"$PREFIX/include" "$LIBDIR/libmrtx.a" \
		2>/dev/null; then
		bad "the archive linked without its dependencies (is it really static?)"
	else
		ok "the archive alone needs the --static dependencies (as expected)"
	fi
fi

# 3 and 4 find_package
cat >"$TMP/app/CMakeLists.txt" <<'CML'
cmake_minimum_required(VERSION 3.18)
project(mrtx_consumer C)
find_package(mrtx 0.2 REQUIRED)
add_executable(cm-default app.c)
target_link_libraries(cm-default PRIVATE mrtx::mrtx)
if(TARGET mrtx::mrtx_static)
  add_executable(cm-static app.c)
  target_link_libraries(cm-static PRIVATE mrtx::mrtx_static)
endif()
file(WRITE ${CMAKE_BINARY_DIR}/found-version "${mrtx_VERSION}")
CML
if cmake -S "$TMP/app" -B "$TMP/app/build" -DCMAKE_PREFIX_PATH="$PREFIX" \
	-DCMAKE_BUILD_TYPE=Release >"$TMP/cm.log" 2>&1 &&
	cmake --build "$TMP/app/build" -j"${JOBS:-2}" >>"$TMP/cm.log" 2>&1; then
	fv=$(cat "$TMP/app/build/found-version")
	[ "$fv" == "$ver" ] && ok "find_package version $fv" || bad "find_package version '$fv'"
	run_app "cmake-mrtx::mrtx" "$TMP/app/build/cm-default" $HAVE_SO
	if [ $HAVE_A = 1 ]; then
		run_app cmake-mrtx::mrtx_static "$TMP/app/build/cm-static" 0
	elif [ -e "$TMP/app/build/cm-static" ]; then
		bad "mrtx::mrtx_static exists without an installed archive"
	fi
else
	cat "$TMP/cm.log"
	bad "find_package consumer: configure or build failed"
fi
# a version the package does not satisfy is refused
cat >"$TMP/app/CMakeLists.txt" <<'CML'
cmake_minimum_required(VERSION 3.18)
project(mrtx_consumer C)
find_package(mrtx 9.9 REQUIRED)
CML
if cmake -S "$TMP/app" -B "$TMP/app/build2" -DCMAKE_PREFIX_PATH="$PREFIX" >/dev/null 2>&1; then
	bad "find_package(mrtx 9.9) succeeded"
else
	ok "find_package(mrtx 9.9) refused"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
