// Starts the pinned local-aws-sqs emulator on 127.0.0.1 and a free port,
// prints {"port":N} on one line once it listens, and exits when its parent
// closes stdin (so it never outlives the Go process that started it).
"use strict";
const path = require("path");
const { createSqsServer } = require(path.join(__dirname, "node_modules", "local-aws-sqs"));

(async () => {
  const port = Number(process.env.SQS_PORT || 0);
  const server = await createSqsServer({
    port,
    hostname: "127.0.0.1",
    emulateQueueCreationLifecycle: false,
  });
  process.stdout.write(JSON.stringify({ port: server.address().port }) + "\n");
  process.stdin.on("data", () => {});
  process.stdin.on("end", () => process.exit(0));
  process.stdin.on("error", () => process.exit(0));
  process.on("SIGTERM", () => process.exit(0));
  process.on("SIGINT", () => process.exit(0));
})().catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err) + "\n");
  process.exit(1);
});
