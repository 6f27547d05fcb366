// A real, unmodified botbuilder-js bot (npm botbuilder, CloudAdapter, empty app id; see
// bots/echo-bot.mjs) behind the service, driven by the real Direct Line client
// (botframework-directlinejs): the bot is reached at --bot-endpoint and answers through the Bot
// Connector API at the serviceUrl the service gives it.
//
// Run: npm --prefix webchat-demo run test:node (needs Go to build cmd/directline).

import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { WebSocket } from 'ws';

const require = createRequire(import.meta.url);

// directlinejs expects a browser: it takes WebSocket and XMLHttpRequest from the global scope,
// and it only uses WebSocket when a global one exists.
globalThis.WebSocket = WebSocket;
globalThis.XMLHttpRequest = require('xhr2');

const { ConnectionStatus, DirectLine } = require('botframework-directlinejs');

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '..', '..');
const SECRET = 'test-secret';
const USER_ID = 'dl_user1';
const MESSAGES = 10;

// Hang guards, not speed assertions: every wait fails with what it was waiting for.
const WAIT_MS = 20_000;
const BUILD_MS = 300_000;
const STOP_MS = 5_000;

const SEQUENCE_ID = 'webchat:sequence-id';

// Signal wakes everyone waiting in until() whenever the state they check may have changed.
class Signal {
  #waiters = new Set();

  notify() {
    for (const wake of this.#waiters) {
      wake();
    }
  }

  // until resolves with check()'s first result other than undefined; check may throw to fail the
  // wait early. Rejects after ms with "timed out waiting for <what>" and describe()'s text.
  until(check, what, { ms = WAIT_MS, describe: explain = () => '' } = {}) {
    return new Promise((resolvePromise, reject) => {
      const finish = (fn, value) => {
        clearTimeout(timer);
        this.#waiters.delete(wake);
        fn(value);
      };
      const wake = () => {
        try {
          const value = check();

          if (value !== undefined) {
            finish(resolvePromise, value);
          }
        } catch (error) {
          finish(reject, error);
        }
      };
      const timer = setTimeout(
        () => finish(reject, new Error(`timed out after ${ms} ms waiting for ${what}\n${explain()}`)),
        ms
      );

      this.#waiters.add(wake);
      wake();
    });
  }
}

// Child is a spawned process whose stdout lines are kept and whose stderr tail is kept for
// failure messages.
class Child {
  lines = [];
  stderr = '';
  exit = undefined;
  changed = new Signal();

  constructor(name, command, args) {
    this.name = name;
    this.process = spawn(command, args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    createInterface({ input: this.process.stdout }).on('line', line => {
      this.lines.push(line);
      this.changed.notify();
    });
    this.process.stderr.on('data', chunk => {
      this.stderr = (this.stderr + chunk).slice(-8192);
    });
    this.process.on('exit', (code, signal) => {
      this.exit = { code, signal };
      this.changed.notify();
    });
  }

  report() {
    return `--- ${this.name} stdout (last lines) ---\n${this.lines.slice(-40).join('\n')}\n--- ${this.name} stderr (tail) ---\n${this.stderr}`;
  }

  // firstMatch waits for a stdout line matching re and returns the match; the process exiting
  // first fails the wait.
  firstMatch(re, what) {
    return this.changed.until(
      () => {
        for (const line of this.lines) {
          const match = re.exec(line);

          if (match) {
            return match;
          }
        }
        if (this.exit) {
          throw new Error(`${this.name} exited (${JSON.stringify(this.exit)}) before ${what}\n${this.report()}`);
        }

        return undefined;
      },
      what,
      { describe: () => this.report() }
    );
  }

  async stop() {
    if (this.exit || this.process.exitCode !== null) {
      return;
    }
    this.process.kill('SIGTERM');
    try {
      await this.changed.until(() => this.exit, `${this.name} to exit`, { ms: STOP_MS });
    } catch {
      this.process.kill('SIGKILL');
    }
  }
}

const BOT_EVENT = /^echo-bot event (.*)$/u;

function botEvents(bot) {
  return bot.lines.flatMap(line => {
    const match = BOT_EVENT.exec(line);

    return match ? [JSON.parse(match[1])] : [];
  });
}

function take(observable, what) {
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => {
      subscription.unsubscribe();
      reject(new Error(`timed out after ${WAIT_MS} ms waiting for ${what}`));
    }, WAIT_MS);
    const subscription = observable.subscribe({
      next(value) {
        clearTimeout(timer);
        resolvePromise(value);
      },
      error(error) {
        clearTimeout(timer);
        reject(error);
      }
    });
  });
}

