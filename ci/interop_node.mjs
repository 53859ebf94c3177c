// Node.js fetch (undici, built in) against examples/echo (called by
// ci/interop.sh).
//
//     node ci/interop_node.mjs PORT
//
// No npm packages. Prints an `ok - ...` line per check that passes and a
// `NOT OK - ...` line per check that fails (on stderr), runs every check, and
// exits 1 if any failed. Connections are counted, and the bytes undici
// writes are looked at, through undici's diagnostics channels.
import { randomBytes } from 'node:crypto';
import diagnostics from 'node:diagnostics_channel';
import { setTimeout as sleep } from 'node:timers/promises';

const base = `http://127.0.0.1:${process.argv[2]}`;
const TIMEOUT_MS = 30_000;
let failed = false;

const ok = (what) => console.log(`ok - node fetch: ${what}`);
const notOk = (what) => {
  console.error(`NOT OK - node fetch: ${what}`);
  failed = true;
};

// Connections opened, and the start of every write undici makes on them
// (request heads, and the chunk-size lines of a chunked body).
let connections = 0;
let writes = [];
diagnostics.subscribe('undici:client:connected', ({ socket }) => {
  connections += 1;
  const write = socket.write;
  socket.write = function (chunk, ...rest) {
    writes.push(Buffer.from(chunk).subarray(0, 1024).toString('latin1'));
    return write.call(this, chunk, ...rest);
  };
});

async function request(path, init = {}) {
  const res = await fetch(base + path, { signal: AbortSignal.timeout(TIMEOUT_MS), ...init });
  return { status: res.status, body: new Uint8Array(await res.arrayBuffer()) };
}

const equal = (a, b) => Buffer.from(a).equals(Buffer.from(b));

// Runs one check; an exception (a network error, a timeout) fails it.
async function check(name, body) {
  try {
    await body();
  } catch (err) {
    notOk(`${name}: ${err}${err.cause ? ` (${err.cause})` : ''}`);
  }
}

// Sequential requests all succeed on undici's pooled connections. The count
// is reported, not checked: undici 6 opens a second connection for the
// second request (the first is not yet back in its pool when the next fetch
// starts), against Node's own http server too; after that it reuses them.
await check('50 sequential GETs', async () => {
  const before = connections;
  for (let i = 0; i < 50; i++) {
    const { status } = await request(`/get/${i}`);
    if (status !== 200) return notOk(`50 sequential GETs: request ${i} answered ${status}`);
  }
  ok(`50 sequential GETs: all 200, on ${connections - before} connection(s)`);
});

// A body of known length goes out with Content-Length; the echo is exact.
await check('200 KB POST', async () => {
  const want = new Uint8Array(randomBytes(200_000));
  const { status, body } = await request('/post', { method: 'POST', body: want });
  if (status !== 200 || !equal(body, want)) {
    return notOk(`200 KB POST: ${status}, echoed ${body.length} bytes of ${want.length}, equal ${equal(body, want)}`);
  }
  ok('POST of a 200 KB Uint8Array echoed exactly');
});

// A ReadableStream body has no length: undici sends it chunked (RFC 9112
// §7.1) and the server decodes it; the echo is exact.
await check('streamed POST', async () => {
  const want = new Uint8Array(randomBytes(200_000));
  let offset = 0;
  const stream = new ReadableStream({
    pull(controller) {
      // Uneven pieces, so chunk boundaries fall anywhere.
      const piece = want.subarray(offset, offset + 7919);
      offset += piece.length;
      if (piece.length === 0) controller.close();
      else controller.enqueue(piece);
    },
  });
  writes = [];
  const { status, body } = await request('/stream', { method: 'POST', body: stream, duplex: 'half' });
  const chunked = writes.some((w) => /^POST \/stream [^]*\r\ntransfer-encoding: chunked\r\n/i.test(w));
  if (status !== 200 || !equal(body, want) || !chunked) {
    return notOk(`streamed POST: ${status}, sent chunked ${chunked}, echoed ${body.length} bytes of ${want.length}, ` +
      `equal ${equal(body, want)}`);
  }
  ok("streamed POST (ReadableStream, duplex: 'half', Transfer-Encoding: chunked, 200 KB) echoed exactly");
});

// Concurrency: 32 requests at once, each body distinct so a mixed-up answer
// shows.
await check('32 concurrent requests', async () => {
  const before = connections;
  const results = await Promise.allSettled(
    Array.from({ length: 32 }, (_, i) => {
      const want = `request ${i} ${'x'.repeat(i * 100)}`;
      return request(`/concurrent/${i}`, { method: 'POST', body: want }).then(({ status, body }) =>
        status === 200 && Buffer.from(body).toString() === want ? null : `request ${i}: ${status}`);
    }),
  );
  const bad = results.map((r) => (r.status === 'rejected' ? String(r.reason) : r.value)).filter((e) => e !== null);
  if (bad.length > 0) return notOk(`32 concurrent requests: ${bad.length} failed, first: ${bad[0]}`);
  ok(`32 concurrent POSTs: all 200, bodies echoed, ${connections - before} new connection(s)`);
});

// Keep-alive past the server's idle timeout (5 s by default): the next
// request must still succeed. undici drops an idle connection after its own
// keep-alive timeout (4 s by default) or when the server closes it.
await check('a request after the idle timeout', async () => {
  const first = await request('/before-idle');
  if (first.status !== 200) return notOk(`request before the idle wait: ${first.status}`);
  await sleep(6_000); // the client's pace: longer than the server's idle timeout
  const before = connections;
  const { status } = await request('/after-idle');
  if (status !== 200) return notOk(`request 6 s after the first (idle timeout 5 s): ${status}`);
  const conn = connections > before ? 'a new connection' : 'the idle connection reused';
  ok(`a request 6 s after the first (idle timeout 5 s) succeeds, on ${conn}`);
});

process.exit(failed ? 1 : 0);
