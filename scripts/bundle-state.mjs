/** Whether a bundle under dist/ is current: built after every file under src/ and the lockfile. */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The newest modification time of any file under `dir`. */
function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

/** @param root the repository; @param bundle the bundle's path (absolute, or relative to the working directory) */
export function isBundleCurrent(root, bundle) {
  try {
    return statSync(bundle).mtimeMs >= Math.max(newest(join(root, 'src')), statSync(join(root, 'package-lock.json')).mtimeMs);
  } catch {
    return false;
  }
}
