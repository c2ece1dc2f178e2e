/**
 * Fastify's own schema compilers (Ajv for requests, fast-json-stringify for responses), each route's
 * function compiled when the route is first used instead of when the app starts. Compiling every
 * route's schemas at start was half of building the identity face (about 300 ms of CPU of 550 for its
 * 200-odd routes) and 14 MiB of a fresh server's memory, mostly for routes a node may never serve.
 * The first request of a route pays its compilation (a millisecond or two); what is compiled, and how
 * it validates, is Fastify's default. (Fastify itself discusses the same option as
 * `lazySchemaCompilation`, fastify/fastify#6977.)
 */
import AjvCompiler from '@fastify/ajv-compiler';
import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import type { FastifyServerOptions } from 'fastify';

type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
type ValidatorFactory = NonNullable<CompilersFactory['buildValidator']>;
type SerializerFactory = NonNullable<CompilersFactory['buildSerializer']>;
type Validate = ((data: unknown) => unknown) & { errors?: unknown };

const HEADER_NAME_WITH_CAPITALS = /[A-Z]/;

/**
 * Fastify lowercases the property names of a `headers` schema only for its default compiler (Node
 * gives header names in lowercase), so a name written with capitals would never match here: refused
 * when the route is added.
 */
function checkHeaderNames(schema: unknown, url: string): void {
  const properties = (schema as { properties?: Record<string, unknown> } | null)?.properties ?? {};
  const named = [...Object.keys(properties), ...((schema as { required?: string[] } | null)?.required ?? [])];
  const capitalised = named.find((name) => HEADER_NAME_WITH_CAPITALS.test(name));
  if (capitalised !== undefined) throw new TypeError(`${url}: write the header "${capitalised}" of its headers schema in lowercase`);
}

const defaultValidators = AjvCompiler();

export const buildValidator = ((externalSchemas: Parameters<typeof defaultValidators>[0], options: Parameters<typeof defaultValidators>[1]) => {
  const compile = defaultValidators(externalSchemas, options) as (route: unknown) => Validate;
  return (route: { schema: unknown; url: string; httpPart?: string }) => {
    if (route.httpPart === 'headers') checkHeaderNames(route.schema, route.url);
    let validate: Validate | undefined;
    // Fastify reads a failed validation's reasons from the function's `errors`, as Ajv leaves them.
    const validateOnFirstUse: Validate = (data) => {
      validate ??= compile(route);
      const valid = validate(data);
      validateOnFirstUse.errors = validate.errors;
      return valid;
    };
    return validateOnFirstUse;
  };
}) as ValidatorFactory;

const defaultSerializers = SerializerSelector();

export const buildSerializer = ((externalSchemas: Parameters<typeof defaultSerializers>[0], options: Parameters<typeof defaultSerializers>[1]) => {
  const compile = defaultSerializers(externalSchemas, options);
  return (route: Parameters<typeof compile>[0]) => {
    let serialize: ((doc: unknown) => string) | undefined;
    return (doc: unknown) => (serialize ??= compile(route))(doc);
  };
}) as SerializerFactory;
