/**
 * One application's page: Edit (Name and the URL lists its type uses, one URL a line), its login
 * policies (the group picked from the customer's groups, factors in words), Create policy, and the
 * deletes, each asked on a page of its own first and answered with a redirect.
 */
import { X509Certificate } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { applicationLists, findApplicationProblems } from '../../../identity/applications/service.ts';
import { APPLICATION_NAME } from '../../../identity/applications/rules.ts';
import type { Application, SamlServiceProvider } from '../../../identity/applications/types.ts';
import { FIRST_FACTORS, SECOND_FACTORS, type FirstFactor, type LoginPolicy, type SecondFactor } from '../../../identity/policies/types.ts';
import { parsePolicyId } from '../../../identity/policies/rules.ts';
import { customerIssuer } from '../../../identity/oidc/service.ts';
import { Conflict, Invalid, NotFound } from '../../../lib/errors.ts';
import { field, owner, pageContext, query, sendPage, type ConsoleContext } from '../../context.ts';
import { html, type Fragment } from '../../html.ts';
import { consolePage, csrfField, postButton, type Notice } from '../../layout.ts';
import { errorNotices, fieldError, fieldState, plural, REQUIRED, REQUIRED_NOTE, type FieldErrors } from '../../forms.ts';
import { describeProblem, urlLines } from './form.ts';
import { readSamlForm, samlFields, samlFormValuesOf, samlInput, type SamlFormValues } from './saml-fields.ts';
import {
  ENTITY_ID_TAKEN, FIRST_FACTOR_WORDS, LIST_WORDS, NAME_ID_FORMAT_WORDS, SECOND_FACTOR_WORDS, TYPE_WORDS, type UrlListName,
} from './words.ts';

const NOTICES: Record<string, string> = {
  created: 'Application created.', saved: 'Changes saved.', 'policy-created': 'Login policy created.', 'policy-deleted': 'Login policy deleted.',
};
const LIST_HELP: Record<UrlListName, string> = {
  returnUrls: 'Where the magic-link landing may send the user with the token.',
  redirectUris: "The OpenID client's registered redirect URIs.",
  loginUrls: "The application's own sign-in pages (the landing's default target).",
  postLogoutRedirectUris: 'Where signing out at the identity provider may send the browser back (post_logout_redirect_uri, exactly as written here).',
};
const MAX_GROUPS = 1000;

interface PageState {
  status?: number;
  errors?: FieldErrors;
  notices?: Notice[];
  secret?: Fragment;
  /** What was typed in Edit. */
  edit?: { name: string; saml?: SamlFormValues } & Partial<Record<UrlListName, string>>;
  /** What was picked in Create policy. */
  policy?: { group: string; firstFactor: string; secondFactor: string };
}

const groupWords = (policy: LoginPolicy) => policy.groupName ?? 'Everyone else (application-wide)';

/** A SAML application's service provider as registered, and the identity provider's metadata URL to give it. */
const samlFacts = (saml: SamlServiceProvider, metadataUrl: string) => html`<dt>Identity provider metadata</dt><dd><a href="${metadataUrl}" id="idp-metadata-url">${metadataUrl}</a> <span class="muted">(give this URL to the service provider)</span></dd>
<dt>Entity ID</dt><dd><code>${saml.entityId}</code></dd>
<dt>ACS URLs</dt><dd>${saml.acsUrls.map((u, i) => html`${i > 0 ? html`<br>` : ''}<code>${u}</code>${i === 0 ? ' (default)' : ''}`)}</dd>
<dt>NameID format</dt><dd>${NAME_ID_FORMAT_WORDS[saml.nameIdFormat]}</dd>
<dt>Single logout URL</dt><dd>${saml.sloUrl ? html`<code>${saml.sloUrl}</code>` : 'None'}</dd>
<dt>SP certificate</dt><dd>${saml.spCertificate ? `${new X509Certificate(saml.spCertificate).subject.replace(/\n/g, ', ')}: requests must be signed` : 'None: requests may come unsigned'}</dd>`;

