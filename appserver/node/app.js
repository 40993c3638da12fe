'use strict';
/*
slowlab's Node.js app (node:http), the counterpart of the WSGI app that
Gunicorn serves (appserver/wsgi/app.py): node:cluster, node:fs, node:http,
and for /ws the ws library (Debian node-ws), which real Node.js apps serve
WebSockets with. It serves the same endpoints, byte for byte:

  /fast              12-byte JSON body {"ok": true}
  /large[?size=N]    N bytes (default SLOWLAB_LARGE_SIZE, else 16 MiB): one
                     fixed 64 KiB block repeated, Content-Length set, written
                     in 64 KiB chunks; ?backpressure=off ignores backpressure
  /longpoll[?wait=D] waits D (a Go duration such as 30s, default 30s), 204
  /bytes?n=N         N bytes of the same block pattern
  /events[?interval=D&duration=D&pad=N&accel=yes|no]
                     Server-Sent Events, as the WSGI app's (a tick stamped
                     with the wall clock in unix microseconds every
                     interval, then the end event); held like a long-poll
  POST /upload       reads the request body to its end, then 200
                     {"bytes": N} with X-Slowlab-Body-Bytes: N and
                     Server-Timing: app;dur=<ms>, body;dur=<ms in body reads>
                     (in the chunks node:http hands over, at most 64 KiB)
  /ws[?mode=echo|push&interval=D&count=N&pad=N&queue=wait|unbounded]
                     a WebSocket served by ws (a WebSocketServer with
                     noServer: true taking the http server's 'upgrade' for
                     /ws; no compression), as the embedded app's
                     (appserver.ParseWSQuery): echo gives each message back;
                     push sends count messages stamped with the wall clock in
                     unix microseconds (appserver.WSMessage), one every
                     interval, then closes 1000 with {"messages": N}.
                     queue=wait sends the next message only once the socket
                     took the last (ws.bufferedAmount 0 after send, or send's
                     callback), so a slow reader delays the stamps;
                     queue=unbounded sends on schedule whatever is buffered,
                     and what the socket does not take waits in the process.
                     A bad query is a 400 before the upgrade, with the
                     embedded app's text; a GET without an upgrade a 426.
                     Held like a long-poll.

Every response carries Server-Timing: app;dur=<ms>, the time the app took to
produce its headers. Every /large response (GET or HEAD, 400s included)
carries X-Slowlab-Peer-Port: <N> (appserver.PeerPortHeader), as in the other
three apps, and no other endpoint does: N is the remote TCP port of the
connection the app accepted the request on (req.socket.remotePort), the
client's local port on a direct connection, the local port of the proxy's
upstream socket through a proxy; it is left out when there is none (a Unix
socket). In a cluster the primary accepts and hands the socket to a worker,
so this is still the port of the connection the primary accepted. Other
paths answer 404, other methods than GET and HEAD 405, bad parameters 400,
with the WSGI app's messages.

Backpressure on /large: by default (backpressure=on) the next chunk is
written only once res.write returned true or res emitted 'drain', so the
process holds about one chunk per slow reader. With backpressure=off every
chunk is written at once, ignoring res.write's return value: what the
socket does not take waits in the process, the whole body for a reader that
reads slowly (the pattern behind Node and Bun apps that run out of memory
behind slow clients). Each chunk in flight is a buffer of its own (reused
once res has flushed it): writing one shared block 256 times would queue 256
references to the same 64 KiB and hide that memory.

app_send_s of /large is the time from the handler's start until the app
handed the last chunk to res (the return of its last res.write call; with
backpressure that chunk may still wait in the process for a moment, as
Gunicorn's last chunk waits in the kernel). Then one JSON line
  {"id": ..., "bytes": n, "app_send_s": s, "complete": bool, "pid": P}
is appended to the file named by SLOWLAB_APP_SEND_LOG with a single O_APPEND
write, which keeps lines from concurrent workers whole. "bytes" counts the
bytes handed to res; "complete" is false when the client went away before
the app handed the last chunk (with backpressure=off it never can).
"id" is the request's X-Slowlab-Request-Id header; "pid" the worker's
process id; "peer_port" (as X-Slowlab-Peer-Port) follows when there is one,
and "traceparent" when the request had one. As the body begins, the same
file gets {"event": "start", "id": ..., "pid": P, "peer_port": N}
(appserver.SendRecord), the worker that serves the request.

Long-polls held: with SLOWLAB_HELD_DIR set, each worker process keeps the
number of /longpoll requests it is waiting on in the file held-<pid> of
that directory (one decimal number, rewritten in place on every change).
As in the WSGI app, a long-poll counts until its wait is over, whether or
not the client is still there.

Workers: SLOWLAB_WORKERS=W (default 1). W = 1 is one process serving the
app. W > 1 is a node:cluster primary that forks W workers and hands them
connections round-robin (cluster.SCHED_RR, set here so the environment
cannot change it): the primary accepts, unlike Gunicorn's workers, which
each accept from the shared socket. The primary answers no request itself;
it restarts a worker that dies once all were ready (as Gunicorn's master
does), exits if one dies before, and on SIGTERM or SIGINT stops its workers
and exits once they are gone.

It listens on 127.0.0.1, on a port the kernel picks (listen on port 0). In
a cluster the primary owns the listening socket: every worker's listen(0)
asks the primary for the same handle, so all of them serve the one port
the kernel gave the first. Once every worker listens it prints one line on
stderr, "ready listen=127.0.0.1:PORT" (slowlab's child protocol,
child.ReadyLine), which the lab reads from its log: on stdout the lab
takes only the first ready line, which the launcher that puts the app in
its cgroup prints.

Environment:
  SLOWLAB_WORKERS       worker processes (default 1)
  SLOWLAB_LARGE_SIZE    default /large size in bytes
  SLOWLAB_APP_SEND_LOG  where app_send_s records go; none are kept when unset
  SLOWLAB_HELD_DIR      where each worker reports its held long-polls; unset: none

ws: Debian's Node.js finds the node-ws package's ws through its global
paths; a Node.js that does not look there (NodeSource's) is pointed at
Debian's directories (WS_DIRS). Without ws the app does not start: it says
what it tried and to apt-get install node-ws, and exits with status 2.
`node app.js --ws-version` prints ws's version and file.

Run it with: SLOWLAB_WORKERS=2 node app.js
*/

