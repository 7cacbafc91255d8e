/**
 * Headless Chromium for end-to-end page tests: Debian's `chromium` package (/usr/bin/chromium)
 * driven by playwright-core. Never downloads a browser; tests skip when it is not installed.
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** Where Debian's chromium package puts the browser (`OP_TEST_CHROMIUM` overrides). */
export const CHROMIUM_PATH = process.env.OP_TEST_CHROMIUM ?? '/usr/bin/chromium';

/** Why browser tests cannot run here, or null when they can. */
export function chromiumMissing(): string | null {
  return existsSync(CHROMIUM_PATH) ? null : `no Chromium at ${CHROMIUM_PATH}: install Debian's package (apt-get install -y chromium) to run the browser tests`;
}

/** `<repo>/test-artifacts/screenshots` (git-ignored). */
export const screenshotDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'test-artifacts', 'screenshots');

/** Flags for a closed network: no background calls to Google, no sandbox (root in CI), no GPU. */
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];

/** A page's console errors, failed requests and uncaught exceptions, to assert there were none. */
export interface PageProblems {
  readonly list: string[];
}

export interface TestBrowser {
  /** A fresh browser context (own sessionStorage) with one page; problems are collected. */
  newPage(): Promise<{ page: Page; context: BrowserContext; problems: PageProblems }>;
  /** Full-page screenshot to `test-artifacts/screenshots/<name>.png`; returns the path. */
  screenshot(page: Page, name: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * Launch Chromium. playwright's `launch` starts it on a new, empty temporary user-data-dir of
 * its own (and deletes it on close), so no profile carries over between runs.
 */
export async function launchBrowser(options: { viewport?: { width: number; height: number } } = {}): Promise<TestBrowser> {
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: FLAGS, timeout: 30_000 });
  const contexts: BrowserContext[] = [];
  return {
    async newPage() {
      const context = await browser.newContext({ viewport: options.viewport ?? { width: 1360, height: 900 }, locale: 'en-GB', timezoneId: 'UTC', deviceScaleFactor: 1 });
      contexts.push(context);
      const page = await context.newPage();
      page.setDefaultTimeout(10_000);
      const list: string[] = [];
      page.on('console', (msg) => {
        if (msg.type() === 'error') list.push(`console: ${msg.text()}`);
      });
      page.on('pageerror', (err) => list.push(`page error: ${err.message}`));
      page.on('requestfailed', (req) => list.push(`request failed: ${req.url()} ${req.failure()?.errorText ?? ''}`));
      return { page, context, problems: { list } };
    },
    async screenshot(page, name) {
      mkdirSync(screenshotDir, { recursive: true });
      const file = path.join(screenshotDir, `${name}.png`);
      await page.screenshot({ path: file, fullPage: true });
      return file;
    },
    async close() {
      for (const c of contexts) await c.close().catch(() => {});
      await browser.close();
    },
  };
}
