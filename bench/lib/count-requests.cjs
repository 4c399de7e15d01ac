// Preloaded into a bench worker (node --require): counts the process's own Kubernetes API requests, by verb and
// resource, and writes them to KEELSON_BENCH_REQUESTS_FILE twice a second and at exit. @kubernetes/client-node
// sends through node-fetch, which looks up http(s).request at call time, so patching the module object sees all.
/* global URL, setInterval */
'use strict';
const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');
const { syncBuiltinESMExports } = require('node:module');
const { isMainThread } = require('node:worker_threads');

// tsx's module hooks run preloads again in their loader thread, whose empty counts would overwrite the main thread's.
const file = isMainThread ? process.env.KEELSON_BENCH_REQUESTS_FILE : undefined;
const port = process.env.KEELSON_BENCH_APISERVER_PORT || '16443';
const counts = {};

function resourceOf(path) {
  const [p, query = ''] = String(path || '/').split('?');
  const parts = p.split('/').filter(Boolean);
  // /api/v1/... or /apis/<group>/<version>/...
  let rest = parts[0] === 'api' ? parts.slice(2) : parts[0] === 'apis' ? parts.slice(3) : parts;
  if (rest[0] === 'namespaces' && rest.length > 2) rest = rest.slice(2);
  const resource = rest[0] || p;
  const sub = rest.length > 2 ? `/${rest[2]}` : '';
  const named = rest.length > 1;
  return { resource: resource + sub, named, watch: /(^|&)watch=(true|1)/.test(query) };
}

function verbOf(method, r) {
  const m = String(method || 'GET').toUpperCase();
  if (m === 'GET') return r.watch ? 'WATCH' : r.named ? 'GET' : 'LIST';
  return m;
}

function record(options) {
  const o = typeof options === 'string' || options instanceof URL ? new URL(String(options)) : options || {};
  if (String(o.port || '') !== port) return;
  const r = resourceOf(o.path || `${o.pathname || ''}${o.search || ''}`);
  const key = `${verbOf(o.method, r)} ${r.resource}`;
  counts[key] = (counts[key] || 0) + 1;
}

for (const mod of [http, https]) {
  const original = mod.request;
  mod.request = function patchedRequest(...args) {
    try {
      record(args[0]);
    } catch {
      // counting must never break a request
    }
    return original.apply(this, args);
  };
}
syncBuiltinESMExports();

function flush() {
  if (!file) return;
  try {
    // Written aside and renamed: a SIGKILL mid-write must not leave a truncated file for the bench to read.
    fs.writeFileSync(`${file}.tmp`, JSON.stringify(counts));
    fs.renameSync(`${file}.tmp`, file);
  } catch {
    // the bench reads what it can
  }
}
if (file) {
  setInterval(flush, 500).unref();
  process.on('exit', flush);
}
