#!/usr/bin/env python3
"""Writes the seed inputs in fuzz/seeds/<target>/.

Seeds give libFuzzer well-formed starting points: a RecordBatch needs a
correct CRC-32C before `validate` looks further, and a request needs a
plausible header and array counts before the decoders reach their inner
structs. Random mutation finds neither quickly on its own.

Layouts follow src/log/batch.rs and protocol/src/messages/*.rs; the
request_decoder input format (byte 0 picks an API row, byte 1 a version) is
described in fuzz_targets/request_decoder.rs. Run from anywhere:

    python3 fuzz/make_seeds.py
"""

import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

# --- CRC-32C (Castagnoli), as crc32c::crc32c computes it -------------------

_TABLE = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    _TABLE.append(c)


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


# --- varints ----------------------------------------------------------------


def uvarint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def varint(v: int) -> bytes:
    """Zig-zag varint of a 64-bit signed value."""
    return uvarint(((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF)


# --- RecordBatch v2 ---------------------------------------------------------


def record(i, key, value, headers=()):
    body = bytes([0]) + varint(i) + varint(i)
    body += varint(-1) if key is None else varint(len(key)) + key
    body += varint(-1) if value is None else varint(len(value)) + value
    body += varint(len(headers))
    for hk, hv in headers:
        body += varint(len(hk)) + hk + varint(len(hv)) + hv
    return varint(len(body)) + body


def batch(records, base_offset=0, attributes=0, producer_id=-1, epoch=-1, base_seq=-1,
          base_ts=1_700_000_000_000):
    recs = b"".join(record(i, *r) for i, r in enumerate(records))
    count = len(records)
    after_crc = struct.pack(
        ">hiqqqhii",
        attributes,
        max(count - 1, 0),
        base_ts,
        base_ts + max(count - 1, 0),
        producer_id,
        epoch,
        base_seq,
        count,
    ) + recs
    length = 4 + 1 + 4 + len(after_crc)  # leader epoch, magic, crc, rest
    return struct.pack(">qiib", base_offset, length, -1, 2) + struct.pack(
        ">I", crc32c(after_crc)) + after_crc


# --- request encoding -------------------------------------------------------

API_ROWS = [  # (key, min, max, first flexible), in SUPPORTED_APIS order
    (0, 3, 9, 9), (1, 4, 12, 12), (2, 1, 7, 6), (3, 0, 12, 9), (8, 2, 9, 8),
    (10, 0, 6, 3), (11, 0, 9, 6), (12, 0, 4, 4), (13, 0, 5, 4), (14, 0, 5, 4), (18, 0, 4, 3),
    (19, 2, 7, 5), (20, 1, 6, 4), (22, 0, 4, 2), (23, 2, 4, 4), (32, 1, 4, 4),
    (33, 0, 2, 2), (37, 0, 3, 2), (44, 0, 1, 1), (60, 0, 1, 0),
]


def string(s, flexible):
    b = s.encode()
    return (uvarint(len(b) + 1) if flexible else struct.pack(">h", len(b))) + b


def null_string(flexible):
    return uvarint(0) if flexible else struct.pack(">h", -1)


def array_len(n, flexible):
    return uvarint(n + 1) if flexible else struct.pack(">i", n)


def nbytes(b, flexible):
    return (uvarint(len(b) + 1) if flexible else struct.pack(">i", len(b))) + b


def tags(flexible):
    return uvarint(0) if flexible else b""


def request_seed(key, version, body):
    row = next(i for i, r in enumerate(API_ROWS) if r[0] == key)
    _, lo, _, flex_from = API_ROWS[row]
    header = struct.pack(">i", 7) + string("seed", False)
    if version >= flex_from or (key == 18 and version >= 3):
        header += uvarint(0)
    return bytes([row, version - lo]) + header + body


def produce(version, records):
    f = version >= 9
    part = struct.pack(">i", 0) + nbytes(records, f) + tags(f)
    topic = string("orders", f) + array_len(1, f) + part + tags(f)
    return (null_string(f) + struct.pack(">hi", -1, 30000) + array_len(1, f) + topic
            + tags(f))


def metadata(version):
    f = version >= 9
    topic = b""
    if version >= 10:
        topic += bytes(16)  # topic id
    topic += string("orders", f) + tags(f)
    body = array_len(1, f) + topic
    if version >= 4:
        body += b"\x01"  # allow_auto_topic_creation
    if 8 <= version <= 10:
        body += b"\x00"  # include_cluster_authorized_operations
    if version >= 8:
        body += b"\x00"  # include_topic_authorized_operations
    return body + tags(f)


def fetch(version):
    f = version >= 12
    body = struct.pack(">iiiib", -1, 500, 1, 1 << 20, 0)
    if version >= 7:
        body += struct.pack(">ii", 0, -1)
    part = struct.pack(">i", 0)
    if version >= 9:
        part += struct.pack(">i", -1)
    part += struct.pack(">q", 0)
    if version >= 12:
        part += struct.pack(">i", -1)
    if version >= 5:
        part += struct.pack(">q", -1)
    part += struct.pack(">i", 1 << 20) + tags(f)
    body += array_len(1, f) + string("orders", f) + array_len(1, f) + part + tags(f)
    if version >= 7:
        body += array_len(0, f)
    if version >= 11:
        body += string("", f)
    return body + tags(f)


def create_topics(version):
    f = version >= 5
    topic = (string("orders", f) + struct.pack(">ih", 3, 1) + array_len(0, f)
             + array_len(1, f) + string("cleanup.policy", f) + string("delete", f)
             + tags(f) + tags(f))
    return array_len(1, f) + topic + struct.pack(">i", 30000) + b"\x00" + tags(f)


def init_producer_id(version):
    f = version >= 2
    body = null_string(f) + struct.pack(">i", 60000)
    if version >= 3:
        body += struct.pack(">qh", -1, -1)
    return body + tags(f)


def find_coordinator(version):
    f = version >= 3
    body = b""
    if version <= 3:
        body += string("billing", f)
    if version >= 1:
        body += b"\x00"  # key_type: group
    if version >= 4:
        body += array_len(2, f) + string("billing", f) + string("audit", f)
    return body + tags(f)


def join_group(version):
    f = version >= 6
    body = string("billing", f) + struct.pack(">i", 45000)
    if version >= 1:
        body += struct.pack(">i", 300000)
    body += string("", f)  # member_id: first join
    if version >= 5:
        body += null_string(f)
    # A consumer subscription (v0: version, topics, user data) as metadata.
    subscription = struct.pack(">h", 0) + struct.pack(">i", 1) + string("orders", False) \
        + struct.pack(">i", -1)
    body += string("consumer", f) + array_len(2, f)
    body += string("range", f) + nbytes(subscription, f) + tags(f)
    body += string("cooperative-sticky", f) + nbytes(subscription, f) + tags(f)
    if version >= 8:
        body += null_string(f)
    return body + tags(f)


def sync_group(version):
    f = version >= 4
    body = string("billing", f) + struct.pack(">i", 1) + string("member-1", f)
    if version >= 3:
        body += null_string(f)
    if version >= 5:
        body += string("consumer", f) + string("range", f)
    assignment = struct.pack(">h", 0) + struct.pack(">i", 1) + string("orders", False) \
        + struct.pack(">iii", 2, 0, 1) + struct.pack(">i", -1)
    body += array_len(1, f) + string("member-1", f) + nbytes(assignment, f) + tags(f)
    return body + tags(f)


def heartbeat(version):
    f = version >= 4
    body = string("billing", f) + struct.pack(">i", 1) + string("member-1", f)
    if version >= 3:
        body += string("pod-1", f)
    return body + tags(f)


def leave_group(version):
    f = version >= 4
    body = string("billing", f)
    if version <= 2:
        return body + string("member-1", f) + tags(f)
    member = string("member-1", f) + null_string(f)
    if version >= 5:
        member += string("closing", f)
    return body + array_len(1, f) + member + tags(f) + tags(f)


def offset_commit(version):
    f = version >= 8
    body = string("billing", f) + struct.pack(">i", 1) + string("member-1", f)
    if version >= 7:
        body += null_string(f)
    if 2 <= version <= 4:
        body += struct.pack(">q", -1)
    part = struct.pack(">iq", 0, 42)
    if version >= 6:
        part += struct.pack(">i", 3)
    part += string("", f) + tags(f)
    body += array_len(1, f) + string("orders", f) + array_len(1, f) + part + tags(f)
    return body + tags(f)


# --- share_decoder (KIP-932; fuzz_targets/share_decoder.rs) ------------------

SHARE_ROWS = [  # (key, min version), in SHARE_GROUP_APIS order
    (76, 1), (77, 1), (78, 1), (79, 1), (83, 0), (84, 0),
    (85, 0), (86, 0), (87, 0), (90, 0), (91, 0), (92, 0),
]


def share_seed(key, version, body):
    """Byte 0 picks the row, byte 1 the version; then a header v2."""
    row = next(i for i, r in enumerate(SHARE_ROWS) if r[0] == key)
    header = struct.pack(">i", 7) + string("seed", False) + uvarint(0)
    return bytes([row, version - SHARE_ROWS[row][1]]) + header + body


TOPIC_ID = bytes(range(16))


def share_group_heartbeat():
    return (string("queue", True) + string("member-1", True) + struct.pack(">i", 0)
            + null_string(True) + array_len(1, True) + string("orders", True) + tags(True))


def ack_batch(first, last, types):
    return (struct.pack(">qq", first, last) + array_len(len(types), True)
            + bytes(types) + tags(True))


def share_fetch(version):
    body = (string("queue", True) + string("member-1", True)
            + struct.pack(">iiiiii", 1, 500, 1, 1 << 20, 500, 100))
    if version >= 2:
        body += bytes([1, 0])  # ShareAcquireMode record-limit, IsRenewAck false
    partition = (struct.pack(">i", 0) + array_len(2, True) + ack_batch(0, 2, [1, 2, 3])
                 + ack_batch(3, 9, [1]) + tags(True))
    body += array_len(1, True) + TOPIC_ID + array_len(1, True) + partition + tags(True)
    body += array_len(0, True) + tags(True)  # no forgotten topics
    return body


def share_acknowledge(version):
    body = string("queue", True) + string("member-1", True) + struct.pack(">i", 2)
    if version >= 2:
        body += bytes([1])  # IsRenewAck
    partition = struct.pack(">i", 0) + array_len(1, True) + ack_batch(0, 1, [4]) + tags(True)
    return body + array_len(1, True) + TOPIC_ID + array_len(1, True) + partition + tags(True) + tags(True)


def write_share_group_state(version):
    partition = struct.pack(">iiiq", 0, 1, 3, 10)
    if version >= 1:
        partition += struct.pack(">i", 2)
    partition += array_len(1, True) + struct.pack(">qqbh", 10, 12, 2, 1) + tags(True) + tags(True)
    return (string("queue", True) + array_len(1, True) + TOPIC_ID + array_len(1, True)
            + partition + tags(True) + tags(True))


def write(target, name, data):
    d = os.path.join(HERE, "seeds", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as fh:
        fh.write(data)


def main():
    one = batch([(b"key", b"value")])
    three = batch([(None, b"a" * 10), (b"k", None), (b"k2", b"v", [(b"h", b"x")])],
                  producer_id=1000, epoch=0, base_seq=0)
    write("record_batch", "one_record", one)
    write("record_batch", "three_records_idempotent", three)
    write("record_batch", "two_batches", one + batch([(b"k", b"v")] * 2, base_offset=1))
    write("record_batch", "log_append_time", batch([(None, b"v")], attributes=0x08))
    write("record_batch", "transactional_control",
          batch([(b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00")], attributes=0x30,
                producer_id=7, epoch=1, base_seq=0))
    write("record_batch", "gzip_flagged", batch([(None, b"v")], attributes=0x01))

    write("request_decoder", "produce_v8", request_seed(0, 8, produce(8, three)))
    write("request_decoder", "produce_v9", request_seed(0, 9, produce(9, one)))
    for v in (1, 9, 12):
        write("request_decoder", f"metadata_v{v}", request_seed(3, v, metadata(v)))
    for v in (4, 11, 12):
        write("request_decoder", f"fetch_v{v}", request_seed(1, v, fetch(v)))
    write("request_decoder", "api_versions_v3",
          request_seed(18, 3, string("kcat", True) + string("1.7", True) + tags(True)))
    for v in (4, 5):
        write("request_decoder", f"create_topics_v{v}", request_seed(19, v, create_topics(v)))
    for v in (1, 4):
        write("request_decoder", f"init_producer_id_v{v}",
              request_seed(22, v, init_producer_id(v)))
    for v in (0, 3, 4):
        write("request_decoder", f"find_coordinator_v{v}",
              request_seed(10, v, find_coordinator(v)))
    for v in (0, 5, 9):
        write("request_decoder", f"join_group_v{v}", request_seed(11, v, join_group(v)))
    for v in (1, 5):
        write("request_decoder", f"sync_group_v{v}", request_seed(14, v, sync_group(v)))
    write("request_decoder", "heartbeat_v4", request_seed(12, 4, heartbeat(4)))
    for v in (1, 5):
        write("request_decoder", f"leave_group_v{v}", request_seed(13, v, leave_group(v)))
    for v in (2, 7, 9):
        write("request_decoder", f"offset_commit_v{v}", request_seed(8, v, offset_commit(v)))

    write("share_decoder", "share_group_heartbeat_v1", share_seed(76, 1, share_group_heartbeat()))
    for v in (1, 2):
        write("share_decoder", f"share_fetch_v{v}", share_seed(78, v, share_fetch(v)))
        write("share_decoder", f"share_acknowledge_v{v}", share_seed(79, v, share_acknowledge(v)))
    for v in (0, 1):
        write("share_decoder", f"write_share_group_state_v{v}",
              share_seed(85, v, write_share_group_state(v)))


if __name__ == "__main__":
    main()
