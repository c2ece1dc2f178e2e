/** Response assertions shared by the black-box suites: status, content type, then the body. */
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';

export function json(res: LightMyRequestResponse, status: number): any {
  assert.equal(res.statusCode, status, res.body);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  return res.json();
}

export function text(res: LightMyRequestResponse, status: number): string {
  assert.equal(res.statusCode, status, res.body);
  assert.match(String(res.headers['content-type']), /^text\/plain/);
  return res.body;
}
