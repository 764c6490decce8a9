// A minimal Agent World client in JavaScript, with Node's own WebSocket (no packages).
//
//   node node_client.mjs URL TOKEN NAME [MAX_DECISIONS]
//   node node_client.mjs ws://127.0.0.1:8765/agents "$AGENT_WORLD_TOKEN" Nod 20
//
// It spawns one agent called NAME and answers each of its observations with a simple
// forager (eat when hungry and carrying food; else pick up the nearest food in sight; else
// wander), printing one line per decision. With MAX_DECISIONS it stops after that many
// answers; it exits when the connection closes (0 when it ended normally). Node 22+ has a
// global WebSocket; Node 20 needs `node --experimental-websocket node_client.mjs ...`.
// A WebSocket in Node (or a browser) cannot set headers, so the token goes in the first
// message: {"type": "auth", "token": ...}. The protocol: docs/agents.md.

const FOOD = ["berries", "apple", "bread", "meat"];
const HUNGRY = 40;

if (typeof globalThis.WebSocket !== "function") {
  console.error("node_client.mjs: this Node has no global WebSocket: use Node 22+, or run " +
                "node --experimental-websocket node_client.mjs ...");
  process.exit(2);
}

const [url, token, name, maxArg] = process.argv.slice(2);
if (!url || !token || !name) {
  console.error("usage: node node_client.mjs URL TOKEN NAME [MAX_DECISIONS]");
  process.exit(2);
}
const maxDecisions = maxArg === undefined ? Infinity : Number(maxArg);
if (!(maxDecisions >= 1)) {
  console.error(`node_client.mjs: MAX_DECISIONS must be a number of at least 1, got ${maxArg}`);
  process.exit(2);
}

function forager(message) {
  const obs = message.observation;
  const me = obs.me;
  const carried = FOOD.filter((kind) => (me.items[kind] ?? 0) > 0);
  if (me.hunger >= HUNGRY && carried.length > 0) {
    return { action: "eat", args: { item: carried[0] },
             reasoning: `hungry (${Math.round(me.hunger)}) and carrying ${carried[0]}` };
  }
  const food = obs.items.filter((item) => FOOD.includes(item.kind));
  if (food.length > 0) {
    const nearest = food.reduce((a, b) =>
      (b.distance < a.distance || (b.distance === a.distance && b.id < a.id)) ? b : a);
    return { action: "pickup", args: { target: nearest.id },
             reasoning: `${nearest.kind} ${nearest.distance} tiles away` };
  }
  return { action: "wander", args: { ticks: 20 }, reasoning: "no food in sight" };
}

function describe(decision) {
  const args = Object.entries(decision.args).map(([k, v]) => `${k}=${v}`).join(", ");
  return `${decision.action}(${args}) — ${decision.reasoning}`;
}

const ws = new WebSocket(url);
let decisions = 0;
let accepted = 0;
let lastRequest = null;  // the request our last decision answered
let stopping = false;
let lastError = "";

function send(message) {
  ws.send(JSON.stringify(message));
}

function stop(why) {
  if (stopping) return;
  stopping = true;
  console.log(`stopping: ${why}`);
  ws.close(1000, "done");
}

ws.addEventListener("open", () => send({ type: "auth", token }));

ws.addEventListener("message", (event) => {
  let msg;
  try {
    msg = JSON.parse(event.data);
  } catch {
    console.error(`not JSON from the server: ${String(event.data).slice(0, 80)}`);
    return;
  }
  switch (msg.type) {
    case "welcome":
      console.log(`connected to world ${msg.world} at tick ${msg.tick} as ${msg.client}`);
      send({ type: "spawn", name });
      break;
    case "spawning":
      break;
    case "claimed":
      console.log(`playing ${msg.name}#${msg.agent} from tick ${msg.tick}`);
      break;
    case "observe": {
      if (stopping || decisions >= maxDecisions) break;
      const decision = forager(msg);
      send({ type: "decide", agent: msg.agent, request: msg.request, decision });
      decisions += 1;
      lastRequest = msg.request;
      console.log(`t=${msg.tick} ${name}#${msg.agent}: ${describe(decision)}`);
      break;
    }
    case "accepted":
      accepted += 1;
      if (decisions >= maxDecisions && msg.request === lastRequest) {
        stop(`${decisions} decisions made`);
      }
      break;
    case "rejected":
    case "expired":
      console.error(`request ${msg.request} ${msg.type}: ${msg.reason}`);
      if (decisions >= maxDecisions && msg.request === lastRequest) {
        stop(`${decisions} decisions made`);
      }
      break;
    case "released":
      console.log(`released #${msg.agent}: ${msg.reason}`);
      stop("no agent left to play");
      break;
    case "error":
      lastError = msg.message;
      console.error(`error: ${msg.message}`);
      break;
    default:
      break;
  }
});

ws.addEventListener("error", () => {
  // Node reports the details with the close event that follows.
});

ws.addEventListener("close", (event) => {
  console.log(`closed (code ${event.code}): ${decisions} decisions, ${accepted} accepted`);
  const normal = stopping || event.code === 1000 || event.code === 1001;
  if (!normal && lastError) console.error(`the server said: ${lastError}`);
  process.exit(normal ? 0 : 1);
});
