// Stock Web Chat in headless Chromium against the service and its built-in demo bot, over
// WebSocket and over polling: sends through the real send box, livestreaming, out-of-order
// how-to parts, an upload, a reload that resumes the stored conversation, a server restart, a
// second browser context on the same conversation, and a page on another origin. After each flow the conversation's log is
// exported and checked with sortcheck: no MUST finding, and the screen it predicts for the
// page's bundle is what the browser shows (activity ids in DOM order).
//
// Run: npm --prefix webchat-demo run test:browser (needs Go and /usr/bin/chromium).

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import {
  PROFILE,
  SECRET,
  Service,
  WAIT,
  attach,
  domActivities,
  freePort,
  launchBrowser,
  normalize,
  openChat,
  screenshot,
  send,
  transcript
} from './harness.mjs';

const GUARD = { timeout: 120_000 };
const WELCOME = 'Welcome to the Direct Line demo bot!';

let workDir;
let service;
let browser;

before(async () => {
  workDir = mkdtempSync(join(tmpdir(), 'webchat-e2e-'));
  service = new Service(workDir);
  await service.build();
  await service.start();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await service?.stop();
  workDir && rmSync(workDir, { force: true, recursive: true });
});

// until polls what the page shows until ready(view) holds; the deadline only guards against a
// hang, and its error shows the last view.
async function until(page, what, ready) {
  const deadline = Date.now() + WAIT;
  let view;

  for (;;) {
    view = await transcript(page);

    if (ready(view)) {
      return view;
    }

    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}; the page shows:\n${view.text}`);
    }

    await new Promise(resolveDelay => setTimeout(resolveDelay, 100));
  }
}

const shows = text => view => view.bubbles.some(b => normalize(b.text) === normalize(text));

async function chat(context, transport, bundle, query = {}) {
  const page = await openChat(context, service.base, { transport, bundle, resume: '0', ...query });

  await until(page, 'the welcome', view => view.bubbles.some(b => b.text.startsWith(WELCOME)));

  return page;
}

// checkPrediction exports the conversation's log, runs sortcheck with the profile of the bundle
// in the page and compares: no MUST finding, predicted screen = browser screen (ids in DOM
// order), every bubble explained and none shown twice.
async function checkPrediction(page, bundle) {
  const view = await transcript(page);
  const dom = domActivities(view);
  const unexplained = dom.filter(d => !d.key).map(d => d.text);

  assert.deepEqual(unexplained, [], 'every bubble maps to an activity');

  const keys = dom.map(d => d.key);

  assert.equal(new Set(keys).size, keys.length, `no activity is shown twice: ${keys}`);

  const prediction = await service.predict(view.conversationId, PROFILE[bundle]);
  const must = prediction.findings.filter(f => f.severity === 'MUST');

  assert.deepEqual(must, [], 'sortcheck finds no MUST violation');
  assert.deepEqual(keys, prediction.screen.map(row => row.name), `the ${PROFILE[bundle]} prediction is what the browser shows`);
  assert.deepEqual(page.errors, [], 'no uncaught error in the page');

  return { view, dom };
}

const noSendFailure = view => {
  assert.doesNotMatch(view.text, /Send failed/u);
  assert.doesNotMatch(view.bubbles.map(b => b.status).join('\n'), /Sending|Send failed/u);
};

for (const transport of ['websocket', 'polling']) {
  describe(`Web Chat over ${transport}`, () => {
    test('1 + 5: ten sends through the send box, then a reload resumes the same transcript', GUARD, async () => {
      const context = await browser.newContext();

      try {
        const page = await chat(context, transport, 'stable');
        const texts = Array.from({ length: 10 }, (_, i) => `message ${i + 1} over ${transport}`);

        for (const text of texts) {
          await send(page, text);
        }

        const view = await until(
          page,
          'ten echoes, all sent',
          v => texts.every(t => shows(`You said: ${t}`)(v) && shows(t)(v)) && !/Sending/u.test(v.bubbles.map(b => b.status).join())
        );

        noSendFailure(view);
        assert.ok(!JSON.stringify(view.stored).includes(SECRET), 'the page never holds the secret');
        assert.ok(!(await (await fetch(`${service.base}/`)).text()).includes(SECRET), 'the page never holds the secret');

        const mine = view.activities.filter(a => texts.includes(a.text));

        assert.equal(mine.length, texts.length);
        assert.ok(mine.every(a => a.channelData.state === 'sent'), `every send ends sent: ${mine.map(a => a.channelData.state)}`);

        const { dom } = await checkPrediction(page, 'stable');
        const sequence = dom.map(d => d.activity.channelData['webchat:sequence-id']);

        assert.ok(
          sequence.every((s, i) => typeof s === 'number' && (i === 0 || s > sequence[i - 1])),
          `DOM order follows webchat:sequence-id: ${sequence}`
        );
        await screenshot(page, `${transport}-1-send`);

        // 5: the page keeps conversationId and watermark in sessionStorage; a reload that resumes
        // shows the same transcript once.
        const before = dom.map(d => d.key);

        assert.equal(view.stored.conversationId, view.conversationId);
        assert.ok(Number(view.stored.watermark) > 0, `a watermark is stored: ${view.stored.watermark}`);
        await page.goto(`${service.base}/?resume=1`);

        const reloaded = await until(page, 'the resumed transcript', v => v.bubbles.length >= before.length);

        assert.equal(reloaded.conversationId, view.conversationId);
        assert.equal((await transcript(page)).stored.transport, transport);

        // One more turn after the resume: anything delivered twice would be on screen by its echo.
        await send(page, `after reload over ${transport}`);
        await until(page, 'the echo after the reload', shows(`You said: after reload over ${transport}`));

        const resumed = await checkPrediction(page, 'stable');

        assert.deepEqual(resumed.dom.map(d => d.key).slice(0, before.length), before, 'the same transcript after the reload');
        assert.equal(resumed.dom.length, before.length + 2);
        await screenshot(page, `${transport}-5-reload`);

        // Resuming from the stored watermark shows only what came after it.
        await page.goto(`${service.base}/?resume=1&history=watermark`);
        await page.waitForSelector('[data-id="webchat-sendbox-input"]', { timeout: WAIT });
        await send(page, `after watermark over ${transport}`);

        const tail = await until(page, 'the echo after the watermark', shows(`You said: after watermark over ${transport}`));

        assert.deepEqual(
          tail.bubbles.map(b => b.text),
          [`after watermark over ${transport}`, `You said: after watermark over ${transport}`]
        );
      } finally {
        await context.close();
      }
    });

    test('2: a livestream is one bubble that ends with the final text', GUARD, async () => {
      const context = await browser.newContext();

      try {
        const page = await chat(context, transport, 'stable');

        // Every render of the transcript is recorded: the livestream bubbles (their text starts
        // with "Livestreaming") and whether a typing indicator shows.
        await page.evaluate(() => {
          const root = document.getElementById('webchat');

          window.__renders = [];
          new MutationObserver(() => {
            const texts = [...root.querySelectorAll('.webchat__basic-transcript__activity .webchat__bubble__content')]
              .map(b => b.innerText.trim())
              .filter(t => t.startsWith('Livestreaming'));

            window.__renders.push(texts);
          }).observe(root, { childList: true, subtree: true, characterData: true });
        });
        await send(page, 'stream');

        const finalText = await until(page, 'the final livestream message', v =>
          v.activities.some(a => a.type === 'message' && a.channelData?.streamType === 'final')
        ).then(v => v.activities.find(a => a.type === 'message' && a.channelData?.streamType === 'final').text);
        const view = await until(page, 'the final text on screen and no typing indicator', v => shows(finalText)(v) && v.typing === 0);
        const streamBubbles = view.bubbles.filter(b => b.text.trim().startsWith('Livestreaming'));

        assert.equal(streamBubbles.length, 1, 'exactly one livestream bubble');
        assert.equal(normalize(streamBubbles[0].text), normalize(finalText));

        const renders = await page.evaluate(() => window.__renders);

        assert.ok(renders.every(r => r.length <= 1), 'never more than one livestream bubble');

        const lengths = renders.filter(r => r.length === 1).map(r => r[0].length);

        assert.ok(lengths.every((n, i) => i === 0 || n >= lengths[i - 1]), 'the bubble only grows');

        if (transport === 'websocket') {
          assert.ok(new Set(lengths).size >= 2, `the bubble grows over WebSocket: ${[...new Set(lengths)]}`);
        } else {
          // Polling delivers no typing activities, so only the final text is ever shown.
          assert.deepEqual([...new Set(lengths)], [finalText.length]);
        }

        await checkPrediction(page, 'stable');
        await screenshot(page, `${transport}-2-stream`);
      } finally {
        await context.close();
      }
    });

    for (const bundle of ['prerelease', 'stable']) {
      test(`3: steps sent out of order, with the ${bundle} bundle`, GUARD, async () => {
        const context = await browser.newContext();

        try {
          const page = await chat(context, transport, bundle);

          await send(page, 'steps');

          const view = await until(page, 'four steps', v => v.bubbles.filter(b => /^Step \d:/u.test(b.text)).length === 4);
          const steps = view.bubbles.map(b => b.text).filter(t => /^Step \d:/u.test(t));

          if (bundle === 'prerelease') {
            // Grouped parts are shown together in position order.
            assert.deepEqual(steps.map(t => t.slice(0, 6)), ['Step 1', 'Step 2', 'Step 3', 'Step 4']);

            const first = view.bubbles.findIndex(b => b.text.startsWith('Step 1'));

            assert.deepEqual(
              view.bubbles.slice(first, first + 4).map(b => b.text.slice(0, 6)),
              ['Step 1', 'Step 2', 'Step 3', 'Step 4'],
              'the four steps appear together'
            );
          }

          if (bundle === 'stable') {
            // 4.18.1 does not group parts: they stand in the order they arrived (3, 1, 4, 2).
            assert.deepEqual(steps.map(t => t.slice(0, 6)), ['Step 3', 'Step 1', 'Step 4', 'Step 2']);
          }

          // Either bundle: the order is the one its profile predicts.
          await checkPrediction(page, bundle);
          await screenshot(page, `${transport}-3-steps-${bundle}`);
        } finally {
          await context.close();
        }
      });
    }

    test('4: an uploaded file is named with its size in the answer', GUARD, async () => {
      const context = await browser.newContext();

      try {
        const page = await chat(context, transport, 'stable');
        const content = Buffer.from(`notes for the ${transport} upload\n`.repeat(7));
        const name = `notes-${transport}.txt`;

        await attach(page, { name, mimeType: 'text/plain', buffer: content });

        const view = await until(page, 'the answer about the file', v =>
          v.bubbles.some(b => b.text.startsWith('You sent 1 attachment'))
        );
        const answer = view.bubbles.find(b => b.text.startsWith('You sent 1 attachment')).text;

        assert.match(answer, new RegExp(`${name.replace('.', '\\.')}, text/plain, ${content.length} bytes`, 'u'));
        noSendFailure(view);
        await checkPrediction(page, 'stable');
        await screenshot(page, `${transport}-4-upload`);
      } finally {
        await context.close();
      }
    });

    if (transport === 'websocket') {
      // Polling is left out on purpose: directlinejs stops polling after a failed request and
      // nothing a server does brings it back.
      for (const signal of ['SIGKILL', 'SIGTERM']) {
        test(`6: the server restarts mid-conversation (${signal}) and Web Chat reconnects by itself`, GUARD, async () => {
          const context = await browser.newContext();

          try {
            const page = await chat(context, transport, 'stable');

            for (const i of [1, 2, 3]) {
              await send(page, `before restart ${i}`);
            }

            await until(page, 'three echoes', v => [1, 2, 3].every(i => shows(`You said: before restart ${i}`)(v)));
            await service.restart(signal);

            // Web Chat reconnects with its watermark; the next message goes through.
            await send(page, 'after restart');

            const view = await until(page, 'the echo after the restart', shows('You said: after restart'));

            noSendFailure(view);

            const { dom } = await checkPrediction(page, 'stable');

            assert.deepEqual(
              dom.map(d => d.text).filter(t => !t.startsWith(WELCOME)),
              [1, 2, 3].flatMap(i => [`before restart ${i}`, `You said: before restart ${i}`]).concat(['after restart', 'You said: after restart']),
              'nothing lost or doubled'
            );
            await screenshot(page, `${transport}-6-restart-${signal}`);
          } finally {
            await context.close();
          }
        });
      }
    }

    test('7: a second browser context on the same conversation sees the same order', GUARD, async () => {
      const first = await browser.newContext();
      const second = await browser.newContext();

      try {
        const a = await chat(first, transport, 'stable');

        for (const i of [1, 2, 3]) {
          await send(a, `from the first context ${i}`);
        }

        const stored = (await until(a, 'three echoes', shows('You said: from the first context 3'))).stored;

        // The second context gets the same token and conversation id through its sessionStorage.
        await second.addInitScript(value => sessionStorage.setItem('directline-demo', value), JSON.stringify(stored));

        const b = await openChat(second, service.base, { resume: '1' });

        await until(b, 'the first context\'s transcript', shows('You said: from the first context 3'));
        await send(b, 'from the second context');

        for (const page of [a, b]) {
          await until(page, 'the second context\'s echo', shows('You said: from the second context'));
        }

        const seenByA = await checkPrediction(a, 'stable');
        const seenByB = await checkPrediction(b, 'stable');

        assert.deepEqual(seenByB.dom.map(d => d.key), seenByA.dom.map(d => d.key));
        await screenshot(a, `${transport}-7-first-context`);
        await screenshot(b, `${transport}-7-second-context`);
      } finally {
        await first.close();
        await second.close();
      }
    });
  });
}

// A page on another origin, as most sites embed Web Chat: every request is cross-origin, so the
// browser preflights it with the headers DirectLineJS sends (X-Requested-With among them).
for (const transport of ['websocket', 'polling']) {
  test(`a page on another origin talks to the service over ${transport}`, GUARD, async () => {
    const res = await fetch(`${service.base}/v3/directline/tokens/generate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' },
      body: JSON.stringify({ user: { id: 'dl_elsewhere' } })
    });

    assert.equal(res.status, 200);

    const { token } = await res.json();
    const options = { domain: `${service.base}/v3/directline`, token, webSocket: transport === 'websocket' };
    const html = `<!doctype html><html><body><div id="webchat" style="height:600px"></div>
<script src="${service.base}/webchat/stable/webchat.js"></script>
<script>
  window.WebChat.renderWebChat(
    { directLine: window.WebChat.createDirectLine(${JSON.stringify(options)}), userID: 'dl_elsewhere' },
    document.getElementById('webchat')
  );
</script></body></html>`;
    // The site is served from its own port: another origin on the same loopback address, which
    // the browser lets reach the service.
    const server = createServer((req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(html));
    const port = await freePort();

    await new Promise(resolveListen => server.listen(port, '127.0.0.1', resolveListen));

    const site = `http://127.0.0.1:${port}/`;
    const context = await browser.newContext();

    try {
      const page = await context.newPage();
      const failed = [];

      page.on('requestfailed', req => failed.push(`${req.method()} ${req.url()}: ${req.failure()?.errorText}`));
      await page.goto(site);
      await page.waitForSelector('[data-id="webchat-sendbox-input"]', { timeout: WAIT });
      await send(page, 'from another origin');
      await page.waitForFunction(() => document.body.innerText.includes('You said: from another origin'), null, { timeout: WAIT });
      assert.doesNotMatch(await page.innerText('body'), /Send failed/u);
      assert.deepEqual(failed.filter(f => !f.includes('/stream?')), [], 'no request was refused');
    } finally {
      await context.close();
      server.close();
    }
  });
}

