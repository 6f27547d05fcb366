// A standard botbuilder-js echo bot (CloudAdapter, empty app id) served with node:http, used by
// botbuilder.test.mjs to run a real Bot Framework SDK bot behind the Direct Line service.
//
// Run: node echo-bot.mjs --listen
//   stdout line 1: "echo-bot listening on http://127.0.0.1:<port>/api/messages"
//   then one "echo-bot event <JSON>" line per observable bot event:
//     {"event":"activity","type","id","text"}        every incoming activity, before its turn
//     {"event":"membersAdded","membersAdded":[ids],"recipient":id}   each onMembersAdded call
//     {"event":"updated","id","response"}            context.updateActivity resolved
//     {"event":"deleted","id"}                       context.deleteActivity resolved
//     {"event":"turnError","message","stack"}        a turn threw (the bot then answers 500)
//     {"event":"turnDone","type","id"}               a turn finished without throwing
//
// Messages: "update-me" sends "Update me: version 1" and updates it to "Update me: version 2";
// "delete-me" sends "Delete me: doomed", deletes it, then sends "Delete me: deleted"; any other
// text is answered with "Echo: <text>". Members other than the bot are greeted with
// "Welcome, <id>".
//
// Without --listen the module does nothing: `node --test test/` executes every .mjs under
// test/, this file included.
import http from 'node:http';
import process from 'node:process';
import {
  ActivityHandler,
  CloudAdapter,
  ConfigurationBotFrameworkAuthentication,
  MessageFactory,
} from 'botbuilder';

function emit(event) {
  process.stdout.write(`echo-bot event ${JSON.stringify(event)}\n`);
}

class EchoBot extends ActivityHandler {
  constructor() {
    super();
    this.onTurn(async (context, next) => {
      const { type, id, text } = context.activity;
      emit({ event: 'activity', type, id, text });
      await next();
    });
    this.onMembersAdded(async (context, next) => {
      const { membersAdded, recipient } = context.activity;
      emit({ event: 'membersAdded', membersAdded: membersAdded.map((m) => m.id), recipient: recipient?.id });
      for (const member of membersAdded) {
        if (member.id !== recipient?.id) {
          await context.sendActivity(MessageFactory.text(`Welcome, ${member.id}`));
        }
      }
      await next();
    });
    this.onMessage(async (context, next) => {
      const text = context.activity.text ?? '';
      if (text === 'update-me') {
        const sent = await context.sendActivity(MessageFactory.text('Update me: version 1'));
        const revised = MessageFactory.text('Update me: version 2');
        revised.id = sent.id;
        const response = await context.updateActivity(revised);
        emit({ event: 'updated', id: sent.id, response: response ?? null });
      } else if (text === 'delete-me') {
        const sent = await context.sendActivity(MessageFactory.text('Delete me: doomed'));
        await context.deleteActivity(sent.id);
        emit({ event: 'deleted', id: sent.id });
        await context.sendActivity(MessageFactory.text('Delete me: deleted'));
      } else {
        await context.sendActivity(MessageFactory.text(`Echo: ${text}`));
      }
      await next();
    });
  }
}

// nodeResponse gives node:http's ServerResponse the four methods CloudAdapter.process calls
// (the Restify/Express shape it is written against).
function nodeResponse(res) {
  return {
    socket: res.socket,
    status(code) {
      res.statusCode = code;
    },
    header(name, value) {
      res.setHeader(name, value);
    },
    send(body) {
      if (typeof body === 'string' || Buffer.isBuffer(body)) {
        res.write(body);
        return;
      }
      res.setHeader('Content-Type', 'application/json');
      res.write(JSON.stringify(body));
    },
    end() {
      res.end();
    },
  };
}

async function readJSON(req) {
  const chunks = [];
  for await (const chunk of req) {
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    // CloudAdapter.process answers 400 to a request without a parsed object body.
    return undefined;
  }
}

async function listen() {
  const auth = new ConfigurationBotFrameworkAuthentication({
    MicrosoftAppId: '',
    MicrosoftAppPassword: '',
    MicrosoftAppType: 'MultiTenant',
  });
  const adapter = new CloudAdapter(auth);
  adapter.onTurnError = async (context, error) => {
    emit({ event: 'turnError', message: String(error?.message ?? error), stack: String(error?.stack ?? '') });
    throw error;
  };
  const bot = new EchoBot();

  const server = http.createServer(async (req, res) => {
    if (new URL(req.url, 'http://localhost').pathname !== '/api/messages') {
      res.writeHead(404).end();
      return;
    }
    req.body = await readJSON(req);
    await adapter.process(req, nodeResponse(res), async (context) => {
      await bot.run(context);
      emit({ event: 'turnDone', type: context.activity.type, id: context.activity.id });
    });
  });
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address();
    process.stdout.write(`echo-bot listening on http://127.0.0.1:${port}/api/messages\n`);
  });
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

if (process.argv.includes('--listen')) {
  await listen();
}
