#!/usr/bin/env node
// Replays activity logs through the Redux store of a published botframework-webchat-core and
// prints the order of state.activities. The Go differential tests (sortkeys/difftest) compare
// that order with the sortkeys model.
//
// Usage: node replay.mjs --core gen-a|gen-b [--seq] [file]
//
//   gen-a  botframework-webchat-core 4.18.2
//   gen-b  botframework-webchat-core 4.18.1-main.20251101.54e519d (npm alias
//          botframework-webchat-core-prerelease)
//
// Input (file or stdin): one log, a JSON array of logs, or one log per line (JSON lines). A log
// is a conformance vector ({"userID", "events": [...]}, see shared/conformance/README.md); extra
// fields are ignored. Ops: incoming, post, fulfilled, delete, and expect (a checkpoint).
//
// Output: one JSON line per log, in input order:
//   {"name": <log name or index>, "checkpoints": [[names...], ...], "final": [names...]}
// with one checkpoint per expect event. A name is the activity's id, or its
// channelData.clientActivityID while it has no id; "" for an id or clientActivityID that is not a
// string. With --seq, "checkpointSeq" and "finalSeq" give each entry's
// channelData["webchat:sequence-id"] as the store holds it (for diagnosis).
// A log the store rejects (a reducer throws) yields {"name", "error"} and the run goes on.

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

// Fields Web Chat's incoming saga treats as absent when they are null (conformance README,
// "incoming", step 1).
const NULLABLE_FIELDS = [
  'attachmentLayout',
  'attachments',
  'channelData',
  'conversation',
  'entities',
  'from',
  'inputHint',
  'locale',
  'name',
  'recipient',
  'speak',
  'suggestedActions',
  'text',
  'textFormat',
  'timestamp',
  'type'
];

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    core: { type: 'string' },
    seq: { type: 'boolean', default: false }
  }
});

if (!CORES[values.core]) {
  process.stderr.write(`replay.mjs: --core must be one of ${Object.keys(CORES).join(', ')}\n`);
  process.exit(2);
}

const require = createRequire(import.meta.url);
const { createStore } = require(CORES[values.core]);

// The incoming saga normalises every activity before queueing it; dispatching
// INCOMING_ACTIVITY directly skips that saga, so the same normalisation is applied here
// (conformance README, "incoming", steps 1 to 3).
function normaliseIncoming(activity, userID) {
  const normalised = { ...activity };

  for (const field of NULLABLE_FIELDS) {
    if (normalised[field] === null) {
      delete normalised[field];
    }
  }

  if (!normalised.from) {
    normalised.from = { role: 'channel' };
  } else if (!normalised.from.role) {
    let role = 'channel';

    if (normalised.from.id === userID) {
      role = 'user';
    } else if (normalised.from.id) {
      role = 'bot';
    }

    normalised.from = { ...normalised.from, role };
  }

  return normalised;
}

function sequenceIDOf(activity) {
  const value = activity.channelData?.['webchat:sequence-id'];

  // NaN is not representable in JSON; keep it visible for diagnosis.
  return typeof value === 'number' && !Number.isFinite(value) ? String(value) : value ?? null;
}

function replay(log, index) {
  const name = typeof log.name === 'string' ? log.name : String(index);
  const userID = log.userID;
  const store = createStore();
  // The post saga completes a send with the first INCOMING_ACTIVITY carrying the send's
  // clientActivityID and an id after the send began; remember it per clientActivityID.
  const echoes = new Map();
  const checkpoints = [];
  const checkpointSeq = [];

  const snapshot = () => store.getState().activities;

  const deliver = activity => {
    const normalised = normaliseIncoming(structuredClone(activity), userID);
    const clientActivityID = clientActivityIDOf(normalised);

    if (clientActivityID && normalised.id && !echoes.has(clientActivityID)) {
      echoes.set(clientActivityID, normalised);
    }

    store.dispatch({ type: INCOMING_ACTIVITY, payload: { activity: normalised } });
  };

  try {
    for (const [position, event] of (log.events || []).entries()) {
      switch (event.op) {
        case 'incoming':
          deliver(event.activity);
          break;

        case 'post':
          // This send's saga waits for an echo delivered from now on.
          echoes.delete(clientActivityIDOf(event.activity));
          store.dispatch({
            type: POST_ACTIVITY_PENDING,
            meta: { clientActivityID: clientActivityIDOf(event.activity), method: 'keyboard' },
            payload: { activity: structuredClone(event.activity) }
          });
          break;

        case 'fulfilled': {
          if (!echoes.has(event.clientActivityID)) {
            deliver(event.activity);
          }

          const echo = echoes.get(event.clientActivityID);

          if (!echo) {
            throw new Error(`event ${position}: echo of ${event.clientActivityID} has no id or a different clientActivityID`);
          }

          store.dispatch({
            type: POST_ACTIVITY_FULFILLED,
            meta: { clientActivityID: event.clientActivityID, method: 'keyboard' },
            payload: { activity: echo }
          });
          break;
        }

        case 'delete':
          store.dispatch({ type: DELETE_ACTIVITY, payload: { activityID: event.activityID } });
          break;

        case 'expect':
          checkpoints.push(snapshot().map(nameOf));
          checkpointSeq.push(snapshot().map(sequenceIDOf));
          break;

        default:
          throw new Error(`event ${position}: unknown op ${JSON.stringify(event.op)}`);
      }
    }
  } catch (error) {
    return { name, error: error.message };
  }

  const result = { name, checkpoints, final: snapshot().map(nameOf) };

  if (values.seq) {
    result.checkpointSeq = checkpointSeq;
    result.finalSeq = snapshot().map(sequenceIDOf);
  }

  return result;
}

const out = readLogs(positionals[0]).map((log, index) => JSON.stringify(replay(log, index)));

process.stdout.write(out.length ? out.join('\n') + '\n' : '');
