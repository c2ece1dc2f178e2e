/**
 * A wrong secret for refusal tests: `secret` with each of its last `count` characters replaced by another
 * ('A', or 'B' where it was 'A'), so it is never the secret itself, whatever the secret happens to end with.
 */
export function tampered(secret: string, count: number): string {
  const tail = [...secret.slice(-count)].map((c) => (c === 'A' ? 'B' : 'A')).join('');
  return secret.slice(0, -count) + tail;
}
