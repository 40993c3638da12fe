"""slowlab's ASGI app for Uvicorn.

Framework-free, standard library only: the ASGI twin of appserver/wsgi/app.py,
with the same endpoints, byte for byte, and the same records:

  /fast              12-byte JSON body {"ok": true}
  /large[?size=N]    N bytes (default SLOWLAB_LARGE_SIZE, else 16 MiB): one
                     fixed 64 KiB block repeated, in 64 KiB chunks,
                     Content-Length set; ?backpressure=on|off (below)
  /longpoll[?wait=D] sleeps D (a Go duration such as 30s, default 30s), 204
  /bytes?n=N         N bytes of the same block pattern
  /events[?interval=D&duration=D&pad=N&accel=yes|no]
                     Server-Sent Events, as the WSGI app's (a tick stamped
                     with the wall clock in unix microseconds every
                     interval, then the end event); held like a long-poll
  /ws[?mode=echo|push&interval=D&count=N&pad=N&queue=wait|unbounded]
                     a WebSocket (appserver.ParseWSQuery): echo gives each
                     message back; push sends count messages stamped with
                     the wall clock in unix microseconds (appserver.WSMessage),
                     one every interval, then closes 1000 with
                     {"messages": N}. queue=unbounded stamps on schedule into
                     an asyncio.Queue a sender task drains, growing the
                     worker's memory with a slow reader; wait awaits each
                     send(), which with Uvicorn's wsproto (0.17) waits while
                     the transport has paused writing (its buffer above the
                     high-water mark), so at most one message more than the
                     socket takes is held. Held like a
                     long-poll. A bad query is refused before the upgrade with
                     Uvicorn's 403 (an ASGI app that closes before accepting
                     cannot say more there); a GET without an upgrade gets 426.
  POST /upload       reads the request body to its end, then 200
                     {"bytes": N} with x-slowlab-body-bytes: N and
                     Server-Timing: app;dur=<ms>, body;dur=<ms in body reads>
                     (ASGI hands the body over in the messages Uvicorn makes
                     of it, as it arrives, at most 64 KiB each)

Every response carries Server-Timing: app;dur=<ms>, the time the app took to
produce its headers. Every /large response (GET or HEAD, 400s included)
carries x-slowlab-peer-port: <N> (appserver.PeerPortHeader), as in the other
three apps, and no other endpoint does: N is the remote TCP port of the
connection the worker accepted the request on, the client's local port on a
direct connection, the local port of the proxy's upstream socket through a
proxy. It is scope["client"][1], which Uvicorn takes from the socket's
getpeername(). It is left out when there is none (a Unix socket) or it is 0:
Uvicorn's --proxy-headers, on by default, replaces the client with
X-Forwarded-For's host and port 0 when a trusted proxy (127.0.0.1) sends
that header.

Backpressure. With backpressure=on (the default), /large awaits send() for
each chunk, and Uvicorn's send() waits for the transport to drain before it
writes: the app goes at the reader's pace and holds about one chunk. With
backpressure=off, a producer task renders every chunk ahead of send() into
an unbounded asyncio.Queue while the response is sent from the queue (what
Starlette's BaseHTTPMiddleware did to streamed bodies, starlette#1012): with
a slow reader the whole body sits in the worker's memory. Chunks are fresh
bytes objects in both modes, as an app that renders its body makes them, so
a buffered chunk costs its own memory.

app_send_s of /large is the time from the app being called until it handed
the last chunk to the server: with backpressure=on, until the last send()
returned (Uvicorn has then written it to its transport, which is not delivery
to the client); with backpressure=off, until the producer had queued the
last chunk. One JSON line
  {"id": ..., "bytes": n, "app_send_s": s, "complete": bool, "pid": P}
goes to the file named by SLOWLAB_APP_SEND_LOG with a single O_APPEND write,
which keeps lines from concurrent workers whole. "id" is the request's
X-Slowlab-Request-Id header; "pid" the worker's process id; "peer_port" (as
x-slowlab-peer-port) follows when there is one, and "traceparent" when the
request had one. As the body begins, the same file gets
  {"event": "start", "id": ..., "pid": P, "peer_port": N}
(appserver.SendRecord), the worker that serves the request.
"bytes" are the bytes handed over: to the server, or with backpressure=off to
the queue. With backpressure=on a client that went away stops the sending and
leaves the record incomplete (the chunk send() was waiting with is not
counted); with backpressure=off the record is written before that can be
known.

Long-polls held: with SLOWLAB_HELD_DIR set, each worker process keeps the
number of /longpoll requests it is sleeping on in the file held-<pid> of that
directory (one decimal number, rewritten in place on every change), so the
lab can see how the held requests spread over Uvicorn's workers.

Environment:
  SLOWLAB_LARGE_SIZE    default /large size in bytes
  SLOWLAB_APP_SEND_LOG  where app_send_s records go; none are kept when unset
  SLOWLAB_HELD_DIR      where each worker reports its held long-polls; unset: none

Run it with: python3 -m uvicorn --app-dir appserver/asgi --lifespan on app:application
"""

