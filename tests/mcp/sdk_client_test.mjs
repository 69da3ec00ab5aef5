// Drives exedev-mcp with the official MCP TypeScript SDK client on a VM of the bundled emulator.
// Usage: node sdk_client_test.mjs EXEDEV_MCP SDK_DIR MODE TRANSPORT
//   tools:    initialize, list the tools, call every tool, a background job, EOF
//   progress: live output arrives as progress notifications while the command runs
//   repl:     with --interactive, a `python3 -i` session driven through the session tools:
//             three inputs, their answers, the exit status, the session closed
// TRANSPORT (ssh or exec) is the server's --transport. Either way the server gets a key of the
// test's own (made here, in a temporary HOME: never the user's ~/.ssh), which the emulator
// registers, so /exec is used only because it was asked for; the VM's commands see an SSH
// session (SSH_CONNECTION) exactly when SSH carries them.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [server, sdkDir, mode, transportName] = process.argv.slice(2);
assert.ok(['tools', 'progress', 'repl'].includes(mode), 'MODE is tools, progress or repl');
assert.ok(transportName === 'ssh' || transportName === 'exec', 'TRANSPORT is ssh or exec');
// CTest reports the entry as skipped when this is the first line of its output.
if (!existsSync(path.join(sdkDir, 'node_modules/@modelcontextprotocol/sdk/package.json'))) {
  console.log('skipped: the MCP SDK is not installed (run scripts/install-deps.sh --tests)');
  process.exit(0);
}
const sdk = (file) =>
  import(pathToFileURL(path.join(sdkDir, 'node_modules/@modelcontextprotocol/sdk/dist/esm', file)).href);
const { Client } = await sdk('client/index.js');
const { StdioClientTransport } = await sdk('client/stdio.js');
const { LATEST_PROTOCOL_VERSION } = await sdk('types.js');

const home = mkdtempSync(path.join(os.tmpdir(), 'exedev-mcp-sdk-'));
process.on('exit', () => rmSync(home, { recursive: true, force: true }));
const key = path.join(home, 'id_ed25519');
execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'exedev-mcp-sdk-test', '-f', key]);
const environment = { ...process.env, HOME: home };
delete environment.SSH_AUTH_SOCK;
delete environment.EXE_SSH_KEY;

const transport = new StdioClientTransport({
  command: server,
  args: ['--emulator', '--working-dir=project', '--tag=mcp-test', `--transport=${transportName}`, `--ssh-key=${key}`,
         '--env=DEPLOY_TOKEN=tok-4f9a1c', '--redact-env=DEPLOY_TOKEN', ...(mode === 'repl' ? ['--interactive'] : [])],
  env: environment,
  stderr: 'pipe',
});
// The server's log (its transport choice among it), passed on for the test's output.
let log = '';
const logEnded = new Promise((resolve) => {
  transport.stderr.on('data', (chunk) => {
    log += chunk;
    process.stderr.write(chunk);
  });
  transport.stderr.on('end', resolve);
});
const client = new Client({ name: 'exedev-mcp-sdk-test', version: '1.0.0' });
await client.connect(transport);

assert.equal(client.getServerVersion().name, 'exedev-mcp');
assert.ok(client.getServerCapabilities().tools, 'the server offers tools');
assert.ok(client.getInstructions().includes('emulator'));
console.log(`initialized (the SDK offers ${LATEST_PROTOCOL_VERSION})`);

const { tools } = await client.listTools();
const listed = new Set(tools.map((tool) => tool.name));
for (const tool of tools) {
  assert.equal(tool.inputSchema.type, 'object', `${tool.name} has an object schema`);
  assert.ok(tool.description.length > 0, `${tool.name} has a description`);
}
console.log(`tools: ${[...listed].join(', ')}`);

const called = new Set();
async function call(name, args, options = {}) {
  called.add(name);
  const result = await client.callTool({ name, arguments: args }, undefined, options);
  const text = result.content.map((part) => part.text).join('');
  return { text, isError: result.isError === true };
}
async function ok(name, args, options) {
  const result = await call(name, args, options);
  assert.equal(result.isError, false, `${name} failed: ${result.text}`);
  return result.text;
}

const sessionTools = ['start_session', 'send_to_session', 'read_session', 'list_sessions', 'close_session'];
for (const name of sessionTools)
  assert.equal(listed.has(name), mode === 'repl', `${name} is offered exactly with --interactive`);

if (mode === 'repl') {
  // A Python REPL in a terminal. Answers are read until they show what is expected: each read
  // waits (wait_seconds) for the program to print, so the loops end on the REPL's output, not on time.
  const name = `py-${process.pid}`;
  let seen = await ok('start_session', { name, command: 'python3 -i -q' });
  assert.match(seen, new RegExp(`^Started session '${name}' in a 24x80 terminal: 'python3 -i -q'\n`));
  async function readUntil(pattern) {
    for (let attempt = 0; attempt < 20 && !pattern.test(seen); ++attempt)
      seen += await ok('read_session', { name, wait_seconds: 5 });
    assert.match(seen, pattern);
  }
  await readUntil(/>>> $/m);
  for (const [input, answer] of [['6 * 7', /^42\r?$/m], ['squares = [n * n for n in range(5)]', />>> /],
                                 ['print(sum(squares), squares[-1])', /^30 16\r?$/m]]) {
    seen = await ok('send_to_session', { name, text: input });
    assert.ok(seen.startsWith(`Sent '${input}\\n' to session '${name}'.\n`), seen);
    await readUntil(answer);
  }
  assert.match(await ok('list_sessions', {}), new RegExp(`'${name}': running, terminal, command 'python3 -i -q'`));
  seen = await ok('send_to_session', { name, text: 'exit(3)' });
  await readUntil(new RegExp(`\\[session '${name}' exited: exit code 3\\]`));
  assert.equal(await ok('close_session', { name }), `Closed session '${name}'.`);
  const gone = await call('read_session', { name });
  assert.equal(gone.isError, true, 'a closed session is gone');
  console.log('a python3 -i session: three inputs answered, exit code 3, closed');
  await client.close();
  process.exit(0);
}

