/**
 * The console's stylesheet, served from the app at /console/console.css (CSP style-src 'self': no
 * inline style, nothing from outside). Kept as a module so the server bundle carries it.
 * Colours meet WCAG AA contrast (4.5:1 for text) on white; focus is always visible.
 */
export const CONSOLE_CSS = `
:root { --fg: #1a1a1a; --muted: #4a4a4a; --line: #c8c8c8; --accent: #0b57d0; --bad: #a50e0e; --ok: #0d652d; --bg-soft: #f3f5f8; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: #fff; }
a { color: var(--accent); }
.skip { position: absolute; left: -999px; top: 0; background: #fff; padding: .5rem 1rem; z-index: 10; }
.skip:focus { left: .5rem; }
:focus-visible { outline: 3px solid #f9ab00; outline-offset: 2px; }
header.top { display: flex; flex-wrap: wrap; align-items: center; gap: 1rem; padding: .75rem 1.5rem; background: #202124; color: #fff; }
header.top .brand { font-weight: 700; margin-right: 1rem; }
header.top nav ul { display: flex; gap: .25rem; list-style: none; margin: 0; padding: 0; flex-wrap: wrap; }
header.top nav a { color: #fff; text-decoration: none; padding: .35rem .7rem; border-radius: 4px; }
header.top nav a:hover { background: #3c4043; }
header.top nav a[aria-current="page"] { background: #fff; color: #202124; }
header.top form { margin-left: auto; }
header.top form button { background: transparent; color: #fff; border-color: #9aa0a6; }
main { max-width: 64rem; margin: 0 auto; padding: 1.5rem; }
h1 { font-size: 1.6rem; margin: 0 0 1rem; }
h2 { font-size: 1.2rem; margin: 2rem 0 .75rem; }
label { display: block; font-weight: 600; margin: .75rem 0 .25rem; }
input[type=text], input[type=email], input[type=password], input[type=search], input[type=number], input[type=url], select, textarea {
  font: inherit; padding: .45rem .6rem; border: 1px solid #767676; border-radius: 4px; width: 100%; max-width: 28rem; }
textarea { max-width: 40rem; min-height: 6rem; }
.check label { display: inline; font-weight: 400; margin: 0 0 0 .35rem; }
.check { margin: .35rem 0; }
button, .button { font: inherit; font-weight: 600; padding: .45rem 1rem; border-radius: 4px; border: 1px solid var(--accent);
  background: var(--accent); color: #fff; cursor: pointer; text-decoration: none; display: inline-block; }
button.secondary, .button.secondary { background: #fff; color: var(--accent); }
button.danger { background: var(--bad); border-color: var(--bad); }
.actions { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin: 1rem 0; }
.actions form { margin: 0; }
form.inline { display: flex; gap: .5rem; align-items: end; flex-wrap: wrap; }
form.inline label { margin-top: 0; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
th, td { text-align: left; padding: .45rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--bg-soft); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .35rem 1.25rem; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; }
code.secret, .secret { font-family: ui-monospace, Menlo, Consolas, monospace; background: var(--bg-soft); padding: .2rem .4rem; word-break: break-all; }
.notice { border-left: 4px solid var(--ok); background: #e6f4ea; padding: .6rem 1rem; margin: 0 0 1rem; }
.error { border-left: 4px solid var(--bad); background: #fce8e6; padding: .6rem 1rem; margin: 0 0 1rem; }
.muted { color: var(--muted); }
.signin { max-width: 26rem; margin: 4rem auto; padding: 2rem; border: 1px solid var(--line); border-radius: 8px; }
.qr svg { width: 220px; height: 220px; }
.pager { display: flex; gap: 1rem; }
.field-error { color: var(--bad); font-weight: 600; margin: .25rem 0 0; }
input[aria-invalid="true"], textarea[aria-invalid="true"], select[aria-invalid="true"] { border-color: var(--bad); border-width: 2px; }
.required { color: var(--bad); margin-left: .2rem; }
fieldset { border: 1px solid var(--line); border-radius: 4px; margin: .75rem 0; max-width: 40rem; }
.suggestions { list-style: none; padding: 0; margin: .25rem 0; max-width: 28rem; }
.suggestions button { width: 100%; text-align: left; background: #fff; color: var(--fg); border-color: var(--line); font-weight: 400; }
.pager ul { display: flex; flex-wrap: wrap; gap: .75rem; list-style: none; margin: 0; padding: 0; }
.pager a[aria-current="page"] { font-weight: 700; color: var(--fg); text-decoration: none; }
form[role="search"] input[type=search] { min-width: 18rem; }
.req { color: var(--bad); }
.field.invalid input, .field.invalid textarea, .field.invalid select { border: 2px solid var(--bad); }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
nav.tabs ul { display: flex; flex-wrap: wrap; gap: .25rem; list-style: none; margin: 0 0 1rem; padding: 0; border-bottom: 1px solid var(--line); }
nav.tabs a { display: inline-block; padding: .4rem .8rem; text-decoration: none; border: 1px solid transparent; border-bottom: none; border-radius: 4px 4px 0 0; }
nav.tabs a[aria-current="page"] { border-color: var(--line); background: #fff; color: var(--fg); font-weight: 600; margin-bottom: -1px; }
`;
