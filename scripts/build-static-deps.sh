#!/bin/bash
# The C libraries ddpjob links (libyaml, jansson, mbedTLS, libssh2, libcurl), built as static
# archives for musl, so that the ddpjob a cluster gets needs nothing of the cluster's own. The
# sources are Debian 12's, with Debian's patches (its security fixes among them), fetched by apt
# (which checks them against the archive's signed index) and unpacked by dpkg-source. TLS is
# mbedTLS: small, and static without a system configuration; libcurl is HTTP(S) only (webhooks).
# The result is cached by the recipe's checksum, so a second build is a lookup. For another
# architecture than this machine's (aarch64 on x86_64), the compiler is Debian's cross gcc with a
# musl built here from Debian's source; qemu-user, where it is, runs what CMake's checks build.
#   scripts/build-static-deps.sh [ARCH]   (ARCH as uname -m names it, default this machine's;
#                                          prints the prefix: include/, lib/, lib/pkgconfig/,
#                                          and musl/bin/musl-gcc for another architecture)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
say() { echo "build-static-deps: $*" >&2; }
arch=${1:-$(uname -m)}
case $arch in
    x86_64 | aarch64) ;;
    *) say "$arch: x86_64 or aarch64"; exit 2 ;;
esac
if [ "$arch" = "$(uname -m)" ]; then
    command -v musl-gcc >/dev/null || { say "no musl-gcc (apt-get install musl-tools)"; exit 1; }
else
    command -v "$arch-linux-gnu-gcc" >/dev/null ||
        { say "no $arch-linux-gnu-gcc for $arch (apt-get install gcc-$arch-linux-gnu)"; exit 1; }
fi
for tool in cmake dpkg-source apt-get; do
    command -v "$tool" >/dev/null || { say "no $tool"; exit 1; }
done
recipe=$(sha256sum "$here/build-static-deps.sh" | cut -c1-12)
cache=${DDPJOB_STATIC_DEPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ddpjob}
prefix=$cache/musl-deps-$arch-$recipe
if [ -f "$prefix/.complete" ]; then
    echo "$prefix"
    exit 0
fi
mkdir -p "$cache"
chmod 700 "$cache"
# One build at a time; the one that waited finds the other's.
exec 9>"$cache/.musl-deps.lock"
flock 9
if [ -f "$prefix/.complete" ]; then
    echo "$prefix"
    exit 0
fi
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Built in place (the .pc files name the prefix); complete only once .complete is there.
rm -rf "$prefix"
mkdir -p "$prefix"

# apt with a sources list of its own: the machine's configuration is left as it is.
apt_dir=$work/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$work/src"
printf 'deb-src http://deb.debian.org/debian bookworm main\n''deb-src http://deb.debian.org/debian-security bookworm-security main\n' >"$apt_dir/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o Debug::NoLocking=1
    -o APT::Sandbox::User=root -qq)
say "fetching Debian 12's sources"
apt-get "${apt_opts[@]}" update >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; exit 1; }
fetch_source() { # PACKAGE: Debian 12's newest version, Debian's patches applied; noted in SOURCES
    if (cd "$work/src" && apt-get "${apt_opts[@]}" source --download-only "$1") >>"$work/apt.log" 2>&1; then
        dpkg-source -x "$(ls "$work/src/$1"_*.dsc)" "$work/$1" >>"$work/apt.log" 2>&1 ||
            { tail -n 5 "$work/apt.log" >&2; exit 1; }
        basename "$(ls "$work/src/$1"_*.dsc)" >>"$work/SOURCES"
        return
    fi
    # A mirror may lack the newest version's .dsc but hold its other files, each checked by apt
    # against the archive's signed index as it came (libssh2's security update, here): the
    # release's source then, with the newest version's patches applied over it.
    (cd "$work/src" && apt-get "${apt_opts[@]}" source --download-only "$1/bookworm") >>"$work/apt.log" 2>&1 ||
        { tail -n 5 "$work/apt.log" >&2; exit 1; }
    local release newest
    release=$(ls "$work/src/$1"_*.dsc)
    newest=$(ls "$work/src/$1"_*.debian.tar.xz | sort -V | tail -n 1)
    dpkg-source -x --skip-patches "$release" "$work/$1" >>"$work/apt.log" 2>&1 ||
        { tail -n 5 "$work/apt.log" >&2; exit 1; }
    rm -rf "$work/$1/debian"
    tar -xJf "$newest" -C "$work/$1"
    (cd "$work/$1" && sed -e 's/#.*//' -e '/^[[:space:]]*$/d' debian/patches/series |
        while read -r patch _; do patch -p1 -s <"debian/patches/$patch" || exit 1; done) >>"$work/apt.log" 2>&1 ||
        { tail -n 5 "$work/apt.log" >&2; exit 1; }
    echo "$(basename "$release") with the patches of $(basename "$newest")" >>"$work/SOURCES"
}

