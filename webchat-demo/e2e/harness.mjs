// Test harness for the browser flows: the service binary on a fixed loopback port with a fresh
// data file and the built-in demo bot, Debian's Chromium driven by playwright-core, and helpers
// that read what Web Chat shows and what sortcheck predicts for the same conversation.

import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const resultsDir = join(repoRoot, 'webchat-demo', 'test-results');
export const SECRET = 'e2e-secret';

// The sortcheck profile that models each bundle the page can load.
export const PROFILE = { stable: 'gen-a', prerelease: 'gen-b' };

// Debian's Chromium (apt-get install -y chromium); no browser is ever downloaded.
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

// A hang guard for each wait, not a speed assertion.
export const WAIT = 30_000;

export function freePort() {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();

    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();

      srv.close(() => resolvePort(port));
    });
  });
}

// Service is cmd/directline built once and run on one port for the whole file, so that a restart
// comes back where the page's Direct Line client reconnects. DIRECTLINE_BIN runs another build
// (same flags) instead.
export class Service {
  // args are extra command-line flags.
  constructor(workDir, args = []) {
    this.workDir = workDir;
    this.args = args;
    this.data = join(workDir, 'directline.db');
    this.log = '';
  }

  async build() {
    this.binary = process.env.DIRECTLINE_BIN || join(this.workDir, 'directline');
    this.sortcheck = join(this.workDir, 'sortcheck');

    const build = process.env.DIRECTLINE_BIN ? [] : [['-o', this.binary, './cmd/directline']];

    for (const args of [...build, ['-o', this.sortcheck, './cmd/sortcheck']]) {
      execFileSync('go', ['build', ...args], { cwd: repoRoot, stdio: ['ignore', 'ignore', 'inherit'] });
    }

    this.port = await freePort();
    this.base = `http://127.0.0.1:${this.port}`;
  }

  start() {
    const child = spawn(
      this.binary,
      ['--addr', `127.0.0.1:${this.port}`, '--data', this.data, '--secret', SECRET, '--bot-endpoint', 'demo', ...this.args],
      { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] }
    );

    this.child = child;
    this.exited = new Promise(resolveExit => child.once('exit', resolveExit));
    child.stderr.on('data', chunk => {
      this.log = (this.log + chunk).slice(-16384);
    });

    return new Promise((resolveStart, reject) => {
      let output = '';

      child.once('exit', code => reject(new Error(`directline exited with ${code} before listening: ${output}${this.log}`)));
      child.stdout.on('data', chunk => {
        output += chunk;
        /listening on /u.test(output) && resolveStart();
      });
    });
  }

  async stop(signal = 'SIGTERM') {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill(signal);
      await this.exited;
    }
  }

  // restart stops the process with signal (SIGKILL: no goodbye to its clients; SIGTERM: a
  // graceful shutdown) and starts it on the same port, data file and signing key, so tokens and
  // watermarks stay valid.
  async restart(signal) {
    await this.stop(signal);
    await this.start();
  }

  // predict runs sortcheck --live on the conversation's exported log with the bundle's profile.
  // Exit status 1 only means findings, which the caller inspects.
  predict(conversationId, profile) {
    return new Promise((resolvePrediction, reject) => {
      execFile(
        this.sortcheck,
        ['--live', '--base', this.base, '--conversation', conversationId, '--secret', SECRET, '--json', '--profile', profile, '--max-per-rule', '0'],
        { maxBuffer: 16 << 20 },
        (err, stdout, stderr) => {
          if (err && err.code !== 1) {
            return reject(new Error(`sortcheck failed (${err.code}): ${stderr}`));
          }

          try {
            resolvePrediction(JSON.parse(stdout));
          } catch (parseErr) {
            reject(new Error(`sortcheck output is not JSON: ${parseErr.message}: ${stdout.slice(0, 500)}`));
          }
        }
      );
    });
  }
}

export function launchBrowser() {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: install it with apt-get install -y chromium (or set CHROMIUM_PATH)`);
  }

  // playwright-core gives every launch a fresh temporary user-data dir.
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run'
    ]
  });
}

// openChat loads the page in context and waits until Web Chat's send box is there. query holds
// the page options (transport, bundle, resume, history).
export async function openChat(context, base, query) {
  const page = await context.newPage();

  page.errors = [];
  page.on('pageerror', err => page.errors.push(err.message));
  await page.goto(`${base}/?${new URLSearchParams(query)}`);
  await page.waitForSelector('[data-id="webchat-sendbox-input"]', { timeout: WAIT });

  return page;
}

// attach picks a file with Web Chat's upload button (4.18 keeps it in the send box) and sends it.
export async function attach(page, file) {
  await page.setInputFiles('#webchat input[type="file"]', file);
  await page.waitForFunction(() => window.__webchat.store.getState().sendBoxAttachments.length > 0, null, { timeout: WAIT });
  await page.click('#webchat .webchat__send-button');
}

// send types text into Web Chat's send box and presses Enter, then waits for the box to clear.
export async function send(page, text) {
  const box = page.locator('[data-id="webchat-sendbox-input"]');

  await box.fill(text);
  await box.press('Enter');
  await page.waitForFunction(() => !document.querySelector('[data-id="webchat-sendbox-input"]').value, null, { timeout: WAIT });
}

// normalize compares rendered text with activity text: Markdown, list bullets and spacing go.
export function normalize(text) {
  return String(text ?? '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '');
}

// transcript reads what Web Chat shows, in DOM order: each activity's bubble text and status, and
// every activity Web Chat holds in its store.
export async function transcript(page) {
  return page.evaluate(() => {
    const webchat = document.getElementById('webchat');

    if (!window.__webchat) {
      return { bubbles: [], activities: [], incoming: [], text: document.body.innerText, typing: 0, conversationId: undefined, stored: null };
    }

    const bubbles = [...webchat.querySelectorAll('.webchat__basic-transcript__activity')].map(el => ({
      text: [...el.querySelectorAll('.webchat__bubble__content')].map(b => b.innerText).join('\n'),
      status: el.querySelector('.webchat__activity-status')?.innerText ?? ''
    }));

    return {
      bubbles,
      activities: window.__webchat.store.getState().activities,
      incoming: window.__webchat.incoming,
      text: webchat.innerText,
      typing: webchat.querySelectorAll('.webchat__typing-indicator').length,
      conversationId: window.__webchat.directLine.conversationId,
      stored: JSON.parse(sessionStorage.getItem('directline-demo') || 'null')
    };
  });
}

// domActivities maps each bubble to the activity in Web Chat's store with the same text (or, for
// a file without text, the same attachment names) and returns them in DOM order. A bubble no
// activity explains maps to null.
export function domActivities({ bubbles, activities }) {
  const used = new Set();

  return bubbles.map(({ text }) => {
    const shown = normalize(text);
    const match = activities.find(a => {
      if (used.has(a) || (a.type !== 'message' && a.type !== 'typing')) {
        return false;
      }

      if (a.text) {
        return normalize(a.text) === shown;
      }

      const names = (a.attachments || []).map(att => normalize(att.name)).filter(Boolean);

      return names.length > 0 && names.every(name => shown.includes(name));
    });

    match && used.add(match);

    return match ? { key: match.id, activity: match, text } : { key: null, activity: null, text };
  });
}

export async function screenshot(page, name) {
  mkdirSync(resultsDir, { recursive: true });
  await page.screenshot({ path: join(resultsDir, `${name}.png`) });
}
