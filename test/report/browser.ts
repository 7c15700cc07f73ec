import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';

/** Debian's Chromium, headless, nothing fetched on its own (no updates, sync, field trials). */
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** A page in a fresh profile (its own user-data-dir), with what it logged, requested and tried to run. */
export interface Watched {
  readonly page: Page;
  readonly errors: string[];
  /** requests for anything but file: and data: */
  readonly outside: string[];
  readonly dialogs: string[];
  close(): Promise<void>;
}

export async function openPage(url: string, o: { javaScript?: boolean; width?: number } = {}): Promise<Watched> {
  const profile = mkdtempSync(join(tmpdir(), 'fcctl-chromium-'));
  const context: BrowserContext = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    args: ARGS,
    javaScriptEnabled: o.javaScript ?? true,
    viewport: { width: o.width ?? 1280, height: 900 },
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const w: Watched = {
    page,
    errors: [],
    outside: [],
    dialogs: [],
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') w.errors.push(m.text());
  });
  page.on('pageerror', (e) => w.errors.push(e.message));
  page.on('dialog', (d) => {
    w.dialogs.push(d.message());
    void d.dismiss();
  });
  context.on('request', (r) => {
    if (!/^(file|data):/.test(r.url())) w.outside.push(r.url());
  });
  await page.goto(url);
  return w;
}