const cluster = require('node:cluster');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { performance } = require('node:perf_hooks');

const REQUEST_ID = 'x-slowlab-request-id';
const TRACEPARENT = 'traceparent';
const PEER_PORT = 'X-Slowlab-Peer-Port'; // appserver.PeerPortHeader

const MAX_BYTES = 2 ** 30; // bounds ?size= and ?n= (1 GiB), as the embedded target
const MAX_WAIT_S = 600; // bounds ?wait= (10 minutes), as the embedded target
const DEFAULT_WAIT_S = 30;

const FAST_BODY = Buffer.from('{"ok": true}');
const BLOCK = Buffer.alloc(64 * 1024);
for (let i = 0; i < BLOCK.length; i++) BLOCK[i] = 0x61 + (i % 26);

// log writes one line to stderr, which the lab keeps in the app's log.
function log(msg) {
  process.stderr.write(`slowlab node app[${process.pid}]: ${msg}\n`);
}

// pyInt reads a byte count as Python's int() does (spaces around, a sign,
// underscores between digits); null if it is not one.
function pyInt(s) {
  const t = s.trim();
  if (!/^[+-]?[0-9]+(?:_[0-9]+)*$/.test(t)) return null;
  return Number(t.replace(/_/g, ''));
}

// pyJSON is JSON as Python's json.dumps writes it with
// separators=(",", ":"): every character outside printable ASCII escaped.
function pyJSON(v) {
  return JSON.stringify(v).replace(/[\u007f-\uffff]/g,
    (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

// config reads the environment; it throws on a bad value, and the app then
// refuses to start and says why.
function config(env) {
  const rawSize = env.SLOWLAB_LARGE_SIZE ?? '';
  let largeSize = 16 << 20;
  if (rawSize !== '') {
    const n = pyInt(rawSize);
    if (n === null || n < 0 || n > MAX_BYTES) {
      throw new Error(`SLOWLAB_LARGE_SIZE ${pyJSON(rawSize)}: want 0..${MAX_BYTES} bytes`);
    }
    largeSize = n;
  }
  const rawWorkers = env.SLOWLAB_WORKERS ?? '';
  let workers = 1;
  if (rawWorkers !== '') {
    const n = pyInt(rawWorkers);
    if (n === null || n < 1 || n > 1024) {
      throw new Error(`SLOWLAB_WORKERS ${pyJSON(rawWorkers)}: want 1..1024 processes`);
    }
    workers = n;
  }
  return {
    largeSize,
    workers,
    sendLog: env.SLOWLAB_APP_SEND_LOG ?? '',
    heldDir: env.SLOWLAB_HELD_DIR ?? '',
  };
}

const UNITS = { ns: 1e-9, us: 1e-6, '\u00b5s': 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };
const PART = /([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|\u00b5s|ms|s|m|h)/y;

// parseDuration returns the seconds in a Go duration string (30s, 1m30s,
// 250ms, 0); null if bad.
function parseDuration(s) {
  if (s === '0') return 0;
  let total = 0;
  let pos = 0;
  while (pos < s.length) {
    PART.lastIndex = pos;
    const m = PART.exec(s);
    if (m === null) return null;
    total += parseFloat(m[1]) * UNITS[m[2]];
    pos = PART.lastIndex;
  }
  return pos === 0 ? null : total;
}

function timing(start) {
  return `app;dur=${(performance.now() - start).toFixed(3)}`;
}

function sendError(res, start, code, msg) {
  const body = Buffer.from(msg + '\n');
  res.writeHead(code, {
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': body.length,
    'Server-Timing': timing(start),
  });
  res.end(body);
}

// size is the byte count from ?name= (dflt when absent or empty), -1 if
// bad.
function size(query, name, dflt) {
  const v = query.get(name);
  if (v === null || v === '') return dflt;
  const n = pyInt(v);
  return n !== null && n >= 0 && n <= MAX_BYTES ? n : -1;
}

// Chunk buffers: a copy of BLOCK each, taken for one res.write and given
// back when res has flushed it. A few are kept for reuse, so a process
// holds about what its responses have queued.
const freeChunks = [];
const KEEP_CHUNKS = 16;

function takeChunk() {
  return freeChunks.pop() ?? Buffer.from(BLOCK);
}

function giveChunk(buf) {
  if (freeChunks.length < KEEP_CHUNKS) freeChunks.push(buf);
}

// writeBlocks writes n bytes of the block pattern to res in 64 KiB chunks,
// then calls done(bytes handed to res, whether all were). With
// backpressure it writes the next chunk only once res.write returned true
// or res emitted 'drain'; without, it writes them all at once.
function writeBlocks(res, n, backpressure, done) {
  let written = 0;
  const next = () => {
    while (written < n) {
      if (res.destroyed) {
        done(written, false);
        return;
      }
      const len = Math.min(BLOCK.length, n - written);
      const buf = takeChunk();
      const ok = res.write(len === buf.length ? buf : buf.subarray(0, len), () => giveChunk(buf));
      written += len;
      if (backpressure && !ok && written < n) {
        const onDrain = () => {
          res.off('close', onClose);
          next();
        };
        const onClose = () => {
          res.off('drain', onDrain);
          done(written, false);
        };
        res.once('drain', onDrain);
        res.once('close', onClose);
        return;
      }
    }
    done(written, true);
  };
  next();
}

// appendRecord appends rec as one JSON line in a single write (O_APPEND).
function appendRecord(file, rec) {
  if (!file) return;
  const line = pyJSON(rec) + '\n';
  try {
    const fd = fs.openSync(file, 'a', 0o644);
    try {
      fs.writeSync(fd, line);
    } finally {
      fs.closeSync(fd);
    }
  } catch (err) {
    log(`app-send log: ${err.message}`);
  }
}

// heldAdd adds delta to this worker's held long-polls and rewrites its
// file in place.
const held = { fd: -1, n: 0 };
function heldAdd(dir, delta) {
  if (!dir) return;
  held.n += delta;
  try {
    if (held.fd < 0) {
      held.fd = fs.openSync(path.join(dir, `held-${process.pid}`), 'w', 0o644);
    }
    fs.writeSync(held.fd, String(held.n).padStart(10) + '\n', 0);
  } catch (err) {
    log(`held long-polls: ${err.message}`);
  }
}

function fast(cfg, req, res, start) {
  res.writeHead(200, {
    'Content-Type': 'application/json',
    'Content-Length': FAST_BODY.length,
    'Server-Timing': timing(start),
  });
  res.end(FAST_BODY);
}

// octets answers n bytes, n from ?name=; body(n) writes them and ends res.
function octets(req, res, start, query, name, dflt, body) {
  const n = size(query, name, dflt);
  if (n < 0) {
    const raw = pyJSON(query.get(name) ?? '');
    sendError(res, start, 400, `${name} ${raw}: want 0..${MAX_BYTES} bytes`);
    return;
  }
  res.writeHead(200, {
    'Content-Type': 'application/octet-stream',
    'Content-Length': n,
    'Server-Timing': timing(start),
  });
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  body(n);
}

function large(cfg, req, res, start, query) {
  // Set before octets: writeHead keeps it, on the 200 and on a 400.
  const port = req.socket.remotePort;
  if (Number.isInteger(port) && port > 0) res.setHeader(PEER_PORT, String(port));
  const id = req.headers[REQUEST_ID] ?? '';
  const trace = req.headers[TRACEPARENT] ?? '';
  const backpressure = query.get('backpressure') !== 'off';
  const peer = Number.isInteger(port) && port > 0 ? port : 0;
  octets(req, res, start, query, 'size', cfg.largeSize, (n) => {
    const begin = { event: 'start', id, pid: process.pid };
    if (peer) begin.peer_port = peer;
    appendRecord(cfg.sendLog, begin);
    writeBlocks(res, n, backpressure, (written, all) => {
      const rec = { id, bytes: written, app_send_s: (performance.now() - start) / 1e3, complete: all && written === n, pid: process.pid };
      if (peer) rec.peer_port = peer;
      if (trace) rec.traceparent = trace;
      appendRecord(cfg.sendLog, rec);
      res.end();
    });
  });
}

function longpoll(cfg, req, res, start, query) {
  let wait = DEFAULT_WAIT_S;
  const raw = query.get('wait') ?? '';
  if (raw !== '') {
    wait = parseDuration(raw);
    if (wait === null || wait > MAX_WAIT_S) {
      sendError(res, start, 400, `wait ${pyJSON(raw)}: want a duration from 0s to 10m0s`);
      return;
    }
  }
  heldAdd(cfg.heldDir, 1);
  setTimeout(() => {
    heldAdd(cfg.heldDir, -1);
    res.writeHead(204, { 'Server-Timing': timing(start) });
    res.end();
  }, wait * 1e3);
}

function nbytes(cfg, req, res, start, query) {
  octets(req, res, start, query, 'n', -1, (n) => writeBlocks(res, n, true, () => res.end()));
}

// upload reads the body to its end and answers how many bytes came and how
// long reading took, waits for the client included. A client that left
// mid-body gets nothing (there is no one to answer).
function upload(cfg, req, res, start) {
  const t0 = performance.now();
  let n = 0;
  req.on('data', (chunk) => { n += chunk.length; });
  req.on('error', () => {});
  req.on('end', () => {
    const readMS = performance.now() - t0;
    const body = Buffer.from(`{"bytes": ${n}}`);
    res.writeHead(200, {
      'Content-Type': 'application/json',
      'Content-Length': body.length,
      'X-Slowlab-Body-Bytes': String(n),
      'Server-Timing': `${timing(start)}, body;dur=${readMS.toFixed(3)}`,
    });
    res.end(body);
  });
}

// Limits of /events (appserver.MinSSEInterval, MaxSSEInterval,
// MaxSSEDuration, MaxSSEPad).
const MIN_INTERVAL_S = 0.01;
const MAX_INTERVAL_S = 10;
const MAX_DURATION_S = 300;
const MAX_PAD = 64 << 10;

// sseParams reads /events' query; a string is the 400's text, the
// embedded app's ParseSSEQuery word for word.
function sseParams(query) {
  let interval = 0.1;
  let duration = 10;
  let pad = 0;
  const rawInterval = query.get('interval') ?? '';
  if (rawInterval !== '') {
    interval = parseDuration(rawInterval);
    if (interval === null || interval < MIN_INTERVAL_S || interval > MAX_INTERVAL_S) {
      return `interval ${pyJSON(rawInterval)}: want a duration from 10ms to 10s`;
    }
  }
  const rawDuration = query.get('duration') ?? '';
  if (rawDuration !== '') {
    duration = parseDuration(rawDuration);
    if (duration === null || duration > MAX_DURATION_S) {
      return `duration ${pyJSON(rawDuration)}: want a duration from 0s to 5m0s`;
    }
  }
  const rawPad = query.get('pad') ?? '';
  if (rawPad !== '') {
    pad = /^[0-9]+$/.test(rawPad) ? Number(rawPad) : -1;
    if (pad < 0 || pad > MAX_PAD) return `pad ${pyJSON(rawPad)}: want 0..${MAX_PAD} bytes`;
  }
  const accel = query.get('accel') ?? '';
  if (!['', 'yes', 'no'].includes(accel)) return `accel ${pyJSON(accel)}: want yes or no`;
  return { interval, duration, pad, accel };
}

// nowUS is the wall clock in unix microseconds, to the millisecond
// (Date.now has no finer wall clock). Not timeOrigin + now: that is the
// wall clock at start advanced by the monotonic clock, and drifts from
// the wall clock the client stamps its receipt with when the clock is
// slewed (on a fresh CI machine it ran 7 ms ahead: events "arrived"
// before they were sent). Truncated, a stamp is never ahead.
function nowUS() {
  return Date.now() * 1e3;
}

// events streams Server-Sent Events: a tick at once and then every
// interval while less than duration has passed, each stamped when
// written, then the end event (appserver.SSEEvent). The stream counts as
// held, as a long-poll does.
function events(cfg, req, res, start, query) {
  const p = sseParams(query);
  if (typeof p === 'string') {
    sendError(res, start, 400, p);
    return;
  }
  const headers = { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' };
  if (p.accel) headers['X-Accel-Buffering'] = p.accel;
  headers['Server-Timing'] = timing(start);
  res.writeHead(200, headers);
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  const n = p.duration <= 0 ? 0 : Math.ceil(Math.round(p.duration * 1e9) / Math.round(p.interval * 1e9));
  const padding = p.pad ? `, "pad": "${'a'.repeat(p.pad)}"` : '';
  heldAdd(cfg.heldDir, 1);
  let seq = 0;
  let timer = null;
  let over = false;
  const finish = () => {
    if (over) return;
    over = true;
    if (timer !== null) clearTimeout(timer);
    heldAdd(cfg.heldDir, -1);
  };
  res.on('close', finish);
  const tick = () => {
    if (res.destroyed) {
      finish();
      return;
    }
    if (seq < n) {
      res.write(`id: ${seq}\ndata: {"seq": ${seq}, "t_us": ${nowUS()}${padding}}\n\n`);
      seq++;
    } else {
      res.end(`event: end\ndata: {"events": ${n}, "t_us": ${nowUS()}}\n\n`);
      finish();
      return;
    }
    const due = start + (seq < n ? seq * p.interval : p.duration) * 1e3;
    timer = setTimeout(tick, Math.max(0, due - performance.now()));
  };
  tick();
}

const MIN_WS_INTERVAL_S = 0.001; // appserver.MinWSInterval
const MAX_WS_INTERVAL_S = 10; // appserver.MaxWSInterval
const MAX_WS_COUNT = 1000000; // appserver.MaxWSCount
const MAX_WS_MESSAGE = 16 << 20; // appserver.MaxWSMessage

// wsParams reads /ws' query; a string is the 400's text, the embedded
// app's ParseWSQuery word for word.
function wsParams(query) {
  const mode = query.get('mode') ?? '';
  if (!['', 'echo', 'push'].includes(mode)) return `mode ${pyJSON(mode)}: want echo or push`;
  let interval = 0.1;
  let count = 100;
  let pad = 0;
  const rawInterval = query.get('interval') ?? '';
  if (rawInterval !== '') {
    interval = parseDuration(rawInterval);
    if (interval === null || interval < MIN_WS_INTERVAL_S || interval > MAX_WS_INTERVAL_S) {
      return `interval ${pyJSON(rawInterval)}: want a duration from 1ms to 10s`;
    }
  }
  const rawCount = query.get('count') ?? '';
  if (rawCount !== '') {
    count = /^[0-9]+$/.test(rawCount) ? Number(rawCount) : -1;
    if (count < 0 || count > MAX_WS_COUNT) return `count ${pyJSON(rawCount)}: want 0..${MAX_WS_COUNT} messages`;
  }
  const rawPad = query.get('pad') ?? '';
  if (rawPad !== '') {
    pad = /^[0-9]+$/.test(rawPad) ? Number(rawPad) : -1;
    if (pad < 0 || pad > MAX_WS_MESSAGE) return `pad ${pyJSON(rawPad)}: want 0..${MAX_WS_MESSAGE} bytes`;
  }
  const queue = query.get('queue') ?? '';
  if (!['', 'wait', 'unbounded'].includes(queue)) return `queue ${pyJSON(queue)}: want wait or unbounded`;
  return { mode: mode || 'echo', interval, count, pad, queue: queue || 'wait' };
}

// WS_DIRS are where Debian's node-ws puts ws (/usr/share/nodejs), and the
// other directories Debian's Node.js looks in: its node finds ws there by
// itself (its global paths), a Node.js built elsewhere (NodeSource's) does
// not, and gets it from there by path.
const WS_DIRS = ['/usr/share/nodejs', '/usr/lib/nodejs', '/usr/local/share/nodejs', '/usr/local/lib/nodejs'];

// loadWS returns the ws module and the file it came from; it throws, saying
// what it tried and what to install, when there is none.
function loadWS() {
  const tried = [];
  for (const name of ['ws', ...WS_DIRS.map((d) => path.join(d, 'ws'))]) {
    try {
      return { ws: require(name), file: require.resolve(name) };
    } catch (err) {
      if (err.code !== 'MODULE_NOT_FOUND') throw new Error(`the ws module (${name}): ${err.message}`);
      tried.push(name);
    }
  }
  throw new Error(`cannot load the ws module (tried ${tried.join(', ')}): /ws needs it (apt-get install node-ws)`);
}

// wsPlain answers a GET /ws that asked no upgrade: 426, as the embedded
// app does.
function wsPlain(cfg, req, res, start) {
  const body = Buffer.from('Upgrade Required: /ws is a WebSocket\n');
  res.writeHead(426, { Upgrade: 'websocket', 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': body.length, 'Server-Timing': timing(start) });
  res.end(body);
}

// refuse answers an upgrade request it will not take, and closes.
function refuse(socket, code, reason, text) {
  const body = Buffer.from(text + '\n');
  socket.on('error', () => socket.destroy());
  socket.end(`HTTP/1.1 ${code} ${reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
}

// upgrade takes a request to switch to WebSocket: /ws only, with a good
// query, which wss (a ws WebSocketServer with noServer) then completes.
function upgrade(cfg, wss, req, socket, head) {
  const [pathInfo, query] = target(req.url);
  const key = req.headers['sec-websocket-key'];
  if (pathInfo !== '/ws') return refuse(socket, 404, 'Not Found', '404 page not found');
  if (req.method !== 'GET' || (req.headers.upgrade ?? '').toLowerCase() !== 'websocket' || !key || req.headers['sec-websocket-version'] !== '13') {
    return refuse(socket, 400, 'Bad Request', 'a WebSocket handshake wants GET, Upgrade: websocket, Sec-WebSocket-Key and Sec-WebSocket-Version: 13');
  }
  const p = wsParams(new URLSearchParams(query));
  if (typeof p === 'string') return refuse(socket, 400, 'Bad Request', p);
  wss.handleUpgrade(req, socket, head, (ws) => wsSession(cfg, ws, p));
}

// wsServer is the ws server that takes /ws' upgrades: no compression (a
// message's bytes are what the lab sends and counts), messages up to
// MAX_WS_MESSAGE (a larger one closes 1009), no set of clients kept (no
// one asks for it). ws answers pings and the client's close, and sets
// TCP_NODELAY.
function wsServer(WebSocketServer) {
  return new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: MAX_WS_MESSAGE, clientTracking: false });
}

// wsSession serves one WebSocket until either side closes it.
function wsSession(cfg, ws, p) {
  heldAdd(cfg.heldDir, 1);
  const session = { timer: null, over: false };
  ws.on('close', () => {
    if (session.over) return;
    session.over = true;
    if (session.timer !== null) clearTimeout(session.timer);
    heldAdd(cfg.heldDir, -1);
  });
  // A frame that breaks the protocol: ws closes with its code (1002,
  // 1009, ...) and emits 'error' too, which without a listener would end
  // the process.
  ws.on('error', () => {});
  if (p.mode === 'echo') {
    ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
  } else {
    wsPush(ws, p, session);
  }
}

// wsPush sends p.count stamped messages, one every p.interval from the
// start, then the close 1000 {"messages": N}. With queue=wait a message
// the socket did not take at once (ws.bufferedAmount > 0 after send: it
// waits in the process) holds the next one until ws's send callback says
// it was written; with queue=unbounded every message is sent on schedule,
// and what the socket does not take queues in the process, unbounded.
function wsPush(ws, p, session) {
  const start = performance.now();
  const padding = 'a'.repeat(p.pad);
  let seq = 0;
  const schedule = () => {
    if (session.over || ws.readyState !== ws.OPEN) return;
    session.timer = setTimeout(tick, Math.max(0, start + seq * p.interval * 1e3 - performance.now()));
  };
  const tick = () => {
    session.timer = null;
    if (session.over || ws.readyState !== ws.OPEN) return;
    if (seq >= p.count) {
      ws.close(1000, `{"messages": ${p.count}}`);
      return;
    }
    let sent = false;
    let waiting = false;
    ws.send(`{"seq": ${seq}, "t_us": ${nowUS()}, "pad": "${padding}"}`, (err) => {
      sent = true;
      if (waiting && !err) schedule();
    });
    seq++;
    if (p.queue === 'wait' && !sent && ws.bufferedAmount > 0) {
      waiting = true;
    } else {
      schedule();
    }
  };
  tick();
}

const ROUTES = new Map([['/fast', fast], ['/large', large], ['/longpoll', longpoll], ['/bytes', nbytes], ['/events', events], ['/ws', wsPlain]]);
const POST_ROUTES = new Map([['/upload', upload]]);

// target splits a request target into its path, percent-decoded as WSGI's
// PATH_INFO is (bytes as Latin-1), and its query.
function target(url) {
  if (!url.startsWith('/')) {
    try {
      const u = new URL(url);
      url = u.pathname + u.search;
    } catch {
      return ['', ''];
    }
  }
  const q = url.indexOf('?');
  const raw = q < 0 ? url : url.slice(0, q);
  const pathInfo = raw.replace(/%([0-9A-Fa-f]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16)));
  return [pathInfo, q < 0 ? '' : url.slice(q + 1)];
}

function app(cfg) {
  return (req, res) => {
    const start = performance.now();
    const [pathInfo, query] = target(req.url);
    const post = POST_ROUTES.has(pathInfo);
    const handler = post ? POST_ROUTES.get(pathInfo) : ROUTES.get(pathInfo);
    const allowed = post ? ['POST'] : ['GET', 'HEAD'];
    if (handler === undefined) {
      sendError(res, start, 404, '404 page not found');
      return;
    }
    if (!allowed.includes(req.method)) {
      const body = Buffer.from('Method Not Allowed\n');
      res.writeHead(405, {
        Allow: allowed.join(', '),
        'Content-Type': 'text/plain; charset=utf-8',
        'Content-Length': body.length,
        'Server-Timing': timing(start),
      });
      res.end(body);
      return;
    }
    handler(cfg, req, res, start, new URLSearchParams(query));
  };
}

function readyLine(port) {
  return `ready listen=127.0.0.1:${port}\n`;
}

// serve runs the app in this process: a cluster worker, or the only
// process.
function serve(cfg, ws) {
  const server = http.createServer(app(cfg));
  const wss = wsServer(ws.WebSocketServer);
  server.on('upgrade', (req, socket, head) => upgrade(cfg, wss, req, socket, head));
  server.on('error', (err) => {
    log(`listen: ${err.message}`);
    process.exit(1);
  });
  server.listen(0, '127.0.0.1', () => {
    if (!cluster.isWorker) process.stderr.write(readyLine(server.address().port));
  });
}

// primary forks the workers, prints the ready line once each listens, and
// keeps them running until SIGTERM.
function primary(cfg) {
  cluster.schedulingPolicy = cluster.SCHED_RR;
  const live = new Set(); // workers not yet exited
  const ports = new Map(); // listening workers' ports
  let ready = false;
  let stopping = false;
  let exitCode = 0;

  const fork = () => live.add(cluster.fork().id);
  const stop = (code) => {
    if (stopping) return;
    stopping = true;
    exitCode = code;
    for (const w of Object.values(cluster.workers)) {
      if (live.has(w.id)) w.process.kill('SIGTERM');
    }
    if (live.size === 0) process.exit(exitCode);
  };

  cluster.on('listening', (worker, addr) => {
    ports.set(worker.id, addr.port);
    if (ready || ports.size < cfg.workers) return;
    const distinct = new Set(ports.values());
    if (distinct.size !== 1) {
      log(`workers listen on different ports: ${[...distinct].join(', ')}`);
      stop(1);
      return;
    }
    ready = true;
    process.stderr.write(readyLine(addr.port));
  });
  cluster.on('exit', (worker, code, signal) => {
    live.delete(worker.id);
    ports.delete(worker.id);
    if (stopping) {
      if (live.size === 0) process.exit(exitCode);
      return;
    }
    log(`worker ${worker.process.pid} exited (${signal ?? 'code ' + code})`);
    if (!ready) {
      stop(1);
      return;
    }
    fork();
  });
  process.on('SIGTERM', () => stop(0));
  process.on('SIGINT', () => stop(0));
  for (let i = 0; i < cfg.workers; i++) fork();
}

// main serves; `node app.js --ws-version` prints the version of the ws
// module it would serve /ws with, and the file, then exits (the lab's
// environment.json records it).
function main() {
  let cfg;
  let ws;
  try {
    ws = loadWS();
    if (process.argv[2] === '--ws-version') {
      const pkg = require(path.join(path.dirname(ws.file), 'package.json'));
      process.stdout.write(`${pkg.version} ${ws.file}\n`);
      return;
    }
    cfg = config(process.env);
  } catch (err) {
    log(err.message);
    process.exit(2);
  }
  if (cfg.workers > 1 && cluster.isPrimary) {
    primary(cfg);
  } else {
    serve(cfg, ws.ws);
  }
}

main();
