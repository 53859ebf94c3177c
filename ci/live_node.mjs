// Node.js clients against examples/broadcast (called by ci/live.sh).
//
//     LIVE_NODE_MODULES=DIR node ci/live_node.mjs PORT
//
// A WebSocket client from the `ws` package (Node 20 has no WebSocket of its
// own), found in DIR/node_modules where ci/live.sh installed it: echo of two
// texts, at least two broadcasts (all digits, increasing, close to now), a
// close with 1000 answered with 1000. And an SSE reader on /events with
// Node's fetch, parsing the event-stream format from the body's byte stream:
// at least two events with increasing timestamps.
//
// Prints an `ok - ...` line per check that passes and a `NOT OK - ...` line
// (on stderr) per check that fails, runs every check, and exits 1 if any
// failed. Every wait is bounded.
import { createRequire } from 'node:module';
import { resolve } from 'node:path';

const require = createRequire(resolve(process.env.LIVE_NODE_MODULES ?? '.', 'package.json'));
const WebSocket = require('ws');

const port = process.argv[2];
const CHECK_MS = 10_000;
const SKEW_MS = 1500;
let failed = false;
// What the running check has seen so far, shown when it times out.
let progress = {};

const ok = (what) => console.log(`ok - node ${what}`);
const notOk = (what) => {
  console.error(`NOT OK - node ${what}`);
  failed = true;
};

class CheckFailed extends Error {}

const expect = (what, got, want) => {
  if (got !== want) {
    throw new CheckFailed(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  }
};

// The contract: a message that is all digits is a broadcast.
const isBroadcast = (text) => /^[0-9]+$/.test(text);

// At least two, strictly increasing, each within SKEW_MS of its arrival.
function checkTimestamps(what, stamps, arrived) {
  if (stamps.length < 2) throw new CheckFailed(`${what}: ${stamps.length} broadcasts, want at least 2`);
  const values = stamps.map(Number);
  values.forEach((v, i) => {
    if (i > 0 && v <= values[i - 1]) throw new CheckFailed(`${what}: timestamps not increasing: ${values}`);
    if (Math.abs(arrived[i] - v) > SKEW_MS) {
      throw new CheckFailed(`${what}: timestamp ${v} is ${arrived[i] - v} ms from its arrival`);
    }
  });
  return values;
}

// Runs one check, bounded; an exception (a timeout, a reset) fails it.
async function check(name, body) {
  progress = {};
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => {
      reject(new CheckFailed(`no result within ${CHECK_MS} ms; had seen ${JSON.stringify(progress)}`));
    }, CHECK_MS);
  });
  try {
    ok(`${name}: ${await Promise.race([body(), timeout])}`);
  } catch (err) {
    notOk(`${name}: ${err.message ?? err}${err.cause ? ` (${err.cause})` : ''}`);
  } finally {
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------- ws

// Resolves with the messages in arrival order, as a queue the check pulls
// from; rejects on an error or an early close.
function openSocket(url) {
  const ws = new WebSocket(url);
  const queue = [];
  let waiter = null;
  const push = (item) => {
    if (waiter) {
      const w = waiter;
      waiter = null;
      w(item);
    } else {
      queue.push(item);
    }
  };
  ws.on('message', (data, isBinary) => push({ data, isBinary, at: Date.now() }));
  ws.on('close', (code, reason) => push({ closed: code, reason: reason.toString() }));
  ws.on('error', (err) => push({ error: err }));
  const next = () =>
    new Promise((resolve) => {
      if (queue.length) resolve(queue.shift());
      else waiter = resolve;
    });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, next }));
    ws.once('error', reject);
  });
}

await check('ws /ws', async () => {
  const { ws, next } = await openSocket(`ws://127.0.0.1:${port}/ws`);
  const sent = ['node says hello', 'ünïcode and emoji 🚀'];
  sent.forEach((text) => ws.send(text));
  const echoes = [];
  const stamps = [];
  const arrived = [];
  progress = { echoes, broadcasts: stamps };
  while (echoes.length < sent.length || stamps.length < 2) {
    const m = await next();
    if (m.error) throw m.error;
    if (m.closed !== undefined) {
      throw new CheckFailed(`closed by the server (${m.closed}) before the echoes and broadcasts`);
    }
    if (m.isBinary) throw new CheckFailed(`a binary message of ${m.data.length} bytes`);
    const text = m.data.toString('utf8');
    if (isBroadcast(text)) {
      stamps.push(text);
      arrived.push(m.at);
    } else {
      echoes.push(text);
    }
  }
  expect('echoes, in order', JSON.stringify(echoes), JSON.stringify(sent));
  const values = checkTimestamps('broadcasts', stamps, arrived);
  progress.step = 'closing';
  ws.close(1000, 'done');
  let m;
  do {
    m = await next(); // broadcasts may still arrive before the server's close
  } while (m.data !== undefined);
  if (m.error) throw m.error;
  expect('close code from the server', m.closed, 1000);
  return (
    `${sent.length} texts echoed exactly and in order, ${values.length} broadcasts increasing (${values}), ` +
    'close answered with 1000'
  );
});

// ---------------------------------------------------------------- SSE

// The event-stream format (HTML Living Standard, "Parsing an event stream"):
// lines end in CRLF, LF or CR (a CRLF may be split between two chunks); ':'
// starts a comment; `data` lines are joined with '\n'; a blank line
// dispatches the event unless it has no data.
class SseParser {
  constructor() {
    this.buf = '';
    this.skipLf = false;
    this.data = [];
    this.event = '';
  }

  feed(text) {
    if (this.skipLf && text.startsWith('\n')) text = text.slice(1);
    this.skipLf = false;
    this.buf += text;
    const events = [];
    let m;
    while ((m = /\r\n|\r|\n/.exec(this.buf))) {
      // A CR that ends the buffer may be the first half of a CRLF.
      if (m[0] === '\r' && m.index === this.buf.length - 1) this.skipLf = true;
      const line = this.buf.slice(0, m.index);
      this.buf = this.buf.slice(m.index + m[0].length);
      const event = this.line(line);
      if (event) events.push(event);
    }
    return events;
  }

  line(line) {
    if (line === '') {
      const event = this.data.length ? { type: this.event || 'message', data: this.data.join('\n') } : null;
      this.data = [];
      this.event = '';
      return event;
    }
    if (line.startsWith(':')) return null;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    return null;
  }
}

await check('fetch SSE /events', async () => {
  const controller = new AbortController();
  const res = await fetch(`http://127.0.0.1:${port}/events`, { signal: controller.signal });
  expect('status', res.status, 200);
  expect('Content-Type', (res.headers.get('content-type') ?? '').split(';')[0].trim(), 'text/event-stream');
  const parser = new SseParser();
  const decoder = new TextDecoder();
  const stamps = [];
  const arrived = [];
  const reader = res.body.getReader();
  progress = { events: stamps, parser };
  try {
    while (stamps.length < 2) {
      const { done, value } = await reader.read();
      if (done) throw new CheckFailed(`the stream ended after ${stamps.length} events`);
      const at = Date.now();
      for (const event of parser.feed(decoder.decode(value, { stream: true }))) {
        expect('event type', event.type, 'message');
        if (!isBroadcast(event.data)) {
          throw new CheckFailed(`event data ${JSON.stringify(event.data)} is not a timestamp`);
        }
        stamps.push(event.data);
        arrived.push(at);
      }
    }
  } finally {
    controller.abort();
  }
  const values = checkTimestamps('SSE', stamps, arrived);
  return `${values.length} events from the body stream, increasing timestamps (${values})`;
});

process.exit(failed ? 1 : 0);