export function applicationPageRoutes(ctx: ConsoleContext) {
  const { applications, policies, groups } = ctx.services;

  const uuidParam = (request: FastifyRequest) => {
    const uuid = (request.params as { uuid: string }).uuid;
    if (!/^[0-9a-f-]{36}$/.test(uuid)) throw new NotFound('application');
    return uuid;
  };
  const load = (request: FastifyRequest) => applications.get(owner(request).customerId, uuidParam(request));
  const url = (a: Application) => `/applications/${a.uuid}`;

  const appPage = async (request: FastifyRequest, reply: FastifyReply, a: Application, state: PageState = {}) => {
    const page = pageContext(ctx, request, reply);
    const customerId = owner(request).customerId;
    const [rules, groupPage] = await Promise.all([policies.list(customerId), groups.search(customerId, { text: '', offset: 0, limit: MAX_GROUPS })]);
    const mine = rules.filter((r) => r.applicationUuid === a.uuid);
    const errors = state.errors ?? {};
    const done = query(request, 'done');
    const notices = state.notices ?? (NOTICES[done] ? [{ kind: 'notice' as const, text: NOTICES[done] }] : []);
    const lists = applicationLists(a.type);
    const edit = state.edit ?? {
      name: a.name, returnUrls: a.returnUrls.join('\n'), redirectUris: a.redirectUris.join('\n'), loginUrls: a.loginUrls.join('\n'), postLogoutRedirectUris: a.postLogoutRedirectUris.join('\n'),
      saml: samlFormValuesOf(a.saml),
    };
    const picked = state.policy ?? { group: '', firstFactor: 'MAGIC_LINK', secondFactor: 'NONE' };
    return sendPage(reply, state.status ?? 200, consolePage(page, 'applications', a.name, html`
${state.secret ?? ''}
<dl class="facts">
<dt>Type</dt><dd>${TYPE_WORDS[a.type]}</dd>
<dt>${a.type === 'OAUTH' ? 'Application id (client_id)' : 'Application id'}</dt><dd><code>${a.uuid}</code></dd>
<dt>Created</dt><dd>${new Date(a.createdAt).toISOString().slice(0, 16).replace('T', ' ')} UTC</dd>
${a.saml ? samlFacts(a.saml, `${customerIssuer(ctx.publicUrl, owner(request).customerKey)}/saml/metadata`) : ''}
</dl>
<h2 id="edit-heading">Edit</h2>
${REQUIRED_NOTE}
<form method="post" action="${ctx.root}${url(a)}/edit" aria-labelledby="edit-heading">
${csrfField(page)}
<label for="name">Name${REQUIRED}</label><input id="name" name="name" type="text" required maxlength="${APPLICATION_NAME.maxLength}" value="${edit.name}"${fieldState(errors, 'name')}>
${fieldError(errors, 'name')}
${lists.uses.map((list) => html`<label for="${list}">${LIST_WORDS[list]}${lists.requires.includes(list) ? REQUIRED : ''}</label>
<textarea id="${list}" name="${list}"${lists.requires.includes(list) ? ' required' : ''}${fieldState(errors, list, `${list}-help`)}>${edit[list] ?? ''}</textarea>
${fieldError(errors, list)}
<p id="${list}-help" class="muted">One URL a line (https:// or http://). ${LIST_HELP[list]}</p>`)}
${a.type === 'SAML'
    ? samlFields(edit.saml ?? samlFormValuesOf(a.saml), errors, (f) => f, 'Or paste the service provider\'s metadata (XML) here: it replaces Entity ID, ACS URLs, Single logout URL and SP certificate; the NameID format chosen above applies.')
    : lists.uses.length === 0 ? html`<p class="muted">A ${TYPE_WORDS[a.type]} application has no URL lists.</p>` : ''}
<div class="actions"><button type="submit">Save</button></div>
</form>

<h2>Login policies</h2>
${mine.length === 0 ? html`<p>No login policies: every user signs in with a magic link and no second factor.</p>` : html`
<table>
<thead><tr><th scope="col">Group</th><th scope="col">First factor</th><th scope="col">Second factor</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${mine.map((r) => html`<tr><td>${groupWords(r)}</td><td>${FIRST_FACTOR_WORDS[r.firstFactor]}</td><td>${SECOND_FACTOR_WORDS[r.secondFactor]}</td>
<td><form method="get" action="${ctx.root}${url(a)}/policies/${r.id}/delete"><button type="submit" class="secondary">Delete policy for ${groupWords(r)}</button></form></td></tr>`)}</tbody>
</table>`}
<p class="muted">A user signs in by the policy of one of their groups (the oldest when several have one), else by the application-wide one.</p>
<h3 id="policy-heading">Create login policy</h3>
<form method="post" action="${ctx.root}${url(a)}/policies" aria-labelledby="policy-heading">
${csrfField(page)}
<label for="policy-group">Group</label>
<select id="policy-group" name="group"${fieldState(errors, 'policy-group')}>
<option value="">Everyone else (application-wide)</option>
${groupPage.items.map((g) => html`<option value="${g.name}"${g.name === picked.group ? ' selected' : ''}>${g.name}</option>`)}
</select>
${fieldError(errors, 'policy-group')}
<label for="policy-first">First factor</label><select id="policy-first" name="firstFactor"${fieldState(errors, 'policy-first')}>${FIRST_FACTORS.map((f) => html`<option value="${f}"${f === picked.firstFactor ? ' selected' : ''}>${FIRST_FACTOR_WORDS[f]}</option>`)}</select>
${fieldError(errors, 'policy-first')}
<label for="policy-second">Second factor</label><select id="policy-second" name="secondFactor"${fieldState(errors, 'policy-second')}>${SECOND_FACTORS.map((f) => html`<option value="${f}"${f === picked.secondFactor ? ' selected' : ''}>${SECOND_FACTOR_WORDS[f]}</option>`)}</select>
${fieldError(errors, 'policy-second')}
<div class="actions"><button type="submit">Create policy</button></div>
</form>

<h2>Delete</h2>
<form method="get" action="${ctx.root}${url(a)}/delete"><button type="submit" class="danger">Delete application</button></form>
`, [...notices, ...errorNotices(errors)]));
  };

  /** The page answering an OAUTH application's creation: its client secret, this once. */
  const showSecret = (request: FastifyRequest, reply: FastifyReply, a: Application, secret: string) => appPage(request, reply, a, {
    notices: [{ kind: 'notice', text: `Application ${a.name} created.` }],
    secret: html`<div class="notice" role="status"><p><strong>Client secret of ${a.name}</strong> (shown once; copy it now):</p>
<p>client_id <code class="secret" id="client-id">${a.uuid}</code></p><p>client_secret <code class="secret" id="client-secret">${secret}</code></p></div>`,
  });

  const routes = async (app: FastifyInstance): Promise<void> => {
    app.get('/applications/:uuid', async (request, reply) => appPage(request, reply, await load(request)));

    app.post('/applications/:uuid/edit', async (request, reply) => {
      const a = await load(request);
      const body = request.body as Record<string, unknown> | undefined;
      const { uses } = applicationLists(a.type);
      const edit: NonNullable<PageState['edit']> = { name: field(body, 'name') };
      const input: Record<string, string[]> = {};
      for (const list of uses) {
        edit[list] = typeof body?.[list] === 'string' ? body[list] as string : '';
        input[list] = urlLines(edit[list]!);
      }
      if (a.type === 'SAML') edit.saml = readSamlForm(body);
      const saml = edit.saml ? samlInput(edit.saml, { metadataReplaces: true }) : {};
      const errors: FieldErrors = {};
      for (const problem of findApplicationProblems({ name: edit.name, type: a.type, ...input, ...saml })) {
        const { list, message } = describeProblem(problem, { ...input, acsUrls: saml.acsUrls }, 'Name');
        errors[list] ??= message;
      }
      if (Object.keys(errors).length === 0) {
        try {
          await applications.update(a.customerId, a.uuid, { name: edit.name, ...input, ...saml }, request.auditContext);
          return reply.redirect(`${ctx.root}${url(a)}?done=saved`, 303);
        } catch (error) {
          if (error instanceof Conflict) errors[saml.spMetadata ? 'spMetadata' : 'entityId'] = ENTITY_ID_TAKEN;
          else if (error instanceof Invalid) errors.name = error.message;
          else throw error;
        }
      }
      return appPage(request, reply, a, { status: 400, errors, edit });
    });

    app.post('/applications/:uuid/policies', async (request, reply) => {
      const a = await load(request);
      const picked = { group: field(request.body, 'group'), firstFactor: field(request.body, 'firstFactor'), secondFactor: field(request.body, 'secondFactor') };
      const errors: FieldErrors = {};
      if (!FIRST_FACTORS.includes(picked.firstFactor as FirstFactor)) errors['policy-first'] = `First factor must be one of ${FIRST_FACTORS.map((f) => FIRST_FACTOR_WORDS[f]).join(', ')}`;
      if (!SECOND_FACTORS.includes(picked.secondFactor as SecondFactor)) errors['policy-second'] = `Second factor must be one of ${SECOND_FACTORS.map((f) => SECOND_FACTOR_WORDS[f]).join(', ')}`;
      if (Object.keys(errors).length === 0) {
        try {
          await policies.create(a.customerId, {
            applicationUuid: a.uuid, firstFactor: picked.firstFactor as FirstFactor, secondFactor: picked.secondFactor as SecondFactor,
            ...(picked.group ? { groupName: picked.group } : {}),
          }, request.auditContext);
          return reply.redirect(`${ctx.root}${url(a)}?done=policy-created`, 303);
        } catch (error) {
          if (error instanceof Invalid) errors['policy-group'] = error.message.replace(/^groupName /, 'Group ');
          else if (error instanceof Conflict) errors['policy-group'] = error.message;
          else throw error;
        }
      }
      return appPage(request, reply, a, { status: 400, errors, policy: picked });
    });

    const policyOf = async (request: FastifyRequest, a: Application): Promise<LoginPolicy> => {
      let id: number;
      try { id = parsePolicyId((request.params as { id: string }).id); } catch { throw new NotFound('policy', 'The policy does not exist.'); }
      const policy = (await policies.list(a.customerId)).find((p) => p.id === id && p.applicationUuid === a.uuid);
      if (!policy) throw new NotFound('policy', 'The policy does not exist.');
      return policy;
    };

    app.get('/applications/:uuid/policies/:id/delete', async (request, reply) => {
      const a = await load(request);
      const policy = await policyOf(request, a);
      const page = pageContext(ctx, request, reply);
      return sendPage(reply, 200, consolePage(page, 'applications', `Delete the login policy for ${groupWords(policy)}?`, html`
<p>Users of <strong>${groupWords(policy)}</strong> then sign in to <strong>${a.name}</strong> by another policy that applies to them (${FIRST_FACTOR_WORDS[policy.firstFactor]} and ${SECOND_FACTOR_WORDS[policy.secondFactor].toLowerCase()} today).</p>
<div class="actions">${postButton(page, `${url(a)}/policies/${policy.id}/delete`, 'Delete', { danger: true })}<a href="${ctx.root}${url(a)}">Cancel</a></div>`));
    });

    app.post('/applications/:uuid/policies/:id/delete', async (request, reply) => {
      const a = await load(request);
      await policies.delete(a.customerId, (await policyOf(request, a)).id, request.auditContext);
      return reply.redirect(`${ctx.root}${url(a)}?done=policy-deleted`, 303);
    });

    app.get('/applications/:uuid/delete', async (request, reply) => {
      const a = await load(request);
      const page = pageContext(ctx, request, reply);
      const count = (await policies.list(a.customerId)).filter((r) => r.applicationUuid === a.uuid).length;
      return sendPage(reply, 200, consolePage(page, 'applications', `Delete ${a.name}?`, html`
<p>The application <strong>${a.name}</strong> is deleted with its ${plural(count, 'login policy', 'login policies')} and its open magic links. This cannot be undone.</p>
<div class="actions">${postButton(page, `${url(a)}/delete`, 'Delete', { danger: true })}<a href="${ctx.root}${url(a)}">Cancel</a></div>`));
    });

    app.post('/applications/:uuid/delete', async (request, reply) => {
      await applications.delete(owner(request).customerId, uuidParam(request), request.auditContext);
      return reply.redirect(`${ctx.root}/applications?done=deleted`, 303);
    });
  };

  return { routes, showSecret };
}