// The transport: the command runs in an SSH session on the VM exactly when SSH carries it.
const session = await ok('run_command', { command: 'echo "session:${SSH_CONNECTION:+ssh}"' });
assert.equal(session, transportName === 'ssh' ? '[stdout]\nsession:ssh\n' : '[stdout]\nsession:\n');
console.log(`commands run over ${transportName}`);
// --redact-env: the commands have the value, the model sees [redacted].
assert.equal(await ok('run_command', { command: 'echo "$DEPLOY_TOKEN" "${#DEPLOY_TOKEN}"' }), '[stdout]\n[redacted] 10\n');
console.log('the --redact-env value is redacted');
// What the server logged, once it has exited: SSH was chosen (and said so) only when asked for.
async function checkLog() {
  await logEnded;
  assert.equal(log.includes('over SSH'), transportName === 'ssh', `the server's log:\n${log}`);
}

// The file tools.
await ok('create_directory', { path: 'notes' });
await ok('write_file', { path: 'notes/a.txt', content: 'hello\nworld\n' });
assert.match(await ok('read_file', { path: 'notes/a.txt' }), /hello/);
await ok('edit_file', { path: 'notes/a.txt', old_text: 'world', new_text: 'there' });
assert.match(await ok('list_directory', { path: 'notes' }), /a\.txt/);
assert.match(await ok('search_files', { pattern: 'there', path: 'notes' }), /a\.txt/);
assert.match(await ok('find_files', { pattern: '**/*.txt' }), /a\.txt/);
assert.match(await ok('file_info', { path: 'notes/a.txt' }), /file/);
const invalid = await call('read_file', { path: 'notes/a.txt', limit: 'many' });
assert.equal(invalid.isError, true, 'arguments off the schema are a tool error (a retry for the model)');

if (mode === 'progress') {
  // Live output: the command waits for a file that only a second call, made once the first
  // progress notification showed "ready", creates. It finishes before its timeout only if its
  // output arrived as progress while it ran.
  // The SDK handles a notification a microtask after reading it but a response at once, so a
  // notification read in the same chunk as the result finds its handler gone: the SDK drops it
  // and reports it to onerror. Those count too: the server must send all output as progress,
  // in order, before the result; whether the last ones reach the handler is the SDK's timing.
  const progress = [];
  const dropped = [];
  const unknownToken = 'Received a progress notification for an unknown token: ';
  client.onerror = (error) => {
    const at = error.message.indexOf(unknownToken);
    assert.ok(at >= 0, `the SDK reported an error: ${error.message}`);
    dropped.push(JSON.parse(error.message.slice(at + unknownToken.length)).params);
  };
  let released;
  const streamed = await ok('run_command', {
    command: 'echo ready; while [ ! -e go.flag ]; do sleep 0.05; done; echo finished',
    timeout_seconds: 60,
  }, {
    onprogress: (notification) => {
      progress.push(notification);
      if (!released && progress.map((seen) => seen.message).join('').includes('ready\n'))
        released = ok('write_file', { path: 'go.flag', content: 'go\n' });
    },
  });
  assert.ok(released, 'a progress notification carried "ready" while the command ran');
  await released;
  assert.equal(streamed, '[stdout]\nready\nfinished\n');
  client.onerror = undefined;
  const sent = [...progress, ...dropped];
  assert.equal(sent.map((notification) => notification.message).join(''), 'ready\nfinished\n');
  for (let i = 1; i < sent.length; ++i) assert.ok(sent[i].progress > sent[i - 1].progress);
  console.log(`progress: ${progress.length} notifications handled, ${dropped.length} read with the result`);
  await client.close();
  await checkLog();
  process.exit(0);
}

// A command in the VM sees the files.
assert.match(await ok('run_command', { command: 'cat notes/a.txt && pwd' }), /hello\nthere\n[^]*\/project/);

// A background job: start, check, stop.
const started = await ok('start_command', { command: 'echo job-begins; sleep 600' });
const id = started.match(/ID: (\S+)/)?.[1];
assert.ok(id, `start_command names its job: ${started}`);
let checked = '';
for (let attempt = 0; attempt < 100 && !checked.includes('job-begins'); ++attempt)
  checked = await ok('check_command', { command_id: id });
assert.match(checked, /job-begins/);
await ok('stop_command', { command_id: id });
console.log('background job started, checked, stopped');

const unexercised = [...listed].filter((name) => !called.has(name));
assert.deepEqual(unexercised, [], 'every listed tool was called');

// An unknown tool is a JSON-RPC error (invalid params), not a crash.
await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), /unknown tool/);
await client.ping();

// EOF: closing the transport ends stdin; the server must exit on its own, with status 0.
const child = transport._process;
const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
child.stdin.end();
const { code, signal } = await exited;
assert.equal(signal, null, 'exited by itself, not by a signal');
assert.equal(code, 0);
await client.close();
await checkLog();
console.log('EOF: exit status 0');
