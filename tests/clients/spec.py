"""The test data every client produces, and the line format every client
prints when it consumes. tests/broker/clients.rs checks the consumed lines against
the same rules (keep `expected_*` there, here and in
java/ClientCheck.java identical).

Record `seq` (0-based) of the run for codec `codec`:
  key      key-<seq % 37>                    (37 keys: spread over partitions)
  value    <codec>:<seq as 6 digits>:<"pinlog-" repeated 4 + seq % 16 times>
           (compressible, of varying length)
  headers  codec=<codec>, seq=<seq>, dup=a, dup=b
           (a repeated header name: order and duplicates must survive)

Consumed line, tab-separated, one per record, in consumption order:
  topic  partition  offset  key  value  headers
where headers is name=value pairs joined with ',' (kcat's %h format).
"""

import sys
import time

KEYS = 37


def key(seq):
    return "key-%d" % (seq % KEYS)


def value(codec, seq):
    return "%s:%06d:%s" % (codec, seq, "pinlog-" * (4 + seq % 16))


def headers(codec, seq):
    return [("codec", codec), ("seq", str(seq)), ("dup", "a"), ("dup", "b")]


def line(topic, partition, offset, k, v, hdrs):
    """One consumed record; bytes are decoded as UTF-8."""

    def text(b):
        if b is None:
            return "<null>"
        return b.decode("utf-8", "replace") if isinstance(b, bytes) else str(b)

    h = ",".join("%s=%s" % (text(n), text(hv)) for n, hv in (hdrs or []))
    return "\t".join([topic, str(partition), str(offset), text(k), text(v), h])


class Deadline:
    """A time limit for a whole script step, so no client call waits forever."""

    def __init__(self, seconds):
        self.end = time.monotonic() + seconds

    def left(self):
        return max(0.0, self.end - time.monotonic())

    def expired(self):
        return time.monotonic() >= self.end


def die(msg):
    print("ERROR: " + msg, file=sys.stderr, flush=True)
    sys.exit(1)
