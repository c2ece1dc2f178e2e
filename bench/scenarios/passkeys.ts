/**
 * The hosted sign-in's passkey step (a PASSKEY first factor): each iteration asks a flow's ceremony
 * options (a fresh challenge, written) and posts back the assertion a software authenticator signed
 * for it (bench/authenticator.ts: ES256, user verified, the counter moving); the server verifies it
 * with @simplewebauthn/server, takes the challenge, moves the counter, ends the flow and opens the SSO
 * session. The passkeys are registered through the passkeys service's ceremony (attestation "none");
 * the flows, already at the passkey step, are written straight into sign_in_flows (bench only). A driver
 * loop (bench/flows.ts), since each assertion needs its own challenge, in slices interleaved with signed
 * users/get.
 */
import { randomBytes } from 'node:crypto';
import type { PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import { SYSTEM } from '../../src/audit/context.ts';
import { sha256Hex } from '../../src/lib/tokens.ts';
import { assertion, createCredential, type SoftwareCredential } from '../authenticator.ts';
import { drivenLoad, FlowFailed } from '../flows.ts';
import type { Bench, Scenario } from '../harness.ts';
import { benchUsername } from '../seed.ts';
import { serverIssuer } from './saml.ts';

const RETURN_URL = 'https://app.bench.example/sso/return';
/** Flows written per second of warm-up and measurement: above the rate a 2-core machine reaches. */
const FLOWS_PER_SECOND = 1_500;

interface PasskeyUser { id: number; username: string; credential: SoftwareCredential; flows: string[] }

/** Each user's passkey, made by the software authenticator and registered through the service's ceremony. */
async function enrol(bench: Bench, users: { id: number; username: string }[]): Promise<Map<number, SoftwareCredential>> {
  const { passkeys } = bench.composition.services;
  const made = new Map<number, SoftwareCredential>();
  for (const user of users) {
    const holder = { customerId: bench.customer.customerId, userId: user.id };
    const { ceremonyId, options } = await passkeys.registrationOptions(holder, { username: user.username, displayName: user.username });
    const { credential, response } = createCredential(options, passkeys.rp.origin);
    await passkeys.register(holder, ceremonyId, response, 'Bench software authenticator', 'latchkey-bench', SYSTEM);
    made.set(user.id, credential);
  }
  return made;
}

/** Flows at their passkey step for each user (its login named, as after step 1), all bound to one browser value. */
async function preparedFlows(bench: Bench, application: { id: number; uuid: string }, returnTo: string, users: PasskeyUser[], perUser: number): Promise<string> {
  const { db } = bench.composition.store;
  const binding = randomBytes(32).toString('base64url');
  const now = Date.now();
  let rows = [];
  for (let k = 0; k < perUser; k++) {
    for (const [i, user] of users.entries()) {
      const flowId = randomBytes(32).toString('base64url');
      user.flows.push(flowId);
      rows.push({
        id_hash: sha256Hex(flowId), customer_id: bench.customer.customerId, application_id: application.id, application_uuid: application.uuid,
        return_to: returnTo, browser_hash: sha256Hex(binding), user_id: user.id, login: user.username, step: 'passkey',
        amr: '[]', link_id: null, code_hash: null, code_attempts: 0, created_at: now, expires_at: now + 24 * 3600_000,
      });
      if (rows.length === 500 || (k === perUser - 1 && i === users.length - 1)) {
        await db.insertInto('sign_in_flows').values(rows).execute();
        rows = [];
      }
    }
  }
  return binding;
}

export const passkeyAssertion: Scenario = {
  name: 'passkey-assertion',
  summary: 'the sign-in\'s PASSKEY first factor: POST passkey/options (a fresh challenge) then passkey/verify with an ES256 assertion from a software authenticator (verified, counter moved, flow ended, SSO session opened), driven by --connections workers, vs signed users/get',
  async run(bench) {
    const { applications, policies } = bench.composition.services;
    const { db } = bench.composition.store;
    const customerId = bench.customer.customerId;
    const { application } = await applications.create(customerId, { name: 'Bench passkeys', type: 'JWT', returnUrls: [RETURN_URL] }, SYSTEM);
    await policies.create(customerId, { applicationUuid: application.uuid, firstFactor: 'PASSKEY', secondFactor: 'NONE' }, SYSTEM);
    // The relying party as the server under test is it: LATCHKEY_PUBLIC_URL's origin and host (its issuer's).
    const issuer = await serverIssuer(bench);
    const origin = new URL(issuer).origin;
    const rpId = new URL(issuer).hostname;
    const returnTo = `${issuer}/jwt/authorize?client_id=${application.uuid}&redirect_uri=${encodeURIComponent(RETURN_URL)}`;

    // Each worker its own users, one assertion at a time each: a counter is never raced.
    const workers = bench.options.connections;
    const spread = Math.min(bench.users, 1_000);
    if (spread < workers) throw new Error(`passkey-assertion needs at least ${workers} users (one per worker)`);
    const rows = await db.selectFrom('users').select(['id', 'username']).where('customer_id', '=', customerId)
      .where('username', 'in', Array.from({ length: spread }, (_, i) => benchUsername(i + 1))).orderBy('id').execute();
    let started = Date.now();
    const credentials = await enrol(bench, rows.map((r) => ({ id: Number(r.id), username: r.username })));
    const users: PasskeyUser[] = rows.map((r) => ({ id: Number(r.id), username: r.username, credential: credentials.get(Number(r.id))!, flows: [] }));
    const enrolSeconds = (Date.now() - started) / 1000;
    const count = FLOWS_PER_SECOND * (bench.options.warmupSeconds + bench.options.durationSeconds) + 500;
    started = Date.now();
    const binding = await preparedFlows(bench, application, returnTo, users, Math.ceil(count / users.length));
    bench.note(`${users.length.toLocaleString('en-US')} passkeys registered through the service's ceremony in ${enrolSeconds.toFixed(1)} s; ${(users.length * Math.ceil(count / users.length)).toLocaleString('en-US')} flows at their passkey step written straight into sign_in_flows (bench only) in ${((Date.now() - started) / 1000).toFixed(1)} s; RP ID ${rpId}, origin ${origin} (the bench server's public URL: a browser would refuse an IP address as RP ID, the server's checks are the same)`);

    const base = `http://127.0.0.1:${bench.server.ports.identity}/customers/${bench.customer.customerKey}/sign-in`;
    const post = (url: string, body: unknown) => fetch(url, {
      method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', cookie: `lk_signin=${binding}` }, body: JSON.stringify(body),
    });
    let usedUp = 0;
    async function options(flowId: string) {
      const answer = await post(`${base}/${flowId}/passkey/options`, {});
      const json = await answer.json() as { ceremonyId: string; options: PublicKeyCredentialRequestOptionsJSON };
      if (answer.status !== 200) throw new FlowFailed(`options ${answer.status}`);
      return json;
    }
    async function verify(flowId: string, ceremonyId: string, response: unknown) {
      const answer = await post(`${base}/${flowId}/passkey/verify`, { ceremonyId, response });
      return { status: answer.status, json: await answer.json() as { location?: string; message?: string }, cookie: answer.headers.get('set-cookie') };
    }
    async function signIn(user: PasskeyUser) {
      const flowId = user.flows.pop();
      if (!flowId) { usedUp++; throw new FlowFailed('flows used up'); }
      const started = await options(flowId);
      const verified = await verify(flowId, started.ceremonyId, assertion(user.credential, started.options, origin));
      if (verified.status !== 200 || verified.json.location !== returnTo) throw new FlowFailed(`verify ${verified.status}`, verified.json.message);
      return { started, verified };
    }

    // By hand first: the options are the RP's, a good assertion signs in and moves the stored counter, a forged one is refused.
    const first = users[0]!;
    const { started: proofOptions, verified: proof } = await signIn(first);
    const stored = await db.selectFrom('passkeys').select(['counter', 'last_used_at']).where('customer_id', '=', customerId).where('user_id', '=', first.id).executeTakeFirstOrThrow();
    if (proofOptions.options.rpId !== rpId || proofOptions.options.userVerification !== 'required' || !proof.cookie?.includes('lk_sso=')
      || Number(stored.counter) !== first.credential.counter || stored.last_used_at === null) {
      throw new Error(`passkey-assertion: the first sign-in is not what it should be (rpId ${proofOptions.options.rpId}, counter ${stored.counter} vs ${first.credential.counter}, cookie ${proof.cookie})`);
    }
    const forgedFlow = first.flows.pop()!;
    const forgedOptions = await options(forgedFlow);
    const forged = assertion(first.credential, forgedOptions.options, origin);
    const signature = Buffer.from(forged.response.signature, 'base64url');
    signature[signature.length - 1] ^= 1;
    forged.response.signature = signature.toString('base64url');
    const refused = await verify(forgedFlow, forgedOptions.ceremonyId, forged);
    if (refused.status !== 401) throw new Error(`passkey-assertion: a forged signature was answered ${refused.status}, not 401`);

    const turns = new Array<number>(workers).fill(0);
    const mine = Array.from({ length: workers }, (_, w) => users.filter((_, i) => i % workers === w));
    const load = drivenLoad(async (worker) => {
      const own = mine[worker]!;
      await signIn(own[turns[worker]!++ % own.length]!);
    });
    const { real, others: [got] } = await bench.measure('passkey assertion (options + verify)', load, { others: [{ label: 'users/get (for passkeys)', spec: bench.admin('/api/admin/users/get', { customerKey: bench.customer.customerKey, username: benchUsername(Math.ceil(bench.users / 2)) }) }] });
    bench.note(`passkey assertions ${real.requestsPerSecond.toFixed(1)}/s (p50 ${real.p50Ms.toFixed(2)} ms, p99 ${real.p99Ms.toFixed(2)} ms; two requests each) vs users/get ${Math.round(got!.requestsPerSecond)} req/s (p99 ${got!.p99Ms.toFixed(2)} ms): ${(real.requestsPerSecond / got!.requestsPerSecond).toFixed(3)}x`);
    bench.note(`the driver (fetch and the software authenticator, in the bench's process) used ${load.clientCores().toFixed(2)} of a core while it ran; autocannon drives users/get`);
    if (usedUp > 0) bench.note(`the prepared flows ran out (${usedUp} iterations found none): raise FLOWS_PER_SECOND in bench/scenarios/passkeys.ts`);
  },
};
