#!/usr/bin/env node
// Replays activity logs through a published botframework-webchat-core with its own sagas, so that
// incoming activities pass its reply hold (queueIncomingActivitySaga), on a simulated clock, and
// prints the order of state.activities. The Go differential tests (sortkeys/difftest) compare
// that order with the sortkeys model under Options.ReplyHold.
//
// Usage: node hold.mjs --core gen-a|gen-b [file]
//
// Input and output as replay.mjs's, with two more event members: "at", the simulated clock in
// milliseconds (the timers due by then fire first, in due order; an earlier "at" than the clock
// is ignored), and the op "advance", which only moves the clock.
//
// Web Chat runs as connected to a Direct Line object whose activity$ this script feeds:
//   incoming   the activity comes through activity$, as from the service;
//   post       POST_ACTIVITY_PENDING, dispatched as the post saga does;
//   fulfilled  POST_ACTIVITY_FULFILLED with the first INCOMING_ACTIVITY since the post that
//              carries the clientActivityID and an id, right after it is dispatched: the
//              event's activity first comes through activity$ unless such an echo already did
//              (and may still be held);
//   delete     DELETE_ACTIVITY.

import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';

import {
  CORES,
  DELETE_ACTIVITY,
  INCOMING_ACTIVITY,
  POST_ACTIVITY_FULFILLED,
  POST_ACTIVITY_PENDING,
  clientActivityIDOf,
  nameOf,
  readLogs
} from './logs.mjs';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { core: { type: 'string' } }
});

if (!CORES[values.core]) {
  process.stderr.write(`hold.mjs: --core must be one of ${Object.keys(CORES).join(', ')}\n`);
  process.exit(2);
}

const require = createRequire(import.meta.url);
const { connect, createStoreWithOptions } = require(CORES[values.core]);

// The saga warns on every hold that times out; those are expected here.
const warn = console.warn;

console.warn = (message, ...rest) => {
  if (!String(message).includes('Timed out while waiting for activity')) {
    warn(message, ...rest);
  }
};

// Lets the sagas run to rest: promise callbacks and the work they schedule.
async function settle() {
  for (let i = 0; i < 5; i++) {
    await new Promise(resolve => setImmediate(resolve));
  }
}

// A clock for the store's ponyfill: timers fire only when advanceTo reaches them.
function simulatedClock() {
  let now = 0;
  let lastID = 0;
  const timers = new Map();

  class SimulatedDate extends Date {
    constructor(...args) {
      if (args.length) {
        super(...args);
      } else {
        super(now);
      }
    }

    static now() {
      return now;
    }
  }

  return {
    Date: SimulatedDate,
    setTimeout(fn, ms, ...args) {
      lastID++;
      timers.set(lastID, { due: now + Math.max(0, Number(ms) || 0), id: lastID, fn, args });

      return lastID;
    },
    clearTimeout(id) {
      timers.delete(id);
    },
    // Fires the timers due by time, each with the work it starts, in due order (then in the order
    // they were set), and moves the clock there.
    async advanceTo(time) {
      for (;;) {
        let next;

        for (const timer of timers.values()) {
          if (timer.due <= time && (!next || timer.due < next.due || (timer.due === next.due && timer.id < next.id))) {
            next = timer;
          }
        }

        if (!next) {
          break;
        }

        timers.delete(next.id);
        now = Math.max(now, next.due);
        next.fn(...next.args);
        await settle();
      }

      now = Math.max(now, time);
    }
  };
}

// A hot observable, enough for Web Chat's subscriptions; with an initial value it replays the
// latest to each new subscriber, as connectionStatus$ does.
function subject(initial) {
  const observers = new Set();
  let latest = initial;

  return {
    subscribe(observer) {
      const o = typeof observer === 'function' ? { next: observer } : observer;

      observers.add(o);
      latest !== undefined && o.next?.(latest);

      return { unsubscribe: () => observers.delete(o) };
    },
    next(value) {
      if (initial !== undefined) {
        latest = value;
      }

      [...observers].forEach(o => o.next?.(value));
    }
  };
}