import asyncio
import json
import os
import re
import time
from urllib.parse import parse_qs

REQUEST_ID = b"x-slowlab-request-id"
TRACEPARENT = b"traceparent"
PEER_PORT = b"x-slowlab-peer-port"  # appserver.PeerPortHeader

MAX_BYTES = 1 << 30  # bounds ?size= and ?n= (1 GiB), as the embedded target
MAX_WAIT_S = 600.0  # bounds ?wait= (10 minutes), as the embedded target
DEFAULT_WAIT_S = 30.0

FAST_BODY = b'{"ok": true}'
BLOCK = bytes(ord("a") + i % 26 for i in range(64 * 1024))


def _large_size_from_env():
    raw = os.environ.get("SLOWLAB_LARGE_SIZE", "")
    if raw == "":
        return 16 << 20
    try:
        n = int(raw)
    except ValueError:
        n = -1
    if n < 0 or n > MAX_BYTES:
        # Fail at import: the worker then exits and its log says why.
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
    return (b"server-timing", b"app;dur=%.3f" % ((time.perf_counter() - start) * 1e3))


def _start(status, headers, start):
    """The http.response.start message; Server-Timing is taken now."""
    return {"type": "http.response.start", "status": status, "headers": headers + [_timing(start)]}


async def _respond(send, start, status, headers, body=b""):
    await send(_start(status, headers, start))
    await send({"type": "http.response.body", "body": body})


async def _error(send, start, code, msg, extra=()):
    body = (msg + "\n").encode()
    await _respond(send, start, code, [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", b"%d" % len(body)),
        *extra,
    ], body)


def _peer_port(scope):
    """The x-slowlab-peer-port header, as a list of none or one: the remote
    port of the accepted connection (scope["client"]), if it has one."""
    client = scope.get("client")
    if not client or not 0 < client[1] < 65536:
        return []
    return [(PEER_PORT, b"%d" % client[1])]


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
    """Yields n bytes of the block pattern in chunks of up to 64 KiB, each a
    fresh copy, as an app renders them."""
    view = memoryview(BLOCK)
    while n > 0:
        k = min(n, len(BLOCK))
        n -= k
        yield bytes(view[:k])


def _header(scope, name):
    """The request header name (lowercase bytes) as text, repeats joined
    with commas as in a WSGI environ; "" when absent."""
    return ",".join(v.decode("latin-1") for k, v in scope["headers"] if k == name)


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


class SendRecord:
    """The /large record of one request, written once."""

    def __init__(self, scope, start, size):
        self.start = start
        self.size = size
        self.request_id = _header(scope, REQUEST_ID)
        self.traceparent = _header(scope, TRACEPARENT)
        self.written = False
        self.pid = os.getpid()
        peer = _peer_port(scope)
        self.peer_port = int(peer[0][1]) if peer else 0

    def begin(self):
        """Records that this worker begins the body."""
        rec = {"event": "start", "id": self.request_id, "pid": self.pid}
        if self.peer_port:
            rec["peer_port"] = self.peer_port
        append_record(SEND_LOG, rec)

    def write(self, handed, complete):
        if self.written:
            return
        self.written = True
        rec = {
            "id": self.request_id,
            "bytes": handed,
            "app_send_s": time.perf_counter() - self.start,
            "complete": complete and handed == self.size,
            "pid": self.pid,
        }
        if self.peer_port:
            rec["peer_port"] = self.peer_port
        if self.traceparent:
            rec["traceparent"] = self.traceparent
        append_record(SEND_LOG, rec)


