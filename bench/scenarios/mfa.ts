/** Authenticator registration (QR rendering is its costly step) beside signed users/get: reported, no target. */
import type { Scenario } from '../harness.ts';
import { benchUsername } from '../seed.ts';

export const mfaRegistration: Scenario = {
  name: 'mfa-registration',
  summary: 'signed POST /api/auth/google-auth-secret under load, p99 vs signed users/get p99 in interleaved slices',
  async run(bench) {
    const customerKey = bench.customer.customerKey;
    const get = bench.admin('/api/admin/users/get', { customerKey, username: benchUsername(1) });
    // Spread registrations over many users, as real enrolments are (registering again replaces the pending secret).
    let next = 0;
    const { real: register, others: [got] } = await bench.measure('google-auth-secret', {
      ...bench.admin('/api/auth/google-auth-secret', {}),
      dynamicBody: () => ({ customerKey, username: benchUsername(1 + (next++ % Math.min(bench.users, 10_000))), authenticatorType: 'GOOGLE AUTHENTICATOR' }),
    }, { others: [{ label: 'users/get (for MFA)', spec: get }] });
    bench.note(`registration p99 ÷ users/get p99: ${(register.p99Ms / got.p99Ms).toFixed(2)} x (p99 ${register.p99Ms.toFixed(2)} ms vs ${got.p99Ms.toFixed(2)} ms; no target)`);
  },
};
