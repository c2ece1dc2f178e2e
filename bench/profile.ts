/**
 * Summarises V8 .cpuprofile files (as the bench server writes them with --profile): self time per
 * function and per origin (a Latchkey source file, a package, node internals), so hot spots can be
 * read in a terminal. Open the files in Chrome DevTools (Performance tab) for the full picture.
 *
 *   node --import tsx bench/profile.ts <file.cpuprofile>...
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Where a frame's code comes from: `src/…` file, `kysely`, `fastify`, `(node)`, `(gc)`, … */
function originOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const path = url.startsWith('file://') ? url.slice('file://'.length) : url;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (pkg) return pkg[1];
  if (path.startsWith('node:')) return '(node)';
  const own = /\/(src|bench|test)\/(.+)$/.exec(path);
  if (own) return `${own[1]}/${own[2]}`;
  return path;
}

export interface ProfileSummary {
  totalMs: number;
  byFunction: { name: string; origin: string; selfMs: number; share: number }[];
  byOrigin: { origin: string; selfMs: number; share: number }[];
}

export function summariseProfiles(paths: string[], top = 25): ProfileSummary {
  const byFunction = new Map<string, { name: string; origin: string; selfMs: number }>();
  const byOrigin = new Map<string, number>();
  let totalMs = 0;
  for (const path of paths) {
    const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
    const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
    profile.samples.forEach((nodeId, i) => {
      const ms = (profile.timeDeltas[i] ?? 0) / 1000;
      const node = nodes.get(nodeId);
      if (!node) return;
      const { functionName, url, lineNumber } = node.callFrame;
      if (functionName === '(idle)') return;
      totalMs += ms;
      const origin = originOf(url, functionName);
      const name = `${functionName || '(anonymous)'}${url ? `:${lineNumber + 1}` : ''}`;
      const key = `${origin} ${name}`;
      const entry = byFunction.get(key) ?? { name, origin, selfMs: 0 };
      entry.selfMs += ms;
      byFunction.set(key, entry);
      byOrigin.set(origin, (byOrigin.get(origin) ?? 0) + ms);
    });
  }
  const share = (ms: number) => (totalMs > 0 ? ms / totalMs : 0);
  return {
    totalMs,
    byFunction: [...byFunction.values()].sort((a, b) => b.selfMs - a.selfMs).slice(0, top).map((f) => ({ ...f, share: share(f.selfMs) })),
    byOrigin: [...byOrigin].sort((a, b) => b[1] - a[1]).slice(0, top).map(([origin, selfMs]) => ({ origin, selfMs, share: share(selfMs) })),
  };
}

export function formatProfile(title: string, summary: ProfileSummary): string {
  const pct = (x: number) => `${(x * 100).toFixed(1).padStart(5)}%`;
  const lines = [`CPU profile of the server: ${title} (${(summary.totalMs / 1000).toFixed(1)} s busy, idle excluded)`, '  self time by origin:'];
  for (const o of summary.byOrigin.slice(0, 15)) lines.push(`    ${pct(o.share)}  ${o.origin}`);
  lines.push('  hottest functions (self time):');
  for (const f of summary.byFunction) lines.push(`    ${pct(f.share)}  ${f.name}  [${f.origin}]`);
  return lines.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    process.stderr.write('usage: node --import tsx bench/profile.ts <file.cpuprofile>...\n');
    process.exit(2);
  }
  process.stdout.write(formatProfile(files.join(', '), summariseProfiles(files, 40)) + '\n');
}
