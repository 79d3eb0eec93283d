#!/usr/bin/env python3
"""A reference reading of Journal/FORMAT.md and Journal/SNAPSHOTS.md, written from them alone.

    journal-reader.py DIR            one line per record: sequence, time, event (as `rewind log`)
    journal-reader.py DIR --jsonl    one JSON object per record (the shape of golden/*/log.jsonl)
    journal-reader.py DIR --contents every record's bytes (the shape of golden/v1/contents.json)
    journal-reader.py DIR --verify   checks every checksum, framing rule, the index, the manifest
                                     and the snapshots; exits 1 naming the first problem's place

It is a second implementation of the on-disk format, kept independent of Sources/ so that it shows
where the documents fall short (`make format-check` runs it on Journal/golden). It needs only
Python 3 and the system's liblz4.so.1 (through ctypes, for LZ4 blocks); CRC-32C and xxHash32 are
written out below. It reads with `JournalLimits.largest`, as the `rewind` tool does. Section names
in comments are FORMAT.md's unless they say SNAPSHOTS.md. A snapshot's state is checked against its
digest and for the canonical encoding, and its last record's digest (format 2) against the record
the journal holds; its fingerprint and the state itself need the model's code. Records are read up
to the first damage: a snapshot past it is `beyondJournal` here, where Rewind, which reads on past
damage where it can, may check it and give another verdict.
Not covered: telling stray files apart (FORMAT.md, "Opening and recovery", step 6: this reader
reports any file named like a segment that is out of place as a sequence break), and rereading a
batch a live writer may be storing (it reads each file once). Every mode checks the index as a
witness of records gone ("Reading ...", step 7). Exit status as `rewind verify`'s: 1 for a problem
(0 with notes only), 2 for bad arguments, 3 when there is no journal to read; 4 when this reader
itself fails (an uncaught exception, with its traceback), so that a fault of its own never passes
for a finding.
"""

import ctypes
import hashlib
import json
import os
import re
import stat
import struct
import sys
import traceback
from datetime import datetime, timezone

# --- Checksums -------------------------------------------------------------------------------

_CRC_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc32c(data):
    """CRC-32C (Castagnoli): reflected 0x82F63B78, initial and final XOR 0xFFFFFFFF."""
    crc, table = 0xFFFFFFFF, _CRC_TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M = 0xFFFFFFFF


def _rotl(x, r):
    return ((x << r) | (x >> (32 - r))) & _M


def xxh32(data, seed=0):
    """xxHash32, as the LZ4 frame format uses it for its header, block and content checksums."""
    n, i = len(data), 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M, (seed + _P2) & _M, seed, (seed - _P1) & _M]
        for lanes in struct.iter_unpack("<4I", data[: n - n % 16]):
            v = [_rotl((a + x * _P2) & _M, 13) * _P1 & _M for a, x in zip(v, lanes)]
        i = n - n % 16
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M
    else:
        h = (seed + _P5) & _M
    h = (h + n) & _M
    while i + 4 <= n:
        h = _rotl((h + struct.unpack_from("<I", data, i)[0] * _P3) & _M, 17) * _P4 & _M
        i += 4
    while i < n:
        h = _rotl((h + data[i] * _P5) & _M, 11) * _P1 & _M
        i += 1
    h = ((h ^ (h >> 15)) * _P2) & _M
    h = ((h ^ (h >> 13)) * _P3) & _M
    return h ^ (h >> 16)


assert crc32c(b"123456789") == 0xE3069283 and xxh32(b"") == 0x02CC5D05

# --- Errors ----------------------------------------------------------------------------------


class Damage(Exception):
    """Damage or a refusal, located: 'FILE at byte N (sequences ...): what'."""

    def __init__(self, where, offset, what, torn=False):
        super().__init__(f"{where} at byte {offset}: {what}")
        self.offset, self.torn = offset, torn  # torn: a kind a write in progress can leave


# --- LZ4 frames ("Data frame") ---------------------------------------------------------------

_lz4 = ctypes.CDLL("liblz4.so.1")
_lz4.LZ4_decompress_safe_usingDict.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                               ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
_BLOCK_MAX = {4: 1 << 16, 5: 1 << 18, 6: 1 << 20, 7: 1 << 22}


