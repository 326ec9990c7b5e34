#!/usr/bin/env bash
# version_agree.sh - one version everywhere: project(VERSION) in
# CMakeLists.txt, MRTX_VERSION_STRING in include/mrtx.h, `mrtx --version`,
# the generated mrtx.pc and mrtxConfigVersion.cmake, and the shared
# library's file name (when it is built).
#
#   usage: version_agree.sh PROJECT_VERSION PATH/TO/mrtx PATH/TO/mrtx.h BUILD_DIR
set -uo pipefail
want=${1:?usage: version_agree.sh VERSION MRTX HEADER BUILD_DIR}
tool=$2 hdr=$3 build=$4
fail=0

check() { # what, value
	if [ "$2" == "$want" ]; then
		echo "ok   $1: $2"
	else
		echo "FAIL $1: '$2', want '$want'"
		fail=1
	fi
}

check "mrtx --version" "$("$tool" --version | sed -n 's/^mrtx //p')"
check "MRTX_VERSION_STRING" \
	"$(sed -n 's/^#define MRTX_VERSION_STRING "\(.*\)".*/\1/p' "$hdr")"
check "mrtx.pc Version" "$(sed -n 's/^Version: //p' "$build/mrtx.pc")"
check "mrtxConfigVersion.cmake" \
	"$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")/\1/p' "$build/mrtxConfigVersion.cmake")"
if [ -e "$build/libmrtx.so" ]; then
	so=$(readlink -f "$build/libmrtx.so")
	check "shared library file" "${so##*/libmrtx.so.}"
fi
exit $fail
