/**
 * A SAML application's service-provider settings in the console's forms (Create application and a SAML
 * application's Edit): Entity ID, ACS URLs (one a line), NameID format, Single logout URL, SP certificate,
 * or the SP's metadata pasted instead. The form keeps what was typed; the applications service checks it.
 */
import type { ApplicationInput, SamlServiceProvider } from '../../../identity/applications/types.ts';
import { NAME_ID_FORMATS } from '../../../identity/applications/types.ts';
import { MAX_ENTITY_ID_LENGTH } from '../../../identity/applications/saml-rules.ts';
import { MAX_URL_LENGTH } from '../../../identity/applications/urls.ts';
import { fieldError, fieldState, type FieldErrors } from '../../forms.ts';
import { html, type Html } from '../../html.ts';
import { urlLines } from './form.ts';
import { NAME_ID_FORMAT_WORDS, SAML_WORDS, type SamlFieldName } from './words.ts';

export type SamlFormValues = Record<SamlFieldName, string>;

export const NO_SAML_VALUES: SamlFormValues = { entityId: '', acsUrls: '', nameIdFormat: 'emailAddress', sloUrl: '', spCertificate: '', spMetadata: '' };

/** The registered settings as the Edit form shows them (metadata is never kept: its field starts empty). */
export const samlFormValuesOf = (saml: SamlServiceProvider | null): SamlFormValues => (saml === null ? NO_SAML_VALUES : {
  entityId: saml.entityId, acsUrls: saml.acsUrls.join('\n'), nameIdFormat: saml.nameIdFormat,
  sloUrl: saml.sloUrl ?? '', spCertificate: saml.spCertificate ?? '', spMetadata: '',
});

/** What a submitted form holds (the one-line fields trimmed, the text areas as typed). */
export function readSamlForm(body: Record<string, unknown> | undefined): SamlFormValues {
  const text = (name: SamlFieldName) => (typeof body?.[name] === 'string' ? body[name] as string : '');
  return {
    entityId: text('entityId').trim(), acsUrls: text('acsUrls'), nameIdFormat: text('nameIdFormat').trim(),
    sloUrl: text('sloUrl').trim(), spCertificate: text('spCertificate'), spMetadata: text('spMetadata'),
  };
}

/**
 * The service's input. With `metadataReplaces` (Edit, whose fields start filled in), pasted metadata
 * stands instead of the fields it gives; otherwise both go to the service, which refuses the mix.
 */
export function samlInput(values: SamlFormValues, options: { metadataReplaces: boolean }): Pick<ApplicationInput, SamlFieldName> {
  const spMetadata = values.spMetadata.trim();
  if (spMetadata && options.metadataReplaces) return { spMetadata, nameIdFormat: values.nameIdFormat };
  return {
    entityId: values.entityId, acsUrls: urlLines(values.acsUrls), nameIdFormat: values.nameIdFormat,
    sloUrl: values.sloUrl, spCertificate: values.spCertificate.trim(), spMetadata,
  };
}

/**
 * The fields; `id` gives each its element id (the forms' naming differs), `metadataHelp` says what
 * pasting metadata does in this form.
 */
export function samlFields(values: SamlFormValues, errors: FieldErrors, id: (field: SamlFieldName) => string, metadataHelp: string): Html {
  const f = (field: SamlFieldName) => ({ id: id(field), label: SAML_WORDS[field] });
  const entityId = f('entityId'); const acs = f('acsUrls'); const format = f('nameIdFormat'); const slo = f('sloUrl'); const certificate = f('spCertificate'); const metadata = f('spMetadata');
  return html`<label for="${entityId.id}">${entityId.label}</label>
<input id="${entityId.id}" name="entityId" type="text" maxlength="${MAX_ENTITY_ID_LENGTH}" value="${values.entityId}"${fieldState(errors, entityId.id, `${entityId.id}-help`)}>
${fieldError(errors, entityId.id)}
<p id="${entityId.id}-help" class="muted">The service provider's entity ID (a URI or URN), as its metadata or settings name it.</p>
<label for="${acs.id}">${acs.label}</label>
<textarea id="${acs.id}" name="acsUrls"${fieldState(errors, acs.id, `${acs.id}-help`)}>${values.acsUrls}</textarea>
${fieldError(errors, acs.id)}
<p id="${acs.id}-help" class="muted">One per line: where the SAML Response may be posted. The first is the default.</p>
<label for="${format.id}">${format.label}</label>
<select id="${format.id}" name="nameIdFormat"${fieldState(errors, format.id)}>${NAME_ID_FORMATS.map((n) => html`<option value="${n}"${n === values.nameIdFormat ? ' selected' : ''}>${NAME_ID_FORMAT_WORDS[n]}</option>`)}</select>
${fieldError(errors, format.id)}
<label for="${slo.id}">${slo.label}</label>
<input id="${slo.id}" name="sloUrl" type="text" maxlength="${MAX_URL_LENGTH}" value="${values.sloUrl}"${fieldState(errors, slo.id, `${slo.id}-help`)}>
${fieldError(errors, slo.id)}
<p id="${slo.id}-help" class="muted">Optional: where the answer to a single logout goes.</p>
<label for="${certificate.id}">${certificate.label}</label>
<textarea id="${certificate.id}" name="spCertificate"${fieldState(errors, certificate.id, `${certificate.id}-help`)}>${values.spCertificate}</textarea>
${fieldError(errors, certificate.id)}
<p id="${certificate.id}-help" class="muted">Optional PEM (-----BEGIN CERTIFICATE-----): when set, the service provider's requests must be signed with it.</p>
<label for="${metadata.id}">${metadata.label}</label>
<textarea id="${metadata.id}" name="spMetadata"${fieldState(errors, metadata.id, `${metadata.id}-help`)}>${values.spMetadata}</textarea>
${fieldError(errors, metadata.id)}
<p id="${metadata.id}-help" class="muted">${metadataHelp}</p>`;
}
