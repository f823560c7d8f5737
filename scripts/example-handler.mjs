#!/usr/bin/env node
/**
 * A webhook receiver for trying Switchboard locally (README, Quick start):
 *
 *   node scripts/example-handler.mjs            # listens on 127.0.0.1:3000 (PORT to change)
 *
 * - POST /voice answers a call-control request with a VoiceML document that
 *   greets the caller, asks for a digit and reads it back (POST /voice/digit).
 * - Any other POST (call state updates, incoming messages, recording-ready)
 *   is answered 204.
 * Every request is printed as one line: method, path, event and a summary
 * of its JSON body. It uses nothing but Node.
 *
 * Loopback is a private destination: start the server with
 * WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS=true for it to reach this receiver.
 */
import { createServer } from "node:http";

const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? "127.0.0.1";

const GREETING = `<?xml version="1.0" encoding="UTF-8"?>
<Response>
  <Say>Hello from Switchboard.</Say>
  <Input NumDigits="1" TimeoutSeconds="5" NextUri="/voice/digit">
    <Say>Press any key.</Say>
  </Input>
  <Say>No key was pressed. Goodbye.</Say>
</Response>
`;

function readBack(digits) {
  return `<?xml version="1.0" encoding="UTF-8"?>
<Response>
  <Say>You pressed ${digits || "nothing"}. Goodbye.</Say>
</Response>
`;
}

/** One line about a webhook body: the fields a person looks at first. */
function summarize(body) {
  let json;
  try {
    json = JSON.parse(body);
  } catch {
    return body.slice(0, 120);
  }
  const call = json.call ?? json;
  const picked = {
    name: call.name,
    state: call.state,
    from: call.from,
    to: call.to,
    body: call.body,
    errorCode: call.errorCode || undefined,
    digits: json.parameters?.digits,
  };
  return JSON.stringify(Object.fromEntries(Object.entries(picked).filter(([, v]) => v !== undefined)));
}

const server = createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    const url = new URL(req.url ?? "/", "http://handler");
    const event = req.headers["x-enfonica-event"] ?? "-";
    console.log(`${new Date().toISOString()} ${req.method} ${url.pathname} ${event} ${summarize(body)}`);
    if (req.method === "POST" && url.pathname === "/voice") {
      res.writeHead(200, { "content-type": "application/xml" }).end(GREETING);
    } else if (req.method === "POST" && url.pathname === "/voice/digit") {
      let digits = "";
      try {
        digits = JSON.parse(body).parameters?.digits ?? "";
      } catch {}
      res
        .writeHead(200, { "content-type": "application/xml" })
        .end(readBack(String(digits).replace(/[^0-9*#]/g, "")));
    } else {
      res.writeHead(204).end();
    }
  });
});

server.listen(port, host, () => console.log(`example handler listening on http://${host}:${port}`));
for (const signal of ["SIGINT", "SIGTERM"]) process.once(signal, () => server.close(() => process.exit(0)));
