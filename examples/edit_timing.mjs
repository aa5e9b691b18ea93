#!/usr/bin/env node
// Times gemini-cli-core's own calculateReplacement on the cases written by
// `cargo run --release --example bench_edit` (PEER_DIR holds node_modules with
// @google/gemini-cli-core, as the edit oracle's run.sh installs it).
//   node edit_timing.mjs cases.json  ->  [{name, ms, strategy, occurrences, sha}]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const peer = process.env.PEER_DIR || '/tmp/peer';
const core = path.dirname(createRequire(path.join(peer, 'x.js')).resolve('@google/gemini-cli-core/package.json'));
const load = (rel) => import(pathToFileURL(path.join(core, 'dist/src', rel)).href);
const { calculateReplacement } = await load('tools/edit.js');
const { ClearcutLogger } = await load('telemetry/clearcut-logger/clearcut-logger.js');
const { Config } = await load('config/config.js');

let strategy = null; // captured from the edit code's own telemetry call; nothing is sent
ClearcutLogger.instance = { logEditStrategyEvent: (e) => { strategy = e.strategy; }, logEditCorrectionEvent: () => {} };
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'edit-timing-'));
process.env.GEMINI_CLI_HOME = path.join(root, 'home');
const config = new Config({ sessionId: 'edit-timing', targetDir: root, cwd: root, debugMode: false,
  model: 'gemini-2.5-flash', usageStatisticsEnabled: false, telemetry: { enabled: false }, disableLLMCorrection: true });
config.getUsageStatisticsEnabled = () => true;

const input = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const out = [];
for (const c of input.cases) {
  const params = { file_path: path.join(root, 'big.py'), instruction: 'bench', old_string: c.old_string, new_string: c.new_string };
  const ctx = { params, currentContent: input.content, abortSignal: new AbortController().signal };
  let res = await calculateReplacement(config, ctx);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < input.iters; i++) res = await calculateReplacement(config, ctx);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6 / input.iters;
  out.push({ name: c.name, ms, strategy: res.strategy ?? strategy ?? 'none', occurrences: res.occurrences,
    sha: crypto.createHash('sha256').update(res.newContent).digest('hex') });
  strategy = null;
}
fs.rmSync(root, { recursive: true, force: true });
process.stdout.write(JSON.stringify(out) + '\n');
process.exit(0);
