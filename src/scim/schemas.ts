/**
 * The SCIM resources Latchkey serves, as RFC 7643 describes them: the URNs, the core User and Group
 * attributes it stores (with their characteristics, §2.2 and §7), and the standard attributes it
 * accepts but does not keep (a directory sends displayName, title or the enterprise extension with
 * every user; they are ignored, not refused). The Schemas endpoint and the PATCH path check read these.
 */
export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const ENTERPRISE_USER_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const LIST_RESPONSE_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const PATCH_OP_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const SERVICE_PROVIDER_CONFIG_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig';
export const RESOURCE_TYPE_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType';
export const SCHEMA_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Schema';

/** The most resources one list answer holds (ServiceProviderConfig's filter.maxResults). */
export const MAX_RESULTS = 200;

interface Attribute {
  name: string;
  type: 'string' | 'boolean' | 'complex' | 'reference' | 'dateTime';
  multiValued: boolean;
  description: string;
  required: boolean;
  caseExact: boolean;
  mutability: 'readOnly' | 'readWrite' | 'immutable' | 'writeOnly';
  returned: 'always' | 'never' | 'default' | 'request';
  uniqueness: 'none' | 'server' | 'global';
  subAttributes?: Attribute[];
  referenceTypes?: string[];
  canonicalValues?: string[];
}

function attribute(name: string, description: string, options: Partial<Attribute> = {}): Attribute {
  return {
    name, type: 'string', multiValued: false, description, required: false, caseExact: false,
    mutability: 'readWrite', returned: 'default', uniqueness: 'none', ...options,
  };
}

const multiValuedEntry = (what: string, types: string[]): Attribute[] => [
  attribute('value', `The ${what}.`),
  attribute('type', `A label: ${types.join(', ')}.`, { canonicalValues: types }),
  attribute('primary', 'Whether this is the primary value.', { type: 'boolean' }),
];

const userAttributes: Attribute[] = [
  attribute('userName', 'Unique identifier of the user: Latchkey\'s username. It cannot change once created.', { required: true, uniqueness: 'server', mutability: 'immutable' }),
  attribute('name', 'The user\'s name.', {
    type: 'complex',
    subAttributes: [attribute('givenName', 'First name.'), attribute('familyName', 'Last name.')],
  }),
  attribute('emails', 'The user\'s e-mail: the primary (or the first) is Latchkey\'s e-mail, unique per customer.', {
    type: 'complex', multiValued: true, subAttributes: multiValuedEntry('e-mail address', ['work', 'home', 'other']),
  }),
  attribute('phoneNumbers', 'The user\'s phone: the first is kept.', {
    type: 'complex', multiValued: true, subAttributes: multiValuedEntry('phone number', ['work', 'home', 'mobile', 'other']),
  }),
  attribute('active', 'False disables the user: sessions, JWTs, API keys and API tokens stop at once.', { type: 'boolean' }),
  attribute('password', 'Set through the password rules; never returned.', { mutability: 'writeOnly', returned: 'never', caseExact: true }),
  attribute('groups', 'The groups the user belongs to (change them through Groups).', {
    type: 'complex', multiValued: true, mutability: 'readOnly',
    subAttributes: [
      attribute('value', 'The group\'s id.', { mutability: 'readOnly' }),
      attribute('$ref', 'The group\'s URI.', { type: 'reference', referenceTypes: ['Group'], mutability: 'readOnly' }),
      attribute('display', 'The group\'s name.', { mutability: 'readOnly' }),
    ],
  }),
];

const groupAttributes: Attribute[] = [
  attribute('displayName', 'The group\'s name, unique per customer.', { required: true, uniqueness: 'server' }),
  attribute('members', 'The group\'s members (users).', {
    type: 'complex', multiValued: true,
    subAttributes: [
      attribute('value', 'The user\'s id.', { mutability: 'immutable' }),
      attribute('$ref', 'The user\'s URI.', { type: 'reference', referenceTypes: ['User'], mutability: 'immutable' }),
      attribute('display', 'The user\'s userName.', { mutability: 'readOnly' }),
    ],
  }),
];

export const SCHEMA_DOCUMENTS = [
  { id: USER_SCHEMA, name: 'User', description: 'User Account', attributes: userAttributes },
  { id: GROUP_SCHEMA, name: 'Group', description: 'Group', attributes: groupAttributes },
] as const;

/** Attributes of every resource (RFC 7643 §3.1): the server's, never written by a client. */
export const COMMON_READ_ONLY = new Set(['id', 'meta', 'schemas']);

/**
 * The core User attributes (RFC 7643 §4.1) Latchkey does not keep, lower-cased: accepted and ignored,
 * so a directory's default mapping works unchanged. Sub-attributes of `name` likewise.
 */
export const IGNORED_USER_ATTRIBUTES = new Set([
  'displayname', 'nickname', 'profileurl', 'title', 'usertype', 'preferredlanguage', 'locale', 'timezone',
  'ims', 'photos', 'addresses', 'entitlements', 'roles', 'x509certificates',
]);
export const IGNORED_NAME_PARTS = new Set(['formatted', 'middlename', 'honorificprefix', 'honorificsuffix']);

export interface ResourceKind {
  name: 'User' | 'Group';
  endpoint: '/Users' | '/Groups';
  schema: string;
}

export const USER_RESOURCE: ResourceKind = { name: 'User', endpoint: '/Users', schema: USER_SCHEMA };
export const GROUP_RESOURCE: ResourceKind = { name: 'Group', endpoint: '/Groups', schema: GROUP_SCHEMA };
