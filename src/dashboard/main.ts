// The dashboard shell: sign-in with a key, navigation, hash routes.
import { ApiError, get, request, session, setAuthLostHandler, sso, ssoLogout, ssoState, type KeyInfo, type SsoUser } from './api';
import { h, replace } from './dom';
import { auditPage } from './pages/audit';
import { generationPage } from './pages/generation';
import { keysPage } from './pages/keys';
import { mcpPage } from './pages/mcp';
import { modelPage, modelsPage } from './pages/models';
import { catalogPage } from './pages/catalog';
import { requestsPage } from './pages/requests';
import { usagePage } from './pages/usage';
import { errorBox, isAdmin, LIVE_INTERVAL_MS, loading, type Page, type PageContext } from './ui';

const app = document.getElementById('app')!;

interface Route {
  page: Page;
  nav: string;
}

/** `#/name/rest…?query` → the page and its arguments. */
function resolve(hash: string): { route: Route; rest: string[]; params: URLSearchParams } | null {
  const raw = hash.replace(/^#\/?/, '');
  const q = raw.indexOf('?');
  const path = (q === -1 ? raw : raw.slice(0, q)).split('/').filter(Boolean).map((s) => decodeURIComponent(s));
  const params = new URLSearchParams(q === -1 ? '' : raw.slice(q + 1));
  const [name = 'usage', ...rest] = path;
  switch (name) {
    case 'usage':
      return { route: { page: usagePage, nav: 'usage' }, rest, params };
    case 'requests':
      return { route: { page: requestsPage, nav: 'requests' }, rest, params };
    case 'generation':
      return { route: { page: generationPage, nav: 'requests' }, rest, params };
    case 'models':
      return { route: { page: rest.length ? modelPage : modelsPage, nav: 'models' }, rest, params };
    case 'keys':
      return { route: { page: keysPage, nav: 'keys' }, rest, params };
    case 'catalog':
      return { route: { page: catalogPage, nav: 'catalog' }, rest, params };
    case 'mcp':
      return { route: { page: mcpPage, nav: 'mcp' }, rest, params };
    case 'audit':
      return { route: { page: auditPage, nav: 'audit' }, rest, params };
    default:
      return null;
  }
}

let me: KeyInfo | null = null;

// ---- live updates: one refresher per page visit, paused by the top bar's control ----
const LIVE_STORAGE = 'opinference.live';
let liveOn = sessionStorage.getItem(LIVE_STORAGE) !== 'paused';
let liveRefresh: (() => Promise<void>) | null = null;
let liveBusy = false;
let liveTimer: ReturnType<typeof setInterval> | null = null;

/** One refresh, unless paused, hidden (no requests from a background tab) or one is running. */
function liveTick(): void {
  const fn = liveRefresh;
  if (!fn || !liveOn || document.visibilityState !== 'visible' || liveBusy) return;
  liveBusy = true;
  void fn()
    .catch(() => {}) // a failed refresh keeps what is shown; the next tick tries again
    .finally(() => {
      liveBusy = false;
    });
}

function setLive(fn: (() => Promise<void>) | null): void {
  liveRefresh = fn;
  liveBusy = false;
  if (liveTimer) clearInterval(liveTimer);
  liveTimer = fn ? setInterval(liveTick, LIVE_INTERVAL_MS) : null;
}

document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible') liveTick(); // catch up at once on return
});

