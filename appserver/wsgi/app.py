"""slowlab's WSGI app for Gunicorn (docs/experiments.md section 1).

Framework-free, standard library only. It serves the same endpoints as the
embedded app server (appserver/handlers.go), byte for byte:

  /fast              12-byte JSON body {"ok": true}
  /large[?size=N]    N bytes (default SLOWLAB_LARGE_SIZE, else 16 MiB): one
                     fixed 64 KiB block repeated, Content-Length set
  /longpoll[?wait=D] sleeps D (a Go duration such as 30s, default 30s), 204
  /bytes?n=N         N bytes of the same block pattern
  POST /upload       reads the request body in 64 KiB reads to its end, then
                     200 {"bytes": N} with X-Slowlab-Body-Bytes: N and
                     Server-Timing: app;dur=<ms>, body;dur=<ms in body reads>
  /events[?interval=D&duration=D&pad=N&accel=yes|no]
                     Server-Sent Events (text/event-stream, chunked): a tick
                     at once and then every interval (10ms..10s, default
                     100ms) while less than duration (0s..5m, default 10s)
                     has passed, each "id: K\ndata: {"seq": K, "t_us": T}"
                     with T the wall clock in unix microseconds when it was
                     written (pad=N adds N bytes, "pad": "aaa..."), then
                     "event: end\ndata: {"events": N, "t_us": T}" at
                     duration; accel sets X-Accel-Buffering. The stream
                     holds the worker (a sync worker for its whole length)
                     and counts in held-<pid> as a long-poll does.
  /ws                426 Upgrade Required, upgrade asked or not: WSGI has no
                     way to hold a WebSocket (a sync worker answers one
                     request and closes), so the WebSocket experiment runs
                     Uvicorn, Node.js or the embedded app instead.

Every response carries Server-Timing: app;dur=<ms>, the time the app took to
produce its headers. Every /large response (GET or HEAD, 400s included)
carries X-Slowlab-Peer-Port: <N> (appserver.PeerPortHeader), as in the other
three apps, and no other endpoint does: N is the remote TCP port of the
connection the worker accepted the request on, the client's local port on a
direct connection, the local port of the proxy's upstream socket through a
proxy. It is Gunicorn's REMOTE_PORT, which the sync, gthread and gevent
workers take from accept() (gunicorn/http/wsgi.py create()); on a Unix
socket there is none and the header is left out. (Gunicorn's
--proxy-protocol would put the PROXY header's client port there instead.)

app_send_s of /large is the time from the app being called until the server
finished writing the last chunk to the socket (which is not delivery to the
client). The body is an iterable whose close() Gunicorn calls right after the
last write returned (or after the write failed), so measuring costs the
worker nothing: close() appends one JSON line
  {"id": ..., "bytes": n, "app_send_s": s, "complete": bool, "pid": P}
to the file named by SLOWLAB_APP_SEND_LOG with a single O_APPEND write, which
keeps lines from concurrent workers whole. "id" is the request's
X-Slowlab-Request-Id header; "pid" the worker's process id; "peer_port" (as
X-Slowlab-Peer-Port) follows when there is one, and "traceparent" when the
request had one. As the body begins, the same file gets
  {"event": "start", "id": ..., "pid": P, "peer_port": N}
(appserver.SendRecord), so a worker Gunicorn kills mid-body (WORKER TIMEOUT
(pid:P)) leaves a record of the request it was serving.

Long-polls held: with SLOWLAB_HELD_DIR set, each worker process keeps the
number of /longpoll requests it is sleeping on in the file held-<pid> of that
directory (one decimal number, rewritten in place on every change), so the
lab can see how the held requests spread over Gunicorn's workers.

Environment:
  SLOWLAB_LARGE_SIZE    default /large size in bytes
  SLOWLAB_APP_SEND_LOG  where app_send_s records go; none are kept when unset
  SLOWLAB_HELD_DIR      where each worker reports its held long-polls; unset: none

Run it with: gunicorn --chdir appserver/wsgi app:application
"""

import json
import os
import re
import threading
import time
from urllib.parse import parse_qs

REQUEST_ID = "HTTP_X_SLOWLAB_REQUEST_ID"
TRACEPARENT = "HTTP_TRACEPARENT"
PEER_PORT = "X-Slowlab-Peer-Port"  # appserver.PeerPortHeader

