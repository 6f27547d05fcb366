// The real Direct Line client (npm botframework-directlinejs, the version botframework-webchat
// 4.18.1 pins) against the service: a token from the secret, 20 sends echoed over WebSocket and
// over polling with what the client sent intact, then a resume by conversationId + watermark
// without duplicates.
//
// Run: npm --prefix webchat-demo run test:node (needs Go to build cmd/directline).

import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { WebSocket } from 'ws';

const require = createRequire(import.meta.url);

// directlinejs expects a browser: it takes WebSocket and XMLHttpRequest from the global scope,
// and it only uses WebSocket when a global one exists.
globalThis.WebSocket = WebSocket;
globalThis.XMLHttpRequest = require('xhr2');

const { DirectLine } = require('botframework-directlinejs');

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SECRET = 'test-secret';
const USER_ID = 'dl-user';
const MESSAGES = 20;

// A hang guard for each test, not a speed assertion.
const GUARD = { timeout: 60_000 };

let workDir;
let server;
let baseURL;

before(async () => {
  workDir = mkdtempSync(join(tmpdir(), 'directlinejs-'));
  const binary = join(workDir, 'directline');

  execFileSync('go', ['build', '-o', binary, './cmd/directline'], { cwd: repoRoot, stdio: ['ignore', 'ignore', 'inherit'] });

  server = spawn(
    binary,
    ['--addr', '127.0.0.1:0', '--data', join(workDir, 'dl.db'), '--secret', SECRET, '--bot-endpoint', 'none'],
    { stdio: ['ignore', 'pipe', 'pipe'] }
  );

  // The request log stays out of the test report unless the server fails to start.
  let log = '';

  server.stderr.on('data', chunk => {
    log = (log + chunk).slice(-8192);
  });

  baseURL = await new Promise((resolvePromise, reject) => {
    let output = '';

    server.once('exit', code => reject(new Error(`directline exited with ${code} before listening: ${output}${log}`)));
    server.stdout.on('data', chunk => {
      output += chunk;

      const match = /listening on (\S+)/u.exec(output);

      if (match) {
        resolvePromise(`http://${match[1]}`);
      }
    });
  });
});

after(() => {
  server?.kill('SIGTERM');
  workDir && rmSync(workDir, { force: true, recursive: true });
});

async function generateToken() {
  const res = await fetch(`${baseURL}/v3/directline/tokens/generate`, {
    method: 'POST',
    headers: { authorization: `Bearer ${SECRET}` }
  });

  assert.equal(res.status, 200, await res.clone().text());

  const body = await res.json();

  assert.equal(typeof body.token, 'string');
  assert.equal(typeof body.conversationId, 'string');

  return body;
}

function connect(options) {
  return new DirectLine({ domain: `${baseURL}/v3/directline`, pollingInterval: 200, ...options });
}

// Records every activity the client delivers; until() resolves once the predicate holds.
function record(directLine) {
  const activities = [];
  const waiters = [];
  const errors = [];

  const subscription = directLine.activity$.subscribe({
    next(activity) {
      activities.push(activity);
      waiters.filter(w => w.predicate(activities)).forEach(w => w.resolve());
    },
    error(error) {
      errors.push(error);
      waiters.forEach(w => w.reject(error));
    }
  });

  return {
    activities,
    errors,
    until: predicate =>
      predicate(activities)
        ? Promise.resolve()
        : new Promise((resolvePromise, reject) => waiters.push({ predicate, resolve: resolvePromise, reject })),
    stop() {
      subscription.unsubscribe();
      directLine.end();
    }
  };
}

// localTimestamp as Web Chat writes it (the user's clock with its offset), with trailing zeros
// that a parse-and-format round trip would lose.
function localTimestampOf(i) {
  const offsets = ['+09:00', '-03:30', '+00:00', '+05:45'];

  return `2025-01-02T03:04:${String(i % 60).padStart(2, '0')}.${i % 2 ? '500' : '000'}${offsets[i % offsets.length]}`;
}

function outgoing(tag, i) {
  return {
    type: 'message',
    from: { id: USER_ID, name: 'User', role: 'user' },
    text: `${tag} message ${i}`,
    textFormat: 'plain',
    locale: 'en-US',
    localTimestamp: localTimestampOf(i),
    localTimezone: 'Asia/Tokyo',
    channelData: { clientActivityID: `${tag}-${i}`, custom: { kept: [i, 'x'] } }
  };
}

function post(directLine, activity) {
  return new Promise((resolvePromise, reject) =>
    directLine.postActivity(activity).subscribe({ next: resolvePromise, error: reject })
  );
}

const echoesOf = (activities, tag) =>
  activities.filter(a => a.from?.id === USER_ID && a.channelData?.clientActivityID?.startsWith(`${tag}-`));

