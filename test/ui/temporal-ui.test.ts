import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { nodeWorkflowId, parseRolloutDocuments } from '../../model';
import { parseManifestText } from '../../client/manifest-file';
import { eventually, startTestKeelson, type TestKeelson } from '../api/stack';
import { skyhookYaml } from '../../harness/manifests';

// The Temporal UI as an operator sees it, in a real (headless) browser: a node workflow's page shows each stage's
// activity summary, and its pending activities show the stage running now.

const UI = process.env.TEMPORAL_UI_URL ?? 'http://127.0.0.1:8233';
const NODE = 'node-006';
const name = `ui-r-${Date.now().toString(36)}`;
let k: TestKeelson;
let browser: BrowserContext;
const profile = mkdtempSync(join(tmpdir(), 'keelson-chromium-'));

beforeAll(async () => {
  k = await startTestKeelson('uit');
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await k?.stop();
  rmSync(profile, { recursive: true, force: true });
});

test("the Temporal UI shows a node workflow's stage activity summaries and its current stage", async () => {
  const read = parseManifestText(skyhookYaml(name, [NODE], { base: { version: '1.0.0', simSeconds: 90 } }));
  if ('problem' in read) throw new Error(read.problem);
  const spec = parseRolloutDocuments(read.documents).rollouts[0]!;
  await k.keelson.startRollout(spec);
  // apply has completed and config runs now: one finished stage and one in flight.
  await eventually(
    'apply complete and config in flight',
    async () => {
      const s = await k.keelson.nodeStatus(NODE);
      expect(s.rollouts[name]?.packages.base).toMatchObject({ stage: 'config', state: 'in_progress' });
    },
    120_000,
  );
  const { link } = await k.keelson.nodeStatus(NODE);
  expect(link).toBe(`${UI}/namespaces/default/workflows/${encodeURIComponent(nodeWorkflowId(k.cluster, NODE))}`);

  const page = await browser.newPage();
  const started = Date.now();
  await page.goto(link, { waitUntil: 'domcontentloaded', timeout: 60_000 });
  await page.getByText('nodeWorkflow').first().waitFor({ timeout: 60_000 });
  console.log(`Temporal UI node workflow page loaded in ${Date.now() - started} ms`);
  // Timeline: each stage activity is labelled with its summary.
  for (const stage of ['apply', 'config']) {
    await page.getByText(`runStage • ${NODE}: ${name}/base@1.0.0 ${stage}`).first().waitFor({ timeout: 30_000 });
  }
  // The stage running now: the Pending Activities tab lists the in-flight runStage.
  await page.getByText('Pending Activities', { exact: false }).first().click();
  let body = '';
  await eventually(
    'the pending runStage in the UI',
    async () => {
      body = await page.locator('main').innerText();
      // The in-flight runStage, with its heartbeat naming the config stage Job and its pod's state.
      expect(body).toContain('runStage');
      expect(body).toMatch(new RegExp(`"jobName": "${name}-base-1-0-0-config-${NODE}-[0-9a-f]+"`));
      expect(body).not.toMatch(new RegExp(`"jobName": "${name}-base-1-0-0-apply-`));
    },
    30_000,
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}\npage text:\n${body}`);
  });
  await page.close();
}, 300_000);