# The compiler: Debian's musl-gcc, or for another architecture its cross gcc with a musl of its
# own (and musl's musl-gcc wrapper made for it).
cc=musl-gcc
cross=()
if [ "$arch" != "$(uname -m)" ]; then
    fetch_source musl
    say "building musl for $arch"
    (cd "$work/musl" && ./configure --target="$arch-linux-gnu" CROSS_COMPILE="$arch-linux-gnu-" \
        CC="$arch-linux-gnu-gcc" --prefix="$prefix/musl" --disable-shared && make -j "$(nproc)" &&
        make install) >"$work/musl.log" 2>&1 || { tail -n 30 "$work/musl.log" >&2; exit 1; }
    sh "$work/musl/tools/musl-gcc.specs.sh" "$prefix/musl/include" "$prefix/musl/lib" \
        "/lib/ld-musl-$arch.so.1" >"$prefix/musl/lib/musl-gcc.specs"
    cc=$prefix/musl/bin/musl-gcc
    mkdir -p "$prefix/musl/bin"
    printf '#!/bin/sh\nexec %s "$@" -specs "%s"\n' "$arch-linux-gnu-gcc" "$prefix/musl/lib/musl-gcc.specs" >"$cc"
    chmod 755 "$cc"
    cross=(-DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR="$arch"
        -DCMAKE_AR="$(command -v "$arch-linux-gnu-ar")" -DCMAKE_RANLIB="$(command -v "$arch-linux-gnu-ranlib")")
    ! command -v "qemu-$arch-static" >/dev/null ||
        cross+=(-DCMAKE_CROSSCOMPILING_EMULATOR="$(command -v "qemu-$arch-static")")
fi

cmake_build() { # PACKAGE CMAKE_ARGS...
    say "building $1"
    cmake -S "$work/$1" -B "$work/build-$1" -DCMAKE_C_COMPILER="$cc" "${cross[@]}" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_PREFIX_PATH="$prefix" \
        -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON "${@:2}" >"$work/$1.log" 2>&1 &&
        cmake --build "$work/build-$1" -j "$(nproc)" >>"$work/$1.log" 2>&1 &&
        cmake --install "$work/build-$1" >>"$work/$1.log" 2>&1 ||
        { tail -n 30 "$work/$1.log" >&2; exit 1; }
}

for package in libyaml jansson mbedtls libssh2 curl; do fetch_source "$package"; done
cmake_build libyaml -DBUILD_TESTING=OFF
cmake_build jansson -DJANSSON_BUILD_DOCS=OFF -DJANSSON_EXAMPLES=OFF -DJANSSON_WITHOUT_TESTS=ON
cmake_build mbedtls -DENABLE_TESTING=OFF -DENABLE_PROGRAMS=OFF -DUSE_SHARED_MBEDTLS_LIBRARY=OFF
cmake_build libssh2 -DCRYPTO_BACKEND=mbedTLS -DENABLE_ZLIB_COMPRESSION=OFF -DBUILD_EXAMPLES=OFF \
    -DBUILD_TESTING=OFF
# The CA bundle is the node's, found when a request is made (cli/view/webhook.c).
cmake_build curl -DCURL_USE_MBEDTLS=ON -DCURL_USE_OPENSSL=OFF -DHTTP_ONLY=ON -DCURL_DISABLE_LDAP=ON \
    -DCURL_USE_LIBSSH2=OFF -DCURL_USE_LIBPSL=OFF -DUSE_LIBIDN2=OFF -DUSE_NGHTTP2=OFF \
    -DCURL_ZLIB=OFF -DCURL_BROTLI=OFF -DCURL_ZSTD=OFF -DCURL_USE_GSSAPI=OFF -DENABLE_MANUAL=OFF \
    -DBUILD_CURL_EXE=OFF -DBUILD_TESTING=OFF -DCURL_CA_BUNDLE=none -DCURL_CA_PATH=none

# libyaml's CMake build leaves no pkg-config file; meson looks for one.
cat >"$prefix/lib/pkgconfig/yaml-0.1.pc" <<PC
prefix=$prefix
Name: LibYAML
Description: Library to parse and emit YAML
Version: 0.2.5
Libs: -L\${prefix}/lib -lyaml
Cflags: -I\${prefix}/include -DYAML_DECLARE_STATIC
PC
cp "$work/SOURCES" "$prefix/SOURCES"
touch "$prefix/.complete"
echo "$prefix"