def lz4_frame_decode(frame, expected_length, check_xxh):
    """Decodes one whole LZ4 frame into exactly expected_length bytes, or raises ValueError."""
    if len(frame) < 7 or struct.unpack_from("<I", frame)[0] != 0x184D2204:
        raise ValueError("not an LZ4 frame")
    flg, bd = frame[4], frame[5]
    if flg >> 6 != 1 or flg & 0x02 or bd & 0x8F or (bd >> 4) & 7 not in _BLOCK_MAX:
        raise ValueError(f"unsupported LZ4 frame descriptor FLG {flg:#04x} BD {bd:#04x}")
    pos = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)  # content size, dictionary id
    if pos + 1 > len(frame):
        raise ValueError("LZ4 frame cut short")
    # A content size of 0 means "unknown" (liblz4's reading of the frame format): not checked.
    size = struct.unpack_from("<Q", frame, 6)[0] if flg & 0x08 else 0
    if size and size != expected_length:
        raise ValueError(f"LZ4 content size {size}, the header says {expected_length}")
    # A dictionary id is skipped, as liblz4 does when given no dictionary: a block that refers to
    # one does not decode (LZ4_decompress_safe refuses a match before its output's start).
    if (xxh32(frame[4:pos]) >> 8) & 0xFF != frame[pos]:  # always, as liblz4 checks it
        raise ValueError("LZ4 frame header checksum")
    pos += 1
    independent, block_max = flg & 0x20, _BLOCK_MAX[(bd >> 4) & 7]
    out = bytearray()
    while True:
        if pos + 4 > len(frame):
            raise ValueError("LZ4 frame cut short")
        (word,) = struct.unpack_from("<I", frame, pos)
        pos += 4
        if word == 0:
            break
        raw, size = word >> 31, word & 0x7FFFFFFF
        if size > block_max or pos + size + (4 if flg & 0x10 else 0) > len(frame):
            raise ValueError(f"LZ4 block of {size} bytes at {pos - 4}")
        block = frame[pos:pos + size]
        pos += size
        if flg & 0x10:
            # A compressed block's checksum is checked by every read (liblz4 does, whatever it is
            # told); a raw block's only when asked, as the content checksum.
            if (check_xxh or not raw) and xxh32(block) != struct.unpack_from("<I", frame, pos)[0]:
                raise ValueError(f"LZ4 block checksum at {pos}")
            pos += 4
        if raw:
            out += block
        else:
            room = min(block_max, expected_length - len(out))
            dst = ctypes.create_string_buffer(max(room, 1))
            history = b"" if independent else bytes(out[-65536:])
            n = _lz4.LZ4_decompress_safe_usingDict(bytes(block), dst, size, room, history,
                                                   len(history))
            if n < 0:
                raise ValueError(f"LZ4 block does not decode (or decodes past the content length)")
            out += dst.raw[:n]
        if len(out) > expected_length:
            raise ValueError("LZ4 frame decodes to more than the header's content length")
    if flg & 0x04:
        if pos + 4 > len(frame):
            raise ValueError("LZ4 frame cut short")
        if check_xxh and xxh32(bytes(out)) != struct.unpack_from("<I", frame, pos)[0]:
            raise ValueError("LZ4 content checksum")
        pos += 4
    if pos != len(frame):
        raise ValueError(f"LZ4 frame ends at {pos} of its {len(frame)} bytes")
    if len(out) != expected_length:
        raise ValueError(f"LZ4 frame decodes to {len(out)} bytes, the header says "
                         f"{expected_length}")
    return bytes(out)


# --- Segments ("Segment header frame", "Batch header frame", "Data frame", "Limits") ---------

SEGMENT_HEADER, BATCH_HEADER = 44, 52
MAX_CONTENT = 0x7E000000  # JournalLimits.largest, as the rewind tool reads
MAX_FRAME = MAX_CONTENT + MAX_CONTENT // 128 + 4096
MAX_PAYLOAD = MAX_CONTENT - 20