MAX_BYTES = 1 << 30  # bounds ?size= and ?n= (1 GiB), as the embedded target
MAX_WAIT_S = 600.0  # bounds ?wait= (10 minutes), as the embedded target
DEFAULT_WAIT_S = 30.0

FAST_BODY = b'{"ok": true}'
BLOCK = bytes(ord("a") + i % 26 for i in range(64 * 1024))

STATUS = {
    200: "200 OK",
    204: "204 No Content",
    400: "400 Bad Request",
    404: "404 Not Found",
    405: "405 Method Not Allowed",
    426: "426 Upgrade Required",
}


def _large_size_from_env():
    raw = os.environ.get("SLOWLAB_LARGE_SIZE", "")
    if raw == "":
        return 16 << 20
    try:
        n = int(raw)
    except ValueError:
        n = -1
    if n < 0 or n > MAX_BYTES:
        # Fail at import: Gunicorn then refuses to boot and says why.
        raise ValueError("SLOWLAB_LARGE_SIZE %r: want 0..%d bytes" % (raw, MAX_BYTES))
    return n


LARGE_SIZE = _large_size_from_env()
SEND_LOG = os.environ.get("SLOWLAB_APP_SEND_LOG", "")

_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|\u00b5s|ms|s|m|h)")


def parse_duration(s):
    """Seconds in a Go duration string (30s, 1m30s, 250ms, 0); None if bad."""
    if s == "0":
        return 0.0
    total, pos = 0.0, 0
    for m in _PART.finditer(s):
        if m.start() != pos:
            return None
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos == 0 or pos != len(s):
        return None
    return total


def _timing(start):
    return ("Server-Timing", "app;dur=%.3f" % ((time.perf_counter() - start) * 1e3))


def _error(start_response, start, code, msg, extra=()):
    body = (msg + "\n").encode()
    start_response(STATUS[code], [
        ("Content-Type", "text/plain; charset=utf-8"),
        ("Content-Length", str(len(body))),
        *extra,
        _timing(start),
    ])
    return [body]


def _peer_port(environ):
    """The X-Slowlab-Peer-Port header, as a list of none or one: the remote
    port of the accepted connection (REMOTE_PORT), if it has one."""
    try:
        n = int(environ.get("REMOTE_PORT", ""))
    except ValueError:
        return []
    return [(PEER_PORT, str(n))] if 0 < n < 65536 else []


def _size(query, name, default):
    """Byte count from ?name= (default when absent or empty), -1 if bad."""
    vals = query.get(name)
    if not vals or vals[0] == "":
        return default
    try:
        n = int(vals[0])
    except ValueError:
        return -1
    return n if 0 <= n <= MAX_BYTES else -1


def _blocks(n):
    while n > 0:
        b = BLOCK if n >= len(BLOCK) else BLOCK[:n]
        n -= len(b)
        yield b


class SendRecorder:
    """Yields the /large body and, when the server closes it, records how
    long the app spent sending: a chunk counts as written once the server
    asks for the next one, so the last one counts only when the iteration
    ended, which Gunicorn reaches after its final write returned."""

    def __init__(self, start, size, request_id, traceparent, peer_port):
        self.start = start
        self.size = size
        self.request_id = request_id
        self.traceparent = traceparent
        self.pid = os.getpid()
        self.peer_port = peer_port
        rec = {"event": "start", "id": request_id, "pid": self.pid}
        if peer_port:
            rec["peer_port"] = peer_port
        append_record(SEND_LOG, rec)
        self.chunks = _blocks(size)
        self.written = 0
        self.pending = 0
        self.finished = False
        self.closed = False

    def __iter__(self):
        return self

    def __next__(self):
        self.written += self.pending
        self.pending = 0
        try:
            b = next(self.chunks)
        except StopIteration:
            self.finished = True
            raise
        self.pending = len(b)
        return b

    def close(self):
        if self.closed:
            return
        self.closed = True
        rec = {
            "id": self.request_id,
            "bytes": self.written,
            "app_send_s": time.perf_counter() - self.start,
            "complete": self.finished and self.written == self.size,
            "pid": self.pid,
        }
        if self.peer_port:
            rec["peer_port"] = self.peer_port
        if self.traceparent:
            rec["traceparent"] = self.traceparent
        append_record(SEND_LOG, rec)


