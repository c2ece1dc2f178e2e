/**
 * The rules of a SAML application's service-provider settings, whichever face writes them (admin API,
 * console, CLI): entityId (a URI or URN), acsUrls (the URL rules, 1..20, the first the default),
 * nameIdFormat, sloUrl, spCertificate (an X.509 certificate over an RSA key), or spMetadata from which
 * those are read and then checked by the same rules. The other types take none of these fields.
 * Uniqueness of the entity ID needs the database: the service checks it.
 */
import { X509Certificate } from 'node:crypto';
import type { BrokenRule } from '../../lib/text-rules.ts';
import { certificatePem, parseSpMetadata } from '../saml/sp-metadata.ts';
import { SamlXmlError } from '../saml/xml.ts';
import { NAME_ID_FORMATS, type ApplicationInput, type NameIdFormat, type SamlServiceProvider } from './types.ts';
import { MAX_URLS_PER_LIST, urlProblem } from './urls.ts';

export const MAX_ENTITY_ID_LENGTH = 1024;
/** A PEM certificate of a 4096-bit RSA key is about 2 KB; room for long subjects and extensions. */
export const MAX_SP_CERTIFICATE_LENGTH = 16 * 1024;
/** Real SP metadata documents are a few KB; the admin API's body must hold one, JSON-escaped. */
export const MAX_SP_METADATA_LENGTH = 64 * 1024;

/** The fields a SAML application's SP is given by, one by one. */
export const SAML_FIELDS = ['entityId', 'acsUrls', 'nameIdFormat', 'sloUrl', 'spCertificate'] as const;
type SamlField = (typeof SAML_FIELDS)[number] | 'spMetadata';

// A URI (scheme ":" something) or a URN, which is one: no whitespace anywhere.
const URI = /^[A-Za-z][A-Za-z0-9+.-]*:\S+$/;
const CONTROL_OR_SPACE = /[\s\u0000-\u001f\u007f]/;
const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]+)-----END CERTIFICATE-----/g;

/** A field counts as given when it holds something: the console's empty inputs and `""` mean "none". */
const given = (value: string | string[] | undefined) => value !== undefined && value.length > 0;

/**
 * The SP settings `input` gives and every rule it breaks (in field order), so that a form can show
 * them all at once; `saml` is null for the other types, and whenever a rule is broken.
 */
export function readSamlServiceProvider(input: ApplicationInput): { saml: SamlServiceProvider | null; problems: BrokenRule[] } {
  const fields: SamlField[] = [...SAML_FIELDS, 'spMetadata'];
  if (input.type !== 'SAML') {
    return { saml: null, problems: fields.filter((f) => given(input[f])).map((field) => ({ field, reason: 'is only for SAML applications' })) };
  }
  if (!given(input.spMetadata)) return checkSettings(input, (field, reason) => ({ field, reason }));

  // nameIdFormat may come along: metadata often lists no format, or several.
  const alongside = SAML_FIELDS.filter((f) => f !== 'nameIdFormat' && given(input[f]));
  if (alongside.length > 0) {
    return { saml: null, problems: [{ field: 'spMetadata', reason: `cannot come with ${alongside.join(', ')}: give either spMetadata or the fields` }] };
  }
  let read;
  try {
    read = parseSpMetadata(input.spMetadata!);
  } catch (error) {
    if (!(error instanceof SamlXmlError)) throw error;
    return { saml: null, problems: [{ field: 'spMetadata', reason: `is refused: ${error.message}` }] };
  }
  // What the metadata holds breaks a rule: said of spMetadata, naming the setting it was read as.
  return checkSettings({ ...read, nameIdFormat: input.nameIdFormat || read.nameIdFormat }, (field, reason) => (
    field === 'nameIdFormat' ? { field, reason } : { field: 'spMetadata', reason: `gives ${field} that ${reason}` }));
}

function checkSettings(
  settings: Pick<ApplicationInput, (typeof SAML_FIELDS)[number]>,
  broken: (field: string, reason: string) => BrokenRule,
): { saml: SamlServiceProvider | null; problems: BrokenRule[] } {
  const problems: BrokenRule[] = [];
  const entityId = settings.entityId ?? '';
  const entityIdProblem = entityIdRule(entityId);
  if (entityIdProblem) problems.push(broken('entityId', entityIdProblem));

  const acsUrls = settings.acsUrls ?? [];
  if (acsUrls.length === 0) problems.push(broken('acsUrls', 'must hold at least one URL for SAML applications'));
  else if (acsUrls.length > MAX_URLS_PER_LIST) problems.push(broken('acsUrls', `must hold at most ${MAX_URLS_PER_LIST} URLs`));
  else {
    const index = acsUrls.findIndex((url) => urlProblem(url) !== undefined);
    if (index >= 0) problems.push(broken(`acsUrls[${index}]`, urlProblem(acsUrls[index]!)!));
  }

  const nameIdFormat = settings.nameIdFormat || 'emailAddress';
  if (!NAME_ID_FORMATS.includes(nameIdFormat as NameIdFormat)) problems.push(broken('nameIdFormat', `must be one of ${NAME_ID_FORMATS.join(', ')}`));

  const sloUrl = settings.sloUrl || null;
  const sloProblem = sloUrl === null ? undefined : urlProblem(sloUrl);
  if (sloProblem) problems.push(broken('sloUrl', sloProblem));

  let spCertificate: string | null = null;
  if (settings.spCertificate) {
    const certificate = readCertificate(settings.spCertificate);
    if (typeof certificate === 'string') spCertificate = certificate;
    else problems.push(broken('spCertificate', certificate.problem));
  }

  if (problems.length > 0) return { saml: null, problems };
  return {
    saml: { entityId, acsUrls: [...new Set(acsUrls)], nameIdFormat: nameIdFormat as NameIdFormat, sloUrl, spCertificate },
    problems,
  };
}

function entityIdRule(entityId: string): string | undefined {
  if (entityId.length === 0) return 'is required for SAML applications';
  if (entityId.length > MAX_ENTITY_ID_LENGTH) return `must be at most ${MAX_ENTITY_ID_LENGTH} characters`;
  if (CONTROL_OR_SPACE.test(entityId)) return 'must not contain whitespace or control characters';
  if (!URI.test(entityId)) return 'must be a URI or URN (such as https://sp.example.com/saml or urn:example:sp)';
  return undefined;
}

/**
 * One PEM certificate over an RSA public key (the SP signs RSA-SHA256), normalised to the PEM Node
 * writes. Its validity dates are not checked: SPs sign with long-expired self-signed certificates,
 * and what counts is that the signature is made with this key.
 */
function readCertificate(text: string): string | { problem: string } {
  if (text.length > MAX_SP_CERTIFICATE_LENGTH) return { problem: `must be at most ${MAX_SP_CERTIFICATE_LENGTH} characters` };
  const blocks = [...text.matchAll(PEM_CERTIFICATE)];
  if (blocks.length !== 1) return { problem: 'must be one PEM certificate (-----BEGIN CERTIFICATE----- …)' };
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(certificatePem(blocks[0]![1]!));
  } catch {
    return { problem: 'is not an X.509 certificate' };
  }
  if (certificate.publicKey.asymmetricKeyType !== 'rsa') return { problem: 'must hold an RSA public key' };
  return certificate.toString();
}
