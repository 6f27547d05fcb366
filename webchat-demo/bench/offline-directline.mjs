// Starts the npm package offline-directline (an in-memory Direct Line emulator with polling only;
// its client routes live under /directline) on a loopback port, for the side-by-side benchmark
// run by `go run ./cmd/dlbench/suite`.
//
// Run:
//   node offline-directline.mjs --bot URL
//     stdout line 1: "offline-directline listening on http://127.0.0.1:<port>/directline"
//   node offline-directline.mjs --null-bot
//     stdout line 1: "null-bot listening on http://127.0.0.1:<port>/api/messages"
//
// offline-directline forwards every posted activity (and every new conversation) to a bot and
// answers the client only when the bot has answered, so "no bot" needs a bot that answers 200 and
// says nothing: --null-bot is that bot, meant to run as its own process.
//
// The package's initializeRoutes listens on every interface and logs a line per conversation;
// here its router is mounted on an express app listening on 127.0.0.1 only, and its console
// output is dropped after start so that the benchmark measures the broker rather than the log.
import http from 'node:http';
import { createRequire } from 'node:module';
import process from 'node:process';

const require = createRequire(import.meta.url);

function arg(name) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function listen(server, label, path) {
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address();
    process.stdout.write(`${label} listening on http://127.0.0.1:${port}${path}\n`);
  });
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

if (process.argv.includes('--null-bot')) {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200).end());
  });
  listen(server, 'null-bot', '/api/messages');
} else {
  const botUrl = arg('--bot');
  if (!botUrl) {
    process.stderr.write('usage: node offline-directline.mjs --bot URL | --null-bot\n');
    process.exit(2);
  }
  // express is offline-directline's own dependency; resolve it from there.
  const pkg = require.resolve('offline-directline');
  const express = createRequire(pkg)('express');
  const directline = require('offline-directline');
  const app = express();
  const server = http.createServer(app);
  server.on('listening', () => {
    const { port } = server.address();
    app.use(directline.getRouter(`http://127.0.0.1:${port}`, botUrl));
    console.log = () => {};
    console.warn = () => {};
  });
  listen(server, 'offline-directline', '/directline');
}