def append_record(path, rec):
    """Appends rec as one JSON line in a single write (O_APPEND)."""
    if not path:
        return
    line = (json.dumps(rec, separators=(",", ":")) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


HELD_DIR = os.environ.get("SLOWLAB_HELD_DIR", "")
_held_lock = threading.Lock()
_held = {"pid": 0, "fd": -1, "n": 0}


def held_add(delta):
    """Adds delta to this worker's held long-polls and rewrites its file."""
    if not HELD_DIR:
        return
    with _held_lock:
        pid = os.getpid()
        if _held["pid"] != pid:  # first use in this worker (or after a fork)
            path = os.path.join(HELD_DIR, "held-%d" % pid)
            _held.update(pid=pid, n=0, fd=os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
        _held["n"] += delta
        os.pwrite(_held["fd"], b"%10d\n" % _held["n"], 0)


def fast(environ, start_response, start, query):
    start_response(STATUS[200], [
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(FAST_BODY))),
        _timing(start),
    ])
    return [FAST_BODY]


def _octets(environ, start_response, start, query, name, default, body, extra=()):
    """Answers n bytes, n from ?name=; body(n) iterates them. extra are
    more response headers."""
    n = _size(query, name, default)
    if n < 0:
        raw = json.dumps(query.get(name, [""])[0])
        return _error(start_response, start, 400, "%s %s: want 0..%d bytes" % (name, raw, MAX_BYTES), extra)
    start_response(STATUS[200], [
        ("Content-Type", "application/octet-stream"),
        ("Content-Length", str(n)),
        *extra,
        _timing(start),
    ])
    if environ["REQUEST_METHOD"] == "HEAD":
        return []
    return body(n)


def large(environ, start_response, start, query):
    rid, trace = environ.get(REQUEST_ID, ""), environ.get(TRACEPARENT, "")
    peer = _peer_port(environ)
    port = int(peer[0][1]) if peer else 0
    return _octets(environ, start_response, start, query, "size", LARGE_SIZE,
                   lambda n: SendRecorder(start, n, rid, trace, port), peer)


def longpoll(environ, start_response, start, query):
    wait = DEFAULT_WAIT_S
    raw = query.get("wait", [""])[0]
    if raw != "":
        wait = parse_duration(raw)
        if wait is None or wait > MAX_WAIT_S:
            return _error(start_response, start, 400,
                          "wait %s: want a duration from 0s to 10m0s" % json.dumps(raw))
    held_add(1)
    try:
        time.sleep(wait)
    finally:
        held_add(-1)
    start_response(STATUS[204], [_timing(start)])
    return []


UPLOAD_CHUNK = 64 << 10  # appserver.UploadChunk
BODY_BYTES = "X-Slowlab-Body-Bytes"  # appserver.UploadBytesHeader


def upload(environ, start_response, start, query):
    """Reads the body in UPLOAD_CHUNK reads to its end (Content-Length, or
    the end of a chunked body, which Gunicorn's wsgi.input decodes) and
    answers how many bytes it read and how long the reads took, waits for
    the client included. A body cut short gets a 400 nobody may read."""
    body = environ["wsgi.input"]
    t0, n, err = time.perf_counter(), 0, None
    try:
        while True:
            b = body.read(UPLOAD_CHUNK)
            if not b:
                break
            n += len(b)
    except Exception as e:  # the client left or was cut mid-body
        err = e
    read_ms = (time.perf_counter() - t0) * 1e3
    timing = ("Server-Timing", "app;dur=%.3f, body;dur=%.3f" % ((time.perf_counter() - start) * 1e3, read_ms))
    length = environ.get("CONTENT_LENGTH", "")
    if err is None and length.isdigit() and n != int(length):
        err = "body ended after %d of %s bytes" % (n, length)
    if err is not None:
        out = ("read body: %s after %d bytes\n" % (err, n)).encode()
        start_response(STATUS[400], [
            ("Content-Type", "text/plain; charset=utf-8"),
            ("Content-Length", str(len(out))),
            (BODY_BYTES, str(n)),
            timing,
        ])
        return [out]
    out = b'{"bytes": %d}' % n
    start_response(STATUS[200], [
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(out))),
        (BODY_BYTES, str(n)),
        timing,
    ])
    return [out]