// Sends MESSAGES messages one after another and checks their echoes, in order.
async function sendAndCheckEchoes(directLine, recorder, tag) {
  const sent = [];
  const ids = [];

  for (let i = 0; i < MESSAGES; i++) {
    const activity = outgoing(tag, i);

    sent.push(activity);
    ids.push(await post(directLine, activity));
  }

  await recorder.until(activities => echoesOf(activities, tag).length >= MESSAGES);

  // directlinejs may interleave the activities of different stream frames, so echoes are
  // matched to their sends by clientActivityID rather than by arrival order.
  const echoes = echoesOf(recorder.activities, tag);

  assert.equal(echoes.length, MESSAGES, 'one echo per message');

  let lastSequenceID = -Infinity;

  sent.forEach((activity, i) => {
    const echo = echoes.find(e => e.channelData.clientActivityID === activity.channelData.clientActivityID);

    assert.ok(echo, `echo ${i}: received`);
    assert.equal(echo.id, ids[i], `echo ${i}: the id postActivity returned`);
    assert.equal(echo.localTimestamp, activity.localTimestamp, `echo ${i}: localTimestamp`);
    assert.equal(echo.localTimezone, activity.localTimezone, `echo ${i}: localTimezone`);
    assert.deepEqual(echo.channelData.custom, activity.channelData.custom, `echo ${i}: channelData`);
    assert.equal(echo.text, activity.text, `echo ${i}: text`);

    // Sends were sequential, so the service numbered them in this order.
    const sequenceID = echo.channelData['webchat:sequence-id'];

    assert.ok(Number.isInteger(sequenceID), `echo ${i}: integer webchat:sequence-id, got ${sequenceID}`);
    assert.ok(sequenceID > lastSequenceID, `echo ${i}: sequence id ${sequenceID} after ${lastSequenceID}`);
    lastSequenceID = sequenceID;
  });

  return { ids, sent };
}

// The raw history must carry each localTimestamp byte for byte and integer sequence ids.
async function checkRawHistory(conversationId, token, sent) {
  const res = await fetch(`${baseURL}/v3/directline/conversations/${conversationId}/activities`, {
    headers: { authorization: `Bearer ${token}` }
  });

  assert.equal(res.status, 200);

  const raw = await res.text();

  for (const activity of sent) {
    assert.ok(
      raw.includes(`"localTimestamp":${JSON.stringify(activity.localTimestamp)}`),
      `raw history carries localTimestamp ${activity.localTimestamp} unchanged`
    );
  }

  assert.doesNotMatch(raw, /"webchat:sequence-id":\s*(?:"|-?\d+\.\d|-?\d+[eE])/u, 'sequence ids are JSON integers');
}

for (const webSocket of [true, false]) {
  const transport = webSocket ? 'WebSocket' : 'polling';

  test(`directlinejs over ${transport}: 20 echoes keep clientActivityID, localTimestamp and get integer sequence ids`, GUARD, async () => {
    const { conversationId, token } = await generateToken();
    const directLine = connect({ token, webSocket });
    const recorder = record(directLine);

    try {
      const { sent } = await sendAndCheckEchoes(directLine, recorder, transport);

      assert.equal(directLine.conversationId, conversationId);
      assert.deepEqual(recorder.errors, []);
      await checkRawHistory(conversationId, token, sent);
    } finally {
      recorder.stop();
    }
  });

  test(`directlinejs over ${transport}: resuming with conversationId + watermark delivers no duplicates`, GUARD, async () => {
    const { conversationId, token } = await generateToken();
    const first = connect({ token, webSocket });
    const firstRecorder = record(first);
    let watermark;

    try {
      await sendAndCheckEchoes(first, firstRecorder, 'before');
      watermark = first.watermark;
    } finally {
      firstRecorder.stop();
    }

    assert.ok(watermark, 'the client holds a watermark');

    // Messages sent while this client is away (another tab, say).
    const away = connect({ token, conversationId, webSocket: false });

    try {
      for (let i = 0; i < 5; i++) {
        await post(away, outgoing('away', i));
      }
    } finally {
      away.end();
    }

    const resumed = connect({ token, conversationId, watermark, webSocket });
    const recorder = record(resumed);

    try {
      // directlinejs emits the activities of one stream frame on later ticks, so a live echo can
      // overtake replayed history; wait for every expected name, then compare as a multiset.
      const expected = ['after-0', 'after-1', 'away-0', 'away-1', 'away-2', 'away-3', 'away-4'];
      const nameOf = activity => activity.channelData?.clientActivityID ?? activity.id;

      await post(resumed, outgoing('after', 0));
      await post(resumed, outgoing('after', 1));
      await recorder.until(activities => expected.every(name => activities.some(a => nameOf(a) === name)));

      assert.deepEqual(recorder.activities.map(nameOf).sort(), expected, 'only what came after the watermark');
      assert.equal(new Set(recorder.activities.map(a => a.id)).size, recorder.activities.length, 'no id twice');
      assert.deepEqual(recorder.errors, []);
    } finally {
      recorder.stop();
    }
  });
}