function liveControl(): HTMLElement {
  const label = h('span', { class: 'live-label' });
  const button = h('button', { type: 'button', class: 'btn btn-ghost live-toggle', id: 'live-toggle' });
  const show = () => {
    label.textContent = liveOn ? 'Live' : 'Paused';
    button.textContent = liveOn ? 'Pause' : 'Resume';
    button.setAttribute('aria-pressed', String(!liveOn));
    button.title = liveOn ? `Pages refresh every ${LIVE_INTERVAL_MS / 1000} s; pause to keep what is shown` : 'Live updates are paused';
    wrap.dataset.live = liveOn ? 'on' : 'paused';
  };
  const wrap = h('div', { class: 'live', id: 'live' }, h('span', { class: 'live-dot', 'aria-hidden': 'true' }), label, button);
  button.addEventListener('click', () => {
    liveOn = !liveOn;
    sessionStorage.setItem(LIVE_STORAGE, liveOn ? 'on' : 'paused');
    show();
    if (liveOn) liveTick();
  });
  show();
  return wrap;
}
const leaving: (() => void)[] = [];
let main: HTMLElement | null = null;

function navigate(routeText: string, options: { replace?: boolean } = {}): void {
  const hash = `#${routeText.startsWith('/') ? routeText : `/${routeText}`}`;
  if (options.replace) {
    history.replaceState(null, '', hash);
    void render();
  } else if (location.hash === hash) {
    void render();
  } else {
    location.hash = hash;
  }
}

/** Whether the gateway offers single sign-on (learned at start from `/auth/me`). */
let ssoConfigured = false;

function signOut(message?: string): void {
  const wasSso = me?.sso === true;
  session.clear();
  me = null;
  setLive(null);
  for (const fn of leaving.splice(0)) fn();
  if (!wasSso) return showSignIn(message);
  // The session cookie is cleared by the gateway; then the provider's own logout, if it has one.
  const lost = sso.csrf === null || message !== undefined;
  (lost ? Promise.resolve(null) : ssoLogout())
    .then((url) => {
      if (url) location.assign(url);
      else showSignIn(message ?? 'Signed out.');
    })
    .catch((err: unknown) => showSignIn(`Sign-out failed: ${err instanceof Error ? err.message : String(err)}`));
}

/** A single sign-on user as the pages see a signed-in identity. */
function ssoMe(user: SsoUser): KeyInfo {
  return { id: `user:${user.sub}`, name: user.name, label: user.email ?? user.sub, is_admin: user.is_admin, limit: null, limit_remaining: null, rate_limit: null, sso: true, manages_keys: user.manages_keys, roles: user.roles };
}

function showSignIn(message?: string): void {
  document.title = 'Sign in · opinference';
  const input = h('input', { type: 'password', name: 'key', id: 'key', autocomplete: 'off', spellcheck: 'false', required: true, placeholder: 'op-… or the admin key', 'aria-describedby': 'signin-help' });
  const status = h('div', { class: 'signin-status', 'aria-live': 'polite' }, message ? errorBox(new ApiError(401, '', message)) : null);
  const button = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Sign in');
  const form = h(
    'form',
    { class: 'signin card', id: 'signin' },
    h('div', { class: 'brand brand-large' }, h('span', { class: 'brand-mark', 'aria-hidden': 'true' }), 'opinference'),
    h('h1', null, 'Sign in'),
    ssoConfigured ? h('a', { class: 'btn btn-primary', id: 'sso-signin', href: '/auth/login' }, 'Sign in with single sign-on') : null,
    ssoConfigured ? h('p', { class: 'hint' }, 'Or with an API key:') : null,
    h('label', { for: 'key' }, 'API key'),
    input,
    h('p', { class: 'hint', id: 'signin-help' }, 'The admin key (OP_ADMIN_KEY) sees every key and request; any other key sees its own. The key stays in this tab only.'),
    button,
    status,
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const key = input.value.trim();
    if (!key) return;
    button.disabled = true;
    replace(status, loading('Checking the key…'));
    request<{ data: KeyInfo }>('GET', '/v1/key', { key })
      .then(({ data }) => {
        session.save(key);
        me = data;
        showApp();
      })
      .catch((err: unknown) => {
        button.disabled = false;
        const refused = err instanceof ApiError && (err.status === 401 || err.status === 403);
        replace(status, refused ? errorBox(new ApiError(err.status, err.code, `That key was not accepted: ${err.message.replace(/\.$/, '')}.`)) : errorBox(err, 'Could not sign in:'));
        input.select();
      });
  });
  replace(app, h('main', { class: 'signin-wrap' }, form));
  input.focus();
}