def check_segment_header(data, name, journal_id, first):
    if len(data) < SEGMENT_HEADER:
        raise Damage(name, 0, "segment header cut short", torn=True)
    magic, size, tag, version, _flags = struct.unpack_from("<IIIHH", data)
    if (magic, size, tag) != (0x184D2A50, 36, 0x444E5752):
        raise Damage(name, 0, "not a segment header (magic, payload size or tag)")
    if crc32c(data[8:40]) != struct.unpack_from("<I", data, 40)[0]:
        raise Damage(name, 0, "segment header checksum")
    if version != 1:
        raise Damage(name, 0, f"segment format {version} is not supported")
    if data[16:32] != journal_id:
        raise Damage(name, 0, f"segment of another journal ({data[16:32].hex()})")
    if struct.unpack_from("<Q", data, 32)[0] != first:
        raise Damage(name, 0, "segment header's first sequence is not its name's")


def batch_header(data, pos, name):
    """Parses the batch header at pos, or raises Damage (torn=True for the kinds a tear leaves)."""
    if pos + BATCH_HEADER > len(data):
        raise Damage(name, pos, "batch header cut short", torn=True)
    magic, size, first, count, content, flen, lo, hi, fcrc, hcrc = \
        struct.unpack_from("<IIQIIIqqII", data, pos)
    if (magic, size) != (0x184D2A51, 44):
        raise Damage(name, pos, "no batch header here (magic or payload size)", torn=True)
    if crc32c(data[pos + 8:pos + 48]) != hcrc:
        raise Damage(name, pos, "batch header checksum", torn=True)
    span = f"(sequences {first}-{first + count - 1})"
    if (count == 0 or first == 0 or first + count > 2**64 - 1 or content < 20 * count or lo > hi
            or content > 0x7E000000 or flen > 2130448384 or content > 255 * flen + 4096):
        raise Damage(name, pos, f"implausible batch header {span}")
    if content > MAX_CONTENT or flen > MAX_FRAME:
        raise Damage(name, pos, f"limitExceeded: batch declares {content}/{flen} bytes {span}")
    return dict(first=first, count=count, content=content, flen=flen, lo=lo, hi=hi, fcrc=fcrc)


def read_frame(data, pos, name, expect_first, check_xxh):
    """Reads the batch at pos: (header, [(seq, ts, payload)], end). Raises Damage."""
    h = batch_header(data, pos, name)
    span = f"(sequences {h['first']}-{h['first'] + h['count'] - 1})"
    if expect_first is not None and h["first"] != expect_first:
        raise Damage(name, pos, f"sequence break: expected {expect_first} {span}")
    start, end = pos + BATCH_HEADER, pos + BATCH_HEADER + h["flen"]
    if end > len(data):
        raise Damage(name, pos, f"data frame cut short {span}", torn=True)
    frame = data[start:end]
    if crc32c(frame) != h["fcrc"]:
        raise Damage(name, pos, f"data frame checksum {span}", torn=True)
    try:
        content = lz4_frame_decode(frame, h["content"], check_xxh)
    except ValueError as e:
        raise Damage(name, pos, f"{e} {span}")
    records, at = [], 0
    for i in range(h["count"]):
        if at + 20 > len(content):
            raise Damage(name, pos, f"record {i} overruns the content {span}")
        seq, ts, n = struct.unpack_from("<QqI", content, at)
        if seq != h["first"] + i or not h["lo"] <= ts <= h["hi"] or n > MAX_PAYLOAD \
                or at + 20 + n > len(content):
            raise Damage(name, pos, f"record {i} breaks the framing (sequence {seq}) {span}")
        records.append((seq, ts, content[at + 20:at + 20 + n]))
        at += 20 + n
    if at != len(content):
        raise Damage(name, pos, f"records leave {len(content) - at} bytes of content {span}")
    return h, records, end


def valid_header_after(data, pos, name):
    """Whether a whole batch header (right magic, size and checksum, plausible) follows the
    damaged batch at pos: from the end of its declared extent when its own header is whole (its
    frame's bytes are its content, whatever they hold; past the end of the file, nothing
    follows), from pos + 1 when it is not."""
    try:
        h = batch_header(data, pos, name)
        start = pos + BATCH_HEADER + h["flen"]
    except Damage:
        start = pos + 1
    i = data.find(b"\x51\x2a\x4d\x18", start)
    while i >= 0:
        try:
            batch_header(data, i, name)
            return True
        except Damage:
            i = data.find(b"\x51\x2a\x4d\x18", i + 1)
    return False


