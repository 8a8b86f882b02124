/**
 * A flood of signed `chat.message.updated` webhooks at a fixed rate, as its own process (it
 * must not share an event loop with the bench that measures offers). Used by
 * bench/calls.ts `--flood`: offers must not wait behind message events.
 *
 * argv[2]: JSON { url, secret, rate, seconds, connections }
 * stdout: one JSON line { sent, ok, failed }
 */
import { createHmac } from 'node:crypto';
import { Agent, request } from 'node:http';

const o = JSON.parse(process.argv[2]!) as { url: string; secret: string; rate: number; seconds: number; connections: number };
const agent = new Agent({ keepAlive: true, maxSockets: o.connections });
const target = new URL('/webhooks/service', o.url);
let seq = 0;
let ok = 0;
let failed = 0;

function send(): void {
  const id = `flood_${process.pid}_${seq++}`;
  // Message statuses climb on a few hundred messages, as a busy number's traffic does.
  const body = `{"id":"${id}","type":"chat.message.updated","apiVersion":"v2","createTime":"${new Date().toISOString()}","chatMessage":{"id":"m_flood_${seq % 500}","from":"+15550100001","to":"+1555020${String(seq % 500).padStart(4, '0')}","status":"${['sent', 'delivered', 'read'][seq % 3]}","totalPrice":0.0042,"currency":"USD"}}`;
  const t = Math.floor(Date.now() / 1000);
  const s = createHmac('sha256', o.secret).update(`${t}.`).update(body).digest('hex');
  const req = request(target, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'service-signature': `t=${t},s=${s}`, 'content-length': Buffer.byteLength(body) } }, (res) => {
    res.resume();
    res.on('end', () => (res.statusCode && res.statusCode < 300 ? ok++ : failed++));
  });
  req.on('error', () => failed++);
  req.end(body);
}

const start = Date.now();
const total = Math.round(o.rate * o.seconds);
let i = 0;
const tick = setInterval(() => {
  const due = Math.min(total, Math.floor(((Date.now() - start) / 1000) * o.rate));
  while (i < due) {
    send();
    i++;
  }
  if (i >= total) {
    clearInterval(tick);
    setTimeout(() => {
      process.stdout.write(`${JSON.stringify({ sent: i, ok, failed })}\n`);
      agent.destroy();
      process.exit(0);
    }, 1000);
  }
}, 5);
