#!/usr/bin/env python3
"""Locked instructions a turn, by function: `locked.py BIN SMALL.cg LARGE.cg N [TOP]`.

SMALL.cg and LARGE.cg are callgrind profiles of BIN (`--dump-instr=yes`) over two numbers of
turns N apart; every instruction of BIN that carries a `lock` prefix, or is an `xchg` with
memory (locked implicitly), is counted as often as it ran in LARGE minus SMALL, divided by N.
An uncontended locked instruction costs about 8 ns on the bench machine (a barrier as well),
against a fraction of a nanosecond for a plain one: callgrind counts both as one instruction,
so this is what its instruction counts do not show. Only BIN's own code is read (not libc's).
"""
import re, subprocess, sys, collections
binpath, small, large, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
top = int(sys.argv[5]) if len(sys.argv) > 5 else 60
# locked instruction addresses in the binary
locked = {}
cur = None
dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-C", binpath], capture_output=True, text=True).stdout
for line in dis.splitlines():
    m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
    if m: cur = m.group(1); continue
    m = re.match(r"^\s+([0-9a-f]+):\s+(.*)$", line)
    if m:
        ins = m.group(2)
        if ins.startswith("lock ") or re.match(r"xchg\s+%\w+,\(|xchg\s+\S*\(", ins):
            locked[int(m.group(1), 16)] = (cur, ins.split()[0] + " " + (ins.split()[1] if len(ins.split())>1 else ""))
def load(f):
    counts = collections.Counter()
    ob = None; obmain = False; addr = 0; skip = False
    obnames = {}
    for line in open(f):
        line = line.rstrip("\n")
        if line.startswith("ob="):
            m = re.match(r"ob=\((\d+)\)(?: (.*))?", line)
            if m.group(2): obnames[m.group(1)] = m.group(2)
            obmain = binpath in obnames.get(m.group(1), "")
            continue
        if line.startswith("cob="):
            m = re.match(r"cob=\((\d+)\)(?: (.*))?", line)
            if m.group(2): obnames[m.group(1)] = m.group(2)
            continue
        if line.startswith(("cfi=", "cfl=", "cfn=")): continue
        if line.startswith("calls="):
            skip = True
            parts = line.split()
            continue
        if line.startswith(("fn=", "fl=", "fi=", "fe=")): continue
        m = re.match(r"^(0x[0-9a-f]+|\+\d+|-\d+|\*)\s+\S+\s+(\d+)$", line)
        if not m: continue
        a = m.group(1)
        if a.startswith("0x"): addr = int(a, 16)
        elif a.startswith("+"): addr += int(a[1:])
        elif a.startswith("-"): addr -= int(a[1:])
        if skip:
            skip = False; continue
        if obmain and addr in locked:
            counts[addr] += int(m.group(2))
    return counts
a = load(small); b = load(large)
byfn = collections.Counter()
for addr in set(a) | set(b):
    d = (b[addr] - a[addr]) / n
    if d: byfn[locked[addr][0][:110] + "  [" + locked[addr][1] + "]"] += d
total = sum(byfn.values())
print(f"locked instructions per turn: {total:.1f}")
for k, v in byfn.most_common(top):
    if v >= 0.5: print(f"{v:6.1f} {k}")