function showApp(): void {
  if (!me) return;
  const admin = isAdmin(me);
  const navItem = (name: string, label: string) => h('a', { href: `#/${name}`, 'data-nav': name }, label);
  main = h('main', { class: 'content', id: 'main' });
  replace(
    app,
    h(
      'header',
      { class: 'topbar' },
      h('a', { class: 'brand', href: '#/usage' }, h('span', { class: 'brand-mark', 'aria-hidden': 'true' }), 'opinference'),
      h('nav', { class: 'nav', 'aria-label': 'Pages' }, navItem('usage', 'Usage'), navItem('requests', 'Requests'), navItem('models', 'Models'), navItem('mcp', 'MCP'), navItem('keys', admin || me.sso ? 'Keys' : 'My key'), admin ? navItem('catalog', 'Catalog') : null, admin ? navItem('audit', 'Audit') : null),
      h(
        'div',
        { class: 'who' },
        liveControl(),
        h('span', { class: 'who-name', title: me.id }, me.name),
        admin ? h('span', { class: 'badge badge-admin' }, 'admin') : null,
        !admin && me.sso ? h('span', { class: 'badge', id: 'who-roles' }, (me.roles ?? []).join(', ')) : null,
        h('button', { type: 'button', class: 'btn btn-ghost', id: 'signout', onclick: () => signOut() }, 'Sign out'),
      ),
    ),
    main,
  );
  void render();
}

let renderCount = 0;

async function render(): Promise<void> {
  if (!me || !main) return;
  const n = ++renderCount;
  setLive(null);
  for (const fn of leaving.splice(0)) fn();
  const resolved = resolve(location.hash);
  for (const a of document.querySelectorAll<HTMLAnchorElement>('.nav a')) a.classList.toggle('active', a.dataset.nav === resolved?.route.nav);
  // Each visit renders into a fresh element: late answers of a page left behind land nowhere.
  const root = h('div', { class: 'page' });
  replace(main, root);
  if (!resolved) {
    replace(root, errorBox(new Error(`No page ${location.hash}.`)));
    return;
  }
  const ctx: PageContext = {
    me,
    rest: resolved.rest,
    params: resolved.params,
    navigate,
    onLeave: (fn) => {
      if (n === renderCount) leaving.push(fn);
      else fn();
    },
    live: (fn) => {
      if (n === renderCount) setLive(fn);
    },
  };
  try {
    await resolved.route.page(root, ctx);
  } catch (err) {
    if (n === renderCount) replace(root, errorBox(err));
  }
  if (n === renderCount) document.title = `${root.querySelector('h1')?.textContent ?? 'opinference'} · opinference`;
}

setAuthLostHandler((err) => signOut(`Signed out: ${err.message.replace(/\.$/, '')}.`));
window.addEventListener('hashchange', () => void render());

async function start(): Promise<void> {
  const key = session.key();
  replace(app, loading());
  // Whether the gateway offers single sign-on (the sign-in page's button), and its session.
  let user: SsoUser | null = null;
  try {
    const state = await ssoState();
    ssoConfigured = state.configured;
    user = state.user;
  } catch {
    // the key sign-in still works
  }
  if (!key) {
    // No key in this tab: the single sign-on session, if there is one.
    if (!user) return showSignIn();
    me = ssoMe(user);
    return showApp();
  }
  try {
    me = (await get<{ data: KeyInfo }>('/v1/key')).data;
    showApp();
  } catch (err) {
    if (!session.key()) return; // the auth-lost handler showed the sign-in page
    replace(app, h('main', { class: 'signin-wrap' }, errorBox(err, 'The gateway could not be reached:'), h('button', { class: 'btn', onclick: () => void start() }, 'Retry')));
  }
}

void start();
