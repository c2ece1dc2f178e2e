/**
 * Applications (JWT, OAUTH, SAML): the list, each a link to its page (applications/application-page.ts:
 * edit, login policies, delete), and Create application. An OAUTH application's client secret is shown
 * once, on the page that answers its creation.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { findApplicationProblems } from '../../identity/applications/service.ts';
import { APPLICATION_TYPES, type ApplicationInput, type ApplicationType } from '../../identity/applications/types.ts';
import { APPLICATION_NAME } from '../../identity/applications/rules.ts';
import { Conflict, Invalid } from '../../lib/errors.ts';
import { field, owner, pageContext, query, sendPage, type ConsoleContext } from '../context.ts';
import { html } from '../html.ts';
import { consolePage, csrfField, type Notice } from '../layout.ts';
import { applicationPageRoutes } from './applications/application-page.ts';
import { describeProblem, urlLines } from './applications/form.ts';
import { NO_SAML_VALUES, readSamlForm, samlFields, samlInput, type SamlFormValues } from './applications/saml-fields.ts';
import { ENTITY_ID_TAKEN, TYPE_WORDS, type SamlFieldName } from './applications/words.ts';
import { errorNotices, fieldError, fieldState, plural, REQUIRED, REQUIRED_NOTE, type FieldErrors } from '../forms.ts';

interface CreateState { status?: number; errors?: FieldErrors; values?: Record<'name' | 'type' | 'urls' | 'loginUrls' | 'postLogoutRedirectUris', string> & { saml: SamlFormValues } }

/** The create form's element ids of the SAML settings. */
const SAML_IDS: Record<SamlFieldName, string> = {
  entityId: 'app-entity-id', acsUrls: 'app-acs-urls', nameIdFormat: 'app-name-id-format', sloUrl: 'app-slo-url', spCertificate: 'app-sp-certificate', spMetadata: 'app-sp-metadata',
};
const LIST_IDS: Record<string, string> = { name: 'app-name', loginUrls: 'app-login-urls', postLogoutRedirectUris: 'app-logout-urls', ...SAML_IDS };

