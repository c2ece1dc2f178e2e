/**
 * The browser side of the passkey ceremonies, served after @simplewebauthn/browser's bundle (which defines
 * the global SimpleWebAuthnBrowser) at GET /assets/passkeys.js. Plain script, no inline code, so a page's
 * CSP needs only script-src 'self' and connect-src 'self' (securityHeaders(…, { passkeys: true })).
 *
 * The hooks a page writes (<script src="/assets/passkeys.js" defer> in its head):
 * - A button `data-passkey="register"` or `data-passkey="authenticate"` with `data-options-url` and
 *   `data-verify-url`: POST endpoints of the page's own route family, same origin, JSON both ways.
 *   On click the glue POSTs the fields of the button's form (if any; e.g. an input named `name`, the
 *   `Passkey name`) as JSON to data-options-url, which answers { ceremonyId, options }; runs the browser's
 *   ceremony with those options; then POSTs { ...the form's fields, ceremonyId, response } to
 *   data-verify-url, which answers { location } (2xx: the glue goes there) or { message } (4xx: shown;
 *   with a location too, the glue goes there instead).
 * - Errors are written into the element with role=alert nearest the button (inside its form, else the
 *   first on the page; one is made after the button when there is none).
 * - Autofill (conditional mediation): an element with `data-passkey-autofill`, `data-options-url` and
 *   `data-verify-url` (an authenticate pair) starts a username-less ceremony when the page loads, if the
 *   browser offers passkeys in autofill; the page's username input says autocomplete="username webauthn".
 */
export const PASSKEYS_GLUE = String.raw`
(function () {
  'use strict';
  var lib = window.SimpleWebAuthnBrowser;
  if (!lib) return;

  function fieldsOf(element) {
    var form = element.closest('form');
    var fields = {};
    if (!form) return fields;
    new FormData(form).forEach(function (value, key) {
      if (typeof value === 'string') fields[key] = value;
    });
    return fields;
  }

  function alertFor(element) {
    var form = element.closest('form');
    var found = (form && form.querySelector('[role=alert]')) || document.querySelector('[role=alert]');
    if (found) return found;
    var made = document.createElement('p');
    made.setAttribute('role', 'alert');
    made.className = 'error';
    element.insertAdjacentElement('afterend', made);
    return made;
  }

  function say(element, message) {
    alertFor(element).textContent = message;
  }

  function postJson(url, body) {
    return fetch(url, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body),
    }).then(function (reply) {
      return reply.json().catch(function () { return {}; }).then(function (json) {
        return { ok: reply.ok, json: json };
      });
    });
  }

  // Set once a button's ceremony starts: a new WebAuthn call aborts the one in progress, so an autofill
  // request whose options arrive after the click must not start (it would cancel the button's).
  var buttonStarted = false;

  function ceremony(element, kind, autofill) {
    var fields = fieldsOf(element);
    return postJson(element.getAttribute('data-options-url'), fields).then(function (started) {
      if (autofill && buttonStarted) return;
      if (started.json.location) { window.location.assign(started.json.location); return; }
      if (!started.ok) throw new Error(started.json.message || 'The passkey could not be used.');
      var run = kind === 'register'
        ? lib.startRegistration({ optionsJSON: started.json.options })
        : lib.startAuthentication({ optionsJSON: started.json.options, useBrowserAutofill: autofill });
      return run.then(function (response) {
        var body = Object.assign({}, fields, { ceremonyId: started.json.ceremonyId, response: response });
        return postJson(element.getAttribute('data-verify-url'), body);
      }).then(function (verified) {
        if (verified.json.location) { window.location.assign(verified.json.location); return; }
        throw new Error(verified.json.message || 'The passkey was not accepted.');
      });
    });
  }

  function explain(error) {
    // The browser's own refusals (cancelled, timed out, no matching passkey) all arrive as NotAllowedError.
    if (error && (error.name === 'NotAllowedError' || error.code === 'ERROR_CEREMONY_ABORTED')) return 'The passkey was not used.';
    if (error && error.name === 'InvalidStateError') return 'This passkey is already registered.';
    return (error && error.message) || 'The passkey could not be used.';
  }

  document.addEventListener('click', function (event) {
    var button = event.target.closest && event.target.closest('[data-passkey]');
    if (!button) return;
    event.preventDefault();
    buttonStarted = true;
    say(button, '');
    button.disabled = true;
    ceremony(button, button.getAttribute('data-passkey'), false).catch(function (error) {
      say(button, explain(error));
    }).finally(function () {
      button.disabled = false;
    });
  });

  function startAutofill() {
    var holder = document.querySelector('[data-passkey-autofill]');
    if (!holder || !lib.browserSupportsWebAuthnAutofill) return;
    lib.browserSupportsWebAuthnAutofill().then(function (supported) {
      if (!supported) return;
      return ceremony(holder, 'authenticate', true).catch(function (error) {
        // A button's ceremony aborts the waiting autofill one: nothing to say then.
        if (error && error.code === 'ERROR_CEREMONY_ABORTED') return;
        if (error && error.name === 'AbortError') return;
        say(holder, explain(error));
      });
    });
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', startAutofill);
  else startAutofill();
})();
`;
