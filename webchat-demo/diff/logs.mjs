// What replay.mjs and hold.mjs share: the packages they load, how they read logs and how they
// name activities.

import { readFileSync } from 'node:fs';

export const CORES = {
  'gen-a': 'botframework-webchat-core',
  'gen-b': 'botframework-webchat-core-prerelease'
};

// Action types and shapes as Web Chat's sagas dispatch them (core sagas/postActivitySaga,
// sagas/queueIncomingActivitySaga, actions/deleteActivity).
export const INCOMING_ACTIVITY = 'DIRECT_LINE/INCOMING_ACTIVITY';
export const POST_ACTIVITY_PENDING = 'DIRECT_LINE/POST_ACTIVITY_PENDING';
export const POST_ACTIVITY_FULFILLED = 'DIRECT_LINE/POST_ACTIVITY_FULFILLED';
export const DELETE_ACTIVITY = 'DIRECT_LINE/DELETE_ACTIVITY';

export function clientActivityIDOf(activity) {
  const channelData = activity.channelData;

  return channelData && typeof channelData === 'object' ? channelData.clientActivityID : undefined;
}

// A name as the Go side gives it: the id when it is a non-empty string, else the
// clientActivityID when it is one, else "" (ids of other types are matched, not named).
export function nameOf(activity) {
  const text = value => (typeof value === 'string' ? value : '');

  return text(activity.id) || text(clientActivityIDOf(activity));
}

// readLogs reads the logs of a file, or of stdin without one: one log, a JSON array of logs, or
// one log per line (JSON lines).
export function readLogs(file) {
  const trimmed = readFileSync(file ?? 0, 'utf8').trim();

  if (!trimmed) {
    return [];
  }

  try {
    const whole = JSON.parse(trimmed);

    return Array.isArray(whole) ? whole : [whole];
  } catch {
    return trimmed
      .split('\n')
      .filter(line => line.trim())
      .map(line => JSON.parse(line));
  }
}
