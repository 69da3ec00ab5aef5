// exedev-mcp answers malformed requests with JSON-RPC errors and keeps serving, and ends
// cleanly at EOF with a call in flight (the call's command is stopped). Raw lines on stdin, no
// SDK. Usage: node raw_protocol_test.mjs EXEDEV_MCP
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

const [server] = process.argv.slice(2);
const workspace = mkdtempSync(path.join(tmpdir(), 'exedev-mcp-raw-'));
const child = spawn(server, [`--local=${workspace}`], { stdio: ['pipe', 'pipe', 'inherit'] });
const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));

const lines = readline.createInterface({ input: child.stdout });
const waiting = [];
const received = [];
lines.on('line', (line) => {
  const message = JSON.parse(line);  // every line the server writes is one JSON message
  if (waiting.length > 0) waiting.shift()(message);
  else received.push(message);
});
const next = () => (received.length > 0 ? Promise.resolve(received.shift()) : new Promise((r) => waiting.push(r)));
const send = (line) => child.stdin.write(`${line}\n`);
async function exchange(line) {
  send(line);
  return next();
}
const errorCode = async (line) => (await exchange(line)).error?.code;

// Before initialize: ping works, tools are refused.
assert.deepEqual((await exchange('{"jsonrpc":"2.0","id":1,"method":"ping"}')).result, {});
assert.equal(await errorCode('{"jsonrpc":"2.0","id":2,"method":"tools/list"}'), -32600);
const init = await exchange(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'initialize',
  params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } }));
assert.equal(init.result.protocolVersion, '2024-11-05', 'an older revision the SDK offers is accepted');
send('{"jsonrpc":"2.0","method":"notifications/initialized"}');

const parse = await exchange('{"jsonrpc": "2.0", "id": 4, "method": "tools/list"');
assert.equal(parse.error.code, -32700);
assert.equal(parse.id, null);
assert.equal(await errorCode('[1, 2, 3]'), -32600);
assert.equal(await errorCode('"just a string"'), -32600);
assert.equal(await errorCode('{"jsonrpc":"1.0","id":5,"method":"ping"}'), -32600);
assert.equal(await errorCode('{"jsonrpc":"2.0","id":6}'), -32600);
assert.equal(await errorCode('{"jsonrpc":"2.0","id":7,"method":"prompts/get"}'), -32601);
assert.equal(await errorCode('{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{}}'), -32602);
assert.equal(await errorCode('{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"read_file","arguments":[1]}}'), -32602);
assert.equal(await errorCode('{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"nope"}}'), -32602);
const bytes = await exchange('\u00ff\u0000 not json at all');
assert.equal(bytes.error.code, -32700);
// Arguments the tool rejects are a tool error the model can correct, not a protocol error.
const badArguments = await exchange('{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"read_file","arguments":{"nope":1}}}');
assert.equal(badArguments.result.isError, true);
// After all that, the server still answers.
assert.deepEqual((await exchange('{"jsonrpc":"2.0","id":12,"method":"ping"}')).result, {});
console.log('malformed requests: JSON-RPC errors, server alive');

// EOF with a call in flight: the call is cancelled, its command stopped, the exit status 0.
const marker = `sleep 86${process.pid % 100}.5`;
send(JSON.stringify({ jsonrpc: '2.0', id: 13, method: 'tools/call',
  params: { name: 'run_command', arguments: { command: `echo begun; ${marker}`, timeout_seconds: 600 } } }));
const running = () => execFileSync('ps', ['-eo', 'args']).toString().split('\n').some((args) => args.startsWith(marker));
// Each look at the process table takes a few milliseconds: a bounded wait for the command.
for (let attempt = 0; attempt < 3000 && !running(); ++attempt);
assert.ok(running(), 'the command runs');
child.stdin.end();
const { code, signal } = await exited;
assert.equal(signal, null);
assert.equal(code, 0);
assert.equal(received.length, 0, 'a cancelled call is not answered');
assert.ok(!running(), 'the command was stopped');
console.log('EOF: call cancelled, command stopped, exit status 0');

// SIGTERM ends the session as EOF does.
const second = spawn(server, [`--local=${workspace}`], { stdio: ['pipe', 'pipe', 'inherit'] });
const secondExited = new Promise((resolve) => second.once('exit', (code, signal) => resolve({ code, signal })));
const secondMarker = `sleep 87${process.pid % 100}.5`;
second.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } })}\n`);
second.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call',
  params: { name: 'run_command', arguments: { command: secondMarker, timeout_seconds: 600 } } })}\n`);
const secondRunning = () =>
  execFileSync('ps', ['-eo', 'args']).toString().split('\n').some((args) => args.startsWith(secondMarker));
for (let attempt = 0; attempt < 3000 && !secondRunning(); ++attempt);
assert.ok(secondRunning(), 'the second command runs');
second.kill('SIGTERM');
const ended = await secondExited;
assert.equal(ended.signal, null, 'SIGTERM is handled, not fatal');
assert.equal(ended.code, 0);
assert.ok(!secondRunning(), 'the command was stopped');
rmSync(workspace, { recursive: true, force: true });
console.log('SIGTERM: call cancelled, command stopped, exit status 0');