const isBotActivity = activity => activity.from?.id !== USER_ID;
const sequenceIDOf = activity => activity.channelData?.[SEQUENCE_ID];

describe('a botbuilder-js bot behind the service', () => {
  let workDir;
  let bot;
  let server;
  let baseURL;
  let token;
  let conversationId;
  let directLine;

  // What the client sees: every activity directlinejs delivers, every status it reports, every
  // error on its streams.
  const seen = [];
  const statuses = [];
  const clientErrors = [];
  const clientChanged = new Signal();
  let activitySubscription;
  let statusSubscription;

  const describeClient = () =>
    `--- client activities ---\n${seen
      .map(a => `${a.id} seq=${sequenceIDOf(a)} from=${a.from?.id} replyToId=${a.replyToId} ${JSON.stringify(a.text)}`)
      .join('\n')}\n--- client statuses: ${statuses.join(',')} errors: ${clientErrors.join('; ')}\n${bot?.report()}\n${server?.report()}`;

  const waitForClient = (check, what) => clientChanged.until(check, what, { describe: describeClient });

  const waitForBotEvent = (predicate, what) =>
    bot.changed.until(
      () => {
        const events = botEvents(bot);
        const found = events.find(predicate);

        if (found) {
          return found;
        }

        const failed = events.find(e => e.event === 'turnError');

        if (failed) {
          throw new Error(`a bot turn failed: ${failed.message}\n${failed.stack}\n${describeClient()}`);
        }
        if (bot.exit) {
          throw new Error(`echo bot exited (${JSON.stringify(bot.exit)})\n${bot.report()}`);
        }

        return undefined;
      },
      what,
      { describe: describeClient }
    );

  async function post(text) {
    const id = await take(directLine.postActivity({ type: 'message', from: { id: USER_ID }, text }), `postActivity(${text})`);

    // directlinejs reports a failed send (5xx, network error) as the id "retry".
    assert.equal(typeof id, 'string', `postActivity(${text}) id`);
    assert.notEqual(id, 'retry', `postActivity(${text}) failed\n${describeClient()}`);

    return id;
  }

  async function history() {
    const res = await fetch(`${baseURL}/v3/directline/conversations/${encodeURIComponent(conversationId)}/activities`, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(WAIT_MS)
    });

    assert.equal(res.status, 200, await res.clone().text());

    return (await res.json()).activities;
  }

  before(
    async () => {
      workDir = mkdtempSync(join(tmpdir(), 'botbuilder-'));

      const binary = join(workDir, 'directline');

      await new Promise((resolvePromise, reject) =>
        execFile('go', ['build', '-o', binary, './cmd/directline'], { cwd: repoRoot, timeout: BUILD_MS }, (error, _, stderr) =>
          error ? reject(new Error(`go build ./cmd/directline: ${error.message}\n${stderr}`)) : resolvePromise()
        )
      );

      bot = new Child('echo bot', process.execPath, [join(here, 'bots', 'echo-bot.mjs'), '--listen']);

      const [, botEndpoint] = await bot.firstMatch(/^echo-bot listening on (\S+)$/u, 'the echo bot to listen');

      server = new Child('directline', binary, [
        '--addr',
        '127.0.0.1:0',
        '--data',
        join(workDir, 'dl.db'),
        '--secret',
        SECRET,
        '--bot-endpoint',
        botEndpoint,
        '--log-level',
        'warn'
      ]);
      [, baseURL] = await server.firstMatch(/^listening on \S+ \(public URL (\S+)\)$/u, 'the service to listen');

      const res = await fetch(`${baseURL}/v3/directline/tokens/generate`, {
        method: 'POST',
        headers: { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' },
        body: JSON.stringify({ user: { id: USER_ID } }),
        signal: AbortSignal.timeout(WAIT_MS)
      });

      assert.equal(res.status, 200, await res.clone().text());
      ({ token, conversationId } = await res.json());

      directLine = new DirectLine({ domain: `${baseURL}/v3/directline`, token, webSocket: true });
      statusSubscription = directLine.connectionStatus$.subscribe(status => {
        statuses.push(status);
        clientChanged.notify();
      });
      activitySubscription = directLine.activity$.subscribe({
        next(activity) {
          seen.push(activity);
          clientChanged.notify();
        },
        error(error) {
          clientErrors.push(String(error?.stack ?? error));
          clientChanged.notify();
        }
      });
      await waitForClient(() => (statuses.includes(ConnectionStatus.Online) ? true : undefined), 'the client to be Online');
    },
    { timeout: BUILD_MS + 4 * WAIT_MS }
  );

  after(async () => {
    activitySubscription?.unsubscribe();
    statusSubscription?.unsubscribe();
    directLine?.end();
    await Promise.all([server?.stop(), bot?.stop()]);
    workDir && rmSync(workDir, { force: true, recursive: true });
  });

  it(`answers ${MESSAGES} messages with ${MESSAGES} replies whose replyToId is the message's id and whose sequence id is larger`, async () => {
    const ids = [];

    for (let i = 1; i <= MESSAGES; i++) {
      ids.push(await post(`message ${i}`));
    }
    assert.equal(new Set(ids).size, MESSAGES, 'distinct ids');

    await waitForClient(
      () => (ids.every(id => seen.some(a => a.id === id) && seen.some(a => isBotActivity(a) && a.replyToId === id)) ? true : undefined),
      `the echo of and the reply to each of the ${MESSAGES} messages`
    );

    const echoReplies = seen.filter(a => isBotActivity(a) && a.type === 'message' && a.text?.startsWith('Echo: '));

    assert.equal(new Set(echoReplies.map(a => a.id)).size, MESSAGES, `exactly ${MESSAGES} bot replies\n${describeClient()}`);

    ids.forEach((id, index) => {
      const text = `message ${index + 1}`;
      const echo = seen.find(a => a.id === id);
      const replies = echoReplies.filter(a => a.replyToId === id);

      assert.equal(echo.text, text, `echo of ${id}`);
      assert.equal(echo.from.id, USER_ID, `echo of ${id}: from`);
      assert.equal(new Set(replies.map(a => a.id)).size, 1, `one reply to ${id}`);

      const [reply] = replies;

      assert.equal(reply.text, `Echo: ${text}`, `reply to ${id}`);
      assert.ok(Number.isInteger(sequenceIDOf(echo)), `echo of ${id}: integer ${SEQUENCE_ID}, got ${sequenceIDOf(echo)}`);
      assert.ok(Number.isInteger(sequenceIDOf(reply)), `reply to ${id}: integer ${SEQUENCE_ID}, got ${sequenceIDOf(reply)}`);
      assert.ok(
        sequenceIDOf(reply) > sequenceIDOf(echo),
        `reply ${reply.id} (${sequenceIDOf(reply)}) after message ${id} (${sequenceIDOf(echo)})`
      );
    });
  });

  it('runs onMembersAdded once, with the user, and the welcome reaches the client', async () => {
    // By now the bot has handled every message, so a conversationUpdate sent for any of them
    // would already show here (field case R17).
    await waitForClient(
      () => (seen.some(a => isBotActivity(a) && a.text === `Welcome, ${USER_ID}`) ? true : undefined),
      'the welcome message'
    );

    const calls = botEvents(bot).filter(e => e.event === 'membersAdded');

    assert.equal(calls.length, 1, `onMembersAdded calls: ${JSON.stringify(calls)}`);
    assert.ok(calls[0].membersAdded.includes(USER_ID), `membersAdded ${JSON.stringify(calls[0].membersAdded)} includes ${USER_ID}`);
    assert.equal(new Set(seen.filter(a => a.text === `Welcome, ${USER_ID}`).map(a => a.id)).size, 1, 'one welcome');
    assert.equal(
      seen.filter(a => a.type === 'conversationUpdate').length,
      0,
      'the client never sees a conversationUpdate'
    );
  });

  it("delivers the bot's updateActivity as a revision with the same id", async () => {
    const id = await post('update-me');
    const updated = await waitForBotEvent(e => e.event === 'updated', "the bot's updateActivity to resolve");

    const revisions = await waitForClient(() => {
      const all = seen.filter(a => a.id === updated.id);

      return all.some(a => a.text === 'Update me: version 2') ? all : undefined;
    }, `revision 2 of ${updated.id} on the stream`);

    assert.equal(revisions[0].text, 'Update me: version 1', 'the original arrives first');
    assert.equal(revisions[0].replyToId, id, 'the original answers update-me');
    assert.equal(revisions.at(-1).text, 'Update me: version 2', 'the revision arrives last');
    assert.equal(
      sequenceIDOf(revisions.at(-1)),
      sequenceIDOf(revisions[0]),
      'the revision keeps its sequence id (updates keep their place)'
    );
    assert.ok(sequenceIDOf(revisions[0]) > sequenceIDOf(seen.find(a => a.id === id)), 'the original comes after update-me');

    const stored = (await history()).filter(a => a.id === updated.id);

    assert.deepEqual(
      stored.map(a => a.text),
      ['Update me: version 2'],
      'history holds the latest revision once'
    );
  });

  it("removes the bot's deleteActivity target from history", async () => {
    const id = await post('delete-me');
    const deleted = await waitForBotEvent(e => e.event === 'deleted', "the bot's deleteActivity to resolve");

    await waitForClient(
      () => (seen.some(a => isBotActivity(a) && a.replyToId === id && a.text === 'Delete me: deleted') ? true : undefined),
      'the message the bot sends after deleting'
    );

    const activities = await history();

    assert.ok(
      activities.some(a => a.text === 'Delete me: deleted'),
      'history has the message sent after the delete'
    );
    assert.deepEqual(
      activities.filter(a => a.id === deleted.id),
      [],
      `history no longer has ${deleted.id}`
    );
  });

  it('finished every bot turn without error and the client saw no error', async () => {
    const events = botEvents(bot);
    const texts = [...Array.from({ length: MESSAGES }, (_, i) => `message ${i + 1}`), 'update-me', 'delete-me'];

    assert.deepEqual(
      events.filter(e => e.event === 'turnError'),
      [],
      'bot turn errors'
    );

    for (const text of texts) {
      const received = events.filter(e => e.event === 'activity' && e.type === 'message' && e.text === text);

      assert.equal(received.length, 1, `the bot received "${text}" once`);
      assert.ok(
        events.some(e => e.event === 'turnDone' && e.id === received[0].id),
        `the bot's turn for "${text}" completed`
      );
      assert.ok(seen.some(a => a.id === received[0].id), `the bot saw the id the client saw for "${text}"`);
    }
    assert.deepEqual(clientErrors, [], 'client stream errors');
    assert.deepEqual(
      statuses.filter(s => s !== ConnectionStatus.Uninitialized && s !== ConnectionStatus.Connecting && s !== ConnectionStatus.Online),
      [],
      'client connection statuses other than Uninitialized, Connecting, Online'
    );
  });
});
