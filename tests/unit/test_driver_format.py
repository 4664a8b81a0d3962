"""trees/common/format.c, which every check's answer goes through: decimals two digits at a time and
JSON strings escaped a run of plain characters at a time must print exactly what printf and a
character-by-character escape print (issue 51 made both faster)."""
from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

HARNESS = r"""
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "format.h"
/* reads lines "u N" (print N) and "j HEX" (escape the bytes), writes one result line each */
int main(void)
{
	static char line[1 << 16];
	static unsigned char bytes[1 << 15];
	while (fgets(line, sizeof(line), stdin)) {
		if (line[0] == 'u') {
			char buf[32];
			*cc_u64(buf, strtoull(line + 2, NULL, 10)) = 0;
			puts(buf);
		} else {
			size_t n = 0;
			for (char *p = line + 2; p[0] && p[1] && p[0] != '\n'; p += 2) {
				unsigned v;
				sscanf(p, "%2x", &v);
				bytes[n++] = (unsigned char)v;
			}
			cc_print_json_text(stdout, "", (const char *)bytes, n);
			putchar('\n');
		}
	}
	return 0;
}
"""


def escaped(b: bytes) -> str:
    """The driver's escape of B, a byte at a time (up to a NUL)."""
    out = ['"']
    for c in b.split(b"\0")[0]:
        ch = chr(c)
        out.append("\\" + ch if ch in '"\\' else "\\n" if ch == "\n" else
                   f"\\u00{c:02x}" if c < 0x20 or c >= 0x7F else ch)
    return "".join(out) + '"'


@pytest.fixture(scope="module")
def harness(tmp_path_factory) -> Path:
    cc = shutil.which("clang-16") or shutil.which("clang") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("fmt")
    (d / "h.c").write_text(HARNESS)
    exe = d / "h"
    subprocess.run([cc, "-O2", "-I", str(ROOT / "trees/common"), "-I", str(ROOT / "instrument/include"),
                    "-include", str(ROOT / "instrument/include/crashcheck_own.h"), str(d / "h.c"),
                    str(ROOT / "trees/common/format.c"), "-o", str(exe)], check=True)
    return exe


def test_decimals_and_escapes_are_those_of_printf_and_a_byte_at_a_time(harness):
    rng = random.Random(51)
    nums = [0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 10**19, 2**64 - 1, 2**48 + 7]
    nums += [rng.randrange(2**rng.choice((8, 16, 32, 48, 64))) for _ in range(500)]
    texts = [b"", b"scan 1 2 3 4", b'"\\\n\t\x7f\xff', b"a" * 513 + b'"' + b"b" * 2000, b"ab\0cd"]
    alphabet = b'abc 0123456789"\\\n\x01\x7f\x80\xfe'
    texts += [bytes(rng.choice(alphabet) if rng.random() < 0.2 else rng.randrange(0x61, 0x7B)
                    for _ in range(rng.randrange(3000))) for _ in range(200)]
    stdin = "".join(f"u {n}\n" for n in nums) + "".join(f"j {t.hex()}\n" for t in texts)
    out = subprocess.run([str(harness)], input=stdin.encode(), capture_output=True, check=True).stdout
    lines = out.decode("latin-1").split("\n")[:-1]
    assert lines[:len(nums)] == [str(n) for n in nums]
    assert lines[len(nums):] == [escaped(t) for t in texts]