export function applicationRoutes(ctx: ConsoleContext) {
  return async (app: FastifyInstance): Promise<void> => {
    const { applications, policies } = ctx.services;

    const listPage = async (request: FastifyRequest, reply: FastifyReply, state: CreateState = {}) => {
      const me = owner(request);
      const page = pageContext(ctx, request, reply);
      const [apps, rules] = await Promise.all([applications.list(me.customerId), policies.list(me.customerId)]);
      const notices: Notice[] = query(request, 'done') === 'deleted' ? [{ kind: 'notice', text: 'Application deleted.' }] : [];
      const errors = state.errors ?? {};
      const values = state.values ?? { name: '', type: 'JWT', urls: '', loginUrls: '', postLogoutRedirectUris: '', saml: NO_SAML_VALUES };
      const policyCount = (uuid: string) => rules.filter((r) => r.applicationUuid === uuid).length;
      return sendPage(reply, state.status ?? 200, consolePage(page, 'applications', 'Applications', html`
${apps.length === 0 ? html`<p>No applications yet.</p>` : html`
<table>
<thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col">Login policies</th><th scope="col">Application id</th></tr></thead>
<tbody>${apps.map((a) => html`<tr><td><a href="${ctx.root}/applications/${a.uuid}">${a.name}</a></td><td>${TYPE_WORDS[a.type]}</td><td>${plural(policyCount(a.uuid), 'policy', 'policies')}</td><td><code>${a.uuid}</code></td></tr>`)}</tbody>
</table>
<p>${plural(apps.length, 'application')}.</p>`}
<h2>Create application</h2>
${REQUIRED_NOTE}
<form method="post" action="${ctx.root}/applications">
${csrfField(page)}
<label for="app-name">Application name${REQUIRED}</label><input id="app-name" name="name" type="text" required maxlength="${APPLICATION_NAME.maxLength}" value="${values.name}"${fieldState(errors, 'app-name')}>
${fieldError(errors, 'app-name')}
<label for="app-type">Type</label><select id="app-type" name="type">${APPLICATION_TYPES.map((t) => html`<option value="${t}"${t === values.type ? ' selected' : ''}>${TYPE_WORDS[t]}</option>`)}</select>
<label for="app-urls">Return or redirect URLs</label>
<textarea id="app-urls" name="urls"${fieldState(errors, 'app-urls', 'app-urls-help')}>${values.urls}</textarea>
${fieldError(errors, 'app-urls')}
<p id="app-urls-help" class="muted">One per line. JWT: where the magic-link landing may send the user with the token. OAUTH: the client's redirect URIs.</p>
<label for="app-login-urls">Login URLs (OAUTH)</label>
<textarea id="app-login-urls" name="loginUrls"${fieldState(errors, 'app-login-urls')}>${values.loginUrls}</textarea>
${fieldError(errors, 'app-login-urls')}
<label for="app-logout-urls">Post-logout redirect URIs (OAUTH)</label>
<textarea id="app-logout-urls" name="postLogoutRedirectUris"${fieldState(errors, 'app-logout-urls', 'app-logout-urls-help')}>${values.postLogoutRedirectUris}</textarea>
${fieldError(errors, 'app-logout-urls')}
<p id="app-logout-urls-help" class="muted">One per line. Where signing out at the identity provider may send the browser back.</p>
<fieldset><legend>SAML service provider (SAML applications)</legend>
${samlFields(values.saml, errors, (f) => SAML_IDS[f], 'Or paste the service provider\'s metadata (XML) here instead of Entity ID, ACS URLs, Single logout URL and SP certificate; the NameID format chosen above applies.')}
</fieldset>
<div class="actions"><button type="submit">Create application</button></div>
</form>
`, [...notices, ...errorNotices(errors)]));
    };

    app.get('/applications', async (request, reply) => listPage(request, reply));

    app.post('/applications', async (request, reply) => {
      const body = request.body as Record<string, unknown> | undefined;
      const text = (name: string) => (typeof body?.[name] === 'string' ? body[name] as string : '');
      const values = {
        name: field(body, 'name'), type: field(body, 'type'), urls: text('urls'), loginUrls: text('loginUrls'), postLogoutRedirectUris: text('postLogoutRedirectUris'),
        saml: readSamlForm(body),
      };
      const type = values.type as ApplicationType;
      const urls = urlLines(values.urls);
      // The NameID format is picked, never typed: other types leave it out.
      const { nameIdFormat, ...samlTyped } = samlInput(values.saml, { metadataReplaces: false });
      // Nothing typed is dropped: URLs a type does not use are refused beside their field.
      const input: ApplicationInput = {
        name: values.name,
        type,
        ...(type === 'OAUTH' ? { redirectUris: urls } : { returnUrls: urls }),
        loginUrls: urlLines(values.loginUrls),
        postLogoutRedirectUris: urlLines(values.postLogoutRedirectUris),
        ...samlTyped,
        ...(type === 'SAML' ? { nameIdFormat } : {}),
      };
      const errors: FieldErrors = {};
      if (!APPLICATION_TYPES.includes(type)) errors['app-type'] = `Type must be one of ${APPLICATION_TYPES.join(', ')}`;
      else {
        // Every broken rule at once, each beside its field; the service checks them again.
        for (const problem of findApplicationProblems(input)) {
          const { list, message } = describeProblem(problem, input, 'Application name', type === 'OAUTH' && problem.field.startsWith('redirectUris') ? 'Redirect URIs' : undefined);
          errors[LIST_IDS[list] ?? 'app-urls'] ??= message;
        }
      }
      if (Object.keys(errors).length > 0) return listPage(request, reply, { status: 400, errors, values });
      try {
        const created = await applications.create(owner(request).customerId, input, request.auditContext);
        if (!created.clientSecret) return reply.redirect(`${ctx.root}/applications/${created.application.uuid}?done=created`, 303);
        // Shown once, on this answer: the secret is not stored, so no later page can show it.
        return showSecret(request, reply, created.application, created.clientSecret);
      } catch (error) {
        // Another application has the SP's entity ID: said beside where it came from.
        if (error instanceof Conflict) return listPage(request, reply, { status: 400, errors: { [SAML_IDS[input.spMetadata ? 'spMetadata' : 'entityId']]: ENTITY_ID_TAKEN }, values });
        if (error instanceof Invalid) return listPage(request, reply, { status: 400, errors: { 'app-name': error.message }, values });
        throw error;
      }
    });

    const { routes, showSecret } = applicationPageRoutes(ctx);
    await app.register(routes);
  };
}