async function replay(log, index) {
  const name = typeof log.name === 'string' ? log.name : String(index);
  const clock = simulatedClock();
  // The post saga completes a send with the first INCOMING_ACTIVITY carrying the send's
  // clientActivityID and an id after the send began.
  const echoes = new Map();
  // Sends whose fulfilled event waits for that echo, and how many echoes (activities with the
  // clientActivityID and an id) are on their way through the hold.
  const awaitingEcho = new Set();
  const inTransit = new Map();
  let connected = false;
  let store;

  const complete = (clientActivityID, echo) =>
    store.dispatch({
      type: POST_ACTIVITY_FULFILLED,
      meta: { clientActivityID, method: 'keyboard' },
      payload: { activity: echo }
    });

  const watch = () => next => action => {
    const result = next(action);

    connected ||= action.type === 'DIRECT_LINE/CONNECT_FULFILLED';

    if (action.type === INCOMING_ACTIVITY) {
      const { activity } = action.payload;
      const clientActivityID = clientActivityIDOf(activity);

      if (clientActivityID && activity.id) {
        inTransit.set(clientActivityID, inTransit.get(clientActivityID) - 1);

        if (!echoes.has(clientActivityID)) {
          echoes.set(clientActivityID, activity);
          awaitingEcho.delete(clientActivityID) && complete(clientActivityID, activity);
        }
      }
    }

    return result;
  };

  store = createStoreWithOptions(
    { ponyfill: { Date: clock.Date, clearTimeout: clock.clearTimeout, setTimeout: clock.setTimeout } },
    undefined,
    watch
  );

  const activity$ = subject();
  const connectionStatus$ = subject(0);
  const directLine = { activity$, connectionStatus$, end() {}, postActivity: () => subject(), setUserId() {} };

  const emit = activity => {
    const clientActivityID = clientActivityIDOf(activity);

    clientActivityID && activity.id && inTransit.set(clientActivityID, (inTransit.get(clientActivityID) || 0) + 1);
    activity$.next(structuredClone(activity));
  };

  store.dispatch(connect({ directLine, userID: log.userID, username: 'user' }));

  for (const status of [1, 2]) {
    await settle();
    connectionStatus$.next(status);
  }

  await settle();

  if (!connected) {
    return { name, error: 'the store did not connect' };
  }

  const checkpoints = [];
  const snapshot = () => store.getState().activities.map(nameOf);

  try {
    for (const [position, event] of (log.events || []).entries()) {
      if (typeof event.at === 'number') {
        await clock.advanceTo(event.at);
      }

      switch (event.op) {
        case 'incoming':
          emit(event.activity);
          break;

        case 'post': {
          const clientActivityID = clientActivityIDOf(event.activity);

          // This send's saga waits for an echo delivered from now on.
          echoes.delete(clientActivityID);
          store.dispatch({
            type: POST_ACTIVITY_PENDING,
            meta: { clientActivityID, method: 'keyboard' },
            payload: { activity: structuredClone(event.activity) }
          });
          break;
        }

        case 'fulfilled': {
          const clientActivityID = event.clientActivityID;

          if (echoes.has(clientActivityID)) {
            complete(clientActivityID, echoes.get(clientActivityID));
          } else {
            awaitingEcho.add(clientActivityID);
            inTransit.get(clientActivityID) || emit(event.activity);
          }

          break;
        }

        case 'delete':
          store.dispatch({ type: DELETE_ACTIVITY, payload: { activityID: event.activityID } });
          break;

        case 'advance':
          break;

        case 'expect':
          checkpoints.push(snapshot());
          break;

        default:
          throw new Error(`event ${position}: unknown op ${JSON.stringify(event.op)}`);
      }

      await settle();
    }
  } catch (error) {
    return { name, error: error.message };
  }

  return { name, checkpoints, final: snapshot() };
}

const out = [];

for (const [index, log] of readLogs(positionals[0]).entries()) {
  out.push(JSON.stringify(await replay(log, index)));
}

process.stdout.write(out.length ? out.join('\n') + '\n' : '');