test('a reload resumes a new conversation; another user id gets one of its own', GUARD, async () => {
  const context = await browser.newContext();

  try {
    const page = await openChat(context, service.base, { transport: 'websocket', bundle: 'stable', resume: '0', userId: 'dl_alice' });
    const first = await until(page, 'alice\'s conversation', v => Boolean(v.stored?.conversationId));

    assert.match(page.url(), /resume=1/u, 'the address resumes after a reload');
    await page.reload();

    const again = await until(page, 'the reload', v => Boolean(v.conversationId));

    assert.equal(again.conversationId, first.conversationId, 'the reload resumed the new conversation');

    await page.goto(`${service.base}/?resume=1&userId=dl_bob`);

    const bob = await until(page, 'bob\'s conversation', v => v.stored?.userId === 'dl_bob');

    assert.notEqual(bob.conversationId, first.conversationId, 'another user id starts another conversation');
    assert.match(await page.locator('#notice').innerText(), /dl_alice’s; a new one was started for dl_bob/u);
  } finally {
    await context.close();
  }
});

test('without the npm packages the page says how to install them', GUARD, async () => {
  const dir = join(workDir, 'bare');
  const modules = join(dir, 'node_modules');

  mkdirSync(modules, { recursive: true });

  const bare = new Service(dir, ['--demo-page', modules]);

  bare.binary = service.binary;
  bare.port = await freePort();
  bare.base = `http://127.0.0.1:${bare.port}`;
  await bare.start();

  const context = await browser.newContext();

  try {
    const page = await context.newPage();

    await page.goto(`${bare.base}/`);

    const notice = page.locator('#notice');

    await notice.waitFor({ timeout: WAIT });
    assert.match(await notice.innerText(), /botframework-webchat is not installed\. Run make deps/u);
    assert.equal(await page.locator('#notice button').innerText(), 'Load Web Chat 4.18.1 from the public CDN instead');
    await screenshot(page, 'no-bundle');
  } finally {
    await context.close();
    await bare.stop();
  }
});
