/**
 * Every page in the user's language, by keyboard and for screen readers, in real Chromium
 * against the real server (history on, the emulator's WebRTC callers):
 * - the user's language kept with the user (`PUT /api/me/language`, 400 naming the field);
 * - axe-core over every page in the states a shift reaches, in English and Arabic (RTL):
 *   no serious or critical violation;
 * - a whole call by keyboard alone, the ring announced in the live region;
 * - a refusal of the server worded in each language with its parameters;
 * - screenshots with SCREENSHOTS=1 (agent ringing and in wrap-up in each language, the
 *   supervisor page in Arabic and in the dark theme, desktop and phone) in screenshots/i18n/
 *   (gitignored); in `npm test` the pages' fit at desktop and phone width is checked instead.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LANGUAGES, type Language } from '../../shared/languages.ts';
import { buildWebAgent } from '../../web-agent/build.ts';
import { launchChromium } from '../support/chromium.ts';
import { goAvailable, waitOnline } from '../web-agent/driver.ts';
import { PASSWORD, emulatorRequest, login, startBridge, until, type Bridge } from './harness.ts';
import { DESKTOP, PHONE, card, hangUpAll, placeCall, stateIs } from './desk-page.ts';
import { fits } from './page-fit.ts';

const SHOTS = join(process.cwd(), 'screenshots', 'i18n');
const agentOf = (l: Language) => `agent-${l}`;
const bossOf = (l: Language) => `boss-${l}`;
let browser: Browser;
let b: Bridge;
const contexts: Array<{ close(): Promise<unknown> }> = [];
const pageErrors: string[] = [];

beforeAll(async () => {
  const [assets, br] = await Promise.all([buildWebAgent(), launchChromium()]);
  browser = br;
  b = await startBridge({
    assets,
    history: true,
    agents: ['kb', ...LANGUAGES.map(agentOf)],
    supervisors: LANGUAGES.map(bossOf),
    admins: ['root'],
    env: { WRAP_UP_MS: '60000', RING_TIMEOUT_MS: '30000' },
  });
  // Permission requests get no reply: a second request for the same user is refused by the ration.
  await emulatorRequest(b.emu, 'PATCH', '/messaging/knobs', { permissionReply: 'none' });
  mkdirSync(SHOTS, { recursive: true });
}, 90_000);
afterEach(async () => {
  for (const c of contexts.splice(0)) await c.close();
  await hangUpAll(b);
  expect(pageErrors.splice(0)).toEqual([]);
});
afterAll(async () => {
  await b?.close();
  await browser?.close();
});

/** `PUT /api/me/language` as `name` (a real login); the answer's status and body. */
async function putLanguage(name: string, body: unknown): Promise<{ status: number; json: any }> {
  const cookie = await login(b.url, name, PASSWORD);
  const r = await fetch(`${b.url}/api/me/language`, { method: 'PUT', headers: { cookie, origin: b.url, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, json: await r.json() };
}

/** A new browser context (closed after the test) and a page in it, logged in as `name` at `path`. */
async function open(name: string, path: string, o: BrowserContextOptions = {}): Promise<Page> {
  const ctx = await browser.newContext({ viewport: DESKTOP, ...o });
  contexts.push(ctx);
  const page = await ctx.newPage();
  page.on('pageerror', (e) => pageErrors.push(`${name}: ${e.message}`));
  await page.goto(`${b.url}/login?next=${encodeURIComponent(path)}`);
  await page.getByTestId('login-name').fill(name);
  await page.getByTestId('login-password').fill(PASSWORD);
  await page.getByTestId('login-submit').click();
  await page.waitForURL(`${b.url}${path}`);
  return page;
}

/**
 * axe-core's WCAG 2.1 A/AA rules over the page: the serious and critical violations, named.
 * `axe.run` in the page itself (legacy mode): these pages have no frames, so it checks what
 * the frame-by-frame default checks, without the default's extra blank page and two more
 * injections of axe for every run (most of this file's time went there).
 */
async function axe(page: Page, what: string): Promise<string[]> {
  const r = await new AxeBuilder({ page }).setLegacyMode().withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  expect(await page.locator('iframe, frame, object, embed').count(), `${what}: a frame axe's legacy mode would not look into`).toBe(0);
  return r.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${what}: ${v.id} (${v.impact}) ${v.nodes.slice(0, 3).map((n) => `${n.target.join(' ')} ${n.failureSummary?.split('\n')[1] ?? ''}`).join(' | ')}`);
}

/** Desktop and phone screenshots; the page never scrolls sideways (a mirrored layout that overflows would). */
async function shot(page: Page, name: string): Promise<void> {
  await page.setViewportSize(DESKTOP);
  await page.screenshot({ path: join(SHOTS, `${name}-desktop.png`), fullPage: true });
  await page.setViewportSize(PHONE);
  await page.screenshot({ path: join(SHOTS, `${name}-phone.png`), fullPage: true });
  expect(await fits(page, name)).toEqual([]);
}

const catalogue = (l: Language): Record<string, string> => JSON.parse(readFileSync(join(process.cwd(), 'web-agent', 'src', 'i18n', `${l}.json`), 'utf8')) as Record<string, string>;

/**
 * A page in another language shows none of the catalogue's English sentences (every English
 * message of two words or more without placeholders, other than the language's own), and the
 * elements named show the language's catalogue words (`testid or #id` → key).
 */
async function englishLeft(page: Page, l: Language, what: string, expected: Record<string, string>): Promise<string[]> {
  const en = catalogue('en');
  const own = catalogue(l);
  const out: string[] = [];
  for (const [sel, key] of Object.entries(expected)) {
    const loc = sel.startsWith('#') ? page.locator(sel) : page.getByTestId(sel);
    const want = own[key];
    const ok = await until(`${what}: ${sel} says ${key}`, async () => ((await loc.textContent())?.trim() === want ? true : undefined), 10_000).catch(() => false);
    if (!ok) out.push(`${what}: ${sel} shows "${(await loc.textContent())?.trim()}" instead of ${key} "${want}"`);
  }
  const text = await page.evaluate(() => document.body.innerText);
  for (const [key, words] of Object.entries(en)) {
    if (words.includes(' ') && !words.includes('{') && words !== own[key] && text.includes(words)) out.push(`${what}: "${words}" (${key}) in English`);
  }
  return out;
}

const active = (page: Page) => page.evaluate(() => document.activeElement?.getAttribute('data-testid') ?? document.activeElement?.tagName ?? '');

/** Tab (or Shift+Tab) until the element with `testid` has the focus. */
async function tabTo(page: Page, testid: string, max = 60): Promise<void> {
  for (let i = 0; i < max; i++) {
    if ((await active(page)) === testid) return;
    await page.keyboard.press('Tab');
  }
  throw new Error(`the keyboard never reached ${testid} (last: ${await active(page)})`);
}

describe('the user’s language', () => {
  it('is kept with the user: PUT /api/me/language takes one of the six, 400 names the field otherwise; the page starts in it, RTL for Arabic', async () => {
    const bad = await putLanguage(agentOf('en'), { language: 'fr' });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringMatching(/^language: must be one of en, pt-BR, es, hi, id, ar/) });
    expect((await putLanguage(agentOf('en'), 'ar')).json.error.message).toMatch(/^body: /);
    expect(await putLanguage(agentOf('ar'), { language: 'ar' })).toEqual({ status: 200, json: { language: 'ar' } });
    const cookie = await login(b.url, agentOf('ar'), PASSWORD);
    expect(await (await fetch(`${b.url}/api/me/language`, { headers: { cookie } })).json()).toEqual({ language: 'ar' });

    // The page: Arabic, right to left, its words from the Arabic catalogue; numbers stay left to right.
    const page = await open(agentOf('ar'), '/');
    await page.locator('html[lang="ar"][dir="rtl"]').waitFor();
    await waitOnline(page);
    expect(await page.getByTestId('logout').textContent()).toBe('تسجيل الخروج');
    expect(await page.getByTestId('ready-check').textContent()).toBe('فحص الميكروفون والصوت');
    // The top bar's picker switches the page at once and keeps the choice.
    await page.getByTestId('language-top').selectOption('es');
    await page.locator('html[lang="es"][dir="ltr"]').waitFor();
    expect(await page.getByTestId('ready-check').textContent()).toBe('Comprobar micrófono y sonido');
    await until('the choice is kept on the server', async () => ((await (await fetch(`${b.url}/api/me/language`, { headers: { cookie } })).json()).language === 'es' ? true : undefined), 5_000);
    await putLanguage(agentOf('ar'), { language: 'ar' });
  });

  it('without a choice, the browser’s language (the login page too)', async () => {
    const ctx = await browser.newContext({ viewport: DESKTOP, locale: 'pt-BR' });
    contexts.push(ctx);
    const page = await ctx.newPage();
    await page.goto(`${b.url}/login`);
    await page.locator('html[lang="pt-BR"]').waitFor();
    expect(await page.getByTestId('login-submit').textContent()).toBe('Entrar');
    await page.getByTestId('login-submit').click();
    expect(await page.getByTestId('login-error').textContent()).toBe('Digite seu nome e sua senha.');
  });
});

describe('keyboard and screen reader', () => {
  it('a whole call without a mouse: log in, go available, answer the ring (announced, focused), hold, resume, hang up, pick a disposition, end the wrap-up; ? lists the shortcuts', async () => {
    const ctx = await browser.newContext({ viewport: DESKTOP });
    contexts.push(ctx);
    const page = await ctx.newPage();
    page.on('pageerror', (e) => pageErrors.push(`kb: ${e.message}`));
    await page.goto(`${b.url}/login?next=%2F`);
    // The name field has the focus on arrival.
    expect(await active(page)).toBe('login-name');
    await page.keyboard.type('kb');
    await page.keyboard.press('Tab');
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    await page.waitForURL(`${b.url}/`);
    await waitOnline(page);

    await tabTo(page, 'ready-check');
    await page.keyboard.press('Enter');
    await page.locator('[data-testid="ready-mic-status"][data-ok="true"]').waitFor();
    await page.locator('[data-testid="ready-sound-status"][data-ok="true"]').waitFor();
    await tabTo(page, 'presence-available');
    await page.keyboard.press('Enter');
    await stateIs(page, 'available');

    // The shortcut list: ? opens it (focus inside), Escape closes it and gives the focus back.
    const before = await active(page);
    await page.keyboard.press('Shift+Slash');
    await page.locator('dialog[data-testid="shortcut-help"][open]').waitFor();
    expect(await active(page)).toBe('shortcut-help-close');
    expect(await page.getByTestId('shortcut-list').textContent()).toMatch(/Alt\+A.*Answer.*Alt\+D.*Decline.*Alt\+M.*Alt\+H.*Alt\+X.*Hang up/);
    await page.keyboard.press('Escape');
    await page.locator('dialog[data-testid="shortcut-help"]:not([open])').waitFor({ state: 'attached' });
    // The focus comes back a moment after the dialog closes, never with it: the page restores
    // it in the dialog's 'close' event (a task queued by close()), and when nothing had the
    // focus before, Chromium moves it off the closed dialog's button only at its next
    // rendering update (until then document.activeElement is still that button).
    await until('the focus is back where it was', async () => ((await active(page)) === before ? true : undefined), 5_000);

    const wacid = await placeCall(b, { from: '+15550700001' });
    await card(page, wacid).waitFor({ timeout: 15_000 });
    // Announced (assertive live region), and the focus is on Answer.
    await until('the ring is announced', async () => (/^Incoming call from \+15550700001\. Press Alt\+A to answer/.test((await page.getByTestId('announcer').textContent()) ?? '') ? true : undefined), 5_000);
    expect(await page.getByTestId('announcer').getAttribute('aria-live')).toBe('assertive');
    await until('Answer has the focus', async () => ((await active(page)) === 'answer' ? true : undefined), 5_000);
    await page.keyboard.press('Enter');
    await page.locator('[data-testid="call-status"][data-state="connected"]').waitFor({ timeout: 15_000 });
    await until('Hang up has the focus once answered', async () => ((await active(page)) === 'hangup' ? true : undefined), 5_000);
    expect(await page.getByTestId('announcer').textContent()).toBe('Call connected');

    await page.keyboard.press('Alt+KeyH');
    await page.locator('[data-testid="hold"][aria-pressed="true"]').waitFor({ timeout: 10_000 });
    await until('hold announced', async () => ((await page.getByTestId('announcer').textContent()) === 'Call on hold' ? true : undefined), 5_000);
    await page.keyboard.press('Alt+KeyH');
    await page.locator('[data-testid="hold"][aria-pressed="false"]').waitFor({ timeout: 10_000 });
    await until('resume announced', async () => ((await page.getByTestId('announcer').textContent()) === 'Call resumed' ? true : undefined), 5_000);

    await page.keyboard.press('Alt+KeyX');
    await page.locator(`[data-testid="wrapup"][data-wacid="${wacid}"][data-state="editing"]`).waitFor({ timeout: 15_000 });
    await until('the disposition has the focus', async () => ((await active(page)) === 'wrapup-disposition' ? true : undefined), 5_000);
    await until('the wrap-up countdown is announced politely', async () => (/^After-call work: the next call can ring in/.test((await page.getByTestId('announcer-polite').textContent()) ?? '') ? true : undefined), 5_000);
    await page.keyboard.press('ArrowDown');
    expect(await page.getByTestId('wrapup-disposition').inputValue()).not.toBe('');
    await tabTo(page, 'acw-ready');
    await page.keyboard.press('Enter');
    await page.locator('[data-testid="wrapup"]').waitFor({ state: 'detached', timeout: 10_000 });
    await stateIs(page, 'available');
    // The focus went back to a control, not lost on the page.
    await until('the focus is back on a control', async () => (!['BODY', ''].includes(await active(page)) ? true : undefined), 5_000);
  }, 120_000);
});

describe('axe-core: no serious or critical violation', () => {
  it.each(['en', 'ar'] as const)('every page in the states of a shift, in %s', async (l) => {
    const found: string[] = [];
    for (const who of [agentOf(l), bossOf(l), 'root']) await putLanguage(who, { language: l });

    // Login (the browser's language).
    const ctx = await browser.newContext({ viewport: DESKTOP, locale: l });
    contexts.push(ctx);
    const login = await ctx.newPage();
    await login.goto(`${b.url}/login`);
    await login.locator(`html[lang="${l}"]`).waitFor();
    found.push(...(await axe(login, 'login')));
    // Each page is closed once checked: open pages keep their sockets, meters and audio running
    // (nine at once loaded the CI machine).
    await ctx.close();

    // The agent: idle (away), available, ringing, in call, on hold, wrap-up, away with a reason.
    const agent = await open(agentOf(l), '/');
    await waitOnline(agent);
    found.push(...(await axe(agent, 'agent idle')));
    await goAvailable(agent);
    found.push(...(await axe(agent, 'agent available')));
    const sup = await open(bossOf(l), '/supervisor');
    await waitOnline(sup);
    const wacid = await placeCall(b, { from: `+1555071000${l === 'en' ? 1 : 2}` });
    await card(agent, wacid).waitFor({ timeout: 15_000 });
    found.push(...(await axe(agent, 'agent ringing')), ...(await fits(agent, 'agent ringing')));
    await agent.getByTestId('answer').click();
    await agent.locator('[data-testid="call-status"][data-state="connected"]').waitFor({ timeout: 15_000 });
    found.push(...(await axe(agent, 'agent in call')), ...(await fits(agent, 'agent in call')));
    // The supervisor: wallboard, live calls, the queue, the Call back panel, reports; then monitoring.
    await sup.locator(`[data-testid="live-call"][data-wacid="${wacid}"]`).waitFor({ timeout: 15_000 });
    found.push(...(await axe(sup, 'supervisor wallboard')), ...(await fits(sup, 'supervisor wallboard')));
    await sup.getByTestId('callback-user').fill('+15550719999');
    found.push(...(await axe(sup, 'supervisor call-back panel')));
    await sup.locator(`[data-testid="live-call"][data-wacid="${wacid}"] [data-testid="monitor-listen"]:not([disabled])`).click();
    await sup.locator(`[data-testid="live-call"][data-wacid="${wacid}"] [data-testid="monitoring"][data-phase="live"]`).waitFor({ timeout: 45_000 });
    found.push(...(await axe(sup, 'supervisor monitoring')));
    await agent.getByTestId('hold').click();
    await agent.locator('[data-testid="hold"][aria-pressed="true"]').waitFor({ timeout: 10_000 });
    found.push(...(await axe(agent, 'agent on hold')));
    await agent.getByTestId('hold').click();
    await agent.getByTestId('hangup').click();
    await agent.locator(`[data-testid="wrapup"][data-wacid="${wacid}"]`).waitFor({ timeout: 15_000 });
    found.push(...(await axe(agent, 'agent wrap-up')), ...(await fits(agent, 'agent wrap-up')));
    await agent.getByTestId('wrapup-disposition').selectOption({ index: 1 });
    await agent.getByTestId('acw-ready').click();
    await stateIs(agent, 'available');
    await agent.getByTestId('presence-away').click();
    await stateIs(agent, 'away');
    found.push(...(await axe(agent, 'agent away')));
    await agent.context().close();
    await sup.context().close();

    // The archive with the call open, the network check, the audit trail, the admin page, the account page.
    const archive = await open(bossOf(l), '/archive');
    // History writes are queued: the call is searched for until it is there, then opened.
    await until('the call is in the archive', async () => {
      await archive.getByTestId('search-submit').click();
      return (await archive.locator(`[data-testid="search-result"][data-wacid="${wacid}"]`).count()) > 0 ? true : undefined;
    }, 20_000);
    await archive.locator(`[data-testid="search-result"][data-wacid="${wacid}"] [data-testid="result-open"]`).click();
    await archive.locator(`[data-testid="call-detail"][data-state="ready"]`).waitFor({ timeout: 15_000 });
    found.push(...(await axe(archive, 'archive with a call open')), ...(await fits(archive, 'archive with a call open')));
    // In Arabic, these pages say nothing in English (codes, numbers and names aside).
    const english: string[] = [];
    if (l !== 'en') english.push(...(await englishLeft(archive, l, 'archive', { 'search-submit': 'archive.search', '#search-title': 'archive.title', 'detail-close': 'archive.back' })));
    await archive.context().close();
    const preflight = await open(bossOf(l), '/preflight');
    // The checks run on arrival: axe once the first results are on the page (the words and times of a finished check).
    await preflight.locator('[data-testid="preflight-speaker"]:not([data-status="pending"]):not([data-status="running"])').waitFor({ timeout: 10_000 });
    found.push(...(await axe(preflight, 'preflight')), ...(await fits(preflight, 'preflight')));
    if (l !== 'en') english.push(...(await englishLeft(preflight, l, 'preflight', { '#preflight-title': 'preflight.title' })));
    await preflight.context().close();
    const audit = await open('root', '/admin/audit');
    // The first search has answered (the root's logins are in the trail).
    await audit.locator('[data-testid="audit-rows"][data-phase="idle"] tbody tr').first().waitFor({ timeout: 10_000 });
    found.push(...(await axe(audit, 'audit')), ...(await fits(audit, 'audit')));
    if (l !== 'en') english.push(...(await englishLeft(audit, l, 'audit', { 'audit-search': 'audit.search', 'audit-csv': 'audit.csv' })));
    await audit.context().close();
    const admin = await open('root', '/admin');
    await admin.getByTestId('user-row').first().waitFor({ timeout: 10_000 });
    found.push(...(await axe(admin, 'admin')), ...(await fits(admin, 'admin')));
    if (l !== 'en') english.push(...(await englishLeft(admin, l, 'admin', { 'admin-tab-users': 'admin.tabUsers', 'admin-tab-queues': 'admin.tabQueues' })));
    await admin.context().close();
    const account = await open(agentOf(l), '/account');
    await account.locator('[data-testid="my-sessions"][data-loaded="true"]').waitFor({ timeout: 10_000 });
    found.push(...(await axe(account, 'account')), ...(await fits(account, 'account')));
    if (l !== 'en') english.push(...(await englishLeft(account, l, 'account', { '#sessions-title': 'account.title', 'sign-out-everywhere': 'account.signOutEverywhere' })));
    expect(found).toEqual([]);
    expect(english).toEqual([]);
  }, 240_000);
});

describe('refusals in the user’s language', () => {
  // One supervisor page for the six languages: the language is stored, then the page reloads
  // and starts in it (as a new login would: the first test shows the page starting in the
  // stored language); each language asks for its own user, refused the second time.
  it('each of the six: a permission request refused by the ration says so with its user and when to ask again', async () => {
    const words: Record<Language, RegExp> = {
      en: /^Could not ask for permission: A permission request to \+1555072\d{4} was sent recently\. You can ask again (today|tomorrow) at \d\d:\d\d\.$/,
      'pt-BR': /^Não foi possível pedir autorização: Um pedido de autorização para \+1555072\d{4} foi enviado há pouco\. Você pode pedir de novo (hoje|amanhã) às \d\d:\d\d\.$/,
      es: /^No se pudo pedir permiso: Hace poco se envió una solicitud de permiso a \+1555072\d{4}\. Puedes volver a pedirlo (hoy|mañana) a las \d\d:\d\d\.$/,
      hi: /^अनुमति नहीं माँग पाए: \+1555072\d{4} को अनुमति का अनुरोध हाल ही में भेजा गया है। आप (आज|कल) \d\d:\d\d (am|pm) बजे फिर से माँग सकते हैं।$/,
      id: /^Tidak bisa meminta izin: Permintaan izin ke \+1555072\d{4} baru saja dikirim\. Anda bisa meminta lagi (hari ini|besok) pukul \d\d\.\d\d\.$/,
      ar: /^تعذّر طلب الإذن: أُرسل طلب إذن إلى \+1555072\d{4} قبل قليل\. يمكنك الطلب مجددًا (اليوم|غدًا) الساعة \d\d:\d\d [صم]\.$/,
    };
    const boss = bossOf('en');
    let page: Page | undefined;
    for (const l of LANGUAGES) {
      await putLanguage(boss, { language: l });
      if (page) await page.reload();
      else page = await open(boss, '/supervisor');
      await page.locator(`html[lang="${l}"]`).waitFor();
      await waitOnline(page);
      const user = `+1555072${String(LANGUAGES.indexOf(l)).padStart(4, '0')}`;
      await page.getByTestId('callback-user').fill(user);
      await page.locator('[data-testid="callback-ask"]:not([disabled])').click();
      await page.locator('[data-testid="callback-permission"][data-state="requested"]').waitFor({ timeout: 10_000 });
      await page.locator('[data-testid="callback-ask"]:not([disabled])').click();
      const error = page.getByTestId('callback-error-message');
      await error.waitFor({ timeout: 10_000 });
      const text = (await error.textContent()) ?? '';
      expect(text, l).toMatch(words[l]);
      expect(text, l).toContain(user);
      expect(text, l).not.toMatch(/\d{4}-\d\d-\d\dT|limited to/);
      expect(await page.getByTestId('callback-error').getAttribute('data-code'), l).toBe('TOO_MANY_REQUESTS');
    }
    await putLanguage(boss, { language: 'en' });
  }, 90_000);
});

// Screenshots to look at (SCREENSHOTS=1, out of `npm test`: a call in each of the six
// languages); what they would catch in CI is checked above (axe, no sideways scrolling at
// desktop and phone width in English and Arabic) and below (the dark theme).
describe('the dark theme', () => {
  it('is the system’s choice: the supervisor page’s background is dark', async () => {
    const dark = await open(bossOf('en'), '/supervisor', { colorScheme: 'dark' });
    await dark.getByTestId('wb-time-zone').waitFor();
    expect(await dark.evaluate(() => getComputedStyle(document.body).backgroundColor)).toBe('rgb(14, 19, 26)');
  });
});

describe.runIf(process.env.SCREENSHOTS)('screenshots', () => {
  it('the agent ringing and in wrap-up in each language; the supervisor page in Arabic and in the dark theme (desktop and phone)', async () => {
    for (const l of LANGUAGES) {
      await putLanguage(agentOf(l), { language: l });
      const page = await open(agentOf(l), '/');
      await waitOnline(page);
      await goAvailable(page);
      const wacid = await placeCall(b, { from: '+15550730001' });
      await card(page, wacid).waitFor({ timeout: 15_000 });
      await shot(page, `agent-ringing-${l}`);
      await page.getByTestId('answer').click();
      await page.locator('[data-testid="call-status"][data-state="connected"]').waitFor({ timeout: 15_000 });
      await page.getByTestId('hangup').click();
      await page.locator(`[data-testid="wrapup"][data-wacid="${wacid}"]`).waitFor({ timeout: 15_000 });
      await shot(page, `agent-wrapup-${l}`);
      await page.getByTestId('wrapup-disposition').selectOption({ index: 1 });
      await page.getByTestId('acw-ready').click();
      await stateIs(page, 'available');
      await page.getByTestId('presence-away').click();
      await stateIs(page, 'away');
      await page.context().close();
    }
    await putLanguage(bossOf('ar'), { language: 'ar' });
    const rtl = await open(bossOf('ar'), '/supervisor');
    await rtl.locator('html[dir="rtl"]').waitFor();
    await rtl.getByTestId('wb-time-zone').waitFor();
    await shot(rtl, 'supervisor-ar-rtl');
    const dark = await open(bossOf('en'), '/supervisor', { colorScheme: 'dark' });
    await dark.getByTestId('wb-time-zone').waitFor();
    // The dark theme is the system's choice: the page's background is dark.
    expect(await dark.evaluate(() => getComputedStyle(document.body).backgroundColor)).toBe('rgb(14, 19, 26)');
    await shot(dark, 'supervisor-dark');
    const darkAgent = await open(agentOf('en'), '/', { colorScheme: 'dark' });
    await waitOnline(darkAgent);
    await shot(darkAgent, 'agent-dark');
  }, 300_000);
});