# --- The journal ("Reading the format from another language") --------------------------------


def read_file(folder, name, limit=-1):
    """The bytes of a journal's file (at most limit of them), opened as Rewind opens its files ("The
    directory"): never through a symbolic link (O_NOFOLLOW: ELOOP), without waiting for a FIFO's
    writer (O_NONBLOCK), and refused unless it is a regular file."""
    fd = os.open(os.path.join(folder, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                    else "a socket" if stat.S_ISSOCK(mode) else "a device")
            raise Damage(name, 0, f"{kind}, not a regular file (EINVAL)")
        with open(fd, "rb", closefd=False) as f:
            return f.read(limit)
    finally:
        os.close(fd)


def _first_key_wins(pairs):
    obj = {}
    for key, v in pairs:
        obj.setdefault(key, v)
    return obj


def _not_json(constant):
    raise ValueError(f"{constant} is not JSON")


def manifest_id(data):
    """The journal id of manifest.json's bytes, read as Rewind reads them (JSONDecoder into an Int
    and a String): its first 64 KiB, a byte order mark allowed (and UTF-16), the first of equal
    keys; a format that is an integral number (1.0 and 1e0 are 1; true and "1" are not), then 1."""
    refused = Damage("manifest.json", 0, "not a manifest (JSON with a format and a journalID)")
    data = data[:64 << 10]
    try:
        m = json.loads(data.decode(json.detect_encoding(data), "replace"),
                       object_pairs_hook=_first_key_wins, parse_constant=_not_json)
    except (ValueError, RecursionError):
        raise refused
    fmt, jid = (m.get("format"), m.get("journalID")) if isinstance(m, dict) else (None, None)
    if isinstance(fmt, float) and fmt.is_integer():
        fmt = int(fmt)
    if type(fmt) is not int or not -2**63 <= fmt < 2**63 or not isinstance(jid, str) \
            or not re.fullmatch(r"[0-9a-fA-F]{32}", jid):
        raise refused
    if fmt != 1:
        raise Damage("manifest.json", 0, f"journal format {fmt} is not supported")
    return bytes.fromhex(jid)


class Journal:
    def __init__(self, path, check_xxh=False):
        self.path, self.check_xxh = path, check_xxh
        self.problems, self.notes = [], []
        self.id = manifest_id(read_file(path, "manifest.json", 64 << 10))
        self.segments, self.sizes = self.list_segments(), {}
        for _, name in self.segments:  # a link or FIFO named as one refuses the journal, as Rewind
            read_file(path, name, 0)
        self.record_digests = {}  # seq -> its digest (SNAPSHOTS.md), for the snapshots named so
        self.index = None
        self.index_note = "index: missing (derived data; the next writer rebuilds it)"
        try:  # before the segments: a live writer's entries name only batches written before them
            self.index = read_file(path, "index")
        except FileNotFoundError:
            pass
        except (OSError, Damage) as e:  # derived data: a link or a FIFO there is ignored, noted
            self.index_note = f"{e} (index unused)"

    def list_segments(self):
        # 20 digits naming a number of at most 2^64 - 1; any other name is not a segment.
        names = [n for n in os.listdir(self.path)
                 if re.fullmatch(r"[0-9]{20}\.lz4", n) and int(n[:20]) < 1 << 64]
        return sorted((int(n[:20]), n) for n in names)

    def records(self):
        """Yields (seq, ts, payload) of every record; problems go to self.problems."""
        expected = 1
        self.ends, self.batches = {}, {}  # segment first -> end of its records; (first, pos) -> h
        self.last_seq, self.max_ts, self.declared = 0, -2**63, 0
        self.tail = None  # where the last segment ends as steps 5 and 6 define it; None: damage
        named = {int(n[:20]) for n, _ in self.snapshot_files()}
        for k, (first, name) in enumerate(self.segments):
            last = k == len(self.segments) - 1
            data = read_file(self.path, name)
            self.sizes[first] = len(data)
            if first != expected:
                self.problems.append(f"{name} at byte 0: sequence break: expected a segment "
                                     f"starting at {expected}")
                return
            try:
                check_segment_header(data, name, self.id, first)
            except Damage as e:
                self.problems.append(str(e))
                return
            pos = SEGMENT_HEADER
            while pos < len(data):
                if last and not any(data[pos:]):
                    self.notes.append(f"{name} at byte {pos}: {len(data) - pos} preallocated "
                                      "zero bytes (the end of the journal)")
                    break
                try:
                    h, recs, end = read_frame(data, pos, name, expected, self.check_xxh)
                except Damage as e:
                    if last and e.torn and not valid_header_after(data, pos, name):
                        self.notes.append(f"unfinished tail: {e} (a frame not written yet)")
                        try:  # a header whose checksum holds declares what the tail held
                            h = batch_header(data, pos, name)
                            self.declared = h["first"] + h["count"] - 1
                        except Damage:
                            pass
                        self.tail = pos
                    elif not last and e.torn and e.offset == pos and not any(data[pos:]):
                        self.problems.append(f"{name} at byte {pos}: zeros to the end of a "
                                             f"sealed segment (sequences from {expected})")
                    else:
                        self.problems.append(str(e) + ("" if last or not e.torn else
                                                       " in a sealed segment"))
                    self.ends[first] = pos
                    return
                self.batches[(first, pos)] = (h, self.max_ts)
                self.max_ts = max(self.max_ts, h["hi"])
                for seq, ts, payload in recs:
                    if seq in named:  # SNAPSHOTS.md, "Snapshot files": the last record's digest
                        self.record_digests[seq] = hashlib.sha256(
                            struct.pack("<Qq", seq, ts) + payload).digest()
                    yield seq, ts, payload
                expected, pos = h["first"] + h["count"], end
                self.last_seq = expected - 1
            self.ends[first] = pos
            if last:
                self.tail = pos

    # --- The sparse index ------------------------------------------------------------------

    def load_index(self):
        """Returns the well-formed entries [(offset, entry)] and the valid prefix's length."""
        data, self.named = self.index, set()  # segments an entry whose checksum holds names
        if data is None:
            self.notes.append(self.index_note)
            return [], 0
        want = struct.pack("<IHH16sI", 0x58495752, 1, 0, self.id, 0)
        want += struct.pack("<I", crc32c(want))  # the one header this journal's id gives
        if data[:32] != want:
            self.notes.append("index at byte 0: header is not this journal's (index unused)")
            return [], 0
        entries, prev, stopped = [], None, False
        for pos in range(32, len(data) - 39, 40):
            seq, seg, off, ts, zero, crc = struct.unpack_from("<QQQqII", data, pos)
            if crc == crc32c(data[pos:pos + 36]):  # for "unindexed", also after a damaged entry
                self.named.add(seg)
            if stopped:
                continue
            if crc != crc32c(data[pos:pos + 36]):
                self.notes.append(f"index at byte {pos}: entry checksum (entries stop here)")
                stopped = True
            elif prev and not (seq > prev[0] and (seg, off) > (prev[1], prev[2])):
                self.notes.append(f"index at byte {pos}: entry out of order (entries stop here)")
                stopped = True
            else:
                if zero:
                    self.notes.append(f"index at byte {pos}: bytes 32-35 are not 0")
                entries.append((pos, (seq, seg, off, ts)))
                prev = (seq, seg, off)
        pos = len(data) - (len(data) - 32) % 40
        if len(data) > pos:
            self.notes.append(f"index at byte {pos}: a partial entry ends the file")
        present = dict(self.segments)
        valid, prev_ts = 0, -2**63
        for _, (seq, seg, off, ts) in entries:
            size = self.sizes.get(seg)
            if seg not in present or size is None or off < 44 or off > size - 52 or seq < seg \
                    or ts < prev_ts:
                break
            valid, prev_ts = valid + 1, ts
        return entries, valid

    def check_index(self, entries):
        """The index as a check of the batches it names, and as a witness of what is gone."""
        disagree, firstbad, witnessed = 0, None, {}
        present = dict(self.segments)
        last = self.segments[-1][0] if self.segments else 0
        for pos, (seq, seg, off, ts) in entries:
            # Step 7: only where the walk ended as steps 5 and 6 define an end, not at damage.
            if seg not in present or (seg == last and self.tail is not None and off >= self.tail):
                witnessed[seg] = seq  # the last batch the index names there
            elif seg in self.ends and off < self.ends[seg]:  # walked: check it against the batch
                got = self.batches.get((seg, off))
                if got is None or got[0]["first"] != seq or got[1] != ts:
                    disagree += 1
                    firstbad = firstbad if firstbad is not None else pos
        if disagree:
            self.notes.append(f"index at byte {firstbad}: {disagree} entries disagree with the "
                              "batches they name")
        relisted = dict(self.list_segments())  # a live writer may have made a segment since
        for seg, through in sorted(witnessed.items()):
            if seg not in present and seg in relisted:
                self.notes.append(f"{relisted[seg]}: created after this reading began")
                continue
            if seg in present:
                self.problems.append(f"{present[seg]} at byte {self.tail}: committed records "
                                     f"gone: from {self.last_seq + 1} at least through "
                                     f"{max(through, self.declared, self.last_seq + 1)} "
                                     "(the index names a batch at or after where it ends)")
                continue
            after = [f for f in present if f > seg]
            if after:  # named exactly: missingBeforeIntactSegments
                span = f"{seg}-{after[0] - 1}, before intact segments"
            else:
                span = f"from {seg} at least through {through}"
                if self.tail is not None and last not in witnessed and self.last_seq + 1 < seg:
                    self.problems.append(f"{present[last]} at byte {self.tail}: committed "
                                         f"records gone: {self.last_seq + 1}-{seg - 1} (the "
                                         f"index names a later segment, {seg:020d}.lz4)")
            self.problems.append(f"{seg:020d}.lz4 at byte 0: missing, but the index names it: "
                                 f"committed records gone (sequences {span})")
        for first, name in self.segments:
            if entries and first not in self.named and self.ends.get(first, 0) > SEGMENT_HEADER:
                self.notes.append(f"{name}: unindexed (no index entry names it)")

    # --- Snapshot files (SNAPSHOTS.md, "Snapshot files") -----------------------------------

    def snapshot_files(self):
        """(name, path) of each file named as a snapshot, in name order."""
        folder = os.path.join(self.path, "snapshots")
        if not os.path.isdir(folder) or os.path.islink(folder):
            return []
        return [(n, os.path.join(folder, n)) for n in sorted(os.listdir(folder))
                if re.fullmatch(r"[0-9]{20}\.snapshot", n)]

    def snapshots(self):
        found = []
        for name, p in self.snapshot_files():
            if int(name[:20]) > self.last_seq:  # by the name alone, before the file is read
                found.append((name, "beyondJournal"))
                continue
            if os.path.islink(p) or not os.path.isfile(p) or os.path.getsize(p) > 1 << 30:
                found.append((name, "unreadable"))
                continue
            with open(p, "rb") as f:
                data = f.read()
            version = struct.unpack_from("<I", data, 8)[0] if len(data) >= 12 else None
            head = 108 if version == 1 else 140  # format 1 has no last record's digest
            if data[:8] != b"RWSNAP\r\n" or len(data) < 112:
                verdict = "corrupt"
            elif version not in (1, 2):
                verdict = "unknownFormat"
            elif len(data) < head + 4:
                verdict = "corrupt"
            else:  # the checks in SNAPSHOTS.md's order
                seq, jid, fp, digest = struct.unpack_from("<Q16s32s32s", data, 12)
                record = data[100:132] if version == 2 else None
                (n,) = struct.unpack_from("<Q", data, head - 8)
                (stored,) = struct.unpack_from("<I", data, len(data) - 4)
                state = data[head:head + n]
                if head + n + 4 != len(data) or crc32c(data[:-4]) != stored:
                    verdict = "corrupt"
                elif seq != int(name[:20]) or jid != self.id:
                    verdict = "corrupt" if seq != int(name[:20]) else "foreign"
                elif record is not None and seq == 0 and any(record):
                    verdict = "corrupt"
                elif (record is not None and seq > 0 and seq in self.record_digests
                      and self.record_digests[seq] != record):
                    verdict = "otherHistory"
                elif hashlib.sha256(state).digest() != digest:
                    verdict = "inconsistent"
                elif canonical_or_none(state) != state:
                    verdict = "inconsistent (does not decode, or not in the canonical encoding)"
                else:
                    verdict = f"ok, fingerprint {fp.hex()}, digest {digest.hex()}"
            found.append((name, verdict))
        return found


# --- Event records ("Event records", "Field encoding") ---------------------------------------


def varint(b, i):
    value = 0
    for k in range(10):
        if i >= len(b):
            raise ValueError(f"varint cut short at byte {i}")
        byte = b[i]
        i += 1
        if k == 9 and byte > 1:
            raise ValueError(f"varint past 64 bits at byte {i - 1}")
        value |= (byte & 0x7F) << (7 * k)
        if byte < 0x80:
            return value, i
    raise ValueError(f"varint longer than 10 bytes at byte {i}")


def text(b, i):
    n, i = varint(b, i)
    if i + n > len(b):
        raise ValueError(f"string cut short at byte {i}")
    return b[i:i + n].decode("utf-8", "replace"), i + n


def value(b, i, depth=0):
    if i >= len(b):
        raise ValueError(f"value cut short at byte {i}")
    tag, i = b[i], i + 1
    if depth > 63:  # a value inside more than 63 arrays and objects
        raise ValueError(f"nesting deeper than 64 at byte {i - 1}")
    if tag <= 2:
        return (None, False, True)[tag], i
    if tag == 3:
        n, i = varint(b, i)
        return (n >> 1) ^ -(n & 1), i
    if tag == 4:
        return varint(b, i)
    if tag == 5:
        if i + 8 > len(b):
            raise ValueError(f"double cut short at byte {i}")
        d = struct.unpack_from("<d", b, i)[0]  # the tool shows non-finite ones as strings
        return (d if d == d and abs(d) != float("inf") else repr(d)), i + 8
    if tag == 6:
        return text(b, i)
    if tag == 7:
        items = []
        while i < len(b) and b[i] != 9:
            v, i = value(b, i, depth + 1)
            items.append(v)
        if i >= len(b):
            raise ValueError("array cut short")
        return items, i + 1
    if tag == 8:
        obj, seen = {}, set()
        while True:
            if i < len(b) and b[i] == 0:  # only the single byte 0 ends an object
                return obj, i + 1
            start = i
            n, i = varint(b, i)
            if n == 0:
                raise ValueError(f"key length 0 in a longer varint at byte {start}")
            if i + n - 1 > len(b):
                raise ValueError(f"key cut short at byte {i}")
            raw_key = bytes(b[i:i + n - 1])
            v, i = value(b, i + n - 1, depth + 1)
            if raw_key not in seen:  # the first key of equal bytes wins
                seen.add(raw_key)
                # Shown as text: two ill-formed spellings that both show as U+FFFD show once.
                obj.setdefault(raw_key.decode("utf-8", "replace"), v)
    if tag == 10:
        if i + 16 > len(b):
            raise ValueError(f"identifier cut short at byte {i}")
        hi, lo = struct.unpack_from("<QQ", b, i)
        return f"{hi:016x}{lo:016x}", i + 16
    raise ValueError(f"unknown tag {tag} at byte {i - 1}")


def canonical(state):
    """Re-encodes a state canonically (SNAPSHOTS.md): objects' entries sorted by key bytes, -0.0
    as 0.0, shortest varints; each value keeps its tag. Raises ValueError if it does not decode."""

    def uvarint(n):
        out = bytearray()
        while n >= 0x80:
            out.append(n & 0x7F | 0x80)
            n >>= 7
        return bytes(out + bytes([n]))

    def enc(b, i):
        tag = b[i]
        if tag in (3, 4):
            n, j = varint(b, i + 1)
            return bytes([tag]) + uvarint(n), j
        if tag == 5:
            bits = b[i + 1:i + 9]
            return bytes([5]) + (bytes(8) if bits == struct.pack("<d", -0.0) else bits), i + 9
        if tag == 6:
            n, j = varint(b, i + 1)
            return bytes([6]) + uvarint(n) + b[j:j + n], j + n
        if tag == 7:
            out, i = bytearray([7]), i + 1
            while b[i] != 9:
                v, i = enc(b, i)
                out += v
            return bytes(out + b"\x09"), i + 1
        if tag == 8:
            entries, i = [], i + 1
            while True:
                if i < len(b) and b[i] == 0:  # only the single byte 0 ends an object
                    i += 1
                    break
                start = i
                n, i = varint(b, i)
                if n == 0:
                    raise ValueError(f"key length 0 in a longer varint at byte {start}")
                key = b[i:i + n - 1]
                v, i = enc(b, i + n - 1)
                entries.append((key, uvarint(n) + key + v))
            entries.sort(key=lambda e: e[0])  # stable: equal keys keep their order
            return b"\x08" + b"".join(e for _, e in entries) + b"\x00", i
        return b[i:value(b, i)[1]], value(b, i)[1]  # null, booleans, identifiers: as they are

    try:
        out, end = enc(state, 0)
    except IndexError:
        raise ValueError("state cut short")
    return out if end == len(state) else None


def canonical_or_none(state):
    try:
        return canonical(state)
    except ValueError:
        return None


def event(payload):
    """Returns the event's envelope and fields as a dict, or None when the payload is no event."""
    try:
        if not payload or payload[0] != 1:
            return None
        name, i = text(payload, 1)
        version, i = varint(payload, i)
        origin, i = text(payload, i)
        if version > 0xFFFFFFFF or i + 16 > len(payload):
            return None
        hi, lo = struct.unpack_from("<QQ", payload, i)
        fields, end = value(payload, i + 16)
        if end != len(payload):
            return None  # the tool's renderer refuses bytes after the value
        return dict(name=name, version=version, origin=origin, command=f"{hi:016x}{lo:016x}",
                    event=fields)
    except ValueError:
        return None


def timestamp(ns):
    seconds, frac = divmod(ns, 10**9)
    when = datetime.fromtimestamp(seconds, timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:09d}Z"


def compact(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    flags = {a for a in argv if a.startswith("--")}
    if len(args) != 1 or len(flags) > 1 or not flags <= {"--verify", "--jsonl", "--contents"}:
        print(__doc__.strip().split("\n\n")[0], file=sys.stderr)
        return 2
    if args[0] == "":
        print("journal-reader.py: the journal directory is empty ('')", file=sys.stderr)
        return 2
    try:
        j = Journal(args[0], check_xxh="--verify" in flags)
        count, contents = 0, []
        for seq, ts, payload in j.records():
            count += 1
            if "--verify" in flags:
                continue
            if "--contents" in flags:
                contents.append(dict(payloadHex=payload.hex(), seq=seq, timestamp=ts))
                continue
            e = event(payload)
            if "--jsonl" in flags:
                line = dict(sequence=seq, timestamp=ts)
                line.update(e if e else dict(payloadHex=payload.hex()))
                print(compact(line))
            elif e:
                print(f"{seq}  {timestamp(ts)}  {e['name']} v{e['version']} {e['origin']}  "
                      f"{compact(e['event'])}")
            else:
                print(f"{seq}  {timestamp(ts)}  ({len(payload)} bytes) {payload.hex()}")
        # In every mode: the index witnesses records gone ("Reading", step 7).
        entries, valid = j.load_index()
        j.check_index(entries)
        if "--contents" in flags:
            print(json.dumps(dict(format=1, journalID=j.id.hex(), records=contents,
                                  segments=[name for _, name in j.segments]),
                             indent=2, sort_keys=True, separators=(",", " : ")))
        if "--verify" not in flags:
            for problem in j.problems:
                print(f"error: {problem}", file=sys.stderr)
            return 1 if j.problems else 0
        for name, verdict in j.snapshots():  # skipped files are notes, except beyondJournal
            (j.problems if verdict == "beyondJournal" else j.notes).append(
                f"snapshots/{name}: {verdict}")
    except (Damage, OSError, ValueError) as e:  # no journal to read: a refused manifest, say
        print(f"error: {e}", file=sys.stderr)
        return 3
    for note in j.notes:
        print(f"note: {note}")
    for problem in j.problems:
        print(f"problem: {problem}", file=sys.stderr)
    print(f"{len(j.segments)} segments, {count} records through sequence {j.last_seq}, "
          f"index {valid} valid of {len(entries)} well-formed entries: "
          f"{'DAMAGED' if j.problems else 'ok'}")
    return 1 if j.problems else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Exception:  # a fault of this reader, which must not pass for a finding (exit 1)
        traceback.print_exc()
        sys.exit(4)