MIN_INTERVAL_S, MAX_INTERVAL_S = 0.01, 10.0  # appserver.MinSSEInterval, MaxSSEInterval
MAX_DURATION_S = 300.0  # appserver.MaxSSEDuration
MAX_PAD = 64 << 10  # appserver.MaxSSEPad


def sse_params(query):
    """(interval_s, duration_s, pad, accel) from /events' query, or the
    400's text as a string (the embedded app's ParseSSEQuery, word for
    word)."""
    interval, duration, pad = 0.1, 10.0, 0
    raw = query.get("interval", [""])[0]
    if raw != "":
        interval = parse_duration(raw)
        if interval is None or not MIN_INTERVAL_S <= interval <= MAX_INTERVAL_S:
            return "interval %s: want a duration from 10ms to 10s" % json.dumps(raw)
    raw = query.get("duration", [""])[0]
    if raw != "":
        duration = parse_duration(raw)
        if duration is None or duration > MAX_DURATION_S:
            return "duration %s: want a duration from 0s to 5m0s" % json.dumps(raw)
    raw = query.get("pad", [""])[0]
    if raw != "":
        pad = int(raw) if raw.isdigit() else -1
        if not 0 <= pad <= MAX_PAD:
            return "pad %s: want 0..%d bytes" % (json.dumps(raw), MAX_PAD)
    accel = query.get("accel", [""])[0]
    if accel not in ("", "yes", "no"):
        return "accel %s: want yes or no" % json.dumps(accel)
    return interval, duration, pad, accel


def sse_event(seq, pad):
    """One tick, stamped with the wall clock now (unix microseconds)."""
    t_us = time.time_ns() // 1000
    if pad:
        return b'id: %d\ndata: {"seq": %d, "t_us": %d, "pad": "%s"}\n\n' % (seq, seq, t_us, pad)
    return b'id: %d\ndata: {"seq": %d, "t_us": %d}\n\n' % (seq, seq, t_us)


def sse_count(interval, duration):
    """Ticks in a stream: at 0, interval, ... while less than duration."""
    if duration <= 0:
        return 0
    return int(-(-round(duration * 1e9) // round(interval * 1e9)))


def _sse_stream(start, interval, duration, pad):
    n = sse_count(interval, duration)
    padding = b"a" * pad
    held_add(1)
    try:
        for seq in range(n + 1):
            due = start + (seq * interval if seq < n else duration)
            wait = due - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            if seq < n:
                yield sse_event(seq, padding)
            else:
                yield b'event: end\ndata: {"events": %d, "t_us": %d}\n\n' % (n, time.time_ns() // 1000)
    finally:
        held_add(-1)


def events(environ, start_response, start, query):
    params = sse_params(query)
    if isinstance(params, str):
        return _error(start_response, start, 400, params)
    interval, duration, pad, accel = params
    headers = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")]
    if accel:
        headers.append(("X-Accel-Buffering", accel))
    start_response(STATUS[200], headers + [_timing(start)])
    if environ["REQUEST_METHOD"] == "HEAD":
        return []
    return _sse_stream(start, interval, duration, pad)


def nbytes(environ, start_response, start, query):
    return _octets(environ, start_response, start, query, "n", -1, _blocks)


WS_REFUSAL = "/ws: a WSGI server cannot hold a WebSocket; run uvicorn, node or the embedded app"


def ws(environ, start_response, start, query):
    """/ws: refused, upgrade asked or not (see above)."""
    return _error(start_response, start, 426, WS_REFUSAL, extra=(("Connection", "close"),))


ROUTES = {"/fast": fast, "/large": large, "/longpoll": longpoll, "/bytes": nbytes, "/events": events, "/ws": ws}
POST_ROUTES = {"/upload": upload}


def application(environ, start_response):
    start = time.perf_counter()
    path = environ.get("PATH_INFO", "")
    if path in POST_ROUTES:
        handler, allowed = POST_ROUTES[path], ("POST",)
    else:
        handler, allowed = ROUTES.get(path), ("GET", "HEAD")
    if handler is None:
        return _error(start_response, start, 404, "404 page not found")
    if environ["REQUEST_METHOD"] not in allowed:
        body = b"Method Not Allowed\n"
        start_response(STATUS[405], [
            ("Allow", ", ".join(allowed)),
            ("Content-Type", "text/plain; charset=utf-8"),
            ("Content-Length", str(len(body))),
            _timing(start),
        ])
        return [body]
    query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
    return handler(environ, start_response, start, query)
