# A real headless Chromium (Debian's chromium) for what a browser shows (source this file after
# tap.sh): the DOM it builds of a page, a screenshot, and whether a PNG is more than one colour.
# Run as root it needs --no-sandbox; its profile lives in the suite's $T.

browser() {
    timeout 120 chromium --headless --no-sandbox --disable-gpu --user-data-dir="$T/chromium" \
        --enable-logging=stderr --v=0 "$@" 2>>"$T/chromium.log"
}

# browser_dom HTML: the page's DOM after Chromium loaded it, on stdout.
browser_dom() { browser --dump-dom "file://$(realpath "$1")"; }

# browser_shot HTML PNG: a 1000x1000 screenshot of its top.
browser_shot() { browser --window-size=1000,1000 --screenshot="$2" "file://$(realpath "$1")" >/dev/null; }

# browser_errors: what Chromium said of the pages' scripts (uncaught errors, console errors).
browser_errors() { grep -E 'Uncaught|CONSOLE.*(error|Error)' "$T/chromium.log" 2>/dev/null; }

# expect_screenshot HTML PNG DESCRIPTION: Chromium's screenshot of the page is not blank (more
# than 20 colours).
expect_screenshot() {
    local colours
    browser_shot "$1" "$2"
    colours=$(png_colours "$2" 2>&1)
    if [ "${colours:-0}" -gt 20 ] 2>/dev/null; then pass "$3 ($colours colours)"; else fail "$3" "$colours"; fi
}

# png_colours PNG: how many colours its pixels have (Python's zlib; PNG filters undone).
png_colours() {
    python3 - "$1" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, colour = struct.unpack(">IIBB", body[:10])
        bpp = {2: 3, 6: 4}[colour]
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw, stride, prev, seen = zlib.decompress(idat), w * bpp, bytearray(w * bpp), set()
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    seen.update(bytes(line[i:i + 3]) for i in range(0, stride, bpp * 7))
    prev = line
print(len(seen))
PY
}