HELD_DIR = os.environ.get("SLOWLAB_HELD_DIR", "")
_held = {"pid": 0, "fd": -1, "n": 0}


def held_add(delta):
    """Adds delta to this worker's held long-polls and rewrites its file.
    Only the worker's event loop calls it: no lock."""
    if not HELD_DIR:
        return
    pid = os.getpid()
    if _held["pid"] != pid:  # first use in this worker
        path = os.path.join(HELD_DIR, "held-%d" % pid)
        _held.update(pid=pid, n=0, fd=os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
    _held["n"] += delta
    os.pwrite(_held["fd"], b"%10d\n" % _held["n"], 0)


async def _watch_disconnect(receive, gone):
    """Sets gone when the server says the client went away (Uvicorn's
    send() then drops what it is given without a word)."""
    while (await receive())["type"] != "http.disconnect":
        pass
    gone.set()


async def fast(scope, receive, send, start, query):
    await _respond(send, start, 200, [
        (b"content-type", b"application/json"),
        (b"content-length", b"%d" % len(FAST_BODY)),
    ], FAST_BODY)


def _octet_headers(n):
    return [(b"content-type", b"application/octet-stream"), (b"content-length", b"%d" % n)]


async def _octets(scope, send, start, query, name, default, extra=()):
    """Checks ?name= and answers its errors and HEAD, with the more
    response headers extra; returns the byte count of a GET to send, else
    None."""
    n = _size(query, name, default)
    if n < 0:
        raw = json.dumps(query.get(name, [""])[0])
        await _error(send, start, 400, "%s %s: want 0..%d bytes" % (name, raw, MAX_BYTES), extra)
        return None
    if scope["method"] == "HEAD":
        await _respond(send, start, 200, _octet_headers(n) + list(extra))
        return None
    return n


async def _send_paced(send, n, gone):
    """Sends n bytes, each chunk after the previous one's send() returned;
    returns the bytes handed to the server and whether all were."""
    handed = 0
    if n == 0:
        await send({"type": "http.response.body", "body": b""})
        return 0, True
    for b in _blocks(n):
        if gone.is_set():
            return handed, False
        await send({"type": "http.response.body", "body": b, "more_body": handed + len(b) < n})
        if gone.is_set():  # the client left while send() waited: dropped
            return handed, False
        handed += len(b)
    return handed, True


async def _send_buffered(send, n, gone, record):
    """Sends n bytes from a queue that a producer task fills without waiting
    for send(); the producer writes the record when it has queued the last
    chunk."""
    queue = asyncio.Queue()

    async def produce():
        queued = 0
        for b in _blocks(n):
            await queue.put(b)  # unbounded: never waits
            queued += len(b)
        await queue.put(None)
        record.write(queued, True)

    producer = asyncio.create_task(produce())
    try:
        while not gone.is_set():
            b = await queue.get()
            if b is None:
                break
            await send({"type": "http.response.body", "body": b, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        await producer
    finally:
        if not producer.done():
            producer.cancel()


async def large(scope, receive, send, start, query):
    peer = _peer_port(scope)
    mode = query.get("backpressure", [""])[0]
    if mode not in ("", "on", "off"):
        return await _error(send, start, 400, "backpressure %s: want on or off" % json.dumps(mode), peer)
    n = await _octets(scope, send, start, query, "size", LARGE_SIZE, peer)
    if n is None:
        return
    record = SendRecord(scope, start, n)
    record.begin()
    gone = asyncio.Event()
    watcher = asyncio.create_task(_watch_disconnect(receive, gone))
    handed, complete = 0, False
    try:
        await send(_start(200, _octet_headers(n) + peer, start))
        if mode == "off":
            await _send_buffered(send, n, gone, record)
        else:
            handed, complete = await _send_paced(send, n, gone)
    finally:
        watcher.cancel()
        record.write(handed, complete)  # a no-op when the producer wrote it


async def longpoll(scope, receive, send, start, query):
    wait = DEFAULT_WAIT_S
    raw = query.get("wait", [""])[0]
    if raw != "":
        wait = parse_duration(raw)
        if wait is None or wait > MAX_WAIT_S:
            return await _error(send, start, 400, "wait %s: want a duration from 0s to 10m0s" % json.dumps(raw))
    held_add(1)
    try:
        await asyncio.sleep(wait)
    finally:
        held_add(-1)
    await _respond(send, start, 204, [])


async def nbytes(scope, receive, send, start, query):
    n = await _octets(scope, send, start, query, "n", -1)
    if n is None:
        return
    await send(_start(200, _octet_headers(n), start))
    await _send_paced(send, n, asyncio.Event())


async def upload(scope, receive, send, start, query):
    """Receives the body to its end and answers how many bytes came and how
    long receiving took, waits for the client included. A client that left
    mid-body gets nothing (there is no one to answer)."""
    t0, n = time.perf_counter(), 0
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            return
        n += len(msg.get("body", b""))
        if not msg.get("more_body", False):
            break
    read_ms = (time.perf_counter() - t0) * 1e3
    body = b'{"bytes": %d}' % n
    await send({"type": "http.response.start", "status": 200, "headers": [
        (b"content-type", b"application/json"),
        (b"content-length", b"%d" % len(body)),
        (b"x-slowlab-body-bytes", b"%d" % n),
        (b"server-timing", b"app;dur=%.3f, body;dur=%.3f" % ((time.perf_counter() - start) * 1e3, read_ms)),
    ]})
    await send({"type": "http.response.body", "body": body})


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


async def events(scope, receive, send, start, query):
    """Server-Sent Events: a tick at once and then every interval while
    less than duration has passed, each stamped with the wall clock when
    handed to the server, then the end event (appserver.SSEEvent). The
    stream counts as held, as a long-poll does."""
    params = sse_params(query)
    if isinstance(params, str):
        return await _error(send, start, 400, params)
    interval, duration, pad, accel = params
    headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
    if accel:
        headers.append((b"x-accel-buffering", accel.encode()))
    if scope["method"] == "HEAD":
        return await _respond(send, start, 200, headers)
    await send(_start(200, headers, start))
    n = 0 if duration <= 0 else int(-(-round(duration * 1e9) // round(interval * 1e9)))
    padding = b"a" * pad
    gone = asyncio.Event()
    watcher = asyncio.create_task(_watch_disconnect(receive, gone))
    held_add(1)
    try:
        for seq in range(n + 1):
            wait = start + (seq * interval if seq < n else duration) - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            if gone.is_set():
                return
            t_us = time.time_ns() // 1000
            if seq == n:
                body = b'event: end\ndata: {"events": %d, "t_us": %d}\n\n' % (n, t_us)
            elif pad:
                body = b'id: %d\ndata: {"seq": %d, "t_us": %d, "pad": "%s"}\n\n' % (seq, seq, t_us, padding)
            else:
                body = b'id: %d\ndata: {"seq": %d, "t_us": %d}\n\n' % (seq, seq, t_us)
            await send({"type": "http.response.body", "body": body, "more_body": seq < n})
    finally:
        held_add(-1)
        watcher.cancel()


MIN_WS_INTERVAL_S, MAX_WS_INTERVAL_S = 0.001, 10.0  # appserver.MinWSInterval, MaxWSInterval
MAX_WS_COUNT = 1000000  # appserver.MaxWSCount
MAX_WS_MESSAGE = 16 << 20  # appserver.MaxWSMessage


def ws_params(query):
    """(mode, interval_s, count, pad, queue) from /ws' query, or the
    refusal's text as a string (the embedded app's ParseWSQuery, word for
    word)."""
    mode, interval, count, pad, queue = "echo", 0.1, 100, 0, "wait"
    raw = query.get("mode", [""])[0]
    if raw not in ("", "echo", "push"):
        return "mode %s: want echo or push" % json.dumps(raw)
    mode = raw or mode
    raw = query.get("interval", [""])[0]
    if raw != "":
        interval = parse_duration(raw)
        if interval is None or not MIN_WS_INTERVAL_S <= interval <= MAX_WS_INTERVAL_S:
            return "interval %s: want a duration from 1ms to 10s" % json.dumps(raw)
    raw = query.get("count", [""])[0]
    if raw != "":
        count = int(raw) if raw.isdigit() else -1
        if not 0 <= count <= MAX_WS_COUNT:
            return "count %s: want 0..%d messages" % (json.dumps(raw), MAX_WS_COUNT)
    raw = query.get("pad", [""])[0]
    if raw != "":
        pad = int(raw) if raw.isdigit() else -1
        if not 0 <= pad <= MAX_WS_MESSAGE:
            return "pad %s: want 0..%d bytes" % (json.dumps(raw), MAX_WS_MESSAGE)
    raw = query.get("queue", [""])[0]
    if raw not in ("", "wait", "unbounded"):
        return "queue %s: want wait or unbounded" % json.dumps(raw)
    return mode, interval, count, pad, raw or queue


async def ws_plain(scope, receive, send, start, query):
    """GET /ws without an upgrade: 426, as the embedded app answers."""
    body = b"Upgrade Required: /ws is a WebSocket\n"
    await _respond(send, start, 426, [
        (b"upgrade", b"websocket"),
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", b"%d" % len(body)),
    ], body)


async def websocket(scope, receive, send):
    """/ws as a WebSocket: echo, or push stamped messages (see above)."""
    if scope["path"] != "/ws":
        await receive()  # websocket.connect
        return await send({"type": "websocket.close", "code": 1008})
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    params = ws_params(query)
    await receive()  # websocket.connect
    if isinstance(params, str):
        return await send({"type": "websocket.close", "code": 1008})
    await send({"type": "websocket.accept"})
    held_add(1)
    try:
        mode, interval, count, pad, queue = params
        if mode == "echo":
            return await _ws_echo(receive, send)
        await _ws_push(receive, send, interval, count, pad, queue)
    finally:
        held_add(-1)


async def _ws_echo(receive, send):
    while True:
        msg = await receive()
        if msg["type"] == "websocket.disconnect":
            return
        if msg.get("text") is not None:
            await send({"type": "websocket.send", "text": msg["text"]})
        else:
            await send({"type": "websocket.send", "bytes": msg.get("bytes") or b""})


async def _ws_push(receive, send, interval, count, pad, queue):
    gone = asyncio.Event()

    async def watch():
        while (await receive())["type"] != "websocket.disconnect":
            pass
        gone.set()

    watcher = asyncio.create_task(watch())
    queued = asyncio.Queue() if queue == "unbounded" else None

    async def drain():
        while True:
            text = await queued.get()
            if text is None or gone.is_set():
                return
            await send({"type": "websocket.send", "text": text})

    sender = asyncio.create_task(drain()) if queued is not None else None
    padding = "a" * pad
    start = time.perf_counter()
    try:
        for seq in range(count):
            wait = start + seq * interval - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            if gone.is_set():
                return
            text = '{"seq": %d, "t_us": %d, "pad": "%s"}' % (seq, time.time_ns() // 1000, padding)
            if queued is not None:
                queued.put_nowait(text)
            else:
                await send({"type": "websocket.send", "text": text})
        if sender is not None:
            queued.put_nowait(None)
            await sender
        if not gone.is_set():
            await send({"type": "websocket.close", "code": 1000, "reason": '{"messages": %d}' % count})
    finally:
        watcher.cancel()
        if sender is not None:
            sender.cancel()


ROUTES = {"/fast": fast, "/large": large, "/longpoll": longpoll, "/bytes": nbytes, "/events": events, "/ws": ws_plain}
POST_ROUTES = {"/upload": upload}


async def _lifespan(receive, send):
    # Uvicorn logs "Application startup complete." per worker once this
    # answers: the lab counts those lines to know every worker is up.
    while True:
        msg = await receive()
        if msg["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif msg["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def application(scope, receive, send):
    if scope["type"] == "lifespan":
        return await _lifespan(receive, send)
    if scope["type"] == "websocket":
        return await websocket(scope, receive, send)
    if scope["type"] != "http":
        raise ValueError("unsupported ASGI scope type %r" % scope["type"])
    start = time.perf_counter()
    if scope["path"] in POST_ROUTES:
        handler, allowed = POST_ROUTES[scope["path"]], ("POST",)
    else:
        handler, allowed = ROUTES.get(scope["path"]), ("GET", "HEAD")
    if handler is None:
        return await _error(send, start, 404, "404 page not found")
    if scope["method"] not in allowed:
        body = b"Method Not Allowed\n"
        return await _respond(send, start, 405, [
            (b"allow", ", ".join(allowed).encode()),
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", b"%d" % len(body)),
        ], body)
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    await handler(scope, receive, send, start, query)
