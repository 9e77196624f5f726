#!/usr/bin/env python3
"""Seeds of the nfs4 fuzz target (fuzz/seeds/nfs4/): the NFSv4 COMPOUND bodies of the NFSv4.1
fixture captures' RDMA_MSG Sends, one per (direction, placement, 8-byte length class),
each prefixed with the target's selector byte (0x00 call, 0x80 reply; reduced with the chunks the
Send's transport header names: 0x02 call Read chunks, 0x83 reply Write chunks).
Input: the messages `rig trace extract` writes. Usage:
  rig trace extract fixtures/pcap/nfs41-linux-7.x.pcap /tmp/m && scripts/gen-nfs4-seeds.py /tmp/m fuzz/seeds/nfs4
"""
import os, struct, sys

src, out = sys.argv[1], sys.argv[2]

def words(b, i, n):
    return struct.unpack_from(">%dI" % n, b, i)

def chunk_lists(b):
    """Skip the RDMA_MSG chunk lists; return (offset after them, read chunks, write lengths)."""
    i, reads, writes = 16, [], []
    while words(b, i, 1)[0]:
        pos, _h, length = words(b, i + 4, 3)
        reads.append((pos, length)); i += 24
    i += 4
    while words(b, i, 1)[0]:
        n = words(b, i + 4, 1)[0]; i += 8
        writes.append(sum(words(b, i + 16 * k + 4, 1)[0] for k in range(n))); i += 16 * n
    i += 4
    if words(b, i, 1)[0]:
        i += 8 + 16 * words(b, i + 4, 1)[0]
    else:
        i += 4
    return i, reads, writes

def opaque_auth(b, i):
    return i + 8 + ((words(b, i + 4, 1)[0] + 3) & ~3)

seen = set()
for name in sorted(os.listdir(src)):
    if "nfs4-compound" not in name or "-msg-" not in name:
        continue
    b = open(os.path.join(src, name), "rb").read()
    i, reads, writes = chunk_lists(b)
    call = words(b, i + 4, 1)[0] == 0
    if call:
        i = opaque_auth(b, opaque_auth(b, i + 24))
    else:
        i = opaque_auth(b, i + 12) + 4
    body = b[i:]
    moved = [r for r in reads if r[0] != 0] if call else [w for w in writes if w]
    # One per direction, placement and 8-byte length class (the sequence ids differ in every one).
    key = (call, bool(moved), len(body) // 8)
    if key in seen:
        continue
    seen.add(key)
    if not moved:
        selector = bytes([0x00 if call else 0x80])
    elif call:
        # Mode 2: a count byte, then per chunk a position and a length (u32 each).
        selector = bytes([0x02, len(moved)]) + b"".join(struct.pack(">II", p, l) for p, l in moved)
    else:
        # Mode 3: a count byte, then per Write chunk the bytes it carried (u32).
        selector = bytes([0x83, len(moved)]) + b"".join(struct.pack(">I", l) for l in moved)
    stem = name.split("-")[0]
    with open(os.path.join(out, "%s-%s.bin" % (os.path.basename(src.rstrip("/")), stem)), "wb") as f:
        f.write(selector + body)
print(len(seen), "seeds")
